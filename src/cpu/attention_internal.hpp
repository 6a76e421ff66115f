// softmaxkit (internal, CPU): attention's float path under the caller's op name, so that the errors it finds while
// running (cu_seqlens offsets that decrease or leave the tensor, a decode length outside [0, S_max]) name the public
// op that was called, as cross_entropy_internal.hpp does for cross-entropy.
#pragma once

#include "softmaxkit/attention.hpp"

namespace smk::cpu::internal {

void attention_forward(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const AttentionOptions& options);
void attention_decode(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                      const TensorView& k_cache, const TensorView& v_cache, const TensorView& seqlens,
                      const AttentionDecodeOptions& options);

}  // namespace smk::cpu::internal
