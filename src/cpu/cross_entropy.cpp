// softmaxkit CPU backend: cross-entropy forward and backward, one algorithm templated on the compute type
// (Acc = float: the float path, double for f64 logits; Acc = double: the reference). Per row: load (soft-cap),
// the row's OnlineSoftmaxState, then the loss terms or the gradient. Sums across rows accumulate in double in both
// paths: it costs nothing next to the row work and keeps a mean over millions of rows exact to float precision.
#include "softmaxkit/cpu/cross_entropy.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "cpu/cross_entropy_internal.hpp"
#include "cpu/rows.hpp"
#include "cross_entropy/args.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"

namespace smk::cpu {

namespace {

using smk::detail::CrossEntropyProblem;

std::int64_t target_at(const TensorView& targets, std::int64_t i) {
  const std::int64_t off = i * targets.strides[0];
  return targets.dtype == DType::i32 ? static_cast<const std::int32_t*>(targets.data)[off]
                                     : static_cast<const std::int64_t*>(targets.data)[off];
}

// Every target is a class or ignore_index; checked before anything is written.
void check_targets(const char* op, const TensorView& targets, const CrossEntropyProblem& p, std::int64_t ignore) {
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const std::int64_t t = target_at(targets, i);
    if (t != ignore && (t < 0 || t >= p.classes))
      throw_invalid_argument(op, "targets", "targets[" + std::to_string(i) + "] = " + std::to_string(t) +
                                                " is outside [0, " + std::to_string(p.classes) +
                                                ") and is not ignore_index (" + std::to_string(ignore) + ")");
  }
}

template <typename Acc>
std::vector<Acc> load_weights(const char* op, const CrossEntropyOptions& o, std::int64_t c) {
  std::vector<Acc> w(static_cast<std::size_t>(c), Acc(1));
  if (!o.class_weights.data) return w;
  detail::with_type(o.class_weights.dtype, o.class_weights.data, [&](auto* p) {
    for (std::int64_t j = 0; j < c; ++j) w[j] = detail::load<Acc>(p + j * o.class_weights.strides[0]);
  });
  for (std::int64_t j = 0; j < c; ++j)
    if (!(w[j] >= 0) || !std::isfinite(static_cast<double>(w[j])))
      throw_invalid_argument(op, "options.class_weights",
                             "weight[" + std::to_string(j) + "] must be finite and >= 0");
  return w;
}

// One row, loaded and soft-capped, with its state. z holds the (capped) logits in the compute type, e the shifted
// exponentials. For a finite row, log_l = log(l) is formed as log1p(Σ of every term but the max's, which is exactly
// 1), and LSE − z_c as (m − z_c) + log_l: when one class dominates, l − 1 is tiny and a rounded LSE (or log of a
// rounded l) would lose all of it, while these forms keep it to the last digit.
template <typename Acc>
struct Row {
  std::vector<Acc> z, e;
  OnlineSoftmaxState<Acc> state;
  Acc log_l = 0;

  bool finite() const { return std::isfinite(static_cast<double>(state.m)); }
  Acc lse() const { return finite() ? state.m + log_l : state.lse(); }
  Acc lse_minus(Acc zc) const { return finite() ? (state.m - zc) + log_l : state.lse() - zc; }

  template <typename T>
  void load(const T* x, std::int64_t c, std::int64_t stride, Acc cap) {
    z.resize(static_cast<std::size_t>(c));
    e.resize(static_cast<std::size_t>(c));
    Acc max = -smk::detail::inf_<Acc>();
    for (std::int64_t j = 0; j < c; ++j) {
      Acc v = detail::load<Acc>(x + j * stride);
      if (cap > 0) v = cap * std::tanh(v / cap);
      z[j] = v;
      max = nan_max(max, v);
    }
    const Acc shift = OnlineSoftmaxState<Acc>::shift_for(max);
    for (std::int64_t j = 0; j < c; ++j) e[j] = exp_diff(z[j], shift);
    state = OnlineSoftmaxState<Acc>::from_max_and_sum(max, detail::pairwise_sum(e.data(), c));
    if (finite()) {  // the state's excess d = l − 1, summed without the max's exact 1 (online_state.hpp)
      std::int64_t k = 0;
      while (z[k] != max) ++k;
      e[k] = 0;
      state = OnlineSoftmaxState<Acc>::from_max_and_excess(max, detail::pairwise_sum(e.data(), c));
      log_l = state.normalizer().log_sum;  // log1p(d)
      e[k] = 1;  // exp_diff(max, max) is exactly 1
    }
  }
};

// Denominators of the mean: Σ w_t over counted rows (cross-entropy part) and the count (z-loss part).
template <typename Acc>
void mean_denominators(const TensorView& targets, const CrossEntropyProblem& p, const CrossEntropyOptions& o,
                       const std::vector<Acc>& w, double& weight_sum, double& count) {
  weight_sum = 0;
  count = 0;
  for (std::int64_t i = 0; i < p.rows; ++i) {
    const std::int64_t t = target_at(targets, i);
    if (t == o.ignore_index) continue;
    weight_sum += static_cast<double>(w[t]);
    count += 1;
  }
}

double safe_div(double num, double den, bool nothing_is_zero) {
  if (den == 0 && nothing_is_zero) return 0.0;
  return num / den;  // 0/0 = NaN, as PyTorch
}

template <typename Acc>
void forward(const char* op, const TensorView& loss, const TensorView& logits, const TensorView& targets,
             const CrossEntropyOptions& o, const TensorView& lse_out, const TensorView& z_out) {
  const CrossEntropyProblem p = smk::detail::check_cross_entropy_args(op, loss, logits, targets, o, lse_out, z_out);
  if (!logits.device.is_cpu()) throw_invalid_argument(op, "logits", "is on " + logits.device.str() + ", expected cpu");
  check_targets(op, targets, p, o.ignore_index);
  const std::vector<Acc> w = load_weights<Acc>(op, o, p.classes);
  const Acc eps = o.label_smoothing, s = o.z_loss, cap = o.softcap, C = static_cast<Acc>(p.classes);
  const bool per_row = o.reduction == Reduction::none;

  double ce_sum = 0, z_sum = 0;
  Row<Acc> row;
  std::vector<Acc> terms;
  detail::with_type(logits.dtype, logits.data, [&](auto* x) {
    // An empty row (C = 0) forms no pointer: the logits of an empty tensor may be null, and null + offset is UB.
    auto row_of = [&](std::int64_t i) { return p.classes > 0 ? x + i * logits.strides[0] : x; };
    for (std::int64_t i = 0; i < p.rows; ++i) {
      const std::int64_t t = target_at(targets, i);
      Acc ce = 0, zl = 0, lse = 0;
      if (t != o.ignore_index) {
        row.load(row_of(i), p.classes, logits.strides[1], cap);
        lse = row.lse();
        ce = (1 - eps) * w[t] * row.lse_minus(row.z[t]);
        if (eps > 0) {  // Σ_c w_c (LSE − z_c): non-negative terms, summed pairwise
          terms.resize(static_cast<std::size_t>(p.classes));
          for (std::int64_t c = 0; c < p.classes; ++c) terms[c] = w[c] * row.lse_minus(row.z[c]);
          ce += eps / C * detail::pairwise_sum(terms.data(), p.classes);
        }
        if (s > 0) zl = s * lse * lse;
      } else if (lse_out.data) {
        row.load(row_of(i), p.classes, logits.strides[1], cap);  // LSE is still reported
        lse = row.lse();
      }
      if (lse_out.data) detail::with_type(lse_out.dtype, lse_out.data, [&](auto* o_) { detail::store(o_ + i * lse_out.strides[0], lse); });
      if (per_row) {
        detail::with_type(loss.dtype, loss.data, [&](auto* o_) { detail::store(o_ + i * loss.strides[0], ce + zl); });
        if (z_out.data) detail::with_type(z_out.dtype, z_out.data, [&](auto* o_) { detail::store(o_ + i * z_out.strides[0], zl); });
      }
      ce_sum += static_cast<double>(ce);
      z_sum += static_cast<double>(zl);
    }
  });
  if (per_row) return;
  double ce_total = ce_sum, z_total = z_sum;
  if (o.reduction == Reduction::mean) {
    double weight_sum, count;
    mean_denominators(targets, p, o, w, weight_sum, count);
    ce_total = safe_div(ce_sum, weight_sum, o.mean_of_nothing_is_zero);
    z_total = safe_div(z_sum, count, o.mean_of_nothing_is_zero);
  }
  detail::with_type(loss.dtype, loss.data, [&](auto* o_) { detail::store(o_, static_cast<Acc>(ce_total + z_total)); });
  if (z_out.data) detail::with_type(z_out.dtype, z_out.data, [&](auto* o_) { detail::store(o_, static_cast<Acc>(z_total)); });
}

template <typename Acc>
void backward(const char* op, const TensorView& grad, const TensorView& logits, const TensorView& targets,
              const TensorView& grad_loss, const CrossEntropyOptions& o, const TensorView& lse_in) {
  const CrossEntropyProblem p =
      smk::detail::check_cross_entropy_backward_args(op, grad, logits, targets, grad_loss, o, lse_in);
  if (!logits.device.is_cpu()) throw_invalid_argument(op, "logits", "is on " + logits.device.str() + ", expected cpu");
  check_targets(op, targets, p, o.ignore_index);
  const std::vector<Acc> w = load_weights<Acc>(op, o, p.classes);
  Acc w_total = 0;
  for (Acc v : w) w_total += v;
  const Acc eps = o.label_smoothing, s = o.z_loss, cap = o.softcap, C = static_cast<Acc>(p.classes);
  const bool per_row = o.reduction == Reduction::none;
  // No classes: no gradient to write, and the rows' pointers (possibly null for an empty tensor) are not formed.
  if (p.classes == 0) return;

  // Upstream scale of each part: grad_loss, divided by the mean's denominators.
  double g_scalar = 0, ce_den = 1, z_den = 1;
  if (!per_row) {
    detail::with_type(grad_loss.dtype, grad_loss.data, [&](auto* g) { g_scalar = static_cast<double>(detail::load<double>(g)); });
    if (o.reduction == Reduction::mean) mean_denominators(targets, p, o, w, ce_den, z_den);
  }
  const double ce_scale_all = per_row ? 1.0 : safe_div(g_scalar, ce_den, o.mean_of_nothing_is_zero);
  const double z_scale_all = per_row ? 1.0 : safe_div(g_scalar, z_den, o.mean_of_nothing_is_zero);

  Row<Acc> row;
  detail::with_type(logits.dtype, logits.data, [&](auto* x) {
    detail::with_type(grad.dtype, grad.data, [&](auto* gx) {
      for (std::int64_t i = 0; i < p.rows; ++i) {
        const std::int64_t t = target_at(targets, i);
        auto* gout = gx + i * grad.strides[0];
        const std::int64_t gs = grad.strides[1];
        if (t == o.ignore_index) {
          for (std::int64_t j = 0; j < p.classes; ++j) detail::store(gout + j * gs, Acc(0));
          continue;
        }
        const auto* xr = x + i * logits.strides[0];
        row.load(xr, p.classes, logits.strides[1], cap);  // the whole row is read before any of it is written
        // The CPU always recomputes the LSE from the row (a passed `lse` only saves GPU kernels a pass).
        const Acc lse = row.lse();
        const RowNormalizer<Acc> norm = row.state.normalizer();
        // 1 − p_t = Σ_{j≠t} e_j / l, summed without the target's term: as p_t → 1 this keeps every digit, where
        // p_t − 1 (or expm1(z_t − LSE), with LSE rounded) cancels to 0 or garbage.
        const Acc e_t = row.e[t];
        row.e[t] = 0;
        const Acc rest = detail::pairwise_sum(row.e.data(), p.classes);
        row.e[t] = e_t;
        Acc g_ce = static_cast<Acc>(ce_scale_all), g_z = static_cast<Acc>(z_scale_all);
        if (per_row) {
          Acc g = 0;
          detail::with_type(grad_loss.dtype, grad_loss.data, [&](auto* gl) { g = detail::load<Acc>(gl + i * grad_loss.strides[0]); });
          g_ce = g_z = g;
        }
        const Acc hard = (1 - eps) * w[t];  // weight of the one-hot target
        const Acc soft = eps / C;           // weight of the uniform part
        for (std::int64_t j = 0; j < p.classes; ++j) {
          const Acc pj = norm.softmax_from_exp(row.e[j]);
          const Acc hard_term = j == t ? -rest * norm.inv_sum : pj;  // p_j − [j = t]
          Acc d = g_ce * (hard * hard_term + soft * (w_total * pj - w[j]));
          if (s > 0) d += g_z * 2 * s * lse * pj;
          if (cap > 0) {
            const Acc th = std::tanh(detail::load<Acc>(xr + j * logits.strides[1]) / cap);
            d *= 1 - th * th;
          }
          detail::store(gout + j * gs, d);
        }
      }
    });
  });
}

}  // namespace

namespace internal {
void cross_entropy(const char* op, const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss) {
  if (logits.dtype == DType::f64) forward<double>(op, loss, logits, targets, options, lse, z_loss);
  else forward<float>(op, loss, logits, targets, options, lse, z_loss);
}
void cross_entropy_backward(const char* op, const TensorView& grad_logits, const TensorView& logits,
                            const TensorView& targets, const TensorView& grad_loss, const CrossEntropyOptions& options,
                            const TensorView& lse) {
  if (logits.dtype == DType::f64) backward<double>(op, grad_logits, logits, targets, grad_loss, options, lse);
  else backward<float>(op, grad_logits, logits, targets, grad_loss, options, lse);
}
}  // namespace internal

void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss) {
  internal::cross_entropy("cpu::cross_entropy", loss, logits, targets, options, lse, z_loss);
}
void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options, const TensorView& lse) {
  internal::cross_entropy_backward("cpu::cross_entropy_backward", grad_logits, logits, targets, grad_loss, options, lse);
}

namespace reference {
void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss) {
  forward<double>("cpu::reference::cross_entropy", loss, logits, targets, options, lse, z_loss);
}
void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options, const TensorView& lse) {
  backward<double>("cpu::reference::cross_entropy_backward", grad_logits, logits, targets, grad_loss, options, lse);
}
}  // namespace reference

}  // namespace smk::cpu
