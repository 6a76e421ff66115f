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
// The dispatcher's choice by head dimension. Measured on the H200 (tune_prefill, commit f2afff6, bf16, 2026-11-29;
// docs/perf-notebook.md, docs/bench/prefill-stage1-2026-11-29.md): 4 warps of two 16-row m-tiles each (128 query
// rows per CTA) win on 27 of the 28 rows at both head dimensions — 286 against 243 (8 warps × 1) and 215 (4 × 1)
// TFLOP/s at B=4, H=32, S=4096, D=128, full; 247 against 211 at D=64 — because each K/V fragment read from shared
// memory feeds two products. (The exception, S=512 causal at D=64, loses 4 %.)
inline constexpr int kPrefillWarpsD64 = 4;
inline constexpr int kPrefillWarpsD128 = 4;
inline constexpr int kPrefillMTilesD64 = 2;
inline constexpr int kPrefillMTilesD128 = 2;

// attention_forward after validation (src/attention/args.cpp); the sizes are AttentionProblem's.
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options, bool varlen, std::int64_t batch,
                       std::int64_t sq, std::int64_t sk, double scale, const PrefillConfig& config, Stream stream);

// Launch configuration of the decode split kernel (src/cuda/attention/decode.cu); 0 leaves a field to the
// dispatcher. Exposed for tests/cuda/attention/{test,bench}_decode.cpp, which check and time each choice.
// How a lane group turns a tile's partial dots into weights: every lane reduces, exponentiates and merges every
// (key, row) pair itself (all_lanes, what the first H200 run measured), or the dots are reduce-scattered so each
// pair's softmax step runs on one lane and the weights are gathered back (scatter, the default since it measured faster).
enum class DecodeScores { dispatcher, all_lanes, scatter };
struct DecodeConfig {
  int vecs = 0;  // blocks of ≤ 4 query rows: 16-byte vectors per lane per key, 1 or 2
  DecodeScores scores = DecodeScores::dispatcher;
};
// The dispatcher's choices, measured on the H200 (bench_decode, commit 8e82348, 2026-11-29, docs/perf-notebook.md):
// 2 vectors per lane beat 1 on every row (292 against 414 µs at B=1, S=131072, Hq/Hkv=32/8, D=128); the scatter
// scores beat all_lanes on every row, 1.4-2.5x (198 against 292 µs there: 2.72 TB/s; 282 against 703 µs at 16×8192
// with 64/8 heads), as the instruction count predicted. test_decode checks every variant against the reference.
inline constexpr int kDecodeVecsSmallRows = 2;
inline constexpr bool kDecodeScatter = true;

// attention_decode after validation (src/attention/args.cpp): src/cuda/attention/decode.cu.
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      const detail::DecodeProblem& problem, Stream stream, void* merge_start_event = nullptr,
                      const DecodeConfig& config = {});
// merge_start_event (a cudaEvent_t, for the benchmark tests/cuda/attention/bench_decode.cpp): recorded on the stream
// after the split kernel, before the merge kernel, so the merge's share of the time can be measured.

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream);

}  // namespace smk::cuda
