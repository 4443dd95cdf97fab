#!/usr/bin/env python3
"""Per-kernel timeline of the CUDA graphs a run replayed, from bench/cupti/kernel_trace.cpp's CSV.

For each graph replayed at least --min-replays times (a decode step of one batch size), prints every kernel in
launch order with its median over the replays of:
  dur   end - start (with PDL this includes the time its blocks sat in griddepcontrol.wait);
  +end  how far its end moved the step's end forward (end - the latest end of the kernels before it): the
        column sums to the step, so it says where the step's time goes;
  lead  how long before the previous kernel's end it started (its pre-wait overlap; 0 when it started after).
and then the same summed per kernel family. Usage: step_trace.py TRACE.csv [--min-replays N] [--skip N]
"""
import argparse
import csv
import re
import statistics
from collections import defaultdict


def short_name(name):
    name = name.replace("loradesk::kernels::", "").replace("(anonymous namespace)::", "")
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            name = name[:i]
            break
    name = re.sub(r"^void ", "", name)
    return name[:78]


def family(name):
    return name.split("<")[0]


def split_replays(rows):
    """Rows of one graph sorted by start -> list of replays (a node id repeats where the next one begins)."""
    replays, seen, cur = [], set(), []
    for r in rows:
        if r["graph_node"] in seen:
            replays.append(cur)
            cur, seen = [], set()
        cur.append(r)
        seen.add(r["graph_node"])
    if cur:
        replays.append(cur)
    n = max(len(x) for x in replays)
    return [x for x in replays if len(x) == n]


def analyse(graph_id, replays, skip):
    replays = replays[skip:]
    order = [r["graph_node"] for r in replays[0]]
    per_node = defaultdict(lambda: defaultdict(list))
    spans, periods = [], []
    for i, rep in enumerate(replays):
        t0 = rep[0]["start"]
        spans.append(max(r["end"] for r in rep) - t0)
        if i + 1 < len(replays):
            periods.append(replays[i + 1][0]["start"] - t0)
        latest, prev_end = t0, None
        for r in rep:
            s = per_node[r["graph_node"]]
            s["off"].append(r["start"] - t0)
            s["dur"].append(r["end"] - r["start"])
            s["dend"].append(max(0, r["end"] - latest))
            s["lead"].append(max(0, prev_end - r["start"]) if prev_end is not None else 0)
            latest = max(latest, r["end"])
            prev_end = r["end"]
    med = lambda xs: statistics.median(xs) / 1000.0  # ns -> us
    print(f"\n## graph {graph_id}: {len(order)} kernels, {len(replays)} replays (after skipping {skip})")
    print(f"step span median {med(spans):.1f} us, replay period median {med(periods) if periods else 0:.1f} us")
    print(f"{'#':>4} {'start':>8} {'dur':>7} {'+end':>7} {'lead':>6} {'grid':>6} {'blk':>4} {'reg':>4} {'smem':>6}  kernel")
    fam = defaultdict(lambda: [0, 0.0, 0.0])
    first = {r["graph_node"]: r for r in replays[0]}
    for i, node in enumerate(order):
        s, r = per_node[node], first[node]
        name = short_name(r["name"])
        print(f"{i:4d} {med(s['off']):8.1f} {med(s['dur']):7.2f} {med(s['dend']):7.2f} {med(s['lead']):6.2f} "
              f"{r['grid']:6d} {r['block']:4d} {r['regs']:4d} {r['smem']:6d}  {name}")
        f = fam[family(name)]
        f[0] += 1
        f[1] += med(s["dur"])
        f[2] += med(s["dend"])
    print(f"\n{'family':<48} {'n':>4} {'sum dur':>9} {'sum +end':>9}")
    for name, (n, dur, dend) in sorted(fam.items(), key=lambda kv: -kv[1][2]):
        print(f"{name[:48]:<48} {n:4d} {dur:9.1f} {dend:9.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--min-replays", type=int, default=16, help="replays a graph needs, after the skipped ones")
    ap.add_argument("--skip", type=int, default=2, help="replays to skip at the start of each graph")
    a = ap.parse_args()
    graphs = defaultdict(list)
    with open(a.trace) as f:
        for row in csv.DictReader(f):
            if int(row["graph_id"]) == 0:
                continue
            for k in ("start_ns", "end_ns", "graph_node", "grid", "block", "regs", "smem"):
                row[k] = int(row[k])
            row["start"], row["end"] = row["start_ns"], row["end_ns"]
            graphs[int(row["graph_id"])].append(row)
    counts = {}
    for gid, rows in sorted(graphs.items()):
        rows.sort(key=lambda r: r["start"])
        replays = split_replays(rows)
        counts[gid] = len(replays)
        if len(replays) >= a.min_replays + a.skip:
            analyse(gid, replays, a.skip)
    if not any(n >= a.min_replays + a.skip for n in counts.values()):
        # A bench of N timed steps replays its graph N + 1 times (the untimed first step too).
        seen = ", ".join(f"graph {g}: {n}" for g, n in counts.items()) or "no graph launches in the trace"
        print(f"no graph replayed {a.min_replays} times after skipping {a.skip} ({seen}): lower --min-replays")


if __name__ == "__main__":
    main()
