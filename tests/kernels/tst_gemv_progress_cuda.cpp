// Forward progress of the kernels that run the LoRA shrink in their own launch (kernels/gemv.cu, and quant_mma.cu
// and quant_gemv.cu's fp8 kernel with lora_shrink; issue #19) on a GPU shared with other work: an SmHog launched
// first on a high-priority stream holds every SM but `free` (1 or 2), then the kernel runs many times on another
// stream — eagerly and by replaying a captured graph, as the runner does — under a host-side watchdog (a hang fails
// in 20 s with a message instead of stalling CI), and every launch's output is compared with the CPU twin (or, for
// the quantized kernels, with the same launch on the idle GPU). Label cuda.
//
// Why the old handshake was at risk: its first blocks computed the LoRA shrink and every other block
// spin-waited for them after its own rows, so only the order in which CUDA happens to dispatch blocks kept
// the spinners from taking every slot while a producer still queued. CUDA does not promise that order. Here
// each grid (130-1,100 blocks) runs on ~16-32 resident slots, so every launch leans on it hundreds of times,
// and the reverse_block_order rows play a dispatch order CUDA is allowed to choose: with the old kernel the
// consumers filled the free SMs and spun while the producers waited for a slot that never came — a hang the
// watchdog reports. The kernel now hands units of the shrink to whichever blocks run first and waits only
// for units that running blocks hold (gemv.cu, "Forward progress"), so it completes on any dispatch order and
// any number of free SMs; the forward rows keep the usual order honest under the same squeeze.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <type_traits>

#include "device_buffer.h"
#include "gemv_case.h"
#include "gemv_device_slices.h"
#include "launchers.h"
#include "quant_case.h"
#include "quant_gemv.h"
#include "quant_lora_case.h"
#include "quant_mma.h"
#include "ref/ref_kernels.h"
#include "sm_hog.h"

using namespace loradesk::kernels;
using namespace loradesk::kernels::test;

namespace {

constexpr double kWatchdogSeconds = 20.0;
constexpr int kLaunches = 48;  // gemv launches per round (one counter pair and one output slice each)
constexpr int kRounds = 6;     // eager rounds, or replays of the captured round

struct Streams {
    cudaStream_t work = nullptr, hog = nullptr;
    Streams() {
        int lo = 0, hi = 0;
        cuda_check(cudaDeviceGetStreamPriorityRange(&lo, &hi), "stream priorities");
        cuda_check(cudaStreamCreateWithPriority(&hog, cudaStreamNonBlocking, hi), "hog stream");
        cuda_check(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking), "work stream");
    }
    ~Streams() {
        cudaStreamDestroy(work);
        cudaStreamDestroy(hog);
    }
};

}  // namespace

class TstGemvProgressCuda : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) QFAIL("no CUDA device: run this test on the GPU machine");
        SmHog hog;
        QCOMPARE(hog.blocks_per_sm(), 1);  // one hog block fills an SM's shared memory
    }

    void squeezed_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        QTest::addColumn<bool>("swiglu");
        QTest::addColumn<int>("slices");
        QTest::addColumn<int>("free_sms");
        QTest::addColumn<bool>("reverse");
        QTest::addColumn<bool>("graph");
        for (bool graph : {false, true})
            for (bool reverse : {false, true}) {
                const QString tag = QString("%1 %2").arg(graph ? "graph" : "eager", reverse ? "reverse" : "forward");
                QTest::newRow(qPrintable("n1 qkv 1024x6144 free 2 " + tag))
                    << 1 << 1024 << 6144 << false << 3 << 2 << reverse << graph;
                QTest::newRow(qPrintable("n2 gate_up 1032x8192 free 1 " + tag))
                    << 2 << 1032 << 8192 << true << 2 << 1 << reverse << graph;
                QTest::newRow(qPrintable("n8 down 3080x1025 free 2 " + tag))
                    << 8 << 3080 << 1025 << false << 1 << 2 << reverse << graph;
            }
    }

    void squeezed() {
        QFETCH(int, n);
        QFETCH(int, in);
        QFETCH(int, out);
        QFETCH(bool, swiglu);
        QFETCH(int, slices);
        QFETCH(int, free_sms);
        QFETCH(bool, reverse);
        QFETCH(bool, graph);
        GemvCase c(n, in, out, swiglu, false, slices, false, uint32_t(n * 131 + in + out * 7 + slices));
        std::vector<uint16_t> want(c.y_elems(), 0);
        std::vector<const uint16_t*> ha, hbt;
        for (int j = 0; j < slices; ++j) ha.push_back(c.a[j].data()), hbt.push_back(c.bt[j].data());
        std::vector<float> xa_ref = c.xa;
        ref::gemv(c.params(c.w.data(), c.x.data(), nullptr, want.data(), xa_ref.data(), ha, hbt, c.ranks.data(),
                           c.scales.data(), c.seg_indptr.data(), c.seg_slot.data(), nullptr));

        DeviceBuffer<uint16_t> d_w(c.w), d_x(c.x), d_y(std::size_t(kLaunches) * c.y_elems());
        DeviceBuffer<float> d_xa(c.xa.size() + 1), d_scales(c.scales);
        DeviceBuffer<int32_t> d_ranks(c.ranks), d_segp(c.seg_indptr), d_segs(c.seg_slot),
            d_sync(std::vector<int32_t>(2 * kLaunches, 0));
        const DeviceLoraSlices lora(c, slices);
        GemvParams p = c.params(d_w.get(), d_x.get(), nullptr, d_y.get(), d_xa.get(), lora.a, lora.bt, d_ranks.get(),
                                d_scales.get(), d_segp.get(), d_segs.get(), d_sync.get());
        p.reverse_block_order = reverse;
        QVERIFY(gemv_supported(p));

        // One round: poison the outputs (0xffff is a bf16 NaN), zero the counters (the caller's job,
        // kernel_params.h), then kLaunches launches, each with its own counter pair and output slice.
        auto round = [&](cudaStream_t s) {
            cuda_check(cudaMemsetAsync(d_y.get(), 0xff, d_y.size() * 2, s), "poison y");
            cuda_check(cudaMemsetAsync(d_sync.get(), 0, d_sync.size() * 4, s), "zero counters");
            for (int i = 0; i < kLaunches; ++i) {
                GemvParams q = p;
                q.y = d_y.get() + std::size_t(i) * c.y_elems(), q.sync = d_sync.get() + 2 * i;
                cuda_check(loradesk::kernels::gemv(q, s), "gemv launch");
            }
        };
        squeeze("gemv", free_sms, graph, round, [&](int r) { check_outputs(c, d_y.download(), want, r); });
    }

    // The same squeeze for the quantized kernels with the shrink in their own launch (lora_shrink,
    // lora_handover.cuh): quant_mma with AWQ and fp8 Qwen3-8B-wide rows at 1 and 4 tokens, and the fp8 GEMV at 1 token,
    // whose every launch must give the bits of the same launch on the idle GPU.
    void squeezed_quant_data() {
        QTest::addColumn<bool>("gemv");
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("free_sms");
        QTest::addColumn<bool>("reverse");
        QTest::addColumn<bool>("graph");
        for (bool graph : {false, true})
            for (bool reverse : {false, true}) {
                const QString order = QString("%1 %2").arg(graph ? "graph" : "eager", reverse ? "reverse" : "forward");
                for (int f : {int(QuantFormat::awq_int4), int(QuantFormat::fp8_e4m3)}) {
                    const QString tag = QString("quant_mma format%1 %2").arg(f).arg(order);
                    QTest::newRow(qPrintable("n1 free 1 " + tag)) << false << f << 1 << 1 << reverse << graph;
                    QTest::newRow(qPrintable("n4 free 2 " + tag)) << false << f << 4 << 2 << reverse << graph;
                }
                QTest::newRow(qPrintable("n1 free 1 fp8 quant_gemv " + order))
                    << true << int(QuantFormat::fp8_e4m3) << 1 << 1 << reverse << graph;
            }
    }

    void squeezed_quant() {
        QFETCH(bool, gemv);
        QFETCH(int, format);
        QFETCH(int, tokens);
        QFETCH(int, free_sms);
        QFETCH(bool, reverse);
        QFETCH(bool, graph);
        const int n = QuantLoraCase::kSiteColumns, k = 4096;
        const QuantCase c(QuantFormat(format), n, k, 128, false, false, Fp8Scaling::block128, uint32_t(k + tokens));
        std::mt19937 rng(uint32_t(41 + tokens + format));
        const QuantLoraCase lc(rng, tokens, false, k);
        auto nonempty = [](auto v) { return v.empty() ? decltype(v)(1) : v; };
        DeviceBuffer<uint16_t> dx(random_bf16(rng, std::size_t(tokens) * k)), ds(nonempty(c.s16));
        DeviceBuffer<uint16_t> dy(std::size_t(kLaunches) * tokens * n);
        DeviceBuffer<int32_t> dqw(nonempty(c.qweight)), dqz(nonempty(c.qzeros));
        DeviceBuffer<uint8_t> dw8(nonempty(c.w8));
        DeviceBuffer<float> dsc(nonempty(c.w_scale));
        DeviceBuffer<int32_t> d_sync(std::vector<int32_t>(2 * kLaunches, 0));
        // Launches in one stream run one after another, so they share the split-K workspace (its counters come back
        // zero), but each has its own shrink counters and output slice.
        DeviceBuffer<uint8_t> dws(std::vector<uint8_t>(quant_mma_workspace_bytes(n, k), 0));
        QuantGemvParams p = c.params(dx.get(), k, dy.get(), n, tokens, dqw.get(), dqz.get(), ds.get(), nullptr,
                                     dw8.get(), dsc.get(), dws.get());
        p.lora_expand = p.lora_shrink = true, p.lora = lc.params(true), p.reverse_block_order = reverse;
        p.lora_sync = d_sync.get();
        QVERIFY(gemv ? quant_gemv_supported(p) : quant_mma_supported(p));
        auto round = [&](cudaStream_t s) {
            cuda_check(cudaMemsetAsync(dy.get(), 0xff, dy.size() * 2, s), "poison y");
            cuda_check(cudaMemsetAsync(d_sync.get(), 0, d_sync.size() * 4, s), "zero counters");
            for (int i = 0; i < kLaunches; ++i) {
                QuantGemvParams q = p;
                q.y = dy.get() + std::size_t(i) * tokens * n, q.lora_sync = d_sync.get() + 2 * i;
                cuda_check(gemv ? loradesk::kernels::quant_gemv(q, s) : loradesk::kernels::quant_mma(q, s),
                           gemv ? "quant_gemv launch" : "quant_mma launch");
            }
        };
        std::vector<uint16_t> idle;  // launch 0 of the warm-up round, on the idle GPU
        squeeze(gemv ? "quant_gemv" : "quant_mma", free_sms, graph, round, [&](int r) {
            const auto y = dy.download();
            if (r < 0) idle.assign(y.begin(), y.begin() + std::ptrdiff_t(tokens) * n);
            QVERIFY2(std::none_of(idle.begin(), idle.end(), [](uint16_t v) { return v == 0xffff; }), "y not written");
            for (int i = 0; i < kLaunches; ++i)
                QVERIFY2(std::equal(idle.begin(), idle.end(), y.begin() + std::ptrdiff_t(i) * tokens * n),
                         qPrintable(QString("round %1 launch %2: other bits than on the idle GPU").arg(r).arg(i)));
        });
    }

  private:
    // Runs round (kLaunches launches on the stream it is given) once on the idle GPU and then kRounds times, eagerly
    // or by replaying its capture, while an SmHog holds every SM but free_sms; check(r) after each (r = -1: the idle
    // round). A round that does not finish within the watchdog fails the test with what that means.
    template <class Round, class Check>
    void squeeze(const char* kernel, int free_sms, bool graph, Round round, Check check) {
        Streams st;
        cudaGraphExec_t exec = nullptr;
        if (graph) {  // captured before the hog starts, replayed while it runs
            cudaGraph_t g = nullptr;
            cuda_check(cudaStreamBeginCapture(st.work, cudaStreamCaptureModeThreadLocal), "begin capture");
            round(st.work);
            cuda_check(cudaStreamEndCapture(st.work, &g), "end capture");
            cuda_check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
            cudaGraphDestroy(g);
        }
        std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, decltype(&cudaGraphExecDestroy)> exec_guard(
            exec, &cudaGraphExecDestroy);

        // One round on the idle GPU first: under lazy module loading (the default) a kernel's first launch waits
        // for the GPU to drain, which behind the hog would look like a hang of the kernel under test.
        if (graph)
            cuda_check(cudaGraphLaunch(exec, st.work), "graph launch");
        else
            round(st.work);
        cuda_check(cudaStreamSynchronize(st.work), "warm-up round");
        check(-1);
        if (QTest::currentTestFailed()) return;

        int n_sm = 0;
        cuda_check(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0), "SM count");
        SmHog hog;  // after the buffers: destroyed (stopped) before they are freed
        QVERIFY2(hog.start(n_sm - free_sms, st.hog), "the SM hog's blocks did not all start: is the GPU busy?");
        const std::set<int> held = hog.sms(), landed = hog.probe(256, st.work);
        for (int sm : landed)
            QVERIFY2(!held.count(sm), "a kernel-shaped block ran beside the hog: the hog does not hold its SMs whole");
        qInfo("the hog holds %zu of %d SMs; kernel-shaped blocks ran on %zu others", held.size(), n_sm, landed.size());

        for (int r = 0; r < kRounds; ++r) {
            if (graph)
                cuda_check(cudaGraphLaunch(exec, st.work), "graph launch");
            else
                round(st.work);
            const cudaError_t e = wait_with_deadline(st.work, kWatchdogSeconds);
            if (e == cudaErrorNotReady) {
                hog.stop();
                const bool freed = wait_with_deadline(st.work, 30.0) == cudaSuccess;
                const QString msg = QString(
                                        "round %1: %5 did not finish within %2 s while other work held all but %3 "
                                        "SMs: the fused-LoRA handshake waits for blocks that cannot be scheduled "
                                        "(issue #19); %4")
                                        .arg(r)
                                        .arg(kWatchdogSeconds)
                                        .arg(free_sms)
                                        .arg(freed ? "it finished once the SMs were released"
                                                   : "it did not finish even then: exiting without cleanup")
                                        .arg(kernel);
                if (!freed) {
                    std::fprintf(stderr, "FAIL! TstGemvProgressCuda::%s: %s\n", QTest::currentTestFunction(),
                                 qPrintable(msg));
                    std::fflush(stderr);
                    std::_Exit(1);
                }
                QFAIL(qPrintable(msg));
            }
            cuda_check(e, "rounds");
            QVERIFY2(hog.holding(), "the hog let go before the kernel finished: the test did not squeeze it");
            check(r);
            if (QTest::currentTestFailed()) return;
        }
        hog.stop();
        cuda_check(wait_with_deadline(st.hog, 10.0), "hog stop");
    }

  private:
    static void check_outputs(const GemvCase& c, const std::vector<uint16_t>& y, const std::vector<uint16_t>& want,
                              int round) {
        const int cols = c.out_cols(), stride = cols + 3;
        for (int i = 0; i < kLaunches; ++i) {
            std::vector<float> got_f, want_f;
            for (int t = 0; t < c.n; ++t)
                for (int col = 0; col < stride; ++col) {
                    const std::size_t k = std::size_t(t) * stride + col;
                    const float g = ref::bf16_to_f32(y[std::size_t(i) * c.y_elems() + k]);
                    if (col >= cols) {
                        QVERIFY2(std::isnan(g), "gemv wrote past the row's columns");
                        continue;
                    }
                    got_f.push_back(g);
                    want_f.push_back(ref::bf16_to_f32(want[k]));
                }
            const double err = rel_l2(got_f, want_f);
            QVERIFY2(err < 4e-3, qPrintable(QString("round %1 launch %2: rel err %3").arg(round).arg(i).arg(err)));
        }
    }
};

QTEST_GUILESS_MAIN(TstGemvProgressCuda)
#include "tst_gemv_progress_cuda.moc"
