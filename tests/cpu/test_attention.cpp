// Attention and the merge of partial states on the CPU, against direct long-double evaluations of the definitions
// in softmaxkit/attention.hpp (all scores at once, no blocks, no online rescaling).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/attention_direct.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/error.hpp"

namespace {

using smk::AttentionOptions;
using smk::TensorView;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Expected = smk_test::DirectRow;
using smk_test::direct;
using smk_test::randn;

// The article's Step 4: one query, 8,192 keys, head size 128, blocks of 256 against full attention, and two halves
// merged by their LSEs.
TEST(CpuAttention, ArticleOneQueryExampleAndTwoHalvesMerged) {
  const std::int64_t n = 8192, d = 128;
  const auto q = randn(d, 1), k = randn(n * d, 2), v = randn(n * d, 3);
  const Expected want = direct(q.data(), k.data(), v.data(), n, d, d, 1.0L / std::sqrt(128.0L), nullptr);
  std::vector<double> o(d, kNaN), lse(1, kNaN);
  smk::cpu::reference::attention_forward(TensorView::of(o.data(), {1, 1, 1, d}), TensorView::of(lse.data(), {1, 1, 1}),
                                         TensorView::of(q.data(), {1, 1, 1, d}), TensorView::of(k.data(), {1, n, 1, d}),
                                         TensorView::of(v.data(), {1, n, 1, d}));
  for (std::int64_t x = 0; x < d; ++x) EXPECT_NEAR(o[x], static_cast<double>(want.o[x]), 1e-14);
  EXPECT_NEAR(lse[0], static_cast<double>(want.lse), 1e-13);

  // Two halves, as if on two SMs, then merged by their LSEs.
  std::vector<double> o1(d), o2(d), l1(1), l2(1), om(d), lm(1);
  const auto half = [&](std::int64_t start, std::vector<double>& oh, std::vector<double>& lh) {
    smk::cpu::reference::attention_forward(TensorView::of(oh.data(), {1, 1, 1, d}), TensorView::of(lh.data(), {1, 1, 1}),
                                           TensorView::of(q.data(), {1, 1, 1, d}),
                                           TensorView::of(k.data() + start * d, {1, n / 2, 1, d}),
                                           TensorView::of(v.data() + start * d, {1, n / 2, 1, d}));
  };
  half(0, o1, l1);
  half(n / 2, o2, l2);
  smk::cpu::reference::merge_attention_states(TensorView::of(om.data(), {1, d}), TensorView::of(lm.data(), {1}),
                                              TensorView::of(o1.data(), {1, d}), TensorView::of(l1.data(), {1}),
                                              TensorView::of(o2.data(), {1, d}), TensorView::of(l2.data(), {1}));
  for (std::int64_t x = 0; x < d; ++x) EXPECT_NEAR(om[x], static_cast<double>(want.o[x]), 1e-14);
  EXPECT_NEAR(lm[0], static_cast<double>(want.lse), 1e-13);

  // The float path: the same recurrence in f32.
  const std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end());
  std::vector<float> of(d), lf(1);
  smk::cpu::attention_forward(TensorView::of(of.data(), {1, 1, 1, d}), TensorView::of(lf.data(), {1, 1, 1}),
                              TensorView::of(qf.data(), {1, 1, 1, d}), TensorView::of(kf.data(), {1, n, 1, d}),
                              TensorView::of(vf.data(), {1, n, 1, d}));
  const Expected wantf = direct(std::vector<double>(qf.begin(), qf.end()).data(),
                                std::vector<double>(kf.begin(), kf.end()).data(),
                                std::vector<double>(vf.begin(), vf.end()).data(), n, d, d, 1.0L / std::sqrt(128.0L), nullptr);
  for (std::int64_t x = 0; x < d; ++x) EXPECT_NEAR(of[x], static_cast<double>(wantf.o[x]), 2e-5);
  EXPECT_NEAR(lf[0], static_cast<double>(wantf.lse), 1e-5);
}

// GQA, causal with Sq ≠ Sk (bottom-right), sinks: every (b, h, i) against the direct evaluation.
TEST(CpuAttention, GqaCausalSinksAgainstDefinition) {
  const std::int64_t B = 2, hq = 4, hkv = 2, d = 8;
  for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{3, 5}, {5, 3}, {7, 7}, {1, 129}}) {
    for (bool causal : {false, true})
      for (bool with_sinks : {false, true}) {
        SCOPED_TRACE(testing::Message() << "sq=" << sq << " sk=" << sk << " causal=" << causal << " sinks=" << with_sinks);
        const auto q = randn(B * sq * hq * d, 4), k = randn(B * sk * hkv * d, 5), v = randn(B * sk * hkv * d, 6);
        const std::vector<double> sinks = {0.5, -1.0, 2.0, -30.0};
        AttentionOptions opt;
        opt.causal = causal;
        opt.scale = 0.3f;
        if (with_sinks) opt.sinks = TensorView::of(sinks.data(), {hq});
        std::vector<double> o(B * sq * hq * d, kNaN), lse(B * hq * sq, kNaN);
        smk::cpu::reference::attention_forward(
            TensorView::of(o.data(), {B, sq, hq, d}), TensorView::of(lse.data(), {B, hq, sq}),
            TensorView::of(q.data(), {B, sq, hq, d}), TensorView::of(k.data(), {B, sk, hkv, d}),
            TensorView::of(v.data(), {B, sk, hkv, d}), opt);
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t h = 0; h < hq; ++h)
            for (std::int64_t i = 0; i < sq; ++i) {
              const std::int64_t visible = causal ? std::max<std::int64_t>(0, std::min(sk, i + (sk - sq) + 1)) : sk;
              const std::int64_t hk = h / (hq / hkv);
              const Expected e = direct(&q[((b * sq + i) * hq + h) * d], &k[(b * sk * hkv + hk) * d],
                                        &v[(b * sk * hkv + hk) * d], visible, d, hkv * d,
                                        static_cast<long double>(0.3f), with_sinks ? &sinks[h] : nullptr);
              for (std::int64_t x = 0; x < d; ++x)
                EXPECT_NEAR(o[((b * sq + i) * hq + h) * d + x], static_cast<double>(e.o[x]), 1e-13);
              const double got = lse[(b * hq + h) * sq + i];
              if (std::isinf(static_cast<double>(e.lse))) EXPECT_EQ(got, -kInf);
              else EXPECT_NEAR(got, static_cast<double>(e.lse), 1e-13);
              if (visible == 0) {
                for (std::int64_t x = 0; x < d; ++x) EXPECT_EQ(o[((b * sq + i) * hq + h) * d + x], 0.0);
                EXPECT_EQ(got, with_sinks ? sinks[h] : -kInf);
              }
            }
      }
  }
}

// NaN in keys a row cannot see (the causal future, another sequence of a packed batch) never reaches the output;
// and varlen equals running each sequence alone.
TEST(CpuAttention, MaskedNaNNeverLeaksAndVarlenMatchesSeparateRuns) {
  const std::int64_t h = 2, d = 4;
  const std::vector<std::int32_t> cu_q = {0, 2, 5}, cu_k = {0, 3, 7};
  auto q = randn(5 * h * d, 7), k = randn(7 * h * d, 8), v = randn(7 * h * d, 9);
  AttentionOptions opt;
  opt.causal = true;
  opt.cu_seqlens_q = TensorView::of(cu_q.data(), {3});
  opt.cu_seqlens_k = TensorView::of(cu_k.data(), {3});
  std::vector<double> o(5 * h * d, kNaN), lse(h * 5, kNaN);
  // Sequence 0: 2 queries, 3 keys; query 0 sees keys 0..1, so key 2 (its future) may hold NaN.
  for (std::int64_t x = 0; x < h * d; ++x) {
    k[2 * h * d + x] = kNaN;
    v[2 * h * d + x] = kNaN;
  }
  smk::cpu::attention_forward(TensorView::of(o.data(), {5, h, d}), TensorView::of(lse.data(), {h, 5}),
                              TensorView::of(q.data(), {5, h, d}), TensorView::of(k.data(), {7, h, d}),
                              TensorView::of(v.data(), {7, h, d}), opt);
  for (std::int64_t x = 0; x < h * d; ++x) EXPECT_TRUE(std::isfinite(o[x])) << x;  // query 0 of sequence 0
  for (std::int64_t x = 2 * h * d; x < 5 * h * d; ++x) EXPECT_TRUE(std::isfinite(o[x])) << x;  // sequence 1
  // Sequence 1 alone, unpacked.
  AttentionOptions alone;
  alone.causal = true;
  std::vector<double> o1(3 * h * d), l1(h * 3);
  smk::cpu::attention_forward(TensorView::of(o1.data(), {1, 3, h, d}), TensorView::of(l1.data(), {1, h, 3}),
                              TensorView::of(q.data() + 2 * h * d, {1, 3, h, d}),
                              TensorView::of(k.data() + 3 * h * d, {1, 4, h, d}),
                              TensorView::of(v.data() + 3 * h * d, {1, 4, h, d}), alone);
  for (std::int64_t x = 0; x < 3 * h * d; ++x) EXPECT_EQ(o[2 * h * d + x], o1[x]);
  for (std::int64_t hh = 0; hh < h; ++hh)
    for (std::int64_t i = 0; i < 3; ++i) EXPECT_EQ(lse[hh * 5 + 2 + i], l1[hh * 3 + i]);
}

TEST(CpuAttention, MergeAlgebra) {
  const std::int64_t d = 6;
  const auto a = randn(d, 10), b = randn(d, 11), c = randn(d, 12);
  const auto merge = [&](const std::vector<double>& oa, double la, const std::vector<double>& ob, double lb,
                         std::vector<double>& o, double& l) {
    o.assign(d, kNaN);
    smk::cpu::reference::merge_attention_states(TensorView::of(o.data(), {d}), TensorView::of(&l, {}),
                                                TensorView::of(oa.data(), {d}), TensorView::of(&la, {}),
                                                TensorView::of(ob.data(), {d}), TensorView::of(&lb, {}));
  };
  std::vector<double> ab, ba, ab_c, bc, a_bc, with_empty, empties;
  double lab, lba, labc, lbc, la_bc, le, lee;
  merge(a, 1.5, b, -2.0, ab, lab);
  merge(b, -2.0, a, 1.5, ba, lba);
  EXPECT_EQ(ab, ba);
  EXPECT_EQ(lab, lba);
  merge(ab, lab, c, 0.25, ab_c, labc);
  merge(b, -2.0, c, 0.25, bc, lbc);
  merge(a, 1.5, bc, lbc, a_bc, la_bc);
  for (std::int64_t x = 0; x < d; ++x) EXPECT_NEAR(ab_c[x], a_bc[x], 1e-15);
  EXPECT_NEAR(labc, la_bc, 1e-15);
  EXPECT_NEAR(labc, std::log(std::exp(1.5) + std::exp(-2.0) + std::exp(0.25)), 1e-15);
  // An empty part (LSE −inf) is the identity, whatever its O holds; two empty parts give 0, −inf.
  const std::vector<double> garbage(d, kNaN);
  merge(a, 1.5, garbage, -kInf, with_empty, le);
  EXPECT_EQ(with_empty, a);
  EXPECT_EQ(le, 1.5);
  merge(garbage, -kInf, garbage, -kInf, empties, lee);
  EXPECT_EQ(empties, std::vector<double>(d, 0.0));
  EXPECT_EQ(lee, -kInf);
  // NaN is never dropped.
  std::vector<double> poisoned;
  double lp;
  merge(a, kNaN, b, 0.0, poisoned, lp);
  EXPECT_TRUE(std::isnan(lp));
  for (double x : poisoned) EXPECT_TRUE(std::isnan(x));
}

TEST(CpuAttention, MergeInPlaceAccumulates) {
  const std::int64_t rows = 3, d = 4;
  auto acc = randn(rows * d, 13);
  const auto part = randn(rows * d, 14);
  std::vector<float> acc_f(acc.begin(), acc.end()), part_f(part.begin(), part.end());
  std::vector<float> lacc = {0.0f, 1.0f, -INFINITY}, lpart = {2.0f, -INFINITY, 0.5f};
  std::vector<float> o(rows * d), l(rows);
  smk::merge_attention_states(TensorView::of(o.data(), {rows, d}), TensorView::of(l.data(), {rows}),
                              TensorView::of(acc_f.data(), {rows, d}), TensorView::of(lacc.data(), {rows}),
                              TensorView::of(part_f.data(), {rows, d}), TensorView::of(lpart.data(), {rows}));
  smk::merge_attention_states(TensorView::of(acc_f.data(), {rows, d}), TensorView::of(lacc.data(), {rows}),
                              TensorView::of(acc_f.data(), {rows, d}), TensorView::of(lacc.data(), {rows}),
                              TensorView::of(part_f.data(), {rows, d}), TensorView::of(lpart.data(), {rows}));
  EXPECT_EQ(acc_f, o);
  EXPECT_EQ(lacc, l);
}

TEST(CpuAttention, MisuseIsRejected) {
  std::vector<float> q(2 * 3 * 8), k(2 * 3 * 8), out(2 * 3 * 8);
  const auto call = [&](TensorView qv, TensorView kv, AttentionOptions o = {}) {
    smk::attention_forward(TensorView::of(out.data(), {1, 2, 3, 8}), {}, qv, kv, kv, o);
  };
  const auto expect_arg = [](auto fn, const char* arg) {
    try {
      fn();
      ADD_FAILURE() << "accepted";
    } catch (const smk::Error& e) {
      EXPECT_NE(std::string(e.what()).find(arg), std::string::npos) << e.what();
    }
  };
  expect_arg([&] { call(TensorView::of(q.data(), {1, 2, 3, 8}), TensorView::of(k.data(), {1, 2, 2, 8})); }, "'k'");
  expect_arg([&] { call(TensorView::of(q.data(), {2, 3, 8}), TensorView::of(k.data(), {2, 3, 8})); }, "'q'");
  AttentionOptions bad_scale;
  bad_scale.scale = NAN;
  expect_arg([&] { call(TensorView::of(q.data(), {1, 2, 3, 8}), TensorView::of(k.data(), {1, 2, 3, 8}), bad_scale); },
             "'options.scale'");
  const std::vector<std::int32_t> cu = {0, 2};
  AttentionOptions half_varlen;
  half_varlen.cu_seqlens_q = TensorView::of(cu.data(), {2});
  expect_arg([&] { call(TensorView::of(q.data(), {2, 3, 8}), TensorView::of(k.data(), {2, 3, 8}), half_varlen); },
             "'options.cu_seqlens_k'");
}

// A row with no visible key gets O = 0 and LSE = the sink, whatever the sink holds (the header): a NaN or +inf sink
// used to rescale the row's empty accumulator by a NaN weight and give O = NaN (fuzz_attention, session 13). Rows
// that see keys keep the regimes: a NaN sink poisons them, a +inf sink saturates them (O = NaN, LSE = +inf).
TEST(CpuAttention, NoVisibleKeyGivesZeroWhateverTheSink) {
  const std::int64_t sq = 3, sk = 1, h = 4, d = 2;  // causal, bottom-right: rows 0 and 1 see no key, row 2 sees one
  const std::vector<float> q(sq * h * d, 0.5f), k(sk * h * d, 1.0f), v(sk * h * d, 2.0f);
  const std::vector<float> sinks = {NAN, INFINITY, -INFINITY, 2.0f};
  using Fn = void (*)(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                      const AttentionOptions&);
  for (Fn fn : {static_cast<Fn>(&smk::cpu::attention_forward), static_cast<Fn>(&smk::cpu::reference::attention_forward)}) {
    std::vector<float> o(sq * h * d, 7.0f), lse(h * sq, 7.0f);
    AttentionOptions opt;
    opt.causal = true;
    opt.sinks = TensorView::of(sinks.data(), {h});
    fn(TensorView::of(o.data(), {1, sq, h, d}), TensorView::of(lse.data(), {1, h, sq}),
       TensorView::of(q.data(), {1, sq, h, d}), TensorView::of(k.data(), {1, sk, h, d}),
       TensorView::of(v.data(), {1, sk, h, d}), opt);
    for (std::int64_t hh = 0; hh < h; ++hh) {
      SCOPED_TRACE(testing::Message() << "sink " << sinks[hh]);
      for (std::int64_t i = 0; i < 2; ++i) {
        for (std::int64_t x = 0; x < d; ++x) EXPECT_EQ(o[(i * h + hh) * d + x], 0.0f);
        const float l = lse[hh * sq + i];
        if (std::isnan(sinks[hh])) EXPECT_TRUE(std::isnan(l));
        else EXPECT_EQ(l, sinks[hh]);
      }
      const float o2 = o[(2 * h + hh) * d], l2 = lse[hh * sq + 2];
      if (std::isnan(sinks[hh])) {
        EXPECT_TRUE(std::isnan(o2));
        EXPECT_TRUE(std::isnan(l2));
      } else if (sinks[hh] == INFINITY) {
        EXPECT_TRUE(std::isnan(o2));
        EXPECT_EQ(l2, INFINITY);
      } else {  // one key with score 0.5·0.5·2/√2·… : O = its share of v
        const double s = 0.5 * 1.0 * d / std::sqrt(static_cast<double>(d));
        const double sink = sinks[hh] == -INFINITY ? -kInf : sinks[hh];
        const double share = 1 / (1 + std::exp(sink - s));
        EXPECT_NEAR(o2, 2.0 * share, 1e-6);
        EXPECT_NEAR(l2, s + std::log1p(std::exp(sink - s)), 1e-6);
      }
    }
  }
  // Decode: a sequence of length 0.
  std::vector<float> o(h * d, 7.0f), lse(h, 7.0f);
  const std::vector<std::int32_t> lens = {0};
  smk::AttentionDecodeOptions dopt;
  dopt.sinks = TensorView::of(sinks.data(), {h});
  smk::attention_decode(TensorView::of(o.data(), {1, 1, h, d}), TensorView::of(lse.data(), {1, h, 1}),
                        TensorView::of(q.data(), {1, 1, h, d}), TensorView::of(k.data(), {1, sk, h, d}),
                        TensorView::of(v.data(), {1, sk, h, d}), TensorView::of(lens.data(), {1}), dopt);
  for (float x : o) EXPECT_EQ(x, 0.0f);
  EXPECT_TRUE(std::isnan(lse[0]));
  EXPECT_EQ(lse[1], INFINITY);
  EXPECT_EQ(lse[2], -INFINITY);
  EXPECT_EQ(lse[3], 2.0f);
}

// A non-empty part's inf or NaN O reaches the merge even where its weight e^(L_b − L) underflows to 0 in the compute
// type (f32: L_b − L_a = −200; f64: −800), as it would in exact arithmetic and as attention_forward's own P·V keeps
// it; it used to be skipped like an empty part's (fuzz_attention, session 13). An empty part's garbage stays out.
TEST(CpuAttention, MergeKeepsNonFiniteOfANonEmptyPartWhoseWeightUnderflows) {
  const auto run = [](auto zero, double lb_value, auto fn) {
    using T = decltype(zero);
    const std::vector<T> oa = {1, 2, 3}, ob = {static_cast<T>(kNaN), static_cast<T>(kInf), 5};
    const std::vector<T> la = {0}, lb = {static_cast<T>(lb_value)}, le = {static_cast<T>(-kInf)};
    std::vector<T> o(3, 7), l(1, 7);
    fn(TensorView::of(o.data(), {3}), TensorView::of(l.data(), {}), TensorView::of(oa.data(), {3}),
       TensorView::of(la.data(), {}), TensorView::of(ob.data(), {3}), TensorView::of(lb.data(), {}));
    EXPECT_TRUE(std::isnan(o[0]));
    EXPECT_FALSE(std::isfinite(o[1]));
    EXPECT_EQ(o[2], 3);
    EXPECT_EQ(l[0], 0);
    fn(TensorView::of(o.data(), {3}), TensorView::of(l.data(), {}), TensorView::of(oa.data(), {3}),
       TensorView::of(la.data(), {}), TensorView::of(ob.data(), {3}), TensorView::of(le.data(), {}));
    EXPECT_EQ(o, oa);  // the empty part's NaN and inf stay out
  };
  using Fn = void (*)(const TensorView&, const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                      const TensorView&);
  const Fn cpu = &smk::cpu::merge_attention_states, ref = &smk::cpu::reference::merge_attention_states;
  for (Fn fn : {cpu, ref}) {
    run(0.0f, -200.0, fn);
    run(0.0, -800.0, fn);
  }
  run(0.0f, -200.0, [](auto&&... a) { smk::merge_attention_states(a...); });
}

// Outputs may not overlap the options' inputs (docs/semantics.md §4): the sinks and the varlen offsets are read
// while out and lse are written. Such calls used to be accepted (fuzz_attention, session 13).
TEST(CpuAttention, OutputsMayNotOverlapSinksOrOffsets) {
  const std::int64_t h = 2, d = 4;
  const std::vector<float> q(3 * h * d, 0.5f), k(3 * h * d, 1.0f);
  std::vector<float> out(3 * h * d, 7.0f), lse(h * 3, 7.0f);
  const auto expect_rejected = [&](auto fn, const char* message) {
    const std::vector<float> out0 = out, lse0 = lse;
    try {
      fn();
      ADD_FAILURE() << "accepted";
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument);
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
    EXPECT_EQ(out, out0);
    EXPECT_EQ(lse, lse0);
  };
  AttentionOptions sinks_in_out;
  sinks_in_out.sinks = TensorView::of(out.data() + 1, {h});
  expect_rejected([&] {
    smk::attention_forward(TensorView::of(out.data(), {1, 3, h, d}), TensorView::of(lse.data(), {1, h, 3}),
                           TensorView::of(q.data(), {1, 3, h, d}), TensorView::of(k.data(), {1, 3, h, d}),
                           TensorView::of(k.data(), {1, 3, h, d}), sinks_in_out);
  }, "attention_forward: argument 'out'");
  AttentionOptions sinks_in_lse;
  sinks_in_lse.sinks = TensorView::of(lse.data() + 2, {h});
  expect_rejected([&] {
    smk::attention_forward(TensorView::of(out.data(), {1, 3, h, d}), TensorView::of(lse.data(), {1, h, 3}),
                           TensorView::of(q.data(), {1, 3, h, d}), TensorView::of(k.data(), {1, 3, h, d}),
                           TensorView::of(k.data(), {1, 3, h, d}), sinks_in_lse);
  }, "attention_forward: argument 'lse'");
  // Varlen offsets inside out's bytes (int32 over the f32 buffer).
  std::vector<std::int32_t> cu = {0, 3};
  AttentionOptions cu_in_out;
  cu_in_out.cu_seqlens_q = TensorView::strided(out.data() + 5, smk::DType::i32, smk::Device::cpu(), {2}, {1});
  cu_in_out.cu_seqlens_k = TensorView::of(cu.data(), {2});
  expect_rejected([&] {
    smk::cpu::attention_forward(TensorView::of(out.data(), {3, h, d}), {}, TensorView::of(q.data(), {3, h, d}),
                                TensorView::of(k.data(), {3, h, d}), TensorView::of(k.data(), {3, h, d}), cu_in_out);
  }, "cpu::attention_forward: argument 'out'");
  // Decode: the sinks inside out.
  const std::vector<std::int32_t> lens = {3};
  smk::AttentionDecodeOptions dopt;
  dopt.sinks = TensorView::of(out.data(), {h});
  expect_rejected([&] {
    smk::attention_decode(TensorView::of(out.data(), {1, 1, h, d}), {}, TensorView::of(q.data(), {1, 1, h, d}),
                          TensorView::of(k.data(), {1, 3, h, d}), TensorView::of(k.data(), {1, 3, h, d}),
                          TensorView::of(lens.data(), {1}), dopt);
  }, "attention_decode: argument 'out'");
}

// The values of cu_seqlens and seqlens are checked while the CPU runs; those errors name the op that was called (the
// public one, or cpu::), as every other error does. They named cpu::attention_* from the public entries (found by
// fuzz_attention, session 13).
TEST(CpuAttention, RunTimeErrorsNameTheOpCalled) {
  const std::int64_t h = 2, d = 4;
  const std::vector<float> q(3 * h * d, 0.5f), k(3 * h * d, 1.0f);
  std::vector<float> out(3 * h * d, 7.0f);
  const auto expect_message = [&](auto fn, const std::string& message) {
    try {
      fn();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument);
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
  };
  const std::vector<std::int32_t> decreasing = {0, 2, 1};  // two sequences; the offsets decrease
  AttentionOptions varlen;
  varlen.cu_seqlens_q = TensorView::of(decreasing.data(), {3});
  varlen.cu_seqlens_k = TensorView::of(decreasing.data(), {3});
  const auto forward = [&](auto f) {
    return [&, f] {
      f(TensorView::of(out.data(), {3, h, d}), TensorView{}, TensorView::of(q.data(), {3, h, d}),
        TensorView::of(k.data(), {3, h, d}), TensorView::of(k.data(), {3, h, d}), varlen);
    };
  };
  expect_message(forward([](auto... a) { smk::attention_forward(a...); }), "attention_forward: argument 'options.cu_seqlens_");
  expect_message(forward([](auto... a) { smk::cpu::attention_forward(a...); }),
                 "cpu::attention_forward: argument 'options.cu_seqlens_");
  const std::vector<std::int32_t> too_long = {4};  // S_max is 3
  const auto decode = [&](auto f) {
    return [&, f] {
      f(TensorView::of(out.data(), {1, 1, h, d}), TensorView{}, TensorView::of(q.data(), {1, 1, h, d}),
        TensorView::of(k.data(), {1, 3, h, d}), TensorView::of(k.data(), {1, 3, h, d}),
        TensorView::of(too_long.data(), {1}));
    };
  };
  expect_message(decode([](auto... a) { smk::attention_decode(a...); }), "attention_decode: argument 'seqlens'");
  expect_message(decode([](auto... a) { smk::cpu::attention_decode(a...); }), "cpu::attention_decode: argument 'seqlens'");
}

// An empty KV cache (S_max = 0) may have null data, as any empty tensor may: decode forms no pointer from it (it
// added b·stride to null for b ≥ 1, undefined behaviour that UBSan reports; found by fuzz_attention, session 13,
// whose corpus replays the input under UBSan). Every row sees no key: O = 0, LSE = −inf.
TEST(CpuAttention, DecodeOverAnEmptyCacheWithNullData) {
  const std::int64_t B = 3, h = 2, d = 4;
  const std::vector<float> q(B * h * d, 1.0f);
  const std::vector<std::int32_t> lens(B, 0);
  const TensorView empty = TensorView::strided(nullptr, smk::DType::f32, smk::Device::cpu(), {B, 0, h, d},
                                               {5 * h * d, h * d, d, 1});
  std::vector<float> o(B * h * d, 7.0f), lse(B * h, 7.0f);
  smk::attention_decode(TensorView::of(o.data(), {B, 1, h, d}), TensorView::of(lse.data(), {B, h, 1}),
                        TensorView::of(q.data(), {B, 1, h, d}), empty, empty, TensorView::of(lens.data(), {B}));
  for (float x : o) EXPECT_EQ(x, 0.0f);
  for (float x : lse) EXPECT_EQ(x, -INFINITY);
}

}  // namespace
