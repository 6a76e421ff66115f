// softmaxkit: the lesson's CUDA kernels, kept as teaching code and as the simplest GPU baseline.
//
// One thread owns one row (softmax) or one output element (matmul); f32, contiguous row-major, device pointers.
// They are correct but slow: a row runs sequentially in one thread. The fast kernels live in src/cuda/softmax/.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "softmaxkit/core/online_state.hpp"

namespace smk::cuda::lesson {

// exp(x) / Σ exp(x) with no shift: NaN once any score passes 88.72. Kept to demonstrate that failure.
void softmax_rows_naive(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// The max-shifted three-pass version (max; sum of shifted exponentials; normalise), with the contract's rules for
// −inf, +inf and NaN rows (softmaxkit/core/online_state.hpp).
void softmax_rows_shifted(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream,
                          EmptyRowPolicy empty_rows = EmptyRowPolicy::nan);
// The same row-per-thread walk for log-softmax ((x − m) − log l) and log-sum-exp (one f32 per row).
void log_softmax_rows(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream,
                      EmptyRowPolicy empty_rows = EmptyRowPolicy::nan);
void logsumexp_rows(float* out, const float* in, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// out[m, n] = a[m, k] · b[k, n], one thread per output element.
void matmul(float* out, const float* a, const float* b, std::int64_t m, std::int64_t k, std::int64_t n,
            cudaStream_t stream);

}  // namespace smk::cuda::lesson
