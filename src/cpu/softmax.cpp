// softmaxkit CPU backend: the softmax family over one dimension, in one algorithm templated on the compute type.
// Acc = float is the float path (double for f64 tensors); Acc = double is the reference.
//
// Forward, per row: gather the scaled and masked scores z = x / T + mask into a contiguous buffer (any stride,
// broadcast mask), take the NaN-propagating max, sum the shifted exponentials pairwise, form the
// OnlineSoftmaxState and write through its RowNormalizer, so the state's regimes (empty, saturated, NaN) behave
// exactly as on every other backend. Backward, per row: one pairwise sum (Σ dy·y, or Σ dy), then the elementwise
// formula, divided by T.
#include "softmaxkit/cpu/softmax.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/rows.hpp"
#include "cpu/softmax_internal.hpp"
#include "softmax/args.hpp"
#include "softmax/layout.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cpu {

namespace {

using smk::detail::BackwardKind;
using smk::detail::SoftmaxKind;
using smk::detail::SoftmaxProblem;

template <typename Acc>
constexpr Acc kInf = std::numeric_limits<Acc>::infinity();

void require_cpu(const char* op, const TensorView& in, const char* arg) {
  if (!in.device.is_cpu()) smk::throw_invalid_argument(op, arg, "is on " + in.device.str() + ", expected cpu");
}

// The per-row temperatures must be > 0 and finite; checked before anything is written.
void check_row_temperatures(const char* op, const TensorView& in, int dim, const SoftmaxOptions& o) {
  if (!smk::detail::is_set(o.temperature_per_row)) return;
  const auto rows = smk::detail::row_dims<1>(in, dim, -1, {smk::detail::strides_over(o.temperature_per_row, in, dim)});
  const auto* t = static_cast<const float*>(o.temperature_per_row.data);
  smk::detail::for_each_row(rows, [&](const std::int64_t* off) {
    const float v = t[off[0]];
    if (!(v > 0.0f) || !std::isfinite(v))
      smk::throw_invalid_argument(op, "options.temperature_per_row",
                                  "holds " + std::to_string(v) + "; every temperature must be > 0 and finite");
  });
}

// z = x / T + mask for one row, into z[0..n). `mask` is null when there is none; a b8 mask keeps (true) or removes
// (false, −inf) a position, an additive one is added after the scaling.
template <typename Acc, typename In>
void gather_scores(std::vector<Acc>& z, const In* row, std::int64_t n, std::int64_t stride, bool scale, Acc t,
                   const TensorView* mask, std::int64_t mask_off, std::int64_t mask_stride) {
  z.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    Acc v = detail::load<Acc>(row + i * stride);
    if (scale) v = v / t;
    z[i] = v;
  }
  if (mask == nullptr || n == 0) return;  // (an empty mask's data may be null: no pointer arithmetic on it)
  if (mask->dtype == DType::b8) {
    const auto* m = static_cast<const unsigned char*>(mask->data) + mask_off;
    for (std::int64_t i = 0; i < n; ++i)
      if (!m[i * mask_stride]) z[i] = -kInf<Acc>;
    return;
  }
  detail::with_type(mask->dtype, mask->data, [&](auto* m) {
    for (std::int64_t i = 0; i < n; ++i) z[i] = z[i] + detail::load<Acc>(m + mask_off + i * mask_stride);
  });
}

// The row's state, and e[i] = exp_diff(z[i], shift). The scores equal to the max are counted and their exact 1s
// left out of the pairwise sum, so the excess d = l − 1 keeps the small terms' relative precision
// (OnlineSoftmaxState::from_max_ties_and_rest); e keeps the 1s for softmax.
template <typename Acc>
OnlineSoftmaxState<Acc> row_state(const std::vector<Acc>& z, std::int64_t n, std::vector<Acc>& e) {
  e.resize(static_cast<std::size_t>(n));
  Acc max = -kInf<Acc>;
  for (std::int64_t i = 0; i < n; ++i) max = nan_max(max, z[i]);
  const Acc shift = OnlineSoftmaxState<Acc>::shift_for(max);
  std::int64_t ties = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const bool tie = z[i] == shift;
    ties += tie;
    e[i] = tie ? Acc(0) : exp_diff(z[i], shift);
  }
  const Acc rest = detail::pairwise_sum(e.data(), n);
  if (ties > 0)
    for (std::int64_t i = 0; i < n; ++i)
      if (z[i] == shift) e[i] = Acc(1);  // exp_diff(max, max) is exactly 1
  return OnlineSoftmaxState<Acc>::from_max_ties_and_rest(max, ties, rest);
}

// out: softmax / log-softmax output (in's shape) or, for logsumexp and state, the per-row output (m for state);
// out2: the state's l, unused otherwise.
template <typename Acc, bool kNaive>
void forward(const char* op, SoftmaxKind kind, const SoftmaxProblem& p, const TensorView& out, const TensorView& out2,
             const TensorView& in, const SoftmaxOptions& o) {
  require_cpu(op, in, "in");
  check_row_temperatures(op, in, p.dim, o);
  if (p.rows == 0) return;
  const bool row_out = kind == SoftmaxKind::logsumexp || kind == SoftmaxKind::state;
  const bool has_mask = smk::detail::is_set(o.mask);
  const bool per_row_t = smk::detail::is_set(o.temperature_per_row);
  using smk::detail::strides_over;
  enum { kIn, kOut, kOut2, kMask, kTemp, kViews };
  const auto rows = smk::detail::row_dims<kViews>(
      in, p.dim, -1,
      {strides_over(in, in, p.dim), strides_over(out, in, p.dim),
       kind == SoftmaxKind::state ? strides_over(out2, in, p.dim) : smk::detail::DimStrides{},
       has_mask ? strides_over(o.mask, in, p.dim) : smk::detail::DimStrides{},
       per_row_t ? strides_over(o.temperature_per_row, in, p.dim) : smk::detail::DimStrides{}});
  const std::int64_t n = p.n;
  const std::int64_t sin = in.strides[p.dim];
  const std::int64_t sout = row_out ? 0 : out.strides[p.dim];
  const std::int64_t smask = has_mask ? strides_over(o.mask, in, p.dim)[p.dim] : 0;
  const auto* temps = static_cast<const float*>(o.temperature_per_row.data);
  std::vector<Acc> z, e;
  detail::with_type(in.dtype, in.data, [&](auto* pin) {
    detail::with_type(out.dtype, out.data, [&](auto* pout) {
      smk::detail::for_each_row(rows, [&](const std::int64_t* off) {
        // An empty row (n = 0) reads nothing, and an empty input's data may be null (docs/semantics.md §1): no offset
        // is applied to it then (null + offset is undefined behaviour; UBSan, via fuzz_softmax_backward).
        const auto* row = n == 0 ? pin : pin + off[kIn];
        if (n == 0 && !row_out) return;  // softmax / log-softmax of an empty row: nothing to write
        auto* dst = pout + off[kOut];
        const Acc t = per_row_t ? static_cast<Acc>(temps[off[kTemp]]) : static_cast<Acc>(o.temperature);
        gather_scores<Acc>(z, row, n, sin, per_row_t || o.temperature != 1.0f, t, has_mask ? &o.mask : nullptr,
                           off[kMask], smask);
        if (row_out) {
          // An empty row (n = 0) is the empty state: m = −inf, l = 0, LSE = −inf.
          const auto s = n == 0 ? OnlineSoftmaxState<Acc>::empty() : row_state<Acc>(z, n, e);
          if (kind == SoftmaxKind::logsumexp) {
            detail::store(dst, s.lse());
          } else {
            detail::store(dst, s.m);
            detail::with_type(out2.dtype, out2.data, [&](auto* p2) { detail::store(p2 + off[kOut2], s.l()); });
          }
          return;
        }
        if constexpr (kNaive) {
          for (std::int64_t i = 0; i < n; ++i) z[i] = smk::detail::exp_(z[i]);
          const Acc sum = detail::pairwise_sum(z.data(), n);
          for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, z[i] / sum);
        } else {
          const RowNormalizer<Acc> norm = row_state<Acc>(z, n, e).normalizer(o.empty_rows);
          if (kind == SoftmaxKind::softmax) {
            for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, norm.softmax_from_exp(e[i]));
          } else {
            for (std::int64_t i = 0; i < n; ++i) detail::store(dst + i * sout, norm.log_softmax(z[i]));
          }
        }
      });
    });
  });
}

// dx = y ⊙ (dy − Σ dy ⊙ y) / T (softmax) or (dy − exp(y) · Σ dy) / T (log-softmax), per row.
template <typename Acc>
void backward(const char* op, BackwardKind kind, const SoftmaxProblem& p, const TensorView& dx, const TensorView& y,
              const TensorView& dy, const SoftmaxOptions& o) {
  require_cpu(op, y, "y");
  check_row_temperatures(op, y, p.dim, o);
  if (p.rows == 0 || p.n == 0) return;
  const bool per_row_t = smk::detail::is_set(o.temperature_per_row);
  using smk::detail::strides_over;
  enum { kY, kDy, kDx, kTemp, kViews };
  const auto rows = smk::detail::row_dims<kViews>(
      y, p.dim, -1,
      {strides_over(y, y, p.dim), strides_over(dy, y, p.dim), strides_over(dx, y, p.dim),
       per_row_t ? strides_over(o.temperature_per_row, y, p.dim) : smk::detail::DimStrides{}});
  const std::int64_t n = p.n;
  const std::int64_t sy = y.strides[p.dim], sdy = dy.strides[p.dim], sdx = dx.strides[p.dim];
  const auto* temps = static_cast<const float*>(o.temperature_per_row.data);
  const bool scale = per_row_t || o.temperature != 1.0f;
  std::vector<Acc> yv(static_cast<std::size_t>(n)), g(static_cast<std::size_t>(n)), terms(static_cast<std::size_t>(n));
  detail::with_type(y.dtype, y.data, [&](auto* py) {
    const auto* pdy = static_cast<decltype(py)>(dy.data);
    detail::with_type(dx.dtype, dx.data, [&](auto* pdx) {
      smk::detail::for_each_row(rows, [&](const std::int64_t* off) {
        for (std::int64_t i = 0; i < n; ++i) {
          yv[i] = detail::load<Acc>(py + off[kY] + i * sy);
          g[i] = detail::load<Acc>(pdy + off[kDy] + i * sdy);
          terms[i] = kind == BackwardKind::softmax ? g[i] * yv[i] : g[i];
        }
        const Acc s = detail::pairwise_sum(terms.data(), n);
        const Acc t = per_row_t ? static_cast<Acc>(temps[off[kTemp]]) : static_cast<Acc>(o.temperature);
        auto* dst = pdx + off[kDx];
        for (std::int64_t i = 0; i < n; ++i) {
          Acc v = kind == BackwardKind::softmax ? yv[i] * (g[i] - s) : g[i] - smk::detail::exp_(yv[i]) * s;
          if (scale) v = v / t;
          detail::store(dst + i * sdx, v);
        }
      });
    });
  });
}

// The float path computes in f32 except for f64 tensors, which it keeps in f64.
template <bool kNaive>
void forward_float_path(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                        const SoftmaxOptions& o) {
  const SoftmaxProblem p = smk::detail::check_softmax_args(op, kind, out, in, o);
  if (in.dtype == DType::f64) forward<double, kNaive>(op, kind, p, out, out, in, o);
  else forward<float, kNaive>(op, kind, p, out, out, in, o);
}
template <bool kNaive>
void forward_reference(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                       const SoftmaxOptions& o) {
  const SoftmaxProblem p = smk::detail::check_softmax_args(op, kind, out, in, o);
  forward<double, kNaive>(op, kind, p, out, out, in, o);
}

template <typename Acc>
void state_impl(const char* op, const TensorView& m, const TensorView& l, const TensorView& in,
                const SoftmaxOptions& o) {
  const SoftmaxProblem p = smk::detail::check_softmax_state_args(op, m, l, in, o);
  forward<Acc, false>(op, SoftmaxKind::state, p, m, l, in, o);
}

template <typename Acc>
void backward_impl(const char* op, BackwardKind kind, const TensorView& dx, const TensorView& y, const TensorView& dy,
                   const SoftmaxOptions& o) {
  const SoftmaxProblem p = smk::detail::check_softmax_backward_args(op, dx, y, dy, o);
  backward<Acc>(op, kind, p, dx, y, dy, o);
}

}  // namespace

namespace internal {
void forward(const char* op, smk::detail::SoftmaxKind kind, const smk::detail::SoftmaxProblem& problem, const TensorView& out,
             const TensorView& out2, const TensorView& in, const SoftmaxOptions& options) {
  if (in.dtype == DType::f64) cpu::forward<double, false>(op, kind, problem, out, out2, in, options);
  else cpu::forward<float, false>(op, kind, problem, out, out2, in, options);
}
void backward(const char* op, smk::detail::BackwardKind kind, const smk::detail::SoftmaxProblem& problem, const TensorView& dx,
              const TensorView& y, const TensorView& dy, const SoftmaxOptions& options) {
  if (y.dtype == DType::f64) cpu::backward<double>(op, kind, problem, dx, y, dy, options);
  else cpu::backward<float>(op, kind, problem, dx, y, dy, options);
}
}  // namespace internal

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_float_path<false>("cpu::softmax", SoftmaxKind::softmax, out, in, options);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_float_path<false>("cpu::log_softmax", SoftmaxKind::log_softmax, out, in, options);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_float_path<false>("cpu::logsumexp", SoftmaxKind::logsumexp, out, in, options);
}
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options) {
  if (in.dtype == DType::f64) state_impl<double>("cpu::softmax_state", out_max, out_sum, in, options);
  else state_impl<float>("cpu::softmax_state", out_max, out_sum, in, options);
}
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& options) {
  if (y.dtype == DType::f64) backward_impl<double>("cpu::softmax_backward", BackwardKind::softmax, dx, y, dy, options);
  else backward_impl<float>("cpu::softmax_backward", BackwardKind::softmax, dx, y, dy, options);
}
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options) {
  if (y.dtype == DType::f64)
    backward_impl<double>("cpu::log_softmax_backward", BackwardKind::log_softmax, dx, y, dy, options);
  else backward_impl<float>("cpu::log_softmax_backward", BackwardKind::log_softmax, dx, y, dy, options);
}
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_float_path<true>("cpu::softmax_naive_unshifted", SoftmaxKind::softmax, out, in, options);
}

namespace reference {
void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_reference<false>("cpu::reference::softmax", SoftmaxKind::softmax, out, in, options);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_reference<false>("cpu::reference::log_softmax", SoftmaxKind::log_softmax, out, in, options);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_reference<false>("cpu::reference::logsumexp", SoftmaxKind::logsumexp, out, in, options);
}
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options) {
  state_impl<double>("cpu::reference::softmax_state", out_max, out_sum, in, options);
}
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& options) {
  backward_impl<double>("cpu::reference::softmax_backward", BackwardKind::softmax, dx, y, dy, options);
}
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options) {
  backward_impl<double>("cpu::reference::log_softmax_backward", BackwardKind::log_softmax, dx, y, dy, options);
}
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options) {
  forward_reference<true>("cpu::reference::softmax_naive_unshifted", SoftmaxKind::softmax, out, in, options);
}
}  // namespace reference

}  // namespace smk::cpu
