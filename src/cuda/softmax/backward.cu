// The backward passes on every path, sharing the forward kernels' structure and reduction trees:
//   softmax:      dx = y ⊙ (dy − s) / T,        s = Σ dy ⊙ y
//   log-softmax:  dx = (dy − exp(y) · s) / T,   s = Σ dy
// warp_per_row (n ≤ 1024), block_per_row / cluster_row (y and dy in registers, 16 elements each per thread:
// n ≤ 8192 per block of 512 threads, 16384 per wide block of 1024, 131072 per cluster; or y's 32 in registers and dy
// in shared memory: 32768 per block of 1024), split_row (chunk sums, merged
// per row in a fixed order, then an elementwise pass over chunks of 8192) and strided_inner (a compensated sum, then
// the elementwise pass).
//
// Traffic per element: read y and dy, write dx: 12 B (f32), 6 B (bf16); split_row and strided_inner read y and dy
// twice (20 B f32). Floor on the H200 at 4.27 TB/s: 4096×151936 f32 (7.47 GB) 1749 µs; 16384×4096 f32 189 µs.
// Measured (H200, 2026-11-29, docs/perf-notebook.md "Issue 3 kernels"): softmax backward 16384×4096 f32 193 µs
// (98% of copy), bf16 114 µs (82%); 32768×1024 f32 106 µs (89%); 262144×128 f32 107 µs (88%); 4096×151936 f32
// (split_row) 2812 µs (62%), bf16 1669 µs (52%).
// The row pipeline (kStaged, BlockConfig::staged: a persistent grid, the next row's y and dy bulk-copied into shared
// memory during the current one, one cluster barrier a row) measured beside the direct kernel (H200, 2026-11-30, tree
// of ff93dbb, tune_softmax --rowpipe, softmax backward, µs direct → staged; docs/perf-notebook.md "row pipeline"):
// 16384×4096 bf16 117 → 107 (81 → 88 % of copy; the bench 106.5 µs, 89 %), f32 192 → 246; clusters no faster in bf16
// (4096×16384 181 → 187, 8192×32000 664 → 665, 2048×65536 395 → 412) and slower in f32 (1.3-1.4×). The dispatcher
// stages only 16-bit rows on block_per_row (softmax_cuda.cpp); why f32 loses there was not established (the f32 rows
// store twice the bytes that a release arrive may wait for).
// The wide block (BlockConfig::wide: the same kernel at __launch_bounds__(1024, 1), 16 + 16 registers of row, 64 in
// all, 8 B spilled in f32 as the 512-thread kernel, none in 16-bit; 2 × 32 would not fit) takes 8193..16384 instead of
// cluster_row. H200, 2026-11-30, commit 2feaa39 (docs/bench/wideblock-2026-11-30.md): softmax backward 4096×16384 f32
// 221 → 193 µs (98 % of copy), bf16 181 → 137 (69 %). Rows above 16384 stayed on cluster_row (8192×32000 f32 894 µs,
// 82 %; bf16 747, 49 %).
// The block with dy in shared memory (BlockConfig::dy_shared, backward_wide_shared_kernel): y's 32 a thread in
// registers, dy copied by cp.async into the thread's own slots of shared memory (row_stage.cuh LaneStage) and read
// there twice, so up to 32768 a row fit one block of 1024 threads at 64 registers (ptxas -v, CUDA 13.0, sm_90a: f32
// 0 B spilled, 16-bit 16 B, prefetching 24 B); 128 KB of shared memory at 1024 f32 threads. Prefetching (16-bit, until
// session 11): the next row's y and dy copied in during this one (a persistent grid); removed when mid11 gave its rows
// (28673..32768) to backward_reread.cu (review F13). Traffic the same 12 B / 6 B an element; floor
// 8192×32000 f32 737 µs, bf16 368 µs. Measured (H200, 2026-11-30, bw16's runs of e7a1abd and d4f4d06, docs/perf-
// notebook.md "bw16"): softmaxkit bench --path auto, 8192×32000 softmax backward f32 727 µs (101 % of copy: two thirds
// of the traffic are reads, which run above the copy's rate), bf16 411 (prefetching; 90 %; 514 without), log-softmax
// backward f32 744, bf16 448; 4096×16384 bf16 102.5 µs (92 %), 16384×4096 bf16 101.6 (93 %); tune_softmax, old kernel
// → this one: 8192×32000 f32 897 → 731, bf16 749 → 416; 8192×12288 bf16 232 → 149; 65536×2048 bf16 202 → 192. Where
// the dispatcher takes it: softmax_cuda.cpp (kBackwardSharedFromN16 / F32).
// warp_per_row (short8, session 8, 2026-11-30; docs/bench/short8-s8-2026-11-30.md; tune_softmax --short8, run of
// c47a42b, µs): f32 rows on a grid of up to 8 times the resident blocks (softmax_cuda.cpp kWarpGridF32; kernel
// unchanged) softmax backward 262144×128 111.3 → 103.5 (floor 95.0 at 4.24 TB/s), 1048576×32 117.8 → 113.7,
// 32768×1024 110.3 → 101.9; 16-bit rows of 17..32 on two lanes (E16 L2: 80 registers, three blocks an SM, against E32
// L1's 128 and two) bf16 1048576×32 65.3 → 62.3 (floor 47.5), log-softmax backward 66.2 → 63.6. Timed and not kept:
// y and dy loaded together before conversion (0.76-0.85× in bf16), a tighter register bound (spills), cache hints.
// The bench (run of 6740400, L2 flushed, old → new µs): f32 softmax backward 262144×128 106.72 → 102.27 (92.8 % of
// copy), 1048576×32 115.01 → 112.10 (84.6 %); bf16 1048576×32 63.98 → 62.96 (75.4 %, within that bench's spread).
// short9 (session 9, 2026-11-30; docs/bench/short9-s9-2026-11-30.md; tune_softmax --short9, run of c16e5c4, µs): this
// warp kernel unchanged; the dispatcher's lanes (softmax_cuda.cpp kWarpBackwardF32NarrowMaxN, kWarpBackward16NarrowMaxN)
// give f32 rows of 17..256 and 16-bit rows of 17..64 32 bytes a lane of y and of dy (f32 E8: 64 registers, four blocks
// an SM, against E16's 80 and three): f32 softmax backward 1048576×32 112.4 → 101.8 (floor 95.0 at 4.25 TB/s),
// 262144×128 103.7 → 101.6, log-softmax backward 111.6 → 102.3, 103.7 → 101.8; bf16 524288×64 65.1 → 64.1, 67.5 →
// 65.4. Nsight Compute (same run): bf16 262144×128 (E32 L4) 128 registers, 25 % occupancy, DRAM 73 %; f32 (E16 L8,
// grid of 8) 80 registers, 38 %, DRAM 87 %. Timed there and not kept (code in c16e5c4): a tighter __launch_bounds__
// (spills: 0.52-0.92×) and 16-bit y and dy held packed (ptxas kept the converted values: 0.52-0.98×).
// short10 (session 10, 2026-11-30; docs/bench/short10-s10-2026-11-30.md; tune_softmax --short10, run of 809a984, µs,
// median of 30, the default timed first and last): 16-bit y and dy held packed as loaded (backward_warp_packed_kernel,
// packed16.cuh; dense rows, packed_rule.hpp), the same bits. ptxas (CUDA 13.0, sm_90a): E32 62 registers (4 blocks an
// SM) against 128 (2), E16 40 (6; 8 B of stack) against 80 (3), E8 36 against 60. Same 6 B an element; floor of 2^25
// elements 47.3 µs at the run's 4.26 TB/s copy. bf16 softmax backward 1048576×32 61.95 / 62.08 → 56.26 (E8 L4
// packed, 83.8 % of copy), 524288×64 61.86 / 62.82 → 59.04, 262144×128 64.22 / 63.58 → 58.14 (81.1 %), 131072×256
// 59.62 / 60.67 → 56.61, 65536×512 59.30 / 60.06 → 55.71 (84.6 %); log-softmax backward 64.00 / 64.00 → 56.77, 65.22 /
// 64.99 → 61.73, 66.11 / 66.02 → 60.54, 63.10 / 62.46 → 58.98, 63.42 / 62.88 → 60.16; f16 alike (softmax_cuda.cpp
// warp_packed_rule). Still above compile's 52-53 µs at 32 and 128 (compare-s9).
// sbwd11 (session 11, 2026-11-30; docs/bench/sbwd11-s11-2026-11-30.md; tune_softmax --sbwd11, H200 run of the
// binaries of 90f1614 at 17:16 UTC, µs, median of 50, the default timed first and last; copy 4.22 TB/s in the same
// process): floor of 2^25 elements f32 (12 B an element) 95.4 µs, 16-bit (6 B) 47.7. f32 rows dense for their lanes on
// backward_warp_dense_kernel (addressing row · stride + 16-byte vectors; ptxas, CUDA 13.0, sm_90a: E16 64 registers at
// 4 blocks an SM against backward_warp_kernel's 80 (16 B spilled) at 3; E32 128, no spill, against 128 with 16 B):
// softmax backward 65536×512 101.54 / 101.82 → 99.36 (94.9 % of copy), 32768×1024 on a grid of 16 100.70 / 100.70 →
// 99.17 (95.1 %); log-softmax backward 101.79 / 101.95 → 99.49, 100.96 / 100.83 → 99.30. 16-bit rows of 1024 held
// packed (backward_warp_packed_kernel E32 L32, 62 registers, 4 blocks) and the packed E32 rows on a grid of 8: bf16
// softmax backward 32768×1024 60.19 / 59.90 → 53.76 (87.7 %), 262144×128 56.45 / 56.13 → 54.62, 65536×512 56.26 /
// 56.13 → 54.56; log-softmax backward 64.32 / 64.74 → 54.88, 58.08 / 57.92 → 55.39, 57.57 / 57.47 → 54.72 (f16
// alike). Rows of 32 (1048576×32): f32 101.50 / 101.09 softmax backward, 101.15 / 101.63 log-softmax backward (93 %,
// unchanged: the dense kernel even), bf16 55.49 / 55.97 and 56.74 / 56.74 (85 / 83 %). Timed and not taken: cache hints
// (evict-first loads 0.87-0.95×; with streaming stores 0.98-1.02×), other bounds (E8 at 4 / 6 / 8 blocks, E16 at 3 /
// 5, E32 at 3; 8, 5 and 3 spill: 0.99-1.01× of the default, slower than those taken), the persistent grid for f32
// (0.94-0.95×), block_per_row's 64-thread block at 1024.
// sbwd12 (session 12, 2026-11-30; docs/bench/sbwd12-s12-2026-11-30.md; tune_softmax --sbwd12, H200 run of 69c6ce5's
// binaries at 19:11 UTC, µs, median of 80, the default timed first and last; copy 4.26 TB/s, floors f32 94.5 µs, 16-bit
// 47.3): 16-bit rows of 32 (packed E8 L4) at 8 blocks an SM (32 registers) on the grid of 8: bf16 softmax backward
// 54.78 / 54.82 → 53.22 (88.6 % of copy), log-softmax backward 55.04 / 54.91 → 53.02, f16 54.62 / 54.53 → 52.74,
// 55.26 / 55.30 → 53.09; f32 rows of 32 / 128 on the dense E8 kernel (44 registers, 5 blocks) with streaming stores
// on a grid of 16: 1048576×32 99.55 / 99.81 → 98.69 (95.6 %), 99.62 / 99.36 → 98.75; 262144×128 99.30 / 99.26 → 98.43,
// 99.42 / 99.52 → 98.69. Timed and not taken: the packed kernel with streaming stores or 2 / 4 row groups a lane group
// at once, the packed E32 rows on a grid of 16, the dense E16 / E32 with streaming stores (0.97-1.01×).
// pack14 (session 14, 2026-12-01; docs/bench/pack14-s14-2026-11-30.md; tune_softmax --pack14, H200 runs of 600c491's
// kernels and of the final rule, median of 3 alternating rounds of 40, µs): the dy-shared block with y held packed
// (backward_shared_packed_kernel, 40 registers, 3 blocks of 512 an SM) on dense 16-bit rows of 2048..16384, the same
// bits: bf16 / f16 4096..16384 1.008-1.022× (e.g. 4096×16384 log-softmax backward 101.76 / 101.73 → 99.62, 94.7 % of
// copy); its 32-register build (4 blocks, spilling) 0.88-0.90×, removed. The warp kernel (softmax_cuda.cpp rules):
// 16-bit rows of 64 packed E16 L4 on the grid of 8 1.08-1.10× (bf16 57.60 → 53.22), 128 at E8 L16 1.017-1.028× (53.70
// → 52.80), not-dense 100 at E8 L16 1.51-1.55× (175.0 → 113.6); the packed E16 build at 8 blocks (32 registers, 24 B
// spilled) 0.88-0.92× at 32 and 128, 0.96-0.97× at 64 (against its persistent-grid default), removed. f16 backward
// re-timed on real softmax outputs (session 12's review F7): as bf16.
// split_row (few7, session 7): the merge and elementwise kernels as programmatic dependent launches (y and dy loaded
// before the wait for the row sums), and compact chunk-sum and elementwise kernels for the common call (unit-stride
// aligned y, dy, dx, no temperature; bitwise the generic ones). Traffic 20 B (f32) / 10 B (bf16) an element (y and dy
// read twice, dx written), floor at 12 B / 6 B: 1×16777216 f32 47 µs. Measured (H200, 2026-11-30, run of c98a4c7,
// bench --path split_row, L2 flushed; docs/bench/few7-s7-2026-11-30.md), µs old → new: softmax backward 1×151936
// f32 12.42 → 10.19, bf16 13.31 → 10.05; 32×128256 f32 31.31 → 27.87, bf16 21.89 → 18.32; 1×16777216 f32 90.40 →
// 87.28 (2.31 TB/s), bf16 59.01 → 54.98; log-softmax backward 1×16777216 f32 90.82 → 71.68 (2.81 TB/s), bf16 60.48 →
// 45.52, 32×128256 f32 31.41 → 24.53.
// bwd16 (session 16; docs/bench/bwd16-s16-2026-12-01.md): the common call's elementwise pass with streaming dx stores
// on softmax backward (kBackwardSplitCsMaxElems): 1×16777216 bf16 57.11 → 55.91 µs, f32 89.78 → 89.04. Nsight Compute
// beside torch.compile's kernels (one launch each, caches flushed between kernels): at bf16 1×16M our chunk sums 22.9
// µs (53 registers, 47 % warps active) and elementwise pass 27.1 (56, 42 %) against Inductor's reduction 18.7 (31
// registers, 512 blocks in one wave, 94 %) and pointwise kernel 23.3 (24 registers, one 16-byte vector a thread, 83 %);
// the rows of 1024..16384 and the f32 rows of 32 alike: Inductor's kernels at 19-32 registers and 83-94 % warps active
// (one warp a row at 1024: 72 registers, 38 %, but 0.56× our instructions) reach 84-90 % of DRAM's peak, ours at 40-64
// registers and 41-71 % reach 81.5-88.5 %.
// bwd17 (session 17; docs/bench/bwd17-s17-2026-12-01.md): the common call's chunk sums at 3 blocks an SM for 16-bit
// rows and, in 16-bit softmax backward calls with streaming dx stores, the elementwise pass as one 16-byte vector a
// thread (kBackwardSplitSumsBlocks16, kBackwardSplitVec16): bf16 1x16777216 softmax backward 54.9 → 50.7 µs,
// log-softmax backward 45.6 → 43.8, 1024x151936 1.07x / 1.03x on split_row's kernels forced (bf16 calls of >= 256
// rows take row_loop under the dispatcher); the same bits. torch.compile's form of the 2-D backward
// (512 threads a row, the row read twice at 32 registers; backward_reread.cu's note) ran 0.64-0.98x of this file's
// blocks.
// bwd21 (session 20): backward_warp_dense_kernel<32, 2> (f32 rows of 1024) and the f32 512-thread block's dense form
// (rows of 512·k to 8192) read y and dy L1::evict_last under an L2 evict-last policy, the same bits: softmax backward
// 32768×1024 f32 98.74 → 96.40 µs, 16384×4096 f32 192.03 → 187.55 (bwd20's run, the bench's dirty L2; the numbers and
// the rule at kBackwardDenseE32Hints below).
#include <cooperative_groups.h>

#include "cuda/device_attrs.hpp"
#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/packed16.cuh"
#include "cuda/softmax/row_stage.cuh"
#include "cuda/softmax/warp_backward.hpp"

namespace smk::cuda::kernels {

namespace {

namespace cg = cooperative_groups;
constexpr int kWarpThreads = 256;
// pack14 (session 14): the packed dy-shared kernel's launch bound (threads a block: rows of up to 512 · 32 = 16384) and
// the build the dispatcher's calls take (blocks an SM; 0: none, the unpacked kernel). 3 blocks of 512 (40 registers):
// H200, tune_softmax --pack14 (run of 600c491's kernels, 2026-12-01 00:07 UTC, median of 3 alternating rounds of 40,
// µs, the unpacked kernel timed first and last → packed), softmax backward bf16 16384×4096 100.45 / 100.38 → 99.49,
// 8192×8192 99.65 / 99.46 → 98.53, 4096×16384 99.97 / 99.90 → 98.34; log-softmax backward 100.74 / 100.48 → 99.33,
// 100.83 / 100.83 → 99.46, 101.76 / 101.73 → 99.62; f16 alike (99.36 / 99.10 → 98.34 … 101.44 / 101.57 → 100.06):
// 1.008-1.022×, 94.2-95.9 % of copy (docs/bench/pack14-s14-2026-11-30.md).
constexpr int kSharedPackedMaxThreads = 512;
constexpr int kBackwardSharedPackedBlocks = 3;
// bwd16 (session 16): split_row's common-call elementwise pass stores dx by streaming stores (st.global.cs: dx is not
// read back, so its lines leave L2 first and the y / dy lines that the reversed pass reads next stay) in softmax
// backward calls of kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems elements: the one size timed (2^24) and the
// octave below it, whose y, dy and dx (96 MiB f32, 48 MiB 16-bit at 2^23) are of the 60 MiB L2's order or larger.
// Smaller calls, whose lines could stay in L2, keep plain stores until timed (session 16's review, F1: compare-s16
// showed no gain at 32×128256 or 1×151936, where the first form of the rule had sent them); f16 takes 16-bit's rule,
// untimed. H200, tune_softmax --bwd16 (run of 15182b6's kernels, 2026-12-01 05:03 UTC, two alternating rounds of 30
// launches, µs, plain stores timed first and last → streaming): 1x16777216 softmax backward bf16 57.34 / 56.67 /
// 57.18 / 57.25 → 56.45 / 55.36 (means 57.11 → 55.91, 2.1 %; round against round 0.4-3.6 %), f32 89.50 / 90.30 /
// 89.57 / 89.76 → 88.99 / 89.09 (89.78 → 89.04, 0.8 %; 0.5-1.5 %); log-softmax backward even (bf16 47.07-49.60 →
// 47.71 / 48.29, f32 74.37-75.62 → 75.33 / 75.33: plain stores kept); the same bits. Timed there and not kept
// (15182b6 has the code): y / dy read evict-first in that pass as well (f32 softmax backward 91.0-92.1, slower), and
// the chunk-sums pass reading evict-last on top (92.7); the packed dy-shared block's dx by streaming stores (bf16
// 16384x4096 / 4096x16384 0.99-1.00x). Built there and never run: a vector form of the elementwise pass and the chunk
// sums at 3 / 4 blocks an SM (tune_softmax --bwd16b of 15182b6).
constexpr std::int64_t kBackwardSplitCsMinElems = std::int64_t{1} << 23;
constexpr std::int64_t kBackwardSplitCsMaxElems = std::int64_t{1} << 24;
// bwd17 (session 17; BackwardSplitTuning sums_blocks / grads_form, tune_softmax --bwd17;
// docs/bench/bwd17-s17-2026-12-01.md): the common call's chunk-sums kernel at 3 blocks an SM (40 registers; 2: 53-56)
// for 16-bit rows, and the elementwise pass of 16-bit softmax backward calls that store dx streaming
// (kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems elements) as the vector kernel where the rows are whole 16-byte
// vectors; the same bits (the sums' code is unchanged, only its register bound; dx is elementwise). H200, tune_softmax
// --bwd17 (run of 80f0911's kernels, 2026-12-01 07:28 UTC, three alternating rounds of 30 launches, µs, HEAD's sums at
// 2 with the chunk pass timed first and last; the ratio is HEAD's first timing of a round over the variant's, median
// (min-max)): sums at 3, bf16 1x16777216 softmax backward 54.91 → 51.68 (1.059, 1.046-1.066), log-softmax backward
// 45.57 → 43.84 (1.033, 1.019-1.050); 1024x151936 416.7 → 389.1 (1.071, 1.069-1.075), 338.3 → 329.3 (1.029,
// 1.021-1.031); 32x128256 1.045 (0.998-1.078), 1.056 (0.992-1.237; these 8 MB calls' rounds spread 3-18 %); f32
// 1x16777216 1.005 (0.989-1.009), 1.005 (1.004-1.015): even, f32 keeps 2 (at 4: 32 registers, 48 B of stack in softmax
// backward, f32 0.920). With the vector pass as well: bf16 1x16777216 softmax backward 50.66 (1.077, 1.068-1.113; over
// sums at 3 alone 1.020, 1.010-1.051); f32 1.011 (0.993-1.017; over sums at 3 alone 1.004: even, not taken). f16 takes
// bf16's choices untimed (the same code). The vector kernel's plain-store form (its OutVec assignment compiled to 8
// STG.E.U16 in 16-bit, 4 STG.E in f32) ran 0.57x and was removed; the sums at 4 too (80f0911 has both). Where the rule
// reaches (session 17's review, F4): tune's variants launch these kernels directly, but the dispatcher sends bf16
// backward calls of >= kRowLoopMinRows (256) rows of <= 32 chunks to row_loop (row_loop.cu), so for bf16 the sums at 3
// serve calls of fewer rows (1x16777216, 32x128256) and longer rows; 1024x151936's gain is split_row's own, not the
// dispatcher's bf16 path there (f16, which row_loop does not take, gets it there untimed).
constexpr int kBackwardSplitSumsBlocks16 = 3;
constexpr int kBackwardSplitSumsBlocksF32 = 2;
constexpr bool kBackwardSplitVec16 = true;
constexpr int kBlockMaxThreads = 512;
constexpr int kMergeThreads = 1024;
// bwd21 (session 20): two f32 kernels read y and dy with L1::evict_last under an L2 evict-last policy
// (createpolicy.fractional.L2::evict_last 1.0; the first read of torch.compile's 2-D backward, LDG.E.EL.128, bwd18);
// their stores stay plain. The kernels' kHints: 0 plain, 1 these loads; the dispatcher's is the constant below
// (warp_backward.hpp BackwardHintTuning forces either, for timing and tests). The hints move no value and no address:
// the same arithmetic in the same order, the same bits; still 12 B an element.
//   kBackwardDenseE32Hints: backward_warp_dense_kernel<32, 2> (f32 rows of exactly 1024, dense for E32 L32).
//   kBackwardBlockF32Hints: backward_block_kernel<float, unstaged, 16, 512, 2> on dense rows (f32 rows of 512·k,
//   1536 … 8192 under the dispatcher, one block a row), whose hinted form is the dense one (16-byte vectors at
//   RowTile's map, no temperature, dx in f32): 0 keeps the general kernel (load_pair / write_grads).
// Measured (bwd20's run, H200, 2026-12-02, tree of cf74f41, tune_bwd20 of 97d7477: a 240 MB memset before each timed
// launch, the bench's dirty L2; median of 40 launches after 3, 3 rounds, the order reversed in round 2; ratio hinted /
// plain a round, median (min-max), µs; dx bitwise plain's in every set; /work/notes/s21/c1/bwd20.txt):
//   f32 32768×1024 (dense E32)   softmax backward 98.74 → 96.40, 0.9759 (0.9719-0.9858); log-softmax backward 98.96 →
//                                96.94, 0.9821 (0.9767-0.9830)
//   f32 16384×4096 (block)       softmax backward 192.03 → 187.55, 0.9767 (0.9760-0.9796); log-softmax backward
//                                191.73 → 187.76, 0.9793 (0.9755-0.9800); the dense form with plain loads and stores
//                                alone 0.9947 / 0.9941 (so the hints' own share ~0.982)
// The rule, fixed before the run: c = max |1 − median| of the control set (the kernels' plain code under another name)
// = 0.0018; a set ships on a kernel only if its median is ≤ min(0.985, 1 − 2c) on every shape and op it serves, no
// round above 1.000 and the same bits; the lowest maximum wins, within 0.003 the set of fewer hints. Here these loads
// (maxima 0.9821, 0.9793) over evict-last loads with streaming stores (0.9812, 0.9784) or with L2 evict-first stores
// (0.9828, 0.9784). Not shipped (bwd20's sets on these kernels and on the 16-bit ones; 97d7477 has their code): L2
// evict-first loads 1.04-1.09, L1::no_allocate loads 1.01-1.08, streaming or L2 evict-first stores alone 0.99-1.01;
// these loads on the bf16 packed dy-shared block (16384×4096, 4096×16384) 0.979-1.003 (max 1.0032) and on the bf16
// packed warp kernel (32768×1024, 262144×128) 0.964-0.995 (with streaming / evict-first stores max 0.991).
// Confirmed on the shipped rule across the served lengths (H200, 2026-12-02, the lead's integrated run of the tree of
// 85cae7c, bwd21's tune_bwd20, ratio hinted (auto) / plain forced, medians): dense E32 32768×1024 0.979 / 0.983,
// 8192×1024 0.974 / 1.003 (0.956-1.007 over its rounds; 33 MB); block 16384×1536 0.977 / 0.983, 16384×2048 0.970 /
// 0.978, 16384×4096 0.977 / 0.979, 8192×6144 0.969 / 0.976, 8192×8192 0.977 / 0.980; 2 and 64 rows 0.86-1.09 either
// way, as the 1-row control that runs the same general kernel both ways (0.89-1.10): launch-bound noise. Same bits.
constexpr int kBackwardDenseE32Hints = 1;
constexpr int kBackwardBlockF32Hints = 1;

// An L2 evict-last cache policy (the kHints 1 loads').
__device__ __forceinline__ std::uint64_t evict_last_policy() {
  std::uint64_t pol;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

// A 16-byte vector of global memory at q (16-byte aligned), read L1::evict_last under the L2 cache policy pol.
__device__ __forceinline__ uint4 load_evict_last(const void* q, std::uint64_t pol) {
  uint4 b;
  asm volatile("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w)
               : "l"(q), "l"(pol));
  return b;
}

// The temperature a row divides by: the scalar, the row's own, or NaN for an invalid per-row one.
__device__ __forceinline__ float row_temperature(const RowProblem& p, const RowRef& o) {
  if (p.temp == nullptr) return p.temperature;
  const float v = p.temp[o.off(p, kTemp)];
  return (v > 0.0f && v <= 3.402823466e38f) ? v : detail::nan_<float>();
}

__device__ __forceinline__ float grad(const RowProblem& p, float y, float dy, float s, float t) {
  float d = p.op == Op::softmax_backward ? y * (dy - s) : dy - expf(y) * s;
  if (p.scale) d = d / t;
  return d;
}

template <int E>
__device__ __forceinline__ float thread_terms(const RowProblem& p, const float (&y)[E], const float (&dy)[E]) {
  float t[E];
#pragma unroll
  for (int i = 0; i < E; ++i) t[i] = p.op == Op::softmax_backward ? dy[i] * y[i] : dy[i];
  return tree_sum<E>(t);
}

// kShift: common.cuh RowTile's (odd21); backward_warp_kernel keeps the element loads and stores.
template <typename In, int E, bool kShift = kShiftDefault<In>>
__device__ __forceinline__ void write_grads(const RowProblem& p, const RowRef& o, float (&y)[E],
                                            const float (&dy)[E], float s, int n, std::int64_t first, int g,
                                            int G) {
  using Tile = RowTile<In, E, kShift>;
  if (p.op == Op::softmax_backward) backward_grads<false>(y, dy, s);
  else backward_grads<true>(y, dy, s);
  if (p.scale) {
    const float t = row_temperature(p, o);
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = y[i] / t;
  }
  with_out_type<In>(p, [&](auto* tag) {
    using Out = std::remove_pointer_t<decltype(tag)>;
    Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)) + first * p.step[kOut], y, n, p.step[kOut], g, G);
  });
}

template <typename In, int E, bool kShift = kShiftDefault<In>>
__device__ __forceinline__ void load_pair(const RowProblem& p, const RowRef& o, float (&y)[E], float (&dy)[E],
                                          int n, std::int64_t first, int g, int G) {
  using Tile = RowTile<In, E, kShift>;
  Tile::load(y, at<In>(p.x, o.off(p, kX)) + first * p.step[kX], n, p.step[kX], g, G, 0.0f);
  Tile::load(dy, at<In>(p.dy, o.off(p, kDy)) + first * p.step[kDy], n, p.step[kDy], g, G, 0.0f);
}

// ---- warp_per_row ---------------------------------------------------------------------------------------------------

template <typename In, int E>
__global__ void __launch_bounds__(kWarpThreads, E >= 32 ? 2 : (E >= 16 ? 3 : 4)) backward_warp_kernel(const RowProblem p, int lanes) {
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int rows_per_warp = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  for (std::int64_t base = warp * rows_per_warp; base < p.rows; base += warps * rows_per_warp) {
    const std::int64_t row = base + group;
    const bool active = row < p.rows;
    float y[E], dy[E];
    const RowRef o{row, 0};
    if (active) {
      load_pair<In, E, false>(p, o, y, dy, p.n, 0, g, lanes);  // odd21: element loads measured faster here
    } else {
#pragma unroll
      for (int i = 0; i < E; ++i) y[i] = dy[i] = 0.0f;
    }
    const float s = group_sum(thread_terms(p, y, dy), lanes);
    if (active) write_grads<In, E, false>(p, o, y, dy, s, p.n, 0, g, lanes);
  }
}

// short10 (session 10): the 16-bit warp kernel with y and dy held packed (packed16.cuh): E/2 + E/2 registers of row
// instead of E + E, each element unpacked once for s (pass 0) and once more where its gradient is formed and stored
// (pass 1, its own selectors), a vector at a time. Dense rows only (packed_rule.hpp packed_dense: n = lanes · E, aligned,
// unit steps, dx in y's dtype, no temperature). The arithmetic and its order are backward_warp_kernel's (the same
// terms, tree_sum, group_sum, y·(dy − s) or dy − exp(y)·s): the outputs are bitwise its.
// kMinBlocks: __launch_bounds__'s blocks an SM (256 threads: 4 caps a thread at 64 registers, 6 at 40, 8 at 32).
template <typename In, int E, int kMinBlocks>
__global__ void __launch_bounds__(kWarpThreads, kMinBlocks) backward_warp_packed_kernel(const RowProblem p, int lanes) {
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int rows_per_warp = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const bool softmax = p.op == Op::softmax_backward;
  // lanes ≤ 32, so lanes >> 6 is 0; the compiler cannot know it (packed16.cuh: the later pass's selectors).
  const PackedKeys k1 = packed_keys<In>(static_cast<std::uint32_t>(lanes) >> 6);
  const In* const ys = static_cast<const In*>(p.x);
  const In* const dys = static_cast<const In*>(p.dy);
  In* const dxs = static_cast<In*>(p.out);
  for (std::int64_t base = warp * rows_per_warp; base < p.rows; base += warps * rows_per_warp) {
    const std::int64_t row = base + group;
    const bool active = row < p.rows;
    PackedRow<In, E> y, dy;
    if (active) {
      y.load(ys + row * p.map.stride[kX][0], g, lanes);
      dy.load(dys + row * p.map.stride[kDy][0], g, lanes);
    } else {
      y.fill(from_f32<In>(0.0f));
      dy.fill(from_f32<In>(0.0f));
    }
    // thread_terms' terms and tree, each term formed where the tree adds it
    const float s = group_sum(tree_sum_of<E>([&](int i) { return softmax ? dy.get0(i) * y.get0(i) : dy.get0(i); }), lanes);
    if (!active) continue;
    store_packed_row<In, E>(dxs + row * p.map.stride[kOut][0], g, lanes, [&](int i) {
      const float yi = y.get(i, k1), di = dy.get(i, k1);
      return softmax ? yi * (di - s) : di - expf(yi) * s;  // write_grads' arithmetic
    });
  }
}

// sbwd11 (session 11): f32 rows dense for the launch's lanes and elements (warp_backward.hpp backward_dense_f32), with
// the addressing reduced to row · stride plus whole 16-byte vectors so that the kernel fits more blocks an SM
// (kMinBlocks). Plain loads (the evict-first loads timed by the run of 90f1614 cost 5-13 %). The arithmetic is
// backward_warp_kernel's in the same order (thread_terms, tree_sum, group_sum, backward_grads): the outputs are bitwise
// its. kCs (sbwd12): dx stored with st.global.cs (streaming: the lines are not read again), the same values and
// addresses; the E8 build takes it (dense_kernel below).
// kHints (bwd21): 1 reads y and dy L1::evict_last under an L2 evict-last policy (load_evict_last), the E32 build's
// default (kBackwardDenseE32Hints: 0.976 / 0.982 of the plain loads at 32768×1024, the measurement there); 0 plain.
template <int E, int kMinBlocks, bool kCs = false, int kHints = 0>
__global__ void __launch_bounds__(kWarpThreads, kMinBlocks) backward_warp_dense_kernel(const RowProblem p, int lanes) {
  using Tile = RowTile<float, E>;
  constexpr int K = Tile::K;
  static_assert(Tile::V == 4, "16-byte vectors");
  static_assert(kHints == 0 || kHints == 1, "0 plain, 1 evict-last loads");
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int rows_per_warp = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const bool softmax = p.op == Op::softmax_backward;
  const float* const ys = static_cast<const float*>(p.x);
  const float* const dys = static_cast<const float*>(p.dy);
  float* const dxs = static_cast<float*>(p.out);
  [[maybe_unused]] std::uint64_t pol = 0;
  if constexpr (kHints == 1) pol = evict_last_policy();
  for (std::int64_t base = warp * rows_per_warp; base < p.rows; base += warps * rows_per_warp) {
    const std::int64_t row = base + group;
    const bool active = row < p.rows;
    float y[E], dy[E];
    if (active) {
      // RowTile's layout: element k·4 + j of the lane is row position (k·lanes + g)·4 + j; y's vectors, then dy's.
      const float4* const yv = reinterpret_cast<const float4*>(ys + row * p.map.stride[kX][0]) + g;
      const float4* const dv = reinterpret_cast<const float4*>(dys + row * p.map.stride[kDy][0]) + g;
      float4 a[K], b[K];
      if constexpr (kHints == 1) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const uint4 q = load_evict_last(yv + k * lanes, pol);
          memcpy(&a[k], &q, sizeof(q));
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const uint4 q = load_evict_last(dv + k * lanes, pol);
          memcpy(&b[k], &q, sizeof(q));
        }
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) a[k] = yv[k * lanes];
#pragma unroll
        for (int k = 0; k < K; ++k) b[k] = dv[k * lanes];
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        y[4 * k] = a[k].x, y[4 * k + 1] = a[k].y, y[4 * k + 2] = a[k].z, y[4 * k + 3] = a[k].w;
        dy[4 * k] = b[k].x, dy[4 * k + 1] = b[k].y, dy[4 * k + 2] = b[k].z, dy[4 * k + 3] = b[k].w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < E; ++i) y[i] = dy[i] = 0.0f;
    }
    const float s = group_sum(thread_terms(p, y, dy), lanes);
    if (!active) continue;
    if (softmax) backward_grads<false>(y, dy, s);
    else backward_grads<true>(y, dy, s);
    float4* const xv = reinterpret_cast<float4*>(dxs + row * p.map.stride[kOut][0]) + g;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float4 o = make_float4(y[4 * k], y[4 * k + 1], y[4 * k + 2], y[4 * k + 3]);
      if constexpr (kCs) __stcs(xv + k * lanes, o);
      else xv[k * lanes] = o;
    }
  }
}

// ---- block_per_row / cluster_row -------------------------------------------------------------------------------------

// kStaged: the row pipeline (BlockConfig::staged, as block_row.cu's forward): a persistent grid whose blocks bulk-copy
// their share of the next row's y and dy into shared memory (row_stage.cuh) right after the current row's block
// barrier, and a cluster's blocks exchange their partial sums through one cluster barrier a row (the slot double-
// buffered by row parity) instead of two.
// E, kThreads, kMinBlocks: elements of y and of dy a thread holds and the launch bounds — kBackwardBlockElems at up to
// 512 threads, two blocks an SM, or the wide block (kBackwardWideBlockElems at up to 1024 threads, one block an SM;
// never staged nor clustered). Both get 64 registers a thread.
// kHints (bwd21; unstaged, one block a row, dense rows only: rows_dense at the block's threads and E): 1 the dense form
// (whole 16-byte vectors at RowTile's map, the same values in the same registers, write_grads' arithmetic without the
// temperature, dx in y's type) with y and dy read L1::evict_last under an L2 evict-last policy (load_evict_last), the
// f32 512-thread build's default on such rows (kBackwardBlockF32Hints: 0.977 / 0.979 of the general kernel at f32
// 16384×4096, the measurement there; no spill, where the general form spills 8 B); 0 the general loads and stores.
template <typename In, bool kStaged, int E = kBackwardBlockElems, int kThreads = kBlockMaxThreads, int kMinBlocks = 2,
          int kHints = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks) backward_block_kernel(const RowProblem p, int cluster) {
  static_assert(kHints == 0 || (kHints == 1 && !kStaged), "the hinted form: unstaged only");
  using Stage = RowStage<In, E>;
  __shared__ float red[32];
  __shared__ float part;
  __shared__ float parts[2];  // kStaged: this block's partial sum, by row parity
  __shared__ alignas(8) std::uint64_t stage_bar;
  __shared__ typename Stage::Plan stage_plan;
  extern __shared__ __align__(16) unsigned char backward_stage[];  // kStaged: y's share, then dy's
  In* const stage_y = reinterpret_cast<In*>(backward_stage);
  In* const stage_dy = stage_y + static_cast<std::size_t>(blockDim.x) * E;
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int g = rank * T + t, G = cluster * T;
  const std::int64_t first = blockIdx.x / cluster, stride = gridDim.x / cluster;
  const int n = static_cast<int>(p.n);
  // Both tensors of a row staged, or neither: one barrier phase per staged row.
  auto stageable = [&](const In* y, const In* dy) {
    return Stage::stageable(y, p.step[kX]) && Stage::stageable(dy, p.step[kDy]);
  };
  // Thread 0 finds the next row's y and dy where registers are free (before the row's loads) and leaves them in
  // shared memory for the copy it issues after the block barrier, where the row's 32 elements are live.
  __shared__ NextRow<In, E, 2> next;  // row_stage.cuh
  auto find_next = [&](std::int64_t row) {
    const In *y = nullptr, *dy = nullptr;
    if (row < p.rows) {
      const RowRef o{row, 0};
      y = at<In>(p.x, o.off(p, kX));
      dy = at<In>(p.dy, o.off(p, kDy));
      if (!stageable(y, dy)) y = dy = nullptr;
    }
    next.leave({y, dy});
  };
  auto issue_next = [&] { next.issue({stage_y, stage_dy}, &stage_bar, &stage_plan, T); };
  std::uint32_t parity = 0;
  [[maybe_unused]] std::uint64_t pol = 0;
  if constexpr (kHints == 1) pol = evict_last_policy();
  if constexpr (kStaged) {
    if (t == 0) {
      Stage::init(&stage_bar);
      Stage::plan(&stage_plan, n, rank * T, T, G);
    }
    __syncthreads();
    if (t == 0) {
      find_next(first);
      issue_next();
    }
  }
  int iter = 0;
  for (std::int64_t row = first; row < p.rows; row += stride, ++iter) {
    const RowRef o{row, 0};
    float y[E], dy[E];
    if constexpr (kStaged) {
      if (t == 0) find_next(row + stride);
      const In* yr = at<In>(p.x, o.off(p, kX));
      const In* dyr = at<In>(p.dy, o.off(p, kDy));
      if (stageable(yr, dyr)) {
        Stage::wait(&stage_bar, parity);
        parity ^= 1u;
        Stage::load(y, stage_y, yr, n, g, G, t, T, 0.0f);
        Stage::load(dy, stage_dy, dyr, n, g, G, t, T, 0.0f);
      } else {
        load_pair<In, E>(p, o, y, dy, p.n, 0, g, G);
      }
    } else if constexpr (kHints == 1) {
      using Tile = RowTile<In, E>;
      const In* const yr = at<In>(p.x, o.off(p, kX));
      const In* const dyr = at<In>(p.dy, o.off(p, kDy));
      typename Tile::Vec a[Tile::K], b[Tile::K];
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        const uint4 q = load_evict_last(yr + Tile::index(k, g, G), pol);
        memcpy(&a[k], &q, sizeof(q));
      }
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        const uint4 q = load_evict_last(dyr + Tile::index(k, g, G), pol);
        memcpy(&b[k], &q, sizeof(q));
      }
#pragma unroll
      for (int k = 0; k < Tile::K; ++k)
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) y[k * Tile::V + j] = to_f32(a[k].v[j]), dy[k * Tile::V + j] = to_f32(b[k].v[j]);
    } else {
      load_pair<In, E>(p, o, y, dy, p.n, 0, g, G);
    }
    float s = block_sum(thread_terms(p, y, dy), red);
    if constexpr (kStaged) {
      // Every thread has read the stage (block_sum's barrier): thread 0 refills it with the next row.
      if (t == 0) issue_next();
      if (cluster > 1) {
        float* slot = &parts[iter & 1];
        if (t == 0) *slot = s;
        cg::this_cluster().sync();
        // A block rewrites this slot two rows later, after the next row's cluster barrier, which every block
        // reaches only after reading it here.
        const int lane = t % 32;
        s = group_sum(lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0.0f, 32);
      }
    } else if (cluster > 1) {
      if (threadIdx.x == 0) part = s;
      cg::this_cluster().sync();
      const int lane = threadIdx.x % 32;
      s = group_sum(lane < cluster ? *cg::this_cluster().map_shared_rank(&part, lane) : 0.0f, 32);
      cg::this_cluster().sync();  // every block has read `part` before any rewrites it
    }
    if constexpr (kHints == 1) {  // write_grads' arithmetic (dense rows: no temperature, dx in y's type)
      using Tile = RowTile<In, E>;
      static_assert(sizeof(typename Tile::template OutVec<In>) == 16, "16-byte vectors");
      if (p.op == Op::softmax_backward) backward_grads<false>(y, dy, s);
      else backward_grads<true>(y, dy, s);
      In* const dxr = at<In>(p.out, o.off(p, kOut));
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        typename Tile::template OutVec<In> w;
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) w.v[j] = from_f32<In>(y[k * Tile::V + j]);
        uint4 q;
        memcpy(&q, &w, sizeof(q));
        *reinterpret_cast<uint4*>(dxr + Tile::index(k, g, G)) = q;
      }
    } else {
      write_grads<In, E>(p, o, y, dy, s, p.n, 0, g, G);
    }
    __syncthreads();  // red is rewritten by the next row
  }
  if (kStaged && cluster > 1) cg::this_cluster().sync();  // a block's shared memory outlives every remote read of it
}

// ---- block_per_row, the wide block with dy in shared memory (BlockConfig::dy_shared) ---------------------------------

// y's and dy's shares of a thread in shared memory (row_stage.cuh LaneStage: only the thread reads its slots).
template <typename In>
using SharedShare = LaneStage<In, kBackwardWideSharedElems>;

// The backward of rows up to 32768 in one block of up to 1024 threads: y in registers (32 a thread), dy in shared
// memory, read there twice (the sum, then dx), so the row fits the 64 registers of one 1024-thread block an SM where
// 2 × 32 registers of row would not. The sum's tree is thread_terms' (tree_sum over the 32 terms, block_sum), a
// function of n alone. (Its 16-bit prefetching form, kPrefetch until session 11 — a persistent grid copying the next
// row's y and dy in during this one — served 16-bit rows from 28673, which mid11 gave to backward_reread.cu; removed
// after review F13.)
template <typename In>
__global__ void __launch_bounds__(kWideBlockThreads, 1) backward_wide_shared_kernel(const RowProblem p) {
  using S = SharedShare<In>;
  using Tile = typename S::Tile;
  constexpr int E = kBackwardWideSharedElems, K = S::K, V = S::V;
  __shared__ float red[32];
  extern __shared__ __align__(16) unsigned char wide_shared[];  // dy's shares
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(p.n);
  auto* const sdy = reinterpret_cast<typename S::Vec*>(wide_shared);
  const bool softmax = p.op == Op::softmax_backward;
  auto yrow = [&](std::int64_t row) { return at<In>(p.x, RowRef{row, 0}.off(p, kX)); };
  auto dyrow = [&](std::int64_t row) { return at<In>(p.dy, RowRef{row, 0}.off(p, kDy)); };
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const RowRef o{row, 0};
    float y[E];
    S::fetch(sdy, dyrow(row), n, p.step[kDy], t, T, t, T, 0.0f);
    __pipeline_commit();
    Tile::load(y, yrow(row), n, p.step[kX], t, T, 0.0f);
    __pipeline_wait_prior(0);
    float terms[E];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float d[V];
      S::read_vec(d, sdy, k, t, T);
#pragma unroll
      for (int j = 0; j < V; ++j) terms[k * V + j] = softmax ? d[j] * y[k * V + j] : d[j];
    }
    const float s = block_sum(tree_sum<E>(terms), red);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float d[V];
      S::read_vec(d, sdy, k, t, T);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float& v = y[k * V + j];
        v = softmax ? v * (d[j] - s) : d[j] - expf(v) * s;
      }
    }
    if (p.scale) {
      const float temp = row_temperature(p, o);
#pragma unroll
      for (int i = 0; i < E; ++i) y[i] = y[i] / temp;
    }
    with_out_type<In>(p, [&](auto* tag) {
      using Out = std::remove_pointer_t<decltype(tag)>;
      Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)), y, n, p.step[kOut], t, T);
    });
    __syncthreads();  // red is rewritten by the next row
  }
}

// pack14 (session 14): backward_wide_shared_kernel for dense 16-bit rows of at most kSharedPackedMaxThreads · 32
// (2048 .. 16384 as the dispatcher sizes the block: n = T · 32) with y held packed as loaded (packed16.cuh: 16
// registers of row instead of 32) and dy in shared memory as there, under __launch_bounds__(kSharedPackedMaxThreads,
// kMinBlocks): 40 registers at 3 (48 warps an SM) against the unpacked kernel's 64 (32 warps). Dense rows only
// (packed_rule.hpp packed_dense at T lanes of 32: n = T · 32, one row dimension, unit steps, 16-byte aligned rows, dx
// in y's dtype, no temperature); anything else takes backward_wide_shared_kernel. The same element map (RowTile's
// (k·T + t)·V + j, dy's vector k of thread t at slot k·T + t), the same terms and tree (tree_sum<32> splits at 16 and
// 8: the four vectors' trees of 8 added as (v0 + v1) + (v2 + v3), each leaf formed where the tree takes it), block_sum
// and the same gradient arithmetic: the outputs are bitwise the unpacked kernel's (tests/cuda/softmax/
// test_warp_backward_gpu.cpp SharedPackedBitwiseTheUnpackedBlock).
// Traffic as the unpacked kernel: 6 B an element (y and dy read once, dx written); floor 16384×4096 bf16 (403 MB)
// 94.3 µs at 4.27 TB/s. Measured (pack14, kBackwardSharedPackedBlocks below): 98.3-100.1 µs at 4096..16384, 94-96 % of
// copy; Nsight Compute at bf16 16384×4096 softmax backward (one launch each, clocks unlocked): unpacked 94.2 µs, DRAM
// 85.0 %, warps active 47.8 %, 10.1 long-scoreboard stall cycles an issue; packed 89.5 µs, 88.5 %, 71.1 %, 15.6.
template <typename In, int kMinBlocks>
__global__ void __launch_bounds__(kSharedPackedMaxThreads, kMinBlocks)
    backward_shared_packed_kernel(const RowProblem p) {
  using S = SharedShare<In>;
  using Tile = typename S::Tile;
  constexpr int E = kBackwardWideSharedElems, K = S::K, V = S::V;
  static_assert(V == 8 && K * V == E, "16-bit rows, 16-byte vectors");
  __shared__ float red[32];
  extern __shared__ __align__(16) unsigned char packed_shared[];  // dy's shares
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  auto* const sdy = reinterpret_cast<uint4*>(packed_shared);
  const bool softmax = p.op == Op::softmax_backward;
  // T ≤ 512, so T >> 10 is 0; the compiler cannot know it (packed16.cuh: the later pass's selectors).
  const PackedKeys k1 = packed_keys<In>(static_cast<std::uint32_t>(T) >> 10);
  const In* const ys = static_cast<const In*>(p.x);
  const In* const dys = static_cast<const In*>(p.dy);
  In* const dxs = static_cast<In*>(p.out);
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const In* const dyr = dys + row * p.map.stride[kDy][0];
#pragma unroll
    for (int k = 0; k < K; ++k) __pipeline_memcpy_async(&sdy[k * T + t], dyr + Tile::index(k, t, T), sizeof(uint4));
    __pipeline_commit();
    PackedRow<In, E> y;
    y.load(ys + row * p.map.stride[kX][0], t, T);
    __pipeline_wait_prior(0);
    // Vector k's tree of 8 terms (pass 0's unpack for y; dy's words as read from shared memory).
    auto vec_sum = [&](int k) {
      const uint4 q = sdy[k * T + t];
      const std::uint32_t w[4] = {q.x, q.y, q.z, q.w};
      return tree_sum_of<V>([&](int j) {
        const float d = unpack0<In>(w[j / 2], j % 2);
        return softmax ? d * y.get0(k * V + j) : d;
      });
    };
    const float s = block_sum((vec_sum(0) + vec_sum(1)) + (vec_sum(2) + vec_sum(3)), red);
    In* const dxr = dxs + row * p.map.stride[kOut][0];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const uint4 q = sdy[k * T + t];
      const std::uint32_t w[4] = {q.x, q.y, q.z, q.w};
      typename Tile::template OutVec<In> o;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float yi = y.get(k * V + j, k1), di = unpack0<In>(w[j / 2], j % 2);
        o.v[j] = from_f32<In>(softmax ? yi * (di - s) : di - expf(yi) * s);  // backward_wide_shared_kernel's arithmetic
      }
      *reinterpret_cast<typename Tile::template OutVec<In>*>(dxr + Tile::index(k, t, T)) = o;
    }
    __syncthreads();  // red and the shares are rewritten by the next row
  }
}

// ---- split_row -------------------------------------------------------------------------------------------------------

template <typename In>
__global__ void __launch_bounds__(kSplitThreads, 2) backward_chunk_sums_kernel(const RowProblem p, std::int64_t chunks,
                                                                            float* sums) {
  constexpr int E = kBackwardBlockElems;
  __shared__ float red[32];
  // The merge kernel, a programmatic dependent launch, may be scheduled now; it waits in pdl_wait for this grid.
  pdl_launch_dependents();
  const std::int64_t total = p.rows * chunks;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    const std::int64_t row = idx / chunks, c = idx - row * chunks;
    const RowRef o{row, 0};
    const std::int64_t first = c * kBackwardSplitChunk;
    const int len = static_cast<int>(p.n - first < kBackwardSplitChunk ? p.n - first : kBackwardSplitChunk);
    float y[E], dy[E];
    load_pair<In, E>(p, o, y, dy, len, first, threadIdx.x, kSplitThreads);
    const float s = block_sum(thread_terms(p, y, dy), red);
    if (threadIdx.x == 0) sums[idx] = s;
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kMergeThreads) backward_merge_kernel(const RowProblem p, std::int64_t chunks,
                                                                       const float* sums, float* row_sums) {
  __shared__ float red[32];
  pdl_wait();  // the chunk sums (programmatic dependent launch; at once when launched plainly)
  pdl_launch_dependents();
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    float s = 0.0f, c = 0.0f;  // a thread's strided partial, compensated (Neumaier)
    for (std::int64_t k = threadIdx.x; k < chunks; k += blockDim.x) {
      const float x = sums[row * chunks + k], t = s + x;
      c += fabsf(s) >= fabsf(x) ? (s - t) + x : (x - t) + s;
      s = t;
    }
    const float total = block_sum(s + c, red);
    if (threadIdx.x == 0) row_sums[row] = total;
    __syncthreads();
  }
}

template <typename In>
__global__ void __launch_bounds__(kSplitThreads, 2) backward_elementwise_kernel(const RowProblem p, std::int64_t chunks,
                                                                             const float* row_sums) {
  constexpr int E = kBackwardBlockElems;
  const std::int64_t total = p.rows * chunks;
  for (std::int64_t k = blockIdx.x; k < total; k += gridDim.x) {
    const std::int64_t idx = total - 1 - k;  // reverse order: the chunks read last are likeliest still in L2
    const std::int64_t row = idx / chunks, c = idx - row * chunks;
    const RowRef o{row, 0};
    const std::int64_t first = c * kBackwardSplitChunk;
    const int len = static_cast<int>(p.n - first < kBackwardSplitChunk ? p.n - first : kBackwardSplitChunk);
    float y[E], dy[E];
    load_pair<In, E>(p, o, y, dy, len, first, threadIdx.x, kSplitThreads);
    // y and dy are inputs, never written by the kernels before this one: their loads are in flight before the wait
    // for the row sums (programmatic dependent launch of the merge kernel; at once after the first chunk).
    pdl_wait();
    write_grads<In, E>(p, o, y, dy, row_sums[row], len, first, threadIdx.x, kSplitThreads);
  }
}

// The split path's chunk sums and elementwise pass for the common call (few7, session 7): y, dy and dx unit-stride with
// 16-byte-aligned rows, no temperature, dx in y's type, at most one row dimension (launch_split checks it). The same
// element-to-thread map (chunk_states.cuh PlainTile is RowTile's), the same terms, tree and block sum, and the same
// gradient arithmetic as the generic kernels above, so the same bits, without their strided and unaligned loads,
// the run-time op and output-type switches and the temperature (the generic elementwise kernel is ~50 KB of SASS).
// Chunk idx of the split backward's common call (PlainTile): its row, its first element, and y and dy (0 past the
// row's end); returns the chunk's length.
template <typename In, int E = kBackwardBlockElems>
__device__ __forceinline__ int load_plain_chunk(const RowProblem& p, std::int64_t idx, std::int64_t chunks, bool narrow,
                                                std::int64_t& row, std::int64_t& first, float (&y)[E],
                                                float (&dy)[E]) {
  std::int64_t c;
  split_chunk_index(idx, chunks, narrow, row, c);
  first = c * kBackwardSplitChunk;
  const int len = static_cast<int>(p.n - first < kBackwardSplitChunk ? p.n - first : kBackwardSplitChunk);
  PlainTile<In, E>::load(y, at<In>(p.x, plain_offset(p, row, kX)) + first, len, 0.0f);
  PlainTile<In, E>::load(dy, at<In>(p.dy, plain_offset(p, row, kDy)) + first, len, 0.0f);
  return len;
}

// kMinBlocks (bwd17): __launch_bounds__'s blocks an SM (2: 37-56 registers; 3: 32-40), the same code and arithmetic.
template <typename In, bool kLogBw, int kMinBlocks = 2>
__global__ void __launch_bounds__(kSplitThreads, kMinBlocks) backward_chunk_sums_plain_kernel(const RowProblem p,
                                                                                           std::int64_t chunks,
                                                                                           float* sums) {
  constexpr int E = kBackwardBlockElems;
  __shared__ float red[32];
  pdl_launch_dependents();
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    std::int64_t row, first;
    float y[E], dy[E];
    (void)load_plain_chunk<In>(p, idx, chunks, narrow, row, first, y, dy);
    float t[E];
#pragma unroll
    for (int i = 0; i < E; ++i) t[i] = kLogBw ? dy[i] : dy[i] * y[i];
    const float s = block_sum(tree_sum<E>(t), red);
    if (threadIdx.x == 0) sums[idx] = s;
    __syncthreads();
  }
}

// kCs (bwd16, kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems; softmax backward only): dx by streaming stores
// (PlainTile::store's st.global.cs), the same values.
template <typename In, bool kLogBw, bool kCs = false>
__global__ void __launch_bounds__(kSplitThreads, 2) backward_elementwise_plain_kernel(const RowProblem p,
                                                                                   std::int64_t chunks,
                                                                                   const float* row_sums) {
  constexpr int E = kBackwardBlockElems;
  using Tile = PlainTile<In, E>;
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  for (std::int64_t k = blockIdx.x; k < total; k += gridDim.x) {
    const std::int64_t idx = total - 1 - k;  // reverse order, as backward_elementwise_kernel
    std::int64_t row, first;
    float y[E], dy[E];
    const int len = load_plain_chunk<In>(p, idx, chunks, narrow, row, first, y, dy);
    pdl_wait();  // the row sums (programmatic dependent launch of the merge kernel)
    const float s = row_sums[row];
    backward_grads<kLogBw>(y, dy, s);
    Tile::template store<In>(at<In>(p.out, plain_offset(p, row, kOut)) + first, y, len, kCs);
  }
}

// bwd17 (session 17; 15182b6's form): split_row's elementwise pass for the common call's softmax backward with dx
// stored streaming, as torch.compile's pointwise kernel runs it: one 16-byte vector of y and of dy a thread (V = 16 /
// sizeof(In) elements; rows of a whole number of vectors only, their first elements 16-byte aligned by plain_rows),
// kVecThreads threads a block at kVecMinBlocks blocks an SM (26-32 registers), vectors in reverse order as the chunk
// kernel (the lines the chunk-sums pass read last first), dx by one st.global.cs a thread. dx[i] is backward_grads'
// function of y[i], dy[i] and the row's sum alone, so any map of elements to threads gives the same bits. Traffic as
// the chunk kernel: y and dy read (the second time; L2 may hold the last ones), dx written. kVecThreads and kVecMinBlocks
// are 15182b6's choice, not varied in bwd17's run (only the kernel against the chunk kernel's pass was timed).
constexpr int kVecThreads = 256;
constexpr int kVecMinBlocks = 8;
template <typename In>
__global__ void __launch_bounds__(kVecThreads, kVecMinBlocks)
    backward_elementwise_vec_kernel(const RowProblem p, std::int64_t vectors_per_row, const float* row_sums) {
  constexpr int V = 16 / static_cast<int>(sizeof(In));
  using Vec = typename RowTile<In, V>::Vec;
  using OutVec = typename RowTile<In, V>::template OutVec<In>;
  const std::int64_t total = p.rows * vectors_per_row;
  const bool narrow = total <= 0xffffffffll;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kVecThreads;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * kVecThreads + threadIdx.x; k < total; k += stride) {
    const std::int64_t idx = total - 1 - k;
    std::int64_t row, v;
    split_chunk_index(idx, vectors_per_row, narrow, row, v);
    const std::int64_t first = v * V;
    const In* const yr = at<In>(p.x, plain_offset(p, row, kX)) + first;
    const In* const dyr = at<In>(p.dy, plain_offset(p, row, kDy)) + first;
    In* const dxr = at<In>(p.out, plain_offset(p, row, kOut)) + first;
    const Vec a = *reinterpret_cast<const Vec*>(yr), b = *reinterpret_cast<const Vec*>(dyr);
    float y[V], dy[V];
#pragma unroll
    for (int j = 0; j < V; ++j) y[j] = to_f32(a.v[j]), dy[j] = to_f32(b.v[j]);
    pdl_wait();  // the row sums (programmatic dependent launch of the merge kernel); at once after the first time
    backward_grads<false>(y, dy, row_sums[row]);
    OutVec o;
#pragma unroll
    for (int j = 0; j < V; ++j) o.v[j] = from_f32<In>(y[j]);
    uint4 w;
    memcpy(&w, &o, sizeof(w));
    __stcs(reinterpret_cast<uint4*>(dxr), w);
  }
}

// ---- strided_inner ---------------------------------------------------------------------------------------------------

template <typename In>
__global__ void __launch_bounds__(512) backward_strided_kernel(const RowProblem p) {
  __shared__ float red[512];
  const int width = blockDim.x, depth = blockDim.y;
  const int x = threadIdx.x, yy = threadIdx.y;
  const std::int64_t tiles = (p.inner + width - 1) / width;
  const std::int64_t total = p.rows * tiles;
  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    const std::int64_t outer = t / tiles;
    const std::int64_t col = (t - outer * tiles) * width + x;
    const bool active = col < p.inner;
    const RowRef o{outer, active ? col : 0};
    const In* yrow = at<In>(p.x, o.off(p, kX));
    const In* grow = at<In>(p.dy, o.off(p, kDy));
    const std::int64_t sy = p.step[kX], sg = p.step[kDy];
    float s = 0.0f, c = 0.0f;
    if (active) {
      for (std::int64_t j = yy; j < p.n; j += depth) {
        const float g = to_f32(grow[j * sg]);
        const float term = p.op == Op::softmax_backward ? g * to_f32(yrow[j * sy]) : g;
        const float u = s + term;
        c += fabsf(s) >= fabsf(term) ? (s - u) + term : (term - u) + s;
        s = u;
      }
    }
    red[yy * width + x] = s + c;
    __syncthreads();
    float a[32];
    for (int k = 0; k < depth; ++k) a[k] = red[k * width + x];
    for (int w = 1; w < depth; w *= 2)
      for (int k = 0; k + w < depth; k += 2 * w) a[k] += a[k + w];
    const float sum = a[0];
    if (active) {
      const float temp = row_temperature(p, o);
      with_out_type<In>(p, [&](auto* tag) {
        using Out = std::remove_pointer_t<decltype(tag)>;
        Out* orow = at<Out>(p.out, o.off(p, kOut));
        for (std::int64_t j = yy; j < p.n; j += depth)
          orow[j * p.step[kOut]] = from_f32<Out>(grad(p, to_f32(yrow[j * sy]), to_f32(grow[j * sg]), sum, temp));
      });
    }
    __syncthreads();
  }
}

// ---- launchers -------------------------------------------------------------------------------------------------------

// short10: backward_warp_packed_kernel's blocks an SM (__launch_bounds__), by elements a lane. sbwd12: E8 (16-bit rows
// of 32 on 4 lanes, the one length it serves) at 8 (32 registers, no spill; 36 at 6): on the grid of 8
// (softmax_cuda.cpp kWarpGridPacked16BackwardE8) 1.03-1.04× (H200 run of 69c6ce5's binaries; the numbers there).
template <int E>
constexpr int kWarpBackwardPackedMinBlocks = E >= 32 ? 4 : E >= 16 ? 6 : 8;

// sbwd11: backward_warp_dense_kernel's builds, the ones the dispatcher takes (softmax_cuda.cpp kWarpBackwardDense*;
// warp_backward.hpp backward_dense_built): E16 at 4 blocks an SM, E32 at 2, plain loads and stores. The run of 90f1614
// timed E8 at 4 / 6 / 8 blocks, E16 at 3 / 5, E32 at 3 and cache hints (evict-first loads 0.87-0.95×; with streaming
// stores 0.98-1.02×) too: not built since.
// sbwd12: E8 at 4 blocks an SM (44 registers) with streaming stores, the build its run timed fastest (rows of 32 and
// 128 on a grid of 16: 1.007-1.010×; with plain stores on the grid of 8 even, with streaming stores there 0.994-1.000×). The
// E16 and E32 builds with streaming stores were even (0.998-1.002×): not built.
// bwd21: E32 reads y and dy evict-last (hints 1, kBackwardDenseE32Hints; 0 its plain loads).
template <int E>
auto dense_kernel(WarpBackwardDense d, int hints) -> void (*)(const RowProblem, int) {
  if (!backward_dense_built(E, d.blocks)) return nullptr;
  if constexpr (E == 8) return backward_warp_dense_kernel<8, 4, true>;
  else if constexpr (E == 16) return backward_warp_dense_kernel<16, 4>;
  else if constexpr (E == 32)
    return hints == 1 ? backward_warp_dense_kernel<32, 2, false, 1> : backward_warp_dense_kernel<32, 2, false, 0>;
  else return nullptr;
}

// bwd21: the hints a hinted kernel's launch takes: the dispatcher's (`dflt`) unless BackwardHintTuning forces 0 or 1.
int chosen_hints(int dflt) {
  const int h = backward_hint_tuning().hints;
  return h == 0 || h == 1 ? h : dflt;
}
void note_hints(int kernel, int hints) {
  backward_hint_last().kernel.store(kernel, std::memory_order_relaxed);
  backward_hint_last().hints.store(hints, std::memory_order_relaxed);
}

template <typename In, int E>
void launch_warp(const RowProblem& p, WarpConfig c, WarpBackwardDense d, cudaStream_t s) {
  auto kernel = backward_warp_kernel<In, E>;
  // sbwd11: f32 rows dense for the launch's lanes and elements on the dense kernel, where one is built for (E, d).
  WarpBackwardDense took{};
  int hint_kernel = 0, hints = 0;
  if constexpr (std::is_same_v<In, float>) {
    if (warp_backward_dense_tuning().on) d = warp_backward_dense_tuning().dense;
    if constexpr (E >= 8) {
      if (d.blocks > 0 && backward_dense_f32(p, c.lanes, E)) {
        const int h = E == 32 ? chosen_hints(kBackwardDenseE32Hints) : 0;
        if (const auto k = dense_kernel<E>(d, h)) {
          kernel = k;
          took = d;
          if (E == 32) hint_kernel = 1, hints = h;
        }
      }
    }
    warp_backward_dense_last().blocks.store(took.blocks, std::memory_order_relaxed);
  }
  note_hints(hint_kernel, hints);
  // WarpConfig::packed (short10): dense 16-bit rows of 8 elements a lane or more held packed.
  bool packed = false;
  if constexpr (sizeof(In) == 2 && E >= 8) {
    if (warp_packed(c) && packed_dense(p, c.lanes, E)) {
      kernel = backward_warp_packed_kernel<In, E, kWarpBackwardPackedMinBlocks<E>>;
      packed = true;
    }
  }
  warp_backward_last().packed.store(packed, std::memory_order_relaxed);
  const int rows_per_block = (kWarpThreads / 32) * (32 / c.lanes);
  const std::int64_t needed = (p.rows + rows_per_block - 1) / rows_per_block;
  // WarpConfig::grid (the dispatcher's, softmax_cuda.cpp kWarpGridF32): more blocks than fit for f32 rows.
  const unsigned grid = warp_grid(persistent_grid(kernel, kWarpThreads, 0, needed), needed, c);
  kernel<<<grid, kWarpThreads, 0, s>>>(p, c.lanes);
  SMK_CUDA_CHECK_LAUNCH("backward_warp_kernel");
}

template <typename In, bool kStaged, int E = kBackwardBlockElems, int kThreads = kBlockMaxThreads, int kMinBlocks = 2>
void launch_block(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  // bwd21: f32 dense rows of the unstaged 512-thread block, one block a row, take its hinted dense form
  // (kBackwardBlockF32Hints; the same bits as the general kernel, which hints 0 keeps).
  int hint_kernel = 0, hints = 0;
  if constexpr (std::is_same_v<In, float> && !kStaged && E == kBackwardBlockElems && kThreads == kBlockMaxThreads &&
                kMinBlocks == 2) {
    if (c.cluster == 1 && rows_dense(p, c.threads, E)) {
      hint_kernel = 2;
      hints = chosen_hints(kBackwardBlockF32Hints);
      if (hints == 1) {
        const auto hinted = backward_block_kernel<float, false, E, kThreads, 2, 1>;
        hinted<<<capped_grid(p.rows), c.threads, 0, s>>>(p, 1);
        SMK_CUDA_CHECK_LAUNCH("backward_block_kernel (hinted)");
        note_hints(hint_kernel, hints);
        return;
      }
    }
  }
  note_hints(hint_kernel, hints);
  const auto kernel = backward_block_kernel<In, kStaged, E, kThreads, kMinBlocks>;
  using Stage = RowStage<In, E>;
  const std::size_t smem = kStaged ? 2 * Stage::bytes(c.threads) : 0;  // y's share and dy's
  static DeviceOnce attributes;  // clusters of more than 8 blocks are an H100/H200 extension
  attributes.run([&] {
    if (current_device_attrs().cc_major >= 9)  // no clusters below Hopper: leave the attribute alone there
      SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    if (kStaged)
      SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(2 * Stage::bytes(kThreads))));
  });
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(c.threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(c.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  if (c.cluster > 1) {
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  const std::int64_t clusters =
      kStaged ? std::min<std::int64_t>(p.rows, resident_clusters(reinterpret_cast<const void*>(kernel), cfg, c.cluster))
              : p.rows;
  cfg.gridDim = dim3(capped_grid(clusters, c.cluster));
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p, c.cluster));
}

// pack14: the packed dy-shared kernel's build (blocks an SM under __launch_bounds__(512, ·)): 3 (40 registers, no
// spill), the one the dispatcher's calls take (kBackwardSharedPackedBlocks). The build at 4 (32 registers, 24 B spilled
// in the row loop) ran 0.88-0.90× of the unpacked kernel (its local-memory traffic: 144 MB of DRAM writes against 116
// at 16384×4096 under Nsight Compute); its code is in 600c491.
template <typename In>
auto shared_packed_kernel(int blocks) -> void (*)(const RowProblem) {
  if constexpr (sizeof(In) == 2) {
    if (blocks == 3) return backward_shared_packed_kernel<In, 3>;
  }
  return nullptr;
}

template <typename In>
void launch_wide_shared(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  const auto kernel = backward_wide_shared_kernel<In>;
  const std::size_t per_thread = SharedShare<In>::bytes_per_thread;  // dy's share
  // pack14: dense 16-bit rows of up to kSharedPackedMaxThreads threads on the packed form (the same bits).
  const int want = backward_packed_tuning().shared_blocks >= 0 ? backward_packed_tuning().shared_blocks
                                                               : kBackwardSharedPackedBlocks;
  int took = 0;
  const auto packed = shared_packed_kernel<In>(want);
  if (packed != nullptr && c.threads <= kSharedPackedMaxThreads &&
      packed_dense(p, c.threads, kBackwardWideSharedElems)) {
    const std::size_t smem = per_thread * static_cast<std::size_t>(c.threads);
    packed<<<capped_grid(p.rows), c.threads, smem, s>>>(p);
    SMK_CUDA_CHECK_LAUNCH("backward_shared_packed_kernel");
    took = want;
  }
  backward_packed_last().shared_blocks.store(took, std::memory_order_relaxed);
  if (took > 0) return;
  static DeviceOnce attributes;
  attributes.run([&] {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(per_thread * kWideBlockThreads)));
  });
  const std::size_t smem = per_thread * static_cast<std::size_t>(c.threads);
  const unsigned grid = capped_grid(p.rows);
  kernel<<<grid, c.threads, smem, s>>>(p);
  SMK_CUDA_CHECK_LAUNCH("backward_wide_shared_kernel");
}

template <typename In>
void launch_split(const RowProblem& p, cudaStream_t s) {
  const std::int64_t chunks = (p.n + kBackwardSplitChunk - 1) / kBackwardSplitChunk;
  const std::int64_t total = p.rows * chunks;
  if (total == 0) return;
  ScopedWorkspace ws(sizeof(float) * static_cast<std::size_t>(total + p.rows), s);  // freed even if a launch throws
  auto* sums = static_cast<float*>(ws.get());
  float* row_sums = sums + total;
  // The common call (unit-stride aligned rows of y, dy and dx, no temperature, dx in y's type) takes the compact chunk
  // and elementwise kernels, bitwise the generic ones (SplitRowTuning::common_call off: the generic ones always).
  const bool plain = split_row_tuning().common_call && !p.scale && p.temp == nullptr && p.out_dtype == p.x_dtype &&
                     plain_rows<In>(p, p.x, kX) && plain_rows<In>(p, p.dy, kDy) && plain_rows<In>(p, p.out, kOut);
  const bool log = p.op == Op::log_softmax_backward;
  const BackwardSplitTuning& tuning = backward_split_tuning();
  // bwd17: the chunk-sums kernel's blocks an SM (2 or 3 built; the same code and bits).
  const int sums_blocks = tuning.sums_blocks == 2 || tuning.sums_blocks == 3 ? tuning.sums_blocks
                          : sizeof(In) == 2                                  ? kBackwardSplitSumsBlocks16
                                                                             : kBackwardSplitSumsBlocksF32;
  auto plain_sums = [&](auto b) -> void (*)(const RowProblem, std::int64_t, float*) {
    constexpr int B = decltype(b)::value;
    return log ? backward_chunk_sums_plain_kernel<In, true, B> : backward_chunk_sums_plain_kernel<In, false, B>;
  };
  const auto sums_kernel = !plain             ? backward_chunk_sums_kernel<In>
                           : sums_blocks == 3 ? plain_sums(std::integral_constant<int, 3>{})
                                              : plain_sums(std::integral_constant<int, 2>{});
  backward_split_last().sums_blocks.store(plain ? sums_blocks : 0, std::memory_order_relaxed);
  sums_kernel<<<capped_grid(total), kSplitThreads, 0, s>>>(p, chunks, sums);
  SMK_CUDA_CHECK_LAUNCH("backward_chunk_sums_kernel");
  // The merge and elementwise kernels as programmatic dependent launches (few7, session 7; split_row's forward has
  // chained its kernels so since session 5): each is scheduled while the one before runs, the elementwise kernel's
  // loads of y and dy in flight before it waits for the row sums. split_row_pdl() off: plain launches, the same bits.
  launch_dependent(true, backward_merge_kernel, capped_grid(p.rows), kMergeThreads, s, p, chunks,
                   static_cast<const float*>(sums), row_sums);
  // bwd16: streaming dx stores on softmax backward calls of kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems
  // elements (BackwardSplitTuning); log-softmax backward always plain (streaming measured even there: not built).
  const int want_cs = tuning.streaming;
  const std::int64_t elems = p.rows * p.n;
  const bool cs = plain && !log &&
                  (want_cs >= 0 ? want_cs > 0 : elems >= kBackwardSplitCsMinElems && elems <= kBackwardSplitCsMaxElems);
  const auto grads_kernel = !plain ? backward_elementwise_kernel<In>
                                   : (log ? backward_elementwise_plain_kernel<In, true>
                                          : (cs ? backward_elementwise_plain_kernel<In, false, true>
                                                : backward_elementwise_plain_kernel<In, false>));
  backward_split_last().streaming.store(cs ? 1 : 0, std::memory_order_relaxed);
  // bwd17: the vector form of the pass where dx is stored streaming and the rows are whole 16-byte vectors (16-bit by
  // default, kBackwardSplitVec16; the same bits).
  constexpr std::int64_t V = 16 / sizeof(In);
  const int grads_form = tuning.grads_form >= 0 ? tuning.grads_form : (sizeof(In) == 2 && kBackwardSplitVec16 ? 1 : 0);
  if (cs && grads_form == 1 && p.n % V == 0) {
    const std::int64_t per_row = p.n / V;
    const auto vec_kernel = backward_elementwise_vec_kernel<In>;
    backward_split_last().grads_form.store(1, std::memory_order_relaxed);
    launch_dependent(true, vec_kernel, capped_grid((p.rows * per_row + kVecThreads - 1) / kVecThreads), kVecThreads, s,
                     p, per_row, static_cast<const float*>(row_sums));
    ws.release();
    return;
  }
  backward_split_last().grads_form.store(0, std::memory_order_relaxed);
  launch_dependent(true, grads_kernel, capped_grid(total), kSplitThreads, s, p, chunks,
                   static_cast<const float*>(row_sums));
  ws.release();
}

template <typename In>
void launch_strided(const RowProblem& p, StridedConfig c, cudaStream_t s) {
  const auto kernel = backward_strided_kernel<In>;
  const int threads = c.width * c.depth;
  const std::int64_t tiles = p.rows * ((p.inner + c.width - 1) / c.width);
  const unsigned grid = persistent_grid(kernel, threads, 0, tiles);
  kernel<<<grid, dim3(c.width, c.depth), 0, s>>>(p);
  SMK_CUDA_CHECK_LAUNCH("backward_strided_kernel");
}

}  // namespace

void launch_backward_warp_rows(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  launch_backward_warp_rows(p, c, WarpBackwardDense{}, s);
}
void launch_backward_warp_rows(const RowProblem& p, WarpConfig c, WarpBackwardDense d, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    switch (c.elems) {
      case 4: return launch_warp<In, 4>(p, c, d, s);
      case 8: return launch_warp<In, 8>(p, c, d, s);
      case 16: return launch_warp<In, 16>(p, c, d, s);
      default: return launch_warp<In, 32>(p, c, d, s);
    }
  });
}
WarpBackwardDenseTuning& warp_backward_dense_tuning() {
  static WarpBackwardDenseTuning tuning;
  return tuning;
}
WarpBackwardDenseLast& warp_backward_dense_last() {
  static WarpBackwardDenseLast last;
  return last;
}
BackwardPackedTuning& backward_packed_tuning() {
  static BackwardPackedTuning tuning;
  return tuning;
}
BackwardPackedLast& backward_packed_last() {
  static BackwardPackedLast last;
  return last;
}
BackwardSplitTuning& backward_split_tuning() {
  static BackwardSplitTuning tuning;
  return tuning;
}
BackwardSplitLast& backward_split_last() {
  static BackwardSplitLast last;
  return last;
}
BackwardHintTuning& backward_hint_tuning() {
  static BackwardHintTuning tuning;
  return tuning;
}
BackwardHintLast& backward_hint_last() {
  static BackwardHintLast last;
  return last;
}
void launch_backward_block_rows(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    // dy_shared ignores c.staged: its 16-bit prefetching form was removed in session 11 (review F13).
    if (c.dy_shared) launch_wide_shared<In>(p, c, s);
    else if (c.wide) launch_block<In, false, kBackwardWideBlockElems, kWideBlockThreads, 1>(p, c, s);
    else if (c.staged) launch_block<In, true>(p, c, s);
    else launch_block<In, false>(p, c, s);
  });
}
void launch_backward_split_rows(const RowProblem& p, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch_split<std::remove_pointer_t<decltype(tag)>>(p, s); });
}
void launch_backward_strided_inner(const RowProblem& p, StridedConfig c, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0 || p.inner == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch_strided<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

}  // namespace smk::cuda::kernels
