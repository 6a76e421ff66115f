// `softmaxkit demo`: the lesson's program in C++, then the article's worked examples. Every number printed is
// computed by the library (on the GPU when one is present); the checks compare it with the CPU double reference
// or with the values the seed documents print, and any failure makes the demo exit non-zero.
#include "demo.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <limits>
#include <string>
#include <vector>

#include "softmaxkit/attention.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/compare.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/matrix.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/device.hpp"
#include "softmaxkit/matmul.hpp"
#include "softmaxkit/softmax.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "softmaxkit/cuda/lesson.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#endif

namespace smk::app {

namespace {

enum class Op { softmax, log_softmax, logsumexp, naive };

// Runs one op on the selected backend over host data: uploads, poisons the output, runs, downloads.
class Backend {
 public:
  explicit Backend(bool gpu) : gpu_(gpu) {}
  bool gpu() const { return gpu_; }

  std::vector<float> run(Op op, const std::vector<float>& x, std::int64_t rows, std::int64_t cols) const {
    const std::size_t out_size = op == Op::logsumexp ? static_cast<std::size_t>(rows) : x.size();
#if SOFTMAXKIT_HAS_CUDA
    if (gpu_) {
      auto in = cuda::DeviceBuffer<float>::from_host(x);
      cuda::DeviceBuffer<float> out(out_size);
      out.fill_bytes(0xFF);  // NaN poison: anything left unwritten shows
      const Device dev = Device::cuda(0);
      const TensorView vin = TensorView::of(in.data(), {rows, cols}, dev);
      if (op == Op::naive) cuda::lesson::softmax_rows_naive(out.data(), in.data(), rows, cols, nullptr);
      else call(op, out.data(), rows, cols, vin, dev);
      return out.to_host();
    }
#endif
    std::vector<float> out(out_size, std::numeric_limits<float>::quiet_NaN());
    const TensorView vin = TensorView::of(x.data(), {rows, cols});
    if (op == Op::naive) cpu::softmax_naive_unshifted(TensorView::of(out.data(), {rows, cols}), vin);
    else call(op, out.data(), rows, cols, vin, Device::cpu());
    return out;
  }

 private:
  static void call(Op op, float* out, std::int64_t rows, std::int64_t cols, const TensorView& in, Device dev) {
    switch (op) {
      case Op::softmax: return softmax(TensorView::of(out, {rows, cols}, dev), in);
      case Op::log_softmax: return log_softmax(TensorView::of(out, {rows, cols}, dev), in);
      case Op::logsumexp: return logsumexp(TensorView::of(out, {rows}, dev), in);
      case Op::naive: return;
    }
  }
  bool gpu_;
};

std::vector<float> reference(Op op, const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(op == Op::logsumexp ? static_cast<std::size_t>(rows) : x.size());
  const TensorView in = TensorView::of(x.data(), {rows, cols});
  switch (op) {
    case Op::softmax: cpu::reference::softmax(TensorView::of(out.data(), {rows, cols}), in); break;
    case Op::log_softmax: cpu::reference::log_softmax(TensorView::of(out.data(), {rows, cols}), in); break;
    case Op::logsumexp: cpu::reference::logsumexp(TensorView::of(out.data(), {rows}), in); break;
    case Op::naive: cpu::reference::softmax_naive_unshifted(TensorView::of(out.data(), {rows, cols}), in); break;
  }
  return out;
}

std::string num(float v, int digits = 8) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", v, digits);
}
std::string list(const std::vector<float>& v, int digits = 8) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i], digits);
  return s;
}

void section(const std::string& title) { fmt::print("\n--- {} ---\n\n", title); }

class Checks {
 public:
  void expect(bool ok, const std::string& what) {
    fmt::print("  {} {}\n", ok ? "[ok]    " : "[FAILED]", what);
    failures_ += ok ? 0 : 1;
    total_ += 1;
  }
  void expect_close(const std::vector<float>& actual, const std::vector<float>& expected, double tol,
                    const std::string& what) {
    const Comparison c = compare_finite(actual, expected, tol);
    expect(c.ok, c.ok ? what : what + ": " + c.message);
  }
  int failures() const { return failures_; }
  int total() const { return total_; }

 private:
  int failures_ = 0, total_ = 0;
};

void lesson_program(const Backend& be, Checks& checks) {
  section("Matrix products");
  const auto a = Matrix::from(2, 3, {1, 2, 3, 4, 5, 6});
  const auto b = Matrix::from(3, 2, {7, 8, 9, 10, 11, 12});
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> ab(4), ax(2), ab_ref(4), ax_ref(2);
#if SOFTMAXKIT_HAS_CUDA
  if (be.gpu()) {
    auto da = cuda::DeviceBuffer<float>::from_host(a.values()), db = cuda::DeviceBuffer<float>::from_host(b.values()),
         dx = cuda::DeviceBuffer<float>::from_host(x);
    cuda::DeviceBuffer<float> dab(4), dax(2);
    dab.fill_bytes(0xFF);
    dax.fill_bytes(0xFF);
    const Device dev = Device::cuda(0);
    matmul(TensorView::of(dab.data(), {2, 2}, dev), TensorView::of(da.data(), {2, 3}, dev),
           TensorView::of(db.data(), {3, 2}, dev));
    matvec(TensorView::of(dax.data(), {2}, dev), TensorView::of(da.data(), {2, 3}, dev),
           TensorView::of(dx.data(), {3}, dev));
    ab = dab.to_host();
    ax = dax.to_host();
  }
#endif
  if (!be.gpu()) {
    matmul(TensorView::of(ab.data(), {2, 2}), a.view(), b.view());
    matvec(TensorView::of(ax.data(), {2}), a.view(), TensorView::of(x.data(), {3}));
  }
  cpu::reference::matmul(TensorView::of(ab_ref.data(), {2, 2}), a.view(), b.view());
  cpu::reference::matvec(TensorView::of(ax_ref.data(), {2}), a.view(), TensorView::of(x.data(), {3}));
  fmt::print("A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]], x = [1, 2, 3]\n");
  fmt::print("A × B: {}\n", list(ab, 0));
  fmt::print("A × x: {}\n\n", list(ax, 0));
  checks.expect_close(ab, ab_ref, 0.0, "A × B = 58, 64, 139, 154, as the CPU reference");
  checks.expect_close(ax, ax_ref, 0.0, "A × x = 14, 32, as the CPU reference");
  checks.expect(ab == std::vector<float>{58, 64, 139, 154} && ax == std::vector<float>{14, 32},
                "the lesson's values");

  section("Softmax Rows");
  const std::vector<float> scores = {1, 2, 3, 0, 0, 0};
  const auto actual = be.run(Op::softmax, scores, 2, 3);
  const auto expected = reference(Op::softmax, scores, 2, 3);
  fmt::print("Scores:   [[1, 2, 3], [0, 0, 0]]\n");
  fmt::print("Actual:   {}\n", list(actual));
  fmt::print("Expected: {}\n\n", list(expected));
  checks.expect_close(actual, expected, 1e-6, "each row matches the CPU reference");
  checks.expect(std::fabs(actual[0] + actual[1] + actual[2] - 1) < 1e-6f &&
                    std::fabs(actual[3] + actual[4] + actual[5] - 1) < 1e-6f,
                "each row sums to 1");

  section("Softmax Rows Large Scores");
  const std::vector<float> large = {1000, 1001, 1002};
  fmt::print("Scores:   [1000, 1001, 1002]\n\n");
  fmt::print("The textbook formula, exp(x) / sum exp(x), with no max shift:\n");
  const auto naive = be.run(Op::naive, large, 1, 3);
  const auto naive_ref = reference(Op::naive, large, 1, 3);
  fmt::print("Actual:   {}\n", list(naive));
  fmt::print("Expected: {}   (the naive CPU reference breaks the same way)\n", list(naive_ref));
  const Comparison rejected = compare_finite(naive, naive_ref, 1e-5);
  fmt::print("Check:    {}\n\n", rejected.ok ? "passed" : rejected.message);
  checks.expect(!rejected.ok && std::isnan(naive[0]),
                "exp(1000) overflows to inf, inf / inf is NaN, and the check rejects it even though both agree");
  fmt::print("Subtract the row's max first (1002), so the largest exponential is exp(0) = 1:\n");
  const auto stable = be.run(Op::softmax, large, 1, 3);
  const auto stable_ref = reference(Op::softmax, large, 1, 3);
  fmt::print("Actual:   {}\n", list(stable));
  fmt::print("Expected: {}\n\n", list(stable_ref));
  checks.expect_close(stable, stable_ref, 1e-6, "the shifted version matches the reference");
  checks.expect_close(stable, {actual[0], actual[1], actual[2]}, 1e-6, "and gives the same probabilities as [1, 2, 3]");
}

void article_examples(const Backend& be, Checks& checks) {
  section("Article: softmax of [2, 1, 0]");
  const std::vector<float> z = {2, 1, 0};
  const auto p = be.run(Op::softmax, z, 1, 3);
  fmt::print("exp: 7.389, 2.718, 1 (total 11.107)  ->  softmax: {}\n\n", list(p, 3));
  checks.expect_close(p, {0.665f, 0.245f, 0.090f}, 5e-4, "0.665, 0.245, 0.090");

  section("Article: only the gaps matter (float32)");
  fmt::print("{:<14} {:<34} {}\n", "row", "naive exp(x) / sum", "max-shifted (softmaxkit)");
  for (float shift : {0.0f, 100.0f, -200.0f}) {
    const std::vector<float> zs = {2 + shift, 1 + shift, 0 + shift};
    const auto n = be.run(Op::naive, zs, 1, 3), s = be.run(Op::softmax, zs, 1, 3);
    fmt::print("{:<14} {:<34} {}\n", shift == 0 ? "z" : fmt::format("z {} {}", shift > 0 ? '+' : '-', std::fabs(shift)),
               list(n, 4), list(s, 4));
    checks.expect_close(s, p, 1e-6, fmt::format("max-shifted softmax of z{:+} equals softmax of z", shift));
    if (shift != 0) checks.expect(std::isnan(n[0]), "the naive formula gives NaN (overflow above, 0/0 below)");
  }

  section("Article: where exp overflows");
  const double f32_limit = std::log(static_cast<double>(std::numeric_limits<float>::max()));
  const double f16_limit = std::log(static_cast<double>(to_float(half_t{0x7bff})));
  fmt::print("exp(x) overflows above ln(largest finite): {:.2f} in float32, {:.2f} in float16.\n", f32_limit, f16_limit);
  checks.expect(std::fabs(f32_limit - 88.72) < 0.005 && std::fabs(f16_limit - 11.09) < 0.005,
                "thresholds 88.72 (float32) and 11.09 (float16)");
  // Logits in the spirit of the article's fridge prompt (" bottle" 18.437, " can" 17.902), stored in float16.
  const std::vector<float> logits = {18.437f, 17.902f, 12.0f, 3.5f};
  std::vector<half_t> h;
  std::vector<float> hf;
  for (float v : logits) {
    h.push_back(to_half(v));
    hf.push_back(to_float(h.back()));
  }
  std::vector<float> naive16;
  float total16 = 0;  // the textbook formula in float16 arithmetic: every exponential rounded to float16
  for (float v : hf) naive16.push_back(to_float(to_half(std::exp(v))));
  for (float e : naive16) total16 = to_float(to_half(total16 + e));
  for (float& e : naive16) e = to_float(to_half(e / total16));
  std::vector<half_t> stable16(h.size());
  softmax(TensorView::of(stable16.data(), {4}), TensorView::of(h.data(), {4}));  // softmaxkit: f32 inside, f16 out
  std::vector<float> s16;
  for (half_t v : stable16) s16.push_back(to_float(v));
  const auto ref16 = reference(Op::softmax, hf, 1, 4);
  fmt::print("float16 logits:               {}\n", list(hf, 3));
  fmt::print("naive, in float16 arithmetic: {}\n", list(naive16, 4));
  fmt::print("softmaxkit, float16 in/out:   {}\n\n", list(s16, 4));
  checks.expect(std::isnan(naive16[0]), "e^18.44 is above 65,504: the float16 textbook formula returns NaN");
  bool within_ulp = true;
  for (std::size_t i = 0; i < s16.size(); ++i) {
    const float ulp = to_float(half_t{static_cast<std::uint16_t>(to_half(ref16[i]).bits + 1)}) - to_float(to_half(ref16[i]));
    within_ulp = within_ulp && std::fabs(s16[i] - ref16[i]) <= ulp;
  }
  checks.expect(within_ulp, "softmaxkit's float16 result is within one float16 ulp of the float64 reference");

  section("Article: log-sum-exp, the smooth maximum");
  const std::vector<float> rows = {2, 1, 0, 2, 2, 2};
  const auto lse = be.run(Op::logsumexp, rows, 2, 3);
  fmt::print("LSE([2, 1, 0]) = {:.4f}, bounds {:.4f} to {:.4f}  (m <= LSE <= m + ln n)\n", lse[0], 2.0, 2 + std::log(3.0));
  fmt::print("LSE([2, 2, 2]) = {:.4f}  (all tied: the upper bound)\n\n", lse[1]);
  checks.expect(std::fabs(lse[0] - 2.4076) < 5e-5 && lse[0] >= 2 && lse[0] <= 2 + std::log(3.0f),
                "LSE = 2.4076 lies within [2, 3.0986]");
  checks.expect(std::fabs(lse[1] - 3.0986) < 5e-5, "LSE of a tie reaches m + ln 3 = 3.0986");
  const std::vector<float> wide = {1000, 1};
  const auto logp = be.run(Op::log_softmax, wide, 1, 2);
  fmt::print("log_softmax([1000, 1]) = [{}, {}]  computed as (x - m) - log l, never log(softmax)\n\n", num(logp[0], 1),
             num(logp[1], 1));
  checks.expect(logp[0] == 0.0f && logp[1] == -999.0f, "log_softmax([1000, 1]) = [0, -999] exactly");

  section("Article: temperature sharpens the max");
  fmt::print("{:>8}  {:<36}  {}\n", "T", "softmax(z / T)", "T * LSE(z / T)");
  const float expected_p[4][3] = {{0.3672f, 0.3322f, 0.3006f}, {0.6652f, 0.2447f, 0.0900f},
                                  {0.8668f, 0.1173f, 0.0159f}, {0.99995f, 4.5398e-05f, 2.0611e-09f}};
  const float expected_t_lse[4] = {12.0194f, 2.4076f, 2.0715f, 2.0000f};
  const float temps[4] = {10, 1, 0.5f, 0.1f};
  for (int t = 0; t < 4; ++t) {
    const float T = temps[t];
    const std::vector<float> zt = {2 / T, 1 / T, 0 / T};
    const auto pt = be.run(Op::softmax, zt, 1, 3);
    const float tl = T * be.run(Op::logsumexp, zt, 1, 3)[0];
    fmt::print("{:>8}  [{:.4e}, {:.4e}, {:.4e}]  {:.4f}\n", T, pt[0], pt[1], pt[2], tl);
    bool ok = std::fabs(tl - expected_t_lse[t]) < 5e-4f;
    // The article prints 4 decimals, or 5 significant digits in scientific notation for the tiny ones.
    for (int i = 0; i < 3; ++i) {
      const float e = expected_p[t][i];
      ok = ok && std::fabs(pt[i] - e) <= (e > 1e-3f ? 5e-5f : 1e-4f * e);
    }
    checks.expect(ok, fmt::format("T = {}: matches the article's row", T));
  }
  fmt::print("\nAs T -> 0, softmax(z / T) tends to the one-hot argmax and T * LSE(z / T) to max(z) = 2.\n");

  section("Article: why frameworks fuse log-softmax with the loss");
  {
    const std::vector<float> zt = {0.0f, -120.0f};  // the right answer, class 1, trails by 120
    const std::vector<std::int32_t> target = {1};
    const auto pt = be.run(Op::softmax, zt, 1, 2);
    const float two_step = -std::log(pt[1]);
    // d(−log p_t)/dz_j through the chain rule of the two steps: −(1/p_t)·p_t(δ_tj − p_j), with p_t rounded to 0.
    const float two_step_grad[2] = {-(1 / pt[1]) * (pt[1] * (0 - pt[0])), -(1 / pt[1]) * (pt[1] * (1 - pt[1]))};
    float fused = 0;
    std::vector<float> grad(2);
    const float one = 1.0f;
    // Cross-entropy runs on the CPU backend in this version (its CUDA kernel is still to come).
    cross_entropy(TensorView::of(&fused, {}), TensorView::of(zt.data(), {1, 2}), TensorView::of(target.data(), {1}));
    cross_entropy_backward(TensorView::of(grad.data(), {1, 2}), TensorView::of(zt.data(), {1, 2}),
                           TensorView::of(target.data(), {1}), TensorView::of(&one, {}));
    fmt::print("logits [0, -120], target 1:  softmax = [{}, {}]\n", num(pt[0], 0), num(pt[1], 0));
    fmt::print("two steps, -log(softmax):   loss {:>5}   gradient [{}, {}]\n", num(two_step, 1),
               num(two_step_grad[0], 0), num(two_step_grad[1], 0));
    fmt::print("fused cross_entropy:        loss {:>5}   gradient [{}, {}]\n\n", num(fused, 1), num(grad[0], 0),
               num(grad[1], 0));
    checks.expect(std::isinf(two_step) && std::isnan(two_step_grad[0]), "the two-step loss is inf, its gradient NaN");
    checks.expect(fused == 120.0f && grad[0] == 1.0f && grad[1] == -1.0f,
                  "the fused loss is exactly 120 and its gradient [1, -1]");
  }

  section("Article: the online recurrence over [1, 3, 2]");
  fmt::print("{:>6} {:>8} {:>10} {:>10}\n", "push", "m", "l", "m + ln l");
  OnlineSoftmaxState<float> state = OnlineSoftmaxState<float>::empty();
  for (float v : {1.0f, 3.0f, 2.0f}) {
    state.push(v);
    fmt::print("{:>6} {:>8.4f} {:>10.4f} {:>10.4f}\n", v, state.m, state.l(), state.lse());
  }
  checks.expect(state.m == 3.0f && std::fabs(state.l() - 1.5032f) < 5e-5f && std::fabs(state.lse() - 3.4076f) < 5e-5f,
                "ends at m = 3, l = 1.5032, LSE = 3.4076");
  OnlineSoftmaxState<float> left = OnlineSoftmaxState<float>::empty(), right = OnlineSoftmaxState<float>::empty();
  left.push(1.0f);
  right.push(3.0f);
  right.push(2.0f);
  left.merge(right);
  fmt::print("\nMerging [1] with [3, 2]: m = {:.4f}, l = {:.4f}, LSE = {:.4f}  (merge is exact, any grouping)\n",
             left.m, left.l(), left.lse());
  checks.expect(std::fabs(left.lse() - state.lse()) < 1e-6f, "the merged halves give the same LSE");
}

void attention_example(Checks& checks) {
  section("Article: the attention recurrence (one query, 8,192 keys, head size 128)");
  const std::int64_t n = 8192, d = 128;
  std::mt19937_64 rng(0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(d), k(n * d), v(n * d);
  for (auto* buf : {&q, &k, &v})
    for (double& x : *buf) x = normal(rng);
  // Standard attention, all 8,192 scores at once: s = K q / sqrt(d), p = softmax(s), o = V^T p.
  std::vector<double> s(n), p(n), full(d);
  matvec(TensorView::of(s.data(), {n}), TensorView::of(k.data(), {n, d}), TensorView::of(q.data(), {d}));
  for (double& x : s) x /= std::sqrt(static_cast<double>(d));
  cpu::reference::softmax(TensorView::of(p.data(), {n}), TensorView::of(s.data(), {n}));
  matvec(TensorView::of(full.data(), {d}), TensorView::strided(v.data(), DType::f64, Device::cpu(), {d, n}, {1, d}),
         TensorView::of(p.data(), {n}));
  // Online: blocks of 256 keys, never more than 256 scores held at once (float64, the CPU reference).
  std::vector<double> online(d), lse(1);
  cpu::reference::attention_forward(TensorView::of(online.data(), {1, 1, 1, d}), TensorView::of(lse.data(), {1, 1, 1}),
                                    TensorView::of(q.data(), {1, 1, 1, d}), TensorView::of(k.data(), {1, n, 1, d}),
                                    TensorView::of(v.data(), {1, n, 1, d}));
  // Two halves computed separately (as if on two SMs), merged with their LSEs.
  std::vector<double> o1(d), o2(d), l1(1), l2(1), merged(d), lm(1);
  for (int h = 0; h < 2; ++h)
    cpu::reference::attention_forward(TensorView::of((h ? o2 : o1).data(), {1, 1, 1, d}),
                                      TensorView::of((h ? l2 : l1).data(), {1, 1, 1}),
                                      TensorView::of(q.data(), {1, 1, 1, d}),
                                      TensorView::of(k.data() + h * (n / 2) * d, {1, n / 2, 1, d}),
                                      TensorView::of(v.data() + h * (n / 2) * d, {1, n / 2, 1, d}));
  merge_attention_states(TensorView::of(merged.data(), {d}), TensorView::of(lm.data(), {}),
                         TensorView::of(o1.data(), {d}), TensorView::of(l1.data(), {}), TensorView::of(o2.data(), {d}),
                         TensorView::of(l2.data(), {}));
  double diff_online = 0, diff_merged = 0;
  for (std::int64_t x = 0; x < d; ++x) {
    diff_online = std::max(diff_online, std::fabs(online[x] - full[x]));
    diff_merged = std::max(diff_merged, std::fabs(merged[x] - full[x]));
  }
  fmt::print("online (blocks of 256) vs all scores at once:  max |diff| = {:.3e}\n", diff_online);
  fmt::print("halves merged by their LSEs vs all at once:     max |diff| = {:.3e}\n", diff_merged);
  fmt::print("LSE of the whole row {:.12f}; of the halves {:.6f} and {:.6f}, merged {:.12f}\n\n", lse[0], l1[0], l2[0],
             lm[0]);
  checks.expect(diff_online < 1e-14 && diff_merged < 1e-14, "online and merged attention match standard attention "
                                                              "to float64 rounding");
  checks.expect(std::fabs(lm[0] - lse[0]) < 1e-12, "the LSE of the whole is the LSE of the halves' LSEs");
}

}  // namespace

int run_demo(const DemoOptions& options) {
  fmt::print("softmaxkit {} demo: the lesson's cradle, then the article's worked examples\n", SOFTMAXKIT_VERSION);
  section("Selected device");
  bool gpu = false;
  if (options.force_cpu) {
    fmt::print("CPU backend (--cpu given)\n");
  } else if (cuda_device_count() > 0) {
    const DeviceInfo info = cuda_device_info(0);
    fmt::print("GPU: {} (CUDA backend, compute capability {}.{}, {} SMs, {:.0f} GiB)\n", info.name, info.cc_major,
               info.cc_minor, info.sm_count, static_cast<double>(info.global_memory_bytes) / (1u << 30));
    gpu = true;
  } else {
    fmt::print("No GPU found ({}); running on the CPU backend.\n", cuda_unavailable_reason());
  }
  const Backend backend(gpu);
  Checks checks;
  lesson_program(backend, checks);
  article_examples(backend, checks);
  attention_example(checks);
  fmt::print("\n--- Summary ---\n\n{} of {} checks passed on the {} backend.\n", checks.total() - checks.failures(),
             checks.total(), gpu ? "CUDA" : "CPU");
  return checks.failures() == 0 ? 0 : 1;
}

}  // namespace smk::app
