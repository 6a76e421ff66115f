// Cross-entropy backward on the GPU: grad = (softmax − smoothed one-hot)·upstream + 2s·LSE·p (z-loss), times
// 1 − tanh² under soft-capping; in place over the logits allowed (grad_logits == logits). Launches:
//   1. scan (one block, forward.cu): weights checked and summed (W), targets checked, the mean's denominators;
//   2. only when the forward's LSE is not passed: stats + lse (forward.cu), one extra read of the logits;
//   3. grad (one block per (row, chunk) of 8192 logits): reads the chunk into registers, writes every gradient
//      entry, and sums p_j over the chunk's non-target entries; the block holding the target keeps its raw logit;
//   4. target (one thread per row): the target entry, whose hard part p_t − 1 is formed in f32 as −Σ_{j≠t} p_j
//      (the chunk sums in chunk order) before rounding: as p_t → 1 that keeps its digits, where p_t − 1 cancels;
//      below p_t = ½ it is p_t − 1 itself (one rounding, p_t's error scaled by p_t).
//      It overwrites what kernel 3 wrote there, from the logit kernel 3 saved (in place, the logit is gone).
//
// Traffic per element with the forward's LSE: read the logits once and write the gradient once, 8 B (f32),
// 4 B (bf16), 6 B (bf16 logits, f32 gradient); without it one more read. Floor on the H200 at the copy ceiling of
// 4.27 TB/s (ANCHORS.md; 4.8 TB/s nominal): 4096×151936 f32 (4.98 GB) 1166 µs, bf16 583 µs; 8192×32000 f32
// (2.10 GB) 491 µs, bf16 246 µs. Forward + backward as two calls reads the logits twice (3 passes of the tensor
// against the issue's bound of 2: see docs/perf-notebook.md, "Cross-entropy").
// Measured (H200, 2026-11-29, commit 128fbf5, docs/perf-notebook.md "Cross-entropy"), forward + this backward in
// place with the forward's LSE, minus the forward alone: 4096×151936 f32 ≈ 1945 µs (2.56 TB/s of the backward's
// 8 B per element, 60 % of copy), bf16 ≈ 1630 µs (1.53 TB/s, 36 %): compute-bound (about as slow in bf16 as in
// f32). The no-smoothing fast path (RowGrad::d_hard) came after that run.
// Measured again with the full-chunk fast path (grad_kernel; H200, 2026-11-30, commit ce1a473, tune_cross_entropy,
// the backward alone, in place, from the forward's LSE): 4096×151936 f32 1508 µs (3.30 TB/s, 77 % of copy), bf16
// 1092 µs (2.28 TB/s, 53 %); 8192×32000 f32 859 µs (57 %), bf16 805 µs (31 %). bf16 no longer costs what f32
// does at 151936 (1092 against 1508 µs), but it is still far from its floor: at 32000 a quarter of the chunks are
// partial and take the general loop, and each block waits on a chain of small loads (target, LSE, upstream
// gradient, the mean's denominators) before its first store.
// Session 8 (ce6, 3a7313b): target_kernel's p_t − 1 below ½ (one thread a row, no change in traffic; not timed
// separately: linear cross-entropy's runs, which use this path, ran at 1.085–1.138× torch: docs/bench/ce6-s8-2026-11-30.md).
#include <cuda_runtime_api.h>

#include "cuda/cross_entropy/common.cuh"
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "cuda/cross_entropy/linear_launch.cuh"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/launch.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cuda::ce {

namespace {

using kernels::block_sum;
using kernels::RowTile;

struct GradArgs {
  void* grad = nullptr;
  std::int64_t row_stride = 0, col_stride = 0;
  const float* lse = nullptr;
  std::int64_t lse_stride = 0;
  const float* grad_loss = nullptr;
  std::int64_t gl_stride = 0;
  float* rest = nullptr;  // per (row, chunk): Σ p_j over the chunk's non-target entries
  float* xt = nullptr;    // per row: the raw target logit, saved before it is overwritten
};

// The row's upstream scales of the cross-entropy and z-loss parts (the CPU's ce_scale / z_scale).
struct Scales {
  float ce, z;
};
__device__ __forceinline__ Scales scales_of(const Args& a, const GradArgs& b, const Totals* totals,
                                            std::int64_t row) {
  if (a.reduction == Reduction::none) {
    const float g = b.grad_loss[row * b.gl_stride];
    return {g, g};
  }
  const double g = b.grad_loss[0];
  if (a.reduction == Reduction::sum) return {static_cast<float>(g), static_cast<float>(g)};
  return {static_cast<float>(safe_div(g, totals->den_ce, a.nothing_is_zero)),
          static_cast<float>(safe_div(g, totals->den_z, a.nothing_is_zero))};
}

// Everything of one row's gradient but the element.
struct RowGrad {
  RowNormalizer<float> norm;  // p = norm.softmax(z): exp(z − LSE), NaN for a row whose LSE is not finite
  float g_ce, hard, soft, W, zc;

  __device__ __forceinline__ static RowGrad make(const Args& a, const GradArgs& b, const Totals* totals,
                                                 std::int64_t row, std::int64_t t) {
    RowGrad r;
    const float lse = b.lse[row * b.lse_stride];
    r.norm = State::from_lse(lse).normalizer();
    const Scales sc = scales_of(a, b, totals, row);
    r.g_ce = sc.ce;
    r.hard = (1 - a.eps) * weight_of(a, t);
    r.soft = a.eps / static_cast<float>(a.classes);
    r.W = static_cast<float>(totals->weight_total);
    r.zc = a.s > 0 ? sc.z * 2 * a.s * lse : 0.0f;
    return r;
  }
  // ∂loss/∂z_j for a non-target j (hard_term = p_j) or the target (hard_term = p_t − 1 = −Σ_{j≠t} p_j).
  __device__ __forceinline__ float d(float p, float hard_term, float w) const {
    float v = g_ce * (hard * hard_term + soft * (W * p - w));
    if (zc != 0) v += zc * p;
    return v;
  }
  // The same without label smoothing (soft = 0; hard·t + 0 is hard·t exactly, so the value is d()'s), which spares
  // every element its class weight's load.
  __device__ __forceinline__ float d_hard(float hard_term, float p) const {
    float v = g_ce * (hard * hard_term);
    if (zc != 0) v += zc * p;
    return v;
  }
};

template <typename In, typename Out>
__global__ void __launch_bounds__(kThreads, kMinBlocks) grad_kernel(const Args a, const GradArgs b, const Totals* totals) {
  using Tile = RowTile<In, kElems>;
  __shared__ float red_rest[32];
  const int g = static_cast<int>(threadIdx.x);
  const std::int64_t total = a.rows * a.chunks;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    const std::int64_t row = idx / a.chunks, c = idx - row * a.chunks;
    const std::int64_t t = target_of(a, row);
    const RowKind kind = row_kind(a, t);
    const std::int64_t first = c * kChunk;
    const int len = static_cast<int>(a.classes - first < kChunk ? a.classes - first : kChunk);
    Out* gr = static_cast<Out*>(b.grad) + row * b.row_stride + first * b.col_stride;
    float v[kElems];
    if (kind != RowKind::valid) {  // ignored: 0; a bad target: NaN (the host throws)
      const float fill = kind == RowKind::ignored ? 0.0f : detail::nan_<float>();
#pragma unroll
      for (int i = 0; i < kElems; ++i) v[i] = fill;
      Tile::template store<Out>(gr, v, len, b.col_stride, g, kThreads);
      continue;
    }
    // The chunk's loads first: RowGrad::make waits on its own small loads (a double division needs them), and the
    // chunk should be in flight meanwhile.
    Tile::load(v, row_ptr<In>(a, row) + first * a.col_stride, len, a.col_stride, g, kThreads);
    const RowGrad rg = RowGrad::make(a, b, totals, row, t);
    const std::int64_t lt = t - first;
    // Σ p_j over the chunk's non-target entries: pairwise within a vector, then vector by vector (a depth of
    // log2 V + K additions, then the block's 8 and the chunks' in order).
    float rest = 0;
    if (rg.soft == 0 && rg.zc == 0 && a.cap == 0 && len == kChunk && (lt < 0 || lt >= len)) {
      // The common case (block-uniform): no smoothing, z-loss or soft-cap, a full chunk without the target. Each
      // element is p = exp_diff(z, shift)·inv_sum (the gradient is an output: exp_diff's bound, as RowGrad's path)
      // times one scale g·(1 − ε)·w_t, with no bounds, target or option tests per element. The general loop below
      // spent ~40 instructions an element on those and ran as slow in bf16 as in f32 (1.63 ms for a 4096×151936
      // bf16 gradient whose floor is 0.58 ms, 2026-11-29). The value is d_hard's: g·(hard·p) = (g·hard)·p up to
      // one rounding, inside the gate's 6u·|d|.
      const float scale = rg.g_ce * rg.hard;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        float ps[Tile::V];
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) {
          float& x = v[k * Tile::V + j];
          ps[j] = rg.norm.softmax(x);
          x = ps[j] * scale;
        }
        rest += kernels::tree_sum<Tile::V>(ps);
      }
      rest = block_sum(rest, red_rest);
      if (g == 0) b.rest[idx] = rest;
      __syncthreads();  // as below: red_rest is read by every warp before the next chunk rewrites it
      Tile::template store<Out>(gr, v, len, b.col_stride, g, kThreads);
      continue;
    }
#pragma unroll
    for (int k = 0; k < Tile::K; ++k) {
      float others[Tile::V];
#pragma unroll
      for (int j = 0; j < Tile::V; ++j) {
        const int i = Tile::index(k, g, kThreads) + j;
        others[j] = 0.0f;
        if (i >= len) continue;
        float& x = v[k * Tile::V + j];
        if (i == lt) b.xt[row] = x;  // the whole chunk is in registers before anything is stored
        float th = 0;
        const float z = a.cap > 0 ? softcap(x, a.cap, th) : x;
        const float p = rg.norm.softmax(z);
        if (i != lt) others[j] = p;
        float dz = rg.soft != 0 ? rg.d(p, p, weight_of(a, first + i)) : rg.d_hard(p, p);
        if (a.cap > 0) dz *= 1 - th * th;
        x = dz;
      }
      rest += kernels::tree_sum<Tile::V>(others);
    }
    rest = block_sum(rest, red_rest);
    if (g == 0) b.rest[idx] = rest;
    __syncthreads();  // every warp has read red_rest before the next chunk's block_sum rewrites it
    Tile::template store<Out>(gr, v, len, b.col_stride, g, kThreads);
  }
}

template <typename Out>
__global__ void __launch_bounds__(kRowThreads) target_kernel(const Args a, const GradArgs b, const Totals* totals) {
  for (std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t t = target_of(a, row);
    if (row_kind(a, t) != RowKind::valid) continue;
    const RowGrad rg = RowGrad::make(a, b, totals, row, t);
    float rest = 0;
    for (std::int64_t c = 0; c < a.chunks; ++c) rest += b.rest[row * a.chunks + c];
    float th = 0;
    const float x = b.xt[row];
    const float z = a.cap > 0 ? softcap(x, a.cap, th) : x;
    const float p = rg.norm.softmax(z);
    // −Σ_{j≠t} p_j from p_t ≥ ½ on (it keeps its digits as p_t → 1); below ½, p_t − 1 itself (p_t's error scaled by
    // p_t < ½), where the chunk sums carry every p_j's error (as fused.cu; ce6, session 8). Since ce9 (session 9) in
    // double, with the upstream scale exact (the mean's g₁ / Σ w_t is not an f32), rounded once to f32 (a 16-bit
    // gradient then rounds once more, from that f32, as before): f32's fl(fl(p_t − 1)·fl(g)) rounded three times
    // (ce6's comparison with torch: ~2 ulps under the mean, torch ~1.6).
    const double pm1 = p < 0.5f ? static_cast<double>(p) - 1.0 : -static_cast<double>(rest);
    double gd = rg.g_ce;  // none: the row's f32 upstream gradient; sum: g₁
    if (a.reduction == Reduction::mean)
      gd = safe_div(static_cast<double>(b.grad_loss[0]), totals->den_ce, a.nothing_is_zero);
    const double pd = p;
    double dz = gd * (static_cast<double>(rg.hard) * pm1 +
                      static_cast<double>(rg.soft) * (static_cast<double>(rg.W) * pd - weight_of(a, t)));
    if (rg.zc != 0) dz += static_cast<double>(rg.zc) * pd;
    if (a.cap > 0) dz *= 1 - static_cast<double>(th) * th;
    static_cast<Out*>(b.grad)[row * b.row_stride + t * b.col_stride] = kernels::from_f32<Out>(static_cast<float>(dz));
  }
}

template <typename In, typename Out>
void launch_grad(const Args& a, const GradArgs& b, const Totals* totals, cudaStream_t s) {
  const std::int64_t total = a.rows * a.chunks;
  if (total == 0) return;
  grad_kernel<In, Out><<<kernels::capped_grid(total), kThreads, 0, s>>>(a, b, totals);
  SMK_CUDA_CHECK_LAUNCH("cross_entropy grad_kernel");
  target_kernel<Out><<<kernels::capped_grid((a.rows + kRowThreads - 1) / kRowThreads), kRowThreads, 0, s>>>(a, b,
                                                                                                          totals);
  SMK_CUDA_CHECK_LAUNCH("cross_entropy target_kernel");
}

}  // namespace

// Linear cross-entropy's chunks (linear_launch.cuh): f32 logits from the chunk's product, the gradient in the
// products' input dtype (two more instantiations of the grad kernel: float → half, float → bfloat16).
void launch_grad_f32_logits(const Args& a, DType out_dtype, void* grad, std::int64_t grad_row_stride,
                            const float* lse, std::int64_t lse_stride, const float* grad_loss, std::int64_t gl_stride,
                            float* rest, float* xt, const Totals* totals, cudaStream_t s) {
  GradArgs b;
  b.grad = grad;
  b.row_stride = grad_row_stride;
  b.col_stride = 1;
  b.lse = lse;
  b.lse_stride = lse_stride;
  b.grad_loss = grad_loss;
  b.gl_stride = gl_stride;
  b.rest = rest;
  b.xt = xt;
  switch (out_dtype) {
    case DType::f16: launch_grad<float, __half>(a, b, totals, s); break;
    case DType::bf16: launch_grad<float, __nv_bfloat16>(a, b, totals, s); break;
    default: launch_grad<float, float>(a, b, totals, s); break;
  }
}

}  // namespace smk::cuda::ce

namespace smk::cuda {

void cross_entropy_backward(const char* op, const detail::CrossEntropyProblem& p, const TensorView& grad_logits,
                            const TensorView& logits, const TensorView& targets, const TensorView& grad_loss,
                            const CrossEntropyOptions& options, const TensorView& lse, Stream stream) {
  using namespace ce;
  DeviceGuard guard(logits.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const Args a = make_args(logits, targets, options);
  const std::int64_t parts = p.rows * a.chunks;
  const bool have_lse = lse.data != nullptr;
  CallWorkspace ws;
  const std::size_t off_rest = ws.add(sizeof(float) * parts);
  const std::size_t off_xt = ws.add(sizeof(float) * p.rows);
  const std::size_t off_states = ws.add(have_lse ? 0 : sizeof(State) * parts);
  const std::size_t off_lse = ws.add(have_lse ? 0 : sizeof(float) * p.rows);
  ws.alloc(s);
  const Totals* totals = ws.totals();
  GradArgs b;
  b.grad = grad_logits.data;
  b.row_stride = grad_logits.strides[0];
  b.col_stride = grad_logits.strides[1];
  b.grad_loss = static_cast<const float*>(grad_loss.data);
  b.gl_stride = grad_loss.rank == 1 ? grad_loss.strides[0] : 0;
  b.rest = ws.at<float>(off_rest);
  b.xt = ws.at<float>(off_xt);
  if (have_lse) {
    b.lse = static_cast<const float*>(lse.data);
    b.lse_stride = lse.strides[0];
  } else {
    b.lse = ws.at<float>(off_lse);
    b.lse_stride = 1;
  }
  ws.run(op, a, s, [&] {
    if (!have_lse) {
      auto* states = ws.at<State>(off_states);
      launch_stats(a, logits.dtype, false, true, states, nullptr, s);
      launch_lse(a, states, ws.at<float>(off_lse), s);
    }
    const bool f32_out = grad_logits.dtype == DType::f32;
    switch (logits.dtype) {
      case DType::f16:
        if (f32_out) launch_grad<__half, float>(a, b, totals, s);
        else launch_grad<__half, __half>(a, b, totals, s);
        break;
      case DType::bf16:
        if (f32_out) launch_grad<__nv_bfloat16, float>(a, b, totals, s);
        else launch_grad<__nv_bfloat16, __nv_bfloat16>(a, b, totals, s);
        break;
      default: launch_grad<float, float>(a, b, totals, s); break;
    }
    return true;
  });
}

}  // namespace smk::cuda
