// softmaxkit: attention_forward on the GPU, issue 7 stage 1: the FlashAttention-2 recurrence on the tensor cores
// (mma.sync m16n8k16, ldmatrix, cp.async), f16/bf16 in, f32 accumulation, O in the input dtype and the f32 LSE.
// Since the H200 run of 27b9277 (2026-11-30) the dispatcher runs stage 2's wgmma kernel (prefill_wgmma.cu) where the
// build has sm_90a and the device is compute capability 9.0; this kernel serves every other build and device, and
// attention_forward below (validation, arguments, the choice of kernel) serves both.
//
// Work and traffic. Per (batch, head) with S query and S key rows of D elements: 4·S²·D flops (S = Q·Kᵀ and O = P·V,
// halved under a causal mask) against (2 + 2·S/Br)·S·D·2 bytes (Q read and O written once, K and V read once per
// block of Br query rows, mostly from L2). At S = 4096, D = 128 that is ≈ 1000 flops per byte of DRAM traffic: far
// past the H200's ridge point (≈ 790 TFLOP/s dense bf16 / 4.8 TB/s ≈ 165), so the floor is the tensor cores', and
// mma.sync reaches about two thirds of the wgmma peak (FlashAttention-2 on Hopper: ≈ 350 TFLOP/s; our anchor,
// ../shared/ANCHORS.md: SDPA FLASH 346, cuDNN 597 at B=4, H=32, S=4096, D=128).
//
// Structure (one CTA = Br = 16·kWarps·kMT query rows of one (batch, head); each warp owns 16·kMT rows):
//   Q tile → shared (cp.async) → registers as A fragments once, or re-read per k-step where registers are short.
//   for each key tile of Bc = kBlockN rows (K and V in a ring of kStages shared-memory stages, the copies of the
//   next kStages − 1 tiles in flight while this one is used; one __syncthreads per tile):
//     S = Q·Kᵀ (K rows are the B operand as stored: ldmatrix without .trans);
//     mask (key ≥ Sk, or causal key > row + Sk − Sq) → −inf, only on tiles that need it;
//     the online softmax per row (running max m, running sum l, accumulator O rescaled by 2^{m_old − m_new} unless
//     no max of the 16-row tile moved), in base 2: for a positive scale p = 2^(s·scale·log2(e) − m) is one FFMA and
//     one ex2 (the max taken on the raw scores); a negative scale multiplies first (before the max, which it
//     reverses);
//     O += P·V with P straight from the S registers (the C layout of two 8-column tiles is the A layout of one
//     16-column tile) and V through ldmatrix.trans.
//   The final (m, l) becomes an OnlineSoftmaxState, which merges the sink (if any), gives the LSE, and the factor
//   that normalises O — the same state algebra as every other op. O goes out through the warp's own rows of the Q
//   tile as 16-byte stores.
//   Counts per warp and key tile at D = 128, kMT = 2, Bc = 64: 256 mma.sync (1 MFLOP), 80 ldmatrix.x4 (16 KB of K,
//   16 KB of V and 8 KB of Q from shared memory: 26 flops per shared byte, a shared-memory ceiling near 870
//   TFLOP/s), 64 ex2 on the special-function unit, and roughly 700 other instructions (a static count of the
//   loop's fast path in the SASS).
// Shared tiles are [rows][D] with 16-byte chunks XOR-swizzled by row (chunk ^ row % 8), so the 8 row addresses of
// every ldmatrix phase hit 8 different bank groups.
//
// NaN and padding: keys at or past the sequence's end are never read (cp.async zero-fills them) and a masked score
// is set to −inf whatever K held. Keys that no row of the CTA can see are never loaded. Within the tile on the
// causal diagonal, a non-finite V row that a later query row may see would reach an earlier row that may not as
// P = 0 times NaN or inf: the CTA scans those V rows, and where it finds one it takes that tile's P·V by
// prefill_exact_pv.cuh's exact_pv, which skips the keys each row may not see. (The CPU path never reads a masked key.)
//
// Measured on the H200 (tune_prefill, tree of commit 3b45758, bf16, 2026-11-30; docs/perf-notebook.md, "attention
// prefill, stage 1", and docs/bench/prefill-stage1-2026-11-30.md): the dispatcher's default reaches 328 TFLOP/s at
// B=4, H=32, S=4096, D=128, full (0.93× SDPA FLASH's 352 in the same run, 0.50× cuDNN's 661; 286 before this
// version) and 292 at B=16, H=16, S=2048, D=64 (1.01× FLASH); ≥ FLASH on every D = 64 row of the sweep but
// S = 16384 full (0.98×), 0.91-0.96× FLASH at D = 128 (1.04× at S = 512 causal). Same default in the run of 27b9277
// (2026-11-30): 331.5 and 291.7 TFLOP/s on those two rows.
// With the non-finite-V check (H200 run of a967bdc, 2026-11-30 04:24 UTC, old kernel timed before and after in the
// same call, docs/bench/prefill-pfx-2026-11-30.md): 305.3 (0.93 of the old kernel) at B=4, H=32, S=4096, D=128
// full, 260.3 (0.90) causal, 250.7 (0.88) at B=16, H=16, S=2048, D=64: the check's code (its exact P·V is out of
// line, its scan rare) still costs this loop 7-12 %; ptxas -v: 255 registers with 176 bytes of spill at D = 128
// 4 warps × 2 (none before). Not yet understood; this kernel is not the default on the H200.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/prefill_args.hpp"
#include "cuda/attention/prefill_exact_pv.cuh"
#include "cuda/attention/ptx.cuh"
#include "cuda/device_guard.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

constexpr float kLn2 = 0.6931471805599453f;  // base-2 units back to natural ones

// Shared-memory element offset of (row, col) in a [rows][D] tile with XOR-swizzled 16-byte chunks.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies `valid` rows (≤ kRows) of a [kRows][D] tile from global (row stride `stride` elements) into the shared
// tile at byte address `s`, zero-filling the rest without reading them. Thread t copies chunk column t % (D/8) of
// rows t / (D/8) + i·kRowStep: kRowStep is a multiple of 8, so the swizzled column is the same in every pass and
// the passes differ by constant offsets (a 64-bit add per pass, no per-chunk index arithmetic).
template <typename T, int D, int kRows, int kThreads>
__device__ __forceinline__ void copy_tile(std::uint32_t s, const T* g, std::int64_t stride, int valid) {
  constexpr int kChunks = D / 8;
  constexpr int kRowStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kRowStep % 8 == 0 && kRows % kRowStep == 0, "tile copy geometry");
  const int row = static_cast<int>(threadIdx.x) / kChunks, col = (static_cast<int>(threadIdx.x) % kChunks) * 8;
  const std::uint32_t dst = s + static_cast<std::uint32_t>(swz<D>(row, col) * sizeof(T));
  const T* p = g + row * stride + col;
  const std::int64_t step = kRowStep * stride;
  if (valid >= kRows) {
#pragma unroll
    for (int i = 0; i < kRows / kRowStep; ++i, p += step)
      ptx::cp_async_16(dst + i * kRowStep * D * sizeof(T), p, 16);
  } else {
#pragma unroll
    for (int i = 0; i < kRows / kRowStep; ++i, p += step) {
      const bool ok = row + i * kRowStep < valid;
      ptx::cp_async_16(dst + i * kRowStep * D * sizeof(T), ok ? p : g, ok ? 16 : 0);
    }
  }
}

// prefill_exact_pv.cuh's exact_pv for one 16-row m-tile, out of line (the accumulators and P in local memory):
// called only where a tile on the diagonal holds a non-finite V value, it keeps the kernel's loop free of its
// registers (inlined, it cost stage 1 5-12 % in the H200 run of 19a3913).
template <typename T, int D, int kBlockN>
__device__ __noinline__ void exact_pv_call(float* o, const std::uint32_t* pp, std::uint32_t v_addr, int vis0,
                                           int vis1) {
  prefill_exact::exact_pv<T, kBlockN, D / 8>(
      [&](int kk, int e) { return pp[4 * kk + e]; },
      [&](int x, int col) { return v_addr + static_cast<std::uint32_t>(swz<D>(x, col) * sizeof(T)); },
      [&](int t, int i) -> float& { return o[4 * t + i]; }, vis0, vis1);
}

// One CTA: kBlockM = 16·kWarps·kMT query rows of one (batch, head); each warp owns 16·kMT rows (kMT m-tiles: with
// 2, every K and V fragment read from shared memory feeds two products, FlashAttention-2's arrangement). K and V
// tiles of kBlockN keys go through a ring of kStages shared-memory stages (cp.async), one __syncthreads per tile:
// at the top of tile j every thread waits for its own copies of tile j, the barrier makes all of them visible and
// proves every warp has finished tile j − 1, whose stage the copy of tile j + kStages − 1 then overwrites.
// Q stays in registers where they allow it (one m-tile, or D = 64 with 64-key tiles); otherwise its fragments are
// re-read from shared memory per k-step.
template <typename T, int D, int kWarps, int kMT, int kBlockN, int kStages>
__global__ void __launch_bounds__(kWarps * 32) prefill_kernel(const PrefillArgs a) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kBlockM = 16 * kWarps * kMT;
  constexpr int kNT = kBlockN / 8;  // n-tiles of S
  constexpr int kDT = D / 8;        // n-tiles of O
  constexpr bool kQInRegs = kMT == 1 || (D == 64 && kBlockN <= 64);
  constexpr std::uint32_t kTileBytes = kBlockN * D * sizeof(T);  // one K (or V) tile; a stage is K then V
  constexpr std::uint32_t kStageBytes = 2 * kTileBytes;
  static_assert(kStages >= 2, "a ring of at least two stages");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* const sQ = reinterpret_cast<T*>(smem_raw);
  const std::uint32_t q_addr = ptx::smem_addr(sQ);
  const std::uint32_t kv_addr = q_addr + kBlockM * D * sizeof(T);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  PrefillBlock<T> blk;  // prefill_args.hpp: the CTA's rows, lengths, visible keys and base pointers
  if (!prefill_block<T>(a, kBlockM, blk)) return;
  const int b = blk.b, h = blk.h;
  const std::int64_t m0 = blk.m0, q0 = blk.q0, sq = blk.sq, sk = blk.sk;
  const int n_tiles = static_cast<int>((blk.kend + kBlockN - 1) / kBlockN);  // tiles past kend: never loaded
  const auto load_kv = [&](int tile, int stage) {
    const std::int64_t n1 = static_cast<std::int64_t>(tile) * kBlockN;
    const int valid = static_cast<int>(blk.kend - n1 < kBlockN ? blk.kend - n1 : kBlockN);
    copy_tile<T, D, kBlockN, kThreads>(kv_addr + stage * kStageBytes, blk.kg + n1 * a.k_s, a.k_s, valid);
    copy_tile<T, D, kBlockN, kThreads>(kv_addr + stage * kStageBytes + kTileBytes, blk.vg + n1 * a.v_s, a.v_s, valid);
  };

  // Prologue: Q with tile 0 in the first group, then tiles 1 .. kStages − 2, one group each (empty past the end, so
  // that the group count, and with it the wait below, is the same for every CTA).
  copy_tile<T, D, kBlockM, kThreads>(q_addr, blk.qg, a.q_s, blk.q_rows);
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < n_tiles) load_kv(i, i);
    ptx::cp_async_commit();
  }

  // This thread's rows: m-tile mt, half r → warp·16·kMT + mt·16 + g + 8r (within the CTA), and their state.
  const int wrow = warp * 16 * kMT;
  float m_run[kMT][2], l_run[kMT][2];  // l_run: this thread's partial sums; the quad's are added at the end
  float acc[kMT][kDT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.0f;
#pragma unroll
    for (int t = 0; t < kDT; ++t) acc[mt][t][0] = acc[mt][t][1] = acc[mt][t][2] = acc[mt][t][3] = 0.0f;
  }
  // ldmatrix addresses without per-fragment index arithmetic. A lane's row r has r % 8 = lane % 8 in every
  // fragment, and the 16-byte chunk it reads at k-step kk (16 columns) is (2kk + b) ^ (lane % 8) = 2kk ^ (b ^ lane % 8)
  // for its half b; a row's chunks stay below its start (D·2 bytes, a power of two), so the byte offset is
  // (row bytes | (b ^ lane % 8) << 4) ^ kk << 5: one XOR per k-step, and the other fragments at constant offsets.
  constexpr std::uint32_t kRowBytes = D * sizeof(T);
  const int l8 = lane % 8, mi = lane / 8;
  const std::uint32_t q_lane = ((lane % 16) * kRowBytes) | ((((lane / 16) ^ l8)) << 4);       // A: rows, column half
  const std::uint32_t k_lane = (((mi >> 1) * 8 + l8) * kRowBytes) | ((((mi & 1) ^ l8)) << 4);  // B: key rows
  const std::uint32_t v_lane = (((mi & 1) * 8 + l8) * kRowBytes) | ((((mi >> 1) ^ l8)) << 4);  // B (.trans): keys
  const std::uint32_t q_warp = q_addr + wrow * kRowBytes;
  std::uint32_t qf[kQInRegs ? kMT : 1][kQInRegs ? D / 16 : 1][4];
  const auto q_frag = [&](std::uint32_t(&f)[4], int mt, int kk) {
    ptx::ldmatrix_x4(f, q_warp + (q_lane ^ (kk << 5)) + mt * 16 * kRowBytes);
  };
  const float c2 = a.scale_log2;
  const bool fold = a.fold != 0;  // the host sets it only for a positive scale

  int rd = 0, wr = kStages - 1;  // the stage of tile j, and the stage tile j + kStages − 1 goes to
  for (int j = 0; j < n_tiles; ++j) {
    ptx::cp_async_wait<kStages - 2>();  // this thread's copies of tile j (and Q) have landed
    __syncthreads();                    // everyone's have; everyone is done with tile j − 1 (stage wr)
    if (j + kStages - 1 < n_tiles) load_kv(j + kStages - 1, wr);
    ptx::cp_async_commit();
    wr = wr + 1 == kStages ? 0 : wr + 1;
    const std::uint32_t k_addr = kv_addr + rd * kStageBytes, v_addr = k_addr + kTileBytes;
    rd = rd + 1 == kStages ? 0 : rd + 1;
    // Non-finite V on the causal diagonal (prefill_exact_pv.cuh): on a tile some row of the CTA may not wholly see
    // (CTA-uniform), the V rows its first row may not see are scanned, and a find anywhere in the CTA (a second
    // barrier, on such tiles only) sends this tile's P·V to the exact path below.
    const std::int64_t nj = static_cast<std::int64_t>(j) * kBlockN;
    bool exact = false;
    if (__builtin_expect(a.causal && nj + kBlockN - 1 > m0 + sk - sq, 0)) {
      const std::int64_t lo = m0 + sk - sq - nj + 1;
      const int x_lo = lo < 0 ? 0 : (lo > kBlockN ? kBlockN : static_cast<int>(lo));
      exact = __syncthreads_or(prefill_exact::rows_nonfinite<T, D, kBlockN, kThreads>(
                  [&](int x, int ch) { return v_addr + x * kRowBytes + ch * 16; }, x_lo,
                  static_cast<int>(threadIdx.x))) != 0;
    }
    if constexpr (kQInRegs) {
      if (j == 0) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) q_frag(qf[mt][kk], mt, kk);
      }
    }

    // S = Q·Kᵀ for this warp's rows and the tile's keys (K rows are the B operand as stored: ldmatrix, no .trans).
    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int t = 0; t < kNT; ++t) s[mt][t][0] = s[mt][t][1] = s[mt][t][2] = s[mt][t][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t qk[kQInRegs ? 1 : kMT][4];
      if constexpr (!kQInRegs) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) q_frag(qk[mt], mt, kk);
      }
      const std::uint32_t k_kk = k_addr + (k_lane ^ (kk << 5));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        std::uint32_t bf[4];
        ptx::ldmatrix_x4(bf, k_kk + np * 16 * kRowBytes);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          if constexpr (kQInRegs) {
            ptx::mma_16816<T>(s[mt][2 * np], qf[mt][kk], bf[0], bf[1]);
            ptx::mma_16816<T>(s[mt][2 * np + 1], qf[mt][kk], bf[2], bf[3]);
          } else {
            ptx::mma_16816<T>(s[mt][2 * np], qk[mt], bf[0], bf[1]);
            ptx::mma_16816<T>(s[mt][2 * np + 1], qk[mt], bf[2], bf[3]);
          }
        }
      }
    }

    const std::int64_t n0 = static_cast<std::int64_t>(j) * kBlockN;
    const bool edge = n0 + kBlockN > sk || (a.causal && n0 + kBlockN - 1 > m0 + sk - sq);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      // Base-2 units. Folded: the max is taken on the raw scores (scale_log2 > 0 keeps their order) and each
      // probability is 2^(s·scale_log2 − m), one FFMA. Otherwise the scores are scaled first, before the max (a
      // negative scale flips which key is largest).
      if (!fold) {
#pragma unroll
        for (int t = 0; t < kNT; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][t][e] *= c2;
      }
      // Mask the keys past the end and, under causal, past each row's diagonal (−inf stays −inf after either scaling).
      if (edge) {
        // Key n0 + x is visible to a row when x ≤ its limit (the last key, or the diagonal): limits relative to
        // this thread's first column 2c, clamped into [−1, kBlockN], so that each score takes one 32-bit compare
        // against a constant.
        const std::int64_t row0 = m0 + wrow + mt * 16 + g, last = sk - 1 - n0 - 2 * c;
        const auto rel = [&](std::int64_t row) {
          std::int64_t x = a.causal ? row + sk - sq - n0 - 2 * c : last;
          x = x < last ? x : last;
          return static_cast<int>(x < -1 ? -1 : (x > kBlockN ? kBlockN : x));
        };
        const int lim0 = rel(row0), lim1 = rel(row0 + 8);
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (t * 8 + e > lim0) s[mt][t][e] = -INFINITY;
            if (t * 8 + e > lim1) s[mt][t][2 + e] = -INFINITY;
          }
        }
      }

      // Online softmax: new row maxima (over the quad), the rescale factor, the probabilities and their sum.
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int t = 0; t < kNT; ++t) mx = fmaxf(mx, fmaxf(s[mt][t][2 * r], s[mt][t][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        if (fold) mx *= c2;  // the max of the scaled scores: rounding is monotone
        mx = fmaxf(mx, m_run[mt][r]);
        // A row that has seen only −inf keeps max −inf; shift by 0 then, so that 2^(−inf − 0) = 0, never NaN.
        const float shift = mx == -INFINITY ? 0.0f : mx;
        alpha[r] = ptx::exp2_approx(m_run[mt][r] - shift);  // m_run = −inf: 0
        m_run[mt][r] = mx;
        float sum = 0.0f;
        if (fold) {
#pragma unroll
          for (int t = 0; t < kNT; ++t) {
            s[mt][t][2 * r] = ptx::exp2_approx(fmaf(s[mt][t][2 * r], c2, -shift));
            s[mt][t][2 * r + 1] = ptx::exp2_approx(fmaf(s[mt][t][2 * r + 1], c2, -shift));
            sum += s[mt][t][2 * r] + s[mt][t][2 * r + 1];
          }
        } else {
#pragma unroll
          for (int t = 0; t < kNT; ++t) {
            s[mt][t][2 * r] = ptx::exp2_approx(s[mt][t][2 * r] - shift);
            s[mt][t][2 * r + 1] = ptx::exp2_approx(s[mt][t][2 * r + 1] - shift);
            sum += s[mt][t][2 * r] + s[mt][t][2 * r + 1];
          }
        }
        l_run[mt][r] = l_run[mt][r] * alpha[r] + sum;
      }
      // alpha = 2^0 = 1 exactly where the max did not move: skipping the multiply then changes no bit.
      if (!a.skip_rescale || __any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
        for (int t = 0; t < kDT; ++t) {
          acc[mt][t][0] *= alpha[0];
          acc[mt][t][1] *= alpha[0];
          acc[mt][t][2] *= alpha[1];
          acc[mt][t][3] *= alpha[1];
        }
      }
    }

    // O += P·V: P from the S registers (the C layout of two 8-column tiles is the A layout of one 16-column tile),
    // packed all at once (half the registers of the f32 scores), then V through ldmatrix.trans, one XOR per
    // 16-column slice of O and the key steps at constant offsets; each V fragment feeds every m-tile. Every
    // accumulator still adds its key steps in order 0, 1, ...: the same bits as any other loop order.
    std::uint32_t pa[kBlockN / 16][kMT][4];
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        pa[kk][mt][0] = ptx::pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[kk][mt][1] = ptx::pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[kk][mt][2] = ptx::pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[kk][mt][3] = ptx::pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    if (__builtin_expect(exact, 0)) {
      // The last key of this tile (tile-relative, clamped into [−1, kBlockN]) that row `row` sees.
      const auto vis = [&](std::int64_t row) {
        const std::int64_t last = sk - 1 - nj;
        std::int64_t x = row + sk - sq - nj;
        x = x < last ? x : last;
        return static_cast<int>(x < -1 ? -1 : (x > kBlockN ? kBlockN : x));
      };
      // Through local memory and a call that is not inlined: the rare path then takes no registers from the loop.
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const std::int64_t row0 = m0 + wrow + mt * 16 + g;
        float o[kDT * 4];
        std::uint32_t pp[kBlockN / 16 * 4];
#pragma unroll
        for (int i = 0; i < kDT * 4; ++i) o[i] = acc[mt][i / 4][i % 4];
#pragma unroll
        for (int i = 0; i < kBlockN / 4; ++i) pp[i] = pa[i / 4][mt][i % 4];
        exact_pv_call<T, D, kBlockN>(o, pp, v_addr, vis(row0), vis(row0 + 8));
#pragma unroll
        for (int i = 0; i < kDT * 4; ++i) acc[mt][i / 4][i % 4] = o[i];
      }
    } else {
#pragma unroll
      for (int dp = 0; dp < kDT / 2; ++dp) {
        const std::uint32_t v_dp = v_addr + (v_lane ^ (dp << 5));
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
          std::uint32_t bf[4];
          ptx::ldmatrix_x4_trans(bf, v_dp + kk * 16 * kRowBytes);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            ptx::mma_16816<T>(acc[mt][2 * dp], pa[kk][mt], bf[0], bf[1]);
            ptx::mma_16816<T>(acc[mt][2 * dp + 1], pa[kk][mt], bf[2], bf[3]);
          }
        }
      }
    }
  }

  // No tile (causal rows before any key): Q's copies may still be landing in the rows O is staged through.
  if (n_tiles == 0) {
    ptx::cp_async_wait<0>();
    __syncthreads();
  }

  // Finish: quad sums, the state (with the sink), O normalised once, the LSE.
  const bool o_smem = a.o_smem != 0;
  T* const sO = sQ + wrow * D;  // this warp's own rows of the Q tile, which no other warp reads
  if (o_smem) __syncwarp();     // every lane's last reads of them (Q fragments) are done
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      auto st = OnlineSoftmaxState<float>::from_max_and_sum(m_run[mt][r] * kLn2, l);
      const bool no_key = st.is_empty();  // O = 0 then, whatever the sink (a NaN or +inf one too): the CPU's rule
      float w = 1.0f;
      if (a.sinks) {
        const auto sink = OnlineSoftmaxState<float>::from_lse(a.sinks[h * a.sinks_stride]);
        w = st.merge_weights(sink).self;
        st.merge(sink);
      }
      const float factor = no_key ? 0.0f : w * st.normalizer(EmptyRowPolicy::zeros).inv_sum;
      const int lrow = mt * 16 + g + 8 * r;  // within the warp's rows
      const std::int64_t row = m0 + wrow + lrow;
      if (o_smem) {
#pragma unroll
        for (int t = 0; t < kDT; ++t)
          *reinterpret_cast<std::uint32_t*>(sO + swz<D>(lrow, t * 8 + 2 * c)) =
              ptx::pack2<T>(acc[mt][t][2 * r] * factor, acc[mt][t][2 * r + 1] * factor);
      }
      if (row >= sq) continue;
      if (!o_smem) {
        T* og = static_cast<T*>(a.o) + b * a.o_b + (q0 + row) * a.o_s + h * a.o_h;
#pragma unroll
        for (int t = 0; t < kDT; ++t)
          *reinterpret_cast<std::uint32_t*>(og + t * 8 + 2 * c) =
              ptx::pack2<T>(acc[mt][t][2 * r] * factor, acc[mt][t][2 * r + 1] * factor);
      }
      if (a.lse && c == 0) a.lse[b * a.lse_b + h * a.lse_h + (q0 + row) * a.lse_s] = st.lse();
    }
  }
  if (o_smem) {
    // The warp's 16·kMT rows of D/8 16-byte chunks: a quarter warp (8 lanes) reads 8 chunks the swizzle puts in 8
    // different bank groups, and D/8 consecutive lanes store one whole row.
    __syncwarp();
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int i = lane; i < 16 * kMT * kChunks; i += 32) {
      const int lrow = i / kChunks, col = (i % kChunks) * 8;
      const std::int64_t row = m0 + wrow + lrow;
      if (row < sq)
        *reinterpret_cast<uint4*>(static_cast<T*>(a.o) + b * a.o_b + (q0 + row) * a.o_s + h * a.o_h + col) =
            *reinterpret_cast<const uint4*>(sO + swz<D>(lrow, col));
    }
  }
}

template <typename T, int D, int kWarps, int kMT, int kBlockN, int kStages>
void launch(const PrefillArgs& a, std::int64_t batch, std::int64_t hq, std::int64_t max_sq, cudaStream_t stream) {
  constexpr int kBlockM = 16 * kWarps * kMT;
  constexpr int smem = (kBlockM + 2 * kStages * kBlockN) * D * static_cast<int>(sizeof(T));
  auto* kernel = prefill_kernel<T, D, kWarps, kMT, kBlockN, kStages>;
  SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const std::int64_t q_tiles = (max_sq + kBlockM - 1) / kBlockM;
  const dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(hq), static_cast<unsigned>(batch));
  kernel<<<grid, kWarps * 32, smem, stream>>>(a);
  SMK_CUDA_CHECK_LAUNCH("prefill_kernel");
}

// The instantiated variants (kPrefillVariants in attention_cuda.hpp); false for any other combination.
template <typename T, int D, int kWarps, int kMT, int kBlockN, int kStages>
bool try_launch(const PrefillVariant& v, const PrefillArgs& a, std::int64_t batch, std::int64_t hq,
                std::int64_t max_sq, cudaStream_t stream) {
  if (v.warps != kWarps || v.m_tiles != kMT || v.block_n != kBlockN || v.stages != kStages) return false;
  launch<T, D, kWarps, kMT, kBlockN, kStages>(a, batch, hq, max_sq, stream);
  return true;
}

template <typename T>
bool launch_variant(const PrefillVariant& v, const PrefillArgs& a, std::int64_t batch, std::int64_t hq,
                    std::int64_t max_sq, cudaStream_t s) {
  if (v.d == 128)
    return try_launch<T, 128, 4, 1, 64, 2>(v, a, batch, hq, max_sq, s) ||
           try_launch<T, 128, 4, 2, 64, 2>(v, a, batch, hq, max_sq, s);
  return try_launch<T, 64, 4, 1, 64, 2>(v, a, batch, hq, max_sq, s) ||
         try_launch<T, 64, 4, 2, 64, 2>(v, a, batch, hq, max_sq, s) ||
         try_launch<T, 64, 4, 2, 128, 2>(v, a, batch, hq, max_sq, s);
}

bool aligned16(const TensorView& t) {
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0) return false;
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.strides[d] % 8 != 0 && t.shape[d] > 1) return false;
  return t.strides[t.rank - 1] == 1 || t.shape[t.rank - 1] == 1;
}

bool toggle(PrefillToggle t, bool dispatcher_default) {
  return t == PrefillToggle::dispatcher ? dispatcher_default : t == PrefillToggle::on;
}

}  // namespace

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& o, bool varlen, std::int64_t batch,
                       std::int64_t sq, std::int64_t sk, double scale, const PrefillConfig& config, Stream stream) {
  const char* op = "attention_forward";
  if (q.dtype != DType::f16 && q.dtype != DType::bf16)
    throw_unsupported(op, "runs on the GPU's tensor cores for f16 and bf16 only, got q of dtype " +
                              std::string(dtype_name(q.dtype)) + "; convert, or run it on the CPU");
  const int rank = q.rank;
  const std::int64_t hq = q.shape[rank - 2], hkv = k.shape[rank - 2], d = q.shape[rank - 1];
  if (d != 64 && d != 128)
    throw_unsupported(op, "the GPU kernel supports head dimensions 64 and 128, got " + std::to_string(d));
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"out", &out}})
    if (t->data && !aligned16(*t))
      throw_unsupported(op, std::string("the GPU kernel needs `") + name +
                                "` with a contiguous head dimension, a 16-byte-aligned base and strides that are "
                                "multiples of 8 elements; pass a contiguous copy");
  const bool d64 = d == 64;
  // The kernel: asked for, or the dispatcher's per head dimension (wgmma only where this build and device have it).
  DeviceGuard guard(q.device.index);
  const bool wgmma_ok = prefill_wgmma_available(q.device.index);
  PrefillKernel kernel = config.kernel;
  if (kernel == PrefillKernel::dispatcher) {
    kernel = d64 ? kPrefillKernelD64 : kPrefillKernelD128;
    if (kernel == PrefillKernel::wgmma && !wgmma_ok) kernel = PrefillKernel::mma_sync;
  }
  if (kernel == PrefillKernel::wgmma && !wgmma_ok)
    throw_unsupported(op, "the wgmma prefill kernel needs an sm_90a build (CMAKE_CUDA_ARCHITECTURES with 90a) and a "
                          "compute-capability 9.0 device");
  const bool wg = kernel == PrefillKernel::wgmma;
  // TMA boxes cannot stop at a varlen sequence's end (the next sequence's rows would be read): cp.async there.
  // (A tensor map needs every extent ≥ 1, and TMA coordinates are 32-bit: no keys at all, or sequences past
  // 2^31 rows, take cp.async too; so does a view the driver will not describe, prefill_wgmma.cu says.)
  const bool tma = toggle(config.tma, kPrefillWgmmaTma) && !varlen && sk > 0 && sq <= INT32_MAX && sk <= INT32_MAX;
  // Short causal rows: one warpgroup and 64-key tiles (attention_cuda.hpp has the measurements), but not at D = 128
  // with TMA, where the producer warpgroup's 128-key variant leads at every length.
  const bool short_causal = o.causal && sq <= kPrefillWgmmaShortCausal && (d64 || !tma);
  // D = 128 without TMA: the producer warpgroup's variant would run its 8-warp cp.async kernel, which lost to the
  // 128-key one; that one then.
  // D = 64: three warpgroups and the producer (TMA only) from kPrefillWgmmaD64Three{Full,Causal} query rows, else
  // two warpgroups × 64 keys (attention_cuda.hpp has the sweep). The rule reads sq, the same for every batch entry.
  const bool d64_three = d64 && tma && sq >= (o.causal ? kPrefillWgmmaD64ThreeCausal : kPrefillWgmmaD64ThreeFull);
  const int wg_warps = short_causal ? kPrefillWgmmaWarpsShortCausal
                       : d64        ? (d64_three ? kPrefillWgmmaWarpsD64 : kPrefillWgmmaWarpsD64Two)
                       : tma        ? kPrefillWgmmaWarpsD128
                                    : kPrefillWgmmaWarpsD128CpAsync;
  const int wg_block_n = short_causal ? kPrefillWgmmaBlockNShortCausal
                         : d64        ? (d64_three ? kPrefillWgmmaBlockND64 : kPrefillWgmmaBlockND64Two)
                         : tma        ? kPrefillWgmmaBlockND128
                                      : kPrefillWgmmaBlockND128CpAsync;
  const PrefillVariant variant =
      wg ? PrefillVariant{static_cast<int>(d), config.warps != 0 ? config.warps : wg_warps,
                          config.m_tiles != 0 ? config.m_tiles : 1, config.block_n != 0 ? config.block_n : wg_block_n,
                          config.stages != 0 ? config.stages : 3}
         : PrefillVariant{
               static_cast<int>(d), config.warps != 0 ? config.warps : (d64 ? kPrefillWarpsD64 : kPrefillWarpsD128),
               config.m_tiles != 0 ? config.m_tiles : (d64 ? kPrefillMTilesD64 : kPrefillMTilesD128),
               config.block_n != 0 ? config.block_n : (d64 ? kPrefillBlockND64 : kPrefillBlockND128),
               config.stages != 0 ? config.stages : (d64 ? kPrefillStagesD64 : kPrefillStagesD128)};
  bool built = false;
  const auto same = [&](const PrefillVariant& x) {
    return x.d == variant.d && x.warps == variant.warps && x.m_tiles == variant.m_tiles &&
           x.block_n == variant.block_n && x.stages == variant.stages;
  };
  if (wg) {
    for (const PrefillVariant& x : kPrefillWgmmaVariants) built = built || same(x);
  } else {
    for (const PrefillVariant& x : kPrefillVariants) built = built || same(x);
  }
  if (!built)
    throw_invalid_argument(op, "config", std::string("no ") + (wg ? "wgmma" : "mma.sync") +
                                             " prefill kernel is built for D " + std::to_string(d) + ", " +
                                             std::to_string(variant.warps) + " warps x " +
                                             std::to_string(variant.m_tiles) + " m-tiles, " +
                                             std::to_string(variant.block_n) + "-key tiles, " +
                                             std::to_string(variant.stages) + " stages (see kPrefillVariants, "
                                             "kPrefillWgmmaVariants)");
  // The kernels work in base 2 with scale·log2(e) in f32: past FLT_MAX / log2(e) ≈ 2.36e38 that product is inf and
  // every score would be ±inf or NaN. Refused (the CPU path, in double, takes such a scale).
  const double scale_log2 = scale * 1.4426950408889634;
  if (!(std::fabs(scale_log2) <= 3.4028234663852886e38))
    throw_unsupported(op, "the GPU kernels need |options.scale| * log2(e) to be finite in f32 (|scale| <= 2.35e38), "
                          "got scale " + std::to_string(scale) + "; run it on the CPU");
  if (batch == 0 || hq == 0 || sq == 0) return;
  PrefillArgs a{};
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.o = out.data;
  a.lse = static_cast<float*>(lse.data);
  a.sinks = static_cast<const float*>(o.sinks.data);
  a.sinks_stride = o.sinks.data ? o.sinks.strides[0] : 0;
  a.group = static_cast<int>(hq / hkv);
  a.causal = o.causal ? 1 : 0;
  a.scale_log2 = static_cast<float>(scale_log2);
  // The fold takes the max on raw scores, which orders them as the scaled ones only for a positive scale.
  a.fold = toggle(config.fold_scale, kPrefillFoldScale) && a.scale_log2 > 0.0f ? 1 : 0;
  a.o_smem = toggle(config.o_smem, kPrefillOSmem) ? 1 : 0;
  a.skip_rescale = toggle(config.skip_rescale, kPrefillSkipRescale) ? 1 : 0;
  // The pinned softmax (prefill_wgmma.cu's kPin): built for kPrefillWgmmaPinned's variants, TMA path only; asked
  // for another variant, refused; where the call takes cp.async (asked for, varlen, ...) the unpinned kernel runs,
  // with the same bits, as `tma` itself gives way there.
  bool pinned_built = false;
  for (const PrefillVariant& x : kPrefillWgmmaPinned) pinned_built = pinned_built || (wg && same(x));
  if (config.pin_softmax == PrefillToggle::on && !pinned_built)
    throw_invalid_argument(op, "config",
                           "pin_softmax is built only for the wgmma kernel's kPrefillWgmmaPinned variants (asked "
                           "for D " + std::to_string(d) + ", " + std::to_string(variant.warps) + " warps, " +
                               std::to_string(variant.block_n) + "-key tiles)");
  a.pin = pinned_built && tma && toggle(config.pin_softmax, kPrefillWgmmaPin) ? 1 : 0;
  // Session 9 (pfx9): the causal schedule (prefill_wgmma.cu's launch sizes its chunks) and the trimmed diagonal.
  a.chunk_heads = wg && o.causal && !varlen && toggle(config.causal_schedule, kPrefillWgmmaCausalSchedule) ? 1 : 0;
  a.trim = wg && toggle(config.trim_diagonal, kPrefillWgmmaTrim) ? 1 : 0;
  if (varlen) {
    a.cu_q = static_cast<const int*>(o.cu_seqlens_q.data);
    a.cu_k = static_cast<const int*>(o.cu_seqlens_k.data);
    // [total, H, D]: sequence stride 0, head 1, rows from the cumulative offsets; lse [Hq, total].
    a.q_s = q.strides[0], a.q_h = q.strides[1];
    a.k_s = k.strides[0], a.k_h = k.strides[1];
    a.v_s = v.strides[0], a.v_h = v.strides[1];
    a.o_s = out.strides[0], a.o_h = out.strides[1];
    if (lse.data) a.lse_h = lse.strides[0], a.lse_s = lse.strides[1];
    // Without max_seqlen the grid covers the whole packed batch per sequence (sq is the total); CTAs past their
    // sequence's end return at once (a few microseconds for thousands of them).
  } else {
    a.q_b = q.strides[0], a.q_s = q.strides[1], a.q_h = q.strides[2];
    a.k_b = k.strides[0], a.k_s = k.strides[1], a.k_h = k.strides[2];
    a.v_b = v.strides[0], a.v_s = v.strides[1], a.v_h = v.strides[2];
    a.o_b = out.strides[0], a.o_s = out.strides[1], a.o_h = out.strides[2];
    if (lse.data) a.lse_b = lse.strides[0], a.lse_h = lse.strides[1], a.lse_s = lse.strides[2];
    a.sq = sq;
    a.sk = sk;
  }
  // 64 per warpgroup for wgmma (warps 9: two warpgroups and the producer warp)
  const std::int64_t rows = wg ? 64 * (variant.warps / 4) : 16 * variant.warps * variant.m_tiles;
  const std::int64_t tiles = (sq + rows - 1) / rows;
  if (tiles > 0x7fffffff || batch > 65535 || hq > 65535)
    throw_invalid_argument(op, "q", "grid too large: " + std::to_string(tiles) + " query tiles, batch " +
                                        std::to_string(batch) + ", " + std::to_string(hq) + " heads");
  const auto s = static_cast<cudaStream_t>(stream.handle);
  // The launch record (attention_cuda.hpp's PrefillLast): the variant chosen above, once its kernel is launched.
  const auto record = [&] {
    PrefillLast& last = prefill_last();
    last.kernel.store(static_cast<int>(kernel), std::memory_order_relaxed);
    last.d.store(variant.d, std::memory_order_relaxed);
    last.warps.store(variant.warps, std::memory_order_relaxed);
    last.m_tiles.store(variant.m_tiles, std::memory_order_relaxed);
    last.block_n.store(variant.block_n, std::memory_order_relaxed);
    last.stages.store(variant.stages, std::memory_order_relaxed);
    last.tma.store(wg && tma, std::memory_order_relaxed);
    last.launches.fetch_add(1, std::memory_order_relaxed);
  };
  if (wg) {
    if (!prefill_wgmma_launch(q.dtype == DType::bf16, variant.d, variant.warps, variant.block_n, tma, a, batch, hq,
                              sq, s))
      throw_invalid_argument(op, "config", "no wgmma prefill kernel is built for this configuration");
    record();
    return;
  }
  if (q.dtype == DType::bf16)
    launch_variant<__nv_bfloat16>(variant, a, batch, hq, sq, s);
  else
    launch_variant<__half>(variant, a, batch, hq, sq, s);
  record();
}

PrefillLast& prefill_last() {
  static PrefillLast last;
  return last;
}

}  // namespace smk::cuda
