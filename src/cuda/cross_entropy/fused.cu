// Cross-entropy forward + backward in one call on the GPU (cross_entropy_forward_backward): the loss (every
// reduction and option), the per-row LSE and the gradient for a given upstream gradient, reading the logits once.
// A row is held on chip from its first read to its gradient's store: kFusedElems logits a thread in registers,
// one block of up to kFusedThreads threads per row, or a thread-block cluster of up to kFusedMaxCluster blocks
// whose partial max and sums meet through distributed shared memory (as softmax's cluster_row,
// src/cuda/softmax/block_row.cu). Each block stages its next row in shared memory with cp.async while it reduces
// and writes the current one, so loads stay in flight through the reductions and the cluster barriers (cluster_row,
// without that, moved only 44-64 % of copy). Rows wider than a cluster holds, soft-capped rows, and launches the
// GPU cannot schedule take the two-read path (cross_entropy then cross_entropy_backward: fused_two_read below); so
// do rows of more than kFusedAutoMaxCluster blocks, where the kernel measured slower than the two calls.
//
// Per row, three reductions: (A) the max m (and label smoothing's Σ w_c (z_c − r)); (B) R = Σ_{j≠t} e_j with
// e_j = exp_diff(z_j, m), the target's term left out so that p_t − 1 = −R / l keeps its digits as p_t → 1, l = R + e_t;
// then the gradient e_j·A + B_j (A = (g·(1 − ε)·w_t + g·ε/C·W + 2s·g_z·LSE) / l, B_j = −g·ε/C·w_j) in registers
// and stored over the row (in place allowed), the target's entry patched by its owner thread. The loss is
// log1p(R) when the target holds the max (exact as p_t → 1), else (m − z_t) + log l (then p_t ≤ ½, nll ≥ log 2).
// Every sum is a fixed tree whose shape depends on C alone (the launch shape is a function of C): bitwise the same
// alone or in any batch, run after run.
//
// Traffic per element: read the logits once and write the gradient once, 8 B (f32), 4 B (bf16 / f16), 6 B (16-bit
// logits, f32 gradient); per-row values and targets < 0.1 %. Floor on the H200 at the copy ceiling of 4.27 TB/s
// (ANCHORS.md): 4096×151936 f32 (4.98 GB) 1166 µs, bf16 583 µs; 8192×32000 f32 (2.10 GB) 491 µs, bf16 246 µs.
// Measured (H200, 2026-11-30, commit ce1a473, tune_cross_entropy, in place, docs/perf-notebook.md "Cross-entropy
// forward + backward in one call"): 8192×32000 bf16 767 µs (1.37 TB/s of the 2n bound, 32 % of copy; two calls
// 1051 µs), f32 933 µs (2.25 TB/s, 53 %; two calls 1150). 4096×151936, 13-block clusters: bf16 2454 µs (24 %),
// f32 2887 µs (40 %), slower than the two calls (1585, 2124): latency-bound (see kFusedAutoMaxCluster), so not
// the default there. Staging the next row (cp.async) gained 4-5 % at 32000 (bf16 767 against 808 µs unstaged).
#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <exception>

#include "cuda/cross_entropy/common.cuh"
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "cuda/cross_entropy/linear_launch.cuh"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/launch.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::ce {

namespace {

namespace cg = cooperative_groups;
using kernels::block_max;
using kernels::block_sum;
using kernels::RowTile;

// 512 threads × 24 logits: 12288 a block, the most that fits with the kernel's other state in the 64 registers
// that let two blocks share an SM (softmax's kBlockElems, same measurement); 16 blocks (the H200's non-portable
// cluster maximum) hold 196608 logits, 151936 needs 13.
constexpr int kFusedThreads = 512;
constexpr int kFusedElems = 24;
constexpr int kFusedMaxCluster = 16;
constexpr std::int64_t kFusedBlockCols = std::int64_t{kFusedThreads} * kFusedElems;
constexpr std::int64_t kFusedMaxCols = kFusedBlockCols * kFusedMaxCluster;  // 196608
// The dispatcher takes the one-read kernel for rows of up to kFusedAutoMaxCluster blocks (49152 classes), the two
// calls above. Measured (H200, 2026-11-30, ce1a473, tune_cross_entropy, in place, mean): at 8192×32000 (3 blocks)
// the kernel beat the two calls, bf16 767 against 1051 µs, f32 933 against 1150, and with 4 blocks still 847 and
// 1042; at 4096×151936 (13 blocks) it lost, bf16 2454 against 1585 µs, f32 2887 against 2124. Each row is a serial
// chain of a max, a sum and two cluster barriers, and only ~16 such rows fit on the chip at 13 blocks a row, so the
// kernel is latency-bound there (≈ 9.6 µs a row a cluster); the chunked kernels have thousands of blocks in flight.
// Between 49152 and 151936 it was not measured.
constexpr int kFusedAutoMaxCluster = 4;

struct FusedArgs {
  void* grad = nullptr;
  std::int64_t g_row_stride = 0, g_col_stride = 0;
  const float* grad_loss = nullptr;  // null: 1
  std::int64_t gl_stride = 0;
  RowOut out;  // the forward's per-row outputs
  bool prefetch = false;  // every row 16-byte aligned with contiguous columns: stage the next row with cp.async
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// The cluster-wide combination of one float per block, in rank order (block_row.cu's, repeated here: that file
// keeps them in its anonymous namespace).
__device__ __forceinline__ float cluster_max(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : -detail::inf_<float>();
  return kernels::group_max(v, 32);
}
__device__ __forceinline__ float cluster_sum(float* slot, int cluster) {
  const int lane = threadIdx.x % 32;
  const float v = lane < cluster ? *cg::this_cluster().map_shared_rank(slot, lane) : 0.0f;
  return kernels::group_sum(v, 32);
}

// The row's full 16-byte vectors into this thread's slots of the stage (slot k at k·T + tid).
template <typename Tile, typename In>
__device__ __forceinline__ void stage_row(typename Tile::Vec* stage, const In* row, int n, int g, int G, int tid,
                                          int T) {
#pragma unroll
  for (int k = 0; k < Tile::K; ++k) {
    const int i0 = Tile::index(k, g, G);
    if (i0 + Tile::V <= n) cp_async16(&stage[k * T + tid], row + i0);
  }
  cp_async_commit();
}
// Registers from the stage; a partial last vector straight from global memory, positions past n as −inf.
template <typename Tile, typename In, int E>
__device__ __forceinline__ void unstage_row(float (&v)[E], const typename Tile::Vec* stage, const In* row, int n,
                                            int g, int G, int tid, int T) {
#pragma unroll
  for (int k = 0; k < Tile::K; ++k) {
    const int i0 = Tile::index(k, g, G);
    if (i0 + Tile::V <= n) {
      const typename Tile::Vec w = stage[k * T + tid];
#pragma unroll
      for (int j = 0; j < Tile::V; ++j) v[k * Tile::V + j] = kernels::to_f32(w.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < Tile::V; ++j)
        v[k * Tile::V + j] = i0 + j < n ? kernels::to_f32(row[i0 + j]) : -detail::inf_<float>();
    }
  }
}

// ≤ 64 registers, two blocks an SM. ptxas -v (CUDA 13.0, sm_90a): bf16 spills 40 bytes a thread, f32 208; one
// block an SM with up to 128 registers (no spills) measured slower, f32 3841 against 2887 µs at 4096×151936 and
// 1336 against 933 at 8192×32000 (H200, 2026-11-30, ce1a473).
template <typename In, typename Out>
__global__ void __launch_bounds__(kFusedThreads, 2) fused_kernel(const Args a, const FusedArgs f, const Totals* totals,
                                                                 int cluster) {
  using Tile = RowTile<In, kFusedElems>;
  constexpr int E = kFusedElems, V = Tile::V;
  extern __shared__ __align__(16) unsigned char stage_bytes[];
  auto* stage = reinterpret_cast<typename Tile::Vec*>(stage_bytes);
  __shared__ float red_max[32], red_sum[32], red_smooth[32];
  __shared__ float part_max, part_sum, part_smooth;  // this block's partials, read by the whole cluster
  const int rank = cluster > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int T = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int g = rank * T + tid, G = cluster * T;
  const int n = static_cast<int>(a.classes);
  const std::int64_t first = blockIdx.x / cluster, stride = gridDim.x / cluster;
  if (f.prefetch && first < a.rows) stage_row<Tile>(stage, row_ptr<In>(a, first), n, g, G, tid, T);
  for (std::int64_t row = first; row < a.rows; row += stride) {
    const In* xr = row_ptr<In>(a, row);
    const std::int64_t t = target_of(a, row);
    const RowKind kind = row_kind(a, t);
    // Every read of this row happens before the first barrier below, every store after the last one: in place,
    // no thread of the cluster reads what another has already overwritten.
    const float zt = kind == RowKind::valid ? kernels::to_f32(xr[t * a.col_stride]) : 0.0f;
    const bool smoothing = a.eps > 0 && kind == RowKind::valid;  // uniform over the cluster
    float r0 = 0;
    if (smoothing) {
      r0 = kernels::to_f32(xr[0]);
      r0 = isfinite(r0) ? r0 : 0.0f;
    }
    float v[E];
    if (f.prefetch) {
      cp_async_wait_all();
      unstage_row<Tile>(v, stage, xr, n, g, G, tid, T);
      // Each thread refills only its own slots, which it has just read.
      if (row + stride < a.rows) stage_row<Tile>(stage, row_ptr<In>(a, row + stride), n, g, G, tid, T);
    } else {
      Tile::load(v, xr, n, a.col_stride, g, G);
    }

    // (A) the max, and Σ w_c (z_c − r) for label smoothing (r = the row's first logit, as the forward).
    float m = block_max(kernels::tree_max<E>(v), red_max);
    float sm = 0;
    if (smoothing) {
      float part = 0;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        float terms[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const int i = Tile::index(k, g, G) + j;
          terms[j] = i < n ? weight_of(a, i) * (v[k * V + j] - r0) : 0.0f;
        }
        part += kernels::tree_sum<V>(terms);
      }
      sm = block_sum(part, red_smooth);
    }
    if (cluster > 1) {
      if (tid == 0) {
        part_max = m;
        part_smooth = sm;
      }
      cg::this_cluster().sync();
      m = cluster_max(&part_max, cluster);
      if (smoothing) sm = cluster_sum(&part_smooth, cluster);
    }

    // (B) e_j = exp_diff(z_j, m) in place, and R = Σ_{j≠t} e_j. Positions past n hold −inf: e = 0.
    const float shift = State::shift_for(m);
    float rest = 0;
#pragma unroll
    for (int k = 0; k < Tile::K; ++k) {
      float es[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        es[j] = exp_diff(v[k * V + j], shift);
        v[k * V + j] = es[j];
      }
      rest += kernels::tree_sum<V>(es);
    }
    // The target's owner redoes its own sum without the target's term (the same tree, a 0 in its place).
    int t_local = -1;
    if (kind == RowKind::valid) {
      const std::int64_t vi = t / V;
      if (vi % G == g) t_local = static_cast<int>((vi / G) * V + t % V);
    }
    if (t_local >= 0) {
      rest = 0;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        float es[V];
#pragma unroll
        for (int j = 0; j < V; ++j) es[j] = k * V + j == t_local ? 0.0f : v[k * V + j];
        rest += kernels::tree_sum<V>(es);
      }
    }
    float R = block_sum(rest, red_sum);
    if (cluster > 1) {
      if (tid == 0) part_sum = R;
      cg::this_cluster().sync();
      R = cluster_sum(&part_sum, cluster);
    }
    // Shared memory reuse, as block_row.cu: red_max is rewritten next row only after this row's block_sum barrier,
    // red_sum and red_smooth after the next row's block_max barrier, part_* after the next cluster barrier.

    const float et = kind == RowKind::valid ? exp_diff(zt, shift) : 0.0f;
    const float l = kind == RowKind::valid ? R + et : R;
    const State st = State::from_max_and_sum(m, l);
    const float lse = st.lse();
    const RowNormalizer<float> norm = st.normalizer();  // inv_sum: 1 / l, NaN for a row whose max is not finite

    // The loss, by one thread.
    const float wt = kind == RowKind::valid ? weight_of(a, t) : 0.0f;
    const float hard = (1 - a.eps) * wt;
    if (g == 0) {
      float ce = 0, zl = 0;
      if (kind == RowKind::bad) {
        ce = detail::nan_<float>();  // the host throws; never a silent 0
      } else if (kind == RowKind::valid) {
        float nll;
        if (isfinite(m) && isfinite(zt)) nll = zt == m ? log1pf(R) : (m - zt) + logf(l);
        else nll = lse - zt;  // inf − inf = NaN, as on the CPU
        ce = hard * nll;
        if (smoothing) {
          const double smd = totals->weight_total * (static_cast<double>(lse) - r0) - static_cast<double>(sm);
          ce += a.eps / static_cast<float>(a.classes) * static_cast<float>(smd);
        }
        if (a.s > 0) zl = a.s * lse * lse;
      }
      f.out.write(row, lse, ce, zl);
    }

    // The gradient.
    if (kind != RowKind::valid) {  // ignored: 0; a bad target: NaN
      const float fill = kind == RowKind::ignored ? 0.0f : detail::nan_<float>();
#pragma unroll
      for (int i = 0; i < E; ++i) v[i] = fill;
    } else {
      float g_ce = 1, g_z = 1;
      if (a.reduction == Reduction::none) {
        if (f.grad_loss) g_ce = g_z = f.grad_loss[row * f.gl_stride];
      } else {
        const double g1 = f.grad_loss ? static_cast<double>(f.grad_loss[0]) : 1.0;
        if (a.reduction == Reduction::sum) {
          g_ce = g_z = static_cast<float>(g1);
        } else {
          g_ce = static_cast<float>(safe_div(g1, totals->den_ce, a.nothing_is_zero));
          g_z = static_cast<float>(safe_div(g1, totals->den_z, a.nothing_is_zero));
        }
      }
      const float soft = a.eps / static_cast<float>(a.classes);
      const float W = static_cast<float>(totals->weight_total);
      const float zc = a.s > 0 ? g_z * 2 * a.s * lse : 0.0f;
      const float inv = norm.inv_sum;
      // ∂loss/∂z_j = g·((1 − ε)w_t·p_j + ε/C·(W·p_j − w_j)) + zc·p_j = e_j·A + B_j for j ≠ t.
      const float A = (g_ce * hard + g_ce * soft * W + zc) * inv;
      const float B = -g_ce * soft;
      if (smoothing && a.weights) {
#pragma unroll
        for (int k = 0; k < Tile::K; ++k)
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const int i = Tile::index(k, g, G) + j;
            v[k * V + j] = fmaf(v[k * V + j], A, i < n ? B * weight_of(a, i) : 0.0f);
          }
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) v[i] = fmaf(v[i], A, B);
      }
      if (t_local >= 0) {  // the target: p_t − 1 = −R / l, formed in f32 before rounding
        const float pt = et * inv;
        const float dt = g_ce * (hard * (-R * inv) + soft * (W * pt - wt)) + zc * pt;
#pragma unroll
        for (int i = 0; i < E; ++i)
          if (i == t_local) v[i] = dt;
      }
    }
    Out* gr = static_cast<Out*>(f.grad) + row * f.g_row_stride;
    Tile::template store<Out>(gr, v, n, f.g_col_stride, g, G);
  }
  // A block's shared memory must outlive every remote read of it.
  if (cluster > 1) cg::this_cluster().sync();
}

// The launch shape for C classes: the fewest blocks of ≤ kFusedThreads threads (a multiple of 32) that hold a row,
// or `cluster_override` blocks (tuning) when it holds one.
struct FusedShape {
  int cluster = 0, threads = 0;  // cluster 0: the row does not fit
};
FusedShape fused_shape(std::int64_t classes, int cluster_override) {
  FusedShape s;
  int c = static_cast<int>((classes + kFusedBlockCols - 1) / kFusedBlockCols);
  if (c < 1) c = 1;
  if (cluster_override >= c && cluster_override <= kFusedMaxCluster) c = cluster_override;
  if (c > kFusedMaxCluster) return s;
  const std::int64_t per_block = (classes + c - 1) / c;
  const std::int64_t threads = ((per_block + kFusedElems - 1) / kFusedElems + 31) / 32 * 32;
  s.cluster = c;
  s.threads = static_cast<int>(std::max<std::int64_t>(32, threads));
  return s;
}

FusedTuning g_tuning;

template <typename In, typename Out>
bool launch_fused(const Args& a, const FusedArgs& f, const Totals* totals, cudaStream_t s) {
  const FusedShape shape = fused_shape(a.classes, g_tuning.cluster);
  if (shape.cluster == 0) return false;
  if (a.rows == 0) return true;
  const auto kernel = fused_kernel<In, Out>;
  using Vec = typename RowTile<In, kFusedElems>::Vec;
  const std::size_t smem = f.prefetch ? sizeof(Vec) * RowTile<In, kFusedElems>::K * shape.threads : 0;
  static kernels::DeviceOnce attrs;
  attrs.run([&] {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(sizeof(Vec) * RowTile<In, kFusedElems>::K * kFusedThreads)));
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  });
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(static_cast<unsigned>(shape.threads));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(shape.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  // A persistent grid: as many clusters as are resident at once (each then stages its next row while it works on
  // the current one), or one per row when there are fewer rows.
  int resident = 0;
  if (shape.cluster == 1) {
    resident = kernels::blocks_per_sm(kernel, shape.threads, smem) * kernels::device_facts().sm_count;
  } else {
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(shape.cluster));
    if (cudaOccupancyMaxActiveClusters(&resident, kernel, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      resident = 0;
    }
  }
  if (resident <= 0) return false;  // not schedulable here: the caller takes the two-read path
  const std::int64_t clusters = std::min<std::int64_t>(a.rows, resident);
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * shape.cluster));
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a, f, totals, shape.cluster));
  return true;
}

__global__ void fill_kernel(float* p, std::int64_t n, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = value;
}

}  // namespace

void set_fused_tuning(const FusedTuning& t) { g_tuning = t; }

bool fused_supported(const TensorView& logits, const CrossEntropyOptions& options) {
  const std::int64_t limit = g_tuning.any_width ? kFusedMaxCols : kFusedBlockCols * kFusedAutoMaxCluster;
  return options.softcap == 0 && logits.shape[1] <= limit && logits.shape[1] > 0;
}

}  // namespace smk::cuda::ce

namespace smk::cuda {

void cross_entropy_forward_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                                    const TensorView& grad_logits, const TensorView& logits,
                                    const TensorView& targets, const CrossEntropyOptions& options,
                                    const TensorView& grad_loss, const TensorView& lse, const TensorView& z_loss,
                                    Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const bool per_row = options.reduction == Reduction::none;
  if (!fused_supported(logits, options) || p.rows == 0) {
    fused_two_read(op, p, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss, stream);
    return;
  }
  const Args a = make_args(logits, targets, options);
  CallWorkspace ws;
  const std::size_t off_ce = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  const std::size_t off_zl = ws.add(per_row ? 0 : sizeof(float) * p.rows);
  ws.alloc(s);
  const Totals* totals = ws.totals();
  FusedArgs f;
  f.grad = grad_logits.data;
  f.g_row_stride = grad_logits.strides[0];
  f.g_col_stride = grad_logits.strides[1];
  f.grad_loss = static_cast<const float*>(grad_loss.data);
  f.gl_stride = grad_loss.data && grad_loss.rank == 1 ? grad_loss.strides[0] : 0;
  f.out = make_row_out(options.reduction, loss, z_loss, lse, ws.at<float>(off_ce), ws.at<float>(off_zl));
  const std::size_t esize = dtype_size(logits.dtype);
  f.prefetch = g_tuning.prefetch && logits.strides[1] == 1 && reinterpret_cast<std::uintptr_t>(logits.data) % 16 == 0 &&
               (static_cast<std::size_t>(logits.strides[0]) * esize) % 16 == 0;
  const bool launched = ws.run(op, a, s, [&] {
    bool ok = false;
    const bool f32_out = grad_logits.dtype == DType::f32;
    switch (logits.dtype) {
      case DType::f16:
        ok = f32_out ? launch_fused<__half, float>(a, f, totals, s) : launch_fused<__half, __half>(a, f, totals, s);
        break;
      case DType::bf16:
        ok = f32_out ? launch_fused<__nv_bfloat16, float>(a, f, totals, s)
                     : launch_fused<__nv_bfloat16, __nv_bfloat16>(a, f, totals, s);
        break;
      default: ok = launch_fused<float, float>(a, f, totals, s); break;
    }
    if (ok) {
      SMK_CUDA_CHECK_LAUNCH("cross_entropy fused_kernel");
      if (!per_row)
        launch_reduce(a, f.out.ce_rows, f.out.zl_rows, totals, static_cast<float*>(loss.data),
                      static_cast<float*>(z_loss.data), s);
    }
    return ok;
  });
  // Not launched (no cluster shape for these rows, or none schedulable here): nothing was written but the flags and
  // totals.
  if (!launched) fused_two_read(op, p, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss, stream);
}

// The two-read path: the forward (with the LSE), then the backward from it, in place when asked. A missing upstream
// gradient becomes a buffer of ones.
void fused_two_read(const char* op, const detail::CrossEntropyProblem& p, const TensorView& loss,
                    const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                    const CrossEntropyOptions& options, const TensorView& grad_loss, const TensorView& lse,
                    const TensorView& z_loss, Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const bool per_row = options.reduction == Reduction::none;
  const std::int64_t n_gl = per_row ? p.rows : 1;
  WorkspaceLayout ws;
  const std::size_t off_lse = ws.add(lse.data ? 0 : sizeof(float) * p.rows);
  const std::size_t off_gl = ws.add(grad_loss.data ? 0 : sizeof(float) * n_gl);
  auto* base = static_cast<unsigned char*>(kernels::workspace_alloc(std::max<std::size_t>(ws.bytes, 256), s));
  try {
    const TensorView lse_v =
        lse.data ? lse : TensorView::contiguous(base + off_lse, DType::f32, logits.device, {p.rows});
    TensorView gl_v = grad_loss;
    if (!grad_loss.data) {
      auto* ones = reinterpret_cast<float*>(base + off_gl);
      fill_kernel<<<kernels::capped_grid((n_gl + 255) / 256), 256, 0, s>>>(ones, n_gl, 1.0f);
      SMK_CUDA_CHECK_LAUNCH("cross_entropy fill_kernel");
      gl_v = per_row ? TensorView::contiguous(ones, DType::f32, logits.device, {p.rows})
                     : TensorView::contiguous(ones, DType::f32, logits.device, {});
    }
    // Bad targets or weights: the forward wrote its outputs (NaN rows) and threw; the gradient is still written
    // (NaN rows), as the fused kernel does, and the backward raises the same error (its own scan sees it).
    std::exception_ptr forward_error;
    try {
      cross_entropy_forward(op, p, loss, logits, targets, options, lse_v, z_loss, stream);
    } catch (const Error&) {
      forward_error = std::current_exception();
    }
    cross_entropy_backward(op, p, grad_logits, logits, targets, gl_v, options, lse_v, stream);
    if (forward_error) std::rethrow_exception(forward_error);
  } catch (...) {
    kernels::workspace_free(base, s);
    throw;
  }
  kernels::workspace_free(base, s);
}

}  // namespace smk::cuda
