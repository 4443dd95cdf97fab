// Soundness of the JSON Schema -> GBNF translation without a model: for the schemas of random_schemas.mjs, sample
// random documents from each grammar (every choice random, layout included) and validate them with ajv (Ajv2020 +
// ajv-formats, the validator of #18's validity goal). Any invalid or unparseable document is a translation bug.
// usage: node tests/js/schema_grammar_fuzz.mjs --cli PATH/json_schema_gbnf_cli [--count 500] [--seed 1] [--docs 4]
// Exit codes: 0 pass, 1 failures, 77 skipped (node_modules absent).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { makeRng, randomSchemas } from './random_schemas.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : fallback; };
const cli = opt('cli');
const count = Number(opt('count', '500'));
const seed = Number(opt('seed', '1'));
const docsPerSchema = Number(opt('docs', '4'));
if (!cli) { console.error('usage: schema_grammar_fuzz.mjs --cli PATH'); process.exit(2); }
if (!fs.existsSync(path.join(here, 'node_modules', 'ajv-formats'))) {
    console.log('SKIP: tests/js/node_modules is absent (run npm ci in tests/js)');
    process.exit(77);
}
const { default: Ajv2020 } = await import('ajv/dist/2020.js');
const { default: addFormats } = await import('ajv-formats');

// --- GBNF (as json_schema_to_gbnf writes it: one rule per line) -> tree ---
function parseGrammar(text) {
    const rules = new Map();
    for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        const at = line.indexOf(' ::= ');
        const p = { s: line.slice(at + 5), i: 0 };
        rules.set(line.slice(0, at), parseAlt(p));
        if (p.i !== p.s.length) throw new Error(`unparsed GBNF: ${line}`);
    }
    return rules;
}
const skip = (p) => { while (p.s[p.i] === ' ') p.i++; };
function parseAlt(p) {
    const alts = [parseSeq(p)];
    skip(p);
    while (p.s[p.i] === '|') { p.i++; alts.push(parseSeq(p)); skip(p); }
    return { k: 'alt', alts };
}
function parseSeq(p) {
    const items = [];
    for (;;) {
        skip(p);
        if (p.i >= p.s.length || p.s[p.i] === '|' || p.s[p.i] === ')') return { k: 'seq', items };
        let a = parseAtom(p);
        while ('*+?{'.includes(p.s[p.i]) && p.i < p.s.length) {
            const c = p.s[p.i];
            let lo, hi;
            if (c === '{') {
                const j = p.s.indexOf('}', p.i);
                const parts = p.s.slice(p.i + 1, j).split(',');
                p.i = j + 1;
                lo = Number(parts[0]);
                hi = parts.length === 1 ? lo : parts[1] === '' ? null : Number(parts[1]);
            } else {
                p.i++;
                [lo, hi] = { '*': [0, null], '+': [1, null], '?': [0, 1] }[c];
            }
            a = { k: 'rep', a, lo, hi };
        }
        items.push(a);
    }
}
function parseChar(p) {
    if (p.s[p.i] !== '\\') { const cp = p.s.codePointAt(p.i); p.i += cp > 0xffff ? 2 : 1; return cp; }
    const e = p.s[p.i + 1];
    if (e === 'x' || e === 'u') {
        const n = e === 'x' ? 2 : 4;
        const v = parseInt(p.s.slice(p.i + 2, p.i + 2 + n), 16);
        p.i += 2 + n;
        return v;
    }
    p.i += 2;
    return ({ n: 10, r: 13, t: 9 })[e] ?? e.codePointAt(0);
}
function parseAtom(p) {
    const c = p.s[p.i];
    if (c === '"') {
        p.i++;
        let out = '';
        while (p.s[p.i] !== '"') out += String.fromCodePoint(parseChar(p));
        p.i++;
        return { k: 'lit', text: out };
    }
    if (c === '[') {
        p.i++;
        const neg = p.s[p.i] === '^';
        if (neg) p.i++;
        const ranges = [];
        while (p.s[p.i] !== ']') {
            const lo = parseChar(p);
            let hi = lo;
            if (p.s[p.i] === '-' && p.s[p.i + 1] !== ']') { p.i++; hi = parseChar(p); }
            ranges.push([lo, hi]);
        }
        p.i++;
        return { k: 'cls', neg, ranges };
    }
    if (c === '(') {
        p.i++;
        const a = parseAlt(p);
        skip(p);
        p.i++;
        return a;
    }
    const m = /^[A-Za-z0-9_-]+/.exec(p.s.slice(p.i));
    p.i += m[0].length;
    return { k: 'ref', name: m[0] };
}

// --- sampling: uniform choices, repetitions geometric; past a depth, the cheapest alternative ends recursion ---
const POOL = [...Array(95).keys()].map((i) => 0x20 + i).concat([0xe9, 0x65e5, 0x1f600, 0x2028, 0x7f]);
function minCosts(rules) {
    const cost = new Map([...rules.keys()].map((n) => [n, 1e9]));
    const c = (x) => {
        switch (x.k) {
            case 'lit': return x.text.length;
            case 'cls': return 1;
            case 'seq': return x.items.reduce((s, i) => s + c(i), 0);
            case 'alt': return Math.min(...x.alts.map(c));
            case 'rep': return x.lo * c(x.a);
            default: return cost.get(x.name);
        }
    };
    for (let round = 0; round < 60; ++round) for (const [n, r] of rules) cost.set(n, Math.min(cost.get(n), c(r)));
    return c;
}
function sample(rules, rng) {
    const cost = minCosts(rules);
    const out = [];
    const gen = (x, depth) => {
        switch (x.k) {
            case 'lit': out.push(x.text); break;
            case 'cls': {
                const inRange = (cp) => x.ranges.some(([lo, hi]) => lo <= cp && cp <= hi);
                let cp;
                if (x.neg) {
                    cp = rng.pick(POOL.filter((v) => !inRange(v)));
                } else {
                    const [lo, hi] = rng.pick(x.ranges);
                    do cp = rng.int(lo, lo < 0x80 ? Math.min(hi, lo + 300) : hi); while (cp >= 0xd800 && cp <= 0xdfff);
                }
                out.push(String.fromCodePoint(cp));
                break;
            }
            case 'seq': for (const i of x.items) gen(i, depth); break;
            case 'alt': {
                const a = depth > 25 ? x.alts.reduce((b, v) => (cost(v) < cost(b) ? v : b)) : rng.pick(x.alts);
                gen(a, depth);
                break;
            }
            case 'rep': {
                const cap = x.hi ?? x.lo + 8;
                let n = x.lo;
                while (n < cap && depth <= 25 && rng.chance(0.6)) n++;
                for (let i = 0; i < n; ++i) gen(x.a, depth + 1);
                break;
            }
            default: gen(rules.get(x.name), depth + 1);
        }
    };
    gen({ k: 'ref', name: 'root' }, 0);
    return out.join('');
}

// Every other schema loses its additionalProperties: false, so that extra keys (which must never spell a listed
// property) are sampled too.
const openUp = (x) => {
    if (Array.isArray(x)) x.forEach(openUp);
    else if (x && typeof x === 'object') {
        delete x.additionalProperties;
        Object.values(x).forEach(openUp);
    }
    return x;
};
const schemas = randomSchemas(count, seed).map((s, i) => (i % 2 ? openUp(s) : s));
const answers = execFileSync(cli, { input: schemas.map((s) => JSON.stringify(s)).join('\n') + '\n', maxBuffer: 1 << 30 })
    .toString().trim().split('\n').map((l) => JSON.parse(l));
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const rng = makeRng(seed * 7919 + 1);
let failures = 0, nDocs = 0;
const report = (msg) => { if (++failures <= 10) console.log(msg); };
schemas.forEach((schema, i) => {
    const a = answers[i];
    if (a.error || a.gbnf_error) return report(`schema ${i}: ${a.error ?? a.gbnf_error}\n  ${JSON.stringify(schema)}`);
    const rules = parseGrammar(a.gbnf);
    const validate = ajv.compile(schema);
    for (let d = 0; d < docsPerSchema; ++d) {
        const doc = sample(rules, rng);
        nDocs++;
        let value;
        try { value = JSON.parse(doc); } catch { report(`schema ${i}: unparseable ${JSON.stringify(doc)}`); continue; }
        if (!validate(value))
            report(`schema ${i}: invalid ${JSON.stringify(doc)}\n  ${JSON.stringify(validate.errors)}\n  ${JSON.stringify(schema)}`);
    }
});
console.log(`${schemas.length} schemas, ${nDocs} sampled documents, ${failures} failures`);
process.exit(failures ? 1 : 0);
