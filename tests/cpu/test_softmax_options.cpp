// The CPU softmax family beyond the plain forward ops: temperature (scalar and per row), masks (additive and
// boolean, broadcast), the online state as an output, and both backward passes. Every op runs through the public
// dispatch, the float path and the double reference. Expected values come from closed forms in long double, and
// the backward passes are also checked against finite differences of the forward op (an independent oracle for
// the formula itself).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"

namespace {

using smk::DType;
using smk::SoftmaxOptions;
using smk::TensorView;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kU = 5.9604644775390625e-8;  // 2^-24

using FwdFn = void (*)(const TensorView&, const TensorView&, const SoftmaxOptions&);
using StateFn = void (*)(const TensorView&, const TensorView&, const TensorView&, const SoftmaxOptions&);
using BwdFn = void (*)(const TensorView&, const TensorView&, const TensorView&, const SoftmaxOptions&);
struct Backend {
  const char* name;
  FwdFn softmax, log_softmax, logsumexp;
  StateFn state;
  BwdFn softmax_backward, log_softmax_backward;
  bool is_reference;
};

void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

Backend dispatch_backend() {
  return {"dispatch",
          [](const TensorView& o, const TensorView& i, const SoftmaxOptions& opt) { smk::softmax(o, i, opt); },
          [](const TensorView& o, const TensorView& i, const SoftmaxOptions& opt) { smk::log_softmax(o, i, opt); },
          [](const TensorView& o, const TensorView& i, const SoftmaxOptions& opt) { smk::logsumexp(o, i, opt); },
          [](const TensorView& m, const TensorView& l, const TensorView& i, const SoftmaxOptions& opt) {
            smk::softmax_state(m, l, i, opt);
          },
          [](const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& opt) {
            smk::softmax_backward(dx, y, dy, opt);
          },
          [](const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& opt) {
            smk::log_softmax_backward(dx, y, dy, opt);
          },
          false};
}

class CpuSoftmaxOptions : public ::testing::TestWithParam<Backend> {};

INSTANTIATE_TEST_SUITE_P(
    Backends, CpuSoftmaxOptions,
    ::testing::Values(dispatch_backend(),
                      Backend{"float_path", &smk::cpu::softmax, &smk::cpu::log_softmax, &smk::cpu::logsumexp,
                              &smk::cpu::softmax_state, &smk::cpu::softmax_backward, &smk::cpu::log_softmax_backward,
                              false},
                      Backend{"reference", &smk::cpu::reference::softmax, &smk::cpu::reference::log_softmax,
                              &smk::cpu::reference::logsumexp, &smk::cpu::reference::softmax_state,
                              &smk::cpu::reference::softmax_backward, &smk::cpu::reference::log_softmax_backward,
                              true}),
    [](const auto& info) { return std::string(info.param.name); });

// Closed forms in long double over already-transformed scores z.
std::vector<long double> exact_softmax(const std::vector<long double>& z) {
  long double m = -INFINITY, sum = 0;
  for (auto v : z) m = std::max(m, v);
  for (auto v : z) sum += std::exp(v - m);
  std::vector<long double> p;
  for (auto v : z) p.push_back(std::exp(v - m) / sum);
  return p;
}
long double exact_lse(const std::vector<long double>& z) {
  long double m = -INFINITY, sum = 0;
  for (auto v : z) m = std::max(m, v);
  for (auto v : z) sum += std::exp(v - m);
  return m + std::log(sum);
}

std::vector<float> random_row(std::mt19937& rng, int n, float sigma, float offset = 0) {
  std::normal_distribution<float> dist(offset, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

// softmax(x / T) for several T against the closed form of the *exactly* scaled scores. The float path rounds
// x / T once (half an ulp of |z|), which moves p by up to |z − m|·u on top of the usual gate.
TEST_P(CpuSoftmaxOptions, ScalarTemperatureScalesBeforeTheShift) {
  std::mt19937 rng(7);
  const int n = 257;
  const auto x = random_row(rng, n, 5.0f, 20.0f);
  for (float T : {0.5f, 2.0f, 3.7f, 1e-3f, 250.0f}) {
    std::vector<long double> z;
    for (float v : x) z.push_back(static_cast<long double>(v) / T);
    const auto p = exact_softmax(z);
    const long double lse = exact_lse(z);
    long double m = -INFINITY;
    for (auto v : z) m = std::max(m, v);
    std::vector<float> y(n), ly(n);
    float l = 0;
    const SoftmaxOptions opt{.temperature = T};
    GetParam().softmax(TensorView::of(y.data(), {n}), TensorView::of(x.data(), {n}), opt);
    GetParam().log_softmax(TensorView::of(ly.data(), {n}), TensorView::of(x.data(), {n}), opt);
    GetParam().logsumexp(TensorView::of(&l, {}), TensorView::of(x.data(), {n}), opt);
    const double log2n = std::log2(double(n));
    for (int i = 0; i < n; ++i) {
      const double scaling = static_cast<double>(std::fabs(z[i]) + std::fabs(m));  // rounding of x / T, twice
      if (p[i] > 1e-30L)
        ASSERT_LE(std::fabs(y[i] - p[i]) / p[i], (6 + log2n + scaling) * kU) << "T=" << T << " i=" << i;
      const long double ye = z[i] - lse;
      ASSERT_LE(std::fabs(ly[i] - ye), (std::fabs(ye) + log2n + 3 + scaling) * kU) << "T=" << T << " i=" << i;
    }
    EXPECT_LE(std::fabs(l - lse), (std::fabs(lse) + log2n + 3 + std::fabs(m)) * kU) << "T=" << T;
  }
}

// As T → 0, softmax(x / T) tends to the one-hot argmax and ties share it; T·LSE(x / T) tends to max(x).
TEST_P(CpuSoftmaxOptions, TemperatureTowardZeroIsArgmax) {
  const std::vector<float> x = {1.0f, 3.0f, 2.0f, 3.0f, -5.0f};
  std::vector<float> y(5);
  float l = 0;
  const SoftmaxOptions opt{.temperature = 1e-30f};
  GetParam().softmax(TensorView::of(y.data(), {5}), TensorView::of(x.data(), {5}), opt);
  EXPECT_EQ(y, (std::vector<float>{0, 0.5f, 0, 0.5f, 0}));
  GetParam().logsumexp(TensorView::of(&l, {}), TensorView::of(x.data(), {5}), opt);
  EXPECT_NEAR(l * 1e-30, 3.0, 1e-6);
}

// One temperature per row, from a [rows] tensor or a [rows, 1] one; the 3-D case reduces over the middle dim.
TEST_P(CpuSoftmaxOptions, PerRowTemperature) {
  std::mt19937 rng(8);
  const int R = 4, N = 33;
  const auto x = random_row(rng, R * N, 3.0f);
  const std::vector<float> T = {1.0f, 0.25f, 4.0f, 0.5f};  // powers of two: x / T is exact
  for (bool keepdim : {false, true}) {
    std::vector<float> y(R * N, kNaN), lse(R, kNaN);
    SoftmaxOptions opt;
    opt.temperature_per_row = keepdim ? TensorView::of(T.data(), {R, 1}) : TensorView::of(T.data(), {R});
    GetParam().softmax(TensorView::of(y.data(), {R, N}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().logsumexp(TensorView::of(lse.data(), {R}), TensorView::of(x.data(), {R, N}), opt);
    for (int r = 0; r < R; ++r) {
      std::vector<long double> z;
      for (int i = 0; i < N; ++i) z.push_back(static_cast<long double>(x[r * N + i]) / T[r]);
      const auto p = exact_softmax(z);
      for (int i = 0; i < N; ++i) ASSERT_NEAR(y[r * N + i], p[i], (6 + std::log2(N)) * kU * p[i]) << r << "," << i;
      const long double le = exact_lse(z);
      EXPECT_NEAR(lse[r], le, (std::fabs(le) + std::log2(N) + 3) * kU);
    }
  }
  // Reduction over dim 1 of [2, N, 3]: the temperature tensor has shape [2, 3].
  const int A = 2, B = 3;
  const auto x3 = random_row(rng, A * N * B, 2.0f);
  const std::vector<float> T3 = {1, 2, 4, 0.5f, 0.25f, 8};
  std::vector<float> y3(A * N * B, kNaN);
  SoftmaxOptions opt{.dim = 1};
  opt.temperature_per_row = TensorView::of(T3.data(), {A, B});
  GetParam().softmax(TensorView::of(y3.data(), {A, N, B}), TensorView::of(x3.data(), {A, N, B}), opt);
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b) {
      std::vector<long double> z;
      for (int i = 0; i < N; ++i) z.push_back(static_cast<long double>(x3[(a * N + i) * B + b]) / T3[a * B + b]);
      const auto p = exact_softmax(z);
      for (int i = 0; i < N; ++i) ASSERT_NEAR(y3[(a * N + i) * B + b], p[i], (6 + std::log2(N)) * kU * p[i]);
    }
}

void expect_invalid(const std::function<void()>& call, const char* arg) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error naming " << arg;
  } catch (const smk::Error& e) {
    EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(arg), std::string::npos) << e.what();
  }
}

TEST_P(CpuSoftmaxOptions, InvalidTemperaturesAreRejectedBeforeWriting) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  std::vector<float> y(6, 7.0f);
  for (float T : {0.0f, -1.0f, kNaN, kInf, -kInf}) {
    expect_invalid([&] { GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}),
                                            {.temperature = T}); },
                   "'options.temperature'");
  }
  for (float bad : {0.0f, -2.0f, kNaN, kInf}) {
    const std::vector<float> T = {1.0f, bad};
    SoftmaxOptions opt;
    opt.temperature_per_row = TensorView::of(T.data(), {2});
    expect_invalid([&] { GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}), opt); },
                   "'options.temperature_per_row'");
    expect_invalid([&] { GetParam().softmax_backward(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}),
                                                     TensorView::of(x.data(), {2, 3}), opt); },
                   "'options.temperature_per_row'");
  }
  for (float v : y) EXPECT_EQ(v, 7.0f) << "written despite the error";
  const std::vector<float> T = {1.0f, 2.0f, 3.0f};
  SoftmaxOptions opt;
  opt.temperature_per_row = TensorView::of(T.data(), {3});  // wrong shape
  expect_invalid([&] { GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}), opt); },
                 "'options.temperature_per_row'");
  opt.temperature_per_row = TensorView::of(T.data(), {2});
  opt.temperature = 2.0f;  // both given
  expect_invalid([&] { GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}), opt); },
                 "'options.temperature'");
}

// Additive masks in f32 and in the input dtype, broadcast over rows ([1, N]) and over positions ([R, 1]),
// including a zero-stride expanded view. Scores are multiples of 2^-8 below 2^10 and mask values small integers,
// so x + mask is exact and the gates are the plain ones.
TEST_P(CpuSoftmaxOptions, AdditiveMaskBroadcast) {
  std::mt19937 rng(9);
  const int R = 3, N = 40;
  std::vector<float> x(R * N);
  std::uniform_int_distribution<int> q(-2000, 2000);
  for (auto& v : x) v = q(rng) / 256.0f;
  std::vector<float> col(N), rowm(R);
  for (int i = 0; i < N; ++i) col[i] = (i % 5 == 0) ? -kInf : static_cast<float>(i % 3);
  for (int r = 0; r < R; ++r) rowm[r] = static_cast<float>(r);  // a per-row constant: no effect on softmax
  struct MaskCase {
    const char* name;
    TensorView mask;
    std::function<float(int, int)> value;
  };
  const std::vector<MaskCase> cases = {
      {"[1, N]", TensorView::of(col.data(), {1, N}), [&](int, int i) { return col[i]; }},
      {"[R, N] with stride 0 over rows",
       TensorView::strided(col.data(), DType::f32, smk::Device::cpu(), {R, N}, {0, 1}),
       [&](int, int i) { return col[i]; }},
      {"[R, 1]", TensorView::of(rowm.data(), {R, 1}), [&](int r, int) { return rowm[r]; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<float> y(R * N, kNaN), ly(R * N, kNaN), lse(R, kNaN);
    SoftmaxOptions opt;
    opt.mask = c.mask;
    GetParam().softmax(TensorView::of(y.data(), {R, N}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().log_softmax(TensorView::of(ly.data(), {R, N}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().logsumexp(TensorView::of(lse.data(), {R}), TensorView::of(x.data(), {R, N}), opt);
    for (int r = 0; r < R; ++r) {
      std::vector<long double> z;
      for (int i = 0; i < N; ++i) z.push_back(static_cast<long double>(x[r * N + i]) + c.value(r, i));
      const auto p = exact_softmax(z);
      const long double le = exact_lse(z);
      for (int i = 0; i < N; ++i) {
        if (z[i] == -INFINITY) {
          EXPECT_EQ(y[r * N + i], 0.0f);
          EXPECT_EQ(ly[r * N + i], -kInf);
          continue;
        }
        ASSERT_NEAR(y[r * N + i], p[i], (6 + std::log2(N)) * kU * p[i]);
        ASSERT_NEAR(ly[r * N + i], z[i] - le, (std::fabs(z[i] - le) + std::log2(N) + 3) * kU);
      }
      EXPECT_NEAR(lse[r], le, (std::fabs(le) + std::log2(N) + 3) * kU);
    }
  }
  // A bf16 input with a bf16 mask (in-dtype additive mask) and bf16 output: within one bf16 ulp of the exact value.
  std::vector<smk::bfloat16_t> xb(N), mb(N), yb(N);
  for (int i = 0; i < N; ++i) {
    xb[i] = smk::to_bfloat16(x[i]);
    mb[i] = smk::to_bfloat16(i % 4 == 0 ? -kInf : 1.0f);
  }
  SoftmaxOptions opt;
  opt.mask = TensorView::of(mb.data(), {N});
  GetParam().softmax(TensorView::of(yb.data(), {N}), TensorView::of(xb.data(), {N}), opt);
  std::vector<long double> z;
  for (int i = 0; i < N; ++i) z.push_back(static_cast<long double>(smk::to_float(xb[i])) + smk::to_float(mb[i]));
  const auto p = exact_softmax(z);
  for (int i = 0; i < N; ++i) {
    const float want = smk::to_float(smk::to_bfloat16(static_cast<double>(p[i])));
    const float got = smk::to_float(yb[i]);
    const float ulp = std::ldexp(1.0f, std::ilogb(want == 0 ? 1e-38f : want) - 7);
    EXPECT_LE(std::fabs(got - want), ulp) << i;
  }
}

// Boolean masks: true keeps, false removes. A fully masked row is an empty row: NaN or zeros by policy, LSE −inf,
// state (−inf, 0).
TEST_P(CpuSoftmaxOptions, BooleanMaskAndFullyMaskedRows) {
  const int R = 3, N = 4;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<unsigned char> keep = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};  // row 1 fully masked
  for (auto policy : {smk::EmptyRowPolicy::nan, smk::EmptyRowPolicy::zeros}) {
    SoftmaxOptions opt{.empty_rows = policy};
    opt.mask = TensorView::contiguous(const_cast<unsigned char*>(keep.data()), DType::b8, smk::Device::cpu(), {R, N});
    std::vector<float> y(R * N, 7.0f), ly(R * N, 7.0f), lse(R, 7.0f), m(R, 7.0f), l(R, 7.0f);
    GetParam().softmax(TensorView::of(y.data(), {R, N}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().log_softmax(TensorView::of(ly.data(), {R, N}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().logsumexp(TensorView::of(lse.data(), {R}), TensorView::of(x.data(), {R, N}), opt);
    GetParam().state(TensorView::of(m.data(), {R}), TensorView::of(l.data(), {R}), TensorView::of(x.data(), {R, N}),
                     opt);
    const auto p0 = exact_softmax({1, 3, 4});
    EXPECT_NEAR(y[0], p0[0], 4 * kU);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_NEAR(y[2], p0[1], 4 * kU);
    EXPECT_NEAR(y[3], p0[2], 4 * kU);
    EXPECT_EQ(ly[1], -kInf);
    for (int i = 4; i < 8; ++i) {
      if (policy == smk::EmptyRowPolicy::nan) {
        EXPECT_TRUE(std::isnan(y[i]));
        EXPECT_TRUE(std::isnan(ly[i]));
      } else {
        EXPECT_EQ(y[i], 0.0f);
        EXPECT_EQ(ly[i], 0.0f);
      }
    }
    EXPECT_EQ(lse[1], -kInf);
    EXPECT_EQ(m[1], -kInf);
    EXPECT_EQ(l[1], 0.0f);
    const long double le = exact_lse({9, 10, 11, 12});
    EXPECT_NEAR(lse[2], le, (std::fabs(le) + 5) * kU);
  }
}

TEST_P(CpuSoftmaxOptions, BadMasksAreRejected) {
  const std::vector<float> x(6, 1.0f);
  std::vector<float> y(6, 7.0f), mk(6, 0.0f);
  const std::vector<std::int32_t> imask(6, 0);
  auto call = [&](const TensorView& mask) {
    SoftmaxOptions opt;
    opt.mask = mask;
    GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}), opt);
  };
  expect_invalid([&] { call(TensorView::of(mk.data(), {3})); }, "'options.mask'");        // rank
  expect_invalid([&] { call(TensorView::of(mk.data(), {2, 2})); }, "'options.mask'");     // size
  expect_invalid([&] { call(TensorView::contiguous(const_cast<std::int32_t*>(imask.data()), DType::i32,
                                                   smk::Device::cpu(), {2, 3})); },
                 "'options.mask'");                                                        // dtype
  expect_invalid([&] {
    SoftmaxOptions opt;
    opt.mask = TensorView::of(y.data(), {2, 3});
    GetParam().softmax(TensorView::of(y.data(), {2, 3}), TensorView::of(x.data(), {2, 3}), opt);
  }, "'out'");                                                                              // out overlaps mask
  for (float v : y) EXPECT_EQ(v, 7.0f);
}

// The state (m, l): m the max, l = Σ exp(z − m), in the four regimes; states of two halves merge into the whole's.
// A dominant score: its log-probability −log l and the LSE of a row with max 0 are tiny, and the excess state keeps
// them to a few ulps of themselves (not to an absolute u). Closed form: 0 at one position, −t elsewhere, so
// log l = log1p((n − 1)·e^−t) in long double; bound (L + 12)·u relative (docs/semantics.md §6). Ties of the max:
// [0, 0, −t, ...] gives log l = log(2 + (n − 2)·e^−t), and l must count both.
TEST_P(CpuSoftmaxOptions, DominantScoreKeepsItsRelativePrecision) {
  for (int n : {7, 1000, 33000}) {
    int L = 0;
    while ((1 << L) < n) ++L;
    for (float t : {12.0f, 25.0f, 40.0f}) {
      for (int at : {0, n / 2, n - 1}) {
        std::vector<float> x(n, -t), ly(n), lse(1);
        x[at] = 0.0f;
        GetParam().log_softmax(TensorView::of(ly.data(), {n}), TensorView::of(x.data(), {n}), {});
        GetParam().logsumexp(TensorView::of(lse.data(), {}), TensorView::of(x.data(), {n}), {});
        const long double exact = std::log1p(static_cast<long double>(n - 1) * std::exp(-static_cast<long double>(t)));
        const double bound = (L + 12) * kU;
        EXPECT_LE(std::fabs(-ly[at] - exact) / exact, bound) << n << " " << t << " " << at;
        EXPECT_LE(std::fabs(lse[0] - exact) / exact, bound) << n << " " << t << " " << at;
      }
      std::vector<float> x(n, -t), m(1), l(1);
      x[0] = x[n - 1] = 0.0f;
      GetParam().state(TensorView::of(m.data(), {1}), TensorView::of(l.data(), {1}), TensorView::of(x.data(), {1, n}), {});
      const long double exact_l = 2 + static_cast<long double>(n - 2) * std::exp(-static_cast<long double>(t));
      EXPECT_EQ(m[0], 0.0f);
      EXPECT_LE(std::fabs(l[0] - exact_l) / exact_l, (L + 11) * kU) << n << " " << t;
    }
  }
}

TEST_P(CpuSoftmaxOptions, StateIsMaxAndShiftedSum) {
  std::mt19937 rng(10);
  const int N = 1000;
  auto x = random_row(rng, 2 * N, 4.0f, -30.0f);
  x.insert(x.end(), {-kInf, -kInf, 1.0f, kInf, 1.0f, kNaN});
  // rows: [0, N), [N, 2N) random; then 3 rows of 2 appended below as a separate call
  std::vector<float> m(2), l(2);
  GetParam().state(TensorView::of(m.data(), {2}), TensorView::of(l.data(), {2}), TensorView::of(x.data(), {2, N}), {});
  smk::OnlineSoftmaxState<double> merged = smk::OnlineSoftmaxState<double>::empty();
  for (int r = 0; r < 2; ++r) {
    long double mx = -INFINITY, sum = 0;
    for (int i = 0; i < N; ++i) mx = std::max<long double>(mx, x[r * N + i]);
    for (int i = 0; i < N; ++i) sum += std::exp(static_cast<long double>(x[r * N + i]) - mx);
    EXPECT_EQ(m[r], static_cast<float>(mx));
    EXPECT_NEAR(l[r], sum, (std::log2(N) + 3) * kU * sum);
    merged.merge(smk::OnlineSoftmaxState<double>::from_max_and_sum(m[r], l[r]));
  }
  std::vector<long double> all(x.begin(), x.begin() + 2 * N);
  EXPECT_NEAR(merged.lse(), exact_lse(all), (std::fabs(merged.lse()) + 16) * kU);
  std::vector<float> m3(3), l3(3);
  GetParam().state(TensorView::of(m3.data(), {3}), TensorView::of(l3.data(), {3}),
                   TensorView::of(x.data() + 2 * N, {3, 2}), {});
  EXPECT_EQ(m3[0], -kInf);
  EXPECT_EQ(l3[0], 0.0f);
  EXPECT_EQ(m3[1], kInf);
  EXPECT_EQ(l3[1], kInf);
  EXPECT_TRUE(std::isnan(m3[2]) && std::isnan(l3[2]));
  // n = 0: the empty state.
  std::vector<float> m0(2, 7), l0(2, 7);
  GetParam().state(TensorView::of(m0.data(), {2}), TensorView::of(l0.data(), {2}), TensorView::of(x.data(), {2, 0}),
                   {});
  EXPECT_EQ(m0, (std::vector<float>{-kInf, -kInf}));
  EXPECT_EQ(l0, (std::vector<float>{0, 0}));
  // Output shape and dtype are checked under each output's name.
  expect_invalid([&] { GetParam().state(TensorView::of(m.data(), {2}), TensorView::of(l.data(), {3}),
                                        TensorView::of(x.data(), {2, N}), {}); },
                 "'out_sum'");
  expect_invalid([&] { GetParam().state(TensorView::of(m.data(), {2}), TensorView::of(m.data(), {2}),
                                        TensorView::of(x.data(), {2, N}), {}); },
                 "'out_sum'");
}

// Backward closed forms in long double, from y = softmax(x) (or log-softmax) rounded to f32, with the gate
// |dx − exact| ≤ (|y|·(2|dy − s| + (log2 n + 3)·Σ|dy·y|) + 2|dx|)·u (softmax) — the rounding of the products,
// the pairwise sum and the last two operations.
TEST_P(CpuSoftmaxOptions, BackwardMatchesClosedForms) {
  std::mt19937 rng(11);
  for (int n : {1, 3, 33, 1025}) {
    const auto x = random_row(rng, n, 3.0f);
    const auto dy = random_row(rng, n, 1.0f);
    std::vector<float> y(n), ly(n), dx(n), dlx(n);
    smk::cpu::reference::softmax(TensorView::of(y.data(), {n}), TensorView::of(x.data(), {n}));
    smk::cpu::reference::log_softmax(TensorView::of(ly.data(), {n}), TensorView::of(x.data(), {n}));
    for (float T : {1.0f, 0.5f}) {
      const SoftmaxOptions opt{.temperature = T};
      GetParam().softmax_backward(TensorView::of(dx.data(), {n}), TensorView::of(y.data(), {n}),
                                  TensorView::of(dy.data(), {n}), opt);
      GetParam().log_softmax_backward(TensorView::of(dlx.data(), {n}), TensorView::of(ly.data(), {n}),
                                      TensorView::of(dy.data(), {n}), opt);
      long double s = 0, sabs = 0, g = 0, gabs = 0;
      for (int i = 0; i < n; ++i) {
        s += static_cast<long double>(dy[i]) * y[i];
        sabs += std::fabs(static_cast<long double>(dy[i]) * y[i]);
        g += dy[i];
        gabs += std::fabs(dy[i]);
      }
      const double log2n = std::log2(double(n));
      for (int i = 0; i < n; ++i) {
        const long double want = y[i] * (dy[i] - s) / T;
        const double tol = (std::fabs(y[i]) * (2 * std::fabs(dy[i] - s) + (log2n + 3) * sabs) + 2 * std::fabs(want)) *
                           kU / T;
        ASSERT_NEAR(dx[i], want, tol) << "n=" << n << " i=" << i;
        const long double e = std::exp(static_cast<long double>(ly[i]));
        const long double lwant = (dy[i] - e * g) / T;
        const double ltol = (std::fabs(dy[i]) + e * ((log2n + 5) * gabs) + 2 * std::fabs(lwant)) * kU / T;
        ASSERT_NEAR(dlx[i], lwant, ltol) << "n=" << n << " i=" << i;
      }
    }
  }
}

// The formulas are the gradients: dx_j = ∂/∂x_j Σ_i dy_i · f(x / T)_i, by central differences of the double
// reference forward op on f64 tensors.
TEST_P(CpuSoftmaxOptions, BackwardIsTheGradientOfTheForwardOp) {
  std::mt19937 rng(12);
  const int n = 9;
  std::normal_distribution<double> dist(0, 2);
  std::vector<double> x(n), dy(n), y(n), dx(n), fx(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : dy) v = dist(rng);
  for (bool log_form : {false, true}) {
    for (float T : {1.0f, 2.5f}) {
      const SoftmaxOptions opt{.temperature = T};
      auto fwd = [&](const std::vector<double>& in, std::vector<double>& out) {
        if (log_form) smk::cpu::reference::log_softmax(TensorView::of(out.data(), {n}), TensorView::of(in.data(), {n}), opt);
        else smk::cpu::reference::softmax(TensorView::of(out.data(), {n}), TensorView::of(in.data(), {n}), opt);
      };
      fwd(x, y);
      if (log_form) GetParam().log_softmax_backward(TensorView::of(dx.data(), {n}), TensorView::of(y.data(), {n}),
                                                    TensorView::of(dy.data(), {n}), opt);
      else GetParam().softmax_backward(TensorView::of(dx.data(), {n}), TensorView::of(y.data(), {n}),
                                       TensorView::of(dy.data(), {n}), opt);
      for (int j = 0; j < n; ++j) {
        const double h = 1e-5;
        auto xp = x, xm = x;
        xp[j] += h;
        xm[j] -= h;
        std::vector<double> fp(n), fm(n);
        fwd(xp, fp);
        fwd(xm, fm);
        double d = 0;
        for (int i = 0; i < n; ++i) d += dy[i] * (fp[i] - fm[i]) / (2 * h);
        EXPECT_NEAR(dx[j], d, 1e-7 * (1 + std::fabs(d))) << "log=" << log_form << " T=" << T << " j=" << j;
      }
    }
  }
}

// In place (dx aliasing dy), per-row temperature, f16 storage with f32 output, and a non-last dimension.
TEST_P(CpuSoftmaxOptions, BackwardLayoutsAndDtypes) {
  const int R = 2, N = 3;
  const std::vector<float> y = {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f};
  const std::vector<float> dy0 = {1, -2, 0.5f, 3, 0, -1};
  const std::vector<float> T = {1.0f, 2.0f};
  auto want = [&](int r, int i) {
    long double s = 0;
    for (int j = 0; j < N; ++j) s += static_cast<long double>(dy0[r * N + j]) * y[r * N + j];
    return y[r * N + i] * (dy0[r * N + i] - s) / T[r];
  };
  std::vector<float> dy = dy0;
  SoftmaxOptions opt;
  opt.temperature_per_row = TensorView::of(T.data(), {R});
  GetParam().softmax_backward(TensorView::of(dy.data(), {R, N}), TensorView::of(y.data(), {R, N}),
                              TensorView::of(dy.data(), {R, N}), opt);
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < N; ++i) EXPECT_NEAR(dy[r * N + i], want(r, i), 8 * kU);
  // f16 y and dy, f32 dx; reduce over dim 0 of the transposed [N, R] view.
  std::vector<smk::half_t> yh(R * N), dyh(R * N);
  for (int i = 0; i < R * N; ++i) {
    yh[i] = smk::to_half(y[i]);
    dyh[i] = smk::to_half(dy0[i]);
  }
  std::vector<float> dx(R * N, kNaN);
  const auto tv = [&](void* p, DType t) { return TensorView::strided(p, t, smk::Device::cpu(), {N, R}, {1, N}); };
  GetParam().softmax_backward(tv(dx.data(), DType::f32), tv(yh.data(), DType::f16), tv(dyh.data(), DType::f16),
                              {.dim = 0, .temperature = 1.0f});
  for (int r = 0; r < R; ++r) {
    long double s = 0;
    for (int j = 0; j < N; ++j) s += static_cast<long double>(smk::to_float(dyh[r * N + j])) * smk::to_float(yh[r * N + j]);
    for (int i = 0; i < N; ++i) {
      const long double w = smk::to_float(yh[r * N + i]) * (smk::to_float(dyh[r * N + i]) - s);
      EXPECT_NEAR(dx[r * N + i], w, 8 * kU);
    }
  }
  // Misuse: dy's shape, dy's dtype, dx's dtype.
  std::vector<float> out(6);
  expect_invalid([&] { GetParam().softmax_backward(TensorView::of(out.data(), {2, 3}), TensorView::of(y.data(), {2, 3}),
                                                   TensorView::of(dy0.data(), {3, 2}), {}); },
                 "'dy'");
  expect_invalid([&] {
    GetParam().softmax_backward(TensorView::of(out.data(), {2, 3}), TensorView::of(y.data(), {2, 3}),
                                TensorView::contiguous(dyh.data(), DType::f16, smk::Device::cpu(), {2, 3}), {});
  }, "'dy'");
  expect_invalid([&] {
    GetParam().log_softmax_backward(TensorView::contiguous(dyh.data(), DType::f16, smk::Device::cpu(), {2, 3}),
                                    TensorView::of(y.data(), {2, 3}), TensorView::of(dy0.data(), {2, 3}), {});
  }, "'dx'");
}

}  // namespace
