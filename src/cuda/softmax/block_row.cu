// block_per_row and cluster_row: a row held in registers across one block (up to 512 threads × 24 elements =
// 12288; the wide block, up to 1024 threads × 32 = 32768) or across a thread-block cluster of up to 16 blocks on 16 SMs
// (196608 elements), so it is read once and written once. The blocks of a cluster exchange their partial max, then their partial sums, through distributed
// shared memory; every block combines the partials in the same fixed order, so all hold the same row state.
//
// Traffic per element: softmax / log-softmax 8 B (f32), 4 B (bf16); logsumexp / state 4 B / 2 B.
// Floor on the H200 at 4.27 TB/s: 4096×151936 f32 (4.98 GB) 1166 µs; 8192×32000 f32 492 µs; 16384×4096 f32 126 µs;
// 4096×16384 f32 126 µs; 32×128256 f32 (32.8 MB) 7.7 µs; 1×151936 f32 (1.2 MB) 0.28 µs (latency-bound).
// Measured (H200, 2026-11-29, docs/perf-notebook.md "Issue 3 kernels"): block_per_row 16384×4096 softmax f32
// 138 µs (91% of copy), bf16 128 µs (49%); cluster_row 8192×32000 f32 764 µs (64%), bf16 622 µs (40%);
// 4096×16384 f32 209 µs (60%). At 4096×151936 cluster_row moved only 1.89 TB/s (44%) against split_row's 2.36,
// so the dispatcher sends rows above 65536 to split_row; one 1×151936 row took 13.2 µs here (split_row: 16.6).
// The wide block (BlockConfig::wide; the same kernel for kWideBlockElems = 32 at __launch_bounds__(1024, 1): 64
// registers, spilling 20-32 B a thread in f32 and bf16, 88-136 B in f16, against 0-28 B for the 512-thread kernel;
// ptxas -v, CUDA 13.0, sm_90a) holds 12289..32768 in one block with no cluster barrier, as Triton does. Measured
// beside cluster_row (H200, 2026-11-30, commit 2feaa39, docs/bench/wideblock-2026-11-30.md), µs and % of copy (of read
// for logsumexp): 4096×16384 f32 softmax 142 (88 %; cluster_row 229), log-softmax 145 (87 %), logsumexp 88 (69 %),
// bf16 100 (63 %) / 103 / 82; 8192×32000 f32 583 (84 %; cluster_row 848) / 622 / 360 (66 %), bf16 555 (44 %) / 563 /
// 419 (28 %); 2048×24576 f32 125 (75 %) / 132 / 88, bf16 99 / 106 / 82. Floors: 2048×24576 f32 softmax 94 µs.
// The wide block staged (kStaged at 1024 × 32; BlockConfig::wide + staged: its next row bulk-copied into shared
// memory, 64 KB at 1024 16-bit threads, 128 KB in f32; ptxas -v: 64 registers, spilling 8-40 B in f32, 84-208 B in
// 16-bit): where a block is alone on its SM (above 512 threads, n > 16384) nothing else overlaps its loads. Measured
// beside the direct wide block (H200, 2026-11-30, bw16's run of e7a1abd, tune_softmax --bw16, µs direct → staged):
// 8192×32000 bf16 softmax 576 → 390, log-softmax 563 → 402, logsumexp 411 → 304 (f16 alike); f32 586 → 596 (slower),
// 623 → 577, 359 → 324; 2048×24576 bf16 99 → 90, 104 → 89, 80 → 70; f32 125 → 125, 133 → 121, 86 → 79; at 4096×16384
// (512 threads, two blocks an SM) slower staged in every case (bf16 softmax 99.8 → 104.4). Nsight Compute, 8192×32000
// bf16 softmax: DRAM 37 → 56 % busy, issue slots 46 → 69 %. The dispatcher stages it above 16384 for 16-bit rows and
// the f32 log ops (softmax_cuda.cpp wide_row_pipeline_pays); the bench then: 8192×32000 bf16 softmax 389 µs (63 % of
// copy), log-softmax 403; f32 log-softmax 575.
// Log-softmax / logsumexp count the max's ties for the excess state and form log l's terms with log_term_exp
// (common.cuh); the op class is a template parameter. Measured (H200, 2026-11-30, commit 050be25, docs/perf-notebook.md
// "log l's terms"): 16384×4096 f32 softmax 141 µs (89 % of copy), log-softmax 143 (88 %), logsumexp 103 (61 % of
// read); bf16 128 / 133 / 106; 8192×32000 f32 849 / 795 / 573, bf16 626 / 648 / 548.
// The row pipeline (kStaged, BlockConfig::staged): a persistent grid, each block bulk-copying its share of the next row
// into shared memory (row_stage.cuh; smem = threads × 24 × sizeof(In), 18 KB at 192 f32 threads) during the current
// row, and for the log ops one cluster exchange of block states a row. Measured beside the direct kernel (H200,
// 2026-11-30, tree of ff93dbb, tune_softmax --rowpipe, same configurations, µs direct → staged; docs/perf-notebook.md
// "row pipeline"): log-softmax 2048×65536 f32 516 → 442 (57 % of copy), bf16 477 → 338; 8192×32000 bf16 654 → 575, f32
// 804 → 811; logsumexp 2048×65536 f32 457 → 310, bf16 442 → 282, 8192×32000 f32 573 → 540 (43 % of read), bf16 549 →
// 485; softmax slower staged (8192×32000 f32 855 → 930, bf16 632 → 659; 16384×4096 f32 144 → 168). So the dispatcher
// stages only the log ops on clusters (softmax_cuda.cpp row_pipeline_pays). Nsight Compute at 8192×32000 (C7 × 192): 84
// clusters resident (4.5 blocks an SM, register-bound), DRAM 51 % busy (f32 softmax) and 34 % (bf16), an issue slot
// used 36 % (f32) to 50 % (bf16) of cycles: latency-bound, not bandwidth- or issue-bound; the staged softmax loses 6.6
// of its 18.7 cycles between issues to memory-barrier stalls.
// tier16 (2026-11-30): 16-bit softmax takes the 16-bit-output tier (common.cuh out_exp: SASS 17.4 → 10.4 an element,
// bf16) and the log ops log_term_exp_ftz (17.4 → 13.0) but in the f32 wide block (kLogFtz). Measured (H200, tier16's
// run of 77c64e6, softmaxkit bench, L2 flushed, median, old → new µs): bf16 softmax 8192×32000 387 → 321 (77 % of
// copy), 4096×16384 99.9 → 88.3, 16384×4096 127.6 → 122.1; f16 373 → 318, 100.5 → 86.2; bf16 logsumexp 8192×32000 306
// → 289, 4096×16384 82.8 → 76.3, 16384×4096 105.8 → 97.5; f32 logsumexp 16384×4096 103.4 → 94.0, log-softmax 144.1 →
// 136.6; bf16 log-softmax 8192×32000 400 → 412 (the staged wide block, kept for its logsumexp). f32 softmax and the f32
// wide block's log ops are the kernels before, instruction for instruction.
// mid16 (2026-11-30): block_per_row's 16-bit forward lane-staged (block_rows_lane_kernel, BlockConfig::lane_stages:
// the next row's share of each thread in shared memory by cp.async; the same bytes per element, 4 B softmax /
// log-softmax, 2 B logsumexp; floor at 4.27 TB/s for 2^26 bf16 elements: 62.9 µs, 31.4 µs read-only at 4.42). Measured
// (H200, mid16's run of c21f565, tune_softmax --mid16, direct → 1 row ahead, µs, bf16): softmax 16384×4096 124.1 →
// 98.7 (2.72 TB/s, 64 % of copy), 8192×8192 136.7 → 93.3 (67 %), 5461×12288 101.0 → 81.8 (77 %), 32768×2048 115.7 →
// 98.4; log-softmax 8192×8192 136.5 → 111.9; logsumexp 8192×8192 107.8 → 87.8 (35 % of read); slower for logsumexp at
// 2048-6144, log-softmax at 2048 and softmax at 1025 (the dispatcher keeps the direct kernel there: softmax_cuda.cpp
// block_lane_stages). 63-64 registers, no spill (ptxas -v, CUDA 13.0, sm_90a). 2 or 3 rows ahead timed no faster than
// 1: past one row ahead the bytes in flight no longer limit these rows (what does was not profiled).
// fwd16 (session 7, 2026-11-30): the lane-staged kernel on by default (its bitwise test walked more rows than any
// persistent grid, memcheck clean), and the 16-bit log ops' terms by log_term_exp16 (common.cuh: SASS 11.9 → 6.9 an
// element in the exp window, E = 24 and 32; f32 kernels and softmax SASS-identical). Measured (H200, fwd16's run of
// a7b007d, softmaxkit bench, L2 flushed, median, µs old (3809204) → new; docs/bench/fwd16-s7-2026-11-30.md): bf16
// softmax 16384×4096 122.7 → 94.8 (2.83 TB/s, 67 % of copy), 8192×8192 136.7 → 91.7, 5461×12288 100.8 → 79.5 (79 %),
// 32768×2048 115.1 → 96.7; log-softmax 16384×4096 129.0 → 101.7, 8192×8192 138.0 → 96.3, 5461×12288 106.5 → 83.8;
// logsumexp 16384×4096 98.8 → 91.7, 8192×8192 112.1 → 72.4 (1.85 TB/s, 41 % of read), 5461×12288 84.3 → 63.2; the
// wide block's logsumexp 4096×16384 76.0 → 68.5, 8192×32000 286.0 → 259.8 (2.02 TB/s), log-softmax 8192×32000 412.7 →
// 386.0. f32 unchanged (within 1.5 %).
// blk17 (session 17, 2026-12-01): the lane-staged kernel built for f32 rows too (block_rows_lane_kernel<float, void,
// kLog>: 62-64 registers, no spill, (stages + 1) × 96 B of shared memory a thread; the same 8 B an element, floor at
// the measured 4.24 TB/s copy 126.6 µs for 2^26 f32 elements, 140.6 at 90 %). Measured (H200, blk17's run of 966460c's
// tree, tune_softmax --blk17, µs direct → one row ahead, 3 alternating rounds, same bits): softmax 8192×8192 163.8 →
// 151.0 (83 % of copy), log-softmax 162.1 → 149.8; 6553×10240 156.9 → 153.6 / 154.8 → 152.4; slower at 2048-6144
// (1.10-1.19×: the direct kernel is at 87-90 % of copy there) and at 12288 (1.02 / 1.08×). The dispatcher takes it
// for f32 softmax / log-softmax of 7168..11264 (softmax_cuda.cpp kLaneFromNF32 / kLaneMaxNF32).
// mid8 (session 8, 2026-11-30): logsumexp and the state with their next rows' loads in flight in registers
// (block_rows_ahead_kernel, BlockConfig::ahead 1-2) or read twice, the row held in no register across a barrier
// (block_rows_reread_kernel, ahead = kAheadReread); both bitwise the direct kernel. Traffic: the row read once (the
// re-read hits L1 / L2), 4 B (f32) / 2 B (16-bit) an element, 4-8 B a row written; floor at the read ceiling (4.51
// TB/s, session 7's run): 4096×16384 f32 (268 MB) 59.5 µs, bf16 29.8; 90 % of read: 66 / 33 µs. Registers (ptxas,
// CUDA 13.0, sm_90a): ahead f32 E = 32 106 (two rows 128, 16 B of stack), E = 24 92, 16-bit 90-104; re-read 40 (f32
// E = 32 24 B of stack). Predicted: f32 4096×16384 87.5 → ~70 µs, bf16 68.7 → ~50. Measured (H200, mid8's runs of
// 6c36e33 and 4f17e5c, tune_softmax --mid8, µs direct → ahead1 / reread; docs/bench/mid8-s8-2026-11-30.md): f32
// 4096×16384 85.7 → 107.7 / 111.8 (slower: one block an SM, issue slots 68 → 49 % busy), 8192×8192 105.1 → 146.2 /
// 92.8, 16384×4096 94.6 → 110.2 / 96.0; bf16 4096×16384 67.2 → 62.4 / 63.8, 16384×4096 86.9 → 100.8 / 72.1, 8192×8192
// 101.7 → 134.5 / 72.1 (lane-staged 76.2), 5461×12288 75.1 → 70.6 / 68.6 (lane-staged 65.3). The dispatcher takes the
// re-read kernel for 16-bit rows of 1537..10240 and f32 of 6145..10240, one row ahead for 16-bit 12289..16384
// (softmax_cuda.cpp block_ahead_rows); f32 4096×16384 stays direct at 85 µs (target 67: missed).
// mid9 (session 9, 2026-11-30): the re-read kernel for the f32 wide block's rows in four parts with log_term_exp_ftz's
// terms, any layout (block_rows_reread_kernel<float, 32, 4, true, true>, BlockConfig::ahead = kAheadReread4, both
// removed after the session's review: the code is in commit 625272c): 40
// registers, no spill (mid8's two halves: 24 B of stack), three 512-thread blocks an SM. Traffic the same 4 B an
// element read; floor 59.5 µs at 4096×16384. Predicted ~66 µs; measured (H200, mid9's run of c16e5c4, tune_softmax
// --mid9, median µs; docs/bench/mid9-s9-2026-11-30.md) logsumexp 4096×16384 direct 85.6 / 85.3, mid8's re-read 111.9,
// four parts 101.4; the state 84.7 / 84.4, 110.9, 100.2: slower, not dispatched (target 67 still missed; why the
// re-read kernels lose here while Triton's, structured alike, takes 63 µs was not profiled in this run).
#include <cooperative_groups.h>

#include <atomic>

#include "cuda/device_attrs.hpp"
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/row_stage.cuh"

namespace smk::cuda::kernels {

namespace {

namespace cg = cooperative_groups;
constexpr int kMaxThreads = 512;  // 2 blocks of ≤ 64 registers per thread fit an SM: one loads while one reduces

// The cluster-wide combination of one float per block (`slot` in each block's shared memory), in rank order:
// lane r of every warp reads block r's value, then a butterfly over the warp. Called by every thread.
__device__ __forceinline__ float cluster_max(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : -detail::inf_<float>();
  return group_max(v, 32);
}
__device__ __forceinline__ float cluster_sum(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0.0f;
  return group_sum(v, 32);
}

__device__ __forceinline__ int cluster_count(int* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const int v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0;
  return group_count(v, 32);
}

// The merged row state of a cluster's block states (`parts`, one per block, in each block's shared memory): lane r
// of warp 0 reads block r's, the warp merges them by an xor butterfly (merge is symmetric and bitwise commutative,
// so the tree depends on the cluster size alone), and lane 0 hands the result to the block through `out`. Called by
// every thread; returns after a block barrier.
__device__ __forceinline__ OnlineSoftmaxState<float> cluster_state(float2* parts, float2* out, int cluster) {
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    auto s = OnlineSoftmaxState<float>::empty();
    if (lane < cluster) {
      const float2 f = *cg::this_cluster().map_shared_rank(parts, lane);
      s = OnlineSoftmaxState<float>::from_fields(f.x, f.y);
    }
    s = group_merge(s, 32);
    if (lane == 0) *out = make_float2(s.m, s.d);
  }
  __syncthreads();
  const float2 f = *out;
  return OnlineSoftmaxState<float>::from_fields(f.x, f.y);
}

// A row's last step on block_per_row, both kernels: logsumexp and the state write the row's statistics from the
// block's (cluster's) first thread; softmax and log-softmax normalise the thread's elements and store them. g, G: the
// thread's index among the threads that share the row, and their number.
template <typename Tile, typename Out, typename In, bool kLog, int E, typename State>
__device__ __forceinline__ void finish_row(const RowProblem& p, const RowRef& o, float (&v)[E], const State& state, int g,
                                           int G) {
  if (!writes_rows(p.op)) {
    if (g == 0) write_row_stats(p, o, state);
    return;
  }
  finish_rows(v, state.normalizer(p.empty_rows), kLog ? Op::log_softmax : Op::softmax);
  with_out<Out, In>(p, [&](auto* tag) {
    using O = std::remove_pointer_t<decltype(tag)>;
    Tile::template store<O>(at<O>(p.out, o.off(p, kOut)), v, p.n, p.step[kOut], g, G);
  });
}

// kLog: log-softmax, logsumexp or the state (log l) rather than softmax (1/l); a template parameter for the reason
// warp_row.cu gives. kStaged: the row pipeline (BlockConfig::staged) — the grid is persistent, and each block bulk-
// copies its share of its next row into shared memory (row_stage.cuh) right after the current row's first block
// barrier, so that load is in flight while the current row is reduced, exchanged and written; the log ops of a
// cluster exchange one state per block (max, ties and the rest's sum folded into (m, d), merged in a fixed tree)
// through one cluster barrier instead of the max and then the sum through two. Softmax keeps the two exchanges: its
// terms must be exp_diff against the row's max, which a block knows only after the first.
// kElems, kThreads, kMinBlocks: elements a thread holds and the launch bounds — kBlockElems at up to 512 threads, two
// blocks an SM (block_per_row up to 12288, cluster_row), or the wide block's kWideBlockElems at up to 1024 threads,
// one block an SM (block_per_row up to 32768; never staged nor clustered). Both get 64 registers a thread.
// Out: softmax's output type, known at compile time (common.cuh out_exp: 16-bit outputs take the plain exponential);
// void for the log ops, whose output type is read from p at the store.
// kShift (odd21, session 21): RowTile's loads and stores of unit-stride rows off the 16-byte boundary (common.cuh
// load_shifted / store_shifted); a second instance that launch() takes only for such calls (rows_off_boundary), since
// the code it adds cost the aligned calls of the wide block 3.3-3.7 % (bf16 8192×32000 softmax 319.3 → 331.1 µs,
// log-softmax 384.4 → 396.9; the s21c run) when every call took it.
template <typename In, typename Out, bool kLog, bool kStaged, int kElems = kBlockElems, int kThreads = kMaxThreads,
          int kMinBlocks = 2, bool kShift = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks) block_rows_kernel(const RowProblem p, int cluster) {
  using Tile = RowTile<In, kElems, kShift>;
  using Stage = RowStage<In, kElems>;
  // The log ops' terms by log_term_exp_ftz (common.cuh thread_log_rest, as warp_per_row since warpdiet), except in the
  // f32 wide block, where log_term_exp stays: measured (H200, 2026-11-30, tier16's run of 77c64e6, µs old → ftz) f32
  // 16384×4096 (512 threads) logsumexp 103.4 → 94.0, log-softmax 144.1 → 136.6, bf16 105.8 → 97.5 and 133.7 → 127.7,
  // 8192×32000 bf16 logsumexp 306 → 289; but the f32 wide block staged spilled 8 → 60 B and its log-softmax at
  // 8192×32000 went 581 → 671.
  constexpr bool kLogFtz = sizeof(In) == 2 || kElems != kWideBlockElems;
  __shared__ float red_max[32], red_sum[32];
  __shared__ int red_ties[32];
  __shared__ float part_max, part_sum;  // this block's partials, read by the whole cluster
  __shared__ int part_ties;
  __shared__ float2 part_state[2];      // kStaged log ops: this block's state, double-buffered by row parity
  __shared__ float2 row_state;          // ... and the merged one, from warp 0 to the block
  __shared__ alignas(8) std::uint64_t stage_bar;
  __shared__ typename Stage::Plan stage_plan;
  extern __shared__ __align__(16) unsigned char block_stage[];  // kStaged: Stage::bytes(blockDim.x)
  In* const stage = reinterpret_cast<In*>(block_stage);
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int g = rank * T + t, G = cluster * T;
  const std::int64_t first = blockIdx.x / cluster, stride = gridDim.x / cluster;
  // Thread 0 finds the next row where registers are free (before the row's loads) and leaves it in shared memory for
  // the copy it issues after the block barrier, where the row's elements are live: null when there is none or it
  // cannot be staged.
  __shared__ NextRow<In, kElems, 1> next;  // row_stage.cuh
  auto find_next = [&](std::int64_t row) {
    const In* x = row < p.rows ? at<In>(p.x, RowRef{row, 0}.off(p, kX)) : nullptr;
    next.leave({x != nullptr && Stage::stageable(x, p.step[kX]) ? x : nullptr});
  };
  auto issue_next = [&] { next.issue({stage}, &stage_bar, &stage_plan, T); };
  std::uint32_t parity = 0;  // kStaged: the stage barrier's phase the next staged row completes
  if constexpr (kStaged) {
    if (t == 0) {
      Stage::init(&stage_bar);
      Stage::plan(&stage_plan, static_cast<int>(p.n), rank * T, T, G);
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
    float v[kElems];
    const In* x = at<In>(p.x, o.off(p, kX));
    if constexpr (kStaged) {
      if (t == 0) find_next(row + stride);
      if (Stage::stageable(x, p.step[kX])) {
        Stage::wait(&stage_bar, parity);
        parity ^= 1u;
        Stage::load(v, stage, x, static_cast<int>(p.n), g, G, t, T);
      } else {
        Tile::load(v, x, p.n, p.step[kX], g, G);
      }
    } else {
      Tile::load(v, x, p.n, p.step[kX], g, G);
    }
    Tile::transform(v, row_transform(p, o), p.n, g, G);

    float m = block_max(tree_max<kElems>(v), red_max);
    if constexpr (kStaged) {
      // Every thread has read the stage (block_max's barrier): thread 0 refills it with the next row.
      if (t == 0) issue_next();
    }
    constexpr bool count_ties = kLog;
    OnlineSoftmaxState<float> state;
    if (kStaged && kLog && cluster > 1) {
      // One exchange: this block's own state (its max, ties and rest), merged across the cluster.
      int ties = 0;
      const float shift = OnlineSoftmaxState<float>::shift_for(m);
      float rest = kLogFtz ? thread_log_rest_in<In>(v, shift, ties) : thread_exp_rest(v, shift, false, true, ties);
      rest = block_sum(rest, red_sum);
      ties = block_count(ties, red_ties);
      const auto mine = state_from(m, ties, rest, true);
      float2* slot = &part_state[iter & 1];
      if (t == 0) *slot = make_float2(mine.m, mine.d);
      cg::this_cluster().sync();
      // A block rewrites this slot two rows later, after the next row's cluster barrier, which every block reaches
      // only after reading it here.
      state = cluster_state(slot, &row_state, cluster);
    } else {
      if (cluster > 1) {
        if (threadIdx.x == 0) part_max = m;
        cg::this_cluster().sync();
        m = cluster_max(&part_max, cluster);
      }
      const float shift = OnlineSoftmaxState<float>::shift_for(m);
      int ties = 0;
      // The log ops' terms from log_term_exp_ftz (kLogFtz), softmax's from out_exp by the output type.
      float rest;
      if constexpr (kLog && kLogFtz) rest = thread_log_rest_in<In>(v, shift, ties);
      else rest = thread_exp_rest<Out>(v, shift, !count_ties, count_ties, ties);
      rest = block_sum(rest, red_sum);
      if (count_ties) ties = block_count(ties, red_ties);  // red_ties is reused like red_sum (below)
      if (cluster > 1) {
        if (threadIdx.x == 0) {
          part_sum = rest;
          part_ties = ties;
        }
        cg::this_cluster().sync();
        rest = cluster_sum(&part_sum, cluster);
        if (count_ties) ties = cluster_count(&part_ties, cluster);
      }
      // Shared memory reuse: red_max is rewritten next row only after this row's block_sum barrier, red_sum and
      // red_ties after the next row's block_max barrier; part_* only after the next cluster barrier.
      state = state_from(m, ties, rest, count_ties);
    }
    finish_row<Tile, Out, In, kLog>(p, o, v, state, g, G);
  }
  // A block's shared memory must outlive every remote read of it.
  if (cluster > 1) cg::this_cluster().sync();
}

// The direct kernel's cluster-1 row reductions (block_rows_kernel), step for step, for the kernels whose bits must
// equal its own (the lane-staged and rows-ahead kernels): the block's max, each thread's terms (the log ops' from
// log_term_exp_ftz where kLogFtz, else thread_exp_rest's, softmax keeping its exponentials in v for the output), the
// block's sum and, for the log ops, its count of ties. The caller forms the state (state_from) where it needs it, so
// that a kernel which writes only thread 0's state forms it there.
struct BlockRowSums {
  float m, rest;
  int ties;
};
template <bool kLog, bool kLogFtz, typename Out, typename In, int E>
__device__ __forceinline__ BlockRowSums block_row_sums(float (&v)[E], float* red_max, float* red_sum, int* red_ties) {
  const float m = block_max(tree_max<E>(v), red_max);
  const float shift = OnlineSoftmaxState<float>::shift_for(m);
  int ties = 0;
  float rest;
  if constexpr (kLog && kLogFtz) rest = thread_log_rest_in<In>(v, shift, ties);
  else rest = thread_exp_rest<Out>(v, shift, !kLog, kLog, ties);
  rest = block_sum(rest, red_sum);
  if (kLog) ties = block_count(ties, red_ties);
  return {m, rest, ties};
}

// block_per_row's 16-bit forward with its next rows in flight (BlockConfig::lane_stages, mid16): the direct kernel's
// row (kBlockElems a thread, the same threads, the same trees: bitwise its outputs) but read from shared memory, where
// each thread copies its own share (row_stage.cuh LaneStage, cp.async, no barrier) of the block's rows `stages` ahead
// of the one it reduces. Why: the direct kernel has a row's loads in flight only between its start and its first
// reduction, 48 B a thread in 16-bit (half f32's 96 B), and the 64 registers of two 512-thread blocks an SM cap the
// threads at 1024 an SM: at most ~40 KB in flight an SM at n = 2048..8192 (n = 8192: 352 threads, two blocks; 2048:
// 96 threads, ten blocks), and only while a block is in its load phase, where Little's law wants 4.3 TB/s / 132 SMs ×
// ~1-2 µs ≈ 33-65 KB all the time. Staged, a block keeps `stages` rows in flight through its reductions and stores,
// and shared memory, not registers, holds them: (stages + 1) × 48 B a thread (the slot read last row is refilled, so
// no copy ever writes a slot whose values are still being read). A persistent grid walks rows first, first + grid, ...
template <typename In, typename Out, bool kLog>
__global__ void __launch_bounds__(kMaxThreads, 2) block_rows_lane_kernel(const RowProblem p, int stages) {
  using Lane = LaneStage<In, kBlockElems>;
  using Tile = typename Lane::Tile;
  using Vec = typename Lane::Vec;
  constexpr int E = kBlockElems, K = Lane::K;
  __shared__ float red_max[32], red_sum[32];
  __shared__ int red_ties[32];
  extern __shared__ __align__(16) unsigned char lane_stage[];  // (stages + 1) slots of K × T vectors
  Vec* const stage = reinterpret_cast<Vec*>(lane_stage);
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(p.n), slots = stages + 1;
  const std::int64_t stride = gridDim.x;
  // One commit group a row, empty past the last, so that "this row's copy is done" is always "all but the `stages`
  // latest groups are".
  auto fetch = [&](std::int64_t row, int slot) {
    if (row < p.rows)
      Lane::fetch(stage + slot * K * T, at<In>(p.x, RowRef{row, 0}.off(p, kX)), n, p.step[kX], t, T, t, T,
                  -detail::inf_<float>());
    __pipeline_commit();
  };
  std::int64_t row = blockIdx.x;
  for (int i = 0; i < stages; ++i) fetch(row + i * stride, i);
  int cur = 0;
  for (; row < p.rows; row += stride) {
    const RowRef o{row, 0};
    // The row `stages` ahead goes to the slot read last row (its values were used before that row's barriers).
    fetch(row + stages * stride, cur == 0 ? stages : cur - 1);
    if (stages == 1) __pipeline_wait_prior(1);
    else if (stages == 2) __pipeline_wait_prior(2);
    else __pipeline_wait_prior(3);
    float v[E];
    Lane::read(v, stage + cur * K * T, t, T);
    cur = cur + 1 == slots ? 0 : cur + 1;
    Tile::transform(v, row_transform(p, o), p.n, t, T);
    const BlockRowSums r = block_row_sums<kLog, true, Out, In>(v, red_max, red_sum, red_ties);
    const auto state = state_from(r.m, r.ties, r.rest, kLog);
    finish_row<Tile, Out, In, kLog>(p, o, v, state, t, T);
  }
  __pipeline_wait_prior(0);  // (only empty groups remain; no copy outlives the block)
}

// logsumexp and the state on block_per_row with the next rows' loads in flight (BlockConfig::ahead, mid8): the direct
// kernel's cluster-1 row (the same threads, elements, trees and terms: bitwise its results) on a persistent grid, each
// thread loading its share of the block's next `kAhead` rows into registers before it reduces the current one. Why:
// these ops store nothing, so nothing but the block's own two barriers orders a row after the last; the direct kernel
// has a row's loads in flight only until its first reduction (a block a row, one wave of 4096×16384 f32 at two 512-
// thread blocks an SM), and a block alone on an SM then waits on its barriers with nothing in flight. Here a block
// keeps kAhead rows' loads (kAhead × E × sizeof(In) bytes a thread: 128 B for f32 at E = 32) in flight through the
// current row's reductions. The registers pay: 64 (f32, E = 32, one row ahead) more a thread, so at most 512 threads a
// block (kAheadMaxThreads; __launch_bounds__(512, 1): up to 128 registers), where the wide block at 1024 threads has 64.
// A thread whose slots are not all full 16-byte vectors of an aligned unit-stride row (a ragged end, an unaligned or
// strided row) loads that row at its use through RowTile::load, as the direct kernel does: the values are the same.
template <typename In, int kElems, int kAhead>
__global__ void __launch_bounds__(kAheadMaxThreads, 1) block_rows_ahead_kernel(const RowProblem p, bool evict_first) {
  using Tile = RowTile<In, kElems>;
  using Vec = typename Tile::Vec;
  constexpr int E = kElems, K = Tile::K, V = Tile::V;
  static_assert(sizeof(Vec) == sizeof(uint4), "the loads in flight are 16-byte vectors");
  // The direct kernel's choice of terms (block_rows_kernel kLogFtz), so that the bits are its own.
  constexpr bool kLogFtz = sizeof(In) == 2 || kElems != kWideBlockElems;
  __shared__ float red_max[32], red_sum[32];
  __shared__ int red_ties[32];
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(p.n);
  const std::int64_t stride = gridDim.x;
  // RowTile::load's fast path for this thread: every slot a full vector (the row's alignment is checked per row).
  const bool full_slots = p.step[kX] == 1 && Tile::index(K - 1, t, T) + V <= n;
  uint4 w[kAhead][K];
  bool held[kAhead];
  auto fetch = [&](uint4 (&buf)[K], bool& ok, std::int64_t row) {
    ok = false;
    if (row >= p.rows || !full_slots) return;
    const In* x = at<In>(p.x, RowRef{row, 0}.off(p, kX));
    if (reinterpret_cast<std::uintptr_t>(x) % sizeof(Vec) != 0) return;
    const uint4* q = reinterpret_cast<const uint4*>(x) + t;
    if (evict_first) {
#pragma unroll
      for (int k = 0; k < K; ++k) buf[k] = __ldcs(q + k * T);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) buf[k] = q[k * T];
    }
    ok = true;
  };
  std::int64_t row = blockIdx.x;
#pragma unroll
  for (int b = 0; b < kAhead; ++b) fetch(w[b], held[b], row + b * stride);
  while (row < p.rows) {
#pragma unroll
    for (int b = 0; b < kAhead; ++b) {  // buffer b holds the row; unrolled, so w[b] stays in registers
      if (row >= p.rows) break;
      const RowRef o{row, 0};
      float v[E];
      if (held[b]) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          Vec u;
          static_assert(sizeof(u) == sizeof(w[b][k]));
          memcpy(&u, &w[b][k], sizeof(u));
#pragma unroll
          for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(u.v[j]);
        }
      } else {
        Tile::load(v, at<In>(p.x, o.off(p, kX)), p.n, p.step[kX], t, T);
      }
      // The buffer is free: the row kAhead strides on goes there, in flight through this row's barriers.
      fetch(w[b], held[b], row + kAhead * stride);
      Tile::transform(v, row_transform(p, o), p.n, t, T);
      const BlockRowSums r = block_row_sums<true, kLogFtz, void, In>(v, red_max, red_sum, red_ties);
      if (t == 0) write_row_stats(p, o, state_from(r.m, r.ties, r.rest, true));
      row += stride;
    }
  }
}

// logsumexp and the state with the row read twice and held nowhere (BlockConfig::ahead = kAheadReread, mid8): what
// torch.compile's Triton kernel does (Nsight Compute, mid8's run: a block of 512 threads a row, 40 registers, three
// blocks an SM; a loop for the max, then a loop that reads the row again, from L1 and L2, for the sum; DRAM 90 % busy
// at f32 4096×16384 against the direct kernel's 69 %, whose 64 registers of row a thread allow two blocks an SM). Here
// the direct kernel's threads, elements, trees and terms (bitwise its results): the thread's slots are loaded for the
// max, then loaded again for the terms, so the row is never live in registers across a barrier, and the launch bound
// asks for three 512-thread blocks an SM (40 registers). The slots come in two halves (tree_max / tree_sum over E
// split at E/2 are the same trees) but for 16-bit E = 24, whose three vectors do not halve. Only for aligned unit-stride rows with no temperature
// or mask (the dispatcher checks; others keep the direct kernel, which gives the same bits).
// kFtz: the direct kernel's terms (block_rows_kernel's kLogFtz: log_term_exp_ftz's where it takes them). kParts: the
// trees over E split at E/kParts are tree_max / tree_sum's own (E a power of two, or kParts ≤ 2 with E/2 whole
// vectors), combined as tree_max<kParts> / tree_sum<kParts>. (mid9's instantiation in four parts for the f32 wide
// block, on any row layout, was slower than the direct kernel and was removed after the session's review (F16): its
// code is in commit 625272c.)
template <typename In, int kElems, int kParts, bool kFtz>
__global__ void __launch_bounds__(kAheadMaxThreads, 3) block_rows_reread_kernel(const RowProblem p) {
  using Tile = RowTile<In, kElems>;
  using Vec = typename Tile::Vec;
  constexpr int E = kElems, K = Tile::K, V = Tile::V;
  constexpr int KP = K / kParts, EP = E / kParts;
  static_assert(K % kParts == 0, "parts of whole vectors");
  static_assert(kParts <= 2 || (E & (E - 1)) == 0, "four parts are the tree's own subtrees only for E a power of two");
  __shared__ float red_max[32], red_sum[32];
  __shared__ int red_ties[32];
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(p.n);
  // Slots [part·KP, part·KP + KP) of the thread, as RowTile::load reads them (pad −inf past n); the row is unit-stride
  // and 16-byte aligned (reread_fits).
  auto load_part = [&](float (&v)[EP], const In* x, int part) {
#pragma unroll
    for (int kk = 0; kk < KP; ++kk) {
      const int i0 = Tile::index(part * KP + kk, t, T);
      if (i0 + V <= n) {
        const Vec w = *reinterpret_cast<const Vec*>(x + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) v[kk * V + j] = to_f32(w.v[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          v[kk * V + j] = i0 + j < n ? to_f32(x[i0 + j]) : -detail::inf_<float>();
      }
    }
  };
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const RowRef o{row, 0};
    const In* x = at<In>(p.x, o.off(p, kX));
    float mx[kParts];
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      float v[EP];
      load_part(v, x, part);
      mx[part] = tree_max<EP>(v);
    }
    const float m = block_max(tree_max<kParts>(mx), red_max);
    const float shift = OnlineSoftmaxState<float>::shift_for(m);
    int ties = 0;
    float rs[kParts];
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      float v[EP];
      load_part(v, x, part);  // again: from L1 or L2 (the barrier above keeps the compiler from reusing registers)
      if constexpr (kFtz) rs[part] = thread_log_rest_in<In>(v, shift, ties);
      else rs[part] = thread_exp_rest<void>(v, shift, false, true, ties);
    }
    float rest = block_sum(tree_sum<kParts>(rs), red_sum);
    ties = block_count(ties, red_ties);
    if (t == 0) write_row_stats(p, o, state_from(m, ties, rest, true));
  }
}

std::atomic<std::uint64_t>& ahead_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}
std::atomic<std::uint64_t>& reread_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}
std::atomic<std::uint64_t>& lane_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

template <typename In, int kElems>
void launch_ahead(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  if (c.ahead == kAheadReread) {
    // mid8's kernel: two halves where the slots split into whole vectors, the direct kernel's terms, aligned rows.
    constexpr int K = RowTile<In, kElems>::K;
    constexpr bool kDirectFtz = sizeof(In) == 2 || kElems != kWideBlockElems;  // block_rows_kernel kLogFtz
    const auto reread = block_rows_reread_kernel<In, kElems, K % 2 == 0 ? 2 : 1, kDirectFtz>;
    reread<<<capped_grid(p.rows), c.threads, 0, s>>>(p);
    SMK_CUDA_CHECK_LAUNCH("block_rows_reread_kernel");
    reread_launches().fetch_add(1, std::memory_order_relaxed);
    return;
  }
  constexpr auto one = block_rows_ahead_kernel<In, kElems, 1>;
  constexpr auto two = block_rows_ahead_kernel<In, kElems, 2>;
  const auto kernel = c.ahead >= 2 ? two : one;
  const unsigned grid = persistent_grid(kernel, c.threads, 0, p.rows);
  kernel<<<grid, c.threads, 0, s>>>(p, c.evict_first);
  SMK_CUDA_CHECK_LAUNCH("block_rows_ahead_kernel");
  ahead_launches().fetch_add(1, std::memory_order_relaxed);
}

template <typename In>
void launch_lane(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  // Softmax's output type as launch() picks it (the direct kernel's bits): a 16-bit output (In itself) the plain tier;
  // f32 rows always exp_diff with the output type read at the store (Out = void).
  constexpr auto softmax_kernel = block_rows_lane_kernel<In, void, false>;
  constexpr auto softmax_out_kernel = block_rows_lane_kernel<In, std::conditional_t<sizeof(In) == 2, In, void>, false>;
  constexpr auto log_kernel = block_rows_lane_kernel<In, void, true>;
  const auto kernel = p.op != Op::softmax           ? log_kernel
                      : p.out_dtype == DType::f32 ? softmax_kernel
                                                  : softmax_out_kernel;
  constexpr std::size_t per_slot = LaneStage<In, kBlockElems>::bytes_per_thread;
  const int stages = std::clamp(c.lane_stages, 1, kMaxLaneStages);
  static DeviceOnce attributes;
  attributes.run([&] {
    for (const auto k : {softmax_kernel, softmax_out_kernel, log_kernel}) {
      SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>((kMaxLaneStages + 1) * per_slot * kMaxThreads)));
      // The persistent grid is sized by the occupancy query, which assumes the largest carveout: ask for it, so that
      // every block the grid counts on is resident (L1 caches nothing these kernels reread).
      SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          cudaSharedmemCarveoutMaxShared));
    }
  });
  const std::size_t smem = static_cast<std::size_t>(stages + 1) * per_slot * static_cast<std::size_t>(c.threads);
  const unsigned grid = persistent_grid(kernel, c.threads, smem, p.rows);
  kernel<<<grid, c.threads, smem, s>>>(p, stages);
  SMK_CUDA_CHECK_LAUNCH("block_rows_lane_kernel");
  lane_launches().fetch_add(1, std::memory_order_relaxed);
}

template <typename In, bool kStaged, int kElems = kBlockElems, int kThreads = kMaxThreads, int kMinBlocks = 2>
void launch(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  // Softmax's output type picks its exponential (common.cuh out_exp): a 16-bit output (In itself) the plain tier;
  // an f32 one exp_diff with the output type read at the store (Out = void: the kernel before the tier).
  // odd21: 16-bit calls with rows off the 16-byte boundary take the kShift instances (the same bits).
  constexpr bool kShiftBuilt = kShiftDefault<In>;
  constexpr auto softmax_kernel = block_rows_kernel<In, void, false, kStaged, kElems, kThreads, kMinBlocks>;
  constexpr auto softmax_out_kernel =
      block_rows_kernel<In, std::conditional_t<sizeof(In) == 2, In, void>, false, kStaged, kElems, kThreads, kMinBlocks>;
  constexpr auto log_kernel = block_rows_kernel<In, void, true, kStaged, kElems, kThreads, kMinBlocks>;
  constexpr auto softmax_shift_kernel =
      block_rows_kernel<In, void, false, kStaged, kElems, kThreads, kMinBlocks, kShiftBuilt>;
  constexpr auto softmax_out_shift_kernel = block_rows_kernel<In, std::conditional_t<sizeof(In) == 2, In, void>, false,
                                                              kStaged, kElems, kThreads, kMinBlocks, kShiftBuilt>;
  constexpr auto log_shift_kernel = block_rows_kernel<In, void, true, kStaged, kElems, kThreads, kMinBlocks, kShiftBuilt>;
  const bool shift = kShiftBuilt && call_off_boundary(p, sizeof(In));
  const auto kernel = p.op != Op::softmax           ? (shift ? log_shift_kernel : log_kernel)
                      : p.out_dtype == DType::f32 ? (shift ? softmax_shift_kernel : softmax_kernel)
                                                  : (shift ? softmax_out_shift_kernel : softmax_out_kernel);
  const std::size_t smem = kStaged ? RowStage<In, kElems>::bytes(c.threads) : 0;
  static DeviceOnce attributes;  // per In and kStaged; clusters of more than 8 blocks are an H100/H200 extension
  attributes.run([&] {  // every instantiation at once: one DeviceOnce serves each op and output type
    for (const auto k : {softmax_kernel, softmax_out_kernel, log_kernel, softmax_shift_kernel, softmax_out_shift_kernel,
                         log_shift_kernel}) {
      if (current_device_attrs().cc_major >= 9)  // no clusters below Hopper: leave the attribute alone there
        SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      if (kStaged)
        SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(RowStage<In, kElems>::bytes(kThreads))));
    }
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
  // Staged: a persistent grid, each cluster walking rows first, first + clusters, ... so that it always has a next
  // row to stage. Direct: one cluster per row.
  const std::int64_t clusters =
      kStaged ? std::min<std::int64_t>(p.rows, resident_clusters(reinterpret_cast<const void*>(kernel), cfg, c.cluster))
              : p.rows;
  cfg.gridDim = dim3(capped_grid(clusters, c.cluster));
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p, c.cluster));
}

// block_rows_reread_kernel's loads: unit-stride rows, each starting on a 16-byte boundary, no temperature or mask.
bool reread_fits(const RowProblem& p, std::size_t es) {
  if (p.scale || p.has_mask) return false;
  if (p.step[kX] != 1 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0) return false;
  for (int d = 0; d < p.map.rank; ++d)
    if (p.map.size[d] > 1 && (p.map.stride[kX][d] * static_cast<std::int64_t>(es)) % 16 != 0) return false;
  return true;
}

}  // namespace

std::uint64_t block_ahead_launch_count() { return ahead_launches().load(std::memory_order_relaxed); }
std::uint64_t block_reread_launch_count() { return reread_launches().load(std::memory_order_relaxed); }
std::uint64_t block_lane_launch_count() { return lane_launches().load(std::memory_order_relaxed); }

void launch_block_rows(const RowProblem& p, BlockConfig c, cudaStream_t s) {
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    // The read-only ops with their next rows in flight in registers, or read twice (mid8): cluster 1, at most 512
    // threads; the re-read kernel only where its loads are whole aligned vectors and no transform applies.
    if (c.ahead == kAheadReread && !reread_fits(p, sizeof(In))) c.ahead = 0;
    if (c.ahead != 0 && !writes_rows(p.op) && c.cluster == 1 && !c.staged && c.threads <= kAheadMaxThreads) {
      if (c.wide) return launch_ahead<In, kWideBlockElems>(p, c, s);
      return launch_ahead<In, kBlockElems>(p, c, s);
    }
    // The lane-staged kernel: 16-bit rows since mid16, f32 rows since blk17 (session 17).
    if (c.lane_stages > 0 && c.cluster == 1 && !c.wide && !c.staged) return launch_lane<In>(p, c, s);
    // The wide block staged: its next row bulk-copied into shared memory (up to 128 KB at 1024 threads in f32) while
    // it reduces and writes the current one, the only overlap a block alone on its SM gets.
    if (c.wide && c.staged) launch<In, true, kWideBlockElems, kWideBlockThreads, 1>(p, c, s);
    else if (c.wide) launch<In, false, kWideBlockElems, kWideBlockThreads, 1>(p, c, s);
    else if (c.staged) launch<In, true>(p, c, s);
    else launch<In, false>(p, c, s);
  });
}

}  // namespace smk::cuda::kernels
