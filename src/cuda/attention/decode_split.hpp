// softmaxkit (internal): how attention_decode splits one sequence's KV cache into pieces (Flash-Decoding), on the
// host and the device. Shared by the kernels (src/cuda/attention/decode.cu, decode_mma.cu) and their tests.
//
// The rule depends only on the sequence's own length L and the device, never on the batch it arrives in, so a
// sequence's result is bitwise the same alone or in any batch (batch invariance), and run to run:
//   max_splits = min(cap, 2 · SMs)        cap = kDecodeSplitCap for the tensor-core kernel's in-kernel merges (256
//                                         since session 7; 16 before), min(that, kDecodeSplitLimit = 32) for the
//                                         merge kernel and the CUDA-core kernel (one split per lane of a warp)
//   chunk(L)   = max(kDecodeMinChunk, round_up(ceil(L / max_splits), kDecodeChunkAlign))
//   splits(L)  = max(1, ceil(L / chunk(L)))
// and the merge tree, also a function of L alone: up to kDecodePieceGroup pieces fold in one step (a butterfly of
// OnlineSoftmaxState merges over the pieces' LSEs, then the pieces' outputs weighed in piece order); more fold in two:
// each run of kDecodePieceGroup consecutive pieces (the last one shorter) into a group partial, then the groups the
// same way, the sink joining at the last step only. Which block computes which piece (a static grid, or blocks taking
// pieces from an atomic cursor: DecodeConfig::steal) changes nothing: a piece's partial is a function of its keys.
// Until session 6 the rule was sms/4 ≤ 16 splits of at least 1024 keys, one block each; session 7 (dec6) made the
// pieces smaller and more numerous than the blocks, so that blocks that finish first take more of them (dec5's Nsight
// Compute count: one block an SM at (1, 32768) finished up to 19 % apart, a ~7 µs tail): attention_cuda.hpp
// (kDecodeSteal) has the measurements that chose the constants below.
#pragma once

#include <cstdint>

#include "softmaxkit/core/config.hpp"

namespace smk::cuda {

// Measured against 512 and 256 on the H200 (bench_decode, commit 98f32d4, tensor-core kernel): shorter chunks were
// never faster and up to 7 % (512) and 12 % (256) slower on the batch rows (158.8 and 166.4 against 148.7 µs at
// B=128, S=1024); the single-sequence rows do not reach the minimum. Against 2048 and 4096 (commit bb13db2): 4096
// won where it left exactly one resident wave (144.0 against 152.8 µs at B=16, S=8192: 256 blocks) and lost where it
// left a partial one or too few blocks (288.8 against 273.9 at B=64, S=4096; 66.5 against 53.8 at B=1, S=32768);
// 2048 tied or won by 1.4 % on the single-sequence rows and lost 1.4-5.3 % on the batch rows that split. Which
// length leaves whole waves depends on the batch, which the rule may not look at: 1024 stayed (sessions 2-6).
// Session 7 (dec6): the shortest piece, with blocks that take pieces from an atomic cursor. PROVISIONAL until the
// H200 run of dec6 (attention_cuda.hpp, kDecodeSteal, has what it measured).
inline constexpr std::int64_t kDecodeMinChunk = 256;
inline constexpr std::int64_t kDecodeChunkAlign = 128;  // a multiple of every kernel variant's tile of keys
// The rule's cap: 16, the largest thread-block cluster the H200 runs (non-portable size; 8 is the portable one), so
// the splits of one (sequence, KV head) can be one cluster. Round 2 (commit bb13db2) capped at 32. Measured in the
// H200 run of 75d273c (2026-11-30, bench_decode, both with the fused merge and memset counters): 54.5 against 54.6 us
// at (1, 32768) and 144.0 against 145.5 at (1, 131072) with 32/8 heads, 57.6 against 57.8 at (1, 32768) with 64/8;
// the batch rows have at most 8 splits either way.
// Session 7 (dec6): 256 pieces, folded in two levels of at most kDecodePieceGroup (16 · 16), where the cap was 16
// splits folded in one; 128-key pieces at (1, 32768), 512-key ones at (1, 131072).
inline constexpr int kDecodeSplitCap = 256;
inline constexpr int kDecodePieceGroup = 16;  // pieces folded in one step (one per lane of the merging warp)
// The most splits the merge kernel and the CUDA-core kernel's path handle (one split's LSE per lane of a warp): their
// rule's cap is min(cap, this); the tensor-core kernel's in-kernel merges take up to kDecodePieceLimit (two levels).
// DecodeConfig::max_splits may ask for up to kDecodePieceLimit, to measure the rule's cap; the cluster merge gives
// way to the atomic one above kDecodeClusterMax.
inline constexpr int kDecodeSplitLimit = 32;
inline constexpr int kDecodePieceLimit = kDecodePieceGroup * kDecodePieceGroup;
inline constexpr int kDecodeClusterMax = 16;

// Session 7: 2 · SMs (264 on the H200, so the cap decides there); sms / 4 until session 6 (33 on the H200, where the
// cap of 16 decided).
inline int decode_max_splits(int multiprocessors, int cap = kDecodeSplitCap) {
  const int n = 2 * multiprocessors;
  return n < 1 ? 1 : (n > cap ? cap : n);
}

// min_chunk: kDecodeMinChunk, except where a benchmark or test asks for another multiple of kDecodeChunkAlign
// (DecodeConfig::min_chunk), to measure the rule's constant.
SMK_HD inline std::int64_t decode_chunk(std::int64_t len, int max_splits, std::int64_t min_chunk = kDecodeMinChunk) {
  const std::int64_t even = (len + max_splits - 1) / max_splits;
  const std::int64_t aligned = (even + kDecodeChunkAlign - 1) / kDecodeChunkAlign * kDecodeChunkAlign;
  return aligned > min_chunk ? aligned : min_chunk;
}

SMK_HD inline int decode_splits(std::int64_t len, int max_splits, std::int64_t min_chunk = kDecodeMinChunk) {
  if (len <= 0) return 1;
  const std::int64_t chunk = decode_chunk(len, max_splits, min_chunk);
  return static_cast<int>((len + chunk - 1) / chunk);
}

// The most splits any length up to s_max gets: the grid's extent. Up to max_splits · kDecodeMinChunk keys every chunk
// is kDecodeMinChunk long, so ceil(s_max / kDecodeMinChunk) bounds them; beyond, max_splits does.
inline int decode_grid_splits(std::int64_t s_max, int max_splits, std::int64_t min_chunk = kDecodeMinChunk) {
  const std::int64_t n = (s_max + min_chunk - 1) / min_chunk;
  return n < 1 ? 1 : (n > max_splits ? max_splits : static_cast<int>(n));
}

// Groups of the two-level fold: 1 (one step) up to kDecodePieceGroup pieces.
SMK_HD inline int decode_groups(int pieces) { return (pieces + kDecodePieceGroup - 1) / kDecodePieceGroup; }

}  // namespace smk::cuda
