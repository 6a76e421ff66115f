// softmaxkit (internal): the argument contract of cross-entropy, checked once for every backend.
#pragma once

#include <cstdint>

#include "softmaxkit/cross_entropy.hpp"

namespace smk::detail {

struct CrossEntropyProblem {
  std::int64_t rows;     // N
  std::int64_t classes;  // C
};

// Forward: loss (and the optional lse, z_loss outputs). Throws smk::Error naming the argument; touches no data.
CrossEntropyProblem check_cross_entropy_args(const char* op, const TensorView& loss, const TensorView& logits,
                                             const TensorView& targets, const CrossEntropyOptions& options,
                                             const TensorView& lse, const TensorView& z_loss);
// Backward: grad_logits from grad_loss (and an optional lse input).
CrossEntropyProblem check_cross_entropy_backward_args(const char* op, const TensorView& grad_logits,
                                                      const TensorView& logits, const TensorView& targets,
                                                      const TensorView& grad_loss, const CrossEntropyOptions& options,
                                                      const TensorView& lse);

// Forward + backward in one call: the forward's outputs and the backward's; grad_loss optional (null data: 1);
// grad_logits may be logits itself but must not overlap the other outputs.
CrossEntropyProblem check_cross_entropy_forward_backward_args(const char* op, const TensorView& loss,
                                                              const TensorView& grad_logits, const TensorView& logits,
                                                              const TensorView& targets,
                                                              const CrossEntropyOptions& options,
                                                              const TensorView& grad_loss, const TensorView& lse,
                                                              const TensorView& z_loss);

}  // namespace smk::detail
