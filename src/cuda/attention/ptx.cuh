// softmaxkit (internal): the inline PTX the attention kernels use, in one place, each wrapper with what it does.
//
// Everything here is sm_80+ (Ampere's asynchronous copies, ldmatrix and the m16n8k16 tensor-core product), which the
// H200 runs natively. The Hopper-only instructions (wgmma, setmaxnreg, TMA) are not used yet: issue 7's stage 2.
//
// Fragment layouts of mma.m16n8k16 with 16-bit inputs (PTX ISA, "Matrix Fragments for mma.m16n8k16"), for lane l,
// g = l / 4 (the group) and c = l % 4 (the thread in the group):
//   A (16×16, row-major) a0: (g, 2c..2c+1)  a1: (g+8, 2c..)  a2: (g, 2c+8..)  a3: (g+8, 2c+8..)
//   B (16×8, "col")      b0: (k = 2c..2c+1, n = g)           b1: (k = 2c+8.., n = g)
//   C (16×8, f32)        c0,c1: (g, 2c..2c+1)                c2,c3: (g+8, 2c..2c+1)
// The C layout of two adjacent 8-column tiles is the A layout of one 16-column tile, which is how the attention
// kernel feeds its probabilities P into P·V straight from registers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace smk::cuda::ptx {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, bypassing L1 (.cg); with src_bytes = 0 nothing is read and the 16
// destination bytes are zero-filled, which is how rows past the end of a sequence are never read.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8×8 16-bit matrices from shared memory; lanes 8j..8j+7 give the row addresses of matrix j, which lands in
// r[j]. Without .trans each lane receives the pair (row l/4, columns 2(l%4)..+1) of each matrix; with .trans the
// pair (rows 2(l%4)..+1, column l/4), i.e. the transposed matrix.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c += a·b on the tensor cores, f32 accumulators, T = __half or __nv_bfloat16 inputs.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                  std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two f32 values rounded to nearest into one register of two 16-bit values, lo in the low half (the lower column).
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ std::uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}
template <>
__device__ __forceinline__ std::uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// 2^x by the special-function unit (ex2.approx.ftz: relative error about 2^-22, results below 2^-126 flush to 0).
// Attention's probabilities are rounded to 16 bits before P·V, so this error is far below what is kept.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Element offset of (row, col) in a shared [rows][D] tile of 16-bit values whose 16-byte chunks are XOR-swizzled by
// row (chunk ^ row % 8): the 8 row addresses of each ldmatrix phase then fall in 8 different bank groups. D is a
// multiple of 64 (8 chunks). Added for the decode kernel (decode_mma.cu); prefill.cu has its own copy, swz().
template <int D>
__device__ __forceinline__ int swizzled(int row, int col) {
  static_assert(D % 64 == 0, "rows of at least 8 chunks");
  return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

// A 32-bit register holding two 16-bit values, each with its sign flipped: exact negation of a pair of f16/bf16.
__device__ __forceinline__ std::uint32_t neg2(std::uint32_t pair) { return pair ^ 0x80008000u; }

}  // namespace smk::cuda::ptx
