// softmaxkit, CPU-only build: the device queries answer "no CUDA" instead of failing to link.
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/device.hpp"

namespace smk {

bool cuda_built() noexcept { return false; }
int cuda_device_count() noexcept { return 0; }
std::string cuda_unavailable_reason() { return "softmaxkit was built without its CUDA backend (no nvcc found)"; }
DeviceInfo cuda_device_info(int) {
  throw_unsupported("cuda_device_info", "softmaxkit was built without its CUDA backend");
}

}  // namespace smk
