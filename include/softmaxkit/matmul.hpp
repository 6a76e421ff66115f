// softmaxkit: the lesson's matrix product and matrix-vector product. They exist for the cradle's demo and as the
// smallest example of a CPU/GPU op pair; they are not tuned (use cuBLAS for real products).
//
//   matmul: out[m, n] = a[m, k] · b[k, n]     matvec: out[m] = a[m, k] · x[k]
// f32 on every backend (f64 too on the CPU); any strides; `out` may not overlap an input.
#pragma once

#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"

namespace smk {

void matmul(const TensorView& out, const TensorView& a, const TensorView& b, Stream stream = {});
void matvec(const TensorView& out, const TensorView& a, const TensorView& x, Stream stream = {});

namespace cpu {
void matmul(const TensorView& out, const TensorView& a, const TensorView& b);  // f32 accumulation (f64 for f64)
void matvec(const TensorView& out, const TensorView& a, const TensorView& x);
namespace reference {
void matmul(const TensorView& out, const TensorView& a, const TensorView& b);  // f64 accumulation
void matvec(const TensorView& out, const TensorView& a, const TensorView& x);
}  // namespace reference
}  // namespace cpu

}  // namespace smk
