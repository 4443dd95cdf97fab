// Structured outputs and enforced tool calls through the client libraries agents use, against `loradeskd serve`
// (CPU runner) on a random-weight synthesized model that never writes JSON or tool calls by itself: every valid
// object below exists only because the grammar enforced it. Each test runs its requests on the base model and on
// every adapter at once, so constrained rows share batches with each other and with different adapters.
// Run by tests/e2e/structured_e2e.sh, which sets LORADESK_BASE_URL and LORADESK_ADAPTERS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { generateObject, generateText, streamText, tool, Output } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { tool as lcTool } from '@langchain/core/tools';

const BASE = process.env.LORADESK_BASE_URL;
const skip = BASE ? false : 'LORADESK_BASE_URL is not set';
const BASE_MODEL = 'tiny-qwen3';
const MODELS = [BASE_MODEL, ...(process.env.LORADESK_ADAPTERS ?? '').split(',').filter(Boolean)];
const MAX_TOKENS = 160;

const openai = new OpenAI({ baseURL: BASE ?? 'http://127.0.0.1:1/v1', apiKey: 'unused', maxRetries: 0 });
const provider = createOpenAICompatible({ name: 'loradesk', baseURL: BASE ?? 'http://127.0.0.1:1/v1', supportsStructuredOutputs: true });
const chatModel = (model) => new ChatOpenAI({ model, apiKey: 'unused', configuration: { baseURL: BASE }, temperature: 0, maxTokens: MAX_TOKENS, maxRetries: 0 });

const Invoice = z.object({
  customer: z.string(),
  status: z.enum(['paid', 'open', 'void']),
  total_cents: z.number().int().min(0).max(1000000),
  items: z.array(z.object({ sku: z.string(), qty: z.number().int().min(1).max(99) })).min(1).max(3),
  note: z.string().nullable(),
});
const Weather = z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) });
const prompt = 'Extract the invoice: ACME Corp paid 12.50 for two widgets.';

const onEvery = (fn) => Promise.all(MODELS.map((model, i) => fn(model, i)));

test('openai chat.completions.parse with a zod schema (strict json_schema)', { skip }, async () => {
  await onEvery(async (model, i) => {
    const r = await openai.chat.completions.parse({
      model, messages: [{ role: 'user', content: prompt }], response_format: zodResponseFormat(Invoice, 'invoice'),
      max_tokens: MAX_TOKENS, temperature: i % 2 ? 0.9 : 0, seed: i,
    });
    const msg = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', `${model}: ${msg.content}`);
    assert.deepEqual(Invoice.parse(msg.parsed), msg.parsed, model);
  });
});

test('openai streaming json_object: the streamed text is one JSON object', { skip }, async () => {
  await onEvery(async (model) => {
    const stream = await openai.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Reply in JSON.' }], response_format: { type: 'json_object' },
      max_tokens: MAX_TOKENS, stream: true,
    });
    let text = '';
    let finish;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, 'stop', `${model}: ${text}`);
    const value = JSON.parse(text);
    assert.ok(value && typeof value === 'object' && !Array.isArray(value), text);
  });
});

test('vLLM guided_choice and guided_regex on completions', { skip }, async () => {
  await onEvery(async (model) => {
    const c = await openai.completions.create({ model, prompt: 'The sentiment is', max_tokens: 20, guided_choice: ['positive', 'negative', 'neutral'] });
    assert.ok(['positive', 'negative', 'neutral'].includes(c.choices[0].text), c.choices[0].text);
    const r = await openai.completions.create({ model, prompt: 'Call me at', max_tokens: 30, guided_regex: '\\(\\d{3}\\) \\d{3}-\\d{4}' });
    assert.match(r.choices[0].text, /^\(\d{3}\) \d{3}-\d{4}$/);
  });
});

test('AI SDK generateObject and generateText with Output.object', { skip }, async () => {
  await onEvery(async (model) => {
    const { object } = await generateObject({ model: provider(model), schema: Invoice, prompt, maxOutputTokens: MAX_TOKENS, maxRetries: 0 });
    assert.deepEqual(Invoice.parse(object), object);
    const { output } = await generateText({ model: provider(model), output: Output.object({ schema: Weather }), prompt: 'Weather in Oslo?', maxOutputTokens: MAX_TOKENS, maxRetries: 0 });
    assert.deepEqual(Weather.parse(output), output);
  });
});

test('AI SDK streamText with tools and toolChoice required: streamed tool-call deltas', { skip }, async () => {
  await onEvery(async (model) => {
    const result = streamText({
      model: provider(model), prompt: 'What is the weather in Oslo?', maxOutputTokens: MAX_TOKENS, maxRetries: 0,
      tools: {
        weather: tool({ description: 'Current weather in a city', inputSchema: Weather }),
        time: tool({ description: 'Local time in a city', inputSchema: z.object({ city: z.string() }) }),
      },
      toolChoice: 'required',
    });
    let deltas = 0;
    for await (const part of result.fullStream) if (part.type === 'tool-input-delta') deltas++;
    const calls = await result.toolCalls;
    assert.ok(calls.length >= 1, model);
    for (const c of calls) {
      assert.ok(['weather', 'time'].includes(c.toolName), c.toolName);
      (c.toolName === 'weather' ? Weather : z.object({ city: z.string() })).parse(c.input);
    }
    assert.ok(deltas >= 1, 'arguments arrive as streamed deltas');
    assert.equal(await result.finishReason, 'tool-calls');
  });
});

test('AI SDK generateText with a named toolChoice calls that tool', { skip }, async () => {
  await onEvery(async (model) => {
    const { toolCalls } = await generateText({
      model: provider(model), prompt: 'Time in Lima?', maxOutputTokens: MAX_TOKENS, maxRetries: 0,
      tools: { weather: tool({ inputSchema: Weather }), time: tool({ inputSchema: z.object({ city: z.string() }) }) },
      toolChoice: { type: 'tool', toolName: 'time' },
    });
    assert.equal(toolCalls.length, 1);
    assert.equal(toolCalls[0].toolName, 'time');
    z.object({ city: z.string() }).parse(toolCalls[0].input);
  });
});

test('LangChain withStructuredOutput (jsonSchema and functionCalling)', { skip }, async () => {
  await onEvery(async (model) => {
    for (const method of ['jsonSchema', 'functionCalling']) {
      const out = await chatModel(model).withStructuredOutput(Invoice, { name: 'invoice', method }).invoke(prompt);
      assert.deepEqual(Invoice.parse(out), out, `${model} ${method}`);
    }
  });
});

test('LangChain bindTools with tool_choice any', { skip }, async () => {
  await onEvery(async (model) => {
    const weather = lcTool(async () => 'sunny', { name: 'weather', description: 'Current weather', schema: Weather });
    const msg = await chatModel(model).bindTools([weather], { tool_choice: 'any' }).invoke('Weather in Oslo?');
    assert.equal(msg.tool_calls.length >= 1, true, JSON.stringify(msg));
    assert.equal(msg.tool_calls[0].name, 'weather');
    Weather.parse(msg.tool_calls[0].args);
  });
});

test('unsupported schema keywords are a 400 naming the keyword', { skip }, async () => {
  await assert.rejects(
    openai.chat.completions.create({
      model: BASE_MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', patternProperties: { '^a': {} } } } },
    }),
    (e) => e instanceof OpenAI.BadRequestError && /patternProperties/.test(e.message),
  );
});

