// lse_stream (lse10, session 10, issue 3): logsumexp and the online state read once, holding nothing — no row in
// registers across a barrier, no max pass before the sum. Each thread keeps a running (m, ties, rest) over its share of
// the row (RowTile's element map: vector k·G + g of the row is thread g's k-th), a chunk of kUnroll 16-byte vectors at
// a time: all the chunk's loads issued first, then the chunk's max; where it rises above the running max the thread's
// mass rescales once, (ties + rest)·exp_diff(m, m'), and the chunk's terms are formed against the running max with
// the log ops' tier (log_term_exp_ftz for f32, log_term_exp16 for 16-bit, the ties counted as thread_log_rest counts
// them). At the end the G threads of a row merge: the group's max, each thread's mass rescaled to it once, the rests
// summed and the ties counted (what block_row's kernels do after their max pass), then across a block's warps through
// OnlineSoftmaxState::merge (group_merge). The result is a function of n and the launch configuration (G, kUnroll)
// alone: an unaligned or strided row loads its elements one by one through the same map and chunks.
//
// Traffic per element: 4 B (f32), 2 B (16-bit) read; 4-8 B a row written. Floor at the read ceiling (4.42 TB/s,
// compare-s9's anchor): 4096×16384 f32 (268 MB) 60.7 µs, bf16 30.4; 8192×32000 bf16 118.6; 32768×1024 bf16 15.2,
// f32 30.4. Target (issue 3): 90 % of read.
//
// Why (mid8's Nsight Compute, docs/perf-notebook.md "session 8 — mid8"): the direct wide block spent 27.5
// lane-instructions an element (Triton 18.1); at 132 SMs × 4 schedulers × ~1.7 GHz that alone is ~64 µs at
// 4096×16384 f32, above the 60.7 µs floor: instructions, not bytes, set its time. Here an element costs its share of a
// 16-byte load and of the chunk's max (1), its term (f32 8: log_term_exp_ftz; 16-bit 3 plus the conversion), the tie
// compare, select and count (3) and one add; the rescale (~20) runs once a chunk at most; then a row's merge, a fixed
// cost a thread that fewer than ~4 vectors a thread do not amortise.
//
// Accuracy: the terms are the tier's of block_row (log_term_exp_ftz / log_term_exp16). The summation is not block_row's
// tree (session 10 review, F1): with K = ⌈n / (G·V·kUnroll)⌉ chunks a thread, a term's worst first-order path is
//   tree_sum<C> log2 C (C = kUnroll·V: 4 f32, 5 16-bit) + the K − 1 chunk sums added in sequence into rest (K − 1)
//   + up to K − 1 rises, each (ties + rest)·exp_diff: an add, exp_diff's α = 5u and the product (7 each)
//   + the group's rescale to its max (7) and group_sum (log2 of 32 or 16: 5 or 4)
//   + (T128 only) the 4 warps' states merged in 2 levels, each 1 + d, exp_diff, the product and the add (α + 3 = 8 each),
// so D_stream = log2 C + 8K + 20 (T128; 8K + 24 f32, 8K + 25 16-bit) and log2 C + 8K + 3 (L16), in u, where the
// gates (docs/semantics.md §6) allow every path D = L + 4 (L = ⌈log2 n⌉). At the dispatched configurations: f32 L16 at
// 1024 (K = 4) 39 against 14, 16-bit L16 at 1024 (K = 2) 24 against 14; f32 T128 at 2048 (K = 1) 32 against 15, at 32768
// (K = 16) 152 against 19; 16-bit T128 at 4096 (K = 1) 33 against 16, at 32768 (K = 8) 89 against 19. The bound does not
// fit at any of them, not even at K = 1 (the merges alone cost ~23u), so no narrower rule fits either. Decided
// (session 10's lead, docs/semantics.md §6): lse_stream is held to this bound of its own and stays dispatched.
// What is measured instead: the tests hold l and the LSE to the common gate (gpu_case.hpp, l
// relative (L + 11 + log_term_u·ln n)u: 36u f32 at 32768), with the F1 slow ramp x_i = i·2^-16 (every chunk rises and
// every chunk's mass counts) and its reverse among the rows; a CPU emulation of this summation (float, exp correctly
// rounded, so the sum's and the rescales' roundings only; fixlse10, session 10) gave l within 6.3u on the f32 ramp at
// 32768 (T128, K = 16) and within 1.9u on every other row tried (ramps, sorted, mass in the first chunk with 1e-3 rises).
// The ramp rows have not run on a GPU yet.
//
// Registers (ptxas -v, CUDA 13.0, sm_90a; __launch_bounds__ for 1024 threads an SM): plain form f32 51-56, 16-bit
// 62-64, no spill but the 16-bit 8- and 16-lane warp kernels (16 B); general form f32 56, 16-bit 64 spilling 16-24 B.
// Built: L16 and T128 (3 dtypes × 2 forms: 12 kernels), the dispatcher's two; L8, L32, T256 and T512 (the other 24,
// dispatched nowhere) were removed after the run below (session 10 review, F3; the 12 kept kernels' SASS unchanged).
// Session 17 added lse17's chunk kernel (T64 and T128, 3 dtypes × 2 forms: 12 more) and its merge kernel, below;
// session 18 lse18's one-launch cluster kernel (T128, the 2 16-bit dtypes × 2 forms: 4) and the warp merge kernel
// (lse_chunks_merge_warp_kernel): 30 kernels in all. Session 20 (reg21): f32's plain-form T128 row kernel a second
// time, built for 1536 threads an SM (40 registers, no spill), for rows of at most 4096 (launch_form): 31.
// Session 19 (lse19, lse19b): bf16's plain-form row kernels (L16, T128) widen by shift and mask and count ties in pairs
// (kLseRowLean: 368 → 350 lane-instructions a 32-element chunk step, SASS; the same bits), measured in the lead's call
// lead19 at 0.970-0.984 of the kernels before (the constant's comment); f32, f16 and the general form unchanged (their
// SASS identical to before). The other forms lse19 built and lead19 timed were removed: the loads through
// ld.global.nc.L1::no_allocate (0.99-1.055), the next chunk loaded before the current one is pushed at 640 / 768
// threads an SM (1.05-1.74, slower everywhere), persistent grids (0.98-1.13), and the read probe. Where it stands
// (lead19, bf16 logsumexp, L2 flushed): 32768×1024 27.5 µs (2.44 TB/s; a plain read of the same bytes 22.5 µs),
// 16384×4096 54.8 (2.45 TB/s; the read 36.6), 4096×16384 42.9 (3.13), 8192×32000 140.2 (3.74): below the read,
// instructions still bound the bf16 kernels at the short rows (docs/bench/lse19-s19-2026-12-02.md).
// Measured (H200, 2026-11-30, lse10's run of fc6036d, tune_softmax --lse10, median µs, L2 not reused: inputs rotated;
// docs/bench/lse10-s10-2026-11-30.md), logsumexp, the dispatcher's kernel before → this one's best configuration
// (% of the 4.42 TB/s read ceiling): 4096×16384 f32 85.8 → 73.5 (T128, 83 %), bf16 64.2 → 45.8 (66 %), f16 64.3 → 43.7;
// 8192×32000 f32 327.8 → 243.3 (T128, 4.31 TB/s, 97 %), bf16 261.0 → 145.3 (82 %); 16384×4096 f32 93.8 → 77.5, bf16
// 71.2 → 57.2; 8192×8192 f32 93.3 → 72.7, bf16 71.9 → 49.1; 2048×24576 f32 80.6 → 56.4, bf16 63.2 → 35.4;
// 32768×1024 f32 43.0 → 41.2 (L16), bf16 35.7 → 29.4 (L16); 65536×2048 f32 175.0 → 170.2, bf16 130.7 → 255.2 (slower:
// two vectors a thread). The state alike. Nsight Compute, 4096×16384 f32 (one pass, a few metrics): the direct wide
// block 84.9 µs, DRAM 66 % busy, 27.4 lane-instructions an element, issue slots 69 %, 64 registers; this kernel T256
// 70.6 µs, DRAM 79 %, 19.2 an element (target ≤ 12: missed; the per-row merges and early-chunk rescales are the rest),
// issue 64 %, 53 registers; T512 87.2 µs, 21.9 an element. bf16 32768×1024: warp E32 L32 30.7 µs, 17.6 an element;
// this kernel L32 27.0 µs, 16.6 an element.
#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>

#include "cuda/device_attrs.hpp"           // lse18: the cluster kernel's occupancy query
#include "cuda/softmax/chunk_states.cuh"  // lse17: chunk_first / chunk_len, merge_chunk_states, split_chunk_index
#include "cuda/softmax/cluster_launch.hpp"  // lse19b: the cluster launch and occupancy query, shared with split_row.cu
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/lse_chunks.hpp"
#include "cuda/softmax/lse_rows_occ.hpp"  // reg21: f32 T128 at 1536 threads an SM, its tuning switch
#include "cuda/softmax/running_state.cuh"  // fold19: the running state, its step and merges, shared with split_row.cu
#include "softmaxkit/core/error.hpp"

namespace smk::cuda::kernels {

namespace {

constexpr int kUnroll = 4;  // 16-byte vectors a thread has in flight: 64 B, 128 KB an SM at 2048 threads

// Thread g of the G that share a row: its running state over the row (running_state.cuh running_thread: kUnroll
// vectors a step, lse_push's terms, std::int64_t indices). kGeneral: any row (unaligned or strided loads element by
// element, a temperature or mask applied); else the host has checked that every row is unit-stride and 16-byte
// aligned with no transform (lse_plain_call), and only a row's last vector may be partial. Both take the same elements
// in the same chunks: the same bits.
// first (lse17): the position of row[0] in its row, for the transform's mask index (a chunk of a longer row; 0 for
// a whole row, which compiles to what this function was before).
// kLean (lse19): widen's and lse_push's lean arithmetic (bf16 widened by shift and mask, the ties counted in pairs):
// the same bits. The row kernels take it for bf16's plain form (kLseRowLean); the chunk kernels keep false.
// fold19 (session 19): the running state, its step and merges moved to running_state.cuh, shared with split_row.cu.
template <typename In, int G, bool kGeneral, bool kLean = false>
__device__ __forceinline__ RunningLse lse_thread(const In* row, std::int64_t n, std::int64_t step, int g,
                                                 const RowTransform& t, std::int64_t first = 0) {
  constexpr int C = kUnroll * LseVec<In>::V;
  return running_thread<In, G, kGeneral, kLean, kUnroll>(
      row, n, step, g, t, first, [](RunningLse& s, const float (&x)[C]) { lse_push<In, C, kLean>(s, x); });
}

// One block of kThreads a row (a grid-stride loop over rows). The warps' states merge in warp 0 (group_merge, a fixed
// butterfly), which writes the row's statistics; the warps' slots are double-buffered by row parity, so one barrier a
// row suffices (warp 0 reads row r's slots before it reaches row r + 1's barrier, which every warp must pass before
// it writes row r + 2's).
// Registers: at most 64 a thread, 1024 threads an SM (32 and 40, for 2048 and 1536 threads, spilled 48-600 B; ptxas
// -v, CUDA 13.0, sm_90a; reg20: but f32's plain T128 at 40 with no spill, which reg21 ships for rows ≤ 4096). 1024
// threads × 64 B in flight is 64 KB an SM, over the ~27 KB that the read ceiling needs at ~0.8 µs of latency.
template <typename In>
constexpr int kLseMinThreadsPerSm = 1024;
// lse19b: bf16's plain form takes lse_thread's lean arithmetic (the same bits; H200, session 19, the lead's call
// "lead19" of 2193d3f, tune_softmax --lse19, logsumexp, median of 3 alternating rounds, lean / the kernel before: bf16
// 32768×1024 (L16) 0.970 (0.957-0.981), 16384×4096 (T128) 0.981 (0.979-0.982), 4096×16384 0.984 (0.976-0.998),
// 8192×32000 0.981 (0.980-0.982); f32 1.003 / 0.997 / 0.995: no gain, so f32 keeps the plain widening, as do f16 (not
// timed) and the general form). docs/bench/lse19-s19-2026-12-02.md.
template <typename In, bool kGeneral>
constexpr bool kLseRowLean = !kGeneral && std::is_same_v<In, __nv_bfloat16>;
// reg20 (session 20): kMinThreadsPerSm, the threads an SM the launch bounds ask ptxas to fit (its register cap), is a
// parameter; every launch takes the default (kLseMinThreadsPerSm) but f32's plain form of short rows, which takes
// kLseF32T128WideOcc (reg21, launch_form below: the same arithmetic at 40 registers).
template <typename In, int kThreads, bool kGeneral, int kMinThreadsPerSm = kLseMinThreadsPerSm<In>>
__global__ void __launch_bounds__(kThreads, kMinThreadsPerSm / kThreads) lse_block_kernel(const RowProblem p) {
  __shared__ float2 warp_state[2][kThreads / 32];
  const int t = static_cast<int>(threadIdx.x);
  int parity = 0;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x, parity ^= 1) {
    const RowRef o{row, 0};
    const RunningLse s = lse_thread<In, kThreads, kGeneral, kLseRowLean<In, kGeneral>>(
        at<In>(p.x, o.off(p, kX)), p.n, p.step[kX], t, row_transform(p, o));
    lse_block_state<kThreads / 32, 32>(s, warp_state[parity],
                                       [&](const OnlineSoftmaxState<float>& st) { write_row_stats(p, o, st); });
  }
}

// kLanes lanes a row (16, the one width built; 32 / kLanes rows a warp), 256-thread blocks, a grid-stride loop over
// row groups that keeps each warp together (the group reductions shuffle across the whole warp).
constexpr int kLseWarpBlock = 256;
template <typename In, int kLanes, bool kGeneral>
__global__ void __launch_bounds__(kLseWarpBlock, kLseMinThreadsPerSm<In> / kLseWarpBlock) lse_warp_kernel(
    const RowProblem p) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warp = (std::int64_t{blockIdx.x} * kLseWarpBlock + threadIdx.x) / 32;
  const std::int64_t warps = std::int64_t{gridDim.x} * (kLseWarpBlock / 32);
  for (std::int64_t base = warp * kRowsPerWarp; base < p.rows; base += warps * kRowsPerWarp) {
    const std::int64_t row = base + lane / kLanes;
    const bool live = row < p.rows;
    const RowRef o{live ? row : 0, 0};
    // A lane group past the last row reduces an empty row (n = 0) so that its lanes still join the shuffles.
    const RunningLse s = lse_thread<In, kLanes, kGeneral, kLseRowLean<In, kGeneral>>(
        at<In>(p.x, o.off(p, kX)), live ? p.n : 0, p.step[kX], lane % kLanes, row_transform(p, o));
    const auto st = lse_group(s, kLanes);
    if (live && lane % kLanes == 0) write_row_stats(p, o, st);
  }
}

// ---- lse17 (session 17): the chunk pass of long rows' logsumexp / state on this file's running state ----------------
// Rows past kLseStreamMaxN (softmax_cuda.cpp) are cut into split_row's chunks (kSplitChunk = 12288 elements, chunk_first
// / chunk_len: a function of n alone) and each chunk is reduced by one block of kThreads with lse_thread's running
// (m, ties, rest) a thread (kUnroll vectors in flight, no block max before the terms, 16-bit terms by log_term_exp16),
// then lse_group over each warp and group_merge over the block's kThreads / 32 warp states; the chunk states (8 B each)
// are merged per row by lse_chunks_merge_kernel with chunk_states.cuh's merge_chunk_states (split_row's merge order:
// thread t the chunks t, t + 512, …, then two butterflies) and written as the row's statistics. Where split_row's
// chunk pass (chunk_states.cuh chunk_state) spends 24.8 lane-instructions a bf16 element (split15's Nsight Compute at
// 1×16M: block max, barrier, the f32 tier's 8-instruction term and a tie test an element, block sum and count), this
// loop spends lse_stream's ~11.5 (long16 §3: 368 a 32-element step) plus its chunk tail (lse_group and one barrier,
// ~150 a thread) over 96 elements a thread at T128 (bf16: 3 steps; f32: 6): ~13 counted.
// Traffic: as split_row's chunk pass, each element read once (4 B f32, 2 B 16-bit), 8 B a chunk written and read
// back by the merge. Floor at the read ceiling (4.42 TB/s): bf16 4096×151936 (1.245 GB) 282 µs, 1024×65536 30.4.
// Batch invariance: the chunking, kThreads and kUnroll depend on n alone, and the dispatcher sends every row count of
// a length it takes here (softmax_cuda.cpp lse_chunks_takes; never the one-launch cluster kernel nor grid_row), so a
// row's result is the same alone or in a batch. The result is not split_row's bits (a new summation order and, for
// 16-bit inputs, log_term_exp16's terms: docs/semantics.md §6's 16-bit tier, which every other 16-bit logsumexp path
// already takes); its error against float64 is measured by tests/cuda/softmax/test_lse_stream_gpu.cpp.
// Error, counted as lse10's D_stream above for one chunk (K steps a thread: 16-bit 3 at T128, 6 at T64; f32 6 / 12):
// log2 C + 8K + 20 at T128 (two merge levels), + 12 at T64 (one): 16-bit 49u (T128) / 65u (T64), f32 72u / 112u, where
// split_row's chunk was one tree of ⌈log2 12288⌉ + 4 = 18 roundings; then split_row's merge over the row's chunks
// (the same in both). First-order bounds, loose as lse10's; the tests measure the error (below).
// Measured (H200, 2026-12-01, lse17's run; docs/bench/lse17-s17-2026-12-01.md; softmax_cuda.cpp kLseChunks16 has the
// times): bf16 logsumexp split_row → T64 / T128, 1024×65536 92.6 → 52.4 / 53.0 µs, 4096×151936 647.9 → 341.8 / 370.4
// (3.64 TB/s), 32×2097152 75.0 → 46.0 / 47.7, 1×16777216 28.5 → 21.8 / 21.7; slower at 1×151936 (8.5 → 12.6 / 11.1:
// split_row's one-launch kernel there). Nsight Compute, one launch at bf16 1024×65536: this kernel (T128) 41.8 µs,
// 31.2 M warp instructions (14.9 lane-instructions an element; split_row's TMA chunk kernel 82.3 µs, 58.4 M, 27.9),
// issue 78 %, DRAM 67 %; the merge kernel 9.0 µs (split_row's, preloading, 11.0); lse_block_kernel T128 at bf16
// 2048×32768 40.9 µs, 13.2 an element. Error against float64 (tests and tune): within 0.01 u of split_row's on
// every row sampled but one (lower there). The dispatcher takes T128 (softmax_cuda.cpp kLseChunkThreads16: the faster
// on three of issue 3's four bf16 logsumexp shapes this rule serves; session 17's review, F1).
// fold17 (session 17): the merge folded into this kernel's last block a row (an arrival count a row; that block playing
// merge_chunk_states' 16 warps in turn: the merge kernel's bits; code and test in 3fb3636) was slower or even (H200,
// tune_softmax --fold17, ratio folded / not, bf16 T64: 1×151936 13.1 → 15.6 µs, 1.190; 32×128256 1.146; 1×16777216
// 22.2 → 36.0, 1.622: 64 threads walk the 16 warps' states of 1366 chunks in 8 dependent turns; 1024×65536 1.004;
// 4096×151936 1.008). Same run, f32 logsumexp (kLseChunksF32 stays off): this kernel at T128 against split_row 1×151936
// 13.1 against 9.6 µs (1.365), 32×128256 1.043, 1×16777216 1.099, 1024×65536 0.934, 4096×151936 0.972, the same error
// against float64 on the rows sampled (0.09-1.12 u).
template <typename In, int kThreads, bool kGeneral>
__global__ void __launch_bounds__(kThreads, kLseMinThreadsPerSm<In> / kThreads)
    lse_chunks_kernel(const RowProblem p, std::int64_t chunks, ChunkState* states) {
  constexpr int kWarps = kThreads / 32;
  __shared__ float2 warp_state[2][kWarps];
  pdl_launch_dependents();  // the merge kernel may be scheduled now; it waits for this grid in pdl_wait
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  int parity = 0;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x, parity ^= 1) {
    std::int64_t row, c;
    split_chunk_index(idx, chunks, narrow, row, c);
    const RowRef o{row, 0};
    const std::int64_t first = chunk_first(c);
    const RunningLse s = lse_thread<In, kThreads, kGeneral>(at<In>(p.x, o.off(p, kX)) + first * p.step[kX],
                                                            chunk_len(p.n, c), p.step[kX], t, row_transform(p, o),
                                                            first);
    // Double-buffered by parity as lse_block_kernel's: one barrier a chunk.
    lse_block_state<kWarps, kWarps>(s, warp_state[parity], [&](const ChunkState& st) { states[idx] = st; });
  }
}

// A row's state from its chunk states (merge_chunk_states: split_row's merge kernel's order), written as the row's
// statistics; launched as a programmatic dependent of lse_chunks_kernel.
__global__ void __launch_bounds__(kSplitThreads) lse_chunks_merge_kernel(const RowProblem p, std::int64_t chunks,
                                                                         const ChunkState* states) {
  __shared__ float red_m[32], red_d[32];
  pdl_wait();
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const ChunkState st = merge_chunk_states(states + row * chunks, chunks, red_m, red_d);
    if (threadIdx.x == 0) write_row_stats(p, RowRef{row, 0}, st);
  }
}

// ---- lse18 (session 18): the merge as a warp a row, and the one-launch form for rows that fit the device --------------
// Traffic: as lse_chunks_kernel's (each element read once, 2 B 16-bit; 8 B a chunk state, through L2 for the warp merge,
// through distributed shared memory in the one-launch form); the few-row calls this form serves are latency, not
// bytes (1×151936 bf16: 304 KB, 0.07 µs at the read ceiling).
// Measured (H200, 2026-12-01, lse18's two runs; tune_softmax --lse18 / --lse18b, µs, medians over rotated inputs,
// alternating rounds, ratio to session 17's two launches a round: median (min-max); docs/bench/lse18-s18-2026-12-01.md;
// every output byte-identical to the two launches'): the warp merge, bf16 logsumexp 1024×65536 55.4 → 50.1, 0.909
// (0.902-0.910); 512×131072 52.0 → 48.5, 0.932; 4096×151936 376.6 → 351.3, 0.929 (3.54 TB/s); 32×128256 0.931;
// rows past 32 chunks (block merge in both) 1.005 / 0.996. Nsight Compute, 1024 rows of 6 chunks: the block merge
// kernel 8.8-9.2 µs, the warp merge 3.5-3.8. The one launch, bf16 logsumexp 1×151936 15.1 → 11.1 µs, 0.738
// (0.701-0.746), second run 12.8 → 10.0, 0.785 (0.755-0.807); 32×128256 16.3 → 13.9, 0.840, second run 0.884; 2 / 4 /
// 8 / 10 / 16 rows of 151936 0.79 / 0.82-0.84 / 0.84 / 0.85 / 0.88; 64 rows 0.924 (the warp merge 0.921); the state
// 1×151936 0.77-0.78, 32×128256 0.895; f16 1×151936 0.77-0.78. Nsight Compute at 1×151936: the two launches' chunk
// kernel 5.9-6.1 µs and merge 3.8-3.9, the one launch 7.2-7.3. Not kept (code in 051f6a3): the chunk prefetched into
// L2 by one bulk prefetch first (1-5 % faster than this form at 4-16 rows, 1-5 % slower at 1 row in one run and at
// 32-64 rows; Nsight Compute 6.8-6.9 µs), and every load of a thread's share issued before its first push (183
// registers: 0.81-0.96 of the two launches, slower than this form everywhere, and not resident at 16-32 rows).
// For a row of at most 32 chunks, merge_chunk_states (512 threads: thread t merges chunk t into the empty state, a
// butterfly over each warp, then a butterfly over the 16 warps' states) is one warp's work: lane r merges chunk r into
// the empty state as thread r does, the warp's butterfly is warp 0's, and the second butterfly merges warp 0's state
// with 15 warps' butterflies of empty states, i.e. with the empty state, merge's identity (online_state.hpp: an empty
// side copies the other's fields; a NaN state is nan_()'s already, having come out of merge), so it returns warp 0's
// state bit for bit. split_row.cu's merge_pushed_states rests on the same fact. So merge_lane_states below gives
// lse_chunks_merge_kernel's bits (tested bitwise: test_lse_stream_gpu.cpp).
constexpr std::int64_t kLseWarpMergeMaxChunks = 32;  // one chunk state a lane of one warp
__device__ __forceinline__ ChunkState merge_lane_states(bool has, float2 f) {
  ChunkState s = ChunkState::empty();
  if (has) s.merge(ChunkState::from_fields(f.x, f.y));
  return group_merge(s, 32);
}

// Rows of ≤ kLseWarpMergeMaxChunks chunks: a warp a row, 8 rows a block of 256, launched as a programmatic dependent
// of lse_chunks_kernel (as lse_chunks_merge_kernel). The states are read through L2 (ld.global.cg), as
// merge_chunk_states reads them. Where the block merge kernel spends a 512-thread block a row (1024 rows: 1024 blocks,
// two waves, two block barriers and two butterflies each), this is one wave of 128 blocks, one 8-byte load a lane and
// one butterfly.
constexpr int kLseWarpMergeThreads = 256;
__global__ void __launch_bounds__(kLseWarpMergeThreads) lse_chunks_merge_warp_kernel(const RowProblem p,
                                                                                      std::int64_t chunks,
                                                                                      const ChunkState* states) {
  pdl_wait();
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = std::int64_t{gridDim.x} * (kLseWarpMergeThreads / 32);
  const auto* f = reinterpret_cast<const float2*>(states);
  for (std::int64_t row = (std::int64_t{blockIdx.x} * kLseWarpMergeThreads + threadIdx.x) / 32; row < p.rows;
       row += warps) {
    const bool has = lane < chunks;
    const ChunkState st = merge_lane_states(has, has ? __ldcg(f + row * chunks + lane) : make_float2(0.0f, 0.0f));
    if (lane == 0) write_row_stats(p, RowRef{row, 0}, st);
  }
}

// The one-launch form: a cluster of `chunks` blocks a row (≤ kLseClusterMaxChunks: 9-16 blocks is an H100 / H200
// extension, the non-portable cluster size), block c reducing chunk c exactly as lse_chunks_kernel does (lse_thread,
// lse_block_state), its state pushed into block 0's shared memory (slot c) by distributed shared memory, one cluster
// barrier a row (release, acquire), then warp 0 of block 0 merges the slots with merge_lane_states: the two-launch
// form's bits, so the choice by the call's size (all its clusters resident at once) keeps a row's result the same alone
// or in a batch. The grid is a whole number of clusters, each walking rows first, first + stride; slots double-buffered
// by parity (a block pushes into a parity's slots again two rows later, after the next row's barrier, which block 0
// reaches only after reading them).
constexpr std::int64_t kLseClusterMaxChunks = 16;
template <typename In, int kThreads, bool kGeneral>
__global__ void __launch_bounds__(kThreads, kLseMinThreadsPerSm<In> / kThreads)
    lse_chunks_cluster_kernel(const RowProblem p, std::int64_t chunks) {
  namespace cg = cooperative_groups;
  constexpr int kWarps = kThreads / 32;
  __shared__ float2 warp_state[2][kWarps];
  __shared__ float2 slots[2][kLseClusterMaxChunks];
  const cg::cluster_group cluster = cg::this_cluster();
  const int t = static_cast<int>(threadIdx.x);
  const auto c = static_cast<std::int64_t>(cluster.block_rank());
  const auto per = static_cast<unsigned>(chunks);  // 32-bit quotients (chunks ≤ 16)
  const std::int64_t first_row = blockIdx.x / per, stride = gridDim.x / per;
  const std::int64_t first = chunk_first(c);
  const int len = chunk_len(p.n, c);
  // A block may write into block 0's shared memory only once block 0 runs: this arrive, matched by the wait before the
  // first push, says so (split_row.cu cluster_split_rows does the same).
  cluster.barrier_arrive();
  bool started = false;
  int parity = 0;
  for (std::int64_t row = first_row; row < p.rows; row += stride, parity ^= 1) {
    const RowRef o{row, 0};
    const In* x = at<In>(p.x, o.off(p, kX)) + first * p.step[kX];
    const RunningLse s = lse_thread<In, kThreads, kGeneral>(x, len, p.step[kX], t, row_transform(p, o), first);
    if (!started) cluster.barrier_wait();
    started = true;
    lse_block_state<kWarps, kWarps>(s, warp_state[parity], [&](const ChunkState& st) {
      *cluster.map_shared_rank(&slots[parity][c], 0u) = make_float2(st.m, st.d);
    });
    cluster.sync();  // barrier.cluster.arrive (release) + wait (acquire): the pushes are visible to block 0
    if (c == 0 && t < 32) {
      const bool has = t < chunks;
      const ChunkState st = merge_lane_states(has, has ? slots[parity][t] : make_float2(0.0f, 0.0f));
      if (t == 0) write_row_stats(p, o, st);
    }
  }
  if (!started) cluster.barrier_wait();  // a cluster with no row: the opening arrive's wait
}
static_assert(kLseClusterMaxChunks <= kLseWarpMergeMaxChunks, "the cluster's merge gives each chunk a lane of a warp");

std::atomic<std::uint64_t>& lse_cluster_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}
std::atomic<std::uint64_t>& lse_warp_merge_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

// How many clusters of `blocks` blocks of lse_chunks_cluster_kernel the current device runs at once (0 below compute
// capability 9.0, or where the occupancy query refuses the size). Asked once per device and size, then read from a
// cache, as split_row.cu's active_clusters; each kernel asks for its own.
template <auto kKernel>
int lse_active_clusters(int blocks) {
  if (blocks < 1 || blocks > kLseClusterMaxChunks) return 0;
  const int dev = current_device();
  static std::atomic<int> known[kMaxDevices][kLseClusterMaxChunks + 1];  // cluster_launch.hpp's cache
  return cached_active_clusters(dev >= 0 && dev < kMaxDevices ? &known[dev][blocks] : nullptr, [&] {
    if (current_device_attrs().cc_major < 9) return 0;
    allow_large_clusters<kKernel>();
    // 0 where the size is refused: the two launches serve.
    return query_active_clusters(reinterpret_cast<const void*>(kKernel), 128, blocks);
  });
}

std::atomic<std::uint64_t>& lse_chunks_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

std::atomic<std::uint64_t>& lse_stream_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

// Every row unit-stride with its first element 16-byte aligned (the base and each row-map stride), no temperature nor
// mask: the kernels' plain form serves the call.
template <typename In>
bool lse_plain_call(const RowProblem& p) {
  if (p.step[kX] != 1 || p.scale || p.has_mask || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0) return false;
  for (int d = 0; d < p.map.rank; ++d)
    if (p.map.size[d] > 1 && (p.map.stride[kX][d] * static_cast<std::int64_t>(sizeof(In))) % 16 != 0) return false;
  return true;
}

// reg21 (session 20): f32's plain form (aligned unit-stride rows, no transform) of rows of at most
// kLseF32T128WideOccMaxN on the T128 configuration takes lse_block_kernel built for kLseF32T128WideOcc threads an SM:
// 40 registers, no spill, 12 blocks of 128 an SM where the 1024 kernel's 53 registers give 9 (ptxas -v and
// cudaFuncGetAttributes, CUDA 13.0, sm_90a; both the same code, a launch bound apart, so the same bits: a function of n
// and the configuration still, batch-invariant as before). Measured (H200, 2026-12-02, the lead's run of tune_reg20 on
// the tree of cf74f41, 240 MB memset before each timed launch, median of 31, 3 rounds, ratio @1536 / the 1024 kernel
// through the dispatcher, median (range)): logsumexp 65536×2048 0.925 (0.924-0.925), 16384×4096 0.962 (0.961-0.972),
// the state 16384×4096 0.967 (0.961-0.975); but 4096×16384 1.004 (1.001-1.013) and 8192×32000 1.039, so longer rows
// (4097..32768, 4097..16383 not timed) keep the 1024 kernel. The other bounds reg20 built lost everywhere and were
// removed: f32 T128 at 1280 threads an SM 0.970-1.032 (16384×4096 0.979, 4096×16384 1.032, 8192×32000 1.030,
// 65536×2048 0.970, the state 0.980), at 2048 1.10-1.19 (32 registers, spilled); f32 L16 at 1280 / 1536 / 2048
// (32768×1024) 1.038 / 1.066 / 1.255; 16-bit T128 at 1152 / 1280 and L16 at 1280 1.14-1.36 (spills in the chunk loop).
// Rows under 2048 on T128 (direct launcher calls only: the dispatcher sends them elsewhere) take it too, not timed. The
// general form and the 16-bit dtypes keep the 1024 kernels. lse_stream_wide_occ() = false forces the 1024 kernel
// (lse_rows_occ.hpp; tests and timing). Confirmed on the shipped rule (H200, 2026-12-02, the lead's integrated run of
// the tree of 85cae7c, reg21's tune_reg20, ratio auto / the 1024 kernel forced): logsumexp 65536×2048 0.921, 32768×3072
// 0.977 (first timing), 16384×4096 0.965, the state 0.923 / 0.978 / 0.967; 4097 and 6144 (the 1024 kernel both ways)
// 0.996-1.004; 1 and 64 rows 0.93-1.17 either way (5-8 µs, launch-bound; the same spread where both sides are the same
// kernel). Every output the forced kernel's bits.
constexpr std::int64_t kLseF32T128WideOccMaxN = 4096;
constexpr int kLseF32T128WideOcc = 1536;

std::atomic<std::uint64_t>& lse_wide_occ_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

template <typename In, bool kGeneral>
void launch_form(const RowProblem& p, LseStreamConfig c, cudaStream_t s) {
  if (c.lanes > 0) {
    const std::int64_t rows_per_block = (kLseWarpBlock / 32) * (32 / c.lanes);
    const unsigned grid = capped_grid((p.rows + rows_per_block - 1) / rows_per_block);
    lse_warp_kernel<In, 16, kGeneral><<<grid, kLseWarpBlock, 0, s>>>(p);
    SMK_CUDA_CHECK_LAUNCH("lse_warp_kernel");
  } else {
    const unsigned grid = capped_grid(p.rows);
    if constexpr (std::is_same_v<In, float> && !kGeneral) {
      if (p.n <= kLseF32T128WideOccMaxN && lse_stream_wide_occ()) {
        lse_block_kernel<In, 128, kGeneral, kLseF32T128WideOcc><<<grid, 128, 0, s>>>(p);
        SMK_CUDA_CHECK_LAUNCH("lse_block_kernel (1536 threads an SM)");
        lse_wide_occ_launches().fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    lse_block_kernel<In, 128, kGeneral><<<grid, 128, 0, s>>>(p);
    SMK_CUDA_CHECK_LAUNCH("lse_block_kernel");
  }
}

template <typename In>
void launch_typed(const RowProblem& p, LseStreamConfig c, cudaStream_t s) {
  if (lse_plain_call<In>(p)) launch_form<In, false>(p, c, s);
  else launch_form<In, true>(p, c, s);
  lse_stream_launches().fetch_add(1, std::memory_order_relaxed);
}

// The one-launch form where it serves (lse18): 16-bit rows (the dispatcher takes no f32 row here: softmax_cuda.cpp
// kLseChunksF32) at 128 threads a chunk (kLseChunkThreads16; 64, a test's setting, keeps two launches), 1..
// kLseClusterMaxChunks chunks, every cluster of the call resident at once (rows ≤ kLseClusterMaxWaves × the clusters of
// that size the device runs, as split_row's kSplitClusterMaxWaves). One wave, by lse18's run: at 64 rows of 151936 (64
// of the ~80 resident 13-block clusters) the one launch was even with the two (0.924 against the warp merge's 0.921 of
// session 17's two launches), so a call past one wave, which would also wait for its second wave, takes two launches.
// Returns whether it launched.
constexpr std::int64_t kLseClusterMaxWaves = 1;
template <typename In>
bool launch_cluster_typed(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  if constexpr (sizeof(In) != 2) {
    return false;
  } else {
    if (chunks < 1 || chunks > kLseClusterMaxChunks) return false;
    auto go = [&](auto kernel_tag) {
      constexpr auto kKernel = decltype(kernel_tag)::value;
      const int resident = lse_active_clusters<kKernel>(static_cast<int>(chunks));
      if (resident == 0 || p.rows > kLseClusterMaxWaves * resident) return false;
      launch_row_clusters<kKernel>(p, chunks, 128, s);
      return true;
    };
    if (lse_plain_call<In>(p))
      return go(std::integral_constant<decltype(&lse_chunks_cluster_kernel<In, 128, false>),
                                       &lse_chunks_cluster_kernel<In, 128, false>>{});
    return go(std::integral_constant<decltype(&lse_chunks_cluster_kernel<In, 128, true>),
                                     &lse_chunks_cluster_kernel<In, 128, true>>{});
  }
}

template <typename In, int kThreads>
void launch_chunks_typed(const RowProblem& p, std::int64_t chunks, ChunkState* states, cudaStream_t s) {
  const auto kernel =
      lse_plain_call<In>(p) ? lse_chunks_kernel<In, kThreads, false> : lse_chunks_kernel<In, kThreads, true>;
  kernel<<<capped_grid(p.rows * chunks), kThreads, 0, s>>>(p, chunks, states);
  SMK_CUDA_CHECK_LAUNCH("lse_chunks_kernel");
}

}  // namespace

void launch_lse_chunk_rows(const RowProblem& p, int threads, cudaStream_t s) {
  if (writes_rows(p.op))
    smk::throw_unsupported("softmax (lse_stream chunks)", "lse_stream computes logsumexp and the state only");
  if (threads != 64 && threads != 128)
    smk::throw_invalid_argument(p.op == Op::logsumexp ? "logsumexp (lse_stream chunks)"
                                                      : "softmax_state (lse_stream chunks)",
                                "threads", "64 or 128");
  if (p.rows == 0) return;
  const std::int64_t chunks = (p.n + kSplitChunk - 1) / kSplitChunk;
  const std::int64_t total = p.rows * chunks;
  const int form = lse_chunks_form_setting() >= 0 ? lse_chunks_form_setting() : kLseChunksForm;
  if (form >= kLseFormCluster && threads == 128 && total > 0) {
    bool launched = false;
    with_in_type(p.x_dtype, [&](auto* tag) {
      launched = launch_cluster_typed<std::remove_pointer_t<decltype(tag)>>(p, chunks, s);
    });
    if (launched) {
      lse_cluster_launches().fetch_add(1, std::memory_order_relaxed);
      lse_chunks_launches().fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  ScopedWorkspace ws(sizeof(ChunkState) * static_cast<std::size_t>(std::max<std::int64_t>(total, 1)), s);
  auto* states = static_cast<ChunkState*>(ws.get());
  if (total > 0) {
    with_in_type(p.x_dtype, [&](auto* tag) {
      using In = std::remove_pointer_t<decltype(tag)>;
      if (threads == 64) launch_chunks_typed<In, 64>(p, chunks, states, s);
      else launch_chunks_typed<In, 128>(p, chunks, states, s);
    });
  }
  if (form >= kLseFormWarpMerge && chunks <= kLseWarpMergeMaxChunks) {
    constexpr std::int64_t kRowsPerBlock = kLseWarpMergeThreads / 32;
    launch_dependent(total > 0, lse_chunks_merge_warp_kernel, capped_grid((p.rows + kRowsPerBlock - 1) / kRowsPerBlock),
                     kLseWarpMergeThreads, s, p, chunks, static_cast<const ChunkState*>(states));
    lse_warp_merge_launches().fetch_add(1, std::memory_order_relaxed);
  } else {
    launch_dependent(total > 0, lse_chunks_merge_kernel, capped_grid(p.rows), kSplitThreads, s, p, chunks,
                     static_cast<const ChunkState*>(states));
  }
  ws.release();
  lse_chunks_launches().fetch_add(1, std::memory_order_relaxed);
}

std::uint64_t lse_chunks_launch_count() { return lse_chunks_launches().load(std::memory_order_relaxed); }
std::uint64_t lse_chunks_cluster_launch_count() { return lse_cluster_launches().load(std::memory_order_relaxed); }
std::uint64_t lse_chunks_warp_merge_launch_count() {
  return lse_warp_merge_launches().load(std::memory_order_relaxed);
}

int& lse_chunks_form_setting() {
  static int form = -1;
  return form;
}

int& lse_chunk_threads_setting() {
  static int threads = 0;
  return threads;
}

void launch_lse_stream_rows(const RowProblem& p, LseStreamConfig c, cudaStream_t s) {
  if (writes_rows(p.op))
    smk::throw_unsupported("softmax (lse_stream rows)", "lse_stream computes logsumexp and the state only");
  if (!(c.lanes == 16 || (c.lanes == 0 && c.threads == 128)))
    smk::throw_invalid_argument(p.op == Op::logsumexp ? "logsumexp (lse_stream rows)" : "softmax_state (lse_stream rows)",
                                "config", "lanes 16, or lanes 0 with threads 128");
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch_typed<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

std::uint64_t lse_stream_launch_count() { return lse_stream_launches().load(std::memory_order_relaxed); }

bool& lse_stream_wide_occ() {
  static bool wide = true;
  return wide;
}

std::uint64_t lse_stream_wide_occ_launch_count() { return lse_wide_occ_launches().load(std::memory_order_relaxed); }

LseStreamLast& lse_stream_last_config() {
  static LseStreamLast last;
  return last;
}

}  // namespace smk::cuda::kernels
