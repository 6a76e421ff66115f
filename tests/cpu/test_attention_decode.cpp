// attention_decode on the CPU (the float path, the float64 reference and the public entry point) against a direct
// long-double evaluation of the definition in softmaxkit/attention.hpp: all scores of the visible keys at once, no
// blocks, no online rescaling.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/attention_direct.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/error.hpp"

namespace {

using smk::AttentionDecodeOptions;
using smk::TensorView;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Row = smk_test::DirectRow;
using smk_test::direct;
using smk_test::randn;

struct Problem {
  std::int64_t B, sq, hq, hkv, d, smax;
  std::vector<std::int32_t> lens;
};

// Runs `fn` (reference, float path or public) and checks every (b, h, token) against the definition.
template <typename T, typename Fn>
void check_against_definition(const Problem& P, bool causal, bool with_sinks, double tol, Fn fn) {
  const auto q = randn(P.B * P.sq * P.hq * P.d, 11), k = randn(P.B * P.smax * P.hkv * P.d, 12),
             v = randn(P.B * P.smax * P.hkv * P.d, 13);
  std::vector<double> sinks(P.hq);
  for (std::int64_t h = 0; h < P.hq; ++h) sinks[h] = 1.5 - 0.7 * h;
  // What the tensors hold: T-rounded values, NaN in every cache row at or beyond the sequence's length.
  std::vector<T> qt(q.begin(), q.end()), kt(k.begin(), k.end()), vt(v.begin(), v.end()), st(sinks.begin(), sinks.end());
  std::vector<double> kd(k.size()), vd(v.size());
  for (std::int64_t b = 0; b < P.B; ++b)
    for (std::int64_t j = 0; j < P.smax; ++j)
      for (std::int64_t i = 0; i < P.hkv * P.d; ++i) {
        const std::int64_t at = (b * P.smax + j) * P.hkv * P.d + i;
        if (j >= P.lens[b]) kt[at] = vt[at] = static_cast<T>(kNaN);
        kd[at] = static_cast<double>(kt[at]);
        vd[at] = static_cast<double>(vt[at]);
      }
  const std::vector<double> qd(qt.begin(), qt.end()), sd(st.begin(), st.end());
  std::vector<T> o(P.B * P.sq * P.hq * P.d, static_cast<T>(kNaN)), lse(P.B * P.hq * P.sq, static_cast<T>(kNaN));
  AttentionDecodeOptions opt;
  opt.causal = causal;
  opt.scale = 0.3f;
  if (with_sinks) opt.sinks = TensorView::of(st.data(), {P.hq});
  fn(TensorView::of(o.data(), {P.B, P.sq, P.hq, P.d}), TensorView::of(lse.data(), {P.B, P.hq, P.sq}),
     TensorView::of(qt.data(), {P.B, P.sq, P.hq, P.d}), TensorView::of(kt.data(), {P.B, P.smax, P.hkv, P.d}),
     TensorView::of(vt.data(), {P.B, P.smax, P.hkv, P.d}), TensorView::of(P.lens.data(), {P.B}), opt);
  for (std::int64_t b = 0; b < P.B; ++b)
    for (std::int64_t h = 0; h < P.hq; ++h)
      for (std::int64_t i = 0; i < P.sq; ++i) {
        const std::int64_t n = P.lens[b];
        const std::int64_t visible = causal ? std::max<std::int64_t>(0, std::min(n, n - P.sq + i + 1)) : n;
        const std::int64_t hk = h / (P.hq / P.hkv);
        const Row e = direct(&qd[((b * P.sq + i) * P.hq + h) * P.d], &kd[(b * P.smax * P.hkv + hk) * P.d],
                             &vd[(b * P.smax * P.hkv + hk) * P.d], visible, P.d, P.hkv * P.d, static_cast<long double>(0.3f),
                             with_sinks ? &sd[h] : nullptr);
        SCOPED_TRACE(testing::Message() << "b=" << b << " h=" << h << " i=" << i << " visible=" << visible);
        for (std::int64_t x = 0; x < P.d; ++x)
          ASSERT_NEAR(static_cast<double>(o[((b * P.sq + i) * P.hq + h) * P.d + x]), static_cast<double>(e.o[x]), tol);
        const double got = static_cast<double>(lse[(b * P.hq + h) * P.sq + i]);
        if (std::isinf(static_cast<double>(e.lse))) EXPECT_EQ(got, static_cast<double>(e.lse));
        else EXPECT_NEAR(got, static_cast<double>(e.lse), tol * (1 + std::fabs(static_cast<double>(e.lse))));
      }
}

const Problem kMixed{4, 3, 6, 2, 16, 300, {0, 1, 2, 300}};  // empty, shorter than Sq, and a full cache

TEST(CpuAttentionDecode, ReferenceMatchesDefinition) {
  for (bool causal : {false, true})
    for (bool sinks : {false, true}) {
      SCOPED_TRACE(testing::Message() << "causal=" << causal << " sinks=" << sinks);
      check_against_definition<double>(kMixed, causal, sinks, 1e-13, [](auto... a) {
        smk::cpu::reference::attention_decode(a...);
      });
    }
}

TEST(CpuAttentionDecode, FloatPathAndPublicEntryMatchDefinition) {
  // f32 arithmetic over ≤ 300 keys of unit-normal data: the error analysis of docs/semantics.md gives a few
  // hundred u ≈ 3e-5 on O and LSE at worst; 1e-4 leaves a margin, and a wrong mask or weight is off by ≫ 1e-2.
  for (bool causal : {false, true})
    for (bool sinks : {false, true}) {
      SCOPED_TRACE(testing::Message() << "causal=" << causal << " sinks=" << sinks);
      check_against_definition<float>(kMixed, causal, sinks, 1e-4, [](auto... a) { smk::cpu::attention_decode(a...); });
      check_against_definition<float>(kMixed, causal, sinks, 1e-4, [](auto... a) { smk::attention_decode(a...); });
    }
  // One new token, D = 128, Hq/Hkv = 8 (the 64/8 layout at a small scale).
  check_against_definition<float>({2, 1, 8, 1, 128, 70, {70, 33}}, false, true, 1e-4,
                                  [](auto... a) { smk::cpu::attention_decode(a...); });
}

// The error names the op and the argument, and a rejected call writes nothing.
TEST(CpuAttentionDecode, BadArgumentsAreRejectedByName) {
  const std::int64_t B = 2, sq = 2, hq = 4, hkv = 2, d = 8, smax = 5;
  std::vector<float> q(B * sq * hq * d, 1), k(B * smax * hkv * d, 1), v(k), o(q.size(), 7), lse(B * hq * sq, 7);
  std::vector<std::int32_t> lens = {5, 3};
  std::vector<float> sinks(hq, 0);
  std::vector<double> lens_f(B, 1);
  const auto O = TensorView::of(o.data(), {B, sq, hq, d});
  const auto L = TensorView::of(lse.data(), {B, hq, sq});
  const auto Q = TensorView::of(q.data(), {B, sq, hq, d});
  const auto K = TensorView::of(k.data(), {B, smax, hkv, d});
  const auto V = TensorView::of(v.data(), {B, smax, hkv, d});
  const auto N = TensorView::of(lens.data(), {B});
  const auto expect_error = [&](const std::string& arg, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no error for " << arg;
    } catch (const smk::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("attention_decode"), std::string::npos) << what;
      EXPECT_NE(what.find("'" + arg + "'"), std::string::npos) << what;
    }
    for (float x : o) ASSERT_EQ(x, 7.0f) << arg;
    for (float x : lse) ASSERT_EQ(x, 7.0f) << arg;
  };
  std::vector<float> q9(B * 9 * hq * d, 1), o9(q9.size());
  expect_error("q", [&] {
    smk::attention_decode(TensorView::of(o9.data(), {B, 9, hq, d}), {}, TensorView::of(q9.data(), {B, 9, hq, d}), K, V, N);
  });
  expect_error("q", [&] { smk::attention_decode(O, L, TensorView::of(q.data(), {B * sq, hq, d}), K, V, N); });
  expect_error("k_cache", [&] {
    smk::attention_decode(O, L, Q, TensorView::of(k.data(), {B, 2, 3, d}), TensorView::of(v.data(), {B, 2, 3, d}), N);
  });
  expect_error("k_cache", [&] {
    smk::attention_decode(O, L, Q, TensorView::of(k.data(), {B, smax, hkv, d / 2}),
                          TensorView::of(v.data(), {B, smax, hkv, d / 2}), N);
  });
  expect_error("seqlens", [&] {
    std::vector<std::int32_t> bad = {5, 6};
    smk::attention_decode(O, L, Q, K, V, TensorView::of(bad.data(), {B}));
  });
  expect_error("seqlens", [&] {
    std::vector<std::int32_t> bad = {-1, 0};
    smk::cpu::attention_decode(O, L, Q, K, V, TensorView::of(bad.data(), {B}));
  });
  expect_error("seqlens", [&] { smk::attention_decode(O, L, Q, K, V, TensorView::of(lens_f.data(), {B})); });
  expect_error("seqlens", [&] { smk::attention_decode(O, L, Q, K, V, TensorView::of(lens.data(), {1})); });
  expect_error("lse", [&] { smk::attention_decode(O, TensorView::of(lse.data(), {B, sq, hq}), Q, K, V, N); });
  expect_error("out", [&] { smk::attention_decode(TensorView::of(o.data(), {B, sq, hq, d - 1}), L, Q, K, V, N); });
  expect_error("out", [&] { smk::attention_decode(TensorView::of(q.data(), {B, sq, hq, d}), L, Q, K, V, N); });
  AttentionDecodeOptions opt;
  opt.sinks = TensorView::of(sinks.data(), {hq - 1});
  expect_error("options.sinks", [&] { smk::attention_decode(O, L, Q, K, V, N, opt); });
  opt = {};
  opt.scale = INFINITY;
  expect_error("options.scale", [&] { smk::attention_decode(O, L, Q, K, V, N, opt); });
}

}  // namespace
