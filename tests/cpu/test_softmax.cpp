// The CPU softmax family: the lesson's tests, the article's worked examples, layouts and dtypes. Every test runs on
// the three CPU entry points (the public dispatch, the float path and the double reference). Expected values come
// from the mathematics (closed forms evaluated in long double here), never from the library's own output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/matrix.hpp"
#include "softmaxkit/cpu/softmax.hpp"

namespace {

using smk::DType;
using smk::TensorView;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kU = 5.9604644775390625e-8;  // 2^-24, the unit roundoff of f32

using OpFn = void (*)(const TensorView&, const TensorView&, const smk::SoftmaxOptions&);
struct Backend {
  const char* name;
  OpFn softmax, log_softmax, logsumexp;
};
void dispatch_softmax(const TensorView& o, const TensorView& i, const smk::SoftmaxOptions& opt) { smk::softmax(o, i, opt); }
void dispatch_log_softmax(const TensorView& o, const TensorView& i, const smk::SoftmaxOptions& opt) {
  smk::log_softmax(o, i, opt);
}
void dispatch_logsumexp(const TensorView& o, const TensorView& i, const smk::SoftmaxOptions& opt) {
  smk::logsumexp(o, i, opt);
}

class CpuSoftmax : public ::testing::TestWithParam<Backend> {};

INSTANTIATE_TEST_SUITE_P(
    Backends, CpuSoftmax,
    ::testing::Values(Backend{"dispatch", &dispatch_softmax, &dispatch_log_softmax, &dispatch_logsumexp},
                      Backend{"float_path", &smk::cpu::softmax, &smk::cpu::log_softmax, &smk::cpu::logsumexp},
                      Backend{"reference", &smk::cpu::reference::softmax, &smk::cpu::reference::log_softmax,
                              &smk::cpu::reference::logsumexp}),
    [](const auto& info) { return std::string(info.param.name); });

std::vector<long double> exact_softmax(const std::vector<double>& x) {
  long double m = -INFINITY, sum = 0;
  for (double v : x) m = std::max<long double>(m, v);
  for (double v : x) sum += std::exp(static_cast<long double>(v) - m);
  std::vector<long double> p;
  for (double v : x) p.push_back(std::exp(static_cast<long double>(v) - m) / sum);
  return p;
}

// The lesson's SoftmaxRowsNormalizesEachRowWithoutChangingInput.
TEST_P(CpuSoftmax, LessonTwoRowsNormalizeEachRowWithoutChangingInput) {
  const auto scores = smk::Matrix::from(2, 3, {1, 2, 3, 0, 0, 0});
  const auto original = scores;
  smk::Matrix result(2, 3);
  GetParam().softmax(result.view(), scores.view(), {});
  const float expected[2][3] = {{0.0900306f, 0.2447285f, 0.6652410f}, {1.0f / 3, 1.0f / 3, 1.0f / 3}};
  for (int r = 0; r < 2; ++r) {
    float sum = 0;
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(result(r, c), expected[r][c], 1e-5f);
      sum += result(r, c);
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
  }
  EXPECT_EQ(scores, original);
}

// The lesson's SoftmaxRowsPreservesProbabilitiesForLargeShiftedScores: the regression the max shift fixed.
TEST_P(CpuSoftmax, LessonLargeShiftedScoresStayFinite) {
  const auto scores = smk::Matrix::from(2, 3, {1, 2, 3, 1000, 1001, 1002});
  smk::Matrix result(2, 3);
  GetParam().softmax(result.view(), scores.view(), {});
  const float expected[3] = {0.0900306f, 0.2447285f, 0.6652410f};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) {
      EXPECT_TRUE(std::isfinite(result(r, c)));
      EXPECT_NEAR(result(r, c), expected[c], 1e-5f);
    }
}

// The article: [2, 1, 0] → 0.665, 0.245, 0.090; the same row shifted by +100 and −200 gives the same answer.
TEST_P(CpuSoftmax, ArticleWorkedExampleAndShifts) {
  for (float shift : {0.0f, 100.0f, -200.0f}) {
    std::vector<float> x = {2 + shift, 1 + shift, 0 + shift}, y(3);
    GetParam().softmax(TensorView::of(y.data(), {3}), TensorView::of(x.data(), {3}), {});
    const auto p = exact_softmax({2, 1, 0});
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], static_cast<double>(p[i]), 4 * kU) << "shift " << shift;
    EXPECT_NEAR(y[0], 0.665, 5e-4);
    EXPECT_NEAR(y[1], 0.245, 5e-4);
    EXPECT_NEAR(y[2], 0.090, 5e-4);
  }
}

// LSE is a smooth maximum: m ≤ LSE ≤ m + ln n, with the upper bound reached when all scores tie.
TEST_P(CpuSoftmax, LogSumExpBounds) {
  std::vector<float> x = {2, 1, 0, 2, 2, 2};
  float lse[2];
  GetParam().logsumexp(TensorView::of(lse, {2}), TensorView::of(x.data(), {2, 3}), {});
  EXPECT_NEAR(lse[0], std::log(std::exp(2.0) + std::exp(1.0) + 1.0), 4 * kU * 3);
  EXPECT_GE(lse[0], 2.0f);
  EXPECT_LE(lse[0], 2.0f + std::log(3.0f));
  EXPECT_NEAR(lse[1], 2.0 + std::log(3.0), 4 * kU * 3);
  EXPECT_NEAR(lse[0], 2.4076, 5e-5);
  EXPECT_NEAR(lse[1], 3.0986, 5e-5);
}

// log_softmax is (x − m) − log l, never x − LSE: a trailing score is exact, not rounded away.
TEST_P(CpuSoftmax, LogSoftmaxOfWideGapsIsExact) {
  std::vector<float> x = {1000, 1}, y(2);
  GetParam().log_softmax(TensorView::of(y.data(), {2}), TensorView::of(x.data(), {2}), {});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], -999.0f);
  std::vector<float> z = {0, -120};
  GetParam().log_softmax(TensorView::of(y.data(), {2}), TensorView::of(z.data(), {2}), {});
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], -120.0f);  // softmax would give 0 here, and log(0) = −inf
}

// The regimes of docs/semantics.md, row by row in one batch.
TEST_P(CpuSoftmax, NonFiniteRowsFollowTheContract) {
  const std::vector<float> x = {-kInf, -kInf, -kInf,  // empty row
                                1, kInf, 2,           // saturated
                                1, kNaN, 2,           // poisoned
                                -kInf, 0, -kInf};     // one finite score among −inf
  for (auto policy : {smk::EmptyRowPolicy::nan, smk::EmptyRowPolicy::zeros}) {
    std::vector<float> p(12, 7.0f), lp(12, 7.0f), lse(4, 7.0f);
    const smk::SoftmaxOptions opt{.dim = -1, .empty_rows = policy};
    GetParam().softmax(TensorView::of(p.data(), {4, 3}), TensorView::of(x.data(), {4, 3}), opt);
    GetParam().log_softmax(TensorView::of(lp.data(), {4, 3}), TensorView::of(x.data(), {4, 3}), opt);
    GetParam().logsumexp(TensorView::of(lse.data(), {4}), TensorView::of(x.data(), {4, 3}), opt);
    for (int i = 0; i < 3; ++i) {
      if (policy == smk::EmptyRowPolicy::nan) {
        EXPECT_TRUE(std::isnan(p[i]));
        EXPECT_TRUE(std::isnan(lp[i]));
      } else {
        EXPECT_EQ(p[i], 0.0f);
        EXPECT_EQ(lp[i], 0.0f);
      }
      EXPECT_TRUE(std::isnan(p[3 + i]));
      EXPECT_TRUE(std::isnan(lp[3 + i]));
      EXPECT_TRUE(std::isnan(p[6 + i]));
      EXPECT_TRUE(std::isnan(lp[6 + i]));
    }
    EXPECT_EQ(lse[0], -kInf);
    EXPECT_EQ(lse[1], kInf);
    EXPECT_TRUE(std::isnan(lse[2]));
    EXPECT_EQ(lse[3], 0.0f);
    EXPECT_EQ(p[9], 0.0f);
    EXPECT_EQ(p[10], 1.0f);
    EXPECT_EQ(p[11], 0.0f);
    EXPECT_EQ(lp[10], 0.0f);
    EXPECT_EQ(lp[9], -kInf);
  }
}

// Reduction over a non-last dimension of a 3-D tensor, read through strides, written into an offset view.
TEST_P(CpuSoftmax, StridedNonLastDimension) {
  const int A = 2, N = 5, B = 3;  // shape [A, N, B], reduce over N
  std::vector<float> x(A * N * B);
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0, 3);
  for (auto& v : x) v = dist(rng);
  std::vector<float> y(A * N * B + 7, kNaN);
  GetParam().softmax(TensorView::of(y.data() + 7, {A, N, B}), TensorView::of(x.data(), {A, N, B}), {.dim = 1});
  std::vector<float> lse(A * B, kNaN);
  GetParam().logsumexp(TensorView::of(lse.data(), {A, 1, B}), TensorView::of(x.data(), {A, N, B}), {.dim = -2});
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b) {
      std::vector<double> row;
      for (int n = 0; n < N; ++n) row.push_back(x[(a * N + n) * B + b]);
      const auto p = exact_softmax(row);
      long double sum = 0;
      for (int n = 0; n < N; ++n) sum += std::exp(static_cast<long double>(row[n]));
      for (int n = 0; n < N; ++n)
        EXPECT_NEAR(y[7 + (a * N + n) * B + b], static_cast<double>(p[n]), 8 * kU * static_cast<double>(p[n]));
      EXPECT_NEAR(lse[a * B + b], static_cast<double>(std::log(sum)), 8 * kU * (1 + std::fabs(lse[a * B + b])));
    }
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(std::isnan(y[i])) << "wrote before the output view";
}

// A column of a row-major matrix (stride 4) and in-place operation.
TEST_P(CpuSoftmax, ColumnViewAndInPlace) {
  std::vector<float> m = {1, 9, 9, 9, 2, 9, 9, 9, 3, 9, 9, 9};
  const TensorView column = TensorView::strided(m.data(), DType::f32, smk::Device::cpu(), {3}, {4});
  GetParam().softmax(column, column, {});
  const auto p = exact_softmax({1, 2, 3});
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(m[4 * i], static_cast<double>(p[i]), 4 * kU);
  EXPECT_EQ(m[1], 9.0f);
  EXPECT_EQ(m[11], 9.0f);
}

// f16 and bf16 in, f16/bf16 or f32 out; computed in f32, rounded once. Here the exact answer is representable.
TEST_P(CpuSoftmax, HalfPrecisionInputs) {
  // softmax([a, a]) = [0.5, 0.5] exactly, for any a — including 1.5e3, where the naive half formula overflows.
  std::vector<smk::half_t> xh = {smk::to_half(1500.0f), smk::to_half(1500.0f)}, yh(2);
  GetParam().softmax(TensorView::of(yh.data(), {2}), TensorView::of(xh.data(), {2}), {});
  EXPECT_EQ(smk::to_float(yh[0]), 0.5f);
  EXPECT_EQ(smk::to_float(yh[1]), 0.5f);
  std::vector<smk::bfloat16_t> xb(1000, smk::to_bfloat16(133120.0f));
  std::vector<float> yf(1000);
  GetParam().softmax(TensorView::of(yf.data(), {1000}), TensorView::of(xb.data(), {1000}), {});
  for (float v : yf) EXPECT_NEAR(v, 1e-3, 1e-3 * 12 * kU);
  float lse;
  GetParam().logsumexp(TensorView::of(&lse, {}), TensorView::of(xb.data(), {1000}), {});
  EXPECT_NEAR(lse, 133120.0 + std::log(1000.0), 133120.0 * 2 * kU);
}

// Empty rows and zero rows (docs/semantics.md): n = 0 writes nothing to softmax and −inf to logsumexp.
TEST_P(CpuSoftmax, EmptyAndZeroRows) {
  std::vector<float> nothing;
  std::vector<float> lse(4, 7.0f);
  GetParam().softmax(TensorView::of(nothing.data(), {4, 0}), TensorView::of(nothing.data(), {4, 0}), {});
  GetParam().logsumexp(TensorView::of(lse.data(), {4}), TensorView::of(nothing.data(), {4, 0}), {});
  for (float v : lse) EXPECT_EQ(v, -kInf);
  GetParam().logsumexp(TensorView::of(lse.data(), {0}), TensorView::of(nothing.data(), {0, 5}), {});
}

// Empty rows of null data whose rows sit at non-zero offsets (strides [1, 1]; an empty b8 mask likewise): a row of
// n = 0 reads nothing, so no offset may be applied to the null pointers (null + offset is undefined behaviour, which
// UBSan reported for softmax_state from fuzz_softmax_backward, input tests/fuzz/corpus_softmax_backward/
// crash-053d8d6ceeba9453c97d0ee5374db863e6f77ad4). That shows only under UBSan (tests/fuzz/run.sh replays the input
// there); here the calls return and logsumexp and the state give the empty row's −inf and (−inf, 0).
TEST_P(CpuSoftmax, EmptyRowsOfNullStridedData) {
  const TensorView none = TensorView::strided(nullptr, DType::f32, smk::Device::cpu(), {4, 0}, {1, 1});
  smk::SoftmaxOptions opt;
  opt.mask = TensorView::strided(nullptr, DType::b8, smk::Device::cpu(), {4, 0}, {1, 1});
  GetParam().softmax(none, none, opt);
  GetParam().log_softmax(none, none, opt);
  std::vector<float> lse(4, 7.0f);
  GetParam().logsumexp(TensorView::of(lse.data(), {4}), none, opt);
  for (float v : lse) EXPECT_EQ(v, -kInf);
}
TEST(CpuSoftmaxState, EmptyRowsOfNullStridedData) {
  const TensorView none = TensorView::strided(nullptr, DType::f32, smk::Device::cpu(), {4, 0}, {1, 1});
  for (int backend = 0; backend < 3; ++backend) {
    std::vector<float> m(4, 7.0f), l(4, 7.0f);
    const TensorView vm = TensorView::of(m.data(), {4}), vl = TensorView::of(l.data(), {4});
    if (backend == 0) smk::softmax_state(vm, vl, none);
    else if (backend == 1) smk::cpu::softmax_state(vm, vl, none);
    else smk::cpu::reference::softmax_state(vm, vl, none);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(m[r], -kInf) << "backend " << backend << " row " << r;
      EXPECT_EQ(l[r], 0.0f) << "backend " << backend << " row " << r;
    }
  }
}

// Random rows of many lengths against the long-double closed form, with the gates of docs/semantics.md:
// softmax relative error ≤ (6 + log2 n)·u for p > 1e-30, Σp within (log2 n + 2)·u of 1,
// LSE absolute error ≤ (|LSE| + log2 n + 3)·u, log-softmax absolute error ≤ (|y| + log2 n + 3)·u.
TEST_P(CpuSoftmax, AccuracyGatesOnRandomRows) {
  std::mt19937 rng(2024);
  for (int n : {1, 2, 3, 31, 33, 255, 1025, 4097, 65537}) {
    std::normal_distribution<float> dist(0.0f, n % 2 ? 4.0f : 15.0f);
    std::vector<float> x(n), p(n), lp(n);
    for (auto& v : x) v = dist(rng) + 37.0f;
    float lse;
    GetParam().softmax(TensorView::of(p.data(), {n}), TensorView::of(x.data(), {n}), {});
    GetParam().log_softmax(TensorView::of(lp.data(), {n}), TensorView::of(x.data(), {n}), {});
    GetParam().logsumexp(TensorView::of(&lse, {}), TensorView::of(x.data(), {n}), {});
    long double m = -INFINITY, sum = 0, psum = 0;
    for (float v : x) m = std::max<long double>(m, v);
    for (float v : x) sum += std::exp(static_cast<long double>(v) - m);
    const long double exact_lse = m + std::log(sum);
    const double log2n = std::log2(static_cast<double>(n));
    for (int i = 0; i < n; ++i) {
      const long double pe = std::exp(static_cast<long double>(x[i]) - exact_lse);
      const long double ye = static_cast<long double>(x[i]) - exact_lse;
      if (pe > 1e-30L)
        ASSERT_LE(std::fabs(p[i] - pe) / pe, (6 + log2n) * kU) << "n=" << n << " i=" << i;
      ASSERT_LE(std::fabs(lp[i] - ye), (std::fabs(ye) + log2n + 3) * kU) << "n=" << n << " i=" << i;
      psum += p[i];
    }
    EXPECT_LE(std::fabs(psum - 1), (log2n + 2) * kU) << "n=" << n;
    EXPECT_LE(std::fabs(lse - exact_lse), (std::fabs(exact_lse) + log2n + 3) * kU) << "n=" << n;
  }
}

// The textbook formula fails where the article says: e^x overflows f32 above 88.72, so [1000, 1001, 1002] is NaN;
// in f16 the fridge-logit scale (above 11.09) already overflows.
TEST(CpuSoftmaxNaive, OverflowsExactlyWhereTheArticleSays) {
  std::vector<float> big = {1000, 1001, 1002}, y(3);
  smk::cpu::softmax_naive_unshifted(TensorView::of(y.data(), {3}), TensorView::of(big.data(), {3}));
  for (float v : y) EXPECT_TRUE(std::isnan(v));
  smk::cpu::reference::softmax_naive_unshifted(TensorView::of(y.data(), {3}), TensorView::of(big.data(), {3}));
  for (float v : y) EXPECT_TRUE(std::isnan(v));  // double overflows too (e^709.8), as the lesson's reference did
  std::vector<float> ok = {88.0f, 87.0f}, below = {-110.0f, -111.0f};
  smk::cpu::softmax_naive_unshifted(TensorView::of(y.data(), {2}), TensorView::of(ok.data(), {2}));
  EXPECT_TRUE(std::isfinite(y[0]));
  smk::cpu::softmax_naive_unshifted(TensorView::of(y.data(), {2}), TensorView::of(below.data(), {2}));
  EXPECT_TRUE(std::isnan(y[0]));  // every term underflows: 0 / 0
  std::vector<float> above = {89.0f, 0.0f};
  smk::cpu::softmax_naive_unshifted(TensorView::of(y.data(), {2}), TensorView::of(above.data(), {2}));
  EXPECT_TRUE(std::isnan(y[0]));
}

}  // namespace
