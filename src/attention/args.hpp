// softmaxkit (internal): the argument contract of attention and of the merge of partial states.
#pragma once

#include <cstdint>

#include "softmaxkit/attention.hpp"

namespace smk::detail {

struct AttentionProblem {
  bool varlen;
  std::int64_t batch, sq, sk;  // per-sequence lengths when not varlen; totals when varlen
  std::int64_t hq, hkv, d;
  double scale;                // resolved: options.scale, or 1/√D
};

AttentionProblem check_attention_args(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                                      const TensorView& k, const TensorView& v, const AttentionOptions& options);

// attention_decode: q [B, Sq, Hq, D], caches [B, S_max, Hkv, D], seqlens int32 [B].
struct DecodeProblem {
  std::int64_t batch, sq, s_max;
  std::int64_t hq, hkv, d;
  double scale;  // resolved: options.scale, or 1/√D
};
inline constexpr std::int64_t kDecodeMaxNewTokens = 8;

// Checks everything but the values of seqlens (they may live on the GPU).
DecodeProblem check_decode_args(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                                const TensorView& k_cache, const TensorView& v_cache, const TensorView& seqlens,
                                const AttentionDecodeOptions& options);

// Returns the number of merged rows (the product of lse's shape).
std::int64_t check_merge_args(const char* op, const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                              const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b);

}  // namespace smk::detail
