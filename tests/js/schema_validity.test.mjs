// Validity sweep: ≥ 500 random JSON Schemas (tests/js/random_schemas.mjs: nesting, enums, const, arrays with
// bounds, optional fields, anyOf, nullable types, $defs/$ref, formats, patterns, bounded integers) sent as
// response_format json_schema to `loradeskd serve` on a random-weight synthesized model, sampled at temperature 1
// over the base model and every adapter. Every answer must parse and validate with ajv, an independent validator;
// max_tokens is small, so the grammar must also close every structure within the budget.
// Run by tests/e2e/structured_e2e.sh. LORADESK_SCHEMAS overrides the count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { randomSchemas } from './random_schemas.mjs';

const BASE = process.env.LORADESK_BASE_URL;
const skip = BASE ? false : 'LORADESK_BASE_URL is not set';
const MODELS = ['tiny-qwen3', ...(process.env.LORADESK_ADAPTERS ?? '').split(',').filter(Boolean)];
const N = Number(process.env.LORADESK_SCHEMAS ?? 500);
const CONCURRENCY = 16;

test(`${N} random schemas: every constrained answer validates`, { skip, timeout: 1_800_000 }, async () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const schemas = randomSchemas(N, 20261124);
  const failures = [];
  let next = 0;
  let tokens = 0;
  async function worker() {
    while (next < schemas.length) {
      const i = next++;
      const schema = schemas[i];
      const res = await fetch(`${BASE}/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODELS[i % MODELS.length], messages: [{ role: 'user', content: `Fill in schema ${i}.` }],
          response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: false } },
          max_tokens: 400, temperature: 1, seed: i,
        }),
      });
      const body = await res.json();
      if (res.status !== 200) { failures.push({ i, status: res.status, body, schema }); continue; }
      const text = body.choices[0].message.content;
      tokens += body.usage.completion_tokens;
      let value;
      try { value = JSON.parse(text); } catch (e) { failures.push({ i, error: `not JSON: ${e.message}`, text, finish: body.choices[0].finish_reason, schema }); continue; }
      if (!ajv.validate(schema, value)) failures.push({ i, error: ajv.errorsText(), text, schema });
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`# ${schemas.length} schemas, ${tokens} constrained tokens, ${failures.length} failures`);
  assert.deepEqual(failures.slice(0, 3), [], `${failures.length} of ${schemas.length} answers failed`);
});
