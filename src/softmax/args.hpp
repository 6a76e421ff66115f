// softmaxkit (internal): the argument contract of the softmax family, checked once for every backend.
#pragma once

#include <cstdint>

#include "softmaxkit/softmax.hpp"

namespace smk::detail {

// The forward ops. `state` writes the online state (m, l) itself, into two outputs.
enum class SoftmaxKind { softmax, log_softmax, logsumexp, state };
enum class BackwardKind { softmax, log_softmax };

struct SoftmaxProblem {
  int dim;            // the reduced dimension, in [0, rank)
  std::int64_t rows;  // independent rows: the product of every other dimension
  std::int64_t n;     // row length: in.shape[dim]
};

// True when an optional view in SoftmaxOptions (mask, temperature_per_row) was given: data set or a rank given.
inline bool is_set(const TensorView& v) { return v.data != nullptr || v.rank > 0; }

// Validates `out` and `in` for softmax, log_softmax or logsumexp (shapes, dtypes, devices, aliasing, options:
// temperature, per-row temperature, mask) and describes the problem. Throws smk::Error naming `op` and the
// offending argument; touches no data (so per-row temperature values are checked by the backends).
SoftmaxProblem check_softmax_args(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                                  const SoftmaxOptions& options);

// The same for softmax_state: `out_max` and `out_sum` have logsumexp's output shape, dtype f32 (f64 for f64 input).
SoftmaxProblem check_softmax_state_args(const char* op, const TensorView& out_max, const TensorView& out_sum,
                                        const TensorView& in, const SoftmaxOptions& options);

// The backward passes: `y` and `dy` share shape, dtype and device; `dx` has their shape and y's dtype (or f32 for
// f16/bf16) and may alias `dy` or `y` exactly. options.mask and options.empty_rows do not apply and are ignored;
// the temperature (scalar or per row) is checked as in the forward ops.
SoftmaxProblem check_softmax_backward_args(const char* op, const TensorView& dx, const TensorView& y,
                                           const TensorView& dy, const SoftmaxOptions& options);

}  // namespace smk::detail
