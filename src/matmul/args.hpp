// softmaxkit (internal): the argument contract of matmul / matvec, checked once for every backend.
#pragma once

#include <cstdint>

#include "softmaxkit/core/tensor.hpp"

namespace smk::detail {

struct MatmulProblem {
  std::int64_t m, k, n;  // out[m, n] = a[m, k] · b[k, n]; n = 1 for matvec
};

// `b_is_vector`: matvec, where the second operand is x[k] and out is [m].
MatmulProblem check_matmul_args(const char* op, const TensorView& out, const TensorView& a, const TensorView& b,
                                bool b_is_vector);

}  // namespace smk::detail
