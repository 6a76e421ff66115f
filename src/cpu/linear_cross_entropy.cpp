// softmaxkit CPU backend: linear cross-entropy (softmaxkit/linear_cross_entropy.hpp), one algorithm templated on the
// compute type (Acc = float: the float path, double for f64 inputs; Acc = double: the reference). Built on the CPU
// cross-entropy: per chunk of rows, the logits X_c = H_c·Wᵀ + b in Acc, cpu::cross_entropy (reduction none, no
// z-loss) for each row's loss and LSE, cpu::cross_entropy_backward (reduction none, each row scaled by its
// cross-entropy upstream factor) for G_c, then the z-loss term of G added here (the mean scales it by the count of
// rows, not by Σ w_t, so it cannot ride on the cross-entropy's per-row factor), and the three plain-loop products.
#include "softmaxkit/cpu/linear_cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/rows.hpp"
#include "cross_entropy/linear_args.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"

namespace smk::cpu {

namespace {

std::int64_t target_at(const TensorView& targets, std::int64_t i) {
  const std::int64_t off = i * targets.strides[0];
  return targets.dtype == DType::i32 ? static_cast<const std::int32_t*>(targets.data)[off]
                                     : static_cast<const std::int64_t*>(targets.data)[off];
}

// A matrix [rows, cols] of `v` (rows contiguous) widened to Acc.
template <typename Acc>
std::vector<Acc> load_matrix(const TensorView& v, std::int64_t row0, std::int64_t rows, std::int64_t cols) {
  std::vector<Acc> out(static_cast<std::size_t>(rows * cols));
  detail::with_type(v.dtype, v.data, [&](auto* p) {
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t k = 0; k < cols; ++k) out[i * cols + k] = detail::load<Acc>(p + (row0 + i) * v.strides[0] + k * v.strides[1]);
  });
  return out;
}
template <typename Acc>
std::vector<Acc> load_vector(const TensorView& v, std::int64_t n, Acc fill) {
  std::vector<Acc> out(static_cast<std::size_t>(n), fill);
  if (!v.data) return out;
  detail::with_type(v.dtype, v.data, [&](auto* p) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = detail::load<Acc>(p + i * v.strides[0]);
  });
  return out;
}
template <typename Acc>
void store_at(const TensorView& v, std::int64_t offset, Acc value) {
  detail::with_type(v.dtype, v.data, [&](auto* p) { detail::store(p + offset, value); });
}

double safe_div(double num, double den, bool nothing_is_zero) {
  return den == 0 && nothing_is_zero ? 0.0 : num / den;  // 0/0 = NaN, as PyTorch
}

template <typename Acc>
void run(const char* op, const TensorView& loss, const TensorView& lse_out, const TensorView& grad_hidden,
         const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
         const TensorView& weight, const TensorView& targets, const TensorView& grad_loss,
         const LinearCrossEntropyOptions& options) {
  const smk::detail::LinearCrossEntropyProblem p = smk::detail::check_linear_cross_entropy_args(
      op, loss, lse_out, grad_hidden, grad_weight, grad_bias, hidden, weight, targets, grad_loss, options);
  if (!hidden.device.is_cpu()) throw_invalid_argument(op, "hidden", "is on " + hidden.device.str() + ", expected cpu");
  const std::int64_t n = p.rows, d = p.dim, V = p.vocab;
  const CrossEntropyOptions& o = options.ce;
  const bool per_row = o.reduction == Reduction::none;
  constexpr DType acc_dtype = std::is_same_v<Acc, double> ? DType::f64 : DType::f32;

  // Everything that can be rejected is rejected before anything is written: targets, then class weights.
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = target_at(targets, i);
    if (t != o.ignore_index && (t < 0 || t >= V))
      throw_invalid_argument(op, "targets", "targets[" + std::to_string(i) + "] = " + std::to_string(t) +
                                                " is outside [0, " + std::to_string(V) + ") and is not ignore_index (" +
                                                std::to_string(o.ignore_index) + ")");
  }
  std::vector<Acc> w = load_vector<Acc>(o.class_weights, V, Acc(1));
  for (std::int64_t j = 0; j < V; ++j)
    if (!(w[j] >= 0) || !std::isfinite(static_cast<double>(w[j])))
      throw_invalid_argument(op, "options.ce.class_weights", "weight[" + std::to_string(j) + "] must be finite and >= 0");

  // The mean's denominators (cross_entropy.hpp): Σ w_t and the count of the rows not ignored.
  double den_ce = 0, den_z = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = target_at(targets, i);
    if (t == o.ignore_index) continue;
    den_ce += static_cast<double>(w[t]);
    den_z += 1;
  }
  double g_scalar = 1;
  if (!per_row && grad_loss.data) g_scalar = static_cast<double>(load_vector<double>(grad_loss, 1, 1.0)[0]);
  const std::vector<Acc> g_rows = per_row ? load_vector<Acc>(grad_loss, n, Acc(1)) : std::vector<Acc>{};
  double scale_ce = g_scalar, scale_z = g_scalar;
  if (o.reduction == Reduction::mean) {
    scale_ce = safe_div(g_scalar, den_ce, o.mean_of_nothing_is_zero);
    scale_z = safe_div(g_scalar, den_z, o.mean_of_nothing_is_zero);
  }

  const std::vector<Acc> W = load_matrix<Acc>(weight, 0, V, d);
  const std::vector<Acc> bias = load_vector<Acc>(options.bias, V, Acc(0));
  std::vector<Acc> dW(static_cast<std::size_t>(V * d), Acc(0)), db(static_cast<std::size_t>(V), Acc(0));
  const Acc s = o.z_loss, cap = o.softcap;

  // The chunk's cross-entropy runs without z-loss (added here) and with class weights in the compute type.
  CrossEntropyOptions chunk_opt = o;
  chunk_opt.reduction = Reduction::none;
  chunk_opt.z_loss = 0;
  chunk_opt.class_weights = o.class_weights.data ? TensorView::contiguous(w.data(), acc_dtype, Device::cpu(), {V})
                                                 : TensorView{};
  const auto ce_forward = [](auto&&... a) {
    if constexpr (std::is_same_v<Acc, double>) cpu::reference::cross_entropy(a...);
    else cpu::cross_entropy(a...);
  };
  const auto ce_backward = [](auto&&... a) {
    if constexpr (std::is_same_v<Acc, double>) cpu::reference::cross_entropy_backward(a...);
    else cpu::cross_entropy_backward(a...);
  };

  double ce_sum = 0, z_sum = 0;
  for (std::int64_t r0 = 0; r0 < n; r0 += p.chunk_rows) {
    const std::int64_t c = std::min(p.chunk_rows, n - r0);
    const std::vector<Acc> H = load_matrix<Acc>(hidden, r0, c, d);
    std::vector<Acc> X(static_cast<std::size_t>(c * V));
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t j = 0; j < V; ++j) {
        Acc acc = 0;
        for (std::int64_t k = 0; k < d; ++k) acc += H[i * d + k] * W[j * d + k];
        X[i * V + j] = acc + bias[j];
      }
    std::vector<std::int64_t> t(static_cast<std::size_t>(c));
    for (std::int64_t i = 0; i < c; ++i) t[i] = target_at(targets, r0 + i);
    const TensorView xv = TensorView::contiguous(X.data(), acc_dtype, Device::cpu(), {c, V});
    const TensorView tv = TensorView::of(t.data(), {c});
    std::vector<Acc> ce(static_cast<std::size_t>(c)), lse(static_cast<std::size_t>(c));
    ce_forward(TensorView::contiguous(ce.data(), acc_dtype, Device::cpu(), {c}), xv, tv, chunk_opt,
               TensorView::contiguous(lse.data(), acc_dtype, Device::cpu(), {c}), TensorView{});

    // G_c: the cross-entropy part through the CPU backward, each row scaled by its upstream factor.
    std::vector<Acc> gce(static_cast<std::size_t>(c)), G(static_cast<std::size_t>(c * V));
    for (std::int64_t i = 0; i < c; ++i) gce[i] = per_row ? g_rows[r0 + i] : static_cast<Acc>(scale_ce);
    ce_backward(TensorView::contiguous(G.data(), acc_dtype, Device::cpu(), {c, V}), xv, tv,
                TensorView::contiguous(gce.data(), acc_dtype, Device::cpu(), {c}), chunk_opt, TensorView{});

    for (std::int64_t i = 0; i < c; ++i) {
      const std::int64_t row = r0 + i;
      const bool counted = t[i] != o.ignore_index;
      const Acc zl = counted && s > 0 ? s * lse[i] * lse[i] : Acc(0);
      if (counted && s > 0) {  // ∂(s·LSE²)/∂x_j = 2s·LSE·p_j, times 1 − tanh² under soft-capping
        const Acc gz = (per_row ? g_rows[row] : static_cast<Acc>(scale_z)) * 2 * s * lse[i];
        for (std::int64_t j = 0; j < V; ++j) {
          const Acc x = X[i * V + j];
          const Acc th = cap > 0 ? std::tanh(x / cap) : Acc(0);
          const Acc z = cap > 0 ? cap * th : x;
          Acc dz = gz * std::exp(z - lse[i]);
          if (cap > 0) dz *= 1 - th * th;
          G[i * V + j] += dz;
        }
      }
      if (lse_out.data) store_at(lse_out, row * lse_out.strides[0], lse[i]);
      if (per_row) store_at(loss, row * loss.strides[0], ce[i] + zl);
      ce_sum += static_cast<double>(ce[i]);
      z_sum += static_cast<double>(zl);
    }

    // dH_c = G_c·W, written once; dW += G_cᵀ·H_c and db += Σ_rows G_c in Acc.
    for (std::int64_t i = 0; i < c; ++i) {
      std::vector<Acc> acc(static_cast<std::size_t>(d), Acc(0));
      for (std::int64_t j = 0; j < V; ++j) {
        const Acc g = G[i * V + j];
        for (std::int64_t k = 0; k < d; ++k) acc[k] += g * W[j * d + k];
      }
      for (std::int64_t k = 0; k < d; ++k) store_at(grad_hidden, (r0 + i) * grad_hidden.strides[0] + k * grad_hidden.strides[1], acc[k]);
    }
    for (std::int64_t j = 0; j < V; ++j)
      for (std::int64_t i = 0; i < c; ++i) {
        const Acc g = G[i * V + j];
        db[j] += g;
        for (std::int64_t k = 0; k < d; ++k) dW[j * d + k] += g * H[i * d + k];
      }
  }

  for (std::int64_t j = 0; j < V; ++j)
    for (std::int64_t k = 0; k < d; ++k) store_at(grad_weight, j * grad_weight.strides[0] + k * grad_weight.strides[1], dW[j * d + k]);
  if (grad_bias.data)
    for (std::int64_t j = 0; j < V; ++j) store_at(grad_bias, j * grad_bias.strides[0], db[j]);
  if (per_row) return;
  double total = ce_sum + z_sum;
  if (o.reduction == Reduction::mean)
    total = safe_div(ce_sum, den_ce, o.mean_of_nothing_is_zero) + safe_div(z_sum, den_z, o.mean_of_nothing_is_zero);
  store_at(loss, 0, static_cast<Acc>(total));
}

}  // namespace

void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss,
                          const LinearCrossEntropyOptions& options) {
  if (hidden.dtype == DType::f64)
    run<double>("cpu::linear_cross_entropy", loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight, targets,
                grad_loss, options);
  else
    run<float>("cpu::linear_cross_entropy", loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight, targets,
               grad_loss, options);
}

namespace reference {
void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss,
                          const LinearCrossEntropyOptions& options) {
  run<double>("cpu::reference::linear_cross_entropy", loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight,
              targets, grad_loss, options);
}
}  // namespace reference

}  // namespace smk::cpu
