// softmaxkit: the CPU backend of cross-entropy: the float path (f32 arithmetic, f64 for f64 logits) and the
// float64 reference. Arguments as smk::cross_entropy / smk::cross_entropy_backward (softmaxkit/cross_entropy.hpp);
// tensors on the CPU.
#pragma once

#include "softmaxkit/cross_entropy.hpp"

namespace smk::cpu {

void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options = {}, const TensorView& lse = {}, const TensorView& z_loss = {});
void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options = {},
                            const TensorView& lse = {});

namespace reference {
void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options = {}, const TensorView& lse = {}, const TensorView& z_loss = {});
void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options = {},
                            const TensorView& lse = {});
}  // namespace reference

}  // namespace smk::cpu
