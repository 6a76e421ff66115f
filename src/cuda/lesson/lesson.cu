// softmaxkit: the lesson's kernels. One thread per row (softmax, log-softmax, logsumexp) or per output element
// (matmul).
//
// Traffic, softmax and log-softmax: 3 reads + 1 write of each element (max pass, sum pass, normalise pass reading
// the input again): 16 bytes per f32 element against the floor of 8. logsumexp: 2 reads, against the floor of 1.
// Worse, one thread walks each row sequentially, so a row of n elements takes n dependent steps and uncoalesced
// loads: a 1 × 151936 row uses 1 of the H200's ~270k threads. These kernels exist to be understood and measured
// against, not used for speed; docs/perf-notebook.md records what they reach.
#include "softmaxkit/cuda/lesson.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::lesson {

namespace {

constexpr int kThreads = 128;

__global__ void softmax_rows_naive_kernel(float* out, const float* in, std::int64_t rows, std::int64_t cols) {
  const std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  const float* x = in + row * cols;
  float* y = out + row * cols;
  float sum = 0.0f;
  for (std::int64_t i = 0; i < cols; ++i) {
    const float e = expf(x[i]);
    sum += e;
    y[i] = e;
  }
  for (std::int64_t i = 0; i < cols; ++i) y[i] /= sum;
}

enum class RowOp { softmax, log_softmax, logsumexp };

template <RowOp kOp>
__global__ void rows_shifted_kernel(float* out, const float* in, std::int64_t rows, std::int64_t cols,
                                    EmptyRowPolicy empty_rows) {
  const std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  const float* x = in + row * cols;
  float max = -INFINITY;  // NaN-propagating, unlike the lesson's MathF.Max
  for (std::int64_t i = 0; i < cols; ++i) max = nan_max(max, x[i]);
  const float shift = OnlineSoftmaxState<float>::shift_for(max);
  float sum = 0.0f;
  for (std::int64_t i = 0; i < cols; ++i) sum += exp_diff(x[i], shift);
  const auto state = OnlineSoftmaxState<float>::from_max_and_sum(max, sum);
  if constexpr (kOp == RowOp::logsumexp) {
    out[row] = state.lse();
  } else {
    const RowNormalizer<float> norm = state.normalizer(empty_rows);
    float* y = out + row * cols;
    for (std::int64_t i = 0; i < cols; ++i) y[i] = kOp == RowOp::softmax ? norm.softmax(x[i]) : norm.log_softmax(x[i]);
  }
}

__global__ void matmul_kernel(float* out, const float* a, const float* b, std::int64_t m, std::int64_t k,
                              std::int64_t n) {
  const std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= m * n) return;
  const std::int64_t i = idx / n, j = idx % n;
  float sum = 0.0f;
  for (std::int64_t t = 0; t < k; ++t) sum += a[i * k + t] * b[t * n + j];
  out[idx] = sum;
}

unsigned blocks_for(std::int64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace

void softmax_rows_naive(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  softmax_rows_naive_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(out, in, rows, cols);
  SMK_CUDA_CHECK_LAUNCH("softmax_rows_naive_kernel");
}

void softmax_rows_shifted(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream,
                          EmptyRowPolicy empty_rows) {
  if (rows <= 0 || cols <= 0) return;
  rows_shifted_kernel<RowOp::softmax><<<blocks_for(rows), kThreads, 0, stream>>>(out, in, rows, cols, empty_rows);
  SMK_CUDA_CHECK_LAUNCH("rows_shifted_kernel<softmax>");
}

void log_softmax_rows(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream,
                      EmptyRowPolicy empty_rows) {
  if (rows <= 0 || cols <= 0) return;
  rows_shifted_kernel<RowOp::log_softmax><<<blocks_for(rows), kThreads, 0, stream>>>(out, in, rows, cols, empty_rows);
  SMK_CUDA_CHECK_LAUNCH("rows_shifted_kernel<log_softmax>");
}

void logsumexp_rows(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows <= 0) return;
  rows_shifted_kernel<RowOp::logsumexp><<<blocks_for(rows), kThreads, 0, stream>>>(out, in, rows, cols,
                                                                                    EmptyRowPolicy::nan);
  SMK_CUDA_CHECK_LAUNCH("rows_shifted_kernel<logsumexp>");
}

void matmul(float* out, const float* a, const float* b, std::int64_t m, std::int64_t k, std::int64_t n,
            cudaStream_t stream) {
  if (m <= 0 || n <= 0) return;
  matmul_kernel<<<blocks_for(m * n), kThreads, 0, stream>>>(out, a, b, m, k, n);
  SMK_CUDA_CHECK_LAUNCH("matmul_kernel");
}

}  // namespace smk::cuda::lesson
