// softmaxkit (internal): the argument contract of linear cross-entropy (softmaxkit/linear_cross_entropy.hpp),
// checked once for every backend.
#pragma once

#include <cstdint>

#include "softmaxkit/linear_cross_entropy.hpp"

namespace smk::detail {

struct LinearCrossEntropyProblem {
  std::int64_t rows;        // N
  std::int64_t dim;         // d
  std::int64_t vocab;       // V
  std::int64_t chunk_rows;  // the chunk actually used (options.chunk_rows, or the default), in [1, max(N, 1)]
  std::int64_t logit_rows;  // rows of logits formed at once (options.logit_rows, or the chunk), in [1, chunk_rows]
};

// Throws smk::Error naming the argument; touches no data.
LinearCrossEntropyProblem check_linear_cross_entropy_args(const char* op, const TensorView& loss,
                                                          const TensorView& lse, const TensorView& grad_hidden,
                                                          const TensorView& grad_weight, const TensorView& grad_bias,
                                                          const TensorView& hidden, const TensorView& weight,
                                                          const TensorView& targets, const TensorView& grad_loss,
                                                          const LinearCrossEntropyOptions& options);

}  // namespace smk::detail
