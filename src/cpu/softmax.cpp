// softmaxkit CPU backend: softmax, log-softmax and log-sum-exp over one dimension, in one algorithm templated on
// the compute type. Acc = float is the float path (double for f64 tensors); Acc = double is the reference.
//
// Per row: gather the row into a contiguous buffer (any stride), take the NaN-propagating max, sum the shifted
// exponentials pairwise, form the OnlineSoftmaxState and write through its RowNormalizer. The state's regimes
// (empty, saturated, NaN) therefore behave exactly as on every other backend.
#include "softmaxkit/cpu/softmax.hpp"

#include <vector>

#include "cpu/rows.hpp"
#include "softmax/args.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cpu {

namespace {

using smk::detail::SoftmaxKind;
using smk::detail::SoftmaxProblem;

template <typename Acc, typename In>
OnlineSoftmaxState<Acc> row_state(const In* row, std::int64_t n, std::int64_t stride, std::vector<Acc>& x,
                                  std::vector<Acc>& e) {
  x.resize(static_cast<std::size_t>(n));
  e.resize(static_cast<std::size_t>(n));
  Acc max = -smk::detail::inf_<Acc>();
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = detail::load<Acc>(row + i * stride);
    max = nan_max(max, x[i]);
  }
  const Acc shift = OnlineSoftmaxState<Acc>::shift_for(max);
  for (std::int64_t i = 0; i < n; ++i) e[i] = exp_diff(x[i], shift);
  return OnlineSoftmaxState<Acc>::from_max_and_sum(max, detail::pairwise_sum(e.data(), n));
}

template <typename Acc, bool kNaive>
void run(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  const SoftmaxProblem p = smk::detail::check_softmax_args(op, kind, out, in, options);
  if (!in.device.is_cpu()) smk::throw_invalid_argument(op, "in", "is on " + in.device.str() + ", expected cpu");
  if (p.rows == 0) return;
  const std::int64_t n = p.n;
  const std::int64_t sin = in.strides[p.dim];
  const std::int64_t sout = kind == SoftmaxKind::logsumexp ? 0 : out.strides[p.dim];
  std::vector<Acc> x, e;
  detail::with_type(in.dtype, in.data, [&](auto* pin) {
    detail::with_type(out.dtype, out.data, [&](auto* pout) {
      detail::for_each_row(in, out, p.dim, [&](std::int64_t oi, std::int64_t oo) {
        const auto* row = pin + oi;
        auto* dst = pout + oo;
        if (kind == SoftmaxKind::logsumexp) {
          // An empty row (n = 0) is the empty state: −inf.
          detail::store(dst, n == 0 ? -smk::detail::inf_<Acc>() : row_state<Acc>(row, n, sin, x, e).lse());
          return;
        }
        if (n == 0) return;  // nothing to write
        if constexpr (kNaive) {
          x.resize(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i) x[i] = smk::detail::exp_(detail::load<Acc>(row + i * sin));
          const Acc sum = detail::pairwise_sum(x.data(), n);
          for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, x[i] / sum);
        } else {
          const RowNormalizer<Acc> norm = row_state<Acc>(row, n, sin, x, e).normalizer(options.empty_rows);
          if (kind == SoftmaxKind::softmax) {
            for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, norm.softmax_from_exp(e[i]));
          } else {
            for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, norm.log_softmax(x[i]));
          }
        }
      });
    });
  });
}

// The float path computes in f32 except for f64 tensors, which it keeps in f64.
template <bool kNaive>
void run_float_path(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                    const SoftmaxOptions& options) {
  if (in.dtype == DType::f64) run<double, kNaive>(op, kind, out, in, options);
  else run<float, kNaive>(op, kind, out, in, options);
}

}  // namespace

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run_float_path<false>("cpu::softmax", SoftmaxKind::softmax, out, in, options);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run_float_path<false>("cpu::log_softmax", SoftmaxKind::log_softmax, out, in, options);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run_float_path<false>("cpu::logsumexp", SoftmaxKind::logsumexp, out, in, options);
}
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run_float_path<true>("cpu::softmax_naive_unshifted", SoftmaxKind::softmax, out, in, options);
}

namespace reference {
void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run<double, false>("cpu::reference::softmax", SoftmaxKind::softmax, out, in, options);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run<double, false>("cpu::reference::log_softmax", SoftmaxKind::log_softmax, out, in, options);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run<double, false>("cpu::reference::logsumexp", SoftmaxKind::logsumexp, out, in, options);
}
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  run<double, true>("cpu::reference::softmax_naive_unshifted", SoftmaxKind::softmax, out, in, options);
}
}  // namespace reference

}  // namespace smk::cpu
