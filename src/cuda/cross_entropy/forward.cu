// Cross-entropy forward on the GPU: one read of the logits per row → per-row loss, LSE (f32) and z-loss, and the
// sum / mean over rows without float atomics. Four launches:
//   1. scan (one block): class weights checked and summed, targets checked (first bad row → the error flag), the
//      mean's denominators Σ w_t and the count of rows not ignored, in double, in a fixed order;
//   2. stats (one block per (row, chunk) of 8192 logits): the chunk's online state over every logit but the
//      target's, and Σ w_c (z_c − r) for label smoothing (r = the row's first logit, so the later subtraction
//      W·(LSE − r) − Σ w_c (z_c − r) cancels only the row's spread, never its offset);
//   3. rows (one thread per row): merges the chunk states in chunk order, adds the target logit z_t last, and forms
//      nll = LSE − z_t = softplus(LSE_rest − z_t), exact to f32 even when p_t → 1 (where LSE − z_t would cancel);
//   4. reduce (one block, sum / mean only): Σ over rows in double in a fixed order. After the one-read kernel
//      (fused.cu) under the mean with an f32 gradient it also re-forms each row's target entry in double from the
//      parts that kernel left (TargetFix, common.cuh; ce10, session 10): 16 B read and 4 B written a row.
//
// Traffic per element: the logits are read once, 4 B (f32) or 2 B (bf16 / f16); the per-row values, the targets
// and the chunk states are < 0.1 % of it at the issue's shapes. Floor on the H200 at the read ceiling of 4.30 TB/s
// (ANCHORS.md; 4.8 TB/s nominal): 4096×151936 f32 (2.49 GB) 579 µs, bf16 290 µs; 8192×32000 f32 (1.05 GB) 244 µs,
// bf16 122 µs.
// Measured (H200, 2026-11-30, ce5's run of 88d0035 at 08:16 UTC, tune_cross_entropy, the forward with the LSE, mean;
// docs/bench/ce5-s7-2026-11-30.md): 8192×32000 bf16 242 µs (50 % of read; 266 before the chunk was loaded ahead of
// the target), f16 244, f32 280 (87 %; 289); 4096×151936 bf16 498 (58 %; 495), f16 489, f32 602 (96 %; 606); torch's
// F.cross_entropy 2.1-4.0× slower. Count (ncu --set full, ce5's run of 6bf877f, bf16 8192×32000, before ce5): 19.6
// instructions a logit, issue slots 74 % busy, DRAM 51 %, the top stalls waiting for the target, then the chunk
// (RawChunk below). At the bf16 floor a logit may cost ≈ 15 lane-instructions before issue limits it: the 16-bit
// forward is now bound by its instructions a logit (the block's max and sum, two barriers an item, the item's own
// work), not by bytes in flight. A persistent grid loading the next item into registers (three blocks an SM, 80
// registers) timed slower (ce5's run of 6bf877f: 276 against 256 µs, 576 against 510) and was withdrawn.
#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>

#include "cuda/cross_entropy/common.cuh"
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "cuda/cross_entropy/linear_launch.cuh"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/launch.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cuda::ce {

namespace {

using kernels::block_max;
using kernels::block_sum;
using kernels::RowTile;

__global__ void __launch_bounds__(kScanThreads) scan_kernel(const Args a, Totals* totals, Flags* flags) {
  // A dependent launch after it (the one-read kernel under FusedTuning::pdl) may be scheduled now; it waits for this
  // grid's totals in griddepcontrol.wait. Nothing when none is.
  kernels::pdl_launch_dependents();
  __shared__ double sh[3][kScanThreads];
  const int tid = static_cast<int>(threadIdx.x);
  double wsum = 0, den = 0, count = 0;
  if (a.weights) {
    for (std::int64_t c = tid; c < a.classes; c += kScanThreads) {
      const float w = weight_of(a, c);
      if (!(w >= 0.0f && w <= 3.402823466e38f)) atomicMin(&flags->bad_weight, static_cast<unsigned long long>(c));
      wsum += w;
    }
  } else if (tid == 0) {
    wsum = static_cast<double>(a.classes);
  }
  for (std::int64_t r = tid; r < a.rows; r += kScanThreads) {
    const std::int64_t t = target_of(a, r);
    const RowKind k = row_kind(a, t);
    if (k == RowKind::bad) atomicMin(&flags->bad_row, static_cast<unsigned long long>(r));
    if (k != RowKind::valid) continue;
    den += weight_of(a, t);
    count += 1;
  }
  sh[0][tid] = wsum;
  sh[1][tid] = den;
  sh[2][tid] = count;
  __syncthreads();
  for (int half = kScanThreads / 2; half > 0; half /= 2) {
    if (tid < half)
      for (int k = 0; k < 3; ++k) sh[k][tid] += sh[k][tid + half];
    __syncthreads();
  }
  if (tid == 0) *totals = Totals{sh[0][0], sh[1][0], sh[2][0]};
}

// A chunk's logits as stored (RowTile's element-to-thread map, 16-byte vectors as 32-bit words), for rows that are
// unit-stride with 16-byte aligned starts (the launcher checks: `aligned`): whole vectors below len, the one partial
// vector at a chunk's end element by element, positions past len as −inf. fetch only issues the loads, so the
// target's load can be issued after them and before anything waits (ncu on the H200, ce5, session 7: with RowTile::load
// in a branch after the target's, the kernel waited for the target, then for the chunk: two memory latencies in a row
// an item). unpack gives exactly RowTile::load's values, so the states' bits do not change. As words, not vectors of
// In: a vector of 16-bit values built element by element went through local memory (ptxas -v).
template <typename In>
struct RawChunk {
  using Tile = RowTile<In, kElems>;
  static constexpr int V = Tile::V, K = Tile::K, kPerWord = 4 / static_cast<int>(sizeof(In));
  static_assert(V * sizeof(In) == 16, "16-byte vectors");
  uint4 w[K];
  __device__ __forceinline__ static unsigned bits(In x) {
    if constexpr (std::is_same_v<In, __half>) return __half_as_ushort(x);
    else if constexpr (std::is_same_v<In, __nv_bfloat16>) return __bfloat16_as_ushort(x);
    else return __float_as_uint(x);
  }
  __device__ __forceinline__ static float value(unsigned b) {
    if constexpr (std::is_same_v<In, __half>) return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
    else if constexpr (std::is_same_v<In, __nv_bfloat16>) return __uint_as_float(b << 16);
    else return __uint_as_float(b);
  }
  __device__ __forceinline__ void fetch(const In* x, int len, int g) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = Tile::index(k, g, kThreads);
      if (i0 + V <= len) {
        w[k] = *reinterpret_cast<const uint4*>(x + i0);
      } else {
        const unsigned pad = bits(kernels::from_f32<In>(-detail::inf_<float>()));
        unsigned e[V];
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = i0 + j < len ? bits(x[i0 + j]) : pad;
        unsigned q[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) q[j] = kPerWord == 2 ? (e[2 * j] | e[(2 * j + 1) % V] << 16) : e[j];
        w[k] = make_uint4(q[0], q[1], q[2], q[3]);
      }
    }
  }
  __device__ __forceinline__ void unpack(float (&v)[kElems]) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const unsigned q[4] = {w[k].x, w[k].y, w[k].z, w[k].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (kPerWord == 2) {
          v[k * V + 2 * j] = value(q[j] & 0xffffu);
          v[k * V + 2 * j + 1] = value(q[j] >> 16);
        } else {
          v[k * V + j] = value(q[j]);
        }
      }
    }
  }
};

template <typename In>
__global__ void __launch_bounds__(kThreads, kMinBlocks) stats_kernel(const Args a, bool exclude_target, bool skip_ignored,
                                                         bool aligned, State* states, float* smooth) {
  using Tile = RowTile<In, kElems>;
  __shared__ float red_max[32], red_sum[32], red_smooth[32];
  const int g = static_cast<int>(threadIdx.x);
  const std::int64_t total = a.rows * a.chunks;
  // A 32-bit division where the item count allows (uniform), ~8 instructions a thread an item where the 64-bit one
  // takes ~40.
  const bool narrow = total <= std::int64_t{0xffffffff};
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    const std::int64_t row = narrow ? static_cast<std::int64_t>(static_cast<std::uint32_t>(idx) /
                                                                static_cast<std::uint32_t>(a.chunks))
                                    : idx / a.chunks;
    const std::int64_t c = idx - row * a.chunks;
    const std::int64_t first = c * kChunk;
    const int len = static_cast<int>(a.classes - first < kChunk ? a.classes - first : kChunk);
    const In* xr = row_ptr<In>(a, row);
    // The chunk's loads and the target's are both issued before anything waits for either (RawChunk): ncu on the H200 (ce5, session 7, bf16
    // 8192×32000) found the block stalled on the target (the skip test, compiled ahead of the loads it guarded) and
    // only then issuing the chunk, two memory latencies in a row for every item. An ignored row's chunk is now read
    // when skip_ignored drops it (the forward without the LSE): a wasted read, never a wrong one.
    float v[kElems];
    std::int64_t t;
    if (aligned) {
      RawChunk<In> raw;
      raw.fetch(xr + first, len, g);
      t = target_of(a, row);
      raw.unpack(v);
    } else {
      t = target_of(a, row);
      Tile::load(v, xr + first * a.col_stride, len, a.col_stride, g, kThreads);
    }
    if (skip_ignored && t == a.ignore) continue;  // uniform across the block
    const RowKind kind = row_kind(a, t);
    if (a.cap > 0) {
#pragma unroll
      for (int k = 0; k < Tile::K; ++k)
#pragma unroll
        for (int j = 0; j < Tile::V; ++j)
          if (Tile::index(k, g, kThreads) + j < len) v[k * Tile::V + j] = capped(a, v[k * Tile::V + j]);
    }
    // Label smoothing's Σ_c w_c (z_c − r), the target included, ignored rows excluded (their loss is 0).
    const bool smoothing = a.eps > 0 && smooth != nullptr && kind != RowKind::ignored;
    float part = 0;
    if (smoothing) {  // pairwise within a vector, then vector by vector (a depth of log2 V + K additions)
      float r = capped(a, kernels::to_f32(xr[0]));
      r = isfinite(r) ? r : 0.0f;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        float terms[Tile::V];
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) {
          const int i = Tile::index(k, g, kThreads) + j;
          terms[j] = i < len ? weight_of(a, first + i) * (v[k * Tile::V + j] - r) : 0.0f;
        }
        part += kernels::tree_sum<Tile::V>(terms);
      }
    }
    // The target's logit is left out of the state; the row kernel adds it last (see the file comment).
    if (exclude_target && kind == RowKind::valid) {
      const std::int64_t lt = t - first;
      if (lt >= 0 && lt < len) {
#pragma unroll
        for (int k = 0; k < Tile::K; ++k)
#pragma unroll
          for (int j = 0; j < Tile::V; ++j)
            if (Tile::index(k, g, kThreads) + j == lt) v[k * Tile::V + j] = -detail::inf_<float>();
      }
    }
    const float m = block_max(kernels::tree_max<kElems>(v), red_max);
    const float shift = State::shift_for(m);
#pragma unroll
    for (int i = 0; i < kElems; ++i) v[i] = exp_shifted(v[i], shift);  // in place: the logits are not needed again
    const float l = block_sum(kernels::tree_sum<kElems>(v), red_sum);
    if (smoothing) part = block_sum(part, red_smooth);
    if (g == 0) {
      states[idx] = State::from_max_and_sum(m, l);
      if (smooth) smooth[idx] = part;
    }
  }
}

template <typename In>
__global__ void __launch_bounds__(kRowThreads) rows_kernel(const Args a, const State* states, const float* smooth,
                                                           const Totals* totals, RowOut o) {
  for (std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t t = target_of(a, row);
    const RowKind kind = row_kind(a, t);
    float lse = 0, ce = 0, zl = 0;
    if (kind != RowKind::ignored || o.lse) {
      State rest = State::empty();
      double smooth_sum = 0;
      for (std::int64_t c = 0; c < a.chunks; ++c) {
        rest.merge(states[row * a.chunks + c]);
        if (smooth) smooth_sum += smooth[row * a.chunks + c];
      }
      if (kind != RowKind::valid) {
        lse = rest.lse();  // nothing was excluded
        if (kind == RowKind::bad) ce = detail::nan_<float>();  // the host throws; never a silent 0
      } else {
        const In* xr = row_ptr<In>(a, row);
        const float zt = capped(a, kernels::to_f32(xr[t * a.col_stride]));
        State full = rest;
        full.merge(State::from_max_and_sum(zt, 1.0f));
        lse = full.lse();
        // LSE − z_t = log(1 + exp(LSE_rest − z_t)): no cancellation as p_t → 1, where the rounded LSE minus z_t
        // would lose every digit. Non-finite rows take the plain difference (inf − inf = NaN, as on the CPU).
        const float lr = rest.lse();
        float nll;
        if (isfinite(zt) && lr == lr && lr < detail::inf_<float>()) {
          const float d = lr - zt;
          nll = d > 0 ? d + log1pf(expf(-d)) : log1pf(expf(d));
        } else {
          nll = lse - zt;
        }
        ce = (1 - a.eps) * weight_of(a, t) * nll;
        if (smooth && a.eps > 0) {
          // Σ_c w_c (LSE − z_c) = W·(LSE − r) − Σ_c w_c (z_c − r), r as in the stats kernel.
          float r = capped(a, kernels::to_f32(xr[0]));
          r = isfinite(r) ? r : 0.0f;
          const double sm = totals->weight_total * (static_cast<double>(lse) - r) - smooth_sum;
          ce += a.eps / static_cast<float>(a.classes) * static_cast<float>(sm);
        }
        if (a.s > 0) zl = a.s * lse * lse;
      }
    }
    o.write(row, lse, ce, zl);
  }
}

// Sum / mean over rows: one block, each thread a fixed stride of rows in double, then a fixed tree.
__global__ void __launch_bounds__(kScanThreads) reduce_kernel(const Args a, const float* ce_rows,
                                                              const float* zl_rows, const Totals* totals,
                                                              float* loss, float* z, const TargetFix fix) {
  kernels::pdl_wait();  // launched as a dependent (launch_reduce's `dependent`): the rows' losses are complete
  __shared__ double sh[2][kScanThreads];
  const int tid = static_cast<int>(threadIdx.x);
  if (fix.parts) {  // the mean's f32 target entries (TargetFix, common.cuh), each rounded once from double
    const double g = safe_div(fix.grad_loss ? static_cast<double>(fix.grad_loss[0]) : 1.0, totals->den_ce,
                              a.nothing_is_zero);
    // Four rows a thread at a time, their loads issued before any store (a store to the gradient could alias them
    // as far as the compiler knows, so it would not hoist the next row's loads above it): 8192 rows are two rounds
    // of the targets' and the parts' load latency, not eight. A row not valid has no parts (its slot is not
    // written), so its parts are not read (review F15: no read of uninitialised workspace).
    constexpr int kAhead = 4;
    for (std::int64_t r0 = tid; r0 < a.rows; r0 += kAhead * kScanThreads) {
      bool valid[kAhead];
      std::int64_t t[kAhead];
      TargetParts p[kAhead];
#pragma unroll
      for (int k = 0; k < kAhead; ++k) {
        const std::int64_t r = r0 + k * kScanThreads;
        t[k] = r < a.rows ? target_of(a, r) : a.ignore;
      }
#pragma unroll
      for (int k = 0; k < kAhead; ++k) {
        const std::int64_t r = r0 + k * kScanThreads;
        valid[k] = r < a.rows && row_kind(a, t[k]) == RowKind::valid;
        if (valid[k]) p[k] = fix.parts[r];
      }
#pragma unroll
      for (int k = 0; k < kAhead; ++k) {
        const std::int64_t r = r0 + k * kScanThreads;
        if (!valid[k]) continue;  // the kernel's 0 or NaN stays
        const double R = p[k].R, l = static_cast<double>(p[k].R) + p[k].et;
        // A row the kernel's f32 arithmetic did not carry through finitely keeps the kernel's entry (the same
        // regimes as every other entry of its row).
        if (!(l > 0) || !isfinite(l) || !isfinite(p[k].rest) || !isfinite(g)) continue;
        fix.grad[r * fix.row_stride + t[k] * fix.col_stride] = static_cast<float>(g * p[k].hard * (-R / l) + p[k].rest);
      }
    }
  }
  double ce = 0, zl = 0;
  for (std::int64_t r = tid; r < a.rows; r += kScanThreads) {
    ce += ce_rows[r];
    zl += zl_rows[r];
  }
  sh[0][tid] = ce;
  sh[1][tid] = zl;
  __syncthreads();
  for (int half = kScanThreads / 2; half > 0; half /= 2) {
    if (tid < half) {
      sh[0][tid] += sh[0][tid + half];
      sh[1][tid] += sh[1][tid + half];
    }
    __syncthreads();
  }
  if (tid != 0) return;
  ce = sh[0][0];
  zl = sh[1][0];
  if (a.reduction == Reduction::mean) {
    ce = safe_div(ce, totals->den_ce, a.nothing_is_zero);
    zl = safe_div(zl, totals->den_z, a.nothing_is_zero);
  }
  *loss = static_cast<float>(ce + zl);
  if (z) *z = static_cast<float>(zl);
}

// Per-row LSE only (no target excluded), for the backward pass.
__global__ void __launch_bounds__(kRowThreads) lse_kernel(const Args a, const State* states, float* lse) {
  for (std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if (row_kind(a, target_of(a, row)) == RowKind::ignored) continue;  // its gradient is 0 whatever the LSE
    State s = State::empty();
    for (std::int64_t c = 0; c < a.chunks; ++c) s.merge(states[row * a.chunks + c]);
    lse[row] = s.lse();
  }
}

unsigned row_grid(std::int64_t rows) {
  return kernels::capped_grid((rows + kRowThreads - 1) / kRowThreads);
}

}  // namespace

void launch_scan(const Args& a, Totals* totals, Flags* flags, cudaStream_t s) {
  scan_kernel<<<1, kScanThreads, 0, s>>>(a, totals, flags);
  SMK_CUDA_CHECK_LAUNCH("cross_entropy scan_kernel");
}

void launch_stats(const Args& a, DType x_dtype, bool exclude_target, bool skip_ignored, State* states, float* smooth,
                  cudaStream_t s) {
  const std::int64_t total = a.rows * a.chunks;
  if (total == 0) return;
  kernels::with_in_type(x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    // Unit-stride rows with 16-byte aligned starts: the chunk loaded as words (RawChunk) ahead of the target.
    const bool aligned = a.col_stride == 1 && reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 &&
                         (a.row_stride * static_cast<std::int64_t>(sizeof(In))) % 16 == 0;
    stats_kernel<In><<<kernels::capped_grid(total), kThreads, 0, s>>>(a, exclude_target, skip_ignored, aligned, states,
                                                                      smooth);
  });
  SMK_CUDA_CHECK_LAUNCH("cross_entropy stats_kernel");
}

void launch_lse(const Args& a, const State* states, float* lse, cudaStream_t s) {
  if (a.rows == 0) return;
  lse_kernel<<<row_grid(a.rows), kRowThreads, 0, s>>>(a, states, lse);
  SMK_CUDA_CHECK_LAUNCH("cross_entropy lse_kernel");
}

// Linear cross-entropy's chunks (linear_launch.cuh): the same kernels as cross_entropy_forward below.
void launch_rows(const Args& a, DType x_dtype, const State* states, const float* smooth, const Totals* totals,
                 float* loss, std::int64_t loss_stride, float* lse, std::int64_t lse_stride, float* ce_rows,
                 float* zl_rows, cudaStream_t s) {
  if (a.rows == 0) return;
  RowOut o;
  o.loss = loss;
  o.loss_stride = loss_stride;
  o.lse = lse;
  o.lse_stride = lse_stride;
  o.ce_rows = ce_rows;
  o.zl_rows = zl_rows;
  kernels::with_in_type(x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    rows_kernel<In><<<row_grid(a.rows), kRowThreads, 0, s>>>(a, states, smooth, totals, o);
  });
  SMK_CUDA_CHECK_LAUNCH("cross_entropy rows_kernel");
}
void launch_reduce(const Args& a, const float* ce_rows, const float* zl_rows, const Totals* totals, float* loss,
                   float* z, cudaStream_t s, bool dependent, const TargetFix& fix) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(kScanThreads);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = dependent && current_device_attrs().cc_major >= 9 ? 1 : 0;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, reduce_kernel, a, ce_rows, zl_rows, totals, loss, z, fix));
}

void finish(const char* op, const Args& a, void* workspace, cudaStream_t s) {
  // Pinned, so the copy is an asynchronous DMA ordered on `s`; one per host thread, never freed.
  thread_local Flags* host = [] {
    void* p = nullptr;
    SMK_CUDA_CHECK(cudaHostAlloc(&p, sizeof(Flags), cudaHostAllocPortable));
    return static_cast<Flags*>(p);
  }();
  SMK_CUDA_CHECK(cudaMemcpyAsync(host, workspace, sizeof(Flags), cudaMemcpyDeviceToHost, s));
  kernels::workspace_free(workspace, s);
  SMK_CUDA_CHECK(cudaStreamSynchronize(s));
  const Flags f = *host;
  if (f.bad_weight != kNone)
    throw_invalid_argument(op, "options.class_weights",
                           "weight[" + std::to_string(f.bad_weight) + "] must be finite and >= 0");
  if (f.bad_row != kNone) {
    const auto row = static_cast<std::int64_t>(f.bad_row);
    const std::int64_t size = a.targets_i64 ? 8 : 4;
    const auto* src = static_cast<const unsigned char*>(a.targets) + row * a.t_stride * size;
    std::int64_t t = 0;
    if (a.targets_i64) {
      SMK_CUDA_CHECK(cudaMemcpy(&t, src, 8, cudaMemcpyDeviceToHost));
    } else {
      std::int32_t t32 = 0;
      SMK_CUDA_CHECK(cudaMemcpy(&t32, src, 4, cudaMemcpyDeviceToHost));
      t = t32;
    }
    throw_invalid_argument(op, "targets",
                           "targets[" + std::to_string(row) + "] = " + std::to_string(t) + " is outside [0, " +
                               std::to_string(a.classes) + ") and is not ignore_index (" + std::to_string(a.ignore) +
                               "); that row's loss or gradient is NaN");
  }
}

Args make_args(const TensorView& logits, const TensorView& targets, const CrossEntropyOptions& o) {
  Args a;
  a.x = logits.data;
  a.rows = logits.shape[0];
  a.classes = logits.shape[1];
  a.row_stride = logits.strides[0];
  a.col_stride = logits.strides[1];
  a.chunks = (a.classes + kChunk - 1) / kChunk;
  a.targets = targets.data;
  a.targets_i64 = targets.dtype == DType::i64;
  a.t_stride = targets.strides[0];
  a.ignore = o.ignore_index;
  a.weights = static_cast<const float*>(o.class_weights.data);
  a.w_stride = o.class_weights.data ? o.class_weights.strides[0] : 0;
  a.eps = o.label_smoothing;
  a.s = o.z_loss;
  a.cap = o.softcap;
  a.reduction = o.reduction;
  a.nothing_is_zero = o.mean_of_nothing_is_zero;
  return a;
}

}  // namespace smk::cuda::ce

namespace smk::cuda {

void cross_entropy_forward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                           const TensorView& logits, const TensorView& targets, const CrossEntropyOptions& options,
                           const TensorView& lse, const TensorView& z_loss, Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const Args a = make_args(logits, targets, options);
  const bool per_row = options.reduction == Reduction::none;
  const bool smoothing = options.label_smoothing > 0;
  const std::int64_t parts = p.rows * a.chunks;
  // Workspace: flags, totals, the chunk states and smoothing partials, and (sum / mean) two floats per row.
  CallWorkspace ws;
  const std::size_t off_states = ws.add(sizeof(State) * parts);
  const std::size_t off_smooth = ws.add(smoothing ? sizeof(float) * parts : 0);
  const std::size_t off_ce = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  const std::size_t off_zl = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  ws.alloc(s);
  auto* states = ws.at<State>(off_states);
  float* smooth = smoothing ? ws.at<float>(off_smooth) : nullptr;
  const Totals* totals = ws.totals();
  const RowOut o = make_row_out(options.reduction, loss, z_loss, lse, ws.at<float>(off_ce), ws.at<float>(off_zl));
  ws.run(op, a, s, [&] {
    launch_stats(a, logits.dtype, true, o.lse == nullptr, states, smooth, s);
    if (p.rows > 0) {
      kernels::with_in_type(logits.dtype, [&](auto* tag) {
        using In = std::remove_pointer_t<decltype(tag)>;
        rows_kernel<In><<<row_grid(p.rows), kRowThreads, 0, s>>>(a, states, smooth, totals, o);
      });
      SMK_CUDA_CHECK_LAUNCH("cross_entropy rows_kernel");
    }
    if (!per_row) {
      reduce_kernel<<<1, kScanThreads, 0, s>>>(a, o.ce_rows, o.zl_rows, totals, static_cast<float*>(loss.data),
                                               static_cast<float*>(z_loss.data), TargetFix{});
      SMK_CUDA_CHECK_LAUNCH("cross_entropy reduce_kernel");
    }
    return true;
  });
}

}  // namespace smk::cuda
