// Cross-entropy forward + backward in one call on the GPU (cross_entropy_forward_backward): the loss (every
// reduction and option), the per-row LSE and the gradient for a given upstream gradient, reading the logits once.
// A row is held on chip from its first read to its gradient's store, in registers: one block per row (wide,
// 1024 threads × 32 logits, the dispatcher's; or narrow, 512 × 24, for tuning), or a thread-block cluster of up to
// kFusedMaxCluster blocks whose partial states meet through distributed shared memory (as softmax's cluster_row and
// wide block, src/cuda/softmax/block_row.cu). The grid is persistent; each block loads its next row's target during
// the current row, and can stage its next rows in shared memory by bulk copy (row_stage.cuh; 16-bit rows by
// default: stage_rule). Rows wider than a cluster holds, soft-capped rows, and launches the GPU cannot
// schedule take the two-read path (cross_entropy then cross_entropy_backward: fused_two_read below); so do rows above
// kFusedAutoMaxCols (163840), where nothing was measured.
// Since ce11 (session 11) the dispatcher sends 16-bit rows of 65537 classes and more, and every row above
// kFusedAutoMaxCols, to the row loop instead (row_loop.cuh: a persistent grid of blocks that each own whole rows and
// read them twice; row_loop_rule below has the run that chose it): bf16 4096×151936 1434-1469 → 902-909 µs (64 % of
// the 2n bound), 1024×262144 691 (two calls) → 415. f32 rows the one-read kernel holds stay here (1729 against 1803).
// ce11's move of the per-row scalars into common.cuh (c2d6f83: row_scalars, row_loss, grad_coeffs, target_entry, the
// same expressions) changed this one-read kernel's SASS (f9a6775, cuobjdump of the 10 fused_kernel instantiations:
// scheduling, register allocation, the operand order of commutative FFMAs; not identical). Its tests and vs_torch_ce
// (0 of 120 comparisons worse than torch) passed on the H200 in the lead's integrated run of afd6839. Review F21,
// closed by ce12 (H200, 2026-11-30 19:32 UTC): e44d455's cross-entropy objects (fused.cu, forward.cu, backward.cu)
// and da49fbb's (the row loop off: this kernel at every width it holds) ran the same 133 calls of
// cross_entropy_forward_backward (f32, f16, bf16 logits; 16-bit gradients and f32; C = 1000, 8193, 32000, 32769,
// 65536, 100000, 151936, 163840 on 128 / 40 rows, more than the resident clusters at 5 blocks; mean, sum, none with
// an upstream gradient; label smoothing 0.1 / 0.05, z-loss, class weights, ignore_index 7 (a valid class id) on every
// seventh row, in place, every fifth row's target 25 above the rest (p_t → 1), soft-capping's two calls): loss, LSE,
// z-loss and every gradient row byte for byte the same in all 133 (the gradient compared by a 64-bit hash a row;
// docs/bench/ce12-s12-2026-11-30.md).
//
// Per row, one exchange (fused_kernel): each warp's state over its logits other than the target, combined across the
// block and the cluster (combine_parts), the target logit and label smoothing's Σ w_c (z_c − r) carried with
// it; then R = Σ_{j≠t} e_j against the row's max M, l = R + e_t, and the gradient e_j·A_w + B_j (A_w = A·exp(m_w − M),
// A = (g·(1 − ε)·w_t + g·ε/C·W + 2s·g_z·LSE) / l, B_j = −g·ε/C·w_j) in registers, stored over the row (in place
// allowed), the target's entry p_t − 1 (as −R / l from p_t ≥ ½ on) patched by its owner thread. The loss is log1p(R) when the target
// holds the max (exact as p_t → 1), else (M − z_t) + log l (then p_t ≤ ½, nll ≥ log 2). Every sum and merge is a
// fixed tree whose shape depends on C alone (the launch shape is a function of C): bitwise the same alone or in any
// batch, run after run. A 16-bit gradient's e_j take the 16-bit tier (ce::grad_exp: exp_shifted, no TwoSum;
// common.cuh, docs/semantics.md §12).
//
// Traffic per element: read the logits once and write the gradient once, 8 B (f32), 4 B (bf16 / f16), 6 B (16-bit
// logits, f32 gradient); per-row values and targets < 0.1 %. Floor on the H200 at the copy ceiling of 4.27 TB/s
// (ANCHORS.md): 4096×151936 f32 (4.98 GB) 1166 µs, bf16 583 µs; 8192×32000 f32 (2.10 GB) 491 µs, bf16 246 µs.
// Measured (H200, 2026-11-30, ce5's run of 88d0035 at 08:16 UTC, tune_cross_entropy, in place, mean; the kernels
// the dispatcher takes since f258ab4, SASS-identical to those timed; docs/bench/ce5-s7-2026-11-30.md): 8192×32000
// bf16 390 µs (63 % of the 2n bound, 3.04× torch's F.cross_entropy forward + backward in the same run; before ce5
// 472), f16 379 (65 %, 3.12×), f32 581 (85 %, 3.73×: session 6's kernel); 4096×151936 on 5 wide blocks bf16 1430
// (41 %, 1.95×; before 1499; the two calls 1582), f16 1431 (41 %, 1.94×), f32 1724 (68 %, 3.16×).
// Count (ncu --set full on the H200, ce5's run of 6bf877f, bf16 8192×32000, the kernel before ce5): 1095 warp
// instructions a row a warp, 35 a logit; the element work ≈ 14 a logit (450 a row a warp), the row's own work
// (pointers and options, the target owner's divisions, the exchange and the row's scalars, staging, the stores' setup)
// ≈ 650, repeated by every warp; issue slots 66 % busy, DRAM 50 %; 8.6 % of stall samples on the next row's target
// moved into a uniform register right after its load (the targets' ring below removed it). A block of 512 threads ×
// 64 logits (half the warps a row: 188 M warp instructions where the wide block took 287 M, 23 a logit) timed no
// faster (385 against 390 µs; 1466 against 1430 at 4096×151936: 16 warps an SM hide less) and was removed (da2014e
// has it). What is left: the row's own work, and one block an SM with nothing else resident during the exchange.
// Session 8 (ce6, H200 runs of b2405b6 at 09:54 UTC and 3a7313b at 10:03 UTC, docs/bench/ce6-s8-2026-11-30.md):
// every cluster size from 5 to 16 wide blocks at 4096×151936 (tune_cross_entropy --clusters): resident clusters 22
// (5 blocks), 17, 15, 15, 9, 21, 16, 16, 21 (16 blocks); bf16 1440.7 µs on 5, 1509.0 on 10, 1631.9–2602.3 on the
// others; f32 1723.8 on 5, 1860.5–3254.6 on the others: the time follows the rows in flight, not the SMs covered, so
// 5 blocks stay. Nsight Compute (bf16, 5 blocks): DRAM 36.6 %, issue slots 44.6 %, 33.5 lane-instructions a logit,
// SMs active 81.5 % of the call. The issue's shapes (×torch's F.cross_entropy fwd+bwd, % of the 2n bound): bf16
// 8192×32000 379.5–405.4 µs over six samples (2.92–3.12×, 61–65 %), 4096×151936 1440.7–1475.1 (1.93×, 40 %); f32
// 8192×32000 578.9–591.6 over ten (3.66–3.74×, median 83.7 %: a tail round of 8 rows on 132 blocks costs 1.6 %),
// 4096×151936 1723.8–1756.1 (3.15×, 66–68 %). The target entry below p_t = ½ is p_t − 1 since 3a7313b (run 1 had f32
// target entries at 1.8 ulps against torch's 0.5; run 2 at torch's under reduction none, ~2 ulps under the mean).
// Session 9 (ce9, H200 runs of 6553958 at 13:04 and 13:06 UTC, docs/bench/ce9-s9-2026-11-30.md): single-block launches
// are programmatic dependents of the target scan, and the mean after them of this kernel (griddepcontrol: the kernel
// waits for the scan's totals, then lets the next grid be scheduled): f32 8192×32000 577.8 µs at the median of seven
// samples (572.3–583.3; 85.0 % of the 2n bound, 491.1 µs) against 582.9 plain (579.6–604.1, fourteen), bf16 377.1
// against 379.4; 5-block clusters no faster (4096×151936), so they launch plain. A tail launch (the last partial
// round's rows on clusters, the same bits) ran slower at every shape tried; removed (review F15; 6553958 has it).
// The target entry's f32 form is unchanged: a precise form (double, or f32 with the mean's scale in two parts) made
// ptxas spill 68–92 bytes a thread in the f32 wide kernel, which has none (64 registers; CUDA 13.0, sm_90a).
// Session 10 (ce10, H200 run of 86188de at 14:56 UTC, docs/bench/ce10-s10-2026-11-30.md): (1) the mean's f32 target
// entry formed outside this kernel: the owner thread leaves R, e_t, the rest of the entry and (1 − ε)·w_t
// (TargetParts, 16 B a row; still 64 registers and no spill in the f32 wide kernel) and the mean's kernel re-forms it
// in double (forward.cu reduce_kernel); its test passed; it timed slower, 2.1 % at f32 8192×32000 (median 613.5 µs
// against 601.1 over seven samples) and 1.4 % at 4096×151936 (~1775 against ~1750), slot order not rotated; it is on
// by default since the session's review (kFusedTargetFix, the lead's decision: never less accurate than PyTorch on
// the same input; it is meant to close the last 2 of vs_torch_ce.py's 120 comparisons, f32 target entries under the
// mean, which no GPU run has measured with it yet). (2) The instruction diet (the 16-bit tier's exponent by one FFMA
// and ex2.approx.ftz, a tuning variant of the bf16 wide kernel): bf16 4096×151936 1405.7–1407.9 µs against 1450.3–1460.9
// (−3.2 % at the medians), 8192×32000 even; it flushes subnormal terms (bf16-subnormal gradient entries read 0),
// which docs/semantics.md §12 does not allow, so it was removed after the session's review (F14; 86188de and 53bf3d2
// have it, 53bf3d2 with its test DietAgainstFloat64). This run's dispatcher kernels (without the target fix): bf16
// 4096×151936 1453.9 µs (median of 4; 40.1 % of the 2n bound, 583 µs), 8192×32000 391.4 (62.7 %); f32 8192×32000
// 601.1 (81.7 %: the machine's state in this run was slower than ce9's 577.8 for the same kernel), 4096×151936 ~1750.
#include <cooperative_groups.h>
#include <cuda_pipeline.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <mutex>
#include <type_traits>

#include "cuda/device_attrs.hpp"
#include "cuda/cross_entropy/common.cuh"
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "cuda/cross_entropy/linear_launch.cuh"
#include "cuda/device_guard.hpp"
#include "cuda/cross_entropy/row_loop.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/row_stage.cuh"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::ce {

namespace {

namespace cg = cooperative_groups;
using kernels::RowTile;

// Two block shapes, the same kernel template (as softmax's block_per_row and its wide block, block_row.cu):
//  - wide: 1024 threads × 32 logits, 32768 a block, one block an SM at full size (64 registers a thread); a shorter
//    row takes ⌈C / 32⌉ threads (rounded to a warp), so more rows share an SM; clusters of up to 16 wide blocks;
//  - narrow: 512 threads × 24 logits, 12288 a block, at two blocks an SM (64 registers a thread); clusters of up to
//    16 narrow blocks. The dispatcher no longer uses it (below); tuning and the tests still run it.
// ptxas -v (CUDA 13.0, sm_90a), both at 64 registers: the wide kernel spills 28–52 B a thread (f32 52, bf16 28–40),
// the narrow one 4–24 B (the earlier narrow f32 kernel, with two exchanges, 208 B).
constexpr int kNarrowThreads = 512;
constexpr int kNarrowElems = 24;
constexpr int kWideThreads = 1024;
constexpr int kWideElems = 32;
constexpr int kFusedMaxCluster = 16;
constexpr std::int64_t kNarrowBlockCols = std::int64_t{kNarrowThreads} * kNarrowElems;  // 12288
constexpr std::int64_t kWideBlockCols = std::int64_t{kWideThreads} * kWideElems;        // 32768
constexpr std::int64_t kFusedMaxCols = kWideBlockCols * kFusedMaxCluster;              // 524288
// The dispatcher's rule, by the row length and the dtype alone (a row's bits never depend on the batch): the fewest
// wide blocks that hold a row, up to kFusedAutoMaxCols classes (every dtype since ce4); longer rows take the two
// calls. 16-bit rows are staged (stage_rule), f32 rows are not. Measured (H200,
// session 5, runs of ef4d08c and c6ad8a5; docs/bench/ce3-fused-2026-11-30.md): the wide block against the narrow one
// and the two calls — 16384×8192 bf16 284 µs (narrow 379, two calls 624), f32 375 (398, 800); 8192×32000 bf16 567
// (narrow ×3: 859), f32 651 (905); 4096×65536 (2 blocks) bf16 644 (narrow 988, two calls 729), f32 779 (1027, 977).
// Session 6 (ce4, H200 run of af97358 at 06:07 UTC, tune_cross_entropy, in place, mean; docs/bench/ce4-s6-2026-11-30.md),
// µs staged / unstaged / two calls:
//   16384×8192   one block:  bf16 231 / 236 / 651,    f32 349 / 336 / 828;
//   8192×32000   one block:  bf16 462 / 482 / 1078,  f32 662 / 602 / 1208;
//   4096×65536   2 blocks:   bf16 565 / 503 / 755,    f32 780 / 669 / 1004;
//   4096×151936  5 blocks:   bf16 1521 / 1486 / 1639, f32 2125 / 1757 / 2183.
// So 16-bit rows above 65536 left the two calls (4096×151936: 1486 against 1639, 9 %; the run of 8a23aad, before
// combine_parts, had them level: 1645 staged against 1639); nothing between 65536 and 151936 was timed.
// Session 7 (ce5, H200 run of 88d0035 at 08:15 UTC; the targets' ring of 16-bit rows, fused_kernel), µs staged /
// unstaged / two calls: 8192×32000 bf16 390 / 511 / 1044, f16 379 / 515 / 1039; 4096×151936 (5 blocks) bf16 1430 /
// 1529 / 1582, f16 1431 / 1520 / 1563: f16 above 65536, timed for the first time, takes the one-read kernel as bf16.
constexpr std::int64_t kFusedAutoMaxCols = 5 * kWideBlockCols;  // 163840
// The row loop's rule (ce11, row_loop.cuh; row_loop_rule below), by C and the dtype: 16-bit logits above
// kRowLoop16MinCols − 1 classes (where the one-read kernel needs a cluster of 3 or more wide blocks); every dtype above
// kFusedAutoMaxCols (where the two calls served before); up to kRowLoopMaxCols (its element indices are 32-bit).
// From ce11's H200 run of e711d37's binaries (2026-11-30 17:21 UTC, tune_cross_entropy, in place, mean, median µs of
// 7-9 repeats, two samples at the issue's shapes; the one-read kernel or the two calls → the row loop at two blocks an
// SM with its cache hints; docs/bench/ce11-s11-2026-11-30.md):
//   bf16  4096×151936  1469.3 / 1434.0 → 909.1 / 901.5;   8192×32000  378.7 / 376.9 → 423.0 / 422.8 (slower)
//         1024×262144  690.8 (two calls) → 415.2;          256×151936  125.2 → 84.5
//   f32   4096×151936  1731.5 / 1727.4 → 1804.3 / 1801.3 (slower);  8192×32000  590.2 / 595.1 → 653.9 / 652.9 (slower)
//         1024×262144  946.3 (two calls) → 816.6;          256×151936  156.8 → 145.3
// So f32 keeps the one-read kernel wherever it holds the row (its 256-row gain is one sample; the rule cannot see the
// rows), and takes the row loop only past it. Not timed: 16-bit rows between 65537 and 151935 classes (they take the
// row loop by this rule: the cluster kernel ran there at 40-45 % of the bound in sessions 6-8, the row loop at 60-65 %
// at 151936 and 262144), f16 (it shares bf16's code path: the same loads, the same 16-bit tier).
constexpr std::int64_t kRowLoop16MinCols = 65537;
constexpr std::int64_t kRowLoopMaxCols = std::int64_t{1} << 28;
// The row loop's staged steps (ce12, row_loop.cuh kStaged): the first steps of a row (32 KB each: 16384 16-bit logits
// or 8192 f32) kept in shared memory through pass 2, so they are read once. Three steps (96 KB a block) keep two
// blocks an SM; up to kLoopMaxStageSteps (192 KB, one block an SM) for tuning. A device whose opt-in limit cannot
// give a block the steps asked for (row_loop_stage_fit: 3 steps fit every sm_80+ device, 99 KB and up; 6 do not fit
// an A100's 163 KB) runs the unstaged kernel instead, with the same bits (launch_row_loop).
// Count (ce12, before the run): bf16 4096×151936 has 9 whole steps of 9.3: 3 staged = 49152 of 151936 logits
// (32 %) not re-read, (2 + 0.68)·n = 2.68n bytes against 3n: at the row loop's measured 4.11-4.14 TB/s ≈ 810 µs
// (905 before), 72 % of the 2n bound; f32 3 of 18.5 steps (16 %): ≈ 1710 (1803; the one-read kernel 1729).
// Predicted below the issue's 85 % (690 µs at bf16): the rest of the second read stays.
// Measured (ce12's H200 run of da49fbb's binaries, 2026-11-30 19:32 UTC, tune_cross_entropy, in place, mean, two
// samples of the median of 7, µs; docs/bench/ce12-s12-2026-11-30.md), 4096×151936, staged 3 steps / unstaged:
//   bf16  899.7, 918.9 (the dispatcher's launch of it 907.7, 902.2) / 919.3, 919.8 (775cf6d's build 922.5, 907.2)
//   f32   1746.7, 1734.3 / 1800.1, 1800.0 (the one-read kernel, which the dispatcher keeps at 151936: 1738.8, 1736.7)
//   6 steps at one block an SM: bf16 1033.3, 1059.5; f32 1890.6, 1886.2 (slower).
// So the prediction failed for bf16 (~1.5 % at the medians of four samples each, not 10 %) and half held for f32
// (−3.4 %). Shipped for every row the row loop takes, since it was not slower anywhere it was timed and gives the
// same bits; timed at 4096×151936 only (1024×262144, 256×151936 and f16 were cut by the run's time cap).
constexpr int kLoopMaxStageSteps = 6;
constexpr int kLoopStage16 = 3;
constexpr int kLoopStageF32 = 3;
int loop_stage_steps(std::size_t in_size, std::int64_t classes) {
  (void)classes;
  return in_size == 2 ? kLoopStage16 : kLoopStageF32;
}
// The row pipeline's stage buffers, each a block's share of one row: two for 16-bit logits (2 × 64 KB at a wide
// block), one for f32 (a wide block's two, 256 KB, do not fit the SM's 227 KB).
template <typename In>
constexpr int kStages = sizeof(In) == 2 ? 2 : 1;
// Whether the dispatcher stages a row (tuning's stage −1): 16-bit logits, on a single block or a cluster; f32 never
// (slower staged on every shape timed, e.g. 8192×32000 662 against 602 µs in session 6, 749 against 599 in session
// 7; 4096×151936 2174 against 1761). Session 6 staged 16-bit rows on one block only (8192×32000 bf16 462 against 482;
// clusters: 4096×65536 565 against 503, 4096×151936 1521 against 1486); since the targets' ring (session 7, run of
// 88d0035) staging pays on clusters too: 4096×151936 bf16 1430 against 1529, f16 1431 against 1520 (8192×32000
// bf16 390 against 511). 4096×65536 and 16384×8192 were not re-timed.
inline bool stage_rule(std::size_t in_size, int cluster) {
  (void)cluster;
  return in_size == 2 ? kFusedStage16 : kFusedStageF32;
}

// n / d for n·d < 2^32 by one multiplication: ⌊n·m / 2^32⌋ with m = ⌈2^32 / d⌉ (d a power of two: m exact) is exact
// while n·(m − 2^32/d) < 2^32/d, i.e. for every n < 2^32/d. The fused kernel divides n < 2^16 by d ≤ 16·1024.
struct Divider {
  unsigned d, m;
  __device__ explicit Divider(unsigned d_) : d(d_), m(d_ > 1 ? 0xffffffffu / d_ + 1 : 0) {}
  __device__ __forceinline__ unsigned operator()(unsigned n) const { return d > 1 ? __umulhi(n, m) : n; }
};

// One block of kThreads (narrow or wide, above) per row, or a cluster of `cluster` such blocks. Each row takes one
// exchange: every warp forms the state of its logits other than the target (its max by a shuffle butterfly, exact;
// then Σ out_exp(z − that max) by its registers' pairwise tree and a butterfly), the warps' states are combined
// through one block barrier (combine_parts: the max, then the rescaled sum, each a butterfly; session 5's kernel
// merged them by an xor tree of OnlineSoftmaxState::merge), and the blocks' through one cluster barrier (the same
// combination); the kernel before that took a max, then a sum, each through a block and a cluster
// barrier. The elements are then rescaled by their warp's factor exp(m_w − M), folded into the gradient's one FMA
// (A_w = A·exp(m_w − M)): no instruction an element more. The persistent grid loads the next row's target during the
// current row (and, staged, the row itself into shared memory by bulk copy), so a row's chain has no dependent global
// load: the target logit comes out of the exchange (its owner thread's register), the
// weight and the upstream gradient are issued at the row's start, and the reduction's scale (sum / mean) is hoisted.
// Error: the warp's sum is the earlier kernel's tree (registers, then 5 butterfly levels); each combination (block,
// cluster) adds at most 12u (combine_parts), within the 8u a level × 9 levels the merge tree was allowed; an element's
// p_j gains exp_diff's 5u for its warp's factor and one rounding of A_w.
// tests/cuda/cross_entropy/test_cross_entropy_gpu.cpp gates the one-read path with that depth (kFusedSumDepth, 82:
// still an upper bound, 10 + 12 + 12 = 34 would do).
template <typename In, typename Out, int kThreads, int kElems, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) fused_kernel(const Args a, const FusedArgs f,
                                                                     const Totals* totals, int cluster) {
  using Tile = RowTile<In, kElems>;
  using Stage = kernels::RowStage<In, kElems>;
  constexpr int E = kElems, V = Tile::V;
  extern __shared__ __align__(16) unsigned char stage_bytes[];  // f.prefetch: kStages<In> × Stage::bytes(blockDim.x)
  In* const stage0 = reinterpret_cast<In*>(stage_bytes);
  __shared__ alignas(8) std::uint64_t stage_bar[2];
  __shared__ typename Stage::Plan stage_plan;
  // By row parity: a slot is rewritten two rows later, after the next row's barrier, which every thread reaches
  // only after reading it (the block's for warp_part and zt_slot, the cluster's for block_part).
  __shared__ RowPart warp_part[2][32];
  __shared__ RowPart block_part[2];
  __shared__ float zt_slot[2];
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int T = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32, warps = T / 32;
  const int g = rank * T + tid, G = cluster * T;
  const int n = static_cast<int>(a.classes);
  const std::int64_t first = blockIdx.x / cluster, stride = gridDim.x / cluster;

  // A programmatic dependent launch (FusedTuning::pdl): the totals are the scan's, so wait for it before reading
  // them; then let the next grid (the reduction) be scheduled as SMs free up. At once when the launch was plain.
  kernels::pdl_wait();
  kernels::pdl_launch_dependents();

  // Row-invariant: the reduction's scale of the upstream gradient (the CPU's formula, in double), the smoothing
  // constants.
  float g_ce_all, g_z_all;
  reduction_scales(a, f.grad_loss, totals, g_ce_all, g_z_all);
  const float soft = a.eps / static_cast<float>(a.classes);
  const float W = static_cast<float>(totals->weight_total);
  // The row pipeline (f.prefetch: every row 16-byte aligned, unit stride): thread 0 bulk-copies the block's share of
  // the next row into shared memory (row_stage.cuh) right after the current row's block barrier, by which every
  // thread has read the stage, so the copy is in flight through the exchange, the gradient and its stores.
  // With two buffers the copy of row i + 2 goes into row i's buffer once row i's barrier has passed, so each copy
  // has two rows' time to land instead of the rest of one (ce4's H200 run of 8a23aad: one buffer, bf16 8192×32000
  // 498 µs against 536 unstaged, still ~8 µs a row an SM where the row's bytes need 4).
  constexpr int nst = kStages<In>;
  const int stage_elems = T * E;  // one buffer: Stage::bytes(T) / sizeof(In)
  std::uint32_t stage_phase = 0;  // bit b: the phase buffer b's next copy completes
  if (f.prefetch) {
    if (tid == 0) {
#pragma unroll
      for (int b = 0; b < nst; ++b) Stage::init(&stage_bar[b]);
      Stage::plan(&stage_plan, n, rank * T, T, G);
    }
    __syncthreads();
    if (tid == 0) {
#pragma unroll
      for (int b = 0; b < nst; ++b) {
        const std::int64_t r = first + b * stride;
        if (r < a.rows) {
          const In* x0 = row_ptr<In>(a, r);
          In* const buf = stage0 + b * stage_elems;
          Stage::template issue<1>({buf}, &stage_bar[b], {x0}, &stage_plan, T);
        }
      }
    }
  }
  int buf_i = 0;  // the buffer of this row
  // 16-bit logits: the targets two rows ahead through shared memory. Thread 0 copies row i + 2's target into slot
  // (i + 2) mod 4 by cp.async at row i's start and waits for it before row i's barrier; every thread reads its row's
  // slot after the barrier before. A target loaded into a register the row before (session 6's kernel, kept for f32)
  // was moved into a uniform register right after its load, so every warp waited for it at every row's start: ncu on
  // the H200 (ce5, session 7, bf16 8192×32000) put 8.6 % of all stall samples on that one instruction; with the ring,
  // bf16 8192×32000 staged 467 → 390 µs in one run (the owner's divisions by multiplication too, Divider). A slot is
  // rewritten two rows after its row read it (a barrier between); its copy is waited for before the barrier that
  // precedes its readers. f32 rows keep the register (the ring timed 2 % slower there: 598.6 against 585.9 µs at
  // 8192×32000, 1761 against 1723 at 4096×151936, both unstaged; ptxas spilled 24 bytes), so their code is session
  // 6's.
  constexpr bool kRing = sizeof(In) == 2;
  __shared__ std::int64_t t_ring[4];
  std::int64_t t_next = 0;
  if constexpr (kRing) {
    if (tid == 0)
      for (int k = 0; k < 2; ++k) t_ring[k] = first + k * stride < a.rows ? target_of(a, first + k * stride) : 0;
    __syncthreads();
  } else {
    t_next = first < a.rows ? target_of(a, first) : 0;
  }
  // Which thread holds the target: two divisions by the launch's G and T a row, by multiplication (Divider).
  const Divider div_g(static_cast<unsigned>(G)), div_t(static_cast<unsigned>(T));
  int parity = 0;
  for (std::int64_t row = first, iter = 0; row < a.rows; row += stride, parity ^= 1, ++iter) {
    const In* xr = row_ptr<In>(a, row);
    std::int64_t t;
    if constexpr (kRing) {
      const int slot = static_cast<int>(iter & 3);
      t = a.targets_i64 ? t_ring[slot] : *reinterpret_cast<const std::int32_t*>(&t_ring[slot]);
      if (tid == 0 && row + 2 * stride < a.rows) {
        const std::int64_t o = (row + 2 * stride) * a.t_stride;
        void* dst = &t_ring[(slot + 2) & 3];
        if (a.targets_i64) __pipeline_memcpy_async(dst, static_cast<const std::int64_t*>(a.targets) + o, 8);
        else __pipeline_memcpy_async(dst, static_cast<const std::int32_t*>(a.targets) + o, 4);
        __pipeline_commit();
      }
    } else {
      t = t_next;
      if (row + stride < a.rows) t_next = target_of(a, row + stride);  // in flight through this row
    }
    const RowKind kind = row_kind(a, t);
    const bool valid = kind == RowKind::valid;
    // Issued now, used after the exchange.
    const float wt = valid ? weight_of(a, t) : 0.0f;
    float g_ce = g_ce_all, g_z = g_z_all;
    if (a.reduction == Reduction::none && f.grad_loss) g_ce = g_z = f.grad_loss[row * f.gl_stride];
    const bool smoothing = a.eps > 0 && valid;  // uniform over the cluster
    float r0 = 0;
    if (smoothing) {
      r0 = kernels::to_f32(xr[0]);
      r0 = isfinite(r0) ? r0 : 0.0f;
    }
    // Every read of this row happens before the exchange's barrier, every store after it: in place, no thread of
    // the cluster reads what another has already overwritten.
    float v[E];
    if (f.prefetch) {
      Stage::wait(&stage_bar[buf_i], (stage_phase >> buf_i) & 1u);
      stage_phase ^= 1u << buf_i;
      Stage::load(v, stage0 + buf_i * stage_elems, xr, n, g, G, tid, T);
    } else {
      Tile::load(v, xr, n, a.col_stride, g, G);
    }

    // Label smoothing's Σ w_c (z_c − r) over this thread's logits, the target's included (r = the row's first
    // logit, as the forward).
    float sm = 0;
    if (smoothing) {
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        float terms[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const int i = Tile::index(k, g, G) + j;
          terms[j] = i < n ? weight_of(a, i) * (v[k * V + j] - r0) : 0.0f;
        }
        sm += kernels::tree_sum<V>(terms);
      }
    }
    // The target leaves its owner's values (−inf: no term), so every sum below is over the other logits and
    // p_t − 1 = −R / l keeps its digits as p_t → 1 (taken from p_t ≥ ½ on; below, p_t − 1 itself).
    int t_local = -1, owner_rank = 0;
    if (valid) {
      if constexpr (kRing) {  // 0 ≤ t < C ≤ 2^19: vi < 2^16
        const unsigned vi = static_cast<unsigned>(t) / V;
        const unsigned q = div_g(vi), owner = vi - q * static_cast<unsigned>(G);
        owner_rank = static_cast<int>(div_t(owner));
        if (owner == static_cast<unsigned>(g)) t_local = static_cast<int>(q * V + static_cast<unsigned>(t) % V);
      } else {
        const int vi = static_cast<int>(t / V);
        owner_rank = (vi % G) / T;
        if (vi % G == g) t_local = (vi / G) * V + static_cast<int>(t % V);
      }
    }
    float zt_mine = -detail::inf_<float>();
    if (t_local >= 0) {
#pragma unroll
      for (int i = 0; i < E; ++i)
        if (i == t_local) {
          zt_mine = v[i];
          v[i] = -detail::inf_<float>();
        }
    }

    // The warp's state: its max (exact in any order), e_j = exp_diff(z_j, m_w) in place, their sum.
    const float mw = kernels::group_max(kernels::tree_max<E>(v), 32);
    const float sw_shift = State::shift_for(mw);
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = grad_exp<Out>(v[i], sw_shift);  // the 16-bit tier (common.cuh)
    const float lw = kernels::group_sum(kernels::tree_sum<E>(v), 32);
    State sw = State::from_max_and_sum(mw, lw);
    if (smoothing) sm = kernels::group_sum(sm, 32);

    // The exchange: the block's warps, then the cluster's blocks.
    if (lane == 0) warp_part[parity][warp] = RowPart{sw.m, sw.d, sm, 0.0f};
    if (t_local >= 0) zt_slot[parity] = zt_mine;
    if constexpr (kRing)
      if (tid == 0) __pipeline_wait_prior(0);  // row i + 2's target has landed (t_ring above)
    __syncthreads();
    // Every thread has read the stage: refill it with the next row.
    if (f.prefetch) {
      if (tid == 0 && row + nst * stride < a.rows) {
        const In* xn = row_ptr<In>(a, row + nst * stride);
        In* const buf = stage0 + buf_i * stage_elems;
        Stage::template issue<1>({buf}, &stage_bar[buf_i], {xn}, &stage_plan, T);
      }
      buf_i = buf_i + 1 == nst ? 0 : buf_i + 1;
    }
    State rs = State::empty();
    float rsm = 0;
    if (lane < warps) {
      const RowPart p = warp_part[parity][lane];
      rs = State::from_fields(p.m, p.d);
      rsm = p.smooth;
    }
    rs = combine_parts(rs);
    if (smoothing) rsm = kernels::group_sum(rsm, 32);
    float zt = 0;
    if (cluster > 1) {
      if (tid == 0)
        block_part[parity] =
            RowPart{rs.m, rs.d, rsm, valid && owner_rank == rank ? zt_slot[parity] : -detail::inf_<float>()};
      cg::this_cluster().sync();
      RowPart p{-detail::inf_<float>(), -1.0f, 0.0f, 0.0f};
      if (lane < cluster) p = *cg::this_cluster().map_shared_rank(&block_part[parity], lane);
      rs = combine_parts(State::from_fields(p.m, p.d));
      if (smoothing) rsm = kernels::group_sum(p.smooth, 32);
      if (valid) zt = cg::this_cluster().map_shared_rank(&block_part[parity], owner_rank)->zt;
    } else if (valid) {
      zt = zt_slot[parity];
    }

    // The row (common.cuh row_scalars): M, R = Σ_{j≠t} exp(z_j − M), e_t, l = R + e_t, the LSE, 1 / l.
    const RowScalars rsc = row_scalars(rs, zt, valid);

    // The loss, by one thread.
    const float hard = (1 - a.eps) * wt;
    if (g == 0) row_loss(a, totals, f.out, row, kind, rsc, zt, hard, soft, smoothing, r0, rsm);

    // The gradient.
    if (!valid) {  // ignored: 0; a bad target: NaN
      const float fill = kind == RowKind::ignored ? 0.0f : detail::nan_<float>();
#pragma unroll
      for (int i = 0; i < E; ++i) v[i] = fill;
    } else {
      // ∂loss/∂z_j = e_j·A_w + B_j for j ≠ t (common.cuh grad_coeffs), with e_j against the warp's max and
      // A_w = A·exp(m_w − M). A warp with no finite logit has e_j = 0 and factor 0 (exp(0 − M) could overflow); A is
      // NaN for a row whose max is not finite, and NaN·0 keeps that.
      const GradCoeffs gc = grad_coeffs(a, rsc, g_ce, g_z, hard, soft, W);
      const float Aw = gc.A * (mw == -detail::inf_<float>() ? 0.0f : exp_diff(mw, rsc.shift));
      const float B = gc.B;
      if (smoothing && a.weights) {
#pragma unroll
        for (int k = 0; k < Tile::K; ++k)
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const int i = Tile::index(k, g, G) + j;
            v[k * V + j] = fmaf(v[k * V + j], Aw, i < n ? B * weight_of(a, i) : 0.0f);
          }
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) v[i] = fmaf(v[i], Aw, B);
      }
      if (t_local >= 0) {  // the target: p_t − 1, formed in f32 before rounding (common.cuh target_entry); the
                           // mean's kernel re-forms it in double where f.target_parts (TargetFix: f32 gradients)
        const float dt = target_entry(rsc, gc, g_ce, hard, soft, W, wt, f.target_parts, row);
#pragma unroll
        for (int i = 0; i < E; ++i)
          if (i == t_local) v[i] = dt;
      }
    }
    Out* gr = static_cast<Out*>(f.grad) + row * f.g_row_stride;
    Tile::template store<Out>(gr, v, n, f.g_col_stride, g, G);
  }
  // A block's shared memory must outlive every remote read of it.
  if (cluster > 1) cg::this_cluster().sync();
}

// The launch shape for C classes: the block kind, the fewest blocks of it that hold a row (or `cluster_override`
// blocks, tuning, when that holds one), and threads a block (a multiple of 32).
struct FusedShape {
  bool wide = false;
  int cluster = 0, threads = 0;  // cluster 0: the row does not fit
};
FusedShape fused_shape(std::int64_t classes, int threads_override, int cluster_override) {
  FusedShape s;
  s.wide = threads_override != kNarrowThreads;
  const std::int64_t cols = s.wide ? kWideBlockCols : kNarrowBlockCols;
  const int elems = s.wide ? kWideElems : kNarrowElems;
  const std::int64_t need = std::max<std::int64_t>(1, (classes + cols - 1) / cols);
  if (need > kFusedMaxCluster) return s;
  int c = static_cast<int>(need);
  if (cluster_override >= c && cluster_override <= kFusedMaxCluster) c = cluster_override;
  const std::int64_t per_block = (classes + c - 1) / c;
  const std::int64_t threads = ((per_block + elems - 1) / elems + 31) / 32 * 32;
  s.cluster = c;
  s.threads = static_cast<int>(std::max<std::int64_t>(32, threads));
  return s;
}

FusedTuning g_tuning;
// The last one-read launch's shape (tuning reports it: last_fused_launch), per host thread: every launch writes it,
// so one process-wide record would be a data race (undefined behaviour) between host threads running cross-entropy
// at once (review F10, session 8; as ClusterStageLast is atomic). A thread reads its own launches' shape, which is
// what tune_cross_entropy and the tests do (each reads it on the thread that launched).
thread_local FusedLaunch g_last_launch;

// Sets the launch's attributes once a device: the dynamic shared memory a block may take (`smem_max`) and clusters
// above 8 blocks.
template <typename Kernel>
void kernel_attrs(kernels::DeviceOnce& once, Kernel kernel, std::size_t smem_max) {
  once.run([&] {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_max)));
    if (current_device_attrs().cc_major >= 9)  // no clusters below Hopper: leave the attribute alone there
      SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  });
}

// The cluster launch's configuration; `attrs` must hold 2. pdl: a programmatic dependent of the kernel before it on
// the stream (Hopper and above).
cudaLaunchConfig_t cluster_config(cudaLaunchAttribute* attrs, int cluster, int threads, std::size_t smem, bool pdl,
                                  cudaStream_t s) {
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.gridDim = dim3(static_cast<unsigned>(cluster));
  cfg.attrs = attrs;
  cfg.numAttrs = 0;
  if (cluster > 1) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attrs[cfg.numAttrs].val.clusterDim.x = static_cast<unsigned>(cluster);
    attrs[cfg.numAttrs].val.clusterDim.y = 1;
    attrs[cfg.numAttrs].val.clusterDim.z = 1;
    ++cfg.numAttrs;
  }
  if (pdl && current_device_attrs().cc_major >= 9) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
    ++cfg.numAttrs;
  }
  return cfg;
}

template <typename In, typename Out, int kThreads, int kElems, int kMinBlocks>
bool launch_shape(const Args& a, const FusedArgs& f, const Totals* totals, const FusedShape& shape, cudaStream_t s) {
  const auto kernel = fused_kernel<In, Out, kThreads, kElems, kMinBlocks>;
  using Stage = kernels::RowStage<In, kElems>;
  const std::size_t smem = f.prefetch ? kStages<In> * Stage::bytes(shape.threads) : 0;
  static kernels::DeviceOnce attrs;
  kernel_attrs(attrs, kernel, kStages<In> * Stage::bytes(kThreads));
  const bool pdl = g_tuning.pdl >= 0 ? g_tuning.pdl > 0 : kFusedPdl && shape.cluster == 1;
  cudaLaunchAttribute at[2];
  cudaLaunchConfig_t cfg = cluster_config(at, shape.cluster, shape.threads, smem, false, s);
  // A persistent grid: as many clusters as are resident at once (each then stages its next row while it works on
  // the current one), or one per row when there are fewer rows.
  int resident = 0;
  if (shape.cluster == 1) {
    resident = kernels::blocks_per_sm(kernel, shape.threads, smem) * kernels::device_facts().sm_count;
  } else if (cudaOccupancyMaxActiveClusters(&resident, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    resident = 0;
  }
  if (resident <= 0) return false;  // not schedulable here: the caller takes the two-read path
  cfg = cluster_config(at, shape.cluster, shape.threads, smem, pdl, s);
  const std::int64_t clusters = std::min<std::int64_t>(a.rows, resident);
  g_last_launch = FusedLaunch{shape.cluster, shape.threads, resident, static_cast<int>(clusters * shape.cluster), pdl};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * shape.cluster));
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a, f, totals, shape.cluster));
  return true;
}

template <typename In, typename Out>
bool launch_fused(const Args& a, const FusedArgs& stageable, const Totals* totals, cudaStream_t s) {
  const FusedShape shape = fused_shape(a.classes, g_tuning.threads, g_tuning.cluster);
  if (shape.cluster == 0) return false;
  if (a.rows == 0) return true;
  FusedArgs f = stageable;  // prefetch: the rows can be staged; whether they are is the rule's (or tuning's) call
  f.prefetch = f.prefetch && (g_tuning.stage >= 0 ? g_tuning.stage > 0 : stage_rule(sizeof(In), shape.cluster));
  return shape.wide ? launch_shape<In, Out, kWideThreads, kWideElems, 1>(a, f, totals, shape, s)
                    : launch_shape<In, Out, kNarrowThreads, kNarrowElems, 2>(a, f, totals, shape, s);
}

// The staged row loop's dynamic shared memory, opted in to per device as its launches need it (review F1, session 12:
// ce12 opted in to kLoopMaxStageSteps' 192 KB whatever the device, which cudaFuncSetAttribute refuses where the opt-in
// limit is smaller, an A100's 163 KB or sm_86 / sm_89's 99 KB, so every staged launch threw there). fit(kernel, steps):
// the steps the launch gets on the current device (row_loop_stage_fit against the device's max_smem_optin and the
// kernel's static shared memory, read once a device), after raising the kernel's opt-in to steps · kLoopStepBytes
// where it was below; 0 (the unstaged kernel) where they do not fit. The opt-in is only ever raised, under a lock, so
// a launch on another host thread that needed more keeps it; the fast path is two acquire loads.
class StageOptIn {
 public:
  template <typename Kernel>
  int fit(Kernel kernel, int steps) {
    const DeviceAttrs& dev = current_device_attrs();
    Entry& e = entries_[static_cast<std::size_t>(dev.ordinal)];
    int static_smem = e.static_smem.load(std::memory_order_acquire);
    if (static_smem < 0) {  // two threads may both read it: the same value
      cudaFuncAttributes fa{};
      SMK_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
      static_smem = static_cast<int>(fa.sharedSizeBytes);
      e.static_smem.store(static_smem, std::memory_order_release);
    }
    steps = row_loop_stage_fit(steps, static_smem, dev.max_smem_optin);
    const int bytes = steps * kLoopStepBytes;
    if (steps > 0 && e.opted.load(std::memory_order_acquire) < bytes) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (e.opted.load(std::memory_order_relaxed) < bytes) {
        SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
        e.opted.store(bytes, std::memory_order_release);
      }
    }
    return steps;
  }

 private:
  struct Entry {
    std::atomic<int> static_smem{-1};  // the kernel's static shared memory on this device (−1: not read yet)
    std::atomic<int> opted{0};         // the dynamic shared memory it has opted in to here
  };
  std::array<Entry, kMaxDevices> entries_{};
  std::mutex mutex_;
};

// The row loop (row_loop.cuh) on a persistent grid: its blocks an SM (tuning, or the kernel's occupancy) × SMs, never
// more than the rows. A programmatic dependent of the scan where kFusedPdl (tuning's pdl overrides), as the
// single-block one-read launch. False when the kernel cannot be resident here (the caller takes another path).
// With staged steps (ce12: loop_stage_steps, or tuning's loop_stage) and rows of 16-byte vectors, the staged kernel
// (the same bits) with stage_steps · kLoopStepBytes of dynamic shared memory a block where the device can give a
// block that much (StageOptIn), else the plain one; the launch record (FusedLaunch::loop_stage) has the steps launched.
template <typename In, typename Out>
bool launch_row_loop(const Args& a, const FusedArgs& f, const Totals* totals, cudaStream_t s) {
  int stage_steps = f.loop_vec_in ? (g_tuning.loop_stage >= 0 ? std::min(g_tuning.loop_stage, kLoopMaxStageSteps)
                                                              : loop_stage_steps(sizeof(In), a.classes))
                                  : 0;
  if (stage_steps > 0) {
    static StageOptIn opt_in;  // one per staged kernel (this instantiation's)
    stage_steps = opt_in.fit(ce_row_loop_kernel<In, Out, true>, stage_steps);
  }
  const auto kernel = stage_steps > 0 ? ce_row_loop_kernel<In, Out, true> : ce_row_loop_kernel<In, Out, false>;
  const std::size_t smem = static_cast<std::size_t>(stage_steps) * kLoopStepBytes;
  const int per_sm =
      g_tuning.loop_blocks > 0 ? g_tuning.loop_blocks : kernels::blocks_per_sm(kernel, kLoopThreads, smem);
  if (per_sm <= 0) return false;
  const std::int64_t resident = std::int64_t{per_sm} * kernels::device_facts().sm_count;
  const std::int64_t grid = std::max<std::int64_t>(1, std::min(a.rows, resident));
  const bool pdl = g_tuning.pdl >= 0 ? g_tuning.pdl > 0 : kFusedPdl;
  cudaLaunchAttribute at[2];
  cudaLaunchConfig_t cfg = cluster_config(at, 1, kLoopThreads, smem, pdl, s);
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  const int hints = g_tuning.loop_hints != 0 ? 1 : 0;
  g_last_launch =
      FusedLaunch{1, kLoopThreads, static_cast<int>(resident), static_cast<int>(grid), pdl, true, stage_steps};
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a, f, totals, hints, stage_steps));
  return true;
}

__global__ void fill_kernel(float* p, std::int64_t n, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = value;
}

}  // namespace

void set_fused_tuning(const FusedTuning& t) { g_tuning = t; }
FusedLaunch last_fused_launch() { return g_last_launch; }
void set_last_fused_launch(const FusedLaunch& l) { g_last_launch = l; }

int row_loop_stage_fit(int steps, int static_smem, int max_smem_optin) {
  if (steps <= 0) return 0;
  const std::int64_t need = std::int64_t{steps} * kLoopStepBytes + static_smem;
  return need <= max_smem_optin ? steps : 0;
}

bool row_loop_rule(std::int64_t classes, DType logits) {
  const bool wide16 = dtype_size(logits) == 2 && classes >= kRowLoop16MinCols;
  return (wide16 || classes > kFusedAutoMaxCols) && classes <= kRowLoopMaxCols;
}

bool row_loop_takes(std::int64_t classes, DType logits, const CrossEntropyOptions& options) {
  if (options.softcap != 0 || classes <= 0 || classes > kRowLoopMaxCols) return false;
  if (g_tuning.row_loop >= 0) return g_tuning.row_loop > 0;
  const bool fused_forced = g_tuning.any_width || g_tuning.cluster > 0 || g_tuning.threads > 0;
  return !fused_forced && row_loop_rule(classes, logits);
}

bool fused_supported(const TensorView& logits, const CrossEntropyOptions& options) {
  const std::int64_t limit = g_tuning.any_width ? kFusedMaxCols : kFusedAutoMaxCols;
  return options.softcap == 0 && logits.shape[1] <= limit && logits.shape[1] > 0;
}

}  // namespace smk::cuda::ce

namespace smk::cuda {

void cross_entropy_forward_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                                    const TensorView& grad_logits, const TensorView& logits,
                                    const TensorView& targets, const CrossEntropyOptions& options,
                                    const TensorView& grad_loss, const TensorView& lse, const TensorView& z_loss,
                                    Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const bool per_row = options.reduction == Reduction::none;
  // The row loop (row_loop.cuh) where its rule (or tuning) takes the call, else the one-read kernel where a row fits.
  const bool use_loop = row_loop_takes(logits.shape[1], logits.dtype, options);
  if ((!use_loop && !fused_supported(logits, options)) || p.rows == 0) {
    fused_two_read(op, p, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss, stream);
    return;
  }
  const Args a = make_args(logits, targets, options);
  CallWorkspace ws;
  const std::size_t off_ce = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  const std::size_t off_zl = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  // The mean's f32 target entries, re-formed by the mean's kernel (TargetFix): f32 gradient, reduction mean.
  const bool fix_on = g_tuning.target_fix >= 0 ? g_tuning.target_fix > 0 : kFusedTargetFix;
  const bool fix_targets = fix_on && options.reduction == Reduction::mean && grad_logits.dtype == DType::f32;
  const std::size_t off_tp = ws.add(fix_targets ? sizeof(TargetParts) * p.rows : 0);
  ws.alloc(s);
  const Totals* totals = ws.totals();
  FusedArgs f;
  f.grad = grad_logits.data;
  f.g_row_stride = grad_logits.strides[0];
  f.g_col_stride = grad_logits.strides[1];
  f.grad_loss = static_cast<const float*>(grad_loss.data);
  f.gl_stride = grad_loss.data && grad_loss.rank == 1 ? grad_loss.strides[0] : 0;
  f.out = make_row_out(options.reduction, loss, z_loss, lse, ws.at<float>(off_ce), ws.at<float>(off_zl));
  TargetFix fix;
  if (fix_targets) {
    f.target_parts = ws.at<TargetParts>(off_tp);
    fix = TargetFix{f.target_parts, static_cast<float*>(grad_logits.data), grad_logits.strides[0],
                    grad_logits.strides[1], f.grad_loss};
  }
  const std::size_t esize = dtype_size(logits.dtype);
  f.prefetch = logits.strides[1] == 1 && reinterpret_cast<std::uintptr_t>(logits.data) % 16 == 0 &&
               (static_cast<std::size_t>(logits.strides[0]) * esize) % 16 == 0;
  const std::size_t gsize = dtype_size(grad_logits.dtype);
  f.loop_vec_in = f.prefetch;
  f.loop_vec_out = grad_logits.strides[1] == 1 && reinterpret_cast<std::uintptr_t>(grad_logits.data) % 16 == 0 &&
                   (static_cast<std::size_t>(grad_logits.strides[0]) * gsize) % 16 == 0;
  const bool launched = ws.run(op, a, s, [&] {
    bool ok = false;
    const bool f32_out = grad_logits.dtype == DType::f32;
    if (use_loop) {
      switch (logits.dtype) {
        case DType::f16:
          ok = f32_out ? launch_row_loop<__half, float>(a, f, totals, s) : launch_row_loop<__half, __half>(a, f, totals, s);
          break;
        case DType::bf16:
          ok = f32_out ? launch_row_loop<__nv_bfloat16, float>(a, f, totals, s)
                       : launch_row_loop<__nv_bfloat16, __nv_bfloat16>(a, f, totals, s);
          break;
        default: ok = launch_row_loop<float, float>(a, f, totals, s); break;
      }
      if (ok) {
        SMK_CUDA_CHECK_LAUNCH("cross_entropy row_loop");
        if (!per_row)
          launch_reduce(a, f.out.ce_rows, f.out.zl_rows, totals, static_cast<float*>(loss.data),
                        static_cast<float*>(z_loss.data), s, last_fused_launch().pdl, fix);
        return true;
      }
      if (!fused_supported(logits, options)) return false;
    }
    switch (logits.dtype) {
      case DType::f16:
        ok = f32_out ? launch_fused<__half, float>(a, f, totals, s) : launch_fused<__half, __half>(a, f, totals, s);
        break;
      case DType::bf16:
        ok = f32_out ? launch_fused<__nv_bfloat16, float>(a, f, totals, s)
                     : launch_fused<__nv_bfloat16, __nv_bfloat16>(a, f, totals, s);
        break;
      default: ok = launch_fused<float, float>(a, f, totals, s); break;
    }
    if (ok) {
      SMK_CUDA_CHECK_LAUNCH("cross_entropy fused_kernel");
      if (!per_row)
        launch_reduce(a, f.out.ce_rows, f.out.zl_rows, totals, static_cast<float*>(loss.data),
                      static_cast<float*>(z_loss.data), s, last_fused_launch().pdl, fix);
    }
    return ok;
  });
  // Not launched (no cluster shape for these rows, or none schedulable here): nothing was written but the flags and
  // totals.
  if (!launched) fused_two_read(op, p, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss, stream);
}

// The two-read path: the forward (with the LSE), then the backward from it, in place when asked. A missing upstream
// gradient becomes a buffer of ones.
void fused_two_read(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                    const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                    const CrossEntropyOptions& options, const TensorView& grad_loss, const TensorView& lse,
                    const TensorView& z_loss, Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const bool per_row = options.reduction == Reduction::none;
  const std::int64_t n_gl = per_row ? p.rows : 1;
  WorkspaceLayout ws;
  const std::size_t off_lse = ws.add(lse.data ? 0 : sizeof(float) * p.rows);
  const std::size_t off_gl = ws.add(grad_loss.data ? 0 : sizeof(float) * n_gl);
  auto* base = static_cast<unsigned char*>(kernels::workspace_alloc(std::max<std::size_t>(ws.bytes, 256), s));
  try {
    const TensorView lse_v =
        lse.data ? lse : TensorView::contiguous(base + off_lse, DType::f32, logits.device, {p.rows});
    TensorView gl_v = grad_loss;
    if (!grad_loss.data) {
      auto* ones = reinterpret_cast<float*>(base + off_gl);
      fill_kernel<<<kernels::capped_grid((n_gl + 255) / 256), 256, 0, s>>>(ones, n_gl, 1.0f);
      SMK_CUDA_CHECK_LAUNCH("cross_entropy fill_kernel");
      gl_v = per_row ? TensorView::contiguous(ones, DType::f32, logits.device, {p.rows})
                     : TensorView::contiguous(ones, DType::f32, logits.device, {});
    }
    // Bad targets or weights: the forward wrote its outputs (NaN rows) and threw; the gradient is still written
    // (NaN rows), as the fused kernel does, and the backward raises the same error (its own scan sees it).
    std::exception_ptr forward_error;
    try {
      cross_entropy_forward(op, p, loss, logits, targets, options, lse_v, z_loss, stream);
    } catch (const Error&) {
      forward_error = std::current_exception();
    }
    cross_entropy_backward(op, p, grad_logits, logits, targets, gl_v, options, lse_v, stream);
    if (forward_error) std::rethrow_exception(forward_error);
  } catch (...) {
    kernels::workspace_free(base, s);
    throw;
  }
  kernels::workspace_free(base, s);
}

}  // namespace smk::cuda
