// HTTP + SSE overhead benchmark: N concurrent streaming chat/completions against `loradeskd serve` on
// loopback, each token's arrival time taken at the client, compared with the engine's own inter-token
// time for the same requests without HTTP (`loradeskd generate --requests-file`) and with the server's
// own per-request TTFT/latency sums from /metrics in the same run. Node 20, no dependencies.
//
//   node bench/http_stream_bench.mjs --loradeskd build/app/loradeskd/loradeskd [--model DIR]
//        [--clients 256] [--max-tokens 32] [--adapters 3] [--threads 1] [--time-limit 300] [--json FILE]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function parse_args(argv) {
    const o = { loradeskd: 'build/app/loradeskd/loradeskd', model: '', clients: 256, max_tokens: 32, adapters: 3,
        threads: 1, time_limit: 300, kv_memory: 0.5, json: '' };
    for (let i = 2; i < argv.length; i += 2) {
        const key = argv[i].replace(/^--/, '').replaceAll('-', '_');
        if (!(key in o) || i + 1 >= argv.length) throw new Error(`unknown or valueless option ${argv[i]}; see the header`);
        o[key] = typeof o[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
        if (Number.isNaN(o[key])) throw new Error(`${argv[i]} needs a number`);
    }
    return o;
}

function quantile(sorted, q) {
    if (sorted.length === 0) return NaN;
    const pos = (sorted.length - 1) * q, lo = Math.floor(pos), hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function summary(values) {
    const s = [...values].sort((a, b) => a - b);
    const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
    return { n: s.length, p50: quantile(s, 0.5), p99: quantile(s, 0.99), mean, max: s[s.length - 1] ?? NaN };
}

// Synthesizes the tiny preset and a few adapters unless --model is given; returns name -> dir.
function prepare_model(o, work) {
    const adapters = {};
    if (!o.model) {
        o.model = join(work, 'tiny');
        execFileSync(o.loradeskd, ['synth-model', '--preset', 'tiny', '--out', o.model], { stdio: 'ignore' });
        for (let i = 0; i < o.adapters; ++i) {
            const dir = join(work, `lora${i}`);
            execFileSync(o.loradeskd, ['synth-adapter', '--model', o.model, '--out', dir, '--rank', String(8 << (i % 3)),
                '--seed', String(i + 1)], { stdio: 'ignore' });
            adapters[`lora${i}`] = dir;
        }
    }
    return adapters;
}

// The same N requests for both runs: distinct prompts, round-robin over the base model and the adapters.
function make_requests(o, adapter_names) {
    const models = [null, ...adapter_names];
    return Array.from({ length: o.clients }, (_, i) => ({
        adapter: models[i % models.length],
        messages: [{ role: 'user', content: `Request ${i}: write a short story about the number ${i * 7919 % 1000}.` }],
    }));
}

function engine_options(o, adapters) {
    const args = ['--model', o.model, '--threads', String(o.threads), '--max-loras', '4', '--kv-memory', String(o.kv_memory)];
    for (const [name, dir] of Object.entries(adapters)) args.push('--adapter', `${name}=${dir}`);
    return args;
}

// Engine-only baseline: per request, (latency - ttft) / (tokens - 1) is its mean decode step as seen
// by an in-process reader of the engine's streams.
function run_baseline(o, adapters, requests, work) {
    const file = join(work, 'requests.jsonl');
    writeFileSync(file, requests.map((r) => JSON.stringify({ ...r, max_tokens: o.max_tokens, ignore_eos: true,
        temperature: 0 })).join('\n') + '\n');
    const t0 = performance.now();
    const out = execFileSync(o.loradeskd, ['generate', ...engine_options(o, adapters), '--requests-file', file],
        { maxBuffer: 1 << 28, timeout: o.time_limit * 1000, encoding: 'utf8' });
    const wall_ms = performance.now() - t0;
    const gaps = [], errors = [];
    for (const line of out.trim().split('\n')) {
        const r = JSON.parse(line);
        if (r.error || r.completion_tokens !== o.max_tokens) { errors.push(r.error ?? `${r.completion_tokens} tokens`); continue; }
        gaps.push((r.latency_ms - r.ttft_ms) / (r.completion_tokens - 1));
    }
    return { wall_ms, per_request_gap_ms: summary(gaps), errors: errors.length, error_samples: errors.slice(0, 3) };
}

function start_server(o, adapters, work) {
    const args = ['serve', ...engine_options(o, adapters), '--host', '127.0.0.1', '--port', '0',
        '--data-dir', join(work, 'data'), '--log-level', 'warn'];
    const child = spawn(o.loradeskd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise((resolve, reject) => {
        let buf = '';
        const timer = setTimeout(() => { child.kill('SIGTERM'); reject(new Error('server did not start in 120 s')); }, 120000);
        child.on('exit', (code) => reject(new Error(`loradeskd serve exited with ${code} before listening`)));
        child.stdout.on('data', (d) => {
            buf += d;
            const m = buf.match(/listening on (\S+)/);
            if (m) { clearTimeout(timer); child.removeAllListeners('exit'); resolve({ child, base: m[1].startsWith("http") ? m[1] : `http://${m[1]}` }); }
        });
    });
}

async function stop_server(child) {
    const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig)));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 30000);
    const status = await exited;
    clearTimeout(killer);
    return status;
}

// Sums of the server's own TTFT and e2e latency histograms over all adapters (seconds) and their count.
async function scrape(base) {
    const text = await (await fetch(`${base}/metrics`)).text();
    const total = (name) => text.split('\n').filter((l) => l.startsWith(name))
        .reduce((acc, l) => acc + Number(l.trim().split(/\s+/).pop()), 0);
    return { ttft_s: total('loradesk_time_to_first_token_seconds_sum'),
        latency_s: total('loradesk_e2e_request_latency_seconds_sum'),
        count: total('loradesk_e2e_request_latency_seconds_count') };
}

// One streaming request; returns the arrival time of every content chunk and the usage the server reports.
async function stream_one(base, req, o, signal) {
    // No "model" field means the base model; an adapter is named by its registered name.
    const body = { ...(req.adapter ? { model: req.adapter } : {}), messages: req.messages, max_tokens: o.max_tokens,
        ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } };
    const t_send = performance.now();
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', signal,
        headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    const decoder = new TextDecoder();
    const arrivals = [];
    let buf = '', usage = null, done = false, finish = null, t_finish = NaN;
    for await (const bytes of res.body) {
        const now = performance.now();
        buf += decoder.decode(bytes, { stream: true });
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
            const event = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            for (const line of event.split('\n')) {
                if (!line.startsWith('data:')) continue;
                const data = line.slice(5).trim();
                if (data === '[DONE]') { done = true; continue; }
                const j = JSON.parse(data);
                if (j.error) throw new Error(`stream error: ${JSON.stringify(j.error)}`);
                if (j.usage) usage = j.usage;
                const choice = j.choices?.[0];
                if (choice?.finish_reason) { finish = choice.finish_reason; t_finish = now; }
                if (choice?.delta?.content) arrivals.push(now);
            }
        }
    }
    if (!done) throw new Error('stream ended without [DONE]');
    if (usage?.completion_tokens !== o.max_tokens) throw new Error(`usage says ${usage?.completion_tokens} tokens`);
    return { t_send, arrivals, t_finish, tokens: usage.completion_tokens, finish };
}

async function run_http(o, adapters, requests, work) {
    const { child, base } = await start_server(o, adapters, work);
    try {
        // One warm-up request so that adapter loading and first-touch costs are not in the measurement.
        await stream_one(base, requests[1 % requests.length], o);
        const before = await scrape(base);
        const abort = AbortSignal.timeout(o.time_limit * 1000);
        const t0 = performance.now();
        const results = await Promise.allSettled(requests.map((r) => stream_one(base, r, o, abort)));
        const wall_ms = performance.now() - t0;
        const after = await scrape(base);
        const ok = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
        const failed = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason?.message ?? r.reason));
        const token_gaps = [], request_gaps = [], ttft = [];
        let chunks = 0, tokens = 0;
        for (const r of ok) {
            for (let i = 1; i < r.arrivals.length; ++i) token_gaps.push(r.arrivals[i] - r.arrivals[i - 1]);
            // First content chunk to the finish chunk, like the engine's latency - ttft. A token whose text
            // is held back (partial UTF-8, no visible text) sends no chunk, so chunks can be fewer than tokens.
            if (r.arrivals.length > 0) request_gaps.push((r.t_finish - r.arrivals[0]) / (r.tokens - 1));
            ttft.push(r.arrivals[0] - r.t_send);
            chunks += r.arrivals.length;
            tokens += r.tokens;
        }
        // The server's own view of the same requests: mean (latency - ttft) per decode step.
        const n = after.count - before.count;
        const server_gap_ms = 1000 * ((after.latency_s - before.latency_s) - (after.ttft_s - before.ttft_s))
            / (n * (o.max_tokens - 1));
        return { wall_ms, ok: ok.length, errors: failed.length, error_samples: failed.slice(0, 3), chunks, tokens,
            client_token_gap_ms: summary(token_gaps), client_request_gap_ms: summary(request_gaps),
            client_ttft_ms: summary(ttft), server_requests: n, server_mean_gap_ms: server_gap_ms,
            server_exit: await stop_server(child) };
    } catch (e) {
        await stop_server(child);
        throw e;
    }
}

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : String(x));

async function main() {
    const o = parse_args(process.argv);
    const work = mkdtempSync(join(tmpdir(), 'httpbench-'));
    try {
        const adapters = prepare_model(o, work);
        const requests = make_requests(o, Object.keys(adapters));
        const engine = run_baseline(o, adapters, requests, work);
        const http = await run_http(o, adapters, requests, work);
        const report = { options: o, engine, http,
            overhead_ms: {
                p50_vs_engine: http.client_request_gap_ms.p50 - engine.per_request_gap_ms.p50,
                p99_vs_engine: http.client_request_gap_ms.p99 - engine.per_request_gap_ms.p99,
                mean_vs_server_same_run: http.client_request_gap_ms.mean - http.server_mean_gap_ms,
                token_p50_vs_engine_mean: http.client_token_gap_ms.p50 - engine.per_request_gap_ms.mean,
                token_p99_vs_engine_mean: http.client_token_gap_ms.p99 - engine.per_request_gap_ms.mean } };
        if (o.json) writeFileSync(o.json, JSON.stringify(report, null, 2) + '\n');
        const e = engine.per_request_gap_ms, c = http.client_request_gap_ms, t = http.client_token_gap_ms;
        console.log(`clients ${o.clients}, max_tokens ${o.max_tokens}, adapters ${Object.keys(adapters).length}, threads ${o.threads}`);
        console.log(`engine (no HTTP)      per-request step ms  p50 ${fmt(e.p50)}  p99 ${fmt(e.p99)}  mean ${fmt(e.mean)}  errors ${engine.errors}  wall ${fmt(engine.wall_ms)} ms`);
        console.log(`server (same run)     mean step ms ${fmt(http.server_mean_gap_ms)} over ${http.server_requests} requests`);
        console.log(`client per-request    gap ms  p50 ${fmt(c.p50)}  p99 ${fmt(c.p99)}  mean ${fmt(c.mean)}`);
        console.log(`client per-token      gap ms  p50 ${fmt(t.p50)}  p99 ${fmt(t.p99)}  max ${fmt(t.max)}  (${http.chunks} chunks / ${http.tokens} tokens)`);
        console.log(`client TTFT ms        p50 ${fmt(http.client_ttft_ms.p50)}  p99 ${fmt(http.client_ttft_ms.p99)}`);
        console.log(`HTTP errors ${http.errors}/${o.clients}  wall ${fmt(http.wall_ms)} ms  server exit ${http.server_exit}`);
        for (const [k, v] of Object.entries(report.overhead_ms)) console.log(`overhead ${k.padEnd(26)} ${fmt(v)} ms/token`);
        if (http.error_samples.length) console.log('error samples:', http.error_samples);
        process.exitCode = http.errors || engine.errors ? 1 : 0;
    } finally {
        rmSync(work, { recursive: true, force: true });
    }
}

await main();
