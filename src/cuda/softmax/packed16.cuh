// softmaxkit (internal, device code; short10, session 10): a 16-bit row held packed in registers as loaded, two
// elements a 32-bit word, and unpacked to f32 at each use, so that a warp_per_row lane's live set between the row's
// reductions is the packed row (E/2 registers), not the converted one (E).
//
// Why inline PTX with opaque operands: short9 held y and dy packed and converted with to_f32 at each use; the
// compiler saw the same conversion of the same word twice, kept the first result for the second use (CSE), and the
// row's f32 registers came back (120 at E = 32 instead of 128; docs/perf-notebook.md "short9"). An empty asm on the
// words did not stop it: it emits no PTX instruction, so ptxas still saw one conversion of one register. Here every
// pass over the row has its own unpack whose operands ptxas cannot prove equal to another pass's:
//   pass 0: immediate operands (bf16: shl.b32 / and.b32; f16: cvt.f32.f16 of the word's half);
//   pass k ≥ 1: prmt.b32 with a selector held in a register that the kernel derives from a run-time value
//   (PackedKeys), a different register a pass, then (f16) cvt.f32.f16 of the low half.
// The words are the same bits either way, and the unpack is exact (a bf16 is the high half of its f32; cvt.f32.f16 is
// exact), so the values and the arithmetic after them are the unpacked kernels' own: the outputs are bitwise theirs
// (tests/cuda/softmax/test_warp_row_gpu.cpp, Packed*).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/softmax/common.cuh"
#include "cuda/softmax/packed_rule.hpp"

namespace smk::cuda::kernels {

// The prmt selectors of one pass, in registers: lo moves the word's low half into the unpacked value's place, hi the
// high half (bf16: into bits 16..31 with zeros below; f16: into bits 0..15). `zero` must be 0 at run time and unknown
// to the compiler (a kernel argument's bits that are always 0); each pass gets its own pair.
struct PackedKeys {
  std::uint32_t lo, hi;
};
template <typename In>
__device__ __forceinline__ PackedKeys packed_keys(std::uint32_t zero) {
  PackedKeys k;
  // bf16: d = {0, 0, w.b0, w.b1} (0x1044) and {0, 0, w.b2, w.b3} (0x3244); f16: the half into the low bytes
  // (0x4410, 0x4432). The `zero` is added by an asm so that it survives to ptxas as an operand.
  const std::uint32_t lo = std::is_same_v<In, __nv_bfloat16> ? 0x1044u : 0x4410u;
  const std::uint32_t hi = std::is_same_v<In, __nv_bfloat16> ? 0x3244u : 0x4432u;
  asm volatile("add.u32 %0, %1, %2;" : "=r"(k.lo) : "r"(zero), "n"(lo));
  asm volatile("add.u32 %0, %1, %2;" : "=r"(k.hi) : "r"(zero), "n"(hi));
  return k;
}

// Element j (0: low half, 1: high half) of word w as f32, by pass 0's unpack.
template <typename In>
__device__ __forceinline__ float unpack0(std::uint32_t w, int j) {
  float r;
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    std::uint32_t b;
    if (j == 0) asm volatile("shl.b32 %0, %1, 16;" : "=r"(b) : "r"(w));
    else asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(b) : "r"(w));
    r = __uint_as_float(b);
  } else {
    if (j == 0) asm volatile("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %1;\n\tcvt.f32.f16 %0, l;\n\t}" : "=f"(r) : "r"(w));
    else asm volatile("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %1;\n\tcvt.f32.f16 %0, h;\n\t}" : "=f"(r) : "r"(w));
  }
  return r;
}

// The same element by a later pass's unpack, through that pass's selectors.
template <typename In>
__device__ __forceinline__ float unpack_k(std::uint32_t w, int j, const PackedKeys& k) {
  std::uint32_t b;
  asm volatile("prmt.b32 %0, %1, 0, %2;" : "=r"(b) : "r"(w), "r"(j == 0 ? k.lo : k.hi));
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    return __uint_as_float(b);
  } else {
    float r;
    asm volatile("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %1;\n\tcvt.f32.f16 %0, l;\n\t}" : "=f"(r) : "r"(b));
    return r;
  }
}

// A lane's E elements of a row as RowTile<In, E> lays them out (element k·V + j of the lane is row position
// (k·G + g)·V + j), packed: element i in word i / 2, half i % 2, as a 16-byte vector load leaves them.
template <typename In, int E>
struct PackedRow {
  static_assert(sizeof(In) == 2 && E % 8 == 0, "16-bit rows, whole 16-byte vectors a lane");
  using Tile = RowTile<In, E>;
  static constexpr int V = Tile::V, K = Tile::K, kWords = E / 2;
  static_assert(V == 8, "16-byte vectors");
  std::uint32_t w[kWords];

  // The dense rows only (packed_rule.hpp packed_dense): every vector whole and aligned.
  __device__ __forceinline__ void load(const In* row, int g, int G) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const uint4 q = *reinterpret_cast<const uint4*>(row + Tile::index(k, g, G));
      w[k * 4 + 0] = q.x, w[k * 4 + 1] = q.y, w[k * 4 + 2] = q.z, w[k * 4 + 3] = q.w;
    }
  }
  __device__ __forceinline__ void fill(In pad) {
    std::uint32_t b;
    if constexpr (std::is_same_v<In, __nv_bfloat16>) b = __bfloat16_as_ushort(pad);
    else b = __half_as_ushort(pad);
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = b | (b << 16);
  }
  __device__ __forceinline__ float get0(int i) const { return unpack0<In>(w[i / 2], i % 2); }
  __device__ __forceinline__ float get(int i, const PackedKeys& k) const { return unpack_k<In>(w[i / 2], i % 2, k); }
};

// tree_sum<N> / tree_max<N> (common.cuh) of f(off), …, f(off + N − 1): the same tree, the same additions in the same
// order, with each leaf formed where the tree takes it, so no array of N terms is held (the packed kernels' passes).
template <int N, typename F>
__device__ __forceinline__ float tree_sum_of(F&& f, int off = 0) {
  if constexpr (N == 1) return f(off);
  else return tree_sum_of<N / 2>(f, off) + tree_sum_of<N - N / 2>(f, off + N / 2);
}
template <int N, typename F>
__device__ __forceinline__ float tree_max_of(F&& f, int off = 0) {
  if constexpr (N == 1) return f(off);
  else return max_nan(tree_max_of<N / 2>(f, off), tree_max_of<N - N / 2>(f, off + N / 2));
}

// Stores f(i) for the lane's elements i as In, a 16-byte vector at a time (dense rows): the outputs are formed where
// they are stored, so no row of f32 results is held.
template <typename In, int E, typename F>
__device__ __forceinline__ void store_packed_row(In* row, int g, int G, F&& f) {
  using Tile = RowTile<In, E>;
  using W = typename Tile::template OutVec<In>;
#pragma unroll
  for (int k = 0; k < Tile::K; ++k) {
    W o;
#pragma unroll
    for (int j = 0; j < Tile::V; ++j) o.v[j] = from_f32<In>(f(k * Tile::V + j));
    *reinterpret_cast<W*>(row + Tile::index(k, g, G)) = o;
  }
}

}  // namespace smk::cuda::kernels
