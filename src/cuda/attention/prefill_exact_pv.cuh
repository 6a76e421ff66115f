// softmaxkit (internal): how both prefill kernels (prefill.cu, prefill_wgmma.cu) keep a non-finite V row that a
// query row may not see out of that row's output.
//
// The tensor cores compute O += P·V over a whole key tile, so a key that a row may not see still enters its sum as
// p = 0 times v, and 0·NaN = 0·inf = NaN. Masked scores make p exactly 0, so with finite V this is harmless; only a
// non-finite V row in a tile that some row of the CTA may not wholly see can leak. Under the causal mask that is the
// tile crossing the diagonal (on the TMA path also its rows past the CTA's last visible key, which the box loads);
// keys past a sequence's end are zero-filled in shared memory (TMA's out-of-bounds fill, cp.async's src-size 0), so
// they never hold one.
//
// So, on such a tile only, the CTA scans the V rows its first query row may not see (the others are seen by every
// row of the CTA) for an exponent field of all ones, combines the threads' findings in a barrier
// (__syncthreads_or), and when one is found takes exact_pv below instead of the tensor-core P·V for that tile:
// each thread sums its own accumulator entries over the keys its rows see, skipping the others instead of
// multiplying them by 0. A visible non-finite V row still reaches the row, as in the float64 reference.
// Cost on finite data: the scan of at most one or two tiles per CTA (a few 16-byte shared loads a thread) and their
// barrier; exact_pv itself (about kBlockN · D / 4 FMAs a thread, CUDA cores) runs only when the scan fires.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/attention/ptx.cuh"

namespace smk::cuda::prefill_exact {

// The 16-bit value in the low (high) half of `w` as f32.
template <typename T>
__device__ __forceinline__ float lo_of(std::uint32_t w) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(static_cast<unsigned short>(w)));
  else return __uint_as_float(w << 16);
}
template <typename T>
__device__ __forceinline__ float hi_of(std::uint32_t w) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
  else return __uint_as_float(w & 0xFFFF0000u);
}

// True when either 16-bit value in `w` is ±inf or NaN (its exponent field all ones).
template <typename T>
__device__ __forceinline__ bool pair_nonfinite(std::uint32_t w) {
  constexpr std::uint32_t e = std::is_same_v<T, __half> ? 0x7C00u : 0x7F80u;
  return (w & e) == e || ((w >> 16) & e) == e;
}

// Thread tid's share (of kThreads) of the scan: true when a 16-bit value in V rows x_lo..x_hi−1 of a
// [kBlockN][D] tile is non-finite (x_hi ≤ kBlockN; a trimmed diagonal tile of prefill_wgmma.cu stops at 64). chunk(x, ch) is the byte address of some 16-byte chunk ch of row x (the chunks of a row in any order:
// the swizzle does not matter to a scan).
template <typename T, int D, int kBlockN, int kThreads, typename ChunkAddr>
__device__ __forceinline__ bool rows_nonfinite(const ChunkAddr& chunk, int x_lo, int tid, int x_hi = kBlockN) {
  constexpr int kChunks = D / 8;
  bool bad = false;
#pragma unroll 2
  for (int i = x_lo * kChunks + tid; i < x_hi * kChunks; i += kThreads) {
    const uint4 v = ptx::lds128(chunk(i / kChunks, i % kChunks));
    bad |= pair_nonfinite<T>(v.x) || pair_nonfinite<T>(v.y) || pair_nonfinite<T>(v.z) || pair_nonfinite<T>(v.w);
  }
  return bad;
}

// O += P·V for one 16-row m-tile of a warp over one key tile, on the CUDA cores, skipping for each row the keys it
// may not see. Layouts are the tensor cores' (ptx.cuh): pw(kk, e) is P's A-fragment register e of key step kk
// (two 16-bit p: e = 0 row g, keys 16kk + 2c..+1; e = 1 row g + 8, same keys; e = 2, 3 the same with keys + 8);
// o(t, i) the accumulator of n-tile t (i = 0, 1: row g, columns 8t + 2c + i; i = 2, 3: row g + 8); vaddr(x, col)
// the byte address of V[x][col..col+1] in shared memory. vis0 / vis1: the last tile key rows g / g + 8 see (−1:
// none). p is used as rounded to 16 bits, like the tensor-core path; products are summed in key order in f32 (other
// bits than the tensor cores', within the same bound). Each quad gathers a row's P by shuffles; the key-step loop
// stays rolled (its P registers picked by a select chain), so the rare path adds little code.
template <typename T, int kBlockN, int kDT, typename PW, typename VAddr, typename OAcc>
__device__ __forceinline__ void exact_pv(const PW& pw, const VAddr& vaddr, const OAcc& o, int vis0, int vis1) {
  const int lane = static_cast<int>(threadIdx.x) % 32, quad = lane & ~3, c = lane & 3;
#pragma unroll 1
  for (int kk = 0; kk < kBlockN / 16; ++kk) {
    std::uint32_t w[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      w[e] = pw(0, e);
#pragma unroll
      for (int i = 1; i < kBlockN / 16; ++i)
        if (kk == i) w[e] = pw(i, e);
    }
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
#pragma unroll 1
      for (int src = 0; src < 4; ++src) {
        const std::uint32_t w0 = __shfl_sync(0xffffffffu, w[2 * hf], quad | src);
        const std::uint32_t w1 = __shfl_sync(0xffffffffu, w[2 * hf + 1], quad | src);
#pragma unroll
        for (int bb = 0; bb < 2; ++bb) {
          const int x = 16 * kk + 8 * hf + 2 * src + bb;
          const float p0 = bb ? hi_of<T>(w0) : lo_of<T>(w0), p1 = bb ? hi_of<T>(w1) : lo_of<T>(w1);
          const bool see0 = x <= vis0, see1 = x <= vis1;
          if (!see0 && !see1) continue;
#pragma unroll
          for (int t = 0; t < kDT; ++t) {
            const std::uint32_t v = ptx::lds32(vaddr(x, 8 * t + 2 * c));
            const float v0 = lo_of<T>(v), v1 = hi_of<T>(v);
            if (see0) {
              o(t, 0) = fmaf(p0, v0, o(t, 0));
              o(t, 1) = fmaf(p0, v1, o(t, 1));
            }
            if (see1) {
              o(t, 2) = fmaf(p1, v0, o(t, 2));
              o(t, 3) = fmaf(p1, v1, o(t, 3));
            }
          }
        }
      }
    }
  }
}

}  // namespace smk::cuda::prefill_exact
