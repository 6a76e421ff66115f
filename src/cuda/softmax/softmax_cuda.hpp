// softmaxkit (internal): the CUDA backend of the softmax family, called by src/softmax/dispatch.cpp after the
// arguments were validated. It picks the kernel; the user never does.
#pragma once

#include "softmax/args.hpp"

namespace smk::cuda {

// softmax, log_softmax, logsumexp (`out` is the LSE) and state (`out` is m, `out_sum` is l; ignored otherwise).
void softmax_forward(const char* op, detail::SoftmaxKind kind, const detail::SoftmaxProblem& problem,
                     const TensorView& out, const TensorView& out_sum, const TensorView& in,
                     const SoftmaxOptions& options, Stream stream);
void softmax_backward(const char* op, detail::BackwardKind kind, const detail::SoftmaxProblem& problem,
                      const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& options,
                      Stream stream);

}  // namespace smk::cuda
