// softmaxkit: the CPU backend of linear cross-entropy: the float path (f32 arithmetic, f64 for f64 inputs) and the
// float64 reference. Arguments and semantics as smk::linear_cross_entropy (softmaxkit/linear_cross_entropy.hpp);
// tensors on the CPU. Per chunk of rows it materialises the chunk's logits in the compute type, runs the CPU
// cross-entropy forward and backward on them (softmaxkit/cpu/cross_entropy.hpp), and forms dH, dW and db with
// plain loops; dW and db accumulate in the compute type across chunks and are rounded once at the end.
#pragma once

#include "softmaxkit/linear_cross_entropy.hpp"

namespace smk::cpu {

void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss = {},
                          const LinearCrossEntropyOptions& options = {});

namespace reference {
void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss = {},
                          const LinearCrossEntropyOptions& options = {});
}  // namespace reference

}  // namespace smk::cpu
