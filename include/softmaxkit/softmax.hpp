// softmaxkit: the softmax family — softmax, log-softmax and log-sum-exp over one dimension of a tensor.
//
// One entry point per op. It validates its arguments, then dispatches on the tensors' device: the CPU float path
// (softmaxkit/cpu/softmax.hpp) or the CUDA backend. The numerical contract — what −inf, +inf and NaN rows produce,
// accuracy bounds — is docs/semantics.md, and every backend is tested against it.
//
// Shapes: `in` has any rank ≥ 1 and any non-negative strides; the reduction runs over `options.dim`.
//   softmax, log_softmax: `out` has in's shape. Its dtype is in's, or f32 for f16/bf16 inputs. It may be `in`
//   itself (in place, same dtype); any other overlap is rejected.
//   logsumexp: `out` has in's shape with `dim` removed, or kept with size 1. Its dtype is f32 for f16/bf16 inputs
//   (the log-sum-exp is a statistic, not an activation), else in's.
#pragma once

#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"

namespace smk {

struct SoftmaxOptions {
  int dim = -1;                                     // the dimension reduced over; negative counts from the end
  EmptyRowPolicy empty_rows = EmptyRowPolicy::nan;  // what a row of only −inf produces (its LSE is −inf either way)

  // Temperature: scores are divided by T before the shift, softmax(x / T) (a correctly rounded f32 division; the
  // logsumexp and the state are those of x / T, not T·LSE). A scalar, or one value per row when
  // `temperature_per_row.data` is set (shape: in's shape without `dim`, or with it of size 1; f32); not both.
  // T must be > 0 and finite. The scalar is checked on every backend. Per-row values are checked on the CPU
  // (smk::Error before anything is written); the GPU cannot check them without a round trip, so a row whose T is
  // ≤ 0, NaN or infinite produces NaN in every output of that row (softmax, log-softmax, LSE, m and l), never a
  // silently wrong number. As T → 0 softmax tends to the one-hot argmax (ties share it) and T·LSE(x/T) to max(x);
  // see docs/semantics.md.
  float temperature = 1.0f;
  TensorView temperature_per_row{};

  // Optional mask, broadcast over rows: same rank as `in`, each size equal to in's or 1 (stride 0 broadcasts).
  //   additive (dtype f32, or in's dtype): added to the scaled scores, x / T + mask (−inf removes a position);
  //   boolean (dtype b8): true keeps a position, false removes it (as PyTorch's SDPA attn_mask).
  // A row whose every position is removed is an empty row and follows `empty_rows`.
  TensorView mask{};
};

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});

// The per-row online state (m, l) itself, for callers that merge partial rows (split vocabularies, several GPUs):
// `out_max` and `out_sum` have logsumexp's output shape and dtype f32 (f64 for f64 input on the CPU). m is the row
// max of the (scaled, masked) scores bit for bit and l = Σ exp(z − m); an empty row gives (−inf, 0).
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options = {}, Stream stream = {});

// Backward passes, given the forward output y and the upstream gradient dy (same shape), over options.dim:
//   softmax:      dx = y ⊙ (dy − Σ dy ⊙ y)
//   log_softmax:  dx = dy − exp(y) · Σ dy
// `dx` has y's shape and dtype (or f32 for f16/bf16); it may alias dy (or y) exactly (in place). y and dy share a
// dtype. Temperature scales the result by 1/T (the chain rule through x / T; per-row temperatures as in the
// forward ops, invalid ones giving NaN rows on the GPU); mask and empty_rows do not apply and are ignored. These are
// the derivatives where y depends on x. For log-softmax it does not at a position the mask removed (y = −inf) or in a
// row the zeros policy filled (y = 0): the true gradient there is 0, which the formula does not give, so a caller
// that used a mask or EmptyRowPolicy::zeros zeroes those entries itself (softmaxkit.torch's autograd does). For
// softmax the formula already gives 0 there.
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                      const SoftmaxOptions& options = {}, Stream stream = {});
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options = {}, Stream stream = {});

}  // namespace smk
