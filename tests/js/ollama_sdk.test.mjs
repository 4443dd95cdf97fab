// The official `ollama` npm client as a real client of `loradeskd serve` (CPU runner) on a synthesized tiny-qwen3
// model with the adapters sql, poet and coder: version, list, show, ps, chat and generate streamed and not, the
// load call, keep_alive pins, abort, and errors. Run by tests/e2e/ollama_e2e.sh, which sets LORADESK_BASE_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';

const BASE = process.env.LORADESK_BASE_URL;
const skip = BASE ? false : 'LORADESK_BASE_URL is not set';
const ROOT = BASE ? BASE.replace(/\/v1\/?$/, '') : 'http://127.0.0.1:1';
const ollama = new Ollama({ host: ROOT });
const BASE_MODEL = 'tiny-qwen3';
const ADAPTERS = ['coder', 'poet', 'sql'];
const greedy = (n) => ({ temperature: 0, num_predict: n });
const hi = [{ role: 'user', content: 'Say hello to the sea.' }];

async function metric(re) {
  const text = await (await fetch(`${ROOT}/metrics`)).text();
  return text.split('\n').filter((l) => re.test(l)).reduce((s, l) => s + Number(l.split(' ').pop()), 0);
}

async function adapterInfo(name) {
  return (await fetch(`${ROOT}/v1/adapters/${name}`)).json();
}

function checkFinal(part, maxTokens) {
  assert.equal(part.done, true);
  assert.ok(['stop', 'length'].includes(part.done_reason), part.done_reason);
  assert.ok(part.prompt_eval_count > 0 && part.eval_count > 0 && part.eval_count <= maxTokens, JSON.stringify(part));
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration'])
    assert.ok(Number.isInteger(part[k]) && part[k] >= 0, `${k}: ${part[k]}`);
  assert.ok(part.total_duration >= part.prompt_eval_duration);
  assert.ok(!Number.isNaN(Date.parse(part.created_at)), part.created_at);
}

test('version', { skip }, async () => {
  assert.match((await ollama.version()).version, /^\d+\.\d+\.\d+$/);
});

test('list: the base model and every adapter as BASE:ADAPTER', { skip }, async () => {
  const { models } = await ollama.list();
  assert.deepEqual(models.map((m) => m.name), [BASE_MODEL, ...ADAPTERS.map((a) => `${BASE_MODEL}:${a}`)]);
  for (const m of models) {
    assert.equal(m.model, m.name);
    assert.ok(m.size > 0);
    assert.ok(!Number.isNaN(Date.parse(m.modified_at)), m.modified_at);
    assert.equal(m.details.family, 'qwen3');
    assert.equal(m.details.format, 'safetensors');
  }
  const sql = models.find((m) => m.name === `${BASE_MODEL}:sql`);
  assert.match(sql.digest, /^[0-9a-f]{64}$/);
  assert.equal(sql.digest, (await adapterInfo('sql')).digest);  // the adapter's sha256
  assert.equal(sql.details.parent_model, BASE_MODEL);
});

test('show: model info of the base and of an adapter', { skip }, async () => {
  const base = await ollama.show({ model: BASE_MODEL });
  assert.equal(base.model_info['general.architecture'], 'qwen3');
  assert.equal(base.model_info['qwen3.context_length'], 4096);
  assert.ok(base.capabilities.includes('completion'));
  assert.equal(base.details.parent_model, '');
  const poet = await ollama.show({ model: `${BASE_MODEL}:poet` });
  assert.equal(poet.model_info['adapter.rank'], 4);
  assert.equal(poet.details.parent_model, BASE_MODEL);
  assert.match(poet.modelfile, /^ADAPTER .*poet$/m);
});

test('chat: streamed NDJSON parts add up to the non-streamed answer', { skip }, async () => {
  const model = `${BASE_MODEL}:poet`;
  const whole = await ollama.chat({ model, messages: hi, stream: false, options: greedy(12) });
  assert.equal(whole.model, model);
  assert.equal(whole.message.role, 'assistant');
  checkFinal(whole, 12);
  const parts = [];
  for await (const part of await ollama.chat({ model, messages: hi, stream: true, options: greedy(12) })) parts.push(part);
  assert.ok(parts.length >= 2, `${parts.length} parts`);
  for (const p of parts.slice(0, -1)) assert.equal(p.done, false);
  checkFinal(parts.at(-1), 12);
  assert.equal(parts.map((p) => p.message.content).join(''), whole.message.content);
  assert.equal(parts.at(-1).eval_count, whole.eval_count);
});

test('generate: templated and raw, streamed and not; the adapter changes the answer', { skip }, async () => {
  const answers = {};
  for (const model of [BASE_MODEL, `${BASE_MODEL}:sql`]) {
    const whole = await ollama.generate({ model, prompt: 'Once upon a time', stream: false, options: greedy(10) });
    checkFinal(whole, 10);
    let text = '';
    let last = null;
    for await (const part of await ollama.generate({ model, prompt: 'Once upon a time', options: greedy(10), stream: true })) {
      text += part.response;
      last = part;
    }
    checkFinal(last, 10);
    assert.equal(text, whole.response);
    answers[model] = whole.response;
  }
  assert.notEqual(answers[BASE_MODEL], answers[`${BASE_MODEL}:sql`]);
  // raw: the prompt as written; otherwise the chat template wraps it as a user turn.
  const templated = await ollama.generate({ model: BASE_MODEL, prompt: 'hi', stream: false, options: greedy(2) });
  const raw = await ollama.generate({ model: BASE_MODEL, prompt: 'hi', raw: true, stream: false, options: greedy(2) });
  checkFinal(raw, 2);
  assert.ok(raw.prompt_eval_count < templated.prompt_eval_count, `${raw.prompt_eval_count} vs ${templated.prompt_eval_count}`);
});

test('ps: the base model and the adapters in memory', { skip }, async () => {
  await ollama.chat({ model: `${BASE_MODEL}:coder`, messages: hi, stream: false, options: greedy(2) });
  const { models } = await ollama.ps();
  assert.equal(models[0].name, BASE_MODEL);
  assert.ok(models[0].size > 0);
  const coder = models.find((m) => m.name === `${BASE_MODEL}:coder`);
  assert.ok(coder, JSON.stringify(models.map((m) => m.name)));
  assert.ok(coder.size > 0);
  assert.equal(coder.size_vram, 0);  // the CPU runner has no GPU memory
  assert.ok(!Number.isNaN(Date.parse(coder.expires_at)));
});

test('load call and keep_alive: -1 pins the adapter, 0 unpins it', { skip }, async () => {
  const load = await ollama.generate({ model: `${BASE_MODEL}:coder`, prompt: '', keep_alive: -1 });
  assert.equal(load.done, true);
  assert.equal(load.done_reason, 'load');
  assert.equal((await adapterInfo('coder')).pinned, true);
  const { models } = await ollama.ps();
  const coder = models.find((m) => m.name === `${BASE_MODEL}:coder`);
  assert.ok(new Date(coder.expires_at).getUTCFullYear() > 2200, coder.expires_at);
  await ollama.chat({ model: `${BASE_MODEL}:coder`, messages: hi, stream: false, options: greedy(2), keep_alive: '5m' });
  assert.equal((await adapterInfo('coder')).pinned, true, 'a client default keep_alive leaves the pin alone');
  const unload = await ollama.chat({ model: `${BASE_MODEL}:coder`, messages: [], keep_alive: 0 });
  assert.equal(unload.done_reason, 'unload');
  assert.equal((await adapterInfo('coder')).pinned, false);
});

test('abort mid-stream cancels the engine request', { skip }, async () => {
  const aborted = /^loradesk_requests_total\{adapter="sql",endpoint="ollama_generate",code="499"\}/;
  const before = await metric(aborted);
  // Greedy decoding with this synthesized adapter never emits EOS: it would run to the end of the context.
  const stream = await ollama.generate({ model: `${BASE_MODEL}:sql`, prompt: 'Go on forever.', stream: true,
                                         options: { temperature: 0, num_predict: -1 } });
  let parts = 0;
  await assert.rejects(async () => {
    for await (const part of stream) {
      assert.equal(part.done, false, 'the generation ended before the abort');
      if (++parts === 3) stream.abort();
    }
  }, (e) => e.name === 'AbortError' || /abort/i.test(e.message));
  for (let i = 0; i < 50 && (await metric(aborted)) === before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await metric(aborted), before + 1, 'the server counted the abandoned request');
  for (let i = 0; i < 50 && (await metric(/^loradesk_requests_running(\{| )/)) > 0; i++)
    await new Promise((r) => setTimeout(r, 100));
  assert.equal(await metric(/^loradesk_requests_running(\{| )/), 0);
});

test('format: "json" and a JSON schema constrain the answer (random weights never write JSON by themselves)', { skip }, async () => {
  const schema = { type: 'object', properties: { city: { type: 'string', maxLength: 20 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
                   required: ['city', 'days'], additionalProperties: false };
  for (const model of [BASE_MODEL, `${BASE_MODEL}:poet`]) {
    const r = await ollama.chat({ model, messages: hi, format: schema, stream: false, options: greedy(120) });
    const v = JSON.parse(r.message.content);
    assert.deepEqual(Object.keys(v), ['city', 'days'], r.message.content);
    assert.ok(Number.isInteger(v.days) && v.days >= 1 && v.days <= 7, r.message.content);
    let text = '';
    for await (const part of await ollama.generate({ model, prompt: 'JSON please', format: 'json', stream: true, options: greedy(120) }))
      text += part.response;
    const obj = JSON.parse(text);
    assert.ok(obj && typeof obj === 'object' && !Array.isArray(obj), text);
  }
});

test('errors: unknown model, unsupported format schema, no pull, bad option', { skip }, async () => {
  const isError = (status, re) => (e) => {
    assert.equal(e.name, 'ResponseError');
    assert.equal(e.status_code, status);
    assert.match(e.error, re);
    return true;
  };
  await assert.rejects(ollama.chat({ model: 'llama3.2', messages: hi, stream: false }),
                       isError(404, /model "llama3.2" not found.*\/v1\/load_lora_adapter/));
  await assert.rejects(ollama.generate({ model: 'llama3.2', prompt: 'x', stream: true }), isError(404, /not found/));
  await assert.rejects(ollama.chat({ model: BASE_MODEL, messages: hi, format: { type: 'object', not: {} }, stream: false }),
                       isError(400, /'not'/));
  await assert.rejects(ollama.pull({ model: 'llama3.2', stream: false }), isError(501, /does not download/));
  await assert.rejects(ollama.embed({ model: BASE_MODEL, input: 'x' }), isError(501, /no embeddings/));
  await assert.rejects(ollama.chat({ model: BASE_MODEL, messages: hi, stream: false, options: { temperature: 5 } }),
                       isError(400, /'options.temperature' must be between 0 and 2/));
});
