// softmaxkit (internal): the CUDA backend of attention, called by src/attention/dispatch.cpp after validation.
#pragma once

#include <atomic>
#include <cstdint>

#include "attention/args.hpp"
#include "softmaxkit/attention.hpp"

namespace smk::cuda {

// Launch configuration of the prefill kernels (src/cuda/attention/prefill.cu, prefill_wgmma.cu); 0 (or `dispatcher`)
// leaves a field to the dispatcher. Exposed for tests/cuda/attention/{test,tune}_prefill.cpp, which check and time
// each choice. The other fields are read for the kernel `kernel` names (with `dispatcher`: the dispatcher's kernel,
// the wgmma one on the H200), so a configuration of prefill.cu's variants names mma_sync.
enum class PrefillToggle { dispatcher, off, on };
// Which kernel: prefill.cu (mma.sync, stage 1) or prefill_wgmma.cu (wgmma, sm_90a, stage 2). dispatcher: the
// kPrefillKernelD64 / kPrefillKernelD128 below. A wgmma request on a device or build without sm_90a is refused.
enum class PrefillKernel { dispatcher, mma_sync, wgmma };
struct PrefillConfig {
  int warps = 0;    // warps per CTA (4)
  int m_tiles = 0;  // 16-row tiles per warp, 1 or 2: query rows per CTA = 16 · warps · m_tiles
  int block_n = 0;  // keys per K/V tile (64; 128 at D = 64 too)
  int stages = 0;   // K/V tiles in shared memory (a cp.async ring; the kernel takes 2 or more, 2 is built)
  // The softmax scale folded into one FFMA per score before ex2 (max taken on the raw scores); only for a positive
  // scale, a negative one takes the multiply-first path whatever this says.
  PrefillToggle fold_scale = PrefillToggle::dispatcher;
  // O staged through shared memory and written with 16-byte coalesced stores (instead of 4-byte fragment stores).
  PrefillToggle o_smem = PrefillToggle::dispatcher;
  // The accumulator's rescale skipped for a 16-row tile whose row maxima all stayed put (a warp vote).
  PrefillToggle skip_rescale = PrefillToggle::dispatcher;
  // With kernel = wgmma, `warps` is 4 or 8 (one or two warpgroups of 64 query rows), block_n 64 or 128, stages 3,
  // m_tiles 1 (kPrefillWgmmaVariants); fold_scale and skip_rescale apply, o_smem does not.
  PrefillKernel kernel = PrefillKernel::dispatcher;
  // wgmma kernel: Q, K and V by TMA on mbarriers (on) or by every thread's cp.async (off). Varlen, Sk = 0, sequences
  // past 2^31 rows and views the driver will not describe as a tensor map always take cp.async.
  PrefillToggle tma = PrefillToggle::dispatcher;
  // wgmma kernel with TMA: the build whose softmax ptxas keeps ahead of the P·V wait (ptx.cuh keep_ahead_of_wait;
  // without it the exponentials ran after the wait, session 8). Built for kPrefillWgmmaPinned's variants only (`on`
  // for another is refused); a call that takes cp.async runs the unpinned kernel (the same bits).
  PrefillToggle pin_softmax = PrefillToggle::dispatcher;
  // wgmma kernel, causal, not varlen: the causal schedule (prefill_args.hpp's prefill_block: chunks of about two
  // waves of (batch, head) pairs, heaviest query block first across a chunk) instead of the (blocks, heads, batch)
  // grid. The same bits either way.
  PrefillToggle causal_schedule = PrefillToggle::dispatcher;
  // wgmma kernel, 128-key tiles, causal: a diagonal tile whose last 64 keys no row of a warpgroup sees is multiplied
  // over its first 64 by that warpgroup (prefill_wgmma.cu's dead_hi). The same bits either way with finite V.
  PrefillToggle trim_diagonal = PrefillToggle::dispatcher;
};

// The (D, warps, m_tiles, block_n, stages) combinations prefill.cu instantiates, for f16 and bf16; any other is
// refused with smk::Error. tune_prefill times each, test_prefill checks each against the reference. Timed and
// dropped in the H200 run of 3b45758 (2026-11-30, docs/perf-notebook.md): 3 stages (D = 128: 128 KB of shared
// memory, one CTA per SM, 226 against 328 TFLOP/s at B=4, H=32, S=4096; D = 64: within 1 % of 2 stages), 32-key
// tiles at D = 128 (285, more barriers and loop overhead per flop).
struct PrefillVariant {
  int d, warps, m_tiles, block_n, stages;
};
inline constexpr PrefillVariant kPrefillVariants[] = {
    {128, 4, 1, 64, 2}, {128, 4, 2, 64, 2}, {64, 4, 1, 64, 2}, {64, 4, 2, 64, 2}, {64, 4, 2, 128, 2},
};

// The dispatcher's choice by head dimension, from tune_prefill on the H200, tree of commit 3b45758, bf16,
// 2026-11-30 (docs/perf-notebook.md, docs/bench/prefill-stage1-2026-11-30.md), every lever below on:
// - D = 128: 4 warps of two 16-row m-tiles (128 query rows per CTA, two CTAs per SM at 255 registers): 328 TFLOP/s at
//   B=4, H=32, S=4096, full, against 292 for 4 × 1 and 285 for 32-key tiles; best or within 1 % on every D = 128 row
//   but S = 512 causal, where 4 × 1 (more, shorter CTAs) leads by 4 % (180 against 173).
// - D = 64: 4 warps of one m-tile (64 rows per CTA): at 127 registers four CTAs fit per SM (16 warps) against two
//   for 4 × 2 (239 registers), and that wins on every D = 64 row: 292 against 261 (4 × 2) and 271 (4 × 2, 128-key
//   tiles) at B=16, H=16, S=2048; 183 against 139 at S = 512 causal. Should its register count pass 128 it drops to
//   three CTAs per SM (the previous kernel's 4 × 1, at 134 registers and with the other differences, measured 207
//   there): check ptxas -v after any change to the kernel.
inline constexpr int kPrefillWarpsD64 = 4;
inline constexpr int kPrefillWarpsD128 = 4;
inline constexpr int kPrefillMTilesD64 = 1;
inline constexpr int kPrefillMTilesD128 = 2;
inline constexpr int kPrefillBlockND64 = 64;
inline constexpr int kPrefillBlockND128 = 64;
inline constexpr int kPrefillStagesD64 = 2;
inline constexpr int kPrefillStagesD128 = 2;
// The levers, ablated on 4 × 2 with 64-key tiles in the same run (each off alone): the fold +0.3 % at D = 128
// (327.0 → 328.1 at B=4, H=32, S=4096) and +1-2 % at D = 64; the skipped rescale +0-2 % at D = 128 (321.4 → 328.1),
// −0.5-3 % at D = 64; O through shared memory within ±1 % at D = 128 and −1-3 % at D = 64 (the spread between two
// near-identical kernels in that run is 1-2 %). The defaults are the configuration measured best, all on; the D = 64
// ablation on 4 × 1 is for the next run.
// The wgmma kernel's built variants (prefill_wgmma.cu), in the same fields: 1 or 2 consumer warpgroups per CTA
// (warps 4 or 8), 64- or 128-key tiles in a 3-stage ring (at D = 128, 128-key tiles fit only with two warpgroups:
// 225 KB of shared memory), each with its TMA and its cp.async copies. Checked by test_prefill, timed by
// tune_prefill. Timed and dropped in the H200 run of 27b9277 (2026-11-30, docs/perf-notebook.md): D = 128 with two
// warpgroups and 64-key tiles (slower than both kept variants on every row: 448.8 against 482.9 and 495.8 TFLOP/s
// at B=4, H=32, S=4096, TMA), and 128-key tiles at D = 64 (318.7 / 303.3 against 382.0 at B=16, H=16, S=2048, TMA;
// behind on every row but one tie).
// warps = 9: two warpgroups and a producer warpgroup (one lane issues the TMA copies), the two warpgroups' products
// ping-ponged (TMA only; asked for cp.async it runs the 8-warp kernel); built at D = 128 with 64- and 128-key tiles
// (prefill_wgmma.cu says which others were measured and dropped; 128-key tiles came back in session 6, once the
// consumers got setmaxnreg's registers: ptx.cuh's mbar_wait).
// warps = 13 (session 8, pfx8): three consumer warpgroups (192 query rows a CTA) and the producer, D = 64, 128-key
// tiles, TMA only as warps = 9 (asked for cp.async it runs the 8-warp kernel with the same key tiles, which is
// built for that). 64-key tiles were built too and dropped after the H200 run of 5b9391e (362.7-377.5 TFLOP/s at
// B=16, H=16, S=2048 full, against 430.1-431.2 with 128-key tiles, three timings each).
// Session 16 (pfx16): {64, 9, 1, 128, 3}, D = 64 with two consumer warpgroups and the producer, 128-key tiles, P·V
// under the softmax (prefill_wgmma.cu's kOverlap, kOvDiag), measured against the three-warpgroup default in the H200
// runs of 2a5e68f (tune_prefill --pfx16, 60 rounds, bf16): 0.810 at (16, 16, 2048, 64) full, 0.813 at (8, 16, 4096,
// 64) full, 0.879 at (4, 32, 4096, 64) causal, 0.826 at (1, 32, 16384, 64) causal; removed (2a5e68f has it).
inline constexpr PrefillVariant kPrefillWgmmaVariants[] = {
    {128, 4, 1, 64, 3}, {128, 8, 1, 128, 3}, {128, 9, 1, 64, 3}, {128, 9, 1, 128, 3}, {64, 4, 1, 64, 3},
    {64, 8, 1, 64, 3},  {64, 13, 1, 128, 3}};
// The variants also built with the softmax pinned ahead of the P·V wait (PrefillConfig::pin_softmax), TMA only.
// Measured in the H200 run of 5b9391e (tune_prefill three times, the second in reverse column order; bf16 TFLOP/s,
// unpinned against pinned): not faster anywhere. D = 128 two warpgroups and the producer, 128-key tiles:
// 607.9 / 646.5 / 623.0 against 599.7 / 637.5 / 614.4 at B=4, H=32, S=4096 full; 505.1 / 486.2 / 503.2 against
// 490.2 / 481.9 / 495.5 causal; 609.7 / 585.4 / 622.9 against 583.2 / 574.4 / 579.5 at B=1, H=32, S=16384 causal.
// D = 64 at B=16, H=16, S=2048 full: three warpgroups, 128-key tiles 430.7 / 430.1 / 431.2 against 436.0 / 424.9 /
// 429.2 (even); two warpgroups, 64-key tiles 380.6 / 401.0 / 376.3 against 374.9 / 394.6 / 370.4; three, 64-key
// tiles 367.5 / 377.5 / 362.7 against 364.8 / 363.1 / 358.9. So off (kPrefillWgmmaPin); kept built on the two
// defaults for measuring. Why ptxas's own order (the P·V wait first) is not slower: not known (docs/perf-notebook.md,
// session 8, pfx8).
inline constexpr PrefillVariant kPrefillWgmmaPinned[] = {{128, 9, 1, 128, 3}, {64, 13, 1, 128, 3}};
inline constexpr bool kPrefillWgmmaPin = false;
// A quarter of the softmax's exponentials as a polynomial on the FMA pipe (session 12, pfx12: PrefillConfig::poly_exp2,
// kPrefillWgmmaPoly, prefill_wgmma.cu's kPoly, exp2_poly.hpp; the two TMA defaults and their cp.async kernels)
// measured in the H200 run of 47db8d0's binaries (2026-11-30 19:15 UTC, interleaved with the default, cuDNN and FLASH
// in one process, 12 rounds, bf16; variant / default, medians of the ratio formed in each round): (4, 32, 4096, 128)
// full 0.948 (0.877-0.984), causal 0.948 (0.909-0.966), (16, 16, 2048, 64) full 0.902 (0.894-0.910),
// (1, 32, 16384, 128) causal 1.015 (0.907-1.067). Slower: removed (prefill_wgmma.cu's opening comment says why);
// 46ce98c has its code.
// The two defaults built with the row max and sum as trees (session 11, pfx11: PrefillConfig::short_chains,
// kPrefillWgmmaChains, prefill_wgmma.cu's kChains; TMA only) measured in the H200 run of 087be37 (2026-11-30,
// interleaved with the default, cuDNN and FLASH in one process, 12 rounds, bf16; variant / default, medians of the
// ratio formed in each round): (4, 32, 4096, 128) full 0.994 (0.949-1.020), causal 0.993 (0.927-1.028),
// (16, 16, 2048, 64) full 1.000 (0.998-1.002), (1, 32, 16384, 128) causal 1.041 (0.939-1.135). Not faster where the
// rounds agree (the SASS says why: prefill_wgmma.cu's opening comment), and its bits differ from the cp.async
// kernels', which a default must match: removed after the session's review (F16); 087be37 has its code.
// S_{j+1} issued ahead of tile j's softmax (session 10, pfx10: PrefillConfig::s_ahead, kPrefillWgmmaAhead, the D = 128
// default's build) measured 0.929 / 0.902 of the default at (4, 32, 4096, 128) full / causal and 1.003 at
// (1, 32, 16384, 128) causal in the H200 run of b1e44d1, and was removed (prefill_wgmma.cu's opening comment).
// The dispatcher's kernel per head dimension, from tune_prefill on the H200, tree of commit 27b9277, bf16,
// 2026-11-30 (docs/perf-notebook.md, docs/bench/prefill-wgmma-2026-11-30.md): the wgmma kernel with TMA beat the
// mma.sync kernel's default on every row of the table and sweep, 1.09-1.63x (495.8 against 331.5 TFLOP/s at
// B=4, H=32, S=4096, D=128, full; 382.0 against 291.7 at B=16, H=16, S=2048, D=64); it runs where this build has
// sm_90a and the device is compute capability 9.0, else the mma.sync kernel does.
// - D = 128: two warpgroups, 128-key tiles (495.8; 511.7 at B=1, H=32, S=16384 causal) but for short causal rows.
// - D = 64: two warpgroups, 64-key tiles (382.0; 405.6 at B=1, H=32, S=16384 full) but for short causal rows.
// - Causal with at most kPrefillWgmmaShortCausal query rows: one warpgroup, 64-key tiles (more, shorter CTAs for
//   the triangle): 226.4 against 204.4 (D = 128) and 197.2 against 187.2 (D = 64) at S = 512, 307.0 against 294.0
//   and 267.6 against 265.7 at S = 1024; at S = 2048 the two tie (360.1 / 362.2 at D = 128). Since session 6 not at
//   D = 128 with TMA: the producer warpgroup's 128-key variant led there at S = 512 and 1024 causal (181.1 against
//   177.3, 290.7 against 257.5; run of bf05fb3); at D = 64 one warpgroup still led at S = 512 (166.5 against 153.5)
//   and tied at 1024 (226.6 / 230.2).
// - TMA against every thread's cp.async, same variants: +2-23 % (495.8 against 433.4 at D = 128, wg2 n128, S = 4096
//   full; 382.0 against 332.4 at D = 64). Varlen (and Sk = 0) always takes cp.async; those variants measured
//   1.07-1.41x the mma.sync kernel's default on the same (non-varlen) rows.
inline constexpr PrefillKernel kPrefillKernelD64 = PrefillKernel::wgmma;
inline constexpr PrefillKernel kPrefillKernelD128 = PrefillKernel::wgmma;
// D = 64 with TMA (session 8, pfx8): three consumer warpgroups and the producer, 128-key tiles. H200 run of 5b9391e
// (2026-11-30, tune_prefill three times, docs/bench/pfx8-s8-2026-11-30.md): 430.7 / 430.1 / 431.2 TFLOP/s at B=16,
// H=16, S=2048 full against 380.6 / 401.0 / 376.3 for two warpgroups × 64 keys (the default before; its dispatcher
// column 399.4 / 389.4 / 394.9) and cuDNN's 454.2 / 451.1 / 454.1 in the same call. Without TMA (varlen) the 13-warp
// request would run the 8-warp kernel with 128-key tiles, never measured faster: two warpgroups × 64 keys there.
// Short rows keep two warpgroups × 64 keys too (the sweep of the run of 14044dd, TFLOP/s, two against three
// warpgroups): full 280.1 / 246.7 at S = 512, 356.7 / 343.8 at 1024, then 399.6 / 436.1 at 2048, 418.7 / 466.8 at
// 4096, 398.3 / 498.0 at 8192, 426.8 / 503.4 at 16384; causal 304.4 / 288.7 at 2048, then 310.9 / 316.2 at 4096,
// 367.9 / 422.8 at 8192, 399.3 / 468.5 at 16384 (causal rows of ≤ kPrefillWgmmaShortCausal take one warpgroup, which
// led there: 171.6 at 512, 249.0 at 1024). So three warpgroups from kPrefillWgmmaD64ThreeFull query rows (full) and
// kPrefillWgmmaD64ThreeCausal (causal).
inline constexpr int kPrefillWgmmaWarpsD64 = 13;
inline constexpr int kPrefillWgmmaWarpsD64Two = 8;  // two warpgroups: shorter rows, and cp.async (varlen)
inline constexpr std::int64_t kPrefillWgmmaD64ThreeFull = 2048;
inline constexpr std::int64_t kPrefillWgmmaD64ThreeCausal = 4096;
// D = 128 with TMA: the producer warpgroup's variant, two warpgroups ping-ponged, 64-key tiles. H200 runs of
// 19a3913 and a967bdc (2026-11-30, tune_prefill, docs/bench/prefill-pfx-2026-11-30.md): the fastest built variant on
// the three D = 128 rows, 507.5 against 481.1 TFLOP/s for two warpgroups and 128-key tiles at B=4, H=32, S=4096 full,
// 417.6 against 397.6 causal, 503.0 against 492.2 at B=1, H=32, S=16384 causal (the run of 19a3913: 513.0 / 490.9,
// 419.3 / 411.5, 506.2 / 504.3). Without TMA (varlen) its kernel would be the 8-warp 64-key one, which lost: two
// warpgroups and 128-key tiles there.
inline constexpr int kPrefillWgmmaWarpsD128 = 9;
inline constexpr int kPrefillWgmmaWarpsD128CpAsync = 8;
inline constexpr int kPrefillWgmmaBlockND64 = 128;
inline constexpr int kPrefillWgmmaBlockND64Two = 64;
// Session 6 (pfx2; H200 run of bf05fb3, 2026-11-30, docs/bench/prefill-pfx2-s6-2026-11-30.md): 128-key tiles under
// the producer warpgroup (218 registers a consumer thread, no spill, once no trap is reachable after setmaxnreg), the
// fastest variant on every D = 128 row of the issue and the sweep, short causal rows included: 602.0 against 526.8
// (64-key tiles) and 503.4 (two warpgroups, 128 keys) TFLOP/s at B=4, H=32, S=4096 full, 514.8 against 432.3
// causal, 592.9 against 545.5 at B=1, H=32, S=16384 causal, 181.1 against 177.3 (one warpgroup) at S = 512 causal.
inline constexpr int kPrefillWgmmaBlockND128 = 128;
inline constexpr int kPrefillWgmmaBlockND128CpAsync = 128;
inline constexpr std::int64_t kPrefillWgmmaShortCausal = 1024;
inline constexpr int kPrefillWgmmaWarpsShortCausal = 4;
inline constexpr int kPrefillWgmmaBlockNShortCausal = 64;
inline constexpr bool kPrefillWgmmaTma = true;
// Session 9 (pfx9): the causal schedule and the trimmed diagonal tile (PrefillConfig says what they are), timed
// beside each other in one H200 run of d3b2984 (2026-11-30 12:38 UTC, tune_prefill four passes, two in reverse
// column order, bf16 TFLOP/s, the mean of the four; docs/bench/pfx9-s9-2026-11-30.md). (4, 32, 4096, 128) causal:
// neither 465.9, schedule 467.0, trim 477.0, both 478.3: the trim +2.4 % (ahead of the untrimmed columns in every
// pass, either order), the schedule within the spread. (1, 32, 16384, 128) causal (each pass's first column left
// out, it reads high): schedule 573.2, trim 580.9, both 578.3, neither 576.8 (two passes). So the trim is on and the
// schedule off (its list-scheduling model promised 3 % at S = 4096: not seen).
inline constexpr bool kPrefillWgmmaCausalSchedule = false;
inline constexpr bool kPrefillWgmmaTrim = true;
inline constexpr bool kPrefillFoldScale = true;
inline constexpr bool kPrefillOSmem = true;
inline constexpr bool kPrefillSkipRescale = true;

// attention_forward after validation (src/attention/args.cpp); the sizes are AttentionProblem's.
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options, bool varlen, std::int64_t batch,
                       std::int64_t sq, std::int64_t sk, double scale, const PrefillConfig& config, Stream stream);
// What attention_forward's last GPU launch chose, as the host set it (so test_prefill can assert the dispatcher's
// rules, the D = 64 one among them): the kernel, warps (wgmma: 4 · consumer warpgroups, + 1 with the producer) and
// key tile, and whether it asked for TMA; `launches` counts the calls that launched. Where the driver refuses a
// tensor map, prefill_wgmma.cu itself falls back to its cp.async kernel (the producer variants: the 8-warp one, the
// same bits), which this record does not see. Atomic: every launch writes it, from whichever host thread calls.
struct PrefillLast {
  std::atomic<int> kernel{0};  // static_cast<int>(PrefillKernel): mma_sync or wgmma
  std::atomic<int> d{0}, warps{0}, m_tiles{0}, block_n{0}, stages{0};
  std::atomic<bool> tma{false};
  std::atomic<std::uint64_t> launches{0};
};
PrefillLast& prefill_last();

// Launch configuration of the decode split kernel (src/cuda/attention/decode.cu); 0 leaves a field to the
// dispatcher. Exposed for tests/cuda/attention/{test,bench}_decode.cpp, which check and time each choice.
// How a lane group turns a tile's partial dots into weights: every lane reduces, exponentiates and merges every
// (key, row) pair itself (all_lanes, what the first H200 run measured), or the dots are reduce-scattered so each
// pair's softmax step runs on one lane and the weights are gathered back (scatter, the default since it measured faster).
enum class DecodeScores { dispatcher, all_lanes, scatter };
// Which split kernel: the CUDA-core one (decode.cu, where vecs and scores apply) or the tensor-core one
// (decode_mma.cu, where mma_stages applies). dispatcher: kDecodeKernel, unless vecs or scores is set, which asks
// for the CUDA-core kernel.
enum class DecodeKernel { dispatcher, cuda_cores, mma };
// How the tensor-core kernel's splits are merged: by the merge kernel after it (as the CUDA-core kernel's always
// are); inside it, by the last split block of each (sequence, KV head, row chunk) to finish, counted by an atomic
// (fused); or inside it, by the blocks of one thread-block cluster through distributed shared memory (cluster: the
// splits of one (sequence, KV head, row chunk) are one cluster; where the device cannot run that cluster size, or
// more than kDecodeClusterMax splits were asked for, the fused merge serves, with the same bits).
enum class DecodeMerge { dispatcher, kernel, fused, cluster };
enum class DecodeToggle { dispatcher, off, on };  // a lever left to the dispatcher, or forced off or on
struct DecodeConfig {
  int vecs = 0;  // blocks of ≤ 4 query rows: 16-byte vectors per lane per key, 1 or 2
  DecodeScores scores = DecodeScores::dispatcher;
  DecodeKernel kernel = DecodeKernel::dispatcher;
  int mma_stages = 0;  // tensor-core kernel: ring stages per warp, 2 or 3 (0: kDecodeMmaStages)
  DecodeMerge merge = DecodeMerge::dispatcher;
  int min_chunk = 0;  // the split rule's shortest chunk (decode_split.hpp), for measuring it (0: kDecodeMinChunk)
  // The split rule's cap on splits per sequence (decode_split.hpp), for measuring it: 0 is kDecodeSplitCap (16),
  // at most kDecodeSplitLimit (32, round 2's cap); above kDecodeClusterMax the cluster merge gives way to the fused.
  int max_splits = 0;
  // Fused merge: arrival counters that the last block of each (sequence, KV head, row chunk) sets back to zero, kept
  // per (device, stream) between calls (on), or a workspace zeroed by cudaMemsetAsync before each call (off: what
  // a stream capturing a graph always gets; decode_counters.hpp says why and how long they live).
  DecodeToggle self_reset_counters = DecodeToggle::dispatcher;
  // Cluster merge above kDecodeClusterDispatch splits with one block an SM (on), so a cluster of 16 spreads over 16
  // SMs instead of packing three blocks an SM (decode_common.cuh: kDecodeSpreadSmem). With DecodeMerge::cluster forced
  // it applies above kDecodeClusterDispatch too; off: round 3's packed launch.
  DecodeToggle spread_cluster = DecodeToggle::dispatcher;
  // The tensor-core split kernel launched as a programmatic dependent of the kernel before it on the stream
  // (cudaLaunchAttributeProgrammaticStreamSerialization, sm_90+): its blocks may be scheduled while that kernel's last
  // blocks drain, and wait in griddepcontrol.wait before their first global load (kDecodePdl below).
  DecodeToggle pdl = DecodeToggle::dispatcher;
  // K and V tiles by the tensor memory accelerator (decode_mma.cu's TMA variant, session 10: 2 ring stages, sm_90+,
  // where the driver encodes the caches' tensor maps; else the cp.async kernel) or by cp.async (decode_tma_rule below).
  DecodeToggle tma = DecodeToggle::dispatcher;
  // Session 11 (dec11) built the tensor-core kernel with 3 warps a block (DecodeConfig::mma_warps; D = 128, 2 ring
  // stages: 48 KB of ring a block, so 4 blocks share an SM instead of 3; different bits from 4 warps). Measured, not
  // dispatched (H200 call of 16:53 UTC 2026-11-30, binaries of e16cc07, bench_decode --sweep): 12 % faster on grids of
  // 512 blocks, within -1.6..+1.8 % on grids of 1024, up to 1.7 % slower on larger grids and 7-18 % slower on grids of
  // 256 blocks or fewer: the gain follows the grid's waves, which a rule of the length cannot see, and the bits differ
  // (decode_mma.cu's opening comment has the numbers). Removed after the session's review (F17); e16cc07 has its code.
  // Session 12 (dec12): where tma is left to the dispatcher, choose TMA or cp.async by the launch's grid
  // (decode_tma_grid_rule below: the blocks per SM) instead of by S_max (decode_tma_rule). The two tiles give the same
  // bits, so a choice by the grid, which sees the batch, cannot change a result: batch invariance holds.
  DecodeToggle tma_grid = DecodeToggle::dispatcher;
};
// The dispatcher's choices, measured on the H200 (bench_decode, commit 8e82348, 2026-11-29, docs/perf-notebook.md):
// 2 vectors per lane beat 1 on every row (292 against 414 µs at B=1, S=131072, Hq/Hkv=32/8, D=128); the scatter
// scores beat all_lanes on every row, 1.4-2.5x (198 against 292 µs there: 2.72 TB/s; 282 against 703 µs at 16×8192
// with 64/8 heads), as the instruction count predicted. test_decode checks every variant against the reference.
inline constexpr int kDecodeVecsSmallRows = 2;
inline constexpr bool kDecodeScatter = true;
// The tensor-core kernel (decode_mma.cu) beat the CUDA-core one on every row of the H200 runs of c09ff0d and
// 98f32d4 (2026-11-30, docs/perf-notebook.md): 1.2-1.8x with the merge kernel (63.8 against 76.2 µs at B=1,
// S=32768, 32/8 heads; 151 against 220 µs at 16×8192), 1.34-1.75x with the fused merge (56.1 against 76.4 µs;
// 154.9 against 220.7), every test passing for both.
inline constexpr DecodeKernel kDecodeKernel = DecodeKernel::mma;
// Ring stages per warp: 2 (three blocks of 64 KB per SM) beat 3 (two of 96 KB) by 2.4-2.5 % on the rows with
// 1024-2048 blocks (151.2 against 154.9 µs at 16×8192, 272.8 against 279.3 at 64×4096, 141.3 against 144.9 at
// 128×1024) and tied within 0.8 % on the single-sequence rows (256 blocks), same run (c09ff0d); with the fused merge
// (98f32d4) 2 stages won by 0.5-4 % on three of the four batch rows and lost 1 % at 128×1024.
inline constexpr int kDecodeMmaStages = 2;
// The merge kernel after the split kernel cost a near-constant 10-16 µs in the run of c09ff0d (25 % of the
// (1, 32768) row); the fused merge (the split kernel's last block per sequence, KV head and row chunk folds) beat it
// on every row with splits in the run of 98f32d4: 56.1 against 64.6 µs at (1, 32768), 148.5 against 156.7 at
// (1, 131072), 154.9 against 158.6 at 16×8192 (and tied, 148.7 against 148.5, at 128×1024, where nothing splits).
// Round 3 (the H200 run of 75d273c, 2026-11-30, bench_decode, both merges under the same rule, which give the same
// bits): the cluster merge won where a sequence has at most 8 splits (155.8 against 159.6 µs at B=16, S=8192, 64/8
// heads; equal on the 32/8 batch rows: 153.5 against 153.7, 275.0 against 274.7) and lost badly with clusters of 16
// (169.1 against 144.0 µs at (1, 131072); 56.3 against 54.5 at (1, 32768); with 3 ring stages, 96 KB blocks, 192.9):
// 16-block clusters of 64 KB blocks do not all fit the GPCs at once. The second run (f53820c, the fused merge with
// its kept counters beside the cluster merge, same run) narrowed it: with 8 real rows a block (64/8 heads) the cluster
// won (156.4 against 158.5 µs at B=16, S=8192), with 4 (32/8) the fused merge did (152.8 against 153.7 at 16 × 8192,
// 274.1 against 275.7 at 64 × 4096): the fused merge's last block folds its rows with one warp each, so 8 rows take
// two rounds on its 4 warps, while the cluster spreads them over all its blocks' warps. So the dispatcher merges in a
// cluster when a sequence has at most kDecodeClusterDispatch splits (the portable size) and a block more than
// kDecodeClusterMinRows − 1 = 4 real rows (measured at 8 only), else by the fused merge. Both give the same bits, so
// the choice may depend on anything (the split rule may not). DecodeMerge::cluster forces clusters up to 16.
inline constexpr DecodeMerge kDecodeMerge = DecodeMerge::cluster;
inline constexpr int kDecodeClusterDispatch = 8;
inline constexpr int kDecodeClusterMinRows = 5;
// The counter memset before the split kernel is a GPU operation of its own; without it (the H200 run of bb13db2,
// 2026-11-30, bench_decode, same kernel): 53.8 against 54.7 µs at (B, S) = (1, 32768) with 32/8 heads, 144.4
// against 145.2 at (1, 131072), 0.8-1.3 µs less on every row with splits but (128, 1024), where nothing splits;
// again in the run of 75d273c (round 2's build): 53.4 against 54.4, 144.5 against 145.4.
inline constexpr bool kDecodeSelfResetCounters = true;
// Round 4 (the H200 run of e84495d, 2026-11-30, bench_decode): clusters of 16 spread one block an SM (DecodeConfig::
// spread_cluster) do not fit 8 at once — the device runs 7 of them (21 packed), so the single-sequence rows' 8 clusters
// (8 KV heads) took two rounds: 76.4 against 52.5 µs (fused merge) at (1, 32768), 224.2 against 141.7 at (1, 131072);
// packed, 55.0 and 167.6. So the dispatcher does not spread (off); above kDecodeClusterDispatch splits it merges by
// the fused merge, as in round 3. On (for measuring): where all the call's clusters run at once, else fused.
inline constexpr bool kDecodeSpreadCluster = false;
// Session 6 (dec5): the split kernel as a programmatic dependent launch, its blocks scheduled while the kernel before
// it drains. Measured (H200 runs of 0ad26b8 and e9af5e6, 2026-11-30, bench_decode, docs/bench/dec5-s6-2026-11-30.md):
// right after a small kernel (a 1×1024 logsumexp inside the timed window) 1.0-1.3 µs less on every row (60.7 against
// 62.0 µs at (1, 32768), 276.7 against 277.9 at 64 × 4096); alone after the bench's flush (a memset, then an event)
// within 0.3 µs of the plain launch. So on. Never taken while the stream captures a graph or when the call zeroes
// counters with a memset (its predecessor is then no kernel).
inline constexpr bool kDecodePdl = true;
// Session 10 (dec10): the TMA variant (DecodeConfig::tma), measured against the cp.async tiles in one H200 call
// (2026-11-30, binaries of 1290b84, bench_decode --tma, 4 samples of each alternating, the dispatcher's merge; cp.async
// / TMA µs, medians): (1, 32768) 53.1 / 53.4, (1, 131072) 142.2 / 143.3, 16 × 8192 151.3 / 148.1, 64 × 4096 271.8 /
// 272.5, 128 × 1024 145.5 / 143.0, 64/8 heads (1, 32768) 56.1 / 56.3 and 16 × 8192 155.7 / 155.7 (the samples of
// each within 0.5 µs but 128 × 1024's cp.async, 143.9-145.6). So TMA where that run found it faster: caches of at
// most kDecodeTmaOneSplit keys (one split: 128 × 1024) and of kDecodeTmaLo + 1 .. kDecodeTmaHi (8 splits of 1024
// keys: 16 × 8192); cp.async elsewhere (4096: 0.26 % slower with TMA; the single-sequence rows 0.3-0.8 %). Both give the
// same bits, so the choice cannot change a result; it is a function of the cache's length S_max alone (never the
// batch). Only those three lengths were timed: the gain appeared at the two 1024-block grids (2.59 waves) and not at
// the 2048-block one, so it may be the partial last wave's rather than the length's (docs/perf-notebook.md, dec10).
// The rule is fitted to those three lengths (gains of 1.7 and 2.1 %, losses of 0.26-0.8 %); whether the length or
// the grid's last wave decides is the open question, for a sweep over S_max × B (review F18 / F19).
// Session 11 (dec11) swept it (H200 call of 16:53 UTC 2026-11-30, binaries of e16cc07, bench_decode --sweep, 32/8
// heads, D = 128, 3 samples alternating, cp.async µs / TMA µs, B = 1, 8, 16, 64): S_max 1024: 0.966, 1.000, 1.006,
// 1.052 (B = 128: 1.001); 2048: 0.965, 0.991, 0.995, 1.026; 4096: 0.973, 0.992, 1.058, 0.998; 8192: 0.990, 1.064,
// 1.023, 0.999; 16384: 0.995, 1.019, 0.993, 0.997; 32768: 0.999, 1.002, 0.994, 1.000; 131072 (B = 1): 0.994. TMA
// gains 5.2-6.4 % on the three grids of 512 blocks (1.29 waves) and 1.9-2.6 % on three of the five of 1024 (2.59
// waves; 0.1-0.2 % at 128 × 1024 and 8 × 32768), loses 0.5-3.5 % on one-block-an-SM grids (B = 1) and ties (±0.7 %)
// on grids of 2048 blocks and more: the gain follows the grid, not the length. As a function of S_max alone, the
// geometric mean over those four batches picks TMA at 1024 (+0.6 %) and 8192 (+1.9 %), cp.async at 2048 (-0.6 %),
// and ties at 16384 (+0.1 %), 32768 (-0.1 %) and 4096 (+0.5 %, but -2.7 % at B = 1 and -0.2 % at 64 × 4096): the
// rule below (decode_tma_rule), unchanged by dec11. Since session 12 it is not the default: the dispatcher chooses
// by the grid (decode_tma_grid_rule, kDecodeTmaByGrid, further below), and decode_tma_rule serves only
// DecodeConfig::tma_grid off.
// kDecodeTma true: the dispatcher's rule (either) applies; false: both rules say cp.async, everywhere (a forced
// DecodeConfig::tma still launches TMA).
inline constexpr bool kDecodeTma = true;
inline constexpr std::int64_t kDecodeTmaOneSplit = 1024;
inline constexpr std::int64_t kDecodeTmaLo = 4096;
inline constexpr std::int64_t kDecodeTmaHi = 8192;
inline constexpr bool decode_tma_rule(std::int64_t s_max) {
  return kDecodeTma && (s_max <= kDecodeTmaOneSplit || (s_max > kDecodeTmaLo && s_max <= kDecodeTmaHi));
}
// Session 12 (dec12): the same choice by the grid, from dec11's sweep (cp.async µs / TMA µs, H200, binaries of
// e16cc07): TMA gained 5.2-6.4 % on the three grids of 512 blocks (3.9 a multiprocessor, 1.29 waves of three) and
// 0.2-2.6 % on the five of 1024 (7.8 an SM), lost 0.5-3.5 % on grids of at most 256 blocks (1.9 an SM) and tied
// (-0.7..+0.3 %) from 2048 (15.5 an SM). So TMA where the grid holds more than kDecodeTmaGridLo and at most
// kDecodeTmaGridHi blocks per multiprocessor: more than one resident wave of 3, fewer than 2048-block grids.
// Measured against the rule of S_max in one H200 call (19:11 UTC 2026-11-30, binaries of 5bb87b3, bench_decode
// --dec12, 3 samples each alternating, µs by S_max / µs by the grid) on the sweep's nine cells where the two differ:
// (S_max, B) (1024, 1) 1.032 (cp.async now), (2048, 64) 1.023, (4096, 16) 1.052, (8192, 1) 1.011, (16384, 8) 1.015,
// (8192, 64) 1.003, (32768, 8) 1.001, (1024, 8) 0.997, (1024, 16) 0.994 (both within the ±0.5 % of the control cell,
// (1024, 64), where the two rules take the same kernel); every cell the same bits; the seven rows take the
// same kernel under both rules (0.996-1.003). So the dispatcher chooses by the grid (kDecodeTmaByGrid);
// DecodeConfig::tma_grid off gives the rule of S_max. Like decode_tma_rule, it says cp.async everywhere when
// kDecodeTma is off (review F2; TmaGridRuleBounds pins both).
inline constexpr bool kDecodeTmaByGrid = true;
inline constexpr std::int64_t kDecodeTmaGridLo = 3;
inline constexpr std::int64_t kDecodeTmaGridHi = 8;
inline constexpr bool decode_tma_grid_rule(std::int64_t blocks, std::int64_t sms) {
  return kDecodeTma && blocks > kDecodeTmaGridLo * sms && blocks <= kDecodeTmaGridHi * sms;
}
// How many times the TMA variant was launched in this process (tests check that a forced TMA call took it).
std::uint64_t decode_tma_launches();

// attention_decode after validation (src/attention/args.cpp): src/cuda/attention/decode.cu.
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      const detail::DecodeProblem& problem, Stream stream, void* merge_start_event = nullptr,
                      const DecodeConfig& config = {});
// merge_start_event (a cudaEvent_t, for the benchmark tests/cuda/attention/bench_decode.cpp): recorded on the stream
// after the split kernel, before the merge kernel, so the merge's share of the time can be measured.
// How many thread-block clusters of `cluster` blocks of the tensor-core decode kernel (16-bit, bf16 or f16, head
// dimension d, `stages` ring stages) the device runs at once, packed or spread one block an SM (decode_mma.cu; the
// dispatcher reads it, bench_decode prints it).
int decode_mma_active_clusters(int device, bool bf16, int d, int stages, int cluster, bool spread);

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream);

}  // namespace smk::cuda
