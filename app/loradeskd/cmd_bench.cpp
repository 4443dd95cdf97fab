// loradeskd bench: prefill throughput / TTFT of single prompts and greedy decode throughput at several batch
// sizes, optionally with random LoRA adapters (one per slot, sequences spread over them), each beside the
// memory roofline of the step (weights + KV bytes / device copy bandwidth measured in the same run, CUDA).
// Checks outputs first (finite, identical base sequences agree) so a broken runner cannot report a speed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "bench_cold_adapter.h"
#include "bench_common.h"
#include "core/error.h"

namespace {

using namespace loradesk;
using namespace loradesk::bench;
using Clock = std::chrono::steady_clock;

// Adapter with every module at `rank`, values from a cheap hash (big models x many adapters must load fast).
runtime::LoraWeights synth_lora(const model::ModelConfig& c, int rank, uint32_t seed) {
    runtime::LoraWeights w;
    w.layers.resize(std::size_t(c.n_layers));
    uint32_t x = seed * 2654435761u + 1;
    auto next = [&x]() {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        return float(x & 0xffff) / 32768.0f - 1.0f;
    };
    for (auto& layer : w.layers)
        for (int m = 0; m < runtime::kNumLoraModules; ++m) {
            const int in = m == 3 ? c.q_dim() : m == 6 ? c.intermediate_size : c.hidden_size;
            const int out = m == 0               ? c.q_dim()
                            : (m == 1 || m == 2) ? c.kv_dim()
                            : (m == 4 || m == 5) ? c.intermediate_size
                                                 : c.hidden_size;
            auto& mw = layer[std::size_t(m)];
            mw.rank = rank, mw.scale = 2.0f;  // alpha 32 / rank 16
            mw.a.resize(std::size_t(rank) * in), mw.b.resize(std::size_t(out) * rank);
            const float sa = 1.0f / std::sqrt(float(in)), sb = 0.02f;
            for (auto& v : mw.a) v = next() * sa;
            for (auto& v : mw.b) v = next() * sb;
        }
    return w;
}

// Bytes of weights one decode step streams: every projection and lm_head (the embedding is only gathered).
double decode_weight_bytes(const model::ModelConfig& c) {
    const double h = c.hidden_size,
                 per_layer = h * (c.q_dim() + 2.0 * c.kv_dim()) + double(c.q_dim()) * h + 3.0 * h * c.intermediate_size;
    return 2.0 * (c.n_layers * per_layer + double(c.vocab_size) * h);
}

// The CUDA runner's time blocked on its stream so far (0 for other runners).
double sync_wait_seconds(const BenchRunner& b) {
#ifdef LORADESK_HAS_CUDA_RUNNER
    if (b.cuda) return b.cuda->graph_stats().sync_wait_seconds;
#endif
    (void)b;
    return 0;
}

int run_bench(const cli::Args& args) {
    if (args.has("cold-adapter")) return run_cold_adapter_bench(args);
    const int prompt_len = int(args.get_int("prompt-len", 512));
    const int new_tokens = int(args.get_int("new-tokens", 256));
    const std::vector<int> batches = parse_list(args.get("batch", "1"), "batch");
    const std::vector<int> prefill_lens =
        parse_list(args.get("prefill-lens", std::to_string(prompt_len)), "prefill-lens");
    const int lora_rank = int(args.get_int("lora-rank", 0)),
              n_adapters = int(args.get_int("lora-adapters", lora_rank > 0 ? 1 : 0));
    const bool json = args.flag("json");
    if (prompt_len < 1 || new_tokens < 1 || lora_rank < 0 || n_adapters < 0 || (lora_rank > 0) != (n_adapters > 0))
        throw_expected(ErrorCode::invalid_argument,
                       "--prompt-len and --new-tokens must be at least 1; --lora-rank R needs "
                       "--lora-adapters N >= 1 (and the reverse)");
    const int max_tokens = std::max(*std::max_element(prefill_lens.begin(), prefill_lens.end()), prompt_len);
    BenchRunner bench = make_bench_runner(args, max_tokens);
    const double copy_gbps = bench.copy_gbps;
    const model::ModelConfig& c = bench.runner->config();
    const double weight_bytes = decode_weight_bytes(c), kv_token_bytes = double(bench.runner->kv_page_bytes(1));
    emit(json,
         {{"device", bench.runner->device_name()},
          {"model", c.architecture_name},
          {"copy_gbps", copy_gbps},
          {"decode_weight_gib", weight_bytes / 1073741824.0}},
         std::string(c.architecture_name) + " on " + bench.runner->device_name() + ": " +
             std::to_string(weight_bytes / 1073741824.0) + " GiB of weights per decode step, device copy bandwidth " +
             std::to_string(copy_gbps) + " GB/s");
    bench.runner->configure_lora_slots(n_adapters, lora_rank);
    for (int a = 0; a < n_adapters; ++a) bench.runner->load_lora_slot(a + 1, synth_lora(c, lora_rank, uint32_t(a + 1)));
    auto prompt_of = [&](int len) { return bench_prompt(len, c.vocab_size); };
    const int page_size = 16;

    // Prefill / TTFT: one prompt at a time (after one untimed warm-up of the same length), base model.
    for (int len : prefill_lens) {
        runtime::SequenceDriver d(*bench.runner, 2 * (len / page_size + 2), page_size);
        std::vector<runtime::SequenceDriver::Work> w{{d.add_sequence(), prompt_of(len)}};
        bench.step(d, w);
        w[0].seq = d.add_sequence();
        auto t0 = Clock::now();
        bench.step(d, w);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        emit(json, {{"phase", "prefill"}, {"prompt_len", len}, {"ttft_ms", 1e3 * s}, {"tokens_per_s", len / s}},
             "prefill " + std::to_string(len) + " tokens: " + std::to_string(len / s) + " tokens/s, TTFT " +
                 std::to_string(1e3 * s) + " ms");
    }

    // Decode: B sequences of the same prompt (spread over the adapters, grouped by slot), one untimed step
    // (captures the graphs), then new_tokens timed greedy steps.
    for (int B : batches) {
        const int pages_per_seq = (prompt_len + new_tokens + 1) / page_size + 2;
        runtime::SequenceDriver d(*bench.runner, pages_per_seq * B, page_size);
        std::vector<int> slots;
        for (int b = 0; b < B; ++b) slots.push_back(n_adapters > 0 ? 1 + int(int64_t(b) * n_adapters / B) : 0);
        std::vector<runtime::SequenceDriver::Work> work;
        std::vector<int32_t> tokens = prefill_sequences(bench, d, work, slots, prompt_len, max_tokens);
        double decode_s = 0, sync_s = 0;  // sync_s: of decode_s, the CUDA runner's wait for the GPU
        for (int s = 0; s <= new_tokens; ++s) {
            for (int b = 0; b < B; ++b) {
                if (tokens[std::size_t(b)] < 0 || tokens[std::size_t(b)] >= c.vocab_size)
                    throw_error(ErrorCode::internal, "bench: token out of range");
                if (n_adapters == 0 && tokens[std::size_t(b)] != tokens[0])
                    throw_error(ErrorCode::internal, "bench: identical sequences disagree");
                work[std::size_t(b)].tokens = {tokens[std::size_t(b)]};
            }
            const double sync0 = sync_wait_seconds(bench);
            auto t0 = Clock::now();
            tokens = bench.step(d, work);
            if (s > 0) {
                decode_s += std::chrono::duration<double>(Clock::now() - t0).count();
                sync_s += sync_wait_seconds(bench) - sync0;
            }
        }
        const double tps = double(B) * new_tokens / decode_s, ms = 1e3 * decode_s / new_tokens;
        // The step's host time (building the batch, planning, launching): the step minus the CUDA runner's wait
        // for the GPU, so at most what the GPU waited for the host; 0 for other runners.
        const double host_ms = sync_s > 0 ? 1e3 * (decode_s - sync_s) / new_tokens : 0.0;
        const double avg_ctx = prompt_len + new_tokens / 2.0;
        const double roof_ms =
            copy_gbps > 0 ? 1e3 * (weight_bytes + B * avg_ctx * kv_token_bytes) / (copy_gbps * 1e9) : 0;
        emit(json,
             {{"phase", "decode"},
              {"batch", B},
              {"prompt_len", prompt_len},
              {"new_tokens", new_tokens},
              {"lora_rank", lora_rank},
              {"lora_adapters", n_adapters},
              {"tokens_per_s", tps},
              {"ms_per_step", ms},
              {"roofline_ms_per_step", roof_ms},
              {"roofline_tokens_per_s", roof_ms > 0 ? 1e3 * B / roof_ms : 0.0},
              {"host_ms_per_step", host_ms}},
             "decode batch " + std::to_string(B) +
                 (n_adapters ? " (" + std::to_string(n_adapters) + " adapters, rank " + std::to_string(lora_rank) + ")"
                             : "") +
                 ": " + std::to_string(tps) + " tokens/s, " + std::to_string(ms) + " ms/step (memory roofline " +
                 std::to_string(roof_ms) + " ms/step" +
                 (host_ms > 0 ? ", host " + std::to_string(host_ms) + " ms/step" : "") + ")");
    }
#ifdef LORADESK_HAS_CUDA_RUNNER
    if (bench.cuda) {
        const auto st = bench.cuda->graph_stats();
        emit(json,
             {{"graph_captures", st.captures},
              {"graph_replays", st.replays},
              {"eager_steps", st.eager_steps},
              {"workspace_grows", st.workspace_grows}},
             "graphs: " + std::to_string(st.captures) + " captured, " + std::to_string(st.replays) + " replays, " +
                 std::to_string(st.eager_steps) + " eager steps, " + std::to_string(st.workspace_grows) +
                 " workspace grows");
    }
#endif
    return 0;
}

LORADESK_COMMAND(
    {"bench",
     "prefill / TTFT and greedy decode throughput of a runner, beside the memory roofline",
     "loradeskd bench --model DIR [--device cpu|cuda|auto] [--prompt-len 512] [--new-tokens 256] "
     "[--batch 1,8,32] [--prefill-lens 512,2048] [--lora-rank R --lora-adapters N] [--no-graphs] "
     "[--cublas-only] [--no-pdl] [--serial-lora] [--quant-lora-fused] [--fp8-weight-only] [--json]\n"
     "       loradeskd bench --model DIR --cold-adapter ADAPTER_DIR [--batch 8] [--cold-at 32] "
     "[--max-lora-rank 64] [--device ...] [--json]",
     {{"model", "DIR|ORG/NAME", "Hugging Face model directory, or a Hub id in the Hugging Face cache"},
      {"device", "DEV", "cpu (default), cuda or auto"},
      {"prompt-len", "N", "prompt tokens per decoding sequence (default 512)"},
      {"new-tokens", "N", "timed decode steps (default 256)"},
      {"batch", "LIST", "decode batch sizes, comma-separated (default 1)"},
      {"prefill-lens", "LIST", "single-prompt prefill lengths timed for TTFT (default: the prompt length)"},
      {"lora-rank", "R", "give sequences random all-module LoRA adapters of rank R"},
      {"lora-adapters", "N", "number of distinct adapters (slots) the batch is spread over"},
      {"cold-adapter", "DIR",
       "instead: decode with B base requests and bring this PEFT adapter from "
       "disk into a free GPU slot mid-run; report load times and step times around it"},
      {"cold-at", "N", "cold-adapter: decode step at which the load starts (default 32)"},
      {"max-lora-rank", "R", "cold-adapter: rank of the slot the adapter goes into (default 64)"},
      {"no-graphs", "", "CUDA: run decode steps eagerly instead of replaying CUDA graphs"},
      {"cublas-only", "", "CUDA: cuBLAS + separate kernels for every projection (no fused skinny GEMM)"},
      {"no-pdl", "", "CUDA: launch kernels without programmatic dependent launch"},
      {"serial-lora", "", "CUDA: run unfused LoRA shrinks after the base projection on one stream, not beside it"},
      {"quant-lora-fused", "",
       "CUDA, quantized models: at 1-2 tokens fuse each LoRA site's shrink and expand into the base kernel, not "
       "beside it into a delta that its reader adds"},
      {"fp8-weight-only", "", "CUDA, block-scaled fp8 models: keep activations in bf16 (no W8A8 fp8 GEMM)"},
      {"threads", "N", "CPU threads (0 = all cores)"},
      {"json", "", "print one JSON object per measurement"}},
     &run_bench});

}  // namespace
