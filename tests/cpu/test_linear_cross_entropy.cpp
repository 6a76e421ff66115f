// Linear cross-entropy on the CPU (src/cpu/linear_cross_entropy.cpp): against the two-step definition (the logits
// H·Wᵀ + b materialised in long double, then the CPU cross-entropy forward and backward on them as whole
// [N, V] tensors, and the three products in long double), against central finite differences in float64, chunk
// sizes that do not divide N, every reduction and option, every row ignored, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cpu/linear_cross_entropy.hpp"
#include "softmaxkit/linear_cross_entropy.hpp"

namespace {

using smk::CrossEntropyOptions;
using smk::DType;
using smk::LinearCrossEntropyOptions;
using smk::Reduction;
using smk::TensorView;

struct Problem {
  std::int64_t n = 0, d = 0, v = 0;
  std::vector<double> h, w, b, cw;  // b, cw: empty when not used
  std::vector<std::int64_t> t;
  std::vector<double> grad_loss;  // [n] for none, [1] otherwise
  LinearCrossEntropyOptions opt;
};

Problem make_problem(std::int64_t n, std::int64_t d, std::int64_t v, unsigned seed, bool bias, bool weights,
                     std::int64_t ignored_every = 5) {
  Problem p;
  p.n = n;
  p.d = d;
  p.v = v;
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<std::int64_t> cls(0, v - 1);
  std::uniform_real_distribution<double> ud(0.25, 2.0);
  p.h.resize(n * d);
  p.w.resize(v * d);
  for (double& x : p.h) x = nd(rng);
  for (double& x : p.w) x = nd(rng) * 2.0 / std::sqrt(static_cast<double>(d));  // logits of spread ~2
  if (bias)
    for (std::int64_t j = 0; j < v; ++j) p.b.push_back(0.5 * nd(rng));
  if (weights)
    for (std::int64_t j = 0; j < v; ++j) p.cw.push_back(ud(rng));
  for (std::int64_t i = 0; i < n; ++i) p.t.push_back(ignored_every > 0 && i % ignored_every == 2 ? -100 : cls(rng));
  p.grad_loss = {1.0};
  return p;
}

struct Result {
  std::vector<double> loss, lse, dh, dw, db;
};

// Runs smk::linear_cross_entropy (f64 inputs, so the reference arithmetic) or the float path (f32 inputs).
Result run(Problem p, bool f32 = false) {
  CrossEntropyOptions& o = p.opt.ce;
  const bool per_row = o.reduction == Reduction::none;
  const std::int64_t n = p.n, d = p.d, v = p.v;
  Result r;
  r.loss.assign(per_row ? n : 1, std::numeric_limits<double>::quiet_NaN());
  r.lse.assign(n, 0);
  r.dh.assign(n * d, 0);
  r.dw.assign(v * d, 0);
  r.db.assign(v, 0);
  const auto vec = [](auto* data, std::initializer_list<std::int64_t> shape) { return TensorView::of(data, shape); };
  if (!f32) {
    TensorView cw = p.cw.empty() ? TensorView{} : vec(p.cw.data(), {v});
    o.class_weights = cw;
    p.opt.bias = p.b.empty() ? TensorView{} : vec(p.b.data(), {v});
    const TensorView loss = per_row ? vec(r.loss.data(), {n}) : vec(r.loss.data(), {});
    const TensorView gl = per_row ? vec(p.grad_loss.data(), {n}) : vec(p.grad_loss.data(), {});
    smk::linear_cross_entropy(loss, vec(r.lse.data(), {n}), vec(r.dh.data(), {n, d}), vec(r.dw.data(), {v, d}),
                              p.b.empty() ? TensorView{} : vec(r.db.data(), {v}), vec(p.h.data(), {n, d}),
                              vec(p.w.data(), {v, d}), vec(p.t.data(), {n}), gl, p.opt);
    return r;
  }
  const auto to_f = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  std::vector<float> h = to_f(p.h), w = to_f(p.w), b = to_f(p.b), cwf = to_f(p.cw), gl = to_f(p.grad_loss);
  std::vector<float> loss(r.loss.size()), lse(n), dh(n * d), dw(v * d), db(v);
  o.class_weights = cwf.empty() ? TensorView{} : vec(cwf.data(), {v});
  p.opt.bias = b.empty() ? TensorView{} : vec(b.data(), {v});
  smk::linear_cross_entropy(per_row ? vec(loss.data(), {n}) : vec(loss.data(), {}), vec(lse.data(), {n}),
                            vec(dh.data(), {n, d}), vec(dw.data(), {v, d}), b.empty() ? TensorView{} : vec(db.data(), {v}),
                            vec(h.data(), {n, d}), vec(w.data(), {v, d}), vec(p.t.data(), {n}),
                            per_row ? vec(gl.data(), {n}) : vec(gl.data(), {}), p.opt);
  const auto to_d = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
  return {to_d(loss), to_d(lse), to_d(dh), to_d(dw), to_d(db)};
}

// The two-step definition: logits in long double, then cross_entropy / cross_entropy_backward (CPU reference) on
// the whole [N, V] logits, then the products in long double.
Result two_step(Problem p) {
  const std::int64_t n = p.n, d = p.d, v = p.v;
  CrossEntropyOptions o = p.opt.ce;
  const bool per_row = o.reduction == Reduction::none;
  std::vector<double> x(n * v);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < v; ++j) {
      long double acc = p.b.empty() ? 0.0L : p.b[j];
      for (std::int64_t k = 0; k < d; ++k) acc += static_cast<long double>(p.h[i * d + k]) * p.w[j * d + k];
      x[i * v + j] = static_cast<double>(acc);
    }
  o.class_weights = p.cw.empty() ? TensorView{} : TensorView::of(p.cw.data(), {v});
  Result r;
  r.loss.assign(per_row ? n : 1, 0);
  r.lse.assign(n, 0);
  const TensorView xv = TensorView::of(x.data(), {n, v}), tv = TensorView::of(p.t.data(), {n});
  smk::cpu::reference::cross_entropy(per_row ? TensorView::of(r.loss.data(), {n}) : TensorView::of(r.loss.data(), {}),
                                     xv, tv, o, TensorView::of(r.lse.data(), {n}));
  std::vector<double> g(n * v);
  smk::cpu::reference::cross_entropy_backward(
      TensorView::of(g.data(), {n, v}), xv, tv,
      per_row ? TensorView::of(p.grad_loss.data(), {n}) : TensorView::of(p.grad_loss.data(), {}), o);
  r.dh.assign(n * d, 0);
  r.dw.assign(v * d, 0);
  r.db.assign(v, 0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < d; ++k) {
      long double acc = 0;
      for (std::int64_t j = 0; j < v; ++j) acc += static_cast<long double>(g[i * v + j]) * p.w[j * d + k];
      r.dh[i * d + k] = static_cast<double>(acc);
    }
  for (std::int64_t j = 0; j < v; ++j) {
    long double bsum = 0;
    for (std::int64_t i = 0; i < n; ++i) bsum += g[i * v + j];
    r.db[j] = static_cast<double>(bsum);
    for (std::int64_t k = 0; k < d; ++k) {
      long double acc = 0;
      for (std::int64_t i = 0; i < n; ++i) acc += static_cast<long double>(g[i * v + j]) * p.h[i * d + k];
      r.dw[j * d + k] = static_cast<double>(acc);
    }
  }
  return r;
}

// max |a − b| ≤ tol · max(1, max |b|), element by element (NaN only where both are NaN).
void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 1;
  for (double x : b)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << "[" << i << "] = " << a[i] << ", expected NaN";
      continue;
    }
    EXPECT_LE(std::abs(a[i] - b[i]), tol * scale) << what << "[" << i << "]: " << a[i] << " vs " << b[i];
  }
}

void expect_matches_two_step(const Problem& p, double tol, bool f32 = false) {
  const Result got = run(p, f32), want = two_step(p);
  expect_close(got.loss, want.loss, tol, "loss");
  expect_close(got.lse, want.lse, tol, "lse");
  expect_close(got.dh, want.dh, tol, "dH");
  expect_close(got.dw, want.dw, tol, "dW");
  if (!p.b.empty()) expect_close(got.db, want.db, tol, "db");
}

TEST(LinearCrossEntropyCpu, MatchesTwoStepDefinitionMean) {
  Problem p = make_problem(13, 7, 29, 1, false, false);
  p.opt.chunk_rows = 4;  // 13 rows: chunks of 4, 4, 4, 1
  expect_matches_two_step(p, 1e-12);
}

TEST(LinearCrossEntropyCpu, MatchesTwoStepEveryOption) {
  Problem p = make_problem(11, 6, 37, 2, true, true);
  p.opt.ce.label_smoothing = 0.1f;
  p.opt.ce.z_loss = 1e-2f;  // large enough that its gradient (scaled by the count, not Σ w_t) shows
  p.opt.ce.softcap = 3.0f;
  p.opt.chunk_rows = 3;
  p.grad_loss = {0.75};
  expect_matches_two_step(p, 1e-12);
}

TEST(LinearCrossEntropyCpu, MatchesTwoStepSumAndNone) {
  Problem p = make_problem(9, 5, 17, 3, true, false);
  p.opt.ce.reduction = Reduction::sum;
  p.opt.ce.z_loss = 1e-3f;
  p.opt.chunk_rows = 2;
  p.grad_loss = {-1.5};
  expect_matches_two_step(p, 1e-12);
  p.opt.ce.reduction = Reduction::none;
  p.grad_loss.clear();
  for (std::int64_t i = 0; i < p.n; ++i) p.grad_loss.push_back(0.1 * static_cast<double>(i) - 0.3);
  expect_matches_two_step(p, 1e-12);
}

TEST(LinearCrossEntropyCpu, CustomIgnoreIndexThatIsAClass) {
  Problem p = make_problem(10, 4, 12, 4, false, true, 0);
  p.opt.ce.ignore_index = 3;  // a valid class id: rows targeting 3 are ignored
  for (std::int64_t i = 0; i < p.n; i += 3) p.t[i] = 3;
  p.opt.chunk_rows = 4;
  expect_matches_two_step(p, 1e-12);
}

TEST(LinearCrossEntropyCpu, FloatPathWithinFloatTolerance) {
  Problem p = make_problem(21, 16, 70, 5, true, true);
  p.opt.ce.label_smoothing = 0.05f;
  p.opt.ce.z_loss = 1e-3f;
  p.opt.chunk_rows = 8;
  // f32 inputs are the same values (rounded from the double draws): compare against the two-step on those.
  Problem pf = p;
  for (auto* v : {&pf.h, &pf.w, &pf.b, &pf.cw})
    for (double& x : *v) x = static_cast<float>(x);
  // The float path's products sum d or N terms in f32 and its cross-entropy is the f32 CPU path: errors of a few
  // hundred u = 2^-24 relative to the largest magnitude of each output at these sizes; 1e-5 is ~170 u.
  expect_matches_two_step(pf, 1e-5, true);
}

TEST(LinearCrossEntropyCpu, ChunkSizeChangesNothingInFloat64) {
  Problem p = make_problem(17, 5, 23, 6, true, false);
  p.opt.ce.z_loss = 1e-3f;
  p.opt.chunk_rows = 17;
  const Result whole = run(p);
  for (std::int64_t c : {1, 2, 5, 16, 100}) {
    p.opt.chunk_rows = c;
    const Result r = run(p);
    expect_close(r.loss, whole.loss, 1e-13, "loss, chunk " + std::to_string(c));
    expect_close(r.dh, whole.dh, 1e-13, "dH, chunk " + std::to_string(c));
    expect_close(r.dw, whole.dw, 1e-13, "dW, chunk " + std::to_string(c));
    expect_close(r.db, whole.db, 1e-13, "db, chunk " + std::to_string(c));
  }
  p.opt.chunk_rows.reset();  // the default: one chunk here
  const Result r = run(p);
  expect_close(r.dw, whole.dw, 1e-13, "dW, default chunk");
}

// Central differences in float64 of the scalar loss with respect to H, W and b, every option on.
TEST(LinearCrossEntropyCpu, GradientsMatchFiniteDifferences) {
  Problem p = make_problem(6, 4, 9, 7, true, true);
  p.opt.ce.label_smoothing = 0.2f;
  p.opt.ce.z_loss = 1e-2f;
  p.opt.ce.softcap = 2.5f;
  p.opt.chunk_rows = 4;
  p.grad_loss = {1.0};
  const Result r = run(p);
  const double h = 1e-6;
  const auto loss_at = [&](std::vector<double>& param, std::size_t i, double delta) {
    const double saved = param[i];
    param[i] = saved + delta;
    const double l = run(p).loss[0];
    param[i] = saved;
    return l;
  };
  const auto check = [&](std::vector<double>& param, const std::vector<double>& grad, const char* name) {
    for (std::size_t i = 0; i < param.size(); ++i) {
      const double fd = (loss_at(param, i, h) - loss_at(param, i, -h)) / (2 * h);
      // Central difference: truncation O(h²·|f'''|) and rounding ~1e-16·|loss| / h: both below 1e-8 here.
      EXPECT_NEAR(grad[i], fd, 1e-7 * std::max(1.0, std::abs(fd))) << name << "[" << i << "]";
    }
  };
  check(p.h, r.dh, "dH");
  check(p.w, r.dw, "dW");
  check(p.b, r.db, "db");
}

TEST(LinearCrossEntropyCpu, EveryRowIgnored) {
  Problem p = make_problem(5, 3, 7, 8, true, false);
  for (auto& t : p.t) t = -100;
  p.opt.chunk_rows = 2;
  Result r = run(p);
  EXPECT_TRUE(std::isnan(r.loss[0]));  // 0/0, as PyTorch
  for (double x : r.dh) EXPECT_EQ(x, 0.0);
  for (double x : r.dw) EXPECT_EQ(x, 0.0);
  for (double x : r.db) EXPECT_EQ(x, 0.0);
  p.opt.ce.mean_of_nothing_is_zero = true;
  r = run(p);
  EXPECT_EQ(r.loss[0], 0.0);
}

TEST(LinearCrossEntropyCpu, NoRows) {
  Problem p = make_problem(0, 3, 7, 9, false, false);
  p.opt.ce.reduction = Reduction::sum;
  Result r = run(p);
  EXPECT_EQ(r.loss[0], 0.0);
  for (double x : r.dw) EXPECT_EQ(x, 0.0);
}

TEST(LinearCrossEntropyCpu, DefaultChunkRows) {
  // The split of 512 MiB: c rows of the dtype's gradient and c / 4 rows of f32 logits, c·V·(sizeof + 1) bytes, c the
  // largest power of two that fits. bf16: 2^29 / (151936 · 3) = 1177.9 → 1024, logits 256 (467 MB).
  using smk::linear_cross_entropy_default_chunk_rows, smk::linear_cross_entropy_default_logit_rows;
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, 151936, DType::bf16), 1024);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, 151936, DType::bf16), 256);
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, 151936, DType::f32), 512);  // 2^29 / (151936 · 5) = 706.7
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, 151936, DType::f32), 128);
  // 2^29 / (32000 · 3) = 5592.4 → 4096: the second shape (N = 4096) in one chunk, logits 1024 at a time.
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(4096, 32000, DType::bf16), 4096);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(4096, 32000, DType::bf16), 1024);
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(100, 151936, DType::bf16), 100);  // at most N
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(100, 151936, DType::bf16), 100);  // at most the chunk
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, std::int64_t{1} << 30, DType::f32), 1);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, std::int64_t{1} << 30, DType::f32), 1);
  // Below c = 4 the logits still take a whole row (review F12): c = 2 costs V·(2·sizeof + 4), not V·(2·sizeof + 2).
  // bf16 at V = 5·10^7: 2 rows (4·10^8 B; 4 rows would take 6·10^8 > 2^29); at V = 8·10^7: 1 row (4.8·10^8 B; 2 rows
  // would take 6.4·10^8, where the c·V·(sizeof + 1) sizing allowed 2^29 / (8·10^7 · 3) = 2.24 → 2). f32 at 5·10^7:
  // 1 row (4·10^8 B; 2 rows 6·10^8, the old sizing 2.15 → 2).
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, 50'000'000, DType::bf16), 2);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, 50'000'000, DType::bf16), 1);
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, 80'000'000, DType::bf16), 1);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, 80'000'000, DType::bf16), 1);
  EXPECT_EQ(linear_cross_entropy_default_chunk_rows(8192, 50'000'000, DType::f32), 1);
  EXPECT_EQ(linear_cross_entropy_default_logit_rows(8192, 50'000'000, DType::f32), 1);
  // Within the budget, c·V·sizeof + x·V·4 ≤ 512 MiB with x = max(c / 4, 1), wherever one row of each fits; and c the
  // largest power of two that does (2c rows would not fit). Where not even one row fits, the floor: 1 and 1.
  const std::int64_t budget = static_cast<std::int64_t>(smk::kLinearCrossEntropyChunkBytes);
  for (const DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const std::int64_t v : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{32000}, std::int64_t{151936},
                                 std::int64_t{262144}, std::int64_t{20'000'000}, std::int64_t{44'739'243},
                                 std::int64_t{50'000'000}, std::int64_t{67'108'864}, std::int64_t{67'108'865},
                                 std::int64_t{80'000'000}, std::int64_t{89'478'485}, std::int64_t{89'478'486},
                                 std::int64_t{1} << 30}) {
      const std::int64_t s = static_cast<std::int64_t>(smk::dtype_size(dt));
      const std::int64_t rows = std::int64_t{1} << 40;  // never the bound
      const std::int64_t c = linear_cross_entropy_default_chunk_rows(rows, v, dt);
      const std::int64_t x = linear_cross_entropy_default_logit_rows(rows, v, dt);
      const std::string at = std::string(smk::dtype_name(dt)) + " V=" + std::to_string(v);
      EXPECT_EQ(c & (c - 1), 0) << at;  // a power of two
      EXPECT_EQ(x, std::max<std::int64_t>(c / 4, 1)) << at;
      if (v * (s + 4) > budget) {
        EXPECT_EQ(c, 1) << at;
        continue;
      }
      EXPECT_LE(c * v * s + x * v * 4, budget) << at;
      EXPECT_GT(2 * c * v * s + std::max<std::int64_t>(c / 2, 1) * v * 4, budget) << at;
    }
}

// ---- argument checks: smk::Error naming the argument, nothing written -----------------------------------------------

struct Args {
  std::int64_t n = 4, d = 3, v = 5;
  std::vector<float> h = std::vector<float>(12, 0.5f), w = std::vector<float>(15, 0.25f), b = std::vector<float>(5, 0);
  std::vector<std::int64_t> t = {0, 1, 2, 4};
  std::vector<float> loss = {7.0f}, dh = std::vector<float>(12, 7.0f), dw = std::vector<float>(15, 7.0f),
                     db = std::vector<float>(5, 7.0f);
  TensorView vh = TensorView::of(h.data(), {4, 3}), vw = TensorView::of(w.data(), {5, 3}),
             vt = TensorView::of(t.data(), {4}), vloss = TensorView::of(loss.data(), {}),
             vdh = TensorView::of(dh.data(), {4, 3}), vdw = TensorView::of(dw.data(), {5, 3}), vdb{}, vgl{};
  LinearCrossEntropyOptions opt;
  void call() { smk::linear_cross_entropy(vloss, {}, vdh, vdw, vdb, vh, vw, vt, vgl, opt); }
};

void expect_error(Args& a, const std::string& needle) {
  try {
    a.call();
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const smk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("linear_cross_entropy"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.loss[0], 7.0f) << "a rejected call wrote the loss";
  for (float x : a.dw) EXPECT_EQ(x, 7.0f) << "a rejected call wrote dW";
}

TEST(LinearCrossEntropyCpu, ArgumentsValid) {
  Args a;
  a.call();
  EXPECT_TRUE(std::isfinite(a.loss[0]));
}

TEST(LinearCrossEntropyCpu, RejectsBadArguments) {
  {
    Args a;
    a.vw = TensorView::of(a.w.data(), {3, 5});  // d = 5 against hidden's 3
    expect_error(a, "'weight'");
  }
  {
    Args a;
    a.vt = TensorView::of(a.t.data(), {3});
    expect_error(a, "'targets'");
  }
  {
    Args a;
    a.opt.bias = TensorView::of(a.b.data(), {4});
    a.vdb = TensorView::of(a.db.data(), {5});
    expect_error(a, "'options.bias'");
  }
  {
    Args a;
    a.opt.bias = TensorView::of(a.b.data(), {5});  // a bias without grad_bias
    expect_error(a, "'grad_bias'");
  }
  {
    Args a;
    a.vdb = TensorView::of(a.db.data(), {5});  // grad_bias without a bias
    expect_error(a, "'grad_bias'");
  }
  for (std::int64_t c : {0, -3}) {
    Args a;
    a.opt.chunk_rows = c;
    expect_error(a, "'options.chunk_rows'");
  }
  for (std::int64_t c : {0, -1}) {
    Args a;
    a.opt.logit_rows = c;
    expect_error(a, "'options.logit_rows'");
  }
  {
    Args a;  // weight f64 against hidden f32
    std::vector<double> w64(15, 0.25);
    a.vw = TensorView::of(w64.data(), {5, 3});
    expect_error(a, "'weight'");
  }
  {
    Args a;
    std::vector<double> dh64(12, 7.0);
    a.vdh = TensorView::of(dh64.data(), {4, 3});
    expect_error(a, "'grad_hidden'");
  }
  {
    Args a;
    a.vdh = TensorView::of(a.dh.data(), {4, 2});
    expect_error(a, "'grad_hidden'");
  }
  {
    Args a;
    a.vloss = TensorView::of(a.loss.data(), {1});  // mean: a scalar
    expect_error(a, "'loss'");
  }
  {
    Args a;
    a.t[2] = 5;  // V = 5: out of range, not ignore_index
    expect_error(a, "'targets'");
  }
  {
    Args a;
    std::vector<float> cw = {1, 1, -1, 1, 1};
    a.opt.ce.class_weights = TensorView::of(cw.data(), {5});
    expect_error(a, "'options.ce.class_weights'");
  }
  {
    Args a;
    a.opt.ce.label_smoothing = 1.5f;
    expect_error(a, "'options.ce.label_smoothing'");
  }
  {
    Args a;  // a column-strided hidden: the products need contiguous rows
    a.vh = TensorView::strided(a.h.data(), DType::f32, smk::Device::cpu(), {4, 3}, {1, 4});
    expect_error(a, "'hidden'");
  }
  {
    Args a;  // dW over the weights
    a.vdw = a.vw;
    expect_error(a, "'grad_weight'");
  }
}

}  // namespace
