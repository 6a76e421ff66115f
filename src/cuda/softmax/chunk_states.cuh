// softmaxkit (internal, device code): the two reductions split_row (split_row.cu) and grid_row (grid_row.cu) share,
// in one place so that both paths compute a row's state with the same operations in the same order, and so give
// bitwise the same outputs. That is what lets the dispatcher send few rows to grid_row and many to split_row
// (softmax_cuda.cpp) while a row's result stays the same alone or in a batch: the chunking (kSplitChunk elements,
// kSplitThreads threads × kBlockElems registers, RowTile's element-to-thread map) and both reduction trees depend
// on n alone, never on the number of rows, the grid or which kernel ran them.
// one12 (session 12): prefetch_chunk_l2, the chunk kernel's L2 prefetch of a later chunk (no value changes; split_row.cu
// kSplitChunkL2Ahead has what it measured).
// split15 (session 15): chunk_state's lean arithmetic (kLean: the same state with fewer instructions an element) and
// its after_max hook (chunk_tma.cuh's staged kernel refills a stage there); PlainTile::load_staged, the staged kernel's
// load through PlainTile's own code.
#pragma once

#include <cstring>
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
// Out: the type softmax's outputs are stored as (few7, session 7). A 16-bit Out sums the terms of common.cuh's
// 16-bit-output tier (out_exp: expf(z − m)), the same terms the normalising pass divides by l, where before the
// chunk pass summed exp_diff's whatever the output (tier16 changed only the normalising pass); float keeps exp_diff.
// Every variant (one launch, three kernels, grid_row) passes the output type, so they stay bitwise one another's.
// after_max (split15; was chunk_tma.cuh's chunk_state_then, a copy of this function): called by every thread once the
// block max is known, i.e. behind the block barrier that follows every thread's last use of its inputs but v (the
// staged kernel refills its stage there); the default does nothing.
// kLean (split15, session 15): the same state bit for bit at fewer instructions an element, by two facts about a
// thread's elements that the thread knows once the block max is known (split_row.cu kChunkLeanF32Log has the count, the
// timing and the rule: f32 log ops only by default):
//  - log ops: a score can tie the max only in a thread whose own max (tree_max, before the block max) equals the
//    shift; a warp none of whose lanes does (all but one warp of a chunk, as a rule) takes the terms without the
//    compare, select and count (thread_log_rest_no_ties): the same terms, the same tree, ties 0;
//  - f32 softmax: exp_diff's NaN guard (err == err) is true for every score of a chunk with a finite max but −inf
//    scores and differences x − m that overflow, where exp_diff gives +0; a warp sums the unguarded terms (the same
//    where err is not NaN) and, only where a lane's sum is NaN, sums again with NaN terms as +0 (thread_exp_sum_lean).
//    With a non-finite max the state is decided by the max alone, whatever the sum.
//  16-bit softmax (the 16-bit-output tier's plain expf) has neither and is unchanged.
struct NoAfterMax {
  __device__ __forceinline__ void operator()() const {}
};

// exp_diff (online_state.hpp) without its NaN guard: the same TwoSum, exponential and fold, written as the same
// expression `e + e * err` so that the compiler treats both alike (with nvcc's default -fmad=true both become one FFMA:
// SASS of chunk_states_plain_kernel<float, float, false>, CUDA 13.0 sm_90a, `@!P FFMA e, err, e, e`; an explicit
// fmaf here would part from exp_diff under -fmad=false). Equal to exp_diff wherever err is not NaN; NaN wherever err
// is.
__device__ __forceinline__ float exp_diff_unguarded(float x, float m) {
  const float d = x - m;
  const float bb = d - x;
  const float err = (x - (d - bb)) + (-m - bb);
  const float e = expf(d);
  return e + e * err;
}

// thread_log_rest (common.cuh) for a thread none of whose scores equals `shift`: its terms and tree without the tie
// test (which would be false everywhere), so the same sum; the thread's ties stay 0.
template <int E>
__device__ __forceinline__ float thread_log_rest_no_ties(const float (&v)[E], float shift) {
  float r[E];
#pragma unroll
  for (int i = 0; i < E; ++i) r[i] = log_term_exp_ftz(v[i], shift);
  return tree_sum<E>(r);
}

// f32 softmax's thread sum (thread_exp_rest<float> with neither ties nor kept terms) for a finite shift, lean: the
// unguarded terms; a warp with a NaN sum in any lane sums again with each NaN term as +0. A NaN term means err was NaN,
// where exp_diff returns e = exp(x − shift), and with a finite shift that is exp(−inf) = +0 (x = −inf, or x − shift
// overflowing to −inf); so the second sum is exp_diff's, bit for bit. With a non-finite max (shift +inf, NaN, or 0
// for an all −inf chunk) the sum may differ, but the state does not depend on it (state_from: from_max_and_excess
// decides by the max alone).
template <int E>
__device__ __forceinline__ float thread_exp_sum_lean(const float (&v)[E], float shift) {
  float r[E];
#pragma unroll
  for (int i = 0; i < E; ++i) r[i] = exp_diff_unguarded(v[i], shift);
  float sum = tree_sum<E>(r);
  if (__any_sync(kFullMask, sum != sum)) {
#pragma unroll
    for (int i = 0; i < E; ++i) r[i] = r[i] == r[i] ? r[i] : 0.0f;
    sum = tree_sum<E>(r);
  }
  return sum;
}

template <bool kLog, typename Out = float, bool kLean = false, typename F = NoAfterMax>
__device__ __forceinline__ ChunkState chunk_state(float (&v)[kBlockElems], ChunkScratch& s, F&& after_max = F{}) {
  const float mine = tree_max<kBlockElems>(v);
  const float m = block_max(mine, s.max);
  after_max();
  int ties = 0;
  const float shift = ChunkState::shift_for(m);  // the log ops' terms by log_term_exp_ftz (common.cuh thread_log_rest)
  float t;
  if constexpr (kLean && kLog) {
    t = __any_sync(kFullMask, mine == shift) ? thread_log_rest(v, shift, ties) : thread_log_rest_no_ties(v, shift);
  } else if constexpr (kLean && !kPlainExp<Out>) {
    t = thread_exp_sum_lean(v, shift);
  } else {
    t = kLog ? thread_log_rest(v, shift, ties) : thread_exp_rest<Out>(v, shift, false, false, ties);
  }
  const float rest = block_sum(t, s.sum);
  if (kLog) ties = block_count(ties, s.ties);
  return state_from(m, ties, rest, kLog);
}

// Whether kLean changes chunk_state's code for these types (the log ops and f32-output softmax): the launchers
// instantiate a lean kernel only where it does.
template <bool kLog, typename Out>
inline constexpr bool kLeanDiffers = kLog || !kPlainExp<Out>;

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

// ---- the common call (few7, session 7) ------------------------------------------------------------------------------
// A call with unit-stride rows whose first elements are 16-byte aligned (input and output), no mask, no temperature,
// the output in the input's type and at most one row dimension (launch_cluster checks it on the host). The one-launch
// kernel was ~7 µs of instruction fetch (split6's Nsight Compute: 128 KB of code, 46–56 % of cycles waiting on it),
// most of it the paths such a call never takes; PlainTile is RowTile<In, kBlockElems>'s element-to-thread map (the
// same values in the same registers, so the same bits) without its strided, unaligned and transform paths.

// A row's first element in slot `slot` where the row map has at most one dimension (no 64-bit division).
__device__ __forceinline__ std::int64_t plain_offset(const RowProblem& p, std::int64_t row, int slot) {
  return p.map.rank == 0 ? 0 : row * p.map.stride[slot][0];
}

// How PlainTile::load reads its full 16-byte vectors (vocab10): kLoadPlain the default policy (ld.global.v4);
// kLoadEvictFirst ld.global.cs (the data's last use: L2 evict-first, split_stream's and row_loop's re-reads);
// kLoadEvictLast an L2 evict-last cache hint (createpolicy.fractional.L2::evict_last, as Triton's evict_last loads
// compile to; row_loop's first read, which the same block reads again one row's time later).
constexpr int kLoadPlain = 0;
constexpr int kLoadEvictFirst = 1;
constexpr int kLoadEvictLast = 2;
template <int kHint, typename Vec>
__device__ __forceinline__ Vec load_vec(const Vec* q) {
  static_assert(sizeof(Vec) == 16, "load_vec reads 16-byte vectors");
  if constexpr (kHint == kLoadPlain) {
    return *q;
  } else {
    uint4 b;
    if constexpr (kHint == kLoadEvictFirst) {
      b = __ldcs(reinterpret_cast<const uint4*>(q));
    } else {
      asm volatile(
          "{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
          "ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n\t}"
          : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w)
          : "l"(q));
    }
    Vec w;
    memcpy(&w, &b, sizeof(w));
    return w;
  }
}

// E elements a thread (kBlockElems: a chunk; fewer: the normalising pass's sub-tiles), kSplitThreads threads.
template <typename In, int E = kBlockElems>
struct PlainTile {
  using Tile = RowTile<In, E>;
  static constexpr int V = Tile::V, K = Tile::K;
  using Vec = typename Tile::Vec;
  template <typename Out>
  using OutVec = typename Tile::template OutVec<Out>;

  // row[0, n) into v; positions past n read as `pad` (−inf: nothing to a max or a sum of exponentials; the backward's
  // 0: nothing to a plain sum). `row` is 16-byte aligned. kHint (vocab10): how the full vectors are read, as
  // load_vec says; the default kLoadPlain compiles to what this function was before the hint.
  template <int kHint = kLoadPlain>
  __device__ __forceinline__ static void load(float (&v)[E], const In* row, int n,
                                              float pad = -detail::inf_<float>()) {
    load_staged<kHint>(v, row, row, n, pad);
  }

  // load's values with the whole 16-byte vectors read from `whole`, a copy of the row's whole vectors at the same
  // offsets (chunk_tma.cuh: a shared-memory stage filled by a bulk copy; load passes the row itself), and the one
  // ragged vector, if any, from `row` (split15: was chunk_tma_load, a copy of this function). A `whole` in shared
  // memory takes only the default kLoadPlain: the other hints are global-memory loads (ld.global / __ldcs).
  template <int kHint = kLoadPlain>
  __device__ __forceinline__ static void load_staged(float (&v)[E], const In* whole, const In* row, int n,
                                                     float pad = -detail::inf_<float>()) {
    const int g = threadIdx.x;
    if (Tile::index(K - 1, g, kSplitThreads) + V <= n) {  // every vector of this thread full: all loads in flight
      const Vec* q = reinterpret_cast<const Vec*>(whole) + g;
      Vec w[K];
#pragma unroll
      for (int k = 0; k < K; ++k) w[k] = load_vec<kHint>(q + k * kSplitThreads);
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w[k].v[j]);
      return;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {  // the row's last chunk: whole vectors, then at most one ragged one
      const int i0 = Tile::index(k, g, kSplitThreads);
      if (i0 + V <= n) {
        const Vec w = load_vec<kHint>(reinterpret_cast<const Vec*>(whole + i0));
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = i0 + j < n ? to_f32(row[i0 + j]) : pad;
      }
    }
  }

  // v to row[0, n) as Out; `row` is 16-byte aligned. Each full vector goes out as one 16-byte store (st.global.v4,
  // the default policy: SASS STG.E.128, where __stwb gives STG.E.128.STRONG.SM): written as a plain assignment beside
  // the ragged end's guarded element stores, the compiler merged the two branches into per-element stores (SASS:
  // STG.E / STG.E.U16 only), and the first build of these kernels ran 1.3–2× slower than the generic ones for it
  // (few7's first H200 run). `streaming` makes the full vectors streaming stores (st.global.cs: split_stream's
  // outputs, which nothing reads back soon).
  template <typename Out>
  __device__ __forceinline__ static void store(Out* row, const float (&v)[E], int n, bool streaming = false) {
    using W = OutVec<Out>;
    static_assert(sizeof(W) == 16, "PlainTile stores 16-byte vectors of the input's type");
    const int g = threadIdx.x;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = Tile::index(k, g, kSplitThreads);
      if (i0 + V <= n) {
        W w;
#pragma unroll
        for (int j = 0; j < V; ++j) w.v[j] = from_f32<Out>(v[k * V + j]);
        uint4 b;
        memcpy(&b, &w, sizeof(b));
        if (streaming)
          asm volatile("st.global.cs.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(row + i0), "r"(b.x), "r"(b.y), "r"(b.z),
                       "r"(b.w)
                       : "memory");
        else
          asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(row + i0), "r"(b.x), "r"(b.y), "r"(b.z),
                       "r"(b.w)
                       : "memory");
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (i0 + j < n) row[i0 + j] = from_f32<Out>(v[k * V + j]);
      }
    }
  }
};

// normalize_chunk for the common call: the same sub-tiles and the same normalize_values, so the same bits.
// kStream (one11, session 11): the loads evict-first (the input's last use) and the stores streaming, so that neither
// pushes out of L2 the chunks still to be re-read; false compiles to what this function was before.
template <typename In, bool kStream = false>
__device__ __forceinline__ void normalize_plain_chunk(In* out, const RowNormalizer<float>& norm, Op op, const In* x,
                                                      int len) {
  constexpr int E = kSubElems<In>;
  constexpr int kSub = kSplitThreads * E;
  for (int at0 = 0; at0 < len; at0 += kSub) {
    const int sub = len - at0 < kSub ? len - at0 : kSub;
    float v[E];
    PlainTile<In, E>::template load<kStream ? kLoadEvictFirst : kLoadPlain>(v, x + at0, sub);
    normalize_values<In>(v, norm, op);
    PlainTile<In, E>::template store<In>(out + at0, v, sub, kStream);
  }
}

// Row `idx / chunks` and chunk `idx % chunks` of a chunk index, by a 32-bit division where the call's chunk count
// allows (a 64-bit one is a called subroutine, ~70 instructions, in SASS).
__device__ __forceinline__ void split_chunk_index(std::int64_t idx, std::int64_t chunks, bool narrow,
                                                  std::int64_t& row, std::int64_t& c) {
  if (narrow) {
    const unsigned q = static_cast<unsigned>(idx) / static_cast<unsigned>(chunks);
    row = q;
    c = idx - static_cast<std::int64_t>(q) * chunks;
  } else {
    row = idx / chunks;
    c = idx - row * chunks;
  }
}

// one12 (session 12): an L2 prefetch of chunk `idx` (row idx / chunks, chunk idx % chunks) of the common call's input,
// issued by one thread as one bulk prefetch (PTX cp.async.bulk.prefetch.L2, sm_90; the installed CCCL has no wrapper
// for it): no register holds the data and nothing waits on it, so it changes no value, only where a later load finds
// its line. The chunk and normalising kernels issue it for the chunk the block of the next wave will read, so DRAM
// keeps fetching while the blocks of this wave reduce (split6's Nsight Compute: the chunk kernel's DRAM 57 % f32 / 29 %
// bf16, each block loading its chunk and then reducing with nothing in flight). The bytes are the chunk's whole
// 16-byte vectors (a ragged tail of < 16 bytes is left to its own load), from its 16-byte-aligned first element, so
// the prefetch never reaches past the row. idx outside [0, total) prefetches nothing.
template <typename In>
__device__ __forceinline__ void prefetch_chunk_l2(const RowProblem& p, std::int64_t idx, std::int64_t chunks,
                                                  bool narrow) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (idx < 0 || idx >= p.rows * chunks) return;
  std::int64_t row, c;
  split_chunk_index(idx, chunks, narrow, row, c);
  const In* x = at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c);
  const unsigned bytes = static_cast<unsigned>(chunk_len(p.n, c)) * static_cast<unsigned>(sizeof(In)) / 16u * 16u;
  if (bytes > 0)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(x), "r"(bytes) : "memory");
#else
  (void)p, (void)idx, (void)chunks, (void)narrow;
#endif
}

static_assert(sizeof(ChunkState) == 2 * sizeof(float), "merge_chunk_states reads a state as two floats");

}  // namespace smk::cuda::kernels
