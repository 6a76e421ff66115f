// softmaxkit (internal): the CUDA backend of cross-entropy, called by src/cross_entropy/dispatch.cpp after the
// arguments were validated (src/cross_entropy/args.cpp). Semantics: include/softmaxkit/cross_entropy.hpp.
//
// Bad targets and bad class weights are only visible to the kernels. They record the first offending row (or class)
// in a device flag; after the last kernel the host copies the flag back and waits for the stream
// (cudaStreamSynchronize), then throws smk::Error naming the op and the argument. So every call returns with its
// kernels finished, and cannot be captured into a CUDA graph. The outputs are written before the check: the bad
// rows' loss (and any reduction over it) is NaN, their gradient rows NaN.
#pragma once

#include "cross_entropy/args.hpp"
#include "softmaxkit/cross_entropy.hpp"

namespace smk::cuda {

void cross_entropy_forward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                           const TensorView& logits, const TensorView& targets, const CrossEntropyOptions& options,
                           const TensorView& lse, const TensorView& z_loss, Stream stream);
void cross_entropy_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& grad_logits,
                            const TensorView& logits, const TensorView& targets, const TensorView& grad_loss,
                            const CrossEntropyOptions& options, const TensorView& lse, Stream stream);

}  // namespace smk::cuda
