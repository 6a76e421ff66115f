// softmaxkit (internal): the CUDA backend of the softmax family, called by src/softmax/dispatch.cpp after the
// arguments were validated. It picks the kernel; the user never does.
#pragma once

#include "softmax/args.hpp"

namespace smk::cuda {

void softmax_family(const char* op, detail::SoftmaxKind kind, const detail::SoftmaxProblem& problem,
                    const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream);

}  // namespace smk::cuda
