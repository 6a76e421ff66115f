// softmaxkit: cross-entropy from logits, in one pass over the logits, with PyTorch's semantics.
//
// For row i with logits x_i (C classes) and target t_i, after optional soft-capping z = c·tanh(x / c):
//   nll_i    = LSE(z_i) − z_i[t_i]
//   smooth_i = Σ_c w_c · (LSE(z_i) − z_i[c])                        (label smoothing's uniform part)
//   ce_i     = (1 − ε) · w_{t_i} · nll_i + (ε / C) · smooth_i       (ε = label_smoothing, w = class weights or 1)
//   zl_i     = s · LSE(z_i)²                                        (PaLM's z-loss, s = z_loss)
//   loss_i   = ce_i + zl_i
// Rows whose target is `ignore_index` contribute 0 and are not counted. Reductions:
//   none: loss[i] = loss_i;  sum: Σ_i loss_i;
//   mean: Σ_i ce_i / Σ_i w_{t_i}  +  Σ_i zl_i / (number of rows not ignored)   (PyTorch's weighted mean for the
//         cross-entropy; the z-loss, which regularises the normalizer and not a class, is a plain mean).
// When every row is ignored, mean is 0/0 = NaN as in PyTorch, or 0 with `mean_of_nothing_is_zero`.
//
// Shapes: logits [N, C] (any row stride; f32, f16, bf16; f64 on the CPU), targets [N] (i32 or i64).
// Outputs are f32 (f64 for f64 logits): loss [N] for none and [] for sum/mean; lse [N] and z_loss (shape of loss)
// are optional (a view with null data is "not wanted"). A target outside [0, C) that is not ignore_index is an
// error naming the row; on the GPU, where only the kernel sees it, the row's loss is NaN and an error flag is raised.
//
// On the GPU (src/cuda/cross_entropy/): f32 arithmetic for every storage type; per-row results are bitwise the
// same from run to run and alone or in any batch, and sum / mean add the rows in double in a fixed order (no
// atomics). Each call checks the device's error flag (bad targets, bad class weights) after its kernels: it copies
// the flag back and waits for `stream` (cudaStreamSynchronize), so a call returns with its work finished and cannot
// be captured into a CUDA graph. The error is thrown after the outputs were written: the bad rows' loss and
// gradient are NaN (a sum or mean over them too); class weights are checked on the device too (the CPU checks them
// before writing anything).
//
// Forward + backward in one call: cross_entropy_forward_backward (below). On the GPU a row of up to 49152 classes
// (a thread-block cluster of up to 4 blocks holding it on chip) is read once and its gradient written once,
// optionally over the logits; soft-capped or wider rows take the two calls (the logits read twice), which measured
// faster there than holding a 151936-wide row across 13 SMs (src/cuda/cross_entropy/fused.cu).
#pragma once

#include <cstdint>

#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"

namespace smk {

enum class Reduction : unsigned char { none, sum, mean };

struct CrossEntropyOptions {
  std::int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;
  bool mean_of_nothing_is_zero = false;  // mean over zero counted rows: NaN (PyTorch) or, when true, 0
  float label_smoothing = 0.0f;          // ε in [0, 1]
  float z_loss = 0.0f;                   // s ≥ 0; 1e-4 is usual
  float softcap = 0.0f;                  // c > 0 soft-caps the logits as c·tanh(x / c); 0 disables
  TensorView class_weights{};            // optional [C] f32 (f64 for f64 logits), each ≥ 0
};

// Forward. `lse` and `z_loss` are optional outputs (null data: not wanted).
void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options = {}, const TensorView& lse = {}, const TensorView& z_loss = {},
                   Stream stream = {});

// Backward: grad_logits = ∂(reduced loss)/∂logits · grad_loss, where grad_loss has the loss's shape ([] or [N]).
//   ∂loss_i/∂z_ij = (1 − ε)·w_t·(p_ij − [j = t]) + (ε/C)·(Σw·p_ij − w_j) + 2s·LSE_i·p_ij, times 1 − (z/c)² under
//   soft-capping. The target entry p_it − 1 is formed in f32 as −(Σ_{j≠t} e_ij) / l_i from p_it ≥ ½ on, so it keeps
//   its digits as p → 1 (p − 1, or expm1 of z − LSE with a rounded LSE, cancels to 0 there); below ½ (on the GPU) as
//   p_it − 1, which rounds once where the sum carries every term's error.
// `lse` may pass the forward's per-row LSE so a GPU kernel can skip a pass (null data: recompute); the CPU always
// recomputes it. The GPU forms p = exp(z − LSE) from it, so it must be the forward's for the same logits and options
// (an LSE from other logits gives a gradient of those). `grad_logits` has the
// logits' shape and dtype (or f32); it may be `logits` itself (in place: the logits are read once, the gradient
// written once).
void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options = {},
                            const TensorView& lse = {}, Stream stream = {});

// Forward and backward in one call: the forward's outputs (loss; lse and z_loss optional, null data: not wanted) and
// grad_logits = ∂(reduced loss)/∂logits · grad_loss, with grad_loss of the loss's shape or null data for 1. For sum
// and mean the gradient is linear in the scalar grad_loss, so an autograd wrapper may pass null and scale later only
// when the upstream gradient is not 1. `grad_logits` may be `logits` itself (in place: the logits are destroyed).
// Values as cross_entropy and cross_entropy_backward give (not bitwise: the fused kernel forms p = e^(z − m) / l
// from the row's own max and sum, within the same gates). Errors as both: a bad target raises after every output
// was written (its rows NaN).
void cross_entropy_forward_backward(const TensorView& loss, const TensorView& grad_logits, const TensorView& logits,
                                    const TensorView& targets, const CrossEntropyOptions& options = {},
                                    const TensorView& grad_loss = {}, const TensorView& lse = {},
                                    const TensorView& z_loss = {}, Stream stream = {});

}  // namespace smk

// Linear cross-entropy (the classifier's product and this loss, without the logits): its own header.
#include "softmaxkit/linear_cross_entropy.hpp"
