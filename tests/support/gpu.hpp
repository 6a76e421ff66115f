// Test support: skip a GPU test, with the reason, when no CUDA device is usable.
#pragma once

#include <gtest/gtest.h>

#include "softmaxkit/device.hpp"

#define SMK_REQUIRE_GPU()                                                        \
  do {                                                                           \
    if (::smk::cuda_device_count() == 0)                                         \
      GTEST_SKIP() << "no GPU: " << ::smk::cuda_unavailable_reason();            \
  } while (0)
