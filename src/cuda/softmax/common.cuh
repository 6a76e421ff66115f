// softmaxkit (internal, device code): what every softmax-family kernel shares — element conversions, row offsets,
// the score transform (x / T + mask), register-resident row loads and stores, and the deterministic reductions.
//
// Determinism: every sum below is a fixed tree whose shape depends only on the row length and the launch
// configuration: a pairwise tree over a thread's registers, an xor butterfly across lanes (every lane computes the
// same additions, so every lane holds the bitwise-same result), the same butterfly across a block's warps and
// across a cluster's blocks. Maxima are exact in any order. Loads are vectorised when the row is aligned, assembled
// from aligned blocks when a unit-stride row starts off a block boundary (odd21, below), element by element otherwise,
// but the element-to-thread assignment is the same every way, so alignment never changes a result.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/convert.cuh"
#include "cuda/softmax/kernels.hpp"
#include "softmaxkit/core/online_state.hpp"

namespace smk::cuda::kernels {

constexpr unsigned kFullMask = 0xffffffffu;

// The element conversions live in cuda/convert.cuh (one copy for every kernel family); named here so that
// kernels::to_f32 / kernels::from_f32<T> keep working.
using smk::cuda::from_f32;
using smk::cuda::to_f32;

// The NaN-propagating max of online_state.hpp's nan_max as one instruction (max.NaN, sm_80+): NaN when either
// input is NaN, else the larger. It may differ from nan_max only in the sign of a zero result, which no output
// depends on except the sign of an exact zero log-probability.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// ---- row offsets -------------------------------------------------------------------------------------------------

// One slot's element offset of a row's first element. Offsets are computed where they are used, not kept for the
// whole row: seven 64-bit offsets held across a row's reductions cost registers the row's data needs.
__device__ __forceinline__ std::int64_t row_offset(const RowMap& m, std::int64_t row, int slot) {
  if (m.rank == 1) return row * m.stride[slot][0];
  std::int64_t off = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const std::int64_t size = m.size[d];
    const std::int64_t q = row / size;
    off += (row - q * size) * m.stride[slot][d];
    row = q;
  }
  return off;
}

// A row of a problem: its index, and for strided_inner its position along the inner dimension.
struct RowRef {
  std::int64_t row;
  std::int64_t col;
  __device__ __forceinline__ std::int64_t off(const RowProblem& p, int slot) const {
    return row_offset(p.map, row, slot) + col * p.inner_stride[slot];
  }
};

template <typename T>
__device__ __forceinline__ const T* at(const void* base, std::int64_t off) {
  return static_cast<const T*>(base) + off;
}
template <typename T>
__device__ __forceinline__ T* at(void* base, std::int64_t off) {
  return static_cast<T*>(base) + off;
}

// ---- the score transform: z = x / T + mask ------------------------------------------------------------------------

// One row's view of the temperature and the mask.
struct RowTransform {
  bool scale;
  float t;  // NaN for an invalid per-row temperature: the row's outputs become NaN (softmax.hpp documents it)
  const void* mask;  // this row's first mask element, or null
  std::int64_t mask_step;
  DType mask_dtype;

  __device__ __forceinline__ bool active() const { return scale || mask != nullptr; }
  __device__ __forceinline__ float apply(float x, std::int64_t i) const {
    if (scale) x = x / t;  // IEEE division, as on the CPU
    if (mask != nullptr) {
      const std::int64_t o = i * mask_step;
      switch (mask_dtype) {
        case DType::b8: x = *at<unsigned char>(mask, o) ? x : -detail::inf_<float>(); break;
        case DType::f16: x = x + to_f32(*at<__half>(mask, o)); break;
        case DType::bf16: x = x + to_f32(*at<__nv_bfloat16>(mask, o)); break;
        default: x = x + *at<float>(mask, o); break;
      }
    }
    return x;
  }
};

__device__ __forceinline__ RowTransform row_transform(const RowProblem& p, const RowRef& o) {
  RowTransform t;
  t.scale = p.scale;
  t.t = p.temperature;
  if (p.temp != nullptr) {
    const float v = p.temp[o.off(p, kTemp)];
    t.t = (v > 0.0f && v <= 3.402823466e38f) ? v : detail::nan_<float>();
  }
  t.mask = nullptr;
  t.mask_step = p.step[kMask];
  t.mask_dtype = p.mask_dtype;
  if (p.has_mask) {
    const std::int64_t mo = o.off(p, kMask);
    switch (p.mask_dtype) {
      case DType::b8: t.mask = at<unsigned char>(p.mask, mo); break;
      case DType::f16:
      case DType::bf16: t.mask = at<__half>(p.mask, mo); break;
      default: t.mask = at<float>(p.mask, mo); break;
    }
  }
  return t;
}

// ---- unit-stride rows that start off a vector boundary (odd21, session 21) ------------------------------------------
// A contiguous tensor whose rows have a length that is not a multiple of the vector (GPT-2's 50257, 4097, 100) starts
// its rows at every offset in turn, so most rows miss the 16-byte boundary that a vector load needs. The kernels keep
// their element map (a thread's vector is elements i0 … i0 + V − 1 of the row, i0 a multiple of V: the row's, not the
// memory's, so that a row's result never depends on where it lies), and before odd21 loaded such a row element by
// element: 8 two-byte loads a bf16 vector, bf16 8192×50257 softmax at 18 % of copy, 0.25-0.40× torch (the s21a run,
// docs/perf-notebook.md "session 21 — odd21"). Here a vector comes from the two aligned blocks (B = sizeof the
// vector's bytes) that hold it, funnel-shifted by the row's byte offset `shift` in its block (0 < shift < B, a multiple
// of the element size): two wide loads and ~2 ALU instructions an element, the same values, so the same bits. Only
// blocks inside the row are read (the caller checks that the second block ends by the row's end; the first may start
// before row[0], in the same aligned block as row[0], which lies in the same allocation: allocations are at least
// 256-byte aligned; a pointer off 16 bytes inside a foreign or sub-allocated buffer could make memcheck report those
// bytes, and in place another block may be writing them: their values are discarded, so the result cannot change). A
// vector is stored as words (its bytes only; 16-bit rows at an odd half-word offset: a half-word,
// W − 1 words, a half-word).

// out[0, W) = the W words at byte `shift` of the 2W words lo:hi (0 < shift < 4W). kHalf: shift may be 2 mod 4 (16-bit
// elements); else a multiple of 4 and no funnel shift is needed.
template <int W, bool kHalf>
__device__ __forceinline__ void funnel_words(const unsigned (&lo)[W], const unsigned (&hi)[W], unsigned shift,
                                             unsigned (&out)[W]) {
  unsigned c[2 * W];
#pragma unroll
  for (int i = 0; i < W; ++i) {
    c[i] = lo[i];
    c[W + i] = hi[i];
  }
  const unsigned words = shift >> 2;
#pragma unroll
  for (int bit = 1; bit < W; bit <<= 1) {  // a shifting network: log2 W stages of selects, no indexed registers
    const bool take = (words & static_cast<unsigned>(bit)) != 0;
#pragma unroll
    for (int m = 0; m + bit < 2 * W; ++m) c[m] = take ? c[m + bit] : c[m];
  }
#pragma unroll
  for (int i = 0; i < W; ++i) {
    if constexpr (kHalf) out[i] = __funnelshift_r(c[i], c[i + 1], (shift & 3u) * 8u);
    else out[i] = c[i];
  }
}

// Block q's and q + 1's bytes from `shift` on, as one Vec (blocks: the row's first aligned block; q = i0 / V).
template <typename Vec, typename In>
__device__ __forceinline__ Vec load_shifted(const Vec* blocks, std::int64_t q, unsigned shift) {
  constexpr int W = int(sizeof(Vec)) / 4;
  static_assert(sizeof(Vec) % 4 == 0 && sizeof(Vec) >= 4, "whole words");
  const Vec a = blocks[q], b = blocks[q + 1];
  unsigned lo[W], hi[W], out[W];
  memcpy(lo, &a, sizeof(Vec));
  memcpy(hi, &b, sizeof(Vec));
  funnel_words<W, (sizeof(In) < 4)>(lo, hi, shift, out);
  Vec r;
  memcpy(&r, out, sizeof(Vec));
  return r;
}

// Stores w's bytes at dst (an address `shift` mod 4 past a word: 0, or 2 for 16-bit elements).
template <typename Vec>
__device__ __forceinline__ void store_shifted(void* dst, const Vec& w, unsigned shift) {
  constexpr int W = int(sizeof(Vec)) / 4;
  static_assert(sizeof(Vec) % 4 == 0 && sizeof(Vec) >= 4, "whole words");
  unsigned o[W];
  memcpy(o, &w, sizeof(Vec));
  if ((shift & 3u) == 0) {
    auto* p = static_cast<unsigned*>(dst);
#pragma unroll
    for (int i = 0; i < W; ++i) p[i] = o[i];
  } else {
    auto* h = static_cast<unsigned short*>(dst);
    h[0] = static_cast<unsigned short>(o[0]);
    auto* p = reinterpret_cast<unsigned*>(h + 1);
#pragma unroll
    for (int i = 0; i + 1 < W; ++i) p[i] = __funnelshift_r(o[i], o[i + 1], 16);
    h[2 * W - 1] = static_cast<unsigned short>(o[W - 1] >> 16);
  }
}

// ---- register-resident rows ---------------------------------------------------------------------------------------

// A thread holds E elements of a row in kSlotsPerThread vectors of V: element (k·G + g)·V + j of the row is its
// v[k·V + j], where g is the thread's index among the G threads that share the row. Consecutive threads hold
// consecutive vectors, so a warp's loads are coalesced.
// kShift (odd21): whether a unit-stride row off the vector boundary takes load_shifted / store_shifted (else element
// loads and stores, as before odd21). Measured (H200, 2026-12-02, runs s21b / s21c, softmaxkit bench on the odd grid,
// new / HEAD's binary, best of 2 alternating rounds; docs/perf-notebook.md "session 21 — odd21"): bf16 8192×50257
// softmax 0.596, log-softmax 0.586, logsumexp 0.848, backward 0.652 / 0.663; 16384×4097 0.630 / 0.609 / 0.802 /
// 0.812 / 0.813; 655360×100 forward 0.630 / 0.641 / 0.867. So on by default for 16-bit elements. Off for f32, where it
// measured 1.00-1.48× (s21b: 4-byte element loads already use a warp's sectors, and the added code spilled in kernels
// that serve aligned rows too; f32 8192×32000 log-softmax 1.20×, 4096×16384 backward 1.45×), and for 16-bit rows in
// backward_warp_kernel (rows of 100: 1.25×). block_row.cu's block_rows_kernel and cluster_stage.cu's kernel take it as
// a separate instance, launched only for calls with rows off the boundary (launch.hpp rows_off_boundary), their aligned
// forms SASS-identical to before; every other 16-bit kernel on RowTile (warp_row, block_row's lane and rows-ahead
// kernels, split_row, the backward block / chunk kernels, lse_stream's general form) carries the branch in the one
// instance that serves aligned rows too: their SASS changed, timed within the runs' spread on the issue grid (s21c).
template <typename In>
constexpr bool kShiftDefault = sizeof(In) == 2;

template <typename In, int E, bool kShift = kShiftDefault<In>>
struct RowTile {
  // 16-byte vectors, or the largest power of two dividing E when that is shorter (E = 12: 4 elements).
  static constexpr int kPow2 = E & -E;
  static constexpr int V = (16 / int(sizeof(In))) < kPow2 ? 16 / int(sizeof(In)) : kPow2;
  static constexpr int K = E / V;
  static_assert(E % V == 0, "elements per thread must be a multiple of the vector width");
  struct alignas(V * sizeof(In)) Vec {
    In v[V];
  };
  template <typename Out>
  struct alignas(V * sizeof(Out)) OutVec {
    Out v[V];
  };

  // Tile positions are ints: a tile never holds more than 2^31 elements (a row of a register path, or a chunk of
  // split_row); the row's base pointer carries the 64-bit part.
  __device__ __forceinline__ static int index(int k, int g, int G) { return (k * G + g) * V; }

  // Loads row[0, n) (stride `step`); positions past n read as `pad`: −inf (the default) adds nothing to a max or
  // a sum of exponentials, 0 nothing to a plain sum.
  // A unit-stride row off a block boundary loads its vectors by load_shifted (odd21): the same values.
  __device__ __forceinline__ static void load(float (&v)[E], const In* row, int n, std::int64_t step, int g, int G,
                                              float pad = -detail::inf_<float>()) {
    const auto shift = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(row) % sizeof(Vec));
    const bool vec = step == 1 && shift == 0;
    if (vec && index(K - 1, g, G) + V <= n) {  // the common case: every slot a full aligned vector
      const Vec* p = reinterpret_cast<const Vec*>(row) + g;
      Vec w[K];
#pragma unroll
      for (int k = 0; k < K; ++k) w[k] = p[k * G];
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w[k].v[j]);
      return;
    }
    // odd21: the block after a slot's vector must end by the row's end (elements i0 + 2V − shift / sizeof(In)).
    constexpr bool kShiftable = kShift && sizeof(Vec) >= 4;
    const bool shifted = kShiftable && step == 1 && shift != 0;
    const int lag = static_cast<int>(shift / sizeof(In));
    const Vec* blocks = reinterpret_cast<const Vec*>(reinterpret_cast<const char*>(row) - shift);
    if constexpr (kShiftable) {
      if (shifted && index(K - 1, g, G) + 2 * V - lag <= n) {  // every slot a full vector off the boundary
        Vec w[K];
#pragma unroll
        for (int k = 0; k < K; ++k) w[k] = load_shifted<Vec, In>(blocks, k * G + g, shift);
#pragma unroll
        for (int k = 0; k < K; ++k)
#pragma unroll
          for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w[k].v[j]);
        return;
      }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = index(k, g, G);
      if (vec && i0 + V <= n) {
        const Vec w = *reinterpret_cast<const Vec*>(row + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
      } else if (shifted && i0 + 2 * V - lag <= n) {
        if constexpr (kShiftable) {
          const Vec w = load_shifted<Vec, In>(blocks, k * G + g, shift);
#pragma unroll
          for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
        }
      } else {
        const In* q = row + static_cast<std::int64_t>(i0) * step;
#pragma unroll
        for (int j = 0; j < V; ++j) {
          v[k * V + j] = i0 + j < n ? to_f32(*q) : pad;
          q += step;
        }
      }
    }
  }

  // z = x / T + mask over the loaded elements; `first` is the row position of element 0 (a chunk's offset).
  __device__ __forceinline__ static void transform(float (&v)[E], const RowTransform& t, int n, int g, int G,
                                                   std::int64_t first = 0) {
    if (!t.active()) return;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = index(k, g, G);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < n) v[k * V + j] = t.apply(v[k * V + j], first + i0 + j);
    }
  }

  // Stores v to row[0, n) (stride `step`) as Out.
  template <typename Out>
  __device__ __forceinline__ static void store(Out* row, const float (&v)[E], int n, std::int64_t step, int g,
                                               int G) {
    using W = OutVec<Out>;
    const auto shift = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(row) % sizeof(W));
    const bool vec = step == 1 && shift == 0;
    constexpr bool kShiftable = kShift && sizeof(Out) == 2 && sizeof(W) >= 4;  // odd21: the vector's bytes as words
    const bool shifted = kShiftable && step == 1 && shift != 0;
    if (vec && index(K - 1, g, G) + V <= n) {
      W* p = reinterpret_cast<W*>(row) + g;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        W w;
#pragma unroll
        for (int j = 0; j < V; ++j) w.v[j] = from_f32<Out>(v[k * V + j]);
        p[k * G] = w;
      }
      return;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = index(k, g, G);
      if (vec && i0 + V <= n) {
        W w;
#pragma unroll
        for (int j = 0; j < V; ++j) w.v[j] = from_f32<Out>(v[k * V + j]);
        *reinterpret_cast<W*>(row + i0) = w;
      } else if (shifted && i0 + V <= n) {
        if constexpr (kShiftable) {
          W w;
#pragma unroll
          for (int j = 0; j < V; ++j) w.v[j] = from_f32<Out>(v[k * V + j]);
          store_shifted(row + i0, w, shift);
        }
      } else {
        Out* q = row + static_cast<std::int64_t>(i0) * step;
#pragma unroll
        for (int j = 0; j < V; ++j) {
          if (i0 + j < n) *q = from_f32<Out>(v[k * V + j]);
          q += step;
        }
      }
    }
  }
};

// ---- deterministic reductions ---------------------------------------------------------------------------------------

template <int N>
__device__ __forceinline__ float tree_sum(const float* a) {
  if constexpr (N == 1) return a[0];
  else return tree_sum<N / 2>(a) + tree_sum<N - N / 2>(a + N / 2);
}
template <int N>
__device__ __forceinline__ float tree_max(const float* a) {
  if constexpr (N == 1) return a[0];
  else return max_nan(tree_max<N / 2>(a), tree_max<N - N / 2>(a + N / 2));
}

// Butterfly over aligned groups of `width` lanes (a power of two ≤ 32); every lane of a group ends with the result.
__device__ __forceinline__ float group_sum(float v, int width) {
  for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}
__device__ __forceinline__ float group_max(float v, int width) {
  for (int o = width / 2; o > 0; o /= 2) v = max_nan(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
__device__ __forceinline__ OnlineSoftmaxState<float> group_merge(OnlineSoftmaxState<float> s, int width) {
  for (int o = width / 2; o > 0; o /= 2) {
    const auto other = OnlineSoftmaxState<float>::from_fields(__shfl_xor_sync(kFullMask, s.m, o),
                                                              __shfl_xor_sync(kFullMask, s.d, o));
    s.merge(other);  // merge is symmetric, so both lanes of a pair compute the same state
  }
  return s;
}

// The number of a row's scores equal to its max, summed like group_sum (integers: any order gives the same count).
// A full warp uses the one-instruction redux.sync (sm_80+).
__device__ __forceinline__ int group_count(int v, int width) {
  if (width == 32) return static_cast<int>(__reduce_add_sync(kFullMask, static_cast<unsigned>(v)));
  for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// Block-wide reductions of one float per thread, for blockDim.x a multiple of 32. `scratch` holds 32 floats and is
// written before the barrier and read after it; the caller separates consecutive uses of one scratch array by
// another barrier. Every thread returns the result.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = group_sum(v, 32);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return group_sum(lane < warps ? scratch[lane] : 0.0f, 32);
}
__device__ __forceinline__ int block_count(int v, int* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = group_count(v, 32);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return group_count(lane < warps ? scratch[lane] : 0, 32);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = group_max(v, 32);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return group_max(lane < warps ? scratch[lane] : -detail::inf_<float>(), 32);
}

template <typename In, typename F>
__device__ __forceinline__ void with_out_type(const RowProblem& p, F&& f) {
  if (p.out_dtype == DType::f32) f(static_cast<float*>(nullptr));
  else f(static_cast<In*>(nullptr));
}

// with_out_type for a kernel that may know its output type at compile time: Out (float, or In when In is 16-bit)
// when it does; void when it leaves the choice to p.out_dtype at run time, as with_out_type.
template <typename Out, typename In, typename F>
__device__ __forceinline__ void with_out(const RowProblem& p, F&& f) {
  if constexpr (std::is_void_v<Out>) with_out_type<In>(p, f);
  else f(static_cast<Out*>(nullptr));
}

// ---- the 16-bit-output tier of the element arithmetic (docs/semantics.md §6, "16-bit outputs") -------------------

// kPlainExp<Out>: a softmax whose outputs are stored as Out forms its terms exp(x − shift) plainly (out_exp below)
// rather than with exp_diff. Chosen by the output type at compile time: true for __half and __nv_bfloat16, false for
// float and for void (a kernel that picks its output type at run time keeps exp_diff).
template <typename Out>
inline constexpr bool kPlainExp = std::is_same_v<Out, __half> || std::is_same_v<Out, __nv_bfloat16>;

// exp(x − shift) for a term that is an output of type Out, or is summed into the l those outputs divide by.
// f32 outputs: exp_diff (TwoSum of x − shift folded back; ~16 SASS instructions, CUDA 13.0 sm_90a). 16-bit outputs:
// expf(fl(x − shift)), the same computation torch does before it rounds (FADD + expf's 8: two FFMAs fold log2 e's
// two parts, MUFU.EX2 and the 2^k scaling): the 16-bit rows are bound by instructions per element, not bytes
// (docs/perf-notebook.md, session 5's last section: ≈ 43 an element where the bf16 bandwidth floor allows ≈ 15).
// What it gives up is the subtraction's rounding, u·|x − shift| relative on a term (u = 2^-24): for an output
// p_i ≥ 1e-30, |x_i − m| ≤ ln(1/p_i) ≤ 69.1, so ≤ 69u ≈ 2^-17.9; in l the terms' errors average with the weights
// p_j to Σ p_j·|x_j − m|·u = (H(p) − log l)·u ≤ u·ln n. Against the output's own rounding (half an ulp: 2^-9
// relative in bf16, 2^-12 in f16) that is ≤ 2^-8.9 of a bf16 half-ulp (2^-5.9 of f16's): it can move an output only
// where the exact value lies that close to a rounding boundary (tests/conformance/numerics.hpp
// kPlainExpSubtractionU). expf, not ex2.approx.ftz: a bf16 output has f32's exponent range, so a probability below
// 2^-126 is a bf16 subnormal that torch and the CPU return, which a flushed term would lose; expf keeps −inf → 0 and
// NaN → NaN as exp_diff does.
template <typename Out>
__device__ __forceinline__ float out_exp(float x, float shift) {
  if constexpr (kPlainExp<Out>) return expf(x - shift);
  else return exp_diff(x, shift);
}

// The row's final state → the outputs of the per-row ops (written by one thread).
__device__ __forceinline__ void write_row_stats(const RowProblem& p, const RowRef& o,
                                                const OnlineSoftmaxState<float>& s) {
  if (p.op == Op::logsumexp) {
    p.stat0[o.off(p, kStat0)] = s.lse();
  } else {
    p.stat0[o.off(p, kStat0)] = s.m;
    p.stat1[o.off(p, kStat1)] = s.l();
  }
}

// Softmax / log-softmax of a register-resident row, in place: v holds z on entry and the outputs on return.
// For softmax v holds the terms out_exp(z, shift) (computed by the summing pass).
template <int E>
__device__ __forceinline__ void finish_rows(float (&v)[E], const RowNormalizer<float>& norm, Op op) {
  if (op == Op::softmax) {
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = norm.softmax_from_exp(v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = norm.log_softmax(v[i]);
  }
}

// exp(x − shift) for a term of a sum that is used only through its logarithm: log-softmax's and logsumexp's log l,
// and the state's l. exp2 of (x − shift)·log2 e, with the product's rounding carried as t_lo and folded back in, as
// exp_diff folds back the subtraction's: about eight instructions where exp_diff takes about fifteen, and the forward
// kernels of those ops are instruction-bound (docs/perf-notebook.md, "log l's terms"). What it leaves out is the
// subtraction's rounding, u·|x − shift| relative per term, the same error a plain expf(x − m) has (torch's). In
// l = Σ e_j it is weighted by p_j: Σ p_j·|x_j − m| = H(p) − log l ≤ ln n, so log l gains at most u·ln n
// (docs/semantics.md §6, tests/conformance/numerics.hpp `kLogTermSubtractionU`). exp2f is within 2 ulp, as expf.
// max.NaN clamps −inf to −200 (exp2 of −288.5 is 0, and t_lo stays finite) and keeps a NaN; a +inf term can come
// only from a row whose max is +inf, whose state the max decides alone.
constexpr float kLog2eHi = 1.44269502162933349609375f;  // log2 e rounded to f32
constexpr float kLog2eLo = 1.925963033500011e-08f;      // log2 e − kLog2eHi
constexpr float kLn2 = 0.693147180559945309f;
__device__ __forceinline__ float log_term_exp(float x, float shift) {
  const float d = max_nan(x - shift, -200.0f);
  const float t = d * kLog2eHi;
  const float t_lo = fmaf(d, kLog2eLo, fmaf(d, kLog2eHi, -t));  // t + t_lo = d·log2 e to within u²
  const float e = exp2f(t);
  return fmaf(e, t_lo * kLn2, e);
}

// A thread's share of a row's excess d = l − 1 (online_state.hpp): Σ exp_diff(z, shift) over its scores below
// the max (pairwise), and `ties`, its count of scores equal to the max. The max's own term is exactly 1: adding it
// to the small terms would keep them only to the absolute precision of a number near 1, so it is counted instead
// (OnlineSoftmaxState::from_max_ties_and_rest). For softmax, v is replaced by the exponentials, ties included (1).
//
// Only log l needs that: log-softmax, logsumexp and the state. Softmax divides by l, and a plain sum of every term
// (the 1s included) already has l's full relative precision, so with count_ties false the sum is the plain one
// (ties stay 0, and the caller builds the state with from_max_and_sum: d = l − 1 is exact, so on the register
// paths softmax's arithmetic is the plain sum's, bit for bit). Counting costs a compare, a select and a predicated integer
// add per element beside exp_diff's ~15 instructions, and one more integer reduction per row; the forward kernels
// are instruction-bound, so only the ops that gain from it pay it (docs/perf-notebook.md, "The excess state").
//
// The ops that count ties take only log l, never a term by itself, so their terms come from log_term_exp (below),
// not exp_diff: the sum averages each term's error with the weights p_j, which is where the cheaper exponential's
// extra error goes.
// Out: the type softmax's outputs are stored as, when the kernel knows it at compile time; a 16-bit Out takes the
// terms from out_exp's plain tier (above), float or void (unknown) from exp_diff.
template <typename Out = float, int E>
__device__ __forceinline__ float thread_exp_rest(float (&v)[E], float shift, bool keep_exp, bool count_ties,
                                                 int& ties) {
  float e[E];
  if (count_ties) {
#pragma unroll
    for (int i = 0; i < E; ++i) e[i] = log_term_exp(v[i], shift);
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) e[i] = out_exp<Out>(v[i], shift);
  }
  float r[E];
  if (count_ties) {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const bool tie = v[i] == shift;
      r[i] = tie ? 0.0f : e[i];
      ties += tie ? 1 : 0;
    }
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) r[i] = e[i];
  }
  if (keep_exp) {
#pragma unroll
    for (int i = 0; i < E; ++i) v[i] = e[i];
  }
  return tree_sum<E>(r);
}

// The row's (or chunk's) state from the reductions of thread_exp_rest.
__device__ __forceinline__ OnlineSoftmaxState<float> state_from(float max, int ties, float sum, bool count_ties) {
  return count_ties ? OnlineSoftmaxState<float>::from_max_ties_and_rest(max, ties, sum)
                    : OnlineSoftmaxState<float>::from_max_and_sum(max, sum);
}

// ---- the log ops' terms at fewer instructions (warp_per_row since 2026-11-30; docs/perf-notebook.md "warpdiet") ------

// 2^t on the SFU: ex2.approx.ftz. exp2f is this same instruction plus a rescaling (a compare and two multiplies) that
// only subnormal results need, and CUDA documents exp2f within 2 ulp, so where the result is normal this is within
// 2 ulp too (the gates' E = 4u). A result below 2^-126 flushes to +0: a term of a log op's sum then loses at most
// 2^-126 absolutely, n·2^-126 in d, which no gate can see (they are absolute, ≥ 10u, on log l; l ≥ 1 for the state).
__device__ __forceinline__ float ex2_ftz(float t) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
}

// log_term_exp's arithmetic, bit for bit except that a term below 2^-126 is 0: the same d, t, t_lo and fold, with
// 2^t from ex2_ftz, and the product's error r = d·log2e_hi − t formed by one FFMA on −t (written in PTX: the
// compiler otherwise forms −t with a second FMUL). Eight instructions where log_term_exp compiles to twelve
// (SASS, CUDA 13.0, sm_90a): FADD, FMNMX, FMUL, FFMA, FFMA, FMUL, MUFU.EX2, FFMA.
__device__ __forceinline__ float log_term_exp_ftz(float x, float shift) {
  const float d = max_nan(x - shift, -200.0f);
  float t, r;
  asm("{\n\t.reg .f32 nt;\n\tmul.rn.f32 %0, %2, %3;\n\tneg.f32 nt, %0;\n\tfma.rn.f32 %1, %2, %3, nt;\n\t}"
      : "=f"(t), "=f"(r)
      : "f"(d), "f"(kLog2eHi));
  const float c = fmaf(d, kLog2eLo, r) * kLn2;
  const float e = ex2_ftz(t);
  return fmaf(e, c, e);
}

__device__ __forceinline__ float log_term_exp16(float x, float shift);

// thread_exp_rest for the log ops (count_ties true) with log_term_exp_ftz: the same ties and the same rest but for
// log_term_exp_ftz's flush. (A mask from set.eq, an AND and IADD3 for the count compiled to FSETP, SEL, LOP3 and
// half an IADD3, more than the compare, select and predicated add here.) k16: the terms by log_term_exp16 (16-bit
// inputs, below), the same ties and tree.
template <int E, bool k16 = false>
__device__ __forceinline__ float thread_log_rest(const float (&v)[E], float shift, int& ties) {
  float r[E];
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const bool tie = v[i] == shift;
    r[i] = tie ? 0.0f : (k16 ? log_term_exp16(v[i], shift) : log_term_exp_ftz(v[i], shift));
    ties += tie ? 1 : 0;
  }
  return tree_sum<E>(r);
}

// ---- the log ops' terms from 16-bit inputs (fwd16, session 7; docs/semantics.md §6, "16-bit inputs") ---------------

// 2^t with t = fl(fl(x − shift)·log2e_hi), nothing folded back: FADD, FMUL, MUFU.EX2 where log_term_exp_ftz takes
// eight (SASS, CUDA 13.0, sm_90a). Why it may: with 16-bit scores (no temperature, no mask) x and the max are 16-bit
// values, and fl(x − shift) is exact whenever their difference spans at most 24 bits (bf16: exponents at most 15
// apart, f16 12), so the term's one rounding left is the product's: t is off by u·|t| relative and log2e_hi by 0.224u,
// 1.224u·|x − shift| in the exponent, as much relative in the term; l averages that with the weights p_j, at most
// 1.224u·ln n (numerics.hpp kLogTermProductU), the size of the subtraction's rounding that the f32 path already has.
// A −inf score gives t = −inf and +0 (no clamp needed: nothing is folded); NaN stays NaN; a term below 2^-126 flushes
// to 0 as in log_term_exp_ftz. With a temperature or mask the subtraction may round too (kLogTermSubtractionU): the
// gates take both.
__device__ __forceinline__ float log_term_exp16(float x, float shift) { return ex2_ftz((x - shift) * kLog2eHi); }

// The log ops' rest by the input type: 16-bit inputs log_term_exp16, f32 inputs log_term_exp_ftz (thread_log_rest).
// warp_per_row, block_per_row (direct and lane-staged), the wide block and cluster_row take it; split_row, grid_row and
// the backward keep thread_log_rest.
template <typename In, int E>
__device__ __forceinline__ float thread_log_rest_in(const float (&v)[E], float shift, int& ties) {
  return thread_log_rest<E, sizeof(In) == 2>(v, shift, ties);
}

// A backward pass's dx before any temperature, from y, dy and the row's sum s: softmax backward y·(dy − s), log-softmax
// backward dy − exp(y)·s (s = Σ dy·y or Σ dy), written over y. The one expression of backward.cu's blocks and
// elementwise pass and of row_loop.cu, whose outputs are compared bit for bit.
template <bool kLogBw, int E>
__device__ __forceinline__ void backward_grads(float (&y)[E], const float (&dy)[E], float s) {
  if constexpr (kLogBw) {
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = dy[i] - expf(y[i]) * s;
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) y[i] = y[i] * (dy[i] - s);
  }
}

}  // namespace smk::cuda::kernels
