// End-to-end behaviour of the real engine behind `loradeskd serve` on the demo kit (CPU runner), with
// the real openai@6 SDK: prefix-cache namespaces per adapter, unload during a stream, client abort
// freeing everything. Run through tests/e2e/with_server.sh, which sets LORADESK_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const BASE = process.env.LORADESK_BASE_URL;
const skip = BASE ? false : 'LORADESK_BASE_URL is not set';
const ROOT = BASE ? BASE.replace(/\/v1\/?$/, '') : '';
const client = new OpenAI({ baseURL: BASE || 'http://127.0.0.1:1/v1', apiKey: 'sk-no-key-required', maxRetries: 0 });
const longPrompt = 'Tell me a long fortune about computers, the sea and the mountains, please, with details. '.repeat(3);

async function metrics() {
  const text = await (await fetch(`${ROOT}/metrics`)).text();
  const value = (re) => text.split('\n').filter((l) => re.test(l)).reduce((s, l) => s + Number(l.split(' ').pop()), 0);
  return {
    running: value(/^loradesk_requests_running(\{| )/),
    total: value(/^loradesk_kv_cache_pages\{state="total"\}/),
    free: value(/^loradesk_kv_cache_pages\{state="free"\}/),
    cached: value(/^loradesk_kv_cache_pages\{state="cached"\}/),
  };
}

async function waitIdle() {
  for (let i = 0; i < 100; i++) {
    const m = await metrics();
    if (m.running === 0 && m.free + m.cached === m.total) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`engine not idle: ${JSON.stringify(await metrics())}`);
}

const chat = (model, content, extra = {}) =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 4, temperature: 0, ...extra });

test('prefix cache: reused within an adapter, never across adapters or with the base', { skip }, async () => {
  const first = await chat('es', longPrompt);
  const again = await chat('es', longPrompt);
  assert.ok(again.usage.prompt_tokens_details.cached_tokens >= 16, `second es request hit ${JSON.stringify(again.usage)}`);
  const other = await chat('it', longPrompt);
  assert.equal(other.usage.prompt_tokens_details.cached_tokens, 0, 'it must not reuse es KV');
  const base = await chat('fortune-6m', longPrompt);
  assert.equal(base.usage.prompt_tokens_details.cached_tokens, 0, 'the base must not reuse adapter KV');
  assert.equal(first.usage.prompt_tokens, again.usage.prompt_tokens);
});

test('unload during a stream: the stream finishes, new requests get a clear 404', { skip }, async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  const de = models.find((m) => m.id === 'de');
  const load = await fetch(`${BASE}/load_lora_adapter`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: 'de-copy', lora_path: de.root }),
  });
  assert.equal(load.status, 200, await load.text());
  const stream = await client.chat.completions.create({
    model: 'de-copy', messages: [{ role: 'user', content: 'Tell me a fortune.' }], max_tokens: 40, temperature: 0,
    stream: true, stream_options: { include_usage: true }, ignore_eos: true,
  });
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const c of stream) {
    if (++chunks === 3) {
      const un = await fetch(`${BASE}/unload_lora_adapter`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lora_name: 'de-copy' }),
      });
      assert.equal(un.status, 200, await un.text());
    }
    if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
    if (c.usage) usage = c.usage;
  }
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 40);
  await assert.rejects(chat('de-copy', 'hi'), (e) => e instanceof OpenAI.NotFoundError && /unloaded|does not exist/.test(e.message));
  await waitIdle();
});

test('client abort frees the sequence: nothing running, every KV page free or cached', { skip }, async () => {
  const stream = await client.chat.completions.create(
    { model: 'it', messages: [{ role: 'user', content: longPrompt }], max_tokens: 500, stream: true, ignore_eos: true });
  let n = 0;
  let finished = false;
  for await (const c of stream) {
    if (c.choices[0]?.finish_reason) finished = true;
    if (++n === 3) break;  // leaving the loop aborts the HTTP request
  }
  assert.equal(finished, false, 'the stream must still have been running when the client left');
  const m = await waitIdle();
  assert.equal(m.running, 0);
});
