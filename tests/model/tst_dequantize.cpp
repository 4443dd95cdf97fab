// engine/model: the reference dequantizers against hand-computed tiny cases (FP8 codec, AWQ nibble order,
// each format's formula), and quantize -> pack -> bind -> dequantize round trips within each format's bound.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "core/dtype.h"
#include "model/dequantize.h"
#include "model/quantize.h"
#include "model/quantized_linear.h"

using namespace loradesk;
using namespace loradesk::model;

namespace {

// Owns tensors built in a test and hands them out as checkpoint views.
struct Tensors {
    std::map<std::string, std::vector<uint8_t>> bytes;
    std::map<std::string, TensorView> views;

    void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> data) {
        bytes[name] = std::move(data);
        TensorView& v = views[name];
        v.name = name;
        v.dtype = dtype;
        v.shape = std::move(shape);
        v.data = bytes[name].data();
        v.nbytes = bytes[name].size();
        v.file = "test";
    }
    void add_i32(const std::string& name, std::vector<int64_t> shape, const std::vector<int32_t>& v) {
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        add(name, DType::i32, std::move(shape), std::move(b));
    }
    void add_f32s(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& v) {
        std::vector<uint8_t> b(v.size() * dtype_size(dtype));
        convert_from_f32(v.data(), v.size(), dtype, b.data());
        add(name, dtype, std::move(shape), std::move(b));
    }
    TensorLookup lookup() const {
        return [this](const std::string& n) -> const TensorView* {
            auto it = views.find(n);
            return it == views.end() ? nullptr : &it->second;
        };
    }
};

// Packs eight 4-bit values into one word, value k in nibble k.
int32_t nibbles(std::initializer_list<int> v) {
    uint32_t w = 0;
    int k = 0;
    for (int x : v) w |= uint32_t(x & 0xf) << (4 * k++);
    return int32_t(w);
}

QuantConfig config_for(const QString& format) {
    QuantConfig q;
    if (format == "fp8") q.format = QuantFormat::fp8_block, q.block_out = 16, q.block_in = 128;
    if (format == "fp8-tensor") q.format = QuantFormat::fp8_tensor;
    if (format == "fp8-channel") q.format = QuantFormat::fp8_channel;
    if (format == "awq") q.format = QuantFormat::awq, q.group_size = 64;
    if (format.startsWith("gptq")) q.format = QuantFormat::gptq, q.group_size = 128;
    if (format == "gptq-actorder") q.desc_act = true;
    if (format == "gptq-v2") q.gptq_version = 2;
    if (format == "gptq-g-1") q.group_size = -1;
    return q;
}

}  // namespace

class TstDequantize : public QObject {
    Q_OBJECT
  private slots:
    void fp8_decode_data() {
        QTest::addColumn<int>("code");
        QTest::addColumn<float>("value");
        QTest::newRow("zero") << 0x00 << 0.0f;
        QTest::newRow("one") << 0x38 << 1.0f;
        QTest::newRow("1.5") << 0x3c << 1.5f;
        QTest::newRow("-1") << 0xb8 << -1.0f;
        QTest::newRow("max 448") << 0x7e << 448.0f;
        QTest::newRow("min normal 2^-6") << 0x08 << 0.015625f;
        QTest::newRow("min subnormal 2^-9") << 0x01 << 0.001953125f;
        QTest::newRow("subnormal 7*2^-9") << 0x07 << 0.013671875f;
        QTest::newRow("-0.3125") << 0xaa << -0.3125f;  // exp 5, mant 2: 1.25 * 2^-2
    }
    void fp8_decode() {
        QFETCH(int, code);
        QFETCH(float, value);
        QCOMPARE(fp8_e4m3_to_f32(uint8_t(code)), value);
    }

    void fp8_nan() {
        QVERIFY(std::isnan(fp8_e4m3_to_f32(0x7f)));
        QVERIFY(std::isnan(fp8_e4m3_to_f32(0xff)));
        QCOMPARE(f32_to_fp8_e4m3(NAN) & 0x7f, 0x7f);
    }

    void fp8_encode_is_inverse() {
        for (int c = 0; c < 256; ++c) {
            if ((c & 0x7f) == 0x7f) continue;
            const float v = fp8_e4m3_to_f32(uint8_t(c));
            if (v == 0.0f) continue;  // -0 and +0
            QCOMPARE(int(f32_to_fp8_e4m3(v)), c);
        }
    }

    void fp8_encode_rounds_data() {
        QTest::addColumn<float>("value");
        QTest::addColumn<int>("code");
        QTest::newRow("saturates") << 1000.0f << 0x7e;
        QTest::newRow("saturates negative") << -1e9f << 0xfe;
        QTest::newRow("tie to even down") << 1.0625f << 0x38;  // between 1.0 (0x38) and 1.125 (0x39)
        QTest::newRow("tie to even up") << 1.1875f << 0x3a;    // between 1.125 (0x39) and 1.25 (0x3a)
        QTest::newRow("nearest") << 1.1f << 0x39;
        QTest::newRow("below half min subnormal") << 0.0009f << 0x00;
    }
    void fp8_encode_rounds() {
        QFETCH(float, value);
        QFETCH(int, code);
        QCOMPARE(int(f32_to_fp8_e4m3(value)), code);
    }

    void awq_nibble_order_data() {
        QTest::addColumn<int>("column");
        QTest::addColumn<int>("nibble");
        // AutoAWQ packs columns in order [0, 2, 4, 6, 1, 3, 5, 7]: nibble j holds column order[j].
        const int nibble_of_column[8] = {0, 4, 1, 5, 2, 6, 3, 7};
        for (int c = 0; c < 8; ++c) QTest::newRow(qPrintable(QString("column %1").arg(c))) << c << nibble_of_column[c];
    }
    void awq_nibble_order() {
        QFETCH(int, column);
        QFETCH(int, nibble);
        QCOMPARE(awq_nibble(uint32_t(nibbles({0, 1, 2, 3, 4, 5, 6, 7})), column), nibble);
    }

    void fp8_block_by_hand() {
        // W [3, 4], blocks [2, 2] -> scales [2, 2]; the last block row is partial.
        Tensors t;
        t.add("p.weight", DType::f8_e4m3, {3, 4},
              {0x38, 0x38, 0x38, 0x38, 0x3c, 0xb8, 0x38, 0x00, 0x40, 0x40, 0x40,
               0x40});  // 1 1 1 1 / 1.5 -1 1 0 / 2 2 2 2
        t.add_f32s("p.weight_scale_inv", DType::f32, {2, 2}, {0.5f, 2.0f, 3.0f, -1.0f});
        QuantConfig q;
        q.format = QuantFormat::fp8_block, q.block_out = 2, q.block_in = 2;
        const std::vector<float> w = dequantize(bind_quantized_linear(t.lookup(), q, "p", 3, 4));
        const std::vector<float> want = {0.5f, 0.5f, 2, 2, 0.75f, -0.5f, 2, 0, 6, 6, -2, -2};
        QCOMPARE(w, want);
    }

    void fp8_tensor_and_channel_by_hand() {
        Tensors t;
        t.add("p.weight", DType::f8_e4m3, {2, 2}, {0x38, 0xb8, 0x3c, 0x40});  // 1 -1 / 1.5 2
        t.add_f32s("p.weight_scale", DType::bf16, {2, 1}, {0.5f, 4.0f});
        QuantConfig q;
        q.format = QuantFormat::fp8_channel;
        QCOMPARE(dequantize(bind_quantized_linear(t.lookup(), q, "p", 2, 2)), (std::vector<float>{0.5f, -0.5f, 6, 8}));
        t.add_f32s("p.weight_scale", DType::f32, {}, {0.25f});  // per-tensor scalar, as older exports write it
        q.format = QuantFormat::fp8_tensor;
        QCOMPARE(dequantize(bind_quantized_linear(t.lookup(), q, "p", 2, 2)),
                 (std::vector<float>{0.25f, -0.25f, 0.375f, 0.5f}));
    }

    void awq_by_hand() {
        // in 2, out 8, group 1. Row i of qweight packs W[:, i] with AWQ's column order.
        Tensors t;
        auto awq_word = [](std::initializer_list<int> columns) {  // columns 0..7 -> packed word
            const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
            std::vector<int> c(columns);
            uint32_t w = 0;
            for (int j = 0; j < 8; ++j) w |= uint32_t(c[std::size_t(order[j])]) << (4 * j);
            return int32_t(w);
        };
        t.add_i32("p.qweight", {2, 1}, {awq_word({0, 1, 2, 3, 4, 5, 6, 7}), awq_word({15, 14, 13, 12, 11, 10, 9, 8})});
        t.add_i32("p.qzeros", {2, 1}, {awq_word({8, 8, 8, 8, 0, 0, 0, 0}), awq_word({15, 15, 15, 15, 15, 15, 15, 15})});
        t.add_f32s("p.scales", DType::f16, {2, 8},
                   {1, 1, 1, 1, 1, 1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 2});
        QuantConfig q;
        q.format = QuantFormat::awq, q.group_size = 1;
        const std::vector<float> w = dequantize(bind_quantized_linear(t.lookup(), q, "p", 8, 2));
        // W[o, 0] = (o - z0[o]) * 1; W[o, 1] = (15 - o - 15) * s1[o]
        const std::vector<float> want = {-8, 0, -7, -0.5f, -6, -1, -5, -1.5f, 4, -2, 5, -2.5f, 6, -3, 7, -14};
        QCOMPARE(w, want);
    }

    void gptq_by_hand_data() {
        QTest::addColumn<int>("version");
        QTest::addColumn<bool>("act_order");
        QTest::newRow("v1") << 1 << false;
        QTest::newRow("v2") << 2 << false;
        QTest::newRow("v1 act-order") << 1 << true;
    }
    void gptq_by_hand() {
        QFETCH(int, version);
        QFETCH(bool, act_order);
        // in 8, out 8, group 4 (two groups). qweight row 0 packs input rows 0..7 of each output column.
        Tensors t;
        std::vector<int32_t> qweight(8);
        for (int o = 0; o < 8; ++o) qweight[std::size_t(o)] = nibbles({o, 1, 2, 3, 4, 5, 6, 15});
        t.add_i32("p.qweight", {1, 8}, qweight);
        const int stored = version == 1 ? 7 : 8;  // v1 stores zero - 1
        t.add_i32("p.qzeros", {2, 1},
                  {nibbles({stored, stored, stored, stored, stored, stored, stored, stored}),
                   nibbles({0, 0, 0, 0, 0, 0, 0, 0})});
        std::vector<float> scales(16, 1.0f);
        for (int o = 0; o < 8; ++o) scales[std::size_t(8 + o)] = 0.5f;
        t.add_f32s("p.scales", DType::f16, {2, 8}, scales);
        const std::vector<int32_t> g_idx =
            act_order ? std::vector<int32_t>{1, 0, 1, 0, 1, 0, 1, 0} : std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1};
        t.add_i32("p.g_idx", {8}, g_idx);
        QuantConfig q;
        q.format = QuantFormat::gptq, q.group_size = 4, q.desc_act = act_order, q.gptq_version = version;
        const std::vector<float> w = dequantize(bind_quantized_linear(t.lookup(), q, "p", 8, 8));
        const int zero1 = version == 1 ? 1 : 0;  // group 1's stored 0 means zero 1 in v1, 0 in v2
        for (int o = 0; o < 8; ++o)
            for (int i = 0; i < 8; ++i) {
                const int value = i == 0 ? o : i == 7 ? 15 : i;
                const float want = g_idx[std::size_t(i)] == 0 ? float(value - 8) : float(value - zero1) * 0.5f;
                QCOMPARE(w[std::size_t(o * 8 + i)], want);
            }
    }

    void round_trip_data() {
        QTest::addColumn<QString>("format");
        QTest::addColumn<int>("out");
        QTest::addColumn<int>("in");
        for (const char* f :
             {"fp8", "fp8-tensor", "fp8-channel", "awq", "gptq", "gptq-actorder", "gptq-v2", "gptq-g-1"}) {
            QTest::newRow(qPrintable(QString("%1 24x256").arg(f))) << f << 24 << 256;
            QTest::newRow(qPrintable(QString("%1 40x192").arg(f))) << f << 40 << 192;  // partial blocks / groups
        }
    }
    void round_trip() {
        QFETCH(QString, format);
        QFETCH(int, out);
        QFETCH(int, in);
        QuantConfig q = config_for(format);
        if (q.format == QuantFormat::awq && in % q.group_size) q.group_size = 64;
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0.0f, 0.05f);
        std::vector<float> w(std::size_t(out * in));
        for (float& v : w) v = normal(rng);
        w[5] = 0.4f;  // an outlier, as real weights have
        Tensors t;
        for (PackedTensor& p : quantize_linear(q, "m", w.data(), out, in, 3))
            t.add(p.name, p.dtype, p.shape, std::move(p.bytes));
        const QuantizedLinear l = bind_quantized_linear(t.lookup(), q, "m", out, in);
        const std::vector<float> d = dequantize(l);
        const bool fp8 = q.format != QuantFormat::awq && q.format != QuantFormat::gptq;
        double sq = 0;
        for (std::size_t k = 0; k < w.size(); ++k) {
            const float err = std::fabs(d[k] - w[k]);
            sq += double(err) * err;
            if (fp8) {
                // e4m3 keeps 3 mantissa bits: relative error <= 2^-4, plus the subnormal step of the block's scale.
                QVERIFY2(err <= std::fabs(w[k]) / 16 + 0.4f / 448 * 0x1p-9f * 1.01f + 1e-7f,
                         qPrintable(QString("element %1: %2 vs %3").arg(k).arg(d[k]).arg(w[k])));
            } else {
                // Round to nearest of 16 levels: within one step (a clamp at the top level costs at most one).
                QVERIFY2(err <= 0.4f * 2 / 15 * 1.01f + 1e-6f,
                         qPrintable(QString("element %1: %2 vs %3").arg(k).arg(d[k]).arg(w[k])));
            }
        }
        const double rms = std::sqrt(sq / double(w.size()));
        QVERIFY2(rms < (fp8 ? 0.003 : 0.02), qPrintable(QString("rms error %1").arg(rms)));
    }
};

QTEST_GUILESS_MAIN(TstDequantize)
#include "tst_dequantize.moc"
