// softmaxkit: which CUDA devices this build can use, without including any CUDA header.
#pragma once

#include <cstddef>
#include <string>

namespace smk {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                        // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;          // compute capability
  int sm_count = 0;                        // streaming multiprocessors
  std::size_t global_memory_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t shared_memory_per_block_optin = 0;  // what a kernel may opt into (227 KB on Hopper)
  std::size_t shared_memory_per_sm = 0;
};

// True when softmaxkit was compiled with its CUDA backend.
bool cuda_built() noexcept;
// Number of usable CUDA devices: 0 in a CPU-only build, without a driver, or without a GPU. Never throws.
int cuda_device_count() noexcept;
// Why cuda_device_count() is 0, in one line a person can act on; empty when a device is available.
std::string cuda_unavailable_reason();
// Properties of device `ordinal`. Throws smk::Error when it does not exist.
DeviceInfo cuda_device_info(int ordinal);

}  // namespace smk
