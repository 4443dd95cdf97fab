#!/usr/bin/env python3
"""Checks that engine/ includes follow the documented layers (docs/architecture.md, "Layers").

LAYERS below is the one list of engine areas, bottom up, each with the areas it may include. An
`#include "area/..."` in engine/<area> must name the file's own area or one it lists; anything else
(a higher layer, a sibling it does not use, an area missing from the list) fails with file:line and
the rule. Run as the CTest test `layer_check` (label lint) or by hand: tools/check_layers.py [ROOT].
"""
import pathlib
import re
import sys

# (area, areas it may include), bottom up; an area only lists areas above it in this list.
# docs/architecture.md mirrors this table; change both together.
LAYERS = [
    ("core", []),
    ("hub", ["core"]),
    ("hub/download", ["hub", "core"]),
    ("model", ["core"]),
    ("tokenizer", ["core"]),
    ("tokenizer/jinja", ["core"]),
    ("grammar", ["core"]),
    ("runtime", ["grammar", "model", "core"]),
    ("runtime/cpu", ["runtime", "model", "core"]),
    ("runtime/cuda", ["runtime", "model", "core"]),
    ("runtime/factory", ["runtime/cpu", "runtime/cuda", "runtime", "core"]),
    ("kv", ["core"]),
    ("lora", ["runtime", "model", "core"]),
    ("catalog", ["model", "core"]),
    ("sched", ["lora", "kv", "runtime", "grammar", "core"]),
    ("api", ["sched", "catalog", "lora", "runtime/factory", "runtime", "grammar", "tokenizer/jinja", "tokenizer",
             "model", "core"]),
    ("server", ["api", "grammar", "hub", "core"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def area_of(path, areas):
    """The longest area that is a prefix of `path` ("runtime/cpu/cpu_runner.h" -> "runtime/cpu")."""
    best = None
    for a in areas:
        if (path == a or path.startswith(a + "/")) and (best is None or len(a) > len(best)):
            best = a
    return best


def check_order():
    seen, problems = set(), []
    for area, deps in LAYERS:
        for d in deps:
            if d not in seen:
                problems.append(f"tools/check_layers.py: '{area}' lists '{d}', which is not below it in LAYERS")
        seen.add(area)
    return problems


def check(root):
    engine = root / "engine"
    allowed = {a: set(deps) for a, deps in LAYERS}
    areas = list(allowed)
    problems = check_order()
    for f in sorted(engine.rglob("*")):
        if f.suffix not in (".h", ".cpp", ".cuh", ".cu", ".inc") or not f.is_file():
            continue
        rel = f.relative_to(engine).as_posix()
        own = area_of(rel, areas)
        if own is None:
            problems.append(f"engine/{rel}:1: engine area '{rel.split('/')[0]}' is not in LAYERS; add it to "
                            "tools/check_layers.py and docs/architecture.md with the areas it may include")
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue  # <system> headers, and same-folder or kernel headers by bare name
            target = area_of(m.group(1), areas)
            if target is None:
                top = m.group(1).split("/")[0]
                if (engine / top).is_dir():
                    problems.append(f"engine/{rel}:{n}: includes \"{m.group(1)}\" of area '{top}', which is not "
                                    "in LAYERS")
                continue  # not an engine header ("ref/ref_kernels.h" from kernels/, third-party paths)
            if target == own or target in allowed[own]:
                continue
            rule = ", ".join(sorted(allowed[own])) or "nothing but itself"
            problems.append(f"engine/{rel}:{n}: '{own}' includes \"{m.group(1)}\" of '{target}'; '{own}' may "
                            f"include {rule} (docs/architecture.md, Layers)")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) cross the documented layers")
        return 1
    print(f"layers ok: {len(LAYERS)} engine areas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
