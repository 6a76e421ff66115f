// softmaxkit (internal): makes a tensor's device current for the duration of a call, then restores the caller's.
#pragma once

#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    SMK_CUDA_CHECK(cudaGetDevice(&previous_));
    if (ordinal != previous_) SMK_CUDA_CHECK(cudaSetDevice(ordinal));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
    int current = previous_;
    if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
};

}  // namespace smk::cuda
