// softmaxkit (internal, host code): per-device attributes read once and then served without a lock or a CUDA call,
// for launchers that size grids and shared memory on every call. A cudaDeviceGetAttribute costs a few hundred ns of
// host time and cudaGetDeviceProperties tens of µs, against a kernel of a few µs; the answers never change for the
// life of the process. Keyed by the device ordinal, so a caller that switches devices gets that device's answers
// (the ordinal is read per call: current_device_ordinal() is cudaGetDevice, which the runtime answers from the
// thread's state without a driver round trip).
//
// Usage: `const DeviceAttrs& a = device_attrs(current_device_ordinal());` or `current_device_attrs()`.
// Thread-safe: the first caller for a device fills its entry under a mutex and publishes it with a release store;
// later callers read it after an acquire load. Ordinals above kMaxDevices − 1 are refused (smk::Error unsupported).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

struct DeviceAttrs {
  int ordinal = -1;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int max_smem_optin = 0;           // bytes a block may opt into (cudaFuncAttributeMaxDynamicSharedMemorySize)
  int smem_per_sm = 0;              // bytes of shared memory an SM has
  int reserved_smem_per_block = 0;  // bytes the system reserves per resident block
  int l2_bytes = 0;
  int max_threads_per_sm = 0;
};

inline constexpr int kMaxDevices = 64;

inline int current_device_ordinal() {
  int dev = 0;
  SMK_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

namespace detail_attrs {
struct Table {
  std::array<DeviceAttrs, kMaxDevices> attrs{};
  std::array<std::atomic<bool>, kMaxDevices> ready{};
  std::mutex fill;
};
inline Table& table() {
  static Table t;
  return t;
}
}  // namespace detail_attrs

inline const DeviceAttrs& device_attrs(int dev) {
  if (dev < 0 || dev >= kMaxDevices)
    throw_unsupported("cuda device attributes", "CUDA device ordinals outside [0, 63] are not supported");
  auto& t = detail_attrs::table();
  if (t.ready[dev].load(std::memory_order_acquire)) return t.attrs[dev];
  std::lock_guard<std::mutex> lock(t.fill);
  if (!t.ready[dev].load(std::memory_order_relaxed)) {
    DeviceAttrs a;
    a.ordinal = dev;
    auto get = [dev](int& v, cudaDeviceAttr what) { SMK_CUDA_CHECK(cudaDeviceGetAttribute(&v, what, dev)); };
    get(a.sm_count, cudaDevAttrMultiProcessorCount);
    get(a.cc_major, cudaDevAttrComputeCapabilityMajor);
    get(a.cc_minor, cudaDevAttrComputeCapabilityMinor);
    get(a.max_smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin);
    get(a.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor);
    get(a.reserved_smem_per_block, cudaDevAttrReservedSharedMemoryPerBlock);
    get(a.l2_bytes, cudaDevAttrL2CacheSize);
    get(a.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor);
    t.attrs[dev] = a;
    t.ready[dev].store(true, std::memory_order_release);
  }
  return t.attrs[dev];
}

inline const DeviceAttrs& current_device_attrs() { return device_attrs(current_device_ordinal()); }

}  // namespace smk::cuda
