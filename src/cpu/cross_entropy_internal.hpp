// softmaxkit (internal, CPU): the float path of cross-entropy under the caller's op name, so that the errors it finds
// while running (a target outside [0, C), a negative or NaN class weight) name the public op that was called.
#pragma once

#include "softmaxkit/cross_entropy.hpp"

namespace smk::cpu::internal {

void cross_entropy(const char* op, const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss);
void cross_entropy_backward(const char* op, const TensorView& grad_logits, const TensorView& logits,
                            const TensorView& targets, const TensorView& grad_loss, const CrossEntropyOptions& options,
                            const TensorView& lse);

}  // namespace smk::cpu::internal
