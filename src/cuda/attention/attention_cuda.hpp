// softmaxkit (internal): the CUDA backend of attention, called by src/attention/dispatch.cpp after validation.
#pragma once

#include "attention/args.hpp"
#include "softmaxkit/attention.hpp"

namespace smk::cuda {

// attention_decode after validation (src/attention/args.cpp): src/cuda/attention/decode.cu.
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      const detail::DecodeProblem& problem, Stream stream);

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream);

}  // namespace smk::cuda
