// softmaxkit (internal, device code): the two reductions split_row (split_row.cu) and grid_row (grid_row.cu) share,
// in one place so that both paths compute a row's state with the same operations in the same order, and so give
// bitwise the same outputs. That is what lets the dispatcher send few rows to grid_row and many to split_row
// (softmax_cuda.cpp) while a row's result stays the same alone or in a batch: the chunking (kSplitChunk elements,
// kSplitThreads threads × kBlockElems registers, RowTile's element-to-thread map) and both reduction trees depend
// on n alone, never on the number of rows, the grid or which kernel ran them.
#pragma once

#include <type_traits>

#include "cuda/softmax/common.cuh"

namespace smk::cuda::kernels {

using ChunkState = OnlineSoftmaxState<float>;

// Scratch of chunk_state, in shared memory.
struct ChunkScratch {
  float max[32], sum[32];
  int ties[32];
};

// The position and length of chunk `c` (0-based within its row) of a row of n elements.
__device__ __forceinline__ std::int64_t chunk_first(std::int64_t c) { return c * kSplitChunk; }
__device__ __forceinline__ int chunk_len(std::int64_t n, std::int64_t c) {
  const std::int64_t left = n - c * kSplitChunk;
  return static_cast<int>(left < kSplitChunk ? left : kSplitChunk);
}

// The online state (m, d) of one chunk that a block of kSplitThreads threads holds in v (RowTile<In, kBlockElems>'s
// layout, already transformed, positions past the chunk's end −inf): the block max, then the count of scores equal
// to it and the block sum of the others' log_term_exp_ftz (kLog: the op takes log l), or the plain sum of every
// exp_diff (softmax). Called by every thread of the block; every thread returns the state. Uses each scratch array
// once, behind a barrier, so consecutive calls need no extra barrier (common.cuh, block_sum).
template <bool kLog>
__device__ __forceinline__ ChunkState chunk_state(float (&v)[kBlockElems], ChunkScratch& s) {
  const float m = block_max(tree_max<kBlockElems>(v), s.max);
  int ties = 0;
  const float shift = ChunkState::shift_for(m);  // the log ops' terms by log_term_exp_ftz (common.cuh thread_log_rest)
  const float rest =
      block_sum(kLog ? thread_log_rest(v, shift, ties) : thread_exp_rest(v, shift, false, false, ties), s.sum);
  if (kLog) ties = block_count(ties, s.ties);
  return state_from(m, ties, rest, kLog);
}

// A row's state from its `chunks` chunk states, merged with OnlineSoftmaxState::merge in a fixed order by a block
// of kSplitThreads threads: thread t merges chunks t, t + kSplitThreads, … in turn, then a butterfly over each
// warp, then a butterfly over the warps' states. Called by every thread; every thread returns the state. The
// states are read through L2 (ld.global.cg): grid_row reads states that other blocks of the same launch wrote
// before its grid barrier, which L1, not coherent across SMs, must not serve. (merge_chunk_states, below.)
//
// The tree of merge_chunk_states after each thread's own merges: `s` is what thread t merged (chunks t,
// t + kSplitThreads, … in turn, from ChunkState::empty()). split_row's one-launch cluster variant (split_row.cu)
// calls it with the states of its cluster's blocks, so its row state is bitwise the merge kernel's.
__device__ __forceinline__ ChunkState merge_thread_states(ChunkState s, float* red_m, float* red_d) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  constexpr int kWarps = kSplitThreads / 32;
  s = group_merge(s, 32);
  if (lane == 0) {
    red_m[warp] = s.m;
    red_d[warp] = s.d;
  }
  __syncthreads();
  ChunkState t = lane < kWarps ? ChunkState::from_fields(red_m[lane], red_d[lane]) : ChunkState::empty();
  t = group_merge(t, 32);
  __syncthreads();  // red_m / red_d are rewritten by the next call
  return t;
}
__device__ __forceinline__ ChunkState merge_chunk_states(const ChunkState* states, std::int64_t chunks,
                                                         float* red_m, float* red_d) {
  ChunkState s = ChunkState::empty();
  const float* f = reinterpret_cast<const float*>(states);
  for (std::int64_t c = threadIdx.x; c < chunks; c += kSplitThreads)
    s.merge(ChunkState::from_fields(__ldcg(f + 2 * c), __ldcg(f + 2 * c + 1)));
  return merge_thread_states(s, red_m, red_d);
}

// The outputs of softmax / log-softmax from a row's normalizer, elementwise in place (v holds z on entry). An empty
// row under the zeros policy (zero_fill) is folded into the shift and the scale once, not tested per element.
// Out: the output type the values are stored as (common.cuh out_exp: 16-bit outputs take the plain exponential).
template <typename Out, int E>
__device__ __forceinline__ void normalize_values(float (&v)[E], const RowNormalizer<float>& norm, Op op) {
  if (op == Op::softmax) {
    const float shift = norm.zero_fill ? 0.0f : norm.shift, scale = norm.zero_fill ? 0.0f : norm.inv_sum;
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = out_exp<Out>(v[i], shift) * scale;
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = norm.log_softmax(v[i]);
  }
}

// The normalising pass over one chunk is elementwise, so it need not hold the whole chunk: it walks it in sub-tiles
// of 32 bytes per thread (8 f32 or 16 bf16 elements, two 16-byte vectors), which keeps it within 64 registers (two
// blocks per SM). `x` is the chunk's first input element (in global or shared memory), `step` its stride; the
// outputs go to the row's elements first … first + len − 1.
template <typename In>
constexpr int kSubElems = 32 / static_cast<int>(sizeof(In));

template <typename In>
__device__ __forceinline__ void normalize_chunk(const RowProblem& p, const RowRef& o, const RowNormalizer<float>& norm,
                                                const RowTransform& tf, const In* x, std::int64_t step,
                                                std::int64_t first, int len) {
  constexpr int E = kSubElems<In>;
  using Tile = RowTile<In, E>;
  constexpr int kSub = kSplitThreads * E;
  for (int at0 = 0; at0 < len; at0 += kSub) {
    const int sub = len - at0 < kSub ? len - at0 : kSub;
    float v[E];
    Tile::load(v, x + static_cast<std::int64_t>(at0) * step, sub, step, threadIdx.x, kSplitThreads);
    Tile::transform(v, tf, sub, threadIdx.x, kSplitThreads, first + at0);
    with_out_type<In>(p, [&](auto* tag) {
      using Out = std::remove_pointer_t<decltype(tag)>;
      normalize_values<Out>(v, norm, p.op);
      Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)) + (first + at0) * p.step[kOut], v, sub, p.step[kOut],
                                threadIdx.x, kSplitThreads);
    });
  }
}

static_assert(sizeof(ChunkState) == 2 * sizeof(float), "merge_chunk_states reads a state as two floats");

}  // namespace smk::cuda::kernels
