// softmaxkit (internal): the CUDA backend of linear cross-entropy (src/cuda/cross_entropy/linear.cu), called by
// src/cross_entropy/linear_dispatch.cpp after the arguments were validated. Semantics:
// include/softmaxkit/linear_cross_entropy.hpp.
#pragma once

#include "cross_entropy/linear_args.hpp"

namespace smk::cuda {

void linear_cross_entropy(const char* op, const detail::LinearCrossEntropyProblem& p, const TensorView& loss,
                          const TensorView& lse, const TensorView& grad_hidden, const TensorView& grad_weight,
                          const TensorView& grad_bias, const TensorView& hidden, const TensorView& weight,
                          const TensorView& targets, const TensorView& grad_loss,
                          const LinearCrossEntropyOptions& options, Stream stream);

}  // namespace smk::cuda
