// softmaxkit (internal): the argument contract of the softmax family, checked once for every backend.
#pragma once

#include <cstdint>

#include "softmaxkit/softmax.hpp"

namespace smk::detail {

enum class SoftmaxKind { softmax, log_softmax, logsumexp };

struct SoftmaxProblem {
  int dim;            // the reduced dimension, in [0, rank)
  std::int64_t rows;  // independent rows: the product of every other dimension
  std::int64_t n;     // row length: in.shape[dim]
};

// Validates `out` and `in` for `kind` (shapes, dtypes, devices, aliasing, options) and describes the problem.
// Throws smk::Error naming `op` and the offending argument; touches no data.
SoftmaxProblem check_softmax_args(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                                  const SoftmaxOptions& options);

}  // namespace smk::detail
