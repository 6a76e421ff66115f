// Test support: skip a GPU test, with the reason, when no CUDA device is usable; the small mode of the GPU suites.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>

#include "softmaxkit/device.hpp"

#define SMK_REQUIRE_GPU()                                                        \
  do {                                                                           \
    if (::smk::cuda_device_count() == 0)                                         \
      GTEST_SKIP() << "no GPU: " << ::smk::cuda_unavailable_reason();            \
  } while (0)

namespace smk::gpu_test {
// SMK_GPU_TEST_SMALL=1 (scripts/device.sh sets it under compute-sanitizer): each GPU suite keeps the cases that
// exercise every code path at small sizes, and leaves out the long ones.
inline bool small_mode() {
  const char* v = std::getenv("SMK_GPU_TEST_SMALL");
  return v != nullptr && v[0] == '1';
}
}  // namespace smk::gpu_test
