// softmaxkit CUDA runtime layer: checked calls and device queries (host code; no kernels here).
#include "softmaxkit/cuda/runtime.hpp"

#include <string>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/device.hpp"

namespace smk::cuda {

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  // A failed call also records itself as the thread's "last error". Clear it (it is not sticky), or the next
  // launch check would blame an innocent kernel for this call's failure.
  cudaGetLastError();
  throw Error(ErrorCode::cuda_error, std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                                         cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

void set_device(int ordinal) {
  const int count = cuda_device_count();
  if (ordinal < 0 || ordinal >= count)
    throw_invalid_argument("cuda::set_device", "ordinal",
                           std::to_string(ordinal) + " is not a device; " + std::to_string(count) + " available");
  SMK_CUDA_CHECK(cudaSetDevice(ordinal));
}

}  // namespace smk::cuda

namespace smk {

bool cuda_built() noexcept { return true; }

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error so later calls are not confused by it
    return 0;
  }
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
  }
  return count == 0 ? "no CUDA device is present" : "";
}

DeviceInfo cuda_device_info(int ordinal) {
  const int count = cuda_device_count();
  if (ordinal < 0 || ordinal >= count)
    throw_invalid_argument("cuda_device_info", "ordinal",
                           std::to_string(ordinal) + " is not a device; " + std::to_string(count) + " available");
  cudaDeviceProp p{};
  SMK_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.global_memory_bytes = p.totalGlobalMem;
  info.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  info.shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
  info.shared_memory_per_sm = p.sharedMemPerMultiprocessor;
  return info;
}

}  // namespace smk
