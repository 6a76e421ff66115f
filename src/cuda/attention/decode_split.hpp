// softmaxkit (internal): how attention_decode splits one sequence's KV cache across blocks (Flash-Decoding), on the
// host and the device. Shared by the kernel (src/cuda/attention/decode.cu) and its tests.
//
// The rule depends only on the sequence's own length L and the device, never on the batch it arrives in, so a
// sequence's result is bitwise the same alone or in any batch (batch invariance), and run to run:
//   max_splits = min(kDecodeSplitCap, SMs / 4)          (16 on the H200's 132 SMs; 32 until round 3)
//   chunk(L)   = max(kDecodeMinChunk, round_up(ceil(L / max_splits), kDecodeChunkAlign))
//   splits(L)  = max(1, ceil(L / chunk(L)))
// Short sequences get chunks of kDecodeMinChunk keys (a block streams 1024 keys · 512 bytes = 512 KB at D = 128,
// enough to amortise its start and its partial result's 2 KB); long ones at most max_splits chunks, so a single
// sequence of 32k keys and 8 KV heads gets 128 blocks of 2048 keys on the H200, and all the splits of one (sequence,
// KV head) fit one thread-block cluster (at most 16 blocks), which can merge them through distributed shared memory
// (decode_mma.cu; the dispatcher does so up to 8 splits, attention_cuda.hpp).
// Session 7 (dec6) measured a finer rule and lost (H200 runs of 4793bdd and 05f387e, 2026-11-30; the code is in
// commit 6545701, docs/perf-notebook.md "session 7 — dec6"): up to 256 pieces a sequence of at least 128-1024 keys,
// folded in two levels (groups of 16), taken one a block or from an atomic cursor by blocks_per_sm · SMs blocks. At
// (1, 32768) 256-key pieces took 68.8 µs (cursor) and 65.0 (one a block) against 53.7 for this rule in that build
// (the old build 53.1); 128-key 81.8, 1024-key 56.5; the batch rows 5-60 % slower. A piece costs a pipeline restart
// and a fold, the two-level merge ~8 µs, and the tail after the cursor runs dry is one piece at one block's rate (a
// third of an SM's: ~12 µs for 256 keys), longer than the imbalance it was to remove. This rule stays.
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
// length leaves whole waves depends on the batch, which the rule may not look at: 1024 stays.
inline constexpr std::int64_t kDecodeMinChunk = 1024;
inline constexpr std::int64_t kDecodeChunkAlign = 128;  // a multiple of every kernel variant's tile of keys
// The rule's cap: 16, the largest thread-block cluster the H200 runs (non-portable size; 8 is the portable one), so
// the splits of one (sequence, KV head) can be one cluster. Round 2 (commit bb13db2) capped at 32. Measured in the
// H200 run of 75d273c (2026-11-30, bench_decode, both with the fused merge and memset counters): 54.5 against 54.6 us
// at (1, 32768) and 144.0 against 145.5 at (1, 131072) with 32/8 heads, 57.6 against 57.8 at (1, 32768) with 64/8;
// the batch rows have at most 8 splits either way.
inline constexpr int kDecodeSplitCap = 16;
// The most splits any merge handles (one split's LSE per lane of a warp): DecodeConfig::max_splits may ask for up to
// this many, to measure the rule's cap; the cluster merge then gives way to the atomic one above kDecodeClusterMax.
inline constexpr int kDecodeSplitLimit = 32;
inline constexpr int kDecodeClusterMax = 16;

inline int decode_max_splits(int multiprocessors, int cap = kDecodeSplitCap) {
  const int n = multiprocessors / 4;
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

// Session 17 (dec17): a switch for the A/B of one binary (bench_decode --dec17, test_decode), not an option. While it
// is not kDecodeTweaksRule (the dispatcher's flags, the default), the tensor-core kernel's launches with cp.async
// tiles at 2 stages and no cluster (the dispatcher's on grids of at most 3 blocks an SM, and above 8) take these
// template flags (decode_mma.cu; 0: HEAD's kernel): 2 q's pairs as 32-bit loads (dropped where q is not contiguous in
// aligned pairs), built at bf16 D = 128 only (others throw). The same bits as the default. Returns the previous
// setting. Defined in decode_mma.cu; process-wide, not thread-safe against calls in flight. As run in session 17
// (commit 7f9f852) it also had 1 (L2 prefetches before the length), 4 (the merge's one-atomic arrival) and 8 (a copy
// of HEAD's kernel: the control), removed as not faster.
inline constexpr unsigned kDecodeTweaksRule = ~0u;
unsigned decode_mma_tweaks(unsigned bits);
// decode_mma_tw_kernel's launches since the process started (tests: that the flagged kernel served a call).
std::uint64_t decode_tw_launches();

}  // namespace smk::cuda
