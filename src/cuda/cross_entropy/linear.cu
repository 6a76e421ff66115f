// Linear cross-entropy on the GPU: row chunks through cuBLAS, three products and no fourth
// (include/softmaxkit/linear_cross_entropy.hpp). Per chunk of c rows:
//   1. X_c = H_c·Wᵀ (+ b): cublasGemmEx, inputs in the dtype, CUBLAS_COMPUTE_32F, an f32 output (the bias is
//      broadcast into X_c first and the product adds onto it with beta = 1);
//   2. the cross-entropy forward on X_c (forward.cu's stats and rows kernels), the mean's denominators from one scan
//      of every target before the first chunk (launch_scan), so the chunk's G is final when it is formed;
//   3. G_c = ∂loss/∂X_c · grad_loss formed in f32 by backward.cu's kernels and written once in the dtype;
//   4. dH_c = G_c·W (written once); 5. dW += G_cᵀ·H_c (beta = 1 after the first chunk, dW's dtype between chunks);
//   6. db += G_cᵀ·1 into an f32 vector (a product with a column of ones), rounded to the dtype at the end.
// Steps 1–3 run on pieces of at most `logit_rows` rows of the chunk (options.logit_rows; one piece by default), so
// the f32 logits buffer can be smaller than the chunk while steps 4–6 keep the chunk's width.
//
// Traffic and floor, the issue's row (N = 8192, d = 4096, V = 151936, bf16, c = 512: 16 chunks) on the H200:
//   flops: 3 products of 2·N·d·V = 10.2 TFLOP, 30.6 TFLOP: 38.7 ms at ~790 TFLOP/s (ANCHORS.md) — the floor;
//   bytes beyond the products' own operands: X_c written (f32) and read twice (forward, gradient), G_c written and
//   read by two products: per element of the N×V logits 4 + 8 + 2 + 4 = 18 B, 22.4 GB, 5.2 ms at 4.27 TB/s; and
//   dW read and written by every chunk after the first (2·V·d·2 B per chunk: 37 GB, 8.7 ms if nothing overlapped
//   it; it streams in the dW product's epilogue, under that product's math). So 38.7 ms of math plus up to
//   ~5–14 ms of memory that does not overlap with it; torch's matmul + F.cross_entropy is the same 3 products
//   plus ~4–5 passes over 2.49 GB of bf16 logits.
// Measured (H200, 2026-11-30, commit 1b3dd63, docs/perf-notebook.md "linear cross-entropy ... first run"): the
// issue's row at the default c = 512 in 55.95 ms (1.16× torch's matmul + F.cross_entropy, 48.20 ms; 69 % of the
// flops floor's rate), 467 MB of workspace (7.6 % of torch's 6.16 GB); c = 1024: 51.77 ms, 933 MB.
// Session 8 (ce6, H200 runs of b2405b6 and 3a7313b, docs/bench/ce6-s8-2026-11-30.md): the default is now c = 1024
// with logits formed 256 rows at a time (the same 467 MB; the rule in linear_dispatch.cpp): 53.69 / 50.64 ms,
// 1.114× / 1.085× torch's time in the two runs (c = 512: 54.64 ms, 1.133×); 4096×2048×32000 one chunk of 4096 with
// logits 1024 rows at a time: 3.37 / 3.13 ms, 1.233× / 1.138× (the old 2688: 1.313×). Pieces of 128 logits rows and
// fewer are slower (1280 / 128: 58.97 ms).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "cuda/cross_entropy/common.cuh"
#include "cuda/cross_entropy/linear_cuda.hpp"
#include "cuda/cross_entropy/linear_launch.cuh"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/launch.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cuda {

namespace {

using ce::Args;
using ce::Flags;
using ce::State;
using ce::Totals;
using ce::WorkspaceLayout;

void cublas_check(cublasStatus_t st, const char* op, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::cuda_error,
              std::string(op) + ": " + what + " failed: " + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) + ")");
}

// One cuBLAS handle per device and host thread, created on first use and kept for the thread's life (destroying
// it at thread exit could run after the CUDA context is gone). Each holds cuBLAS's own default workspace.
cublasHandle_t handle_for(const char* op, int device) {
  thread_local std::vector<cublasHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(static_cast<std::size_t>(device) + 1, nullptr);
  if (!handles[device]) {
    cublasHandle_t h = nullptr;
    cublas_check(cublasCreate(&h), op, "cublasCreate");
    // Exact f32 products for f32 inputs: no TF32 (the default math mode; said explicitly so a changed default
    // cannot silently lower the accuracy).
    cublas_check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), op, "cublasSetMathMode");
    handles[device] = h;
  }
  return handles[device];
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

int as_int(const char* op, const char* what, std::int64_t v) {
  if (v > INT_MAX) throw_unsupported(op, std::string(what) + " = " + std::to_string(v) + " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(v);
}

// C (column-major, m×n) = op(A)·op(B) + beta·C with f32 accumulation; alpha = 1.
void gemm(const char* op, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m,
          std::int64_t n, std::int64_t k, const void* A, cudaDataType_t at, std::int64_t lda, const void* B,
          cudaDataType_t bt, std::int64_t ldb, float beta, void* C, cudaDataType_t ct, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const float alpha = 1.0f;
  cublas_check(cublasGemmEx(h, ta, tb, as_int(op, "m", m), as_int(op, "n", n), as_int(op, "k", k), &alpha, A, at,
                            as_int(op, "lda", lda), B, bt, as_int(op, "ldb", ldb), &beta, C, ct,
                            as_int(op, "ldc", ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               op, "cublasGemmEx");
}

// The leading dimension cuBLAS sees for a row-major matrix with contiguous rows (any value ≥ the row length works
// for a single row).
std::int64_t ld_of(const TensorView& v) {
  const std::int64_t cols = std::max<std::int64_t>(v.shape[1], 1);
  return v.shape[0] > 1 ? v.strides[0] : std::max(v.strides[0], cols);
}

template <typename T>
__global__ void fill_kernel(T* p, std::int64_t n, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = kernels::from_f32<T>(value);
}
// X[i, j] = b[j] for every row of the chunk (the product then adds H·Wᵀ onto it).
template <typename T>
__global__ void bias_rows_kernel(float* x, std::int64_t rows, std::int64_t cols, const T* bias, std::int64_t stride) {
  const std::int64_t total = rows * cols;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    x[i] = kernels::to_f32(bias[(i % cols) * stride]);
}
template <typename T>
__global__ void round_kernel(T* out, std::int64_t stride, const float* in, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i * stride] = kernels::from_f32<T>(in[i]);
}

constexpr int kFillThreads = 256;
unsigned fill_grid(std::int64_t n) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((n + kFillThreads - 1) / kFillThreads, 1, 4096));
}

// A view header for the kernels' Args (make_args reads only data, shape and strides).
TensorView matrix_view(void* data, std::int64_t rows, std::int64_t cols, const Device& dev) {
  TensorView v;
  v.data = data;
  v.dtype = DType::f32;
  v.device = dev;
  v.rank = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.strides[0] = cols;
  v.strides[1] = 1;
  return v;
}
TensorView rows_of(const TensorView& targets, std::int64_t r0, std::int64_t rows) {
  TensorView t = targets;
  t.data = static_cast<unsigned char*>(targets.data) + r0 * targets.strides[0] * static_cast<std::int64_t>(dtype_size(targets.dtype));
  t.shape[0] = rows;
  return t;
}

}  // namespace

void linear_cross_entropy(const char* op, const detail::LinearCrossEntropyProblem& p, const TensorView& loss,
                          const TensorView& lse, const TensorView& grad_hidden, const TensorView& grad_weight,
                          const TensorView& grad_bias, const TensorView& hidden, const TensorView& weight,
                          const TensorView& targets, const TensorView& grad_loss,
                          const LinearCrossEntropyOptions& options, Stream stream) {
  DeviceGuard guard(hidden.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  // c: rows of G per chunk (the products' width); cx ≤ c: rows of f32 logits formed at once within it.
  const std::int64_t n = p.rows, d = p.dim, V = p.vocab, c = p.chunk_rows, cx = p.logit_rows;
  const CrossEntropyOptions& o = options.ce;
  const DType dt = hidden.dtype;
  const std::size_t es = dtype_size(dt);
  const bool per_row = o.reduction == Reduction::none;
  const bool has_bias = options.bias.data != nullptr;
  const Args full = ce::make_args(matrix_view(nullptr, n, V, hidden.device), targets, o);
  const std::int64_t parts = cx * full.chunks;

  // 1. The targets and class weights, checked on the device before anything is written (finish() throws).
  auto* flags = static_cast<Flags*>(kernels::workspace_alloc(sizeof(Flags), s));
  WorkspaceLayout ws;
  const std::size_t off_totals = ws.add(sizeof(Totals));
  const std::size_t off_ones = ws.add(sizeof(float) * static_cast<std::size_t>(per_row ? std::max<std::int64_t>(n, 1) : 1));
  const std::size_t off_ce = ws.add(per_row ? 0 : sizeof(float) * n);
  const std::size_t off_zl = ws.add(per_row ? 0 : sizeof(float) * n);
  const std::size_t off_lse = ws.add(lse.data ? 0 : sizeof(float) * cx);
  const std::size_t off_states = ws.add(sizeof(State) * parts);
  const std::size_t off_smooth = ws.add(o.label_smoothing > 0 ? sizeof(float) * parts : 0);
  const std::size_t off_rest = ws.add(sizeof(float) * parts);
  const std::size_t off_xt = ws.add(sizeof(float) * cx);
  const std::size_t off_db = ws.add(has_bias ? sizeof(float) * V : 0);
  const std::size_t off_ones_in = ws.add(has_bias ? es * c : 0);
  const std::size_t off_x = ws.add(sizeof(float) * cx * V);
  const std::size_t off_g = ws.add(es * c * V);
  unsigned char* base = nullptr;
  try {
    base = static_cast<unsigned char*>(kernels::workspace_alloc(ws.bytes, s));
  } catch (...) {
    kernels::workspace_free(flags, s);
    throw;
  }
  auto* totals = reinterpret_cast<Totals*>(base + off_totals);
  try {
    SMK_CUDA_CHECK(cudaMemsetAsync(flags, 0xFF, sizeof(Flags), s));
    ce::launch_scan(full, totals, flags, s);
    ce::finish(op, full, flags, s);  // frees `flags`; waits for the scan; throws on a bad target or weight
  } catch (...) {
    kernels::workspace_free(base, s);
    throw;
  }

  try {
    cublasHandle_t h = handle_for(op, hidden.device.index);
    cublas_check(cublasSetStream(h, s), op, "cublasSetStream");
    const cudaDataType_t ct = cuda_type(dt);
    float* ones = reinterpret_cast<float*>(base + off_ones);
    const float* gl = static_cast<const float*>(grad_loss.data);
    std::int64_t gl_stride = per_row && gl ? grad_loss.strides[0] : 0;
    if (!gl) {  // the upstream gradient 1
      const std::int64_t m = per_row ? std::max<std::int64_t>(n, 1) : 1;
      fill_kernel<float><<<fill_grid(m), kFillThreads, 0, s>>>(ones, m, 1.0f);
      SMK_CUDA_CHECK_LAUNCH("linear_cross_entropy fill_kernel");
      gl = ones;
      gl_stride = per_row ? 1 : 0;
    }
    float* ce_rows = per_row ? nullptr : reinterpret_cast<float*>(base + off_ce);
    float* zl_rows = per_row ? nullptr : reinterpret_cast<float*>(base + off_zl);
    auto* states = reinterpret_cast<State*>(base + off_states);
    float* smooth = o.label_smoothing > 0 ? reinterpret_cast<float*>(base + off_smooth) : nullptr;
    auto* rest = reinterpret_cast<float*>(base + off_rest);
    auto* xt = reinterpret_cast<float*>(base + off_xt);
    auto* db = reinterpret_cast<float*>(base + off_db);
    auto* x = reinterpret_cast<float*>(base + off_x);
    void* g = base + off_g;
    if (has_bias) {
      SMK_CUDA_CHECK(cudaMemsetAsync(db, 0, sizeof(float) * V, s));
      kernels::with_in_type(dt, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        fill_kernel<T><<<fill_grid(c), kFillThreads, 0, s>>>(reinterpret_cast<T*>(base + off_ones_in), c, 1.0f);
      });
      SMK_CUDA_CHECK_LAUNCH("linear_cross_entropy fill_kernel");
    }
    if (n == 0) {  // no rows: dW = 0 (and db = 0 below)
      SMK_CUDA_CHECK(cudaMemset2DAsync(grad_weight.data, ld_of(grad_weight) * es, 0, d * es, V, s));
    }

    const auto* H = static_cast<const unsigned char*>(hidden.data);
    auto* dH = static_cast<unsigned char*>(grad_hidden.data);
    const std::int64_t ldh = ld_of(hidden), ldw = ld_of(weight), ldgh = ld_of(grad_hidden), ldgw = ld_of(grad_weight);
    for (std::int64_t r0 = 0; r0 < n; r0 += c) {
      const std::int64_t rows = std::min(c, n - r0);
      const void* Hc = H + r0 * ldh * static_cast<std::int64_t>(es);
      // Steps 1–3 for the chunk's rows q0.. in pieces of at most cx rows (one piece unless logit_rows < chunk_rows).
      for (std::int64_t q0 = r0; q0 < r0 + rows; q0 += cx) {
        const std::int64_t xr = std::min(cx, r0 + rows - q0);
        const void* Hq = H + q0 * ldh * static_cast<std::int64_t>(es);
        // 1. X (row-major [xr, V]) = H_q·Wᵀ + b; column-major: Xᵀ (V × xr) = W (d × V as stored)ᵀ · H_qᵀ.
        float beta = 0.0f;
        if (has_bias) {
          kernels::with_in_type(dt, [&](auto* tag) {
            using T = std::remove_pointer_t<decltype(tag)>;
            bias_rows_kernel<T><<<fill_grid(xr * V), kFillThreads, 0, s>>>(
                x, xr, V, static_cast<const T*>(options.bias.data), options.bias.strides[0]);
          });
          SMK_CUDA_CHECK_LAUNCH("linear_cross_entropy bias_rows_kernel");
          beta = 1.0f;
        }
        gemm(op, h, CUBLAS_OP_T, CUBLAS_OP_N, V, xr, d, weight.data, ct, ldw, Hq, ct, ldh, beta, x, CUDA_R_32F, V);

        // 2. The forward on those rows: per-row loss (none) or the rows' parts of the sum / mean, and the LSE.
        const Args a = ce::make_args(matrix_view(x, xr, V, hidden.device), rows_of(targets, q0, xr), o);
        float* lse_q =
            lse.data ? static_cast<float*>(lse.data) + q0 * lse.strides[0] : reinterpret_cast<float*>(base + off_lse);
        const std::int64_t lse_stride = lse.data ? lse.strides[0] : 1;
        ce::launch_stats(a, DType::f32, true, false, states, smooth, s);
        ce::launch_rows(a, DType::f32, states, smooth, totals,
                        per_row ? static_cast<float*>(loss.data) + q0 * loss.strides[0] : nullptr,
                        per_row ? loss.strides[0] : 0, lse_q, lse_stride, per_row ? nullptr : ce_rows + q0,
                        per_row ? nullptr : zl_rows + q0, s);

        // 3. Their rows of G_c in the dtype ([rows, V], contiguous), from f32 logits and the LSE.
        ce::launch_grad_f32_logits(a, dt, static_cast<unsigned char*>(g) + (q0 - r0) * V * static_cast<std::int64_t>(es),
                                   V, lse_q, lse_stride, per_row ? gl + q0 * gl_stride : gl, gl_stride, rest, xt,
                                   totals, s);
      }

      // 4. dH_c = G_c·W; column-major: dH_cᵀ (d × rows) = W (d × V) · G_cᵀ (V × rows).
      gemm(op, h, CUBLAS_OP_N, CUBLAS_OP_N, d, rows, V, weight.data, ct, ldw, g, ct, V, 0.0f,
           dH + r0 * ldgh * static_cast<std::int64_t>(es), ct, ldgh);
      // 5. dW += G_cᵀ·H_c; column-major: dWᵀ (d × V) += H_cᵀ (d × rows) · G_c (rows × V as Gᵀ's transpose).
      gemm(op, h, CUBLAS_OP_N, CUBLAS_OP_T, d, V, rows, Hc, ct, ldh, g, ct, V, r0 == 0 ? 0.0f : 1.0f,
           grad_weight.data, ct, ldgw);
      // 6. db += G_cᵀ·1 in f32; column-major: db (V × 1) += G_cᵀ (V × rows) · 1 (rows × 1).
      if (has_bias)
        gemm(op, h, CUBLAS_OP_N, CUBLAS_OP_N, V, 1, rows, g, ct, V, base + off_ones_in, ct, rows, 1.0f, db,
             CUDA_R_32F, V);
    }

    if (!per_row) ce::launch_reduce(full, ce_rows, zl_rows, totals, static_cast<float*>(loss.data), nullptr, s);
    if (has_bias) {
      kernels::with_in_type(dt, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        round_kernel<T><<<fill_grid(V), kFillThreads, 0, s>>>(static_cast<T*>(grad_bias.data), grad_bias.strides[0],
                                                             db, V);
      });
      SMK_CUDA_CHECK_LAUNCH("linear_cross_entropy round_kernel");
    }
  } catch (...) {
    kernels::workspace_free(base, s);
    throw;
  }
  kernels::workspace_free(base, s);
}

}  // namespace smk::cuda
