// softmaxkit (internal): the inline PTX the attention kernels use, in one place, each wrapper with what it does.
//
// Everything down to the Hopper section is sm_80+ (Ampere's asynchronous copies, ldmatrix and the m16n8k16
// tensor-core product), which the H200 runs natively. The Hopper section (wgmma) assembles only for sm_90a: its
// callers compile it under __CUDA_ARCH_FEAT_SM90_ALL.
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
#include <type_traits>

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

// Plain shared-memory loads at a byte address (what __cvta_generic_to_shared gives): 4 and 16 bytes. Used by the
// prefill kernels' rare exact P·V and their scan of a V tile for non-finite values (prefill_exact_pv.cuh).
__device__ __forceinline__ std::uint32_t lds32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint4 lds128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}


// ---- Hopper (sm_90a): wgmma, the asynchronous warpgroup matrix product (PTX ISA, "Asynchronous Warpgroup Level
// Matrix Multiply-Accumulate"). Used by prefill_wgmma.cu. The four warps of a warpgroup (128 threads, starting at a
// warp index divisible by 4) issue each wgmma together; the product runs in the background until wgmma.wait_group.
//
// Accumulator layout of m64nNk16 (f32): warp w of the warpgroup holds rows 16w..16w+15; lane l, g = l / 4,
// c = l % 4, holds for each 8-column n-tile t: d[4t], d[4t+1] = (16w + g, 8t + 2c..+1), d[4t+2], d[4t+3] =
// (16w + g + 8, 8t + 2c..+1): mma.m16n8k16's C layout, one per n-tile. A from registers (four 32-bit registers of
// two 16-bit values) has mma.m16n8k16's A layout per warp, so two adjacent n-tiles of an accumulator, rounded to
// 16 bits, are the A operand of one k16 step (how attention feeds P to P·V without shared memory).
//
// Shared-memory operands are described by a 64-bit matrix descriptor. The only layout used here is the 128-byte
// swizzle: a tile is stored as panels of 64 16-bit columns (128 bytes a row), rows 128 bytes apart, and the 16-byte
// chunk k of row r sits at chunk k ^ (r % 8) (the address bits [4:6] XOR bits [7:9]; panels start on 1024-byte
// boundaries so the pattern lines up). Eight rows (1024 bytes) form one swizzle atom.
//   K-major operand (A = Q as [rows][d], B = K as [keys][d]: the reduction dimension contiguous): SBO = 1024 (the
//   next 8 rows), LBO unused (the k16 step, 32 bytes, stays inside a 128-byte row); the k-th step of 16 columns
//   starts 32·(k % 4) bytes into panel k / 4.
//   MN-major B (V as [keys][d] for O = P·V: N = d contiguous, the transpose bit set): SBO = 1024 (the next 8 keys),
//   LBO = the byte distance between 64-column panels; the k-th step of 16 keys starts 16·128·k bytes in.
// Descriptor bits: [0,14) start address >> 4, [16,30) LBO >> 4, [32,46) SBO >> 4, [49,52) base offset (0: atoms
// 1024-aligned), [62,64) swizzle (1 = 128 bytes).
__device__ __forceinline__ std::uint64_t sw128_desc(std::uint32_t smem_byte_addr, std::uint32_t lbo,
                                                    std::uint32_t sbo) {
  return static_cast<std::uint64_t>((smem_byte_addr >> 4) & 0x3FFFu) |
         (static_cast<std::uint64_t>((lbo >> 4) & 0x3FFFu) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}
// A descriptor moved by `bytes` (a multiple of 16, within shared memory): only the start-address field changes.
__device__ __forceinline__ std::uint64_t desc_add(std::uint64_t desc, std::uint32_t bytes) {
  return desc + (bytes >> 4);
}

// Shared memory written by ordinary stores or cp.async (the generic proxy) and then read by wgmma (the async proxy):
// each writing thread fences after its writes land and before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Before a batch of wgmma: orders this thread's earlier register writes (accumulators, the A fragments) before the
// wgmma reads of them.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of the warpgroup's committed groups are still running; their results are then in registers.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The compiler sees a wgmma's accumulators written when it is issued, not when it completes: an empty asm on each
// register right after the wait keeps later reads and writes of them from being moved above the wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
// Keeps what v0 and v1 depend on ahead of the next wgmma wait in ptxas's schedule (CUDA 13.0, sm_90a). The empty
// asm above orders nothing in SASS: ptxas moved the P·V wait (WARPGROUP.DEPBAR.LE gsb0, 0) of prefill_wgmma.cu above
// the softmax's maxima and exponentials, so the softmax never ran under P·V (session 8, pfx8, read in the SASS of
// the 128-key producer kernel). A shared-memory store is not moved across the wait (the tensor cores may be reading
// shared memory until it), so a store predicated on v0 and v1 pins them, and with them every exponential of the
// row sums, ahead of it. The predicate (both all-ones bit patterns, a NaN no arithmetic here produces) is false in
// practice; were it true, `addr` is a word nothing else reads.
__device__ __forceinline__ void keep_ahead_of_wait(float v0, float v1, std::uint32_t addr) {
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 t;\nand.b32 t, %0, %1;\nsetp.eq.u32 p, t, 0xffffffff;\n@p st.shared.u32 [%2], t;\n}\n" ::"r"(
          __float_as_uint(v0)),
      "r"(__float_as_uint(v1)), "r"(addr)
      : "memory");
}
// The same for 32-bit A fragments ([K steps][4] registers) that a wgmma still reads until the wait.
template <int K>
__device__ __forceinline__ void fence_regs(std::uint32_t (&r)[K][4]) {
#pragma unroll
  for (int i = 0; i < K; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}
// ---- Hopper (sm_90): the tensor memory accelerator (TMA) and transaction-counting mbarriers. A CTA-scope mbarrier
// in shared memory (8 bytes) completes a phase when its pending arrivals reach zero and the bytes it was told to
// expect (expect_tx) have landed; the waiters test the phase's parity (phase k of a barrier has parity k % 2).
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Makes the initialised barriers visible to the async proxy (the TMA unit) before any copy signals them.
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also tells the barrier to expect `bytes` more bytes in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Register reallocation between warpgroups (sm_90a): every thread of a warpgroup executes it; dec releases
// registers down to N a thread, inc waits until N are free for it. N: a multiple of 8 in [24, 256].
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
// A plain arrival (no bytes): how a consumer warp tells the producer it is done with a stage (prefill_wgmma.cu).
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Named barriers (bar.sync / bar.arrive / bar.red on barrier `id`, 1..15, with `threads` threads, a multiple of
// 32; barrier 0 is __syncthreads'): a subset of the CTA's warps synchronises without the others.
__device__ __forceinline__ void bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// bar.sync that also returns whether `v` was true in any of the `threads` threads.
__device__ __forceinline__ bool bar_or(int id, int threads, bool v) {
  std::uint32_t r;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.u32 q, %1, 0;\nbar.red.or.pred p, %2, %3, q;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(r)
      : "r"(static_cast<std::uint32_t>(v)), "r"(id), "r"(threads)
      : "memory");
  return r != 0;
}
// Waits for the phase of parity `parity` to complete. try_wait suspends the thread for a while in hardware. With
// kTrap, a phase that never completes (a bug) ends in a trap after about 2^22 tries instead of a hang. Kernels that
// use setmaxnreg must pass kTrap = false: a trap reachable after setmaxnreg.inc makes ptxas (CUDA 13.0, sm_90a)
// allocate that region within the launch bound's count instead of the raised one (the producer-warpgroup kernel with
// 128-key tiles: 168 registers and 592 bytes of spill with the trap, 217 registers and none without; a 40-line
// kernel shows the same, 380 bytes of spill, and none with `exit` or no timeout in the trap's place).
// A waiter must not run more than one phase ahead: while phase k − 1 is still pending, a wait for phase k (the
// other parity) returns at once, since the parity it asks about last completed in phase k − 2. So a thread must have
// seen phase k − 1 complete before it waits for phase k (session 6's scan of V by the producer warpgroup in
// prefill_wgmma.cu did not, and read a tile before it landed).
template <bool kTrap = true>
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  for (std::uint32_t i = 0;; ++i) {
    std::uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if constexpr (kTrap) {
      if (i > (1u << 22)) __trap();
    }
  }
}
// A 4-D box from global memory (the tensor map `map`, a __grid_constant__ kernel parameter, says its shape, strides,
// box and swizzle) into shared memory at `dst`, coordinates innermost first; completes `bytes` on the barrier `bar`
// (the whole box, zero-filled parts included). Issued by one thread.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const void* map, int c0, int c1, int c2, int c3,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// d (64 × N, f32) = A·B (+ d when `accumulate`), A (64 × 16) and B (16 × N) both K-major in shared memory (trans
// bits 0), and d (64 × N) += A·B (= when `accumulate` is 0) with A (64 × 16) from registers and B (16 × N) MN-major
// in shared memory (imm-trans-b = 1: V stored [keys][d]). T = __half or __nv_bfloat16; N = 64 or 128 (d has N / 2
// registers). One template each: the instruction's shape and type are spliced into one asm text by the macros below
// (an asm text must be a literal), the accumulator's registers listed once per width.
#define SMK_WGMMA_REGS32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define SMK_WGMMA_REGS64 \
  SMK_WGMMA_REGS32 ", " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define SMK_WGMMA_D32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define SMK_WGMMA_D64 \
  SMK_WGMMA_D32, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
// SHAPE, TY: the instruction's; REGS, DREGS: d's placeholders and operands; A, B, P: the placeholders of the A
// operand (a descriptor, or four registers in braces), the B descriptor and `accumulate`.
#define SMK_WGMMA(SHAPE, TY, REGS, DREGS, A, B, P, TAIL, ...)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                                  \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " {" REGS "}, " A ", " B ", p, 1, 1" TAIL \
               ";\n}\n"                                                                                          \
               : DREGS                                                                                      \
               : __VA_ARGS__)
template <typename T, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], std::uint64_t a_desc, std::uint64_t b_desc,
                                         int accumulate) {
  static_assert(N == 64 || N == 128, "m64n64k16 or m64n128k16");
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit inputs");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64 && kBf16)
    SMK_WGMMA("m64n64k16", "bf16", SMK_WGMMA_REGS32, SMK_WGMMA_D32, "%32", "%33", "%34", ", 0, 0", "l"(a_desc),
              "l"(b_desc), "r"(accumulate));
  else if constexpr (N == 64)
    SMK_WGMMA("m64n64k16", "f16", SMK_WGMMA_REGS32, SMK_WGMMA_D32, "%32", "%33", "%34", ", 0, 0", "l"(a_desc),
              "l"(b_desc), "r"(accumulate));
  else if constexpr (kBf16)
    SMK_WGMMA("m64n128k16", "bf16", SMK_WGMMA_REGS64, SMK_WGMMA_D64, "%64", "%65", "%66", ", 0, 0", "l"(a_desc),
              "l"(b_desc), "r"(accumulate));
  else
    SMK_WGMMA("m64n128k16", "f16", SMK_WGMMA_REGS64, SMK_WGMMA_D64, "%64", "%65", "%66", ", 0, 0", "l"(a_desc),
              "l"(b_desc), "r"(accumulate));
}
template <typename T, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b_desc,
                                         int accumulate) {
  static_assert(N == 64 || N == 128, "m64n64k16 or m64n128k16");
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit inputs");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64 && kBf16)
    SMK_WGMMA("m64n64k16", "bf16", SMK_WGMMA_REGS32, SMK_WGMMA_D32, "{%32, %33, %34, %35}", "%36", "%37", ", 1",
              "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
  else if constexpr (N == 64)
    SMK_WGMMA("m64n64k16", "f16", SMK_WGMMA_REGS32, SMK_WGMMA_D32, "{%32, %33, %34, %35}", "%36", "%37", ", 1",
              "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
  else if constexpr (kBf16)
    SMK_WGMMA("m64n128k16", "bf16", SMK_WGMMA_REGS64, SMK_WGMMA_D64, "{%64, %65, %66, %67}", "%68", "%69", ", 1",
              "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
  else
    SMK_WGMMA("m64n128k16", "f16", SMK_WGMMA_REGS64, SMK_WGMMA_D64, "{%64, %65, %66, %67}", "%68", "%69", ", 1",
              "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
}
#undef SMK_WGMMA
#undef SMK_WGMMA_D64
#undef SMK_WGMMA_D32
#undef SMK_WGMMA_REGS64
#undef SMK_WGMMA_REGS32

}  // namespace smk::cuda::ptx
