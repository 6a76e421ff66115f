// softmaxkit (internal, device code): warp_per_row's row loads and stores with cache hints (short8, session 8), shared
// by the forward (warp_row.cu) and the backward's warp kernel (backward.cu).
//
// The short rows read each input element once and write each output element once. kHint 1: a row's 16-byte vectors
// loaded by ld.global.nc.L1::no_allocate with an L2 evict-first policy (the line is not read again: it should neither
// take L1 lines from the other warps' rows nor stay in L2); kHint 2: that, and the outputs' vectors stored by
// st.global.cs (streaming). Only the common case takes them (unit stride, aligned, every slot of the lane a full
// vector, 16-byte vectors); every other row goes through RowTile (common.cuh) as before. The values loaded and stored
// are the same, so the outputs are bitwise those of kHint 0.
#pragma once

#include <cstdint>

#include "cuda/softmax/common.cuh"

namespace smk::cuda::kernels::warp_hints {

__device__ __forceinline__ std::uint64_t evict_first_policy() {
  std::uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ int4 load_evict_first(const void* a, std::uint64_t policy) {
  int4 r;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(a), "l"(policy));
  return r;
}
__device__ __forceinline__ void store_streaming(void* a, int4 v) {
  asm volatile("st.global.cs.v4.s32 [%0], {%1, %2, %3, %4};" ::"l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// True where RowTile's load / store take their one-branch case: unit stride, `row` aligned to `align` bytes, and
// every one of the lane's K slots a full vector.
template <typename In, int E>
__device__ __forceinline__ bool whole_vectors(const void* row, std::size_t align, int n, std::int64_t step, int g,
                                              int G) {
  using Tile = RowTile<In, E>;
  return step == 1 && (reinterpret_cast<std::uintptr_t>(row) % align) == 0 && Tile::index(Tile::K - 1, g, G) + Tile::V <= n;
}

// The lane's K raw vectors of a row whose whole_vectors holds: plain loads (kHint 0) or hinted ones.
template <typename In, int E, int kHint>
__device__ __forceinline__ void load_vectors(typename RowTile<In, E>::Vec (&w)[RowTile<In, E>::K], const In* row,
                                             int g, int G, std::uint64_t policy) {
  using Tile = RowTile<In, E>;
  using Vec = typename Tile::Vec;
  const Vec* p = reinterpret_cast<const Vec*>(row) + g;
  if constexpr (kHint != 0 && sizeof(Vec) == 16) {
#pragma unroll
    for (int k = 0; k < Tile::K; ++k) {
      const int4 r = load_evict_first(p + k * G, policy);
      __builtin_memcpy(&w[k], &r, sizeof(Vec));
    }
  } else {
#pragma unroll
    for (int k = 0; k < Tile::K; ++k) w[k] = p[k * G];
  }
}

// RowTile::load with the hints on its common case (the same values, so the same bits).
template <typename In, int E, int kHint>
__device__ __forceinline__ void load_row(float (&v)[E], const In* row, int n, std::int64_t step, int g, int G,
                                         std::uint64_t policy) {
  using Tile = RowTile<In, E>;
  using Vec = typename Tile::Vec;
  if constexpr (kHint != 0 && sizeof(Vec) == 16) {
    if (whole_vectors<In, E>(row, sizeof(Vec), n, step, g, G)) {
      Vec w[Tile::K];
      load_vectors<In, E, kHint>(w, row, g, G, policy);
#pragma unroll
      for (int k = 0; k < Tile::K; ++k)
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) v[k * Tile::V + j] = to_f32(w[k].v[j]);
      return;
    }
  }
  Tile::load(v, row, n, step, g, G);
}

// RowTile::store with streaming stores on its common case (kHint ≥ 2 and whole 16-byte pieces).
template <typename In, int E, int kHint, typename O>
__device__ __forceinline__ void store_row(O* row, const float (&v)[E], int n, std::int64_t step, int g, int G) {
  using Tile = RowTile<In, E>;
  using W = typename Tile::template OutVec<O>;
  if constexpr (kHint >= 2 && sizeof(W) % 16 == 0) {
    if (whole_vectors<In, E>(row, sizeof(W), n, step, g, G)) {
      W* p = reinterpret_cast<W*>(row) + g;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        W w;
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) w.v[j] = from_f32<O>(v[k * Tile::V + j]);
        int4 r[sizeof(W) / 16];
        __builtin_memcpy(r, &w, sizeof(W));
#pragma unroll
        for (int c = 0; c < int(sizeof(W) / 16); ++c) store_streaming(reinterpret_cast<int4*>(p + k * G) + c, r[c]);
      }
      return;
    }
  }
  Tile::template store<O>(row, v, n, step, g, G);
}

}  // namespace smk::cuda::kernels::warp_hints
