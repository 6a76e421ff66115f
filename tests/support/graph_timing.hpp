// Test support for the GPU suites' timing tests (run only when their environment variable asks): the GPU time of one
// call, measured as a CUDA graph of `k` back-to-back calls replayed `reps` times (event time / k each), so that the
// host's launch cost is out of the number and a call's fixed cost on the device is in it.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "softmaxkit/cuda/runtime.hpp"

namespace smk::gpu_test {

// `call` enqueues one call on `s` (it must be capturable). One warm-up replay, then `reps` timed replays: µs a call.
inline std::vector<double> graph_replay_us(const std::function<void()>& call, cudaStream_t s, int k, int reps = 7) {
  cudaGraph_t g = nullptr;
  SMK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < k; ++i) call();
  SMK_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  SMK_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaEvent_t a, b;
  SMK_CUDA_CHECK(cudaEventCreate(&a));
  SMK_CUDA_CHECK(cudaEventCreate(&b));
  SMK_CUDA_CHECK(cudaGraphLaunch(exec, s));
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    SMK_CUDA_CHECK(cudaEventRecord(a, s));
    SMK_CUDA_CHECK(cudaGraphLaunch(exec, s));
    SMK_CUDA_CHECK(cudaEventRecord(b, s));
    SMK_CUDA_CHECK(cudaStreamSynchronize(s));
    float ms = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1000.0 * ms / k);
  }
  SMK_CUDA_CHECK(cudaEventDestroy(a));
  SMK_CUDA_CHECK(cudaEventDestroy(b));
  SMK_CUDA_CHECK(cudaGraphExecDestroy(exec));
  SMK_CUDA_CHECK(cudaGraphDestroy(g));
  return us;
}

}  // namespace smk::gpu_test
