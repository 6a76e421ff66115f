// softmaxkit (internal, CPU): the float path of the softmax family for callers that already validated the
// arguments (the public dispatch), so errors found while running (a bad per-row temperature) name the public op.
#pragma once

#include "softmax/args.hpp"

namespace smk::cpu::internal {

// out2 is softmax_state's `out_sum`; ignored by the other kinds.
void forward(const char* op, smk::detail::SoftmaxKind kind, const smk::detail::SoftmaxProblem& problem, const TensorView& out,
             const TensorView& out2, const TensorView& in, const SoftmaxOptions& options);
void backward(const char* op, smk::detail::BackwardKind kind, const smk::detail::SoftmaxProblem& problem, const TensorView& dx,
              const TensorView& y, const TensorView& dy, const SoftmaxOptions& options);

}  // namespace smk::cpu::internal
