// Black-box test of loradesk's OpenAI-compatible server with the real openai@6 SDK and eventsource-parser@3.
// Run against `loradeskd serve` (or tests/server's loradesk_scripted_server):
//   LORADESK_BASE_URL=http://127.0.0.1:8080/v1 [LORADESK_API_KEY=key] [LORADESK_MAX_BODY_BYTES=n]
//   [LORADESK_SCRIPTED=1  (enables the scripted-engine-only cases: 429, 503, error mid-stream, unload while busy)]
//   node --test tests/js/server_sdk.test.mjs
// Without LORADESK_BASE_URL every test is skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createParser } from 'eventsource-parser';

const BASE = process.env.LORADESK_BASE_URL;
const KEY = process.env.LORADESK_API_KEY || '';
const SCRIPTED = process.env.LORADESK_SCRIPTED === '1';
const MAX_BODY = Number(process.env.LORADESK_MAX_BODY_BYTES || 32 * 1024 * 1024);
const skip = BASE ? false : 'LORADESK_BASE_URL is not set';
const ROOT = BASE ? BASE.replace(/\/v1\/?$/, '') : '';

const client = new OpenAI({ baseURL: BASE || 'http://127.0.0.1:1/v1', apiKey: KEY || 'sk-no-key-required', maxRetries: 0 });
const authHeaders = KEY ? { authorization: `Bearer ${KEY}` } : {};
const prompt = (s) => (SCRIPTED ? s : 'Count from one to twenty in words.');

let modelsCache;
async function models() {
  if (!modelsCache) {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m);
    modelsCache = ids;
  }
  return modelsCache;
}
const baseId = async () => (await models()).find((m) => m.parent === null || m.parent === undefined).id;
const adapterIds = async () => (await models()).filter((m) => m.parent).map((m) => m.id);

async function metricValue(re) {
  const text = await (await fetch(`${ROOT}/metrics`, { headers: authHeaders })).text();
  let total = 0;
  for (const line of text.split('\n')) if (re.test(line)) total += Number(line.split(' ').pop());
  return total;
}

test('models.list: the base model and every adapter with parent/root', { skip }, async () => {
  const list = await models();
  const base = list.find((m) => !m.parent);
  assert.ok(base, 'a base entry with parent null');
  assert.equal(base.object, 'model');
  assert.equal(typeof base.created, 'number');
  assert.ok(base.max_model_len > 0);
  for (const m of list.filter((x) => x.parent)) {
    assert.equal(m.parent, base.id);
    assert.equal(typeof m.root, 'string');
  }
  const one = await client.models.retrieve(base.id);
  assert.equal(one.id, base.id);
});

test('completions: non-streamed text, usage and ids', { skip }, async () => {
  const r = await client.completions.create({ model: await baseId(), prompt: prompt('hello'), max_tokens: 8, temperature: 0 });
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('chat: non-streamed message, finish reason and cached-token usage', { skip }, async () => {
  const [adapter] = await adapterIds();
  const r = await client.chat.completions.create({
    model: adapter || (await baseId()), max_tokens: 8, temperature: 0,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt('hi') }],
  });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('chat: streamed with include_usage (SDK and raw SSE framing)', { skip }, async () => {
  const model = await baseId();
  const body = { model, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true },
                 messages: [{ role: 'user', content: prompt('hi') }] };
  const stream = await client.chat.completions.create(body);
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.ok(usage.usage.completion_tokens > 0);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  assert.ok(chunks.some((c) => c.choices[0]?.finish_reason));
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.ok(text.length > 0);

  const res = await fetch(`${BASE}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  assert.ok(res.headers.get('x-adapter-tier'));
  const events = [];
  const comments = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data), onComment: (c) => comments.push(c) });
  const raw = await res.text();
  parser.feed(raw);
  assert.equal(events.at(-1), '[DONE]');
  assert.ok(raw.endsWith('data: [DONE]\n\n'));
  for (const c of comments) assert.equal(c.trim(), 'keep-alive');
  const ids = new Set(events.slice(0, -1).map((d) => JSON.parse(d).id));
  assert.equal(ids.size, 1, 'same id on every chunk');
});

test('errors: 400 with param, 404 unknown adapter, context overflow, unsupported schema keyword', { skip }, async () => {
  const model = await baseId();
  const messages = [{ role: 'user', content: 'hi' }];
  await assert.rejects(client.chat.completions.create({ model, messages, temperature: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ model: 'no-such-adapter-xyz', messages }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && e.param === 'model');
  const maxLen = (await models()).find((m) => m.id === model).max_model_len;
  await assert.rejects(client.chat.completions.create({ model, max_tokens: 4, messages: [{ role: 'user', content: 'hello '.repeat(maxLen + 16) }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded' && /maximum context length/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model, messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', if: {} } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema' && /'if'/.test(e.message));
  const big = await fetch(`${BASE}/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders },
                                                   body: JSON.stringify({ model, prompt: 'x'.repeat(MAX_BODY + 1024) }) });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.code, 'request_too_large');
});

test('errors: wrong API key is 401 (when the server has a key)', { skip: skip || (!KEY && 'LORADESK_API_KEY is not set') }, async () => {
  const wrong = new OpenAI({ baseURL: BASE, apiKey: KEY + 'x', maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  assert.equal((await fetch(`${ROOT}/health`)).status, 200, '/health stays public');
});

test('errors: 429, 503, error after headers; unload while busy (scripted engine)', { skip: skip || (!SCRIPTED && 'LORADESK_SCRIPTED is not set') }, async () => {
  const msg = (content) => [{ role: 'user', content }];
  await assert.rejects(client.chat.completions.create({ model: 'sql-lora', messages: msg('#busy') }),
    (e) => e instanceof OpenAI.RateLimitError && e.headers.get('retry-after') === '1');
  await assert.rejects(client.chat.completions.create({ model: 'sql-lora', messages: msg('#unavailable') }),
    (e) => e instanceof OpenAI.InternalServerError && e.status === 503);
  const stream = await client.chat.completions.create({ model: 'sql-lora', stream: true, messages: msg('#fail') });
  await assert.rejects((async () => { for await (const _ of stream); })(), (e) => e instanceof OpenAI.APIError && /out of memory/.test(e.message));
  const slow = await client.chat.completions.create({ model: 'chat-lora', stream: true, messages: msg('#long #slow') });
  const it = slow[Symbol.asyncIterator]();
  await it.next();
  const res = await fetch(`${BASE}/unload_lora_adapter`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders },
                                                           body: JSON.stringify({ lora_name: 'chat-lora' }) });
  assert.equal(res.status, 200);  // as vLLM: running requests finish with it, new ones get 404
  assert.ok(!(await it.next()).done, 'the running stream goes on after the unload');
  slow.controller.abort();
  modelsCache = undefined;  // chat-lora is gone for the tests below
});

test('CORS preflight echoes the requested headers for a localhost origin', { skip }, async () => {
  const res = await fetch(`${BASE}/chat/completions`, { method: 'OPTIONS', headers: {
    origin: 'http://localhost:3000', 'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization,content-type,x-stainless-os' } });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get('access-control-allow-origin'), 'http://localhost:3000');
  assert.equal(res.headers.get('access-control-allow-headers'), 'authorization,content-type,x-stainless-os');
  const evil = await fetch(`${BASE}/models`, { headers: { origin: 'http://evil.example', ...authHeaders } });
  assert.equal(evil.headers.get('access-control-allow-origin'), null);
});

test('client abort mid-stream is seen by the server at once', { skip }, async () => {
  const model = await baseId();
  const before = await metricValue(/^loradesk_requests_total\{.*code="499"\}/);
  const stream = await client.chat.completions.create({ model, stream: true, max_tokens: 400, temperature: 0,
                                                        messages: [{ role: 'user', content: prompt('#long #slow') }] });
  for await (const c of stream) {
    if (c.choices[0]?.delta?.content) break;  // leaving the loop aborts the request
  }
  const deadline = Date.now() + 3000;
  while ((await metricValue(/^loradesk_requests_total\{.*code="499"\}/)) <= before) {
    assert.ok(Date.now() < deadline, 'no cancelled request recorded within 3 s');
    await new Promise((r) => setTimeout(r, 50));
  }
});

test('64 concurrent streams over mixed adapters', { skip }, async () => {
  const ids = [await baseId(), ...(await adapterIds())];
  const run = async (i) => {
    const stream = await client.chat.completions.create({
      model: ids[i % ids.length], stream: true, max_tokens: 12, temperature: 0, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: prompt(`stream ${i}`) }] });
    let text = '', finish = null, usage = null;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      usage = c.usage ?? usage;
    }
    return { text, finish, usage };
  };
  const results = await Promise.all(Array.from({ length: 64 }, (_, i) => run(i)));
  for (const r of results) {
    assert.ok(['stop', 'length'].includes(r.finish));
    assert.ok(r.usage && r.usage.completion_tokens > 0);
  }
});
