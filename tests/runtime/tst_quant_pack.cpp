// The CUDA runner's packing of quantized call sites (runtime/cuda/quant_pack.h), on the CPU: for every synth-model
// --quant format on two presets, each site packed (q|k|v, o, gate|up, down) and read back through the kernels'
// reference twin (kernels/ref/ref_quant.h) equals the loader's own dequantization of its projections, value for
// value; and the layouts the kernels cannot read, or that cannot share one matrix, are reported or split.
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"
#include "model/dequantize.h"
#include "model/model_weights.h"
#include "model/synth_model.h"
#include "ref/ref_quant.h"
#include "runtime/cuda/quant_pack.h"

using namespace loradesk;
using namespace loradesk::model;
using loradesk::runtime::cuda::pack_quant_site;
using loradesk::runtime::cuda::PackedQuantSite;

namespace {

// The site's projections dequantized by the loader and stacked along out features: [sum out, in].
std::vector<float> stacked(const std::vector<const QuantizedLinear*>& ps) {
    std::vector<float> all;
    for (const QuantizedLinear* p : ps) {
        const std::vector<float> w = dequantize(*p);
        all.insert(all.end(), w.begin(), w.end());
    }
    return all;
}

// What the kernels would read: every part through the twin, placed at its output offset.
std::vector<float> unpacked(const PackedQuantSite& site, int64_t in) {
    int64_t n = 0;
    for (const auto& part : site.parts) n += part.params.n;
    std::vector<float> all(std::size_t(n * in));
    for (const auto& part : site.parts) {
        const std::vector<float> w = kernels::ref::quant_dequantize(part.host_params());
        std::memcpy(all.data() + std::size_t(part.out_offset) * std::size_t(in), w.data(), w.size() * 4);
    }
    return all;
}

// A QuantizedLinear over caller-owned tensors, for layouts synth-model does not write.
struct HandMade {
    std::vector<uint8_t> w, s;
    TensorView wt, st;
    QuantizedLinear l;
    HandMade(int out, int in, int block, float scale)
        : w(std::size_t(out) * in, 0x38), s(4 * ((out + block - 1) / block) * ((in + block - 1) / block)) {
        for (std::size_t i = 0; i < s.size(); i += 4) std::memcpy(s.data() + i, &scale, 4);
        wt.name = "hand.weight", wt.dtype = DType::f8_e4m3, wt.shape = {out, in}, wt.data = w.data(),
        wt.nbytes = w.size();
        st.name = "hand.weight_scale_inv", st.dtype = DType::f32;
        st.shape = {(out + block - 1) / block, (in + block - 1) / block}, st.data = s.data(), st.nbytes = s.size();
        l.format = QuantFormat::fp8_block, l.out_features = out, l.in_features = in, l.qweight = &wt, l.scales = &st;
        l.block_out = l.block_in = block;
    }
};

}  // namespace

class TstQuantPack : public QObject {
    Q_OBJECT
  private slots:
    void sites_read_back_exactly_data() {
        QTest::addColumn<QString>("quant");
        QTest::addColumn<QString>("preset");
        for (const std::string& q : synth_quant_names())
            for (const char* p : {"tiny", "tiny-llama"})
                QTest::newRow(qPrintable(QString("%1 %2").arg(q.c_str(), p))) << QString::fromStdString(q) << p;
    }
    void sites_read_back_exactly() {
        QFETCH(QString, quant);
        QFETCH(QString, preset);
        QTemporaryDir dir;
        SynthOptions o;
        o.preset = preset.toStdString(), o.out_dir = dir.path().toStdString(), o.quant = quant.toStdString();
        synth_model(o);
        ModelWeights w(o.out_dir);
        const LayerQuant& l = w.layer(1).quant;
        const std::vector<std::vector<const QuantizedLinear*>> sites{{l.q, l.k, l.v}, {l.o}, {l.gate, l.up}, {l.down}};
        for (const auto& ps : sites) {
            const PackedQuantSite site = pack_quant_site(ps);
            QVERIFY2(!site.parts.empty(), site.why_not.c_str());
            QVERIFY(site.why_not.empty());
            QCOMPARE(site.parts.front().out_offset, 0);
            const std::vector<float> want = stacked(ps), got = unpacked(site, ps.front()->in_features);
            QCOMPARE(got.size(), want.size());
            for (std::size_t i = 0; i < got.size(); ++i)
                if (got[i] != want[i])
                    QFAIL(qPrintable(QString("%1: element %2 is %3, want %4")
                                         .arg(ps.front()->qweight->name.c_str())
                                         .arg(i)
                                         .arg(got[i])
                                         .arg(want[i])));
            std::size_t stored = 0;
            for (const QuantizedLinear* p : ps) stored += p->bytes();
            QVERIFY2(site.bytes() <= stored + 4 * std::size_t(ps.front()->out_features) * ps.size(),
                     "packing must not grow a site beyond its stored bytes (plus expanded fp8 tensor scales)");
        }
        // Sites the synthetic layouts can fuse become one matrix: groups, g_idx and zero offsets are shared; fp8
        // blocks stay whole when every projection but the last has a multiple of 128 rows.
        const bool fp8_block = o.quant == "fp8";
        const int gate_split = fp8_block && w.config().intermediate_size % 128 ? 2 : 1;
        const int qkv_split = fp8_block && (w.config().q_dim() % 128 || w.config().kv_dim() % 128) ? 3 : 1;
        QCOMPARE(int(pack_quant_site({l.gate, l.up}).parts.size()), gate_split);
        QCOMPARE(int(pack_quant_site({l.q, l.k, l.v}).parts.size()), qkv_split);
        // down_proj has several groups of inputs: act-order permutes them, and its rows are then sorted by group
        // (k_order) for the kernels' fast path instead of keeping g_idx.
        const auto down = pack_quant_site({l.down}).parts.front();
        QVERIFY(down.g_idx.empty());
        QCOMPARE(down.k_order.empty(), o.quant != "gptq-actorder");
        // Unsorted (the arena's sizing pass): g_idx kept instead, the same bytes, and it still reads back exactly.
        const PackedQuantSite unsorted = pack_quant_site({l.down}, false);
        QCOMPARE(unsorted.parts.front().g_idx.empty(), o.quant != "gptq-actorder");
        QVERIFY(unsorted.parts.front().k_order.empty());
        QCOMPARE(unsorted.bytes(), pack_quant_site({l.down}).bytes());
        QVERIFY(unpacked(unsorted, l.down->in_features) == stacked({l.down}));
        ThreadPool pool(3);  // sorted on threads: the same words
        QVERIFY(pack_quant_site({l.down}, true, &pool).parts.front().qweight == down.qweight);
        const auto g = pack_quant_site({l.gate}).parts.front();
        if (o.quant == "fp8-tensor") {  // the one scale repeated per channel, alone or fused
            QCOMPARE(int(g.params.fp8_scaling), int(kernels::Fp8Scaling::per_channel));
            QCOMPARE(g.w_scale.size(), std::size_t(l.gate->out_features));
            QVERIFY(std::all_of(g.w_scale.begin(), g.w_scale.end(), [&](float s) { return s == g.w_scale[0]; }));
            QCOMPARE(g.w_scale[0], l.gate->scales->to_f32()[0]);
            QCOMPARE(int(pack_quant_site({l.gate, l.up}).parts.front().params.fp8_scaling),
                     int(kernels::Fp8Scaling::per_channel));
        }
    }

    // An act-order g_idx whose groups do not hold G rows each (not what GPTQ writes, but a valid checkpoint) cannot
    // be sorted into whole groups: the part keeps g_idx (the GEMV's gathering path) and still reads back exactly.
    void uneven_act_order_keeps_g_idx() {
        QTemporaryDir dir;
        SynthOptions o;
        o.preset = "tiny", o.out_dir = dir.path().toStdString(), o.quant = "gptq-actorder";
        synth_model(o);
        ModelWeights w(o.out_dir);
        QuantizedLinear down = *w.layer(0).quant.down;
        const int64_t k = down.in_features, groups = down.n_groups();
        QVERIFY(groups >= 2);
        std::vector<int32_t> g(static_cast<std::size_t>(k));
        for (int64_t i = 0; i < k; ++i)  // G + 1 rows in group 0, G - 1 in group 1
            g[std::size_t(i)] = i <= down.group_size ? 0 : int32_t(std::min<int64_t>(i / down.group_size, groups - 1));
        TensorView gv = *down.g_idx;
        gv.data = reinterpret_cast<const uint8_t*>(g.data());
        down.g_idx = &gv;
        const PackedQuantSite site = pack_quant_site({&down});
        QCOMPARE(int(site.parts.size()), 1);
        QVERIFY(site.parts.front().k_order.empty());
        QCOMPARE(site.parts.front().g_idx, g);
        QVERIFY(unpacked(site, k) == stacked({&down}));
    }

    // Projections whose fp8 block rows would straddle two of them stay separate parts at their offsets; blocks
    // other than 128x128 are refused with the tensor's name, so the runner dequantizes that site instead.
    void fp8_blocks() {
        HandMade a(192, 256, 128, 0.5f), b(64, 256, 128, 0.25f), c(128, 256, 64, 1.0f);
        const PackedQuantSite split = pack_quant_site({&a.l, &b.l});
        QCOMPARE(int(split.parts.size()), 2);
        QCOMPARE(split.parts[1].out_offset, 192);
        QCOMPARE(unpacked(split, 256), stacked({&a.l, &b.l}));
        const PackedQuantSite fused = pack_quant_site({&b.l, &a.l});  // 64 rows first: still split (64 % 128)
        QCOMPARE(int(fused.parts.size()), 2);
        HandMade d(128, 256, 128, 2.0f);
        QCOMPARE(int(pack_quant_site({&d.l, &a.l}).parts.size()), 1);
        QCOMPARE(unpacked(pack_quant_site({&d.l, &a.l}), 256), stacked({&d.l, &a.l}));
        const PackedQuantSite refused = pack_quant_site({&c.l});
        QVERIFY(refused.parts.empty());
        QVERIFY2(refused.why_not.find("hand.weight") != std::string::npos &&
                     refused.why_not.find("64x64") != std::string::npos,
                 refused.why_not.c_str());
    }
};

QTEST_GUILESS_MAIN(TstQuantPack)
#include "tst_quant_pack.moc"
