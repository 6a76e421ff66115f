// softmaxkit (internal, device code; included by fused.cu only): cross-entropy forward + backward at vocabulary rows
// as a persistent row loop (ce11, session 11): one launch, block b owns rows b, b + G, b + 2G, … (G the grid, a
// function of the device alone), and walks each row twice, as softmax's row_loop (cuda/softmax/row_loop.cu) and
// torch.compile's Triton kernels do:
//   pass 1  the row in steps of kLoopUnroll 16-byte vectors a thread (vector s·U·T + u·T + g is thread g's u-th of
//           step s), loaded with an L2 evict-last hint; each thread keeps a running (m, Σ exp(z − m)) over its
//           logits other than the target, rescaled once a step at most when the step's max rises (lse_stream's
//           running state, without the ties: the loss needs R = Σ_{j≠t} e_j, not d), the target logit taken out by
//           its owner thread, label smoothing's Σ w_c (z_c − r) alongside;
//   row     the threads' states combined as the one-read kernel combines its warps' (combine_parts: each warp, then
//           the block's 16 warps through one barrier), then the same per-row scalars, loss, LSE and target entry
//           (common.cuh row_scalars, row_loss, grad_coeffs, target_entry: one home for each formula);
//   pass 2  the steps again in reverse (the ones read last are the likeliest still in L2), evict-first loads, the
//           gradient e_j·A + B_j with e_j = exp(z_j − M) by the 16-bit tier's grad_exp (exp_diff for an f32
//           gradient), the target's entry patched by its owner, streaming stores (in place allowed: a thread reads
//           its elements before it writes them, and every read of pass 1 is behind the row's barrier).
// Every sum is a fixed tree whose shape depends on C alone (the element map, the step order and the combines are
// functions of C and the compile-time T, U): a row's loss, LSE and gradient are bitwise the same alone or in any
// batch and at any grid (tested: CrossEntropyGpuRowLoop.*). Its bits differ from the one-read kernel's (e_j against
// M rather than the warp's max times exp(m_w − M); the steps' running sums), so the dispatcher chooses between them by
// C and the dtype alone (fused.cu row_loop_rule).
// Any column stride: 16-byte vectors where the rows are unit-stride and aligned, else element by element (loop_load,
// loop_store); no soft-capping (the dispatcher sends soft-capped rows to the two calls, as before).
//
// Bytes per element: logits read twice, gradient written once: 16-bit 6 B, f32 12 B, 16-bit logits with an f32
// gradient 8 B; what pass 2 finds in L2 comes off the second read. Floor (read once + write once) at the copy
// ceiling of 4.27 TB/s (ANCHORS.md): 4096×151936 bf16 583 µs, f32 1166; 8192×32000 bf16 246, f32 491; 1024×262144
// bf16 252, f32 503. The three-pass traffic (no L2 reuse) at the same rate: 4096×151936 bf16 875 µs, f32 1749.
// Count (ce11): 264 blocks (512 threads, two an SM) hold 264 rows in flight, bf16 4096×151936 80 MB against the
// 50 MB L2, so the tail of each row (roughly the last 40-60 % a block read) can still be there in pass 2; at
// 8192×32000 bf16 264 × 64 KB = 17 MB, all of pass 2 from L2. Instructions an element (SASS estimate): pass 1 a
// conversion, the max, exp_shifted (FADD, FMUL, MUFU + subnormal scaling, ~5) and an add, ~9; pass 2 the same
// exponential, an FFMA, a conversion and the store's share, ~10 (f32 gradient: exp_diff's ~15): ~20 a logit, at the
// H200's ~3.3·10^13 lane-instructions a second 380 µs at 4096×151936, below the bytes' time: memory-bound if the loads
// are kept in flight (U = 4 vectors a thread, 64 B, 64 KB an SM at 1024 threads).
// Predicted: bf16 4096×151936 900-1000 µs (softmax's row_loop log-softmax ran 1022 µs with a barrier a chunk;
// lse_stream's pass alone reads at 82-97 % of the read ceiling), against the one-read kernel's ~1410-1450.
// Measured (H200, 2026-11-30 17:21 UTC, ce11's run of e711d37's binaries, tune_cross_entropy, in place, mean, two
// samples; all numbers in fused.cu's row_loop_rule and docs/bench/ce11-s11-2026-11-30.md): bf16 4096×151936 901.5 /
// 909.1 µs at two blocks an SM with hints (64.1-64.7 % of the 2n bound; the 3n bytes of two reads and a write in that
// time are 4.11-4.14 TB/s, 96-97 % of copy: the kernel runs at the three-pass floor, 875 µs, and what is left is pass
// 2's share from L2; one block an SM, half the rows in flight, ran slower), 957-975 without hints, 1096-1102 at one
// block an SM; the one-read kernel 1434 / 1469. bf16 1024×262144 415 (two calls 691), 256×151936 84.5 (125). f32
// 4096×151936 1801-1804 (the same 4.14 TB/s of 3n; the one-read kernel 1727-1732), 1024×262144 817 (two calls 946);
// 8192×32000 slower than the one-read kernel in both dtypes (bf16 423 / 377, f32 653 / 590). ptxas (CUDA 13.0,
// sm_90a): 64 registers, 16-24 B of spill a thread for 16-bit logits, 52 B for f32, outside the element loops.
// Not profiled (no device time left): pass 2's L2 hit rate, the two passes' rates.
// Staged (ce12, session 12; kStaged below, fused.cu loop_stage_steps): the row's first 3 whole steps (96 KB a block,
// still two blocks an SM) kept in shared memory through pass 2. Bytes an element: (2 + (C − K)/C)·sizeof a logit read
// (K staged logits a row) + the gradient written: bf16 4096×151936 K = 49152 (32 %), 2.68n of 2n-traffic units against
// 3n; f32 K = 24576 (16 %), 2.84n. Predicted at the unstaged kernel's 4.11-4.14 TB/s: bf16 ≈ 810 µs (905), f32 ≈ 1710
// (1800). Measured (H200, 2026-11-30 19:32 UTC, ce12's run of da49fbb's binaries, tune_cross_entropy, in place, mean,
// median of 7 a sample; docs/bench/ce12-s12-2026-11-30.md): bf16 4096×151936 staged 899.7 / 918.9 (and the dispatcher's
// launch of it 907.7 / 902.2) against unstaged 919.3 / 919.8 (and 775cf6d's build 922.5 / 907.2): ~1.5 % at the
// medians, not the 10 % predicted, so bf16 is not bound by the DRAM bytes of its second read alone (64-65 % of the 2n
// bound either way); f32 4096×151936 staged 1746.7 / 1734.3 against 1800.1 / 1800.0 (−3.4 %, the one-read kernel's
// 1738.8 / 1736.7); 6 steps at one block an SM slower (bf16 1033-1059, f32 1886-1891); bf16 8192×32000 (one step
// staged of two) 437.2 against 432.2 (not the dispatcher's kernel there). Same bits as unstaged (StagedSameBits ran
// small under memcheck: 0 errors, every bitwise comparison equal).
// Profiled (ce14, session 14; H200, 2026-12-01 00:10 / 00:25 UTC, Nsight Compute of one launch, bf16 4096×151936, 3
// staged steps; docs/bench/ce14-s14-2026-11-30.md): 873-883 µs; DRAM read 1.67 GB (1.34n: pass 2 takes half of its
// 0.68n re-read from DRAM, half from L2), write 1.23 GB, 3.3 TB/s (68 % of DRAM peak); 597-609 M warp instructions
// (31 lane instructions a logit: pass 1 16.4, pass 2 and the row ~15), issue active 68-70 %, 32 warps an SM (64
// registers), XU 39 %, long-scoreboard stalls 4.7 an issue. Not DRAM-bound and not issue-bound: two levers that each
// moved one of those left the time where it was. (a) L2 prefetches of later steps (a bulk prefetch of a 32 KB step by
// one thread; 02349f1): pass 1 a step ahead 1.013× the same build, every other setting 0.94-0.99× (they evict pass
// 2's re-read: +0.49 GB of DRAM reads), f32 0.92-0.97×. (b) Steps whose exponent arguments are all ≥ −126 by MUFU.EX2
// alone (exp2f's bits; 4e3db94): −11.5 % instructions, 1.004× (issue 68 → 61 %, long scoreboard 4.7 → 5.5). What binds
// is each warp's load → compute chain at 64 B a thread in flight; f32 (the row loop forced at 151936) is DRAM-bound,
// 3.95 TB/s (93 % of copy), pass 2 re-reading 83 % from DRAM. Both removed; HEAD's kernel ran 886-890 µs beside them.
// A ring (ce15, session 15; H200, 2026-12-01 02:45 UTC; docs/bench/ce15-s15-2026-12-01.md): the stage's 3 slots (96 KB)
// filled ahead by bulk copies (cp.async.bulk, thread 0 issuing fill c + R once every warp released fill c, an mbarrier
// full / empty pair a slot), pass 2 taking the row's last steps from the ring and re-reading the others through new
// fills, so every global read of the row was on its way 2-3 steps ahead (70c68b7 has it: kRing, FusedTuning::
// loop_ring, tune_cross_entropy --ce15, RingSameBits). Same bits as this kernel at every shape timed and tested, but
// slower everywhere (tune --ce15, 5 alternating rounds, staged / ring 3 slots): bf16 4096×151936 887.9 against 1303.6
// µs (0.68×), 8192×128256 1403.1 / 2066.5 (0.68×), 32768×32000 1601.7 / 2112.5 (0.76×; 2 slots 0.83×); f32
// 4096×151936 1756.3 / 1975.5 (0.89×), 8192×128256 2848.0 / 3204.5 (0.89×). Predicted 1.05-1.10× faster at bf16 if
// the chain was the limit; not profiled. Suspects, in order: every fill waits on thread 0, which waits each step for
// the slowest warp (a block-wide handshake a step through one warp); pass 2 re-reads the row's oldest steps (the ring
// holds its newest), which L2 no longer holds; 104 B of spill a thread (16 here), ~20 local accesses a pass-2 step.
// compute-sanitizer racecheck reported hazards between the bulk copies and the slots' reads (memcheck clean); not
// resolved. Removed.
// Copied ahead by each thread (ce16, session 16; H200, 2026-12-01 05:12 UTC; docs/bench/ce16-s16-2026-12-01.md): every
// step reached the registers through the thread's own shared slots, copied one step ahead by its own cp.async (no
// producer, no barrier, no other warp: ce15's convoy could not form), the staged steps into the stage, the others
// through one ring step (2 staged + the ring = 96 KB, still two blocks an SM); b9a0af2 has it (kAsync, FusedTuning::
// loop_async, loop_skip_pads, tune_cross_entropy --ce16, AsyncSameBits). Same bits everywhere; Nsight Compute at bf16
// 4096×151936: long-scoreboard stalls 4.88 → 3.10 an issue, issue 69 → 72 %, but instructions +4 % (31.5 lane a
// logit), DRAM reads +10 % (1.68 → 1.84 GB: one staged step fewer) and the same ~1.61 M cycles an SMSP. Timed (tune
// --ce16, 5 rotated rounds, s3 = this kernel): bf16 4096×151936 907.5 against 926.6 µs (0.979×), 8192×128256 1407.5 /
// 1426.1 (0.986×), f32 4096×151936 1757.4 / 1894.8 (0.927×: LDGSTS lowered f32's DRAM throughput, 82 → 77 % of peak);
// 2 staged steps without the copies 0.986-0.989×; the padded last step's arithmetic skipped (−2.5 % instructions, the
// same bits) 0.974-0.981×. memcheck flagged its partial-vector copy (cp.async with a source size, a 16-byte read past
// an allocation's end). Removed. This kernel's own count under that run's ncu: 847 µs, 30.2 lane instructions a logit
// (588 M warp instructions: 586 µs at 100 % issue and 1.90 GHz, the 2n bound itself), issue 69 %, DRAM 71 %, pass 2
// taking 48 % of its re-read from L2: 85 % of the bound needs fewer instructions a logit and the loads hidden together.
#pragma once

#include "cuda/cross_entropy/common.cuh"
#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::ce {

// 512 threads, two blocks an SM (≤ 64 registers a thread); kLoopUnroll 16-byte vectors a thread a step.
constexpr int kLoopThreads = 512;
constexpr int kLoopUnroll = 4;

template <typename T>
struct alignas(16) LoopVec {
  static constexpr int V = 16 / static_cast<int>(sizeof(T));
  T v[V];
};

// A thread's running share of a row's logits other than the target: m its max so far, sum Σ exp(z − m) (the max's own
// term included, as the one-read kernel's warp sums: R = (1 + d)·exp(m − M) takes it back out exactly).
struct RunningSum {
  float m, sum;
};

// The step's max cm rose above the running max (or either is NaN): move m there, rescaling the sum once. Regimes as
// OnlineSoftmaxState's: NaN sticks, +inf saturates (the sum is then ignored), an empty thread starts from nothing.
__device__ __forceinline__ void running_rise(RunningSum& s, float cm) {
  if (cm != cm || s.m != s.m) {
    s.m = detail::nan_<float>();
  } else if (s.m == -detail::inf_<float>() || cm == detail::inf_<float>()) {
    s.m = cm;
    s.sum = 0.0f;
  } else {  // finite m < cm ≤ finite
    s.sum *= exp_diff(s.m, cm);
    s.m = cm;
  }
}

// One step's C = U·V values of thread `g` (the step's vector u is s·U·T + u·T + g): loaded with hint kHint (kernels::
// load_vec), positions past n read as `pad`. `vec`: the row is 16-byte aligned with unit stride, read in 16-byte
// vectors; else element by element at stride `step` through the same map (the same values in the same registers: the
// same bits).
template <int kHint, typename In, int U>
__device__ __forceinline__ void loop_load(float (&x)[U * LoopVec<In>::V], const In* row, int n, int s, int g, int T,
                                          float pad, bool vec, std::int64_t step) {
  constexpr int V = LoopVec<In>::V;
  const int k0 = s * U * T + g;
  const auto* pv = reinterpret_cast<const LoopVec<In>*>(row);
  if (!vec) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i0 = (k0 + u * T) * V;
#pragma unroll
      for (int j = 0; j < V; ++j) x[u * V + j] = i0 + j < n ? kernels::to_f32(row[(i0 + j) * step]) : pad;
    }
    return;
  }
  if ((k0 + (U - 1) * T + 1) * V <= n) {  // every vector whole: all the loads in flight first
    LoopVec<In> w[U];
#pragma unroll
    for (int u = 0; u < U; ++u) w[u] = kernels::load_vec<kHint>(pv + k0 + u * T);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < V; ++j) x[u * V + j] = kernels::to_f32(w[u].v[j]);
    return;
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int i0 = (k0 + u * T) * V;
    if (i0 + V <= n) {
      const LoopVec<In> w = kernels::load_vec<kHint>(pv + k0 + u * T);
#pragma unroll
      for (int j = 0; j < V; ++j) x[u * V + j] = kernels::to_f32(w.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) x[u * V + j] = i0 + j < n ? kernels::to_f32(row[i0 + j]) : pad;
    }
  }
}

// The step's values as Out, at the positions loop_load read them from (V of In's elements a vector: one 16-byte
// store, two for a 16-bit row's f32 gradient; `vec` false: element by element at stride `step`); streaming stores
// (st.global.cs) where `streaming`.
template <typename In, typename Out, int U>
__device__ __forceinline__ void loop_store(Out* row, const float (&x)[U * LoopVec<In>::V], int n, int s, int g, int T,
                                           bool streaming, bool vec, std::int64_t step) {
  constexpr int V = LoopVec<In>::V;
  constexpr int kWords = V * static_cast<int>(sizeof(Out)) / 16;  // 16-byte stores a vector: 1 or 2
  const int k0 = s * U * T + g;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int i0 = (k0 + u * T) * V;
    if (!vec) {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < n) row[(i0 + j) * step] = kernels::from_f32<Out>(x[u * V + j]);
    } else if (i0 + V <= n) {
#pragma unroll
      for (int w = 0; w < kWords; ++w) {
        LoopVec<Out> o;
#pragma unroll
        for (int j = 0; j < LoopVec<Out>::V; ++j) o.v[j] = kernels::from_f32<Out>(x[u * V + w * LoopVec<Out>::V + j]);
        uint4 b;
        memcpy(&b, &o, sizeof(b));
        auto* q = reinterpret_cast<uint4*>(row + i0) + w;
        if (streaming) __stcs(q, b);
        else *q = b;
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < n) row[i0 + j] = kernels::from_f32<Out>(x[u * V + j]);
    }
  }
}

// The staged variant (ce12, session 12; kStaged below): a step's U vectors of thread g kept in shared memory, at
// slot (s·U + u)·T + g of the block's stage (consecutive threads, consecutive 16 bytes: no bank conflicts), so pass 2
// takes them from there instead of reading them again. One step is kLoopStepBytes (32 KB) whatever the dtype.
constexpr int kLoopStepBytes = kLoopThreads * kLoopUnroll * 16;
// Staged step s of pass 1: thread g's U whole vectors loaded (evict-first where `hints`: the stage is their only
// re-read, so they need not stay in L2), kept at their stage slots, and converted as loop_load converts them (the same
// values in the same registers: the same bits).
template <typename In, int U>
__device__ __forceinline__ void stage_load(float (&x)[U * LoopVec<In>::V], LoopVec<In>* slot, const In* row, int s,
                                           int g, int T, int hints) {
  constexpr int V = LoopVec<In>::V;
  const auto* pv = reinterpret_cast<const LoopVec<In>*>(row) + s * U * T + g;
  LoopVec<In> w[U];
  if (hints) {
#pragma unroll
    for (int u = 0; u < U; ++u) w[u] = kernels::load_vec<kernels::kLoadEvictFirst>(pv + u * T);
  } else {
#pragma unroll
    for (int u = 0; u < U; ++u) w[u] = kernels::load_vec<kernels::kLoadPlain>(pv + u * T);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) slot[u * T + g] = w[u];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int j = 0; j < V; ++j) x[u * V + j] = kernels::to_f32(w[u].v[j]);
}
// Staged step s of pass 2: the same vectors back from the stage (written by this thread in pass 1: no barrier).
template <typename In, int U>
__device__ __forceinline__ void stage_read(float (&x)[U * LoopVec<In>::V], const LoopVec<In>* slot, int g, int T) {
  constexpr int V = LoopVec<In>::V;
  LoopVec<In> w[U];
#pragma unroll
  for (int u = 0; u < U; ++u) w[u] = slot[u * T + g];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int j = 0; j < V; ++j) x[u * V + j] = kernels::to_f32(w[u].v[j]);
}

// The kernel. `hints` 0: plain loads and stores (tuning), else evict-last in pass 1, evict-first and streaming in
// pass 2. Outputs as fused_kernel's (FusedArgs: the gradient, the per-row values, the mean's TargetParts).
// kStaged (ce12): the row's first min(stage_steps, whole steps) steps are also kept in the block's dynamic shared
// memory (stage_steps · kLoopStepBytes, sized by the launch) and pass 2 takes them from there: (2 + (C − K)/C)·n bytes
// for K staged logits a row instead of 3n. Only for 16-byte vector rows (f.loop_vec_in; the launch checks). The
// values, their registers and every sum are the unstaged kernel's, so are the bits (tested: StagedSameBits).
template <typename In, typename Out, bool kStaged = false>
__global__ void __launch_bounds__(kLoopThreads, 2) ce_row_loop_kernel(const Args a, const FusedArgs f,
                                                                      const Totals* totals, int hints,
                                                                      int stage_steps) {
  constexpr int T = kLoopThreads, U = kLoopUnroll, V = LoopVec<In>::V, C = U * V, kWarps = T / 32;
  constexpr float kPad = -detail::inf_<float>();  // past the row's end: nothing to a max or a sum of exponentials
  __shared__ RowPart warp_part[2][kWarps];  // by row parity: rewritten two rows later, behind the next row's barrier
  __shared__ float zt_slot[2];
  extern __shared__ __align__(16) unsigned char loop_stage_bytes[];  // kStaged: stage_steps · kLoopStepBytes
  auto* const stage = reinterpret_cast<LoopVec<In>*>(loop_stage_bytes);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int n = static_cast<int>(a.classes);
  const int nv = (n + V - 1) / V, per_step = U * T, steps = (nv + per_step - 1) / per_step;
  // The staged steps: the first ones, each of whole vectors only (a function of C and the launch's stage_steps).
  int staged = 0;
  if constexpr (kStaged) staged = f.loop_vec_in ? min(stage_steps, (n / V) / per_step) : 0;

  kernels::pdl_wait();  // the scan's totals (a plain launch: at once)
  kernels::pdl_launch_dependents();
  float g_ce_all, g_z_all;
  reduction_scales(a, f.grad_loss, totals, g_ce_all, g_z_all);
  const float soft = a.eps / static_cast<float>(a.classes);
  const float W = static_cast<float>(totals->weight_total);

  std::int64_t t_next = blockIdx.x < a.rows ? target_of(a, blockIdx.x) : 0;
  int parity = 0;
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x, parity ^= 1) {
    const In* xr = row_ptr<In>(a, row);
    const std::int64_t t = t_next;
    if (row + gridDim.x < a.rows) t_next = target_of(a, row + gridDim.x);  // in flight through this row
    const RowKind kind = row_kind(a, t);
    const bool valid = kind == RowKind::valid;
    const float wt = valid ? weight_of(a, t) : 0.0f;
    float g_ce = g_ce_all, g_z = g_z_all;
    if (a.reduction == Reduction::none && f.grad_loss) g_ce = g_z = f.grad_loss[row * f.gl_stride];
    const bool smoothing = a.eps > 0 && valid;
    float r0 = 0;
    if (smoothing) {
      r0 = kernels::to_f32(xr[0]);
      r0 = isfinite(r0) ? r0 : 0.0f;
    }
    // Where the target sits in the element map: step s_t, thread g_t, register slot_t (−1: no target).
    int s_t = -1, g_t = -1, slot_t = -1;
    if (valid) {
      const int ti = static_cast<int>(t), vi = ti / V;
      s_t = vi / per_step;
      const int r = vi - s_t * per_step, u = r / T;
      g_t = r - u * T;
      slot_t = u * V + ti % V;
    }

    // Pass 1.
    RunningSum run{-detail::inf_<float>(), 0.0f};
    float sm = 0, zt_mine = -detail::inf_<float>();
    for (int s = 0; s < steps; ++s) {
      float x[C];
      if (kStaged && s < staged) stage_load<In, U>(x, stage + s * per_step, xr, s, tid, T, hints);
      else if (hints) loop_load<kernels::kLoadEvictLast, In, U>(x, xr, n, s, tid, T, kPad, f.loop_vec_in, a.col_stride);
      else loop_load<kernels::kLoadPlain, In, U>(x, xr, n, s, tid, T, kPad, f.loop_vec_in, a.col_stride);
      if (smoothing) {  // Σ w_c (z_c − r) over this thread's logits, the target's included (r: the row's first logit)
        const int k0 = s * per_step + tid;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          float terms[V];
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const int i = (k0 + u * T) * V + j;
            terms[j] = i < n ? weight_of(a, i) * (x[u * V + j] - r0) : 0.0f;
          }
          sm += kernels::tree_sum<V>(terms);
        }
      }
      if (s == s_t && tid == g_t) {  // the target leaves the sums (−inf: no term), its logit kept
#pragma unroll
        for (int i = 0; i < C; ++i)
          if (i == slot_t) {
            zt_mine = x[i];
            x[i] = -detail::inf_<float>();
          }
      }
      const float cm = kernels::tree_max<C>(x);
      if (!(cm <= run.m)) running_rise(run, cm);
      // m = −inf (every score so far −inf): shift 0, every term exp(−inf) = 0; m = +inf or NaN: the state is decided
      // by m whatever the sum holds.
      const float shift = State::shift_for(run.m);
#pragma unroll
      for (int i = 0; i < C; ++i) x[i] = exp_shifted(x[i], shift);
      run.sum += kernels::tree_sum<C>(x);
    }
    // The row: each warp's threads combined, then the block's warps (one barrier), as the one-read kernel's exchange.
    const State sw = combine_parts(State::from_max_and_sum(run.m, run.sum));
    if (smoothing) sm = kernels::group_sum(sm, 32);
    if (lane == 0) warp_part[parity][warp] = RowPart{sw.m, sw.d, sm, 0.0f};
    if (tid == g_t) zt_slot[parity] = zt_mine;
    __syncthreads();
    State rs = State::empty();
    float rsm = 0;
    if (lane < kWarps) {
      const RowPart p = warp_part[parity][lane];
      rs = State::from_fields(p.m, p.d);
      rsm = p.smooth;
    }
    rs = combine_parts(rs);
    if (smoothing) rsm = kernels::group_sum(rsm, 32);
    const float zt = valid ? zt_slot[parity] : 0.0f;
    const RowScalars rsc = row_scalars(rs, zt, valid);
    const float hard = (1 - a.eps) * wt;
    if (tid == 0) row_loss(a, totals, f.out, row, kind, rsc, zt, hard, soft, smoothing, r0, rsm);

    // Pass 2: the steps in reverse.
    Out* gr = static_cast<Out*>(f.grad) + row * f.g_row_stride;
    if (!valid) {  // ignored: 0; a bad target: NaN; nothing to read
      float fill[C];
#pragma unroll
      for (int i = 0; i < C; ++i) fill[i] = kind == RowKind::ignored ? 0.0f : detail::nan_<float>();
      for (int s = steps - 1; s >= 0; --s)
        loop_store<In, Out, U>(gr, fill, n, s, tid, T, hints != 0, f.loop_vec_out, f.g_col_stride);
      continue;
    }
    const GradCoeffs gc = grad_coeffs(a, rsc, g_ce, g_z, hard, soft, W);
    float dt = 0;
    if (tid == g_t) dt = target_entry(rsc, gc, g_ce, hard, soft, W, wt, f.target_parts, row);
    const bool weighted = smoothing && a.weights;
    for (int s = steps - 1; s >= 0; --s) {
      float x[C];
      if (kStaged && s < staged) stage_read<In, U>(x, stage + s * per_step, tid, T);
      else if (hints) loop_load<kernels::kLoadEvictFirst, In, U>(x, xr, n, s, tid, T, kPad, f.loop_vec_in, a.col_stride);
      else loop_load<kernels::kLoadPlain, In, U>(x, xr, n, s, tid, T, kPad, f.loop_vec_in, a.col_stride);
      if (weighted) {
        const int k0 = s * per_step + tid;
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const int i = (k0 + u * T) * V + j;
            x[u * V + j] = fmaf(grad_exp<Out>(x[u * V + j], rsc.shift), gc.A, i < n ? gc.B * weight_of(a, i) : 0.0f);
          }
      } else {
#pragma unroll
        for (int i = 0; i < C; ++i) x[i] = fmaf(grad_exp<Out>(x[i], rsc.shift), gc.A, gc.B);
      }
      if (s == s_t && tid == g_t) {
#pragma unroll
        for (int i = 0; i < C; ++i)
          if (i == slot_t) x[i] = dt;
      }
      loop_store<In, Out, U>(gr, x, n, s, tid, T, hints != 0, f.loop_vec_out, f.g_col_stride);
    }
  }
}

}  // namespace smk::cuda::ce
