// Deterministic random JSON Schemas for the structured-output validity test (#18): the features that OpenAI strict
// mode, Pydantic and zod emit (objects with required and optional properties, enums, const, arrays with item
// counts, tuples, anyOf, nullable type arrays, $defs + $ref with recursion, string formats and simple patterns,
// bounded integers and integer-bounded numbers), nested at most 4 levels.
//
// Every schema is bounded so that a random-weight model also ends its document quickly: strings carry maxLength
// (or an enum / format / pattern), arrays maxItems, objects additionalProperties: false, and recursion goes
// through optional properties only. Schemas are JSON Schema 2020-12: validate them with Ajv2020 + ajv-formats.
//
//   import { randomSchemas } from './random_schemas.mjs';   randomSchemas(500, 1) -> [schema, ...]
//   node tests/js/random_schemas.mjs N SEED                 -> N schemas as JSON lines

// mulberry32: small, seedable, identical on every platform.
export function makeRng(seed) {
    let a = seed >>> 0;
    const next = () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    return {
        next,
        int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
        chance: (p) => next() < p,
        pick: (list) => list[Math.floor(next() * list.length)],
    };
}

const kNames = ['id', 'name', 'title', 'age', 'count', 'score', 'tags', 'items', 'kind', 'status', 'email', 'url',
    'created_at', 'day', 'start', 'owner', 'address', 'city', 'zip', 'price', 'ratio', 'enabled', 'note', 'parent',
    'value', 'label', 'host', 'ip', 'uuid', 'duration', 'code', 'level', 'sku', 'unit', 'x', 'y'];
const kWords = ['red', 'green', 'blue', 'low', 'high', 'open', 'closed', 'a b', 'quo"te', 'back\\slash', 'ünï', '日本'];
const kFormats = ['date-time', 'date', 'time', 'email', 'uuid', 'uri', 'hostname', 'ipv4', 'ipv6', 'duration'];
const kPatterns = ['^[a-z]{2,6}$', '^[A-Z][a-z]{0,8}$', '^\\d{3}-\\d{4}$', '^(foo|bar|baz)[0-9]?$', '^[a-f0-9]{8}$',
    '^[A-Z]{2}\\d{2,4}$', '^v\\d\\.\\d{1,2}$', '^(yes|no)$'];

function stringSchema(rng) {
    const r = rng.next();
    if (r < 0.15) return { type: 'string', format: rng.pick(kFormats) };
    if (r < 0.3) return { type: 'string', pattern: rng.pick(kPatterns) };
    const min = rng.int(0, 3);
    return { type: 'string', minLength: min, maxLength: min + rng.int(0, 9) };
}

function integerSchema(rng) {
    // The effective range [lo, hi] is never empty; exclusive bounds sit one outside it.
    const s = { type: 'integer' };
    const lo = rng.pick([-1000, -50, -5, 0, 1, 7, 10, 99, 100]);
    const hi = lo + rng.pick([0, 1, 9, 10, 90, 123, 9999]);
    if (rng.chance(0.8)) {
        if (rng.chance(0.3)) s.exclusiveMinimum = lo - 1;
        else s.minimum = lo;
    }
    if (rng.chance(0.8)) {
        if (rng.chance(0.3)) s.exclusiveMaximum = hi + 1;
        else s.maximum = hi;
    }
    return s;
}

function numberSchema(rng) {
    const s = { type: 'number' };
    const lo = rng.pick([-10, -1, 0, 1, 5]);
    s[rng.chance(0.3) ? 'exclusiveMinimum' : 'minimum'] = lo;
    s[rng.chance(0.3) ? 'exclusiveMaximum' : 'maximum'] = lo + rng.pick([1, 2, 10, 100]);
    return s;
}

function enumSchema(rng) {
    const n = rng.int(1, 5);
    const values = new Set();
    while (values.size < n) {
        const r = rng.next();
        values.add(JSON.stringify(r < 0.6 ? rng.pick(kWords) : r < 0.8 ? rng.int(-3, 30) : r < 0.9 ? null : rng.chance(0.5)));
    }
    return { enum: [...values].map((v) => JSON.parse(v)) };
}

function leafSchema(rng) {
    const r = rng.next();
    if (r < 0.35) return stringSchema(rng);
    if (r < 0.55) return integerSchema(rng);
    if (r < 0.62) return numberSchema(rng);
    if (r < 0.7) return { type: 'boolean' };
    if (r < 0.85) return enumSchema(rng);
    if (r < 0.92) return { const: rng.pick(['fixed', 42, true, null, { a: [1, 'b'] }]) };
    return { type: 'null' };
}

function nullable(rng, schema) {
    if (typeof schema.type === 'string' && schema.type !== 'null' && rng.chance(0.6)) {
        return { ...schema, type: [schema.type, 'null'] };
    }
    return { anyOf: [schema, { type: 'null' }] };
}

function objectSchema(rng, ctx, depth) {
    const n = rng.int(0, 5);
    const names = [...kNames].sort(() => rng.next() - 0.5).slice(0, n);
    const properties = {};
    for (const name of names) properties[name] = anySchema(rng, ctx, depth + 1);
    const required = names.filter(() => rng.chance(0.6));
    const s = { type: 'object', properties, required, additionalProperties: false };
    if (ctx.recursive && rng.chance(0.3)) s.properties.next = { $ref: `#/$defs/${ctx.recursive}` };
    return s;
}

function arraySchema(rng, ctx, depth) {
    const min = rng.int(0, 2);
    const s = { type: 'array', minItems: min, maxItems: min + rng.int(0, 3) };
    if (rng.chance(0.2)) {
        s.prefixItems = [leafSchema(rng), leafSchema(rng)];
        s.items = rng.chance(0.5) ? false : leafSchema(rng);
        if (s.items === false) s.maxItems = Math.min(s.maxItems, 2);
    } else {
        s.items = anySchema(rng, ctx, depth + 1);
    }
    return s;
}

function anySchema(rng, ctx, depth) {
    const r = rng.next();
    let s;
    if (depth >= 4 || r < 0.45) s = leafSchema(rng);
    else if (r < 0.65) s = objectSchema(rng, ctx, depth);
    else if (r < 0.8) s = arraySchema(rng, ctx, depth);
    else if (r < 0.88) s = { anyOf: [anySchema(rng, ctx, depth + 1), anySchema(rng, ctx, depth + 1)] };
    else if (ctx.defs.length > 0) s = { $ref: `#/$defs/${rng.pick(ctx.defs)}` };
    else s = leafSchema(rng);
    if (rng.chance(0.12) && !s.$ref) s = nullable(rng, s);
    if (rng.chance(0.2)) s.description = `field at depth ${depth}`;
    return s;
}

// One schema: an object at the root (as response_format json_schema requires), with $defs half the time, one of
// them possibly recursive (a linked list through an optional "next").
export function randomSchema(rng) {
    const ctx = { defs: [], recursive: null };
    const defs = {};
    if (rng.chance(0.5)) {
        const n = rng.int(1, 3);
        for (let i = 0; i < n; ++i) {
            const name = `Def${i}`;
            if (i === 0 && rng.chance(0.4)) ctx.recursive = name;
            defs[name] = objectSchema(rng, ctx, 2);
            ctx.recursive = null;
            ctx.defs.push(name);
        }
    }
    const root = objectSchema(rng, ctx, 0);
    if (Object.keys(root.properties).length === 0 && ctx.defs.length > 0) {
        root.properties.ref = { $ref: `#/$defs/${ctx.defs[0]}` };
        root.required.push('ref');
    }
    if (ctx.defs.length > 0) root.$defs = defs;
    return root;
}

export function randomSchemas(n, seed) {
    const rng = makeRng(seed);
    const out = [];
    for (let i = 0; i < n; ++i) out.push(randomSchema(rng));
    return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
    const n = Number(process.argv[2] ?? 500);
    const seed = Number(process.argv[3] ?? 1);
    for (const s of randomSchemas(n, seed)) process.stdout.write(JSON.stringify(s) + '\n');
}
