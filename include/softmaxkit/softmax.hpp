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
  int dim = -1;                                 // the dimension reduced over; negative counts from the end
  EmptyRowPolicy empty_rows = EmptyRowPolicy::nan;  // what a row of only −inf produces (its LSE is −inf either way)
};

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {}, Stream stream = {});

}  // namespace smk
