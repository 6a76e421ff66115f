// row_loop (vocab10, session 10): split_row's many-row calls in ONE persistent launch with no tickets and no
// workspace: block b owns rows b, b + G, b + 2G, … (G the grid; a function of the call's shape and the device, never
// of the data), and walks each row twice, as torch.compile's Triton kernels do at these shapes (vocab8's Nsight
// Compute of them: one program a row, an online (max, sum) loop with evict_last loads, then a second loop that
// re-reads the row and writes):
//   pass 1  chunk by chunk (split_row's chunks: kSplitChunk = 512 × 24 forward, kBackwardSplitChunk = 512 × 16
//           backward, PlainTile's element-to-thread map), each chunk's state exactly as split_row's chunk kernel forms
//           it (the same terms, the same per-thread tree, the same warp butterfly, the same 16-warp second stage),
//           only the block-wide steps moved: the warp partial sums of every chunk wait in shared memory and the
//           chunks' second stages run once a row after one barrier (one warp a chunk), so a forward chunk costs one
//           barrier (its max) and a backward chunk none;
//   merge   the chunk states merged as split_row's merge kernel does for ≤ 32 chunks (lane c merges chunk c into
//           the empty state, one butterfly: merge_pushed_states' order, which split_row.cu shows is bitwise the
//           merge kernel's; the backward: merge kernel's compensated partial of one chunk a thread, then its block
//           sum, whose other warps add +0), computed by every warp alone;
//   pass 2  the chunks again in reverse (the ones read last are the likeliest still in L2), normalised (forward) or
//           the gradient formed (backward) with the row's state, written.
// So every output is bitwise the three kernels' (tested: test_row_loop_gpu.cpp), and the dispatcher may choose it by
// the size of the call as it chooses the one-launch kernel or split_stream.
// The common call only (unit-stride rows whose starts are 16-byte aligned, at most one row dimension, no mask, no
// temperature, the output in the input's type), rows of 2 … kRowLoopMaxChunks chunks.
//
// Bytes per element: forward read twice + write once, f32 12 B (floor 8), 16-bit 6 B (floor 4); backward y and dy
// read twice + dx written, f32 20 B (floor 12), 16-bit 10 B (floor 6): the three kernels' traffic, less what
// pass 2 finds in L2. Floors at 4.27 TB/s copy: 4096×151936 f32 forward 1166 µs, bf16 583, bf16 backward 875.
// Predicted (count, vocab10): what the two launches of the three kernels lose is their tails and the serial order of
// an instruction-bound pass (16-bit chunk kernel: 2.17 TB/s, SM 68 %) before a memory-bound one (the normalising
// kernel, 3.6-3.95 TB/s): here both passes run at once on different SMs' blocks, and a row's re-read follows its
// first read by one row's time (264 rows in flight: f32 158 MB, bf16 79 MB against 50 MB of L2, so part of pass 2
// hits; at one block an SM, 132 rows, bf16's 40 MB nearly fits).
// Measured (H200, 2026-11-30, vocab10's run of a39b8b6's binaries, tune_softmax --vocab10, median µs, the dispatcher's
// split_row → row_loop at 2 blocks an SM with hints; row_loop_rule has every number): 4096×151936 f32 softmax 2014 →
// 1806 (64.6 % of copy; torch.compile 1815 in compare-s9), bf16 softmax 1287 → 1045 (compile 1339), log-softmax 1349 →
// 1022 (compile 1128), softmax bwd 1635 → 1491 (compile 1484), log-softmax bwd 1312 → 1205 (compile 1242, eager 1186);
// f32 log-softmax 1735 → 1746 (split_stream stays), f32 backward 2807 → 2860 / 2277 → 2336 (slower: three kernels
// stay). At one block an SM (fewer rows in flight, more of pass 2 from L2: the count's other lever) 5-33 % slower on
// every forward and 16-bit row; the f32 backward there is mixed (0.84-1.05× split_row by shape). The floors (1166 /
// 583 / 875 µs) stay far: 55-65 % of copy forward.
// Not profiled (no device time left for Nsight Compute): the rates of the two passes and pass 2's L2 hit rate.
#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/launch.hpp"

#include <atomic>

namespace smk::cuda::kernels {

namespace {

using State = ChunkState;
constexpr int kWarps = kSplitThreads / 32;  // 16: the second stage of block_sum / block_max reads 16 lanes

// Forward: one row per block and step. kLog: log-softmax (the chunk terms by thread_log_rest with ties, as
// chunk_state<true, float>); softmax sums out_exp<In>'s terms (chunk_state<false, In>: the 16-bit-output tier for 16-bit
// inputs, exp_diff for f32), as chunk_states_plain_kernel does for the common call.
template <typename In, bool kLog>
__global__ void __launch_bounds__(kSplitThreads, 2) row_loop_kernel(const RowProblem p, int chunks, int hints) {
  using Out = std::conditional_t<kLog, float, In>;
  constexpr Op op = kLog ? Op::log_softmax : Op::softmax;
  __shared__ float wmax[2][kWarps];                  // this chunk's warp maxima (by the chunk's parity)
  __shared__ float wsum[kRowLoopMaxChunks][kWarps];  // every chunk's warp sums, until the row's merge
  __shared__ int wties[kRowLoopMaxChunks][kWarps];
  __shared__ float cmax[kRowLoopMaxChunks];
  __shared__ float2 cstate[kRowLoopMaxChunks];       // the chunk states (m, d)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const In* x = at<In>(p.x, plain_offset(p, row, kX));
    // Pass 1: each chunk's max (one barrier), then its terms' warp sums kept for the merge.
    for (int c = 0; c < chunks; ++c) {
      float v[kBlockElems];
      const int len = chunk_len(p.n, c);
      if (hints != 0) PlainTile<In>::template load<kLoadEvictLast>(v, x + chunk_first(c), len);
      else PlainTile<In>::load(v, x + chunk_first(c), len);
      // block_max's arithmetic: the thread's tree, the warp's butterfly, then the warps' maxima by one butterfly.
      const float wm = group_max(tree_max<kBlockElems>(v), 32);
      if (lane == 0) wmax[c & 1][warp] = wm;
      __syncthreads();  // wmax[c & 1] is next written at chunk c + 2, after every thread has passed chunk c + 1's
      const float m = group_max(lane < kWarps ? wmax[c & 1][lane] : -detail::inf_<float>(), 32);
      int ties = 0;
      const float shift = State::shift_for(m);
      const float rest = kLog ? thread_log_rest(v, shift, ties) : thread_exp_rest<Out>(v, shift, false, false, ties);
      const float ws = group_sum(rest, 32);  // block_sum's first stage
      if (kLog) ties = group_count(ties, 32);
      if (lane == 0) {
        wsum[c][warp] = ws;
        if (kLog) wties[c][warp] = ties;
      }
      if (threadIdx.x == 0) cmax[c] = m;
    }
    __syncthreads();  // every chunk's warp sums written
    // block_sum's (and block_count's) second stage of chunk c by warp c % 16, and the chunk's state as chunk_state.
    for (int c = warp; c < chunks; c += kWarps) {
      const float rest = group_sum(lane < kWarps ? wsum[c][lane] : 0.0f, 32);
      const int ties = kLog ? group_count(lane < kWarps ? wties[c][lane] : 0, 32) : 0;
      const State st = state_from(cmax[c], ties, rest, kLog);
      if (lane == 0) cstate[c] = make_float2(st.m, st.d);
    }
    __syncthreads();  // the chunk states; wsum / wties / cmax / cstate are next written after the next row's
                      // first barrier, which every thread reaches only after its reads below
    State t = State::empty();
    if (lane < chunks) t.merge(State::from_fields(cstate[lane].x, cstate[lane].y));
    t = group_merge(t, 32);  // merge_pushed_states' order: bitwise the merge kernel's row state
    const RowNormalizer<float> norm = t.normalizer(p.empty_rows);
    In* out = at<In>(p.out, plain_offset(p, row, kOut));
    // Pass 2: the chunks in reverse, their last use (evict-first loads, streaming stores, where hints).
    for (int c = chunks - 1; c >= 0; --c) {
      float v[kBlockElems];
      const int len = chunk_len(p.n, c);
      if (hints != 0) PlainTile<In>::template load<kLoadEvictFirst>(v, x + chunk_first(c), len);
      else PlainTile<In>::load(v, x + chunk_first(c), len);
      normalize_values<In>(v, norm, op);
      PlainTile<In>::template store<In>(out + chunk_first(c), v, len, hints != 0);
    }
  }
}

// Backward: kLogBw the log-softmax backward (s = Σ dy, dx = dy − exp(y)·s), else softmax's (s = Σ dy·y,
// dx = y·(dy − s)); the arithmetic of backward.cu's plain chunk-sum, merge and elementwise kernels.
template <typename In, bool kLogBw>
__global__ void __launch_bounds__(kSplitThreads, 2) row_loop_backward_kernel(const RowProblem p, int chunks,
                                                                             int hints) {
  constexpr int E = kBackwardBlockElems;
  using Tile = PlainTile<In, E>;
  __shared__ float wsum[kRowLoopMaxChunks][kWarps];
  __shared__ float csum[kRowLoopMaxChunks];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const In* y = at<In>(p.x, plain_offset(p, row, kX));
    const In* dy = at<In>(p.dy, plain_offset(p, row, kDy));
    // y and dy of one chunk, with the cache hint kHint where hints, plain loads where not.
    auto load_pair = [&]<int kHint>(float (&a)[E], float (&b)[E], std::int64_t first, int len) {
      if (hints != 0) {
        Tile::template load<kHint>(a, y + first, len, 0.0f);
        Tile::template load<kHint>(b, dy + first, len, 0.0f);
      } else {
        Tile::load(a, y + first, len, 0.0f);
        Tile::load(b, dy + first, len, 0.0f);
      }
    };
    // Pass 1: no barrier; each chunk's warp sums (block_sum's first stage) wait in shared memory.
    for (int c = 0; c < chunks; ++c) {
      const std::int64_t first = std::int64_t{c} * kBackwardSplitChunk;
      const int len = static_cast<int>(p.n - first < kBackwardSplitChunk ? p.n - first : kBackwardSplitChunk);
      float a[E], b[E];
      load_pair.template operator()<kLoadEvictLast>(a, b, first, len);
      float t[E];
#pragma unroll
      for (int i = 0; i < E; ++i) t[i] = kLogBw ? b[i] : b[i] * a[i];
      const float ws = group_sum(tree_sum<E>(t), 32);
      if (lane == 0) wsum[c][warp] = ws;
    }
    __syncthreads();
    for (int c = warp; c < chunks; c += kWarps) {
      const float s = group_sum(lane < kWarps ? wsum[c][lane] : 0.0f, 32);  // block_sum's second stage: the chunk sum
      if (lane == 0) csum[c] = s;
    }
    __syncthreads();
    // backward_merge_kernel (kMergeThreads = 1024 threads, ≤ 32 chunks): thread k's compensated partial of chunk k
    // alone (s = 0 + x, c from the same expression), then block_sum over its 32 warps, of which warps 1..31 bring
    // +0 (their threads' 0 + 0): the first stage is this warp's butterfly, the second a butterfly of lane 0's sum
    // and 31 zeros. Written out as those operations, so the bits are the merge kernel's.
    float s = 0.0f, comp = 0.0f;
    if (lane < chunks) {
      const float xk = csum[lane], tk = s + xk;
      comp += fabsf(s) >= fabsf(xk) ? (s - tk) + xk : (xk - tk) + s;
      s = tk;
    }
    const float w0 = group_sum(s + comp, 32);
    const float rs = group_sum(lane == 0 ? w0 : 0.0f, 32);
    In* dx = at<In>(p.out, plain_offset(p, row, kOut));
    // Pass 2: reverse, y and dy's last use; dx as backward_elementwise_plain_kernel forms it.
    for (int c = chunks - 1; c >= 0; --c) {
      const std::int64_t first = std::int64_t{c} * kBackwardSplitChunk;
      const int len = static_cast<int>(p.n - first < kBackwardSplitChunk ? p.n - first : kBackwardSplitChunk);
      float a[E], b[E];
      load_pair.template operator()<kLoadEvictFirst>(a, b, first, len);
      backward_grads<kLogBw>(a, b, rs);
      Tile::template store<In>(dx + first, a, len, hints != 0);
    }
    // The next row's pass 1 rewrites wsum only after this row's second barrier (behind every read of it), and csum
    // only after the next row's first barrier, which every thread reaches after its reads of csum above.
  }
}

std::atomic<std::uint64_t>& launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}
std::atomic<unsigned>& last_grid() {
  static std::atomic<unsigned> grid{0};
  return grid;
}

template <auto kKernel>
void launch_kernel(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  const RowLoopTuning& t = row_loop_tuning();
  // Blocks of the grid: blocks_per_sm (tuning) or the kernel's occupancy (two 512-thread blocks of ≤ 64 registers
  // an SM) times the SMs, never more than the rows.
  const int per_sm = t.blocks_per_sm > 0 ? t.blocks_per_sm : blocks_per_sm(kKernel, kSplitThreads, 0);
  std::int64_t grid = std::int64_t{per_sm} * device_facts().sm_count;
  if (t.max_blocks > 0) grid = std::min<std::int64_t>(grid, t.max_blocks);
  grid = std::max<std::int64_t>(1, std::min(grid, p.rows));
  kKernel<<<static_cast<unsigned>(grid), kSplitThreads, 0, s>>>(p, static_cast<int>(chunks), t.hints ? 1 : 0);
  SMK_CUDA_CHECK_LAUNCH("row_loop");
  last_grid().store(static_cast<unsigned>(grid), std::memory_order_relaxed);
  launches().fetch_add(1, std::memory_order_relaxed);
}

// Whether the call is one the kernels serve (the common call of the three kernels' compact variants, 2 … 32 chunks)
// and the rule (or the tuning) sends it there.
template <typename In>
bool takes(const RowProblem& p, std::int64_t chunks, bool backward) {
  const RowLoopTuning& t = row_loop_tuning();
  if (t.use == 0 || !split_row_tuning().common_call) return false;
  if (chunks < 2 || chunks > kRowLoopMaxChunks || p.has_mask || p.scale || p.temp != nullptr) return false;
  if (p.out_dtype != p.x_dtype || !plain_rows<In>(p, p.x, kX) || !plain_rows<In>(p, p.out, kOut)) return false;
  if (backward && !plain_rows<In>(p, p.dy, kDy)) return false;
  if (t.use == 1) return true;
  return row_loop_rule(p.op, p.x_dtype, p.rows, p.n);
}

}  // namespace

// The rule: which calls the dispatcher sends here (by op, dtype, rows and n; the bits are the three kernels' whatever
// it picks, so choosing by the number of rows keeps a row's result the same alone or in a batch, as split_row's
// one-launch kernel and split_stream do). From vocab10's run (H200, 2026-11-30, binaries of a39b8b6's tree,
// tune_softmax --vocab10, inputs rotated, median µs; split_row as the dispatcher ran it timed first and last →
// row_loop at two blocks an SM with the cache hints, the library's configuration):
//   4096×151936  f32  softmax 2014 / 2013 → 1806; log-softmax (split_stream) 1734 / 1736 → 1746;
//                     softmax bwd 2807 / 2804 → 2860; log-softmax bwd 2277 / 2274 → 2336
//                bf16 softmax 1287 / 1292 → 1045; log-softmax 1349 / 1349 → 1022; softmax bwd 1635 / 1628 → 1491;
//                     log-softmax bwd 1312 / 1312 → 1205
//   1024×262144  f32  871 / 866 → 809; 754 / 753 → 777; 1213 / 1212 → 1267; 985 / 986 → 1033
//                bf16 551 / 544 → 453; 573 / 573 → 449; 697 / 709 → 651; 572 / 578 → 543
//   256×151936   f32  141 / 139 → 128; 124 / 125 → 124; 185 / 185 → 190; 156 / 155 → 161
//                bf16 95.3 / 95.9 → 75.0; 97.1 / 97.2 → 74.5; 111.1 / 111.6 → 103.2; 93.7 / 93.6 → 84.4
// So: bf16 every op, f32 softmax; f32 log-softmax stays on split_stream (even at best), the f32 backward on the three
// kernels (slower at two blocks an SM; at one an SM 2745 / 2268 at 4096×151936, even, but 1248 / 1032 at 1024×262144,
// slower). f16 is bf16's code but was not timed: not sent. kRowLoopMinRows: 256, the fewest rows timed (a win there
// for every op sent); fewer rows keep the three kernels (or the one-launch kernel) until timed. Row lengths between
// 65536 and the kernels' bound reach here (shorter rows take cluster_stage / cluster_row); two of them were timed.
// Only the kernels the rule sends calls to are built (the session's review, F8): bf16's four and f32 softmax; f16
// (bf16's code, never timed), the f32 log-softmax forward and the f32 backward (slower in that run) are not, and no
// tuning reaches them (use = 1 there runs the three kernels). Commit 709add7 has all twelve.
constexpr std::int64_t kRowLoopMinRows = 256;
bool row_loop_built_for(Op op, DType t) { return t == DType::bf16 || (t == DType::f32 && op == Op::softmax); }
bool row_loop_rule(Op op, DType t, std::int64_t rows, std::int64_t n) {
  (void)n;  // the kernels' bound is checked by the caller
  return rows >= kRowLoopMinRows && row_loop_built_for(op, t);
}

RowLoopTuning& row_loop_tuning() {
  static RowLoopTuning t;
  return t;
}
std::uint64_t row_loop_launch_count() { return launches().load(std::memory_order_relaxed); }
unsigned row_loop_last_grid() { return last_grid().load(std::memory_order_relaxed); }

bool launch_row_loop_rows(const RowProblem& p, cudaStream_t s) {
  if (p.op != Op::softmax && p.op != Op::log_softmax) return false;
  const std::int64_t chunks = (p.n + kSplitChunk - 1) / kSplitChunk;
  if (p.rows < 1 || !row_loop_built_for(p.op, p.x_dtype)) return false;
  if (p.x_dtype == DType::f32) {
    if (!takes<float>(p, chunks, false)) return false;
    launch_kernel<row_loop_kernel<float, false>>(p, chunks, s);
    return true;
  }
  using In = __nv_bfloat16;
  if (!takes<In>(p, chunks, false)) return false;
  if (p.op == Op::softmax) launch_kernel<row_loop_kernel<In, false>>(p, chunks, s);
  else launch_kernel<row_loop_kernel<In, true>>(p, chunks, s);
  return true;
}

bool launch_backward_row_loop_rows(const RowProblem& p, cudaStream_t s) {
  if (p.op != Op::softmax_backward && p.op != Op::log_softmax_backward) return false;
  const std::int64_t chunks = (p.n + kBackwardSplitChunk - 1) / kBackwardSplitChunk;
  if (p.rows < 1 || !row_loop_built_for(p.op, p.x_dtype)) return false;
  using In = __nv_bfloat16;  // bf16 only: the f32 backward is not built
  if (!takes<In>(p, chunks, true)) return false;
  if (p.op == Op::softmax_backward) launch_kernel<row_loop_backward_kernel<In, false>>(p, chunks, s);
  else launch_kernel<row_loop_backward_kernel<In, true>>(p, chunks, s);
  return true;
}

}  // namespace smk::cuda::kernels
