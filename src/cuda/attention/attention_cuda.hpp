// softmaxkit (internal): the CUDA backend of attention, called by src/attention/dispatch.cpp after validation.
#pragma once

#include "attention/args.hpp"
#include "softmaxkit/attention.hpp"

namespace smk::cuda {

// Launch configuration of the prefill kernel (src/cuda/attention/prefill.cu); 0 leaves a field to the dispatcher.
// Exposed for tests/cuda/attention/tune_prefill.cpp, which times each choice.
struct PrefillConfig {
  int warps = 0;    // 4 or 8
  int m_tiles = 0;  // 16-row tiles per warp, 1 or 2: query rows per CTA = 16 · warps · m_tiles
};
// The dispatcher's choice by head dimension. Measured on the H200 (tune_prefill, commit 8bb200f, bf16, 2026-11-29;
// docs/perf-notebook.md): at D = 128, 8 warps (128 rows per CTA) beat 4 on every row from S = 1024 up (241 against
// 216 TFLOP/s at B=4, H=32, S=4096, full); at D = 64, 4 warps beat 8 on every row (203 against 172 at S = 4096).
inline constexpr int kPrefillWarpsD64 = 4;
inline constexpr int kPrefillWarpsD128 = 8;
// Two m-tiles per warp (FlashAttention-2's 32 rows per warp) are not yet measured: one per warp until they are.
inline constexpr int kPrefillMTilesD64 = 1;
inline constexpr int kPrefillMTilesD128 = 1;

// attention_forward after validation (src/attention/args.cpp); the sizes are AttentionProblem's.
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options, bool varlen, std::int64_t batch,
                       std::int64_t sq, std::int64_t sk, double scale, const PrefillConfig& config, Stream stream);

// attention_decode after validation (src/attention/args.cpp): src/cuda/attention/decode.cu.
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      const detail::DecodeProblem& problem, Stream stream, void* merge_start_event = nullptr);
// merge_start_event (a cudaEvent_t, for the benchmark tests/cuda/attention/bench_decode.cpp): recorded on the stream
// after the split kernel, before the merge kernel, so the merge's share of the time can be measured.

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream);

}  // namespace smk::cuda
