// Cross-entropy on the CPU: the article's example, every option against an independent long-double evaluation of
// the documented formula, gradients against central finite differences in float64, and the edge cases of the issue.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cross_entropy.hpp"

namespace {

using smk::CrossEntropyOptions;
using smk::DType;
using smk::Reduction;
using smk::TensorView;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The documented loss (softmaxkit/cross_entropy.hpp), evaluated directly in long double.
long double expected_loss(const std::vector<double>& x, std::int64_t n, std::int64_t c,
                          const std::vector<std::int64_t>& t, const CrossEntropyOptions& o,
                          const std::vector<double>& weights, std::vector<long double>* per_row = nullptr) {
  long double ce_sum = 0, z_sum = 0, wsum = 0, count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (t[i] == o.ignore_index) {
      if (per_row) per_row->push_back(0);
      continue;
    }
    std::vector<long double> z(c);
    long double m = -INFINITY, sum = 0;
    for (std::int64_t j = 0; j < c; ++j) {
      z[j] = x[i * c + j];
      if (o.softcap > 0) z[j] = o.softcap * std::tanh(z[j] / o.softcap);
      m = std::max(m, z[j]);
    }
    for (std::int64_t j = 0; j < c; ++j) sum += std::exp(z[j] - m);
    const long double lse = m + std::log(sum);
    const auto w = [&](std::int64_t j) { return weights.empty() ? 1.0L : static_cast<long double>(weights[j]); };
    long double smooth = 0;
    for (std::int64_t j = 0; j < c; ++j) smooth += w(j) * (lse - z[j]);
    const long double eps = o.label_smoothing;
    const long double ce = (1 - eps) * w(t[i]) * (lse - z[t[i]]) + eps / c * smooth;
    const long double zl = static_cast<long double>(o.z_loss) * lse * lse;
    if (per_row) per_row->push_back(ce + zl);
    ce_sum += ce;
    z_sum += zl;
    wsum += w(t[i]);
    count += 1;
  }
  if (o.reduction == Reduction::sum) return ce_sum + z_sum;
  if (count == 0) return o.mean_of_nothing_is_zero ? 0.0L : static_cast<long double>(kNaN);
  return ce_sum / wsum + z_sum / count;
}

double run_loss_f64(const std::vector<double>& x, std::int64_t n, std::int64_t c, const std::vector<std::int64_t>& t,
                    CrossEntropyOptions o, const std::vector<double>& weights) {
  if (!weights.empty()) o.class_weights = TensorView::of(weights.data(), {c});
  double loss = 7;
  smk::cpu::reference::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {n, c}),
                                     TensorView::of(t.data(), {n}), o);
  return loss;
}

// The article: logits [0, −120] with target 1 give a loss of exactly 120 and a gradient of [1, −1], where
// −log(softmax) gives inf and a NaN gradient.
TEST(CpuCrossEntropy, ArticleExampleIsExact) {
  const std::vector<float> x = {0.0f, -120.0f};
  const std::vector<std::int32_t> t = {1};
  for (auto* fwd : {&smk::cpu::cross_entropy, &smk::cpu::reference::cross_entropy}) {
    float loss = 0;
    fwd(TensorView::of(&loss, {}), TensorView::of(x.data(), {1, 2}), TensorView::of(t.data(), {1}), {}, {}, {});
    EXPECT_EQ(loss, 120.0f);
  }
  for (auto* bwd : {&smk::cpu::cross_entropy_backward, &smk::cpu::reference::cross_entropy_backward}) {
    std::vector<float> g(2, 7.0f);
    const float one = 1.0f;
    bwd(TensorView::of(g.data(), {1, 2}), TensorView::of(x.data(), {1, 2}), TensorView::of(t.data(), {1}),
        TensorView::of(&one, {}), {}, {});
    EXPECT_EQ(g[0], 1.0f);
    EXPECT_EQ(g[1], -1.0f);
  }
}

struct OptionCase {
  const char* name;
  CrossEntropyOptions options;
  bool weighted;
};

std::vector<OptionCase> option_cases() {
  std::vector<OptionCase> cases;
  for (Reduction r : {Reduction::none, Reduction::sum, Reduction::mean})
    for (float eps : {0.0f, 0.05f, 0.9f, 1.0f})
      for (bool weighted : {false, true}) {
        CrossEntropyOptions o;
        o.reduction = r;
        o.label_smoothing = eps;
        o.z_loss = weighted ? 1e-4f : 0.0f;
        o.softcap = eps == 0.05f ? 30.0f : 0.0f;
        o.ignore_index = eps == 0.9f ? 2 : -100;  // ignore_index equal to a valid class id
        cases.push_back({"case", o, weighted});
      }
  return cases;
}

TEST(CpuCrossEntropy, MatchesTheDocumentedFormulaForEveryOption) {
  const std::int64_t n = 9, c = 7;
  std::mt19937 rng(17);
  std::normal_distribution<double> dist(0, 4);
  std::vector<double> x(n * c);
  for (auto& v : x) v = static_cast<float>(dist(rng));  // float-representable, for the f32 path too
  const std::vector<std::int64_t> t0 = {0, 6, -100, 3, 2, 2, 5, 1, 4};
  std::vector<double> weights(c);
  for (auto& w : weights) w = static_cast<float>(0.25 + std::fabs(dist(rng)));
  const std::vector<float> xf(x.begin(), x.end());
  const std::vector<float> wf(weights.begin(), weights.end());
  for (const OptionCase& oc : option_cases()) {
    CrossEntropyOptions o = oc.options;
    SCOPED_TRACE(testing::Message() << "reduction=" << int(o.reduction) << " eps=" << o.label_smoothing
                                    << " weighted=" << oc.weighted << " softcap=" << o.softcap);
    std::vector<std::int64_t> t = t0;  // the ignored row carries this case's ignore_index
    t[2] = o.ignore_index;
    const std::vector<double> w = oc.weighted ? weights : std::vector<double>{};
    std::vector<long double> rows;
    const long double want = expected_loss(x, n, c, t, o, w, &rows);
    if (o.reduction == Reduction::none) {
      std::vector<double> got(n, 7), got_z(n, 7);
      CrossEntropyOptions od = o;
      if (oc.weighted) od.class_weights = TensorView::of(weights.data(), {c});
      smk::cpu::reference::cross_entropy(TensorView::of(got.data(), {n}), TensorView::of(x.data(), {n, c}),
                                         TensorView::of(t.data(), {n}), od, {}, TensorView::of(got_z.data(), {n}));
      std::vector<float> gotf(n, 7);
      CrossEntropyOptions of = o;
      if (oc.weighted) of.class_weights = TensorView::of(wf.data(), {c});
      smk::cpu::cross_entropy(TensorView::of(gotf.data(), {n}), TensorView::of(xf.data(), {n, c}),
                              TensorView::of(t.data(), {n}), of);
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(got[i], static_cast<double>(rows[i]), 1e-12 * (1 + std::fabs(static_cast<double>(rows[i]))));
        EXPECT_NEAR(gotf[i], static_cast<double>(rows[i]), 3e-6 * (1 + std::fabs(static_cast<double>(rows[i]))));
        if (t[i] == o.ignore_index) EXPECT_EQ(got_z[i], 0.0);
      }
    } else {
      const double got = run_loss_f64(x, n, c, t, o, w);
      EXPECT_NEAR(got, static_cast<double>(want), 1e-12 * (1 + std::fabs(static_cast<double>(want))));
    }
  }
}

// ∂loss/∂x against central differences of the float64 reference loss, for every option combination.
TEST(CpuCrossEntropy, GradientMatchesFiniteDifferences) {
  const std::int64_t n = 4, c = 5;
  std::mt19937 rng(23);
  std::normal_distribution<double> dist(0, 2);
  std::vector<double> x(n * c), weights(c);
  for (auto& v : x) v = dist(rng);
  for (auto& w : weights) w = 0.5 + std::fabs(dist(rng));
  const std::vector<std::int64_t> t = {1, -100, 4, 0};
  for (const OptionCase& oc : option_cases()) {
    CrossEntropyOptions o = oc.options;
    if (o.ignore_index == 2) o.ignore_index = -100;
    SCOPED_TRACE(testing::Message() << "reduction=" << int(o.reduction) << " eps=" << o.label_smoothing
                                    << " weighted=" << oc.weighted << " softcap=" << o.softcap);
    const std::vector<double> w = oc.weighted ? weights : std::vector<double>{};
    CrossEntropyOptions ow = o;
    if (oc.weighted) ow.class_weights = TensorView::of(weights.data(), {c});
    // Upstream gradient: 1.7 for a reduced loss; per-row values for none (the loss is then Σ g_i loss_i).
    const std::vector<double> g_rows = {0.5, -2.0, 1.25, 3.0};
    const double g_scalar = 1.7;
    const auto scalar_loss = [&](const std::vector<double>& xs) {
      if (o.reduction != Reduction::none) return g_scalar * run_loss_f64(xs, n, c, t, o, w);
      std::vector<double> rows(n);
      smk::cpu::reference::cross_entropy(TensorView::of(rows.data(), {n}), TensorView::of(xs.data(), {n, c}),
                                         TensorView::of(t.data(), {n}), ow);
      double s = 0;
      for (std::int64_t i = 0; i < n; ++i) s += g_rows[i] * rows[i];
      return s;
    };
    std::vector<double> grad(n * c, kNaN);
    const TensorView gl = o.reduction == Reduction::none ? TensorView::of(g_rows.data(), {n})
                                                          : TensorView::of(&g_scalar, {});
    smk::cpu::reference::cross_entropy_backward(TensorView::of(grad.data(), {n, c}), TensorView::of(x.data(), {n, c}),
                                                TensorView::of(t.data(), {n}), gl, ow);
    for (std::int64_t k = 0; k < n * c; ++k) {
      const double h = 1e-5;
      auto xp = x, xm = x;
      xp[k] += h;
      xm[k] -= h;
      const double fd = (scalar_loss(xp) - scalar_loss(xm)) / (2 * h);
      EXPECT_NEAR(grad[k], fd, 1e-7 * (1 + std::fabs(fd))) << "element " << k;
    }
  }
}

TEST(CpuCrossEntropy, IgnoredRowsAndEmptyMeans) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  for (std::int64_t ignore : {std::int64_t{-100}, std::int64_t{-7}}) {
    const std::vector<std::int64_t> t = {ignore, ignore};
    CrossEntropyOptions o;
    o.ignore_index = ignore;
    float loss = 0;
    smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {2, 3}), TensorView::of(t.data(), {2}), o);
    EXPECT_TRUE(std::isnan(loss)) << "mean over no rows is 0/0, as in PyTorch";
    o.mean_of_nothing_is_zero = true;
    smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {2, 3}), TensorView::of(t.data(), {2}), o);
    EXPECT_EQ(loss, 0.0f);
    o.mean_of_nothing_is_zero = false;
    o.reduction = Reduction::sum;
    smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {2, 3}), TensorView::of(t.data(), {2}), o);
    EXPECT_EQ(loss, 0.0f);
    std::vector<float> g(6, 7.0f);
    const float one = 1;
    o.reduction = Reduction::mean;
    o.mean_of_nothing_is_zero = true;
    smk::cpu::cross_entropy_backward(TensorView::of(g.data(), {2, 3}), TensorView::of(x.data(), {2, 3}),
                                     TensorView::of(t.data(), {2}), TensorView::of(&one, {}), o);
    for (float v : g) EXPECT_EQ(v, 0.0f);
  }
}

TEST(CpuCrossEntropy, OutOfRangeTargetsAreErrorsAndWriteNothing) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  for (std::int64_t bad : {std::int64_t{3}, std::int64_t{-1}, std::int64_t{-101}}) {
    const std::vector<std::int64_t> t = {0, bad};
    float loss[2] = {7, 7};
    CrossEntropyOptions o;
    o.reduction = Reduction::none;
    try {
      smk::cpu::cross_entropy(TensorView::of(loss, {2}), TensorView::of(x.data(), {2, 3}), TensorView::of(t.data(), {2}), o);
      FAIL() << "target " << bad << " accepted";
    } catch (const smk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("targets[1] = " + std::to_string(bad)), std::string::npos) << e.what();
    }
    EXPECT_EQ(loss[0], 7.0f);
    EXPECT_EQ(loss[1], 7.0f);
  }
}

TEST(CpuCrossEntropy, BadOptionsAreRejected) {
  const std::vector<float> x = {1, 2, 3};
  const std::vector<std::int32_t> t = {0};
  float loss = 7;
  for (float eps : {-0.1f, 1.01f, std::numeric_limits<float>::quiet_NaN()}) {
    CrossEntropyOptions o;
    o.label_smoothing = eps;
    try {
      smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {1, 3}), TensorView::of(t.data(), {1}), o);
      FAIL();
    } catch (const smk::Error& e) {
      EXPECT_NE(std::string(e.what()).find("'options.label_smoothing'"), std::string::npos) << e.what();
    }
  }
  CrossEntropyOptions o;
  o.z_loss = -1;
  EXPECT_THROW(smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {1, 3}),
                                       TensorView::of(t.data(), {1}), o),
               smk::Error);
  const std::vector<float> negative_weights = {1, -1, 1};
  CrossEntropyOptions ow;
  ow.class_weights = TensorView::of(negative_weights.data(), {3});
  EXPECT_THROW(smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {1, 3}),
                                       TensorView::of(t.data(), {1}), ow),
               smk::Error);
  EXPECT_EQ(loss, 7.0f);
}

// Errors the CPU finds while running (a bad class weight, a bad target) name the op that was called (found by
// tests/fuzz/fuzz_cross_entropy.cpp: the weight check named "cross_entropy" from the backward, and the CPU's
// forward_backward named "cpu::cross_entropy"), and write nothing.
TEST(CpuCrossEntropy, RunTimeErrorsNameTheOpCalled) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<std::int64_t> good = {0, 2}, bad = {0, 3};
  const std::vector<float> ok_weights = {1, 1, 1}, bad_weights = {1, std::numeric_limits<float>::quiet_NaN(), 1};
  float loss = 7, grad_loss = 1, grad[6] = {7, 7, 7, 7, 7, 7};
  const TensorView logits = TensorView::of(x.data(), {2, 3}), l = TensorView::of(&loss, {}),
                   gl = TensorView::of(&grad_loss, {}), g = TensorView::of(grad, {2, 3});
  for (const bool weight_fault : {true, false}) {
    CrossEntropyOptions o;
    o.class_weights = TensorView::of((weight_fault ? bad_weights : ok_weights).data(), {3});
    const TensorView t = TensorView::of((weight_fault ? good : bad).data(), {2});
    const std::string arg = weight_fault ? "argument 'options.class_weights'" : "argument 'targets'";
    auto expect_error = [&](const std::string& op, auto&& call) {
      try {
        call();
        ADD_FAILURE() << op << " accepted the bad " << arg;
      } catch (const smk::Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(op + ": " + arg, 0), 0u) << msg;
        EXPECT_EQ(e.code(), smk::ErrorCode::invalid_argument) << msg;
      }
    };
    expect_error("cross_entropy", [&] { smk::cross_entropy(l, logits, t, o); });
    expect_error("cross_entropy_backward", [&] { smk::cross_entropy_backward(g, logits, t, gl, o); });
    expect_error("cross_entropy_forward_backward", [&] { smk::cross_entropy_forward_backward(l, g, logits, t, o); });
    expect_error("cpu::cross_entropy_backward", [&] { smk::cpu::cross_entropy_backward(g, logits, t, gl, o); });
    expect_error("cpu::reference::cross_entropy_backward",
                 [&] { smk::cpu::reference::cross_entropy_backward(g, logits, t, gl, o); });
    EXPECT_EQ(loss, 7.0f);
    for (float v : grad) EXPECT_EQ(v, 7.0f);
  }
}

// N rows of C = 0 classes (every target ignored) with null logits and gradient, as empty tensors may be: the loss is
// 0 (or the mean's 0/0), the LSE −inf (an empty sum), nothing else is touched. The CPU formed each row's pointer
// from the null base (null + offset, undefined behaviour that UBSan reports; found by fuzz_cross_entropy).
TEST(CpuCrossEntropy, EmptyRowsWithNullLogits) {
  const std::vector<std::int64_t> t = {-100, -100, -100};
  const TensorView logits = TensorView::strided(nullptr, DType::f32, smk::Device::cpu(), {3, 0}, {5, 1});
  const TensorView grad = TensorView::strided(nullptr, DType::f32, smk::Device::cpu(), {3, 0}, {7, 1});
  float loss[3] = {7, 7, 7}, lse[3] = {7, 7, 7}, grad_loss[3] = {1, 1, 1};
  CrossEntropyOptions o;
  o.reduction = Reduction::none;
  smk::cross_entropy(TensorView::of(loss, {3}), logits, TensorView::of(t.data(), {3}), o, TensorView::of(lse, {3}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(loss[i], 0.0f);
    EXPECT_EQ(lse[i], -std::numeric_limits<float>::infinity());
  }
  smk::cpu::reference::cross_entropy_backward(grad, logits, TensorView::of(t.data(), {3}), TensorView::of(grad_loss, {3}), o);
  std::fill(loss, loss + 3, 7.0f);
  smk::cross_entropy_forward_backward(TensorView::of(loss, {3}), grad, logits, TensorView::of(t.data(), {3}), o);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loss[i], 0.0f);
}

// bf16 logits with one dominant class: 1 − p_t ≈ (C − 1)e^−20 ≈ 4e-7 must survive into the bf16 gradient (formed
// as expm1 in f32; p_t − 1 in f32 would round p_t to 1 and give 0).
TEST(CpuCrossEntropy, DominantLogitGradientKeepsItsDigitsInBf16) {
  const std::int64_t c = 200;
  std::vector<smk::bfloat16_t> x(c, smk::to_bfloat16(0.0f));
  x[5] = smk::to_bfloat16(20.0f);
  const std::vector<std::int32_t> t = {5};
  std::vector<smk::bfloat16_t> g(c);
  const float one = 1;
  smk::cpu::cross_entropy_backward(TensorView::of(g.data(), {1, c}), TensorView::of(x.data(), {1, c}),
                                   TensorView::of(t.data(), {1}), TensorView::of(&one, {}));
  const long double rest = (c - 1) * std::exp(-20.0L);
  const double want_target = static_cast<double>(-rest / (1 + rest));
  const double want_other = static_cast<double>(std::exp(-20.0L) / (1 + rest));
  EXPECT_EQ(g[5].bits, smk::to_bfloat16(want_target).bits);
  EXPECT_EQ(g[0].bits, smk::to_bfloat16(want_other).bits);
}

// The same dominant row forward: loss = −log p_t = log1p((C − 1)e^−20) ≈ 4.1e-7, which a rounded LSE (20 + 4e-7
// in f32, spacing 1.9e-6) minus 20 would return as 0 or 1.9e-6.
TEST(CpuCrossEntropy, DominantLogitLossKeepsItsDigits) {
  const std::int64_t c = 200;
  std::vector<float> x(c, 0.0f);
  x[5] = 20.0f;
  const std::vector<std::int32_t> t = {5};
  float loss = 0, lse = 0;
  smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {1, c}), TensorView::of(t.data(), {1}),
                          {}, TensorView::of(&lse, {1}));
  const long double want = std::log1p((c - 1) * std::exp(-20.0L));
  EXPECT_NEAR(loss, static_cast<double>(want), 4 * 5.96e-8 * static_cast<double>(want));
  EXPECT_NEAR(lse, 20.0 + static_cast<double>(want), 2 * 5.96e-8 * 20);
}

TEST(CpuCrossEntropy, InPlaceGradientEqualsOutOfPlace) {
  const std::int64_t n = 3, c = 6;
  std::vector<float> x(n * c);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0, 3);
  for (auto& v : x) v = dist(rng);
  const std::vector<std::int64_t> t = {2, 5, 0};
  CrossEntropyOptions o;
  o.label_smoothing = 0.1f;
  o.z_loss = 1e-4f;
  o.softcap = 5.0f;
  std::vector<float> lse(n);
  float loss;
  smk::cpu::cross_entropy(TensorView::of(&loss, {}), TensorView::of(x.data(), {n, c}), TensorView::of(t.data(), {n}),
                          o, TensorView::of(lse.data(), {n}));
  std::vector<float> g(n * c), inplace = x;
  const float one = 1;
  smk::cpu::cross_entropy_backward(TensorView::of(g.data(), {n, c}), TensorView::of(x.data(), {n, c}),
                                   TensorView::of(t.data(), {n}), TensorView::of(&one, {}), o,
                                   TensorView::of(lse.data(), {n}));
  smk::cpu::cross_entropy_backward(TensorView::of(inplace.data(), {n, c}), TensorView::of(inplace.data(), {n, c}),
                                   TensorView::of(t.data(), {n}), TensorView::of(&one, {}), o);
  for (std::int64_t k = 0; k < n * c; ++k) EXPECT_NEAR(inplace[k], g[k], 1e-7f + 1e-6f * std::fabs(g[k]));
}

}  // namespace

// smk::cross_entropy_forward_backward on the CPU (the composition the GPU's fused kernel is judged by): f64 logits,
// in place, the upstream gradient left out (1) or given; the loss against the long-double formula, the gradient
// against central differences of it, and the new call's argument errors.
TEST(CpuCrossEntropy, ForwardBackwardInOneCall) {
  const std::int64_t n = 3, c = 6;
  std::mt19937 rng(31);
  std::normal_distribution<double> dist(0, 2);
  std::vector<double> x0(n * c);
  for (auto& v : x0) v = dist(rng);
  const std::vector<std::int64_t> t = {2, -100, 5};
  for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none})
    for (bool given : {false, true}) {
      CrossEntropyOptions o;
      o.reduction = red;
      o.label_smoothing = 0.1f;
      o.z_loss = 1e-2f;
      SCOPED_TRACE(testing::Message() << "reduction=" << int(red) << " grad_loss given=" << given);
      const std::vector<double> g_rows = {0.5, -2.0, 1.25};
      const double g_scalar = given ? -1.5 : 1.0;
      std::vector<double> x = x0, loss(red == Reduction::none ? n : 1, kNaN), lse(n, kNaN);
      const TensorView lv = red == Reduction::none ? TensorView::of(loss.data(), {n}) : TensorView::of(loss.data(), {});
      const TensorView glv = !given ? TensorView{}
                             : red == Reduction::none ? TensorView::of(g_rows.data(), {n})
                                                      : TensorView::of(&g_scalar, {});
      const TensorView xv = TensorView::of(x.data(), {n, c});
      smk::cross_entropy_forward_backward(lv, xv, xv, TensorView::of(t.data(), {n}), o, glv,
                                          TensorView::of(lse.data(), {n}));
      std::vector<long double> rows;
      const long double want = expected_loss(x0, n, c, t, o, {}, &rows);
      if (red == Reduction::none) {
        for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(loss[i], static_cast<double>(rows[i]), 1e-12) << i;
      } else {
        EXPECT_NEAR(loss[0], static_cast<double>(want), 1e-12);
      }
      const auto scalar_loss = [&](const std::vector<double>& xs) {
        std::vector<long double> r;
        const long double total = expected_loss(xs, n, c, t, o, {}, &r);
        if (red != Reduction::none) return static_cast<double>(g_scalar * total);
        long double s = 0;
        for (std::int64_t i = 0; i < n; ++i) s += (given ? g_rows[i] : 1.0) * r[i];
        return static_cast<double>(s);
      };
      for (std::int64_t k = 0; k < n * c; ++k) {
        const double h = 1e-5;
        auto xp = x0, xm = x0;
        xp[k] += h;
        xm[k] -= h;
        const double fd = (scalar_loss(xp) - scalar_loss(xm)) / (2 * h);
        EXPECT_NEAR(x[k], fd, 1e-7 * (1 + std::fabs(fd))) << "element " << k;
      }
    }
  // Argument errors name the new op and the argument.
  std::vector<float> xf(n * c, 0.0f), grad(n * c), loss1(1), gl_bad(2);
  const std::vector<std::int64_t> tt = {0, 1, 2};
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const smk::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string bad_gl = message([&] {
    smk::cross_entropy_forward_backward(TensorView::of(loss1.data(), {}), TensorView::of(grad.data(), {n, c}),
                                        TensorView::of(xf.data(), {n, c}), TensorView::of(tt.data(), {n}), {},
                                        TensorView::of(gl_bad.data(), {2}));
  });
  EXPECT_NE(bad_gl.find("cross_entropy_forward_backward: argument 'grad_loss'"), std::string::npos) << bad_gl;
  const std::string bad_grad = message([&] {
    smk::cross_entropy_forward_backward(TensorView::of(loss1.data(), {}), TensorView::of(grad.data(), {c, n}),
                                        TensorView::of(xf.data(), {n, c}), TensorView::of(tt.data(), {n}));
  });
  EXPECT_NE(bad_grad.find("argument 'grad_logits'"), std::string::npos) << bad_grad;
  const std::string overlap = message([&] {
    smk::cross_entropy_forward_backward(TensorView::of(grad.data(), {}), TensorView::of(grad.data(), {n, c}),
                                        TensorView::of(xf.data(), {n, c}), TensorView::of(tt.data(), {n}));
  });
  EXPECT_NE(overlap.find("'grad_logits'"), std::string::npos) << overlap;
}
