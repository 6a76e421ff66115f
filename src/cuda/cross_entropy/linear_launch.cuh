// softmaxkit (internal, CUDA host code in .cu files): the cross-entropy launchers linear cross-entropy
// (linear.cu) drives one chunk of rows at a time, with the totals of one scan over every row (launch_scan), so a
// mean's denominators are the whole call's. Defined beside the kernels they launch (forward.cu, backward.cu).
#pragma once

#include "cuda/cross_entropy/common.cuh"

namespace smk::cuda::ce {

// The forward's per-row kernel on the rows of `a` (after launch_stats with exclude_target): loss per row into
// `loss` (null: not written), the LSE into `lse` (not null), and for sum / mean each row's cross-entropy and z-loss
// into ce_rows / zl_rows (null for none).
void launch_rows(const Args& a, DType x_dtype, const State* states, const float* smooth, const Totals* totals,
                 float* loss, std::int64_t loss_stride, float* lse, std::int64_t lse_stride, float* ce_rows,
                 float* zl_rows, cudaStream_t s);
// Sum / mean over a.rows rows of ce_rows / zl_rows into the scalar `loss` (and `z`, when not null). dependent: a
// programmatic dependent launch of the kernel before it (which must have let it: griddepcontrol.launch_dependents).
// fix: the mean's f32 target entries to re-form (TargetFix, common.cuh; the one-read kernel's), or none.
void launch_reduce(const Args& a, const float* ce_rows, const float* zl_rows, const Totals* totals, float* loss,
                   float* z, cudaStream_t s, bool dependent = false, const TargetFix& fix = {});
// The gradient ∂loss/∂x · grad_loss of f32 logits (a.x), written in `out_dtype` (f32, f16, bf16) to `grad`
// ([a.rows, a.classes], row stride `grad_row_stride`, columns contiguous), from the forward's LSE. `rest`
// ([a.rows · a.chunks]) and `xt` ([a.rows]) are scratch. grad_loss: per row (stride gl_stride) for none, [0] else.
void launch_grad_f32_logits(const Args& a, DType out_dtype, void* grad, std::int64_t grad_row_stride,
                            const float* lse, std::int64_t lse_stride, const float* grad_loss, std::int64_t gl_stride,
                            float* rest, float* xt, const Totals* totals, cudaStream_t s);

}  // namespace smk::cuda::ce
