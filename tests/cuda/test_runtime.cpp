// The CUDA runtime layer: device description, checked calls whose errors name the call, RAII buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/device.hpp"
#include "support/gpu.hpp"

namespace {

TEST(CudaRuntime, ReportsWhyNoDeviceOrDescribesIt) {
  EXPECT_TRUE(smk::cuda_built());
  if (smk::cuda_device_count() == 0) {
    EXPECT_FALSE(smk::cuda_unavailable_reason().empty());
    EXPECT_THROW(smk::cuda_device_info(0), smk::Error);
    GTEST_SKIP() << "no GPU: " << smk::cuda_unavailable_reason();
  }
  const smk::DeviceInfo info = smk::cuda_device_info(0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GE(info.cc_major, 7);
  EXPECT_TRUE(smk::cuda_unavailable_reason().empty());
  EXPECT_THROW(smk::cuda_device_info(smk::cuda_device_count()), smk::Error);
}

TEST(CudaRuntime, FailedCallNamesTheCall) {
  SMK_REQUIRE_GPU();
  try {
    void* p = nullptr;
    SMK_CUDA_CHECK(cudaMalloc(&p, ~std::size_t{0} / 2));  // no device has 2^63 bytes
    FAIL() << "allocation of 2^63 bytes succeeded";
  } catch (const smk::Error& e) {
    EXPECT_EQ(e.code(), smk::ErrorCode::cuda_error);
    EXPECT_NE(std::string(e.what()).find("cudaMalloc(&p"), std::string::npos) << e.what();
  }
  EXPECT_THROW(smk::cuda::set_device(1 << 20), smk::Error);
}

TEST(CudaRuntime, DeviceBufferRoundTrip) {
  SMK_REQUIRE_GPU();
  const std::vector<float> host = {1.5f, -2.0f, 3.25f};
  auto buffer = smk::cuda::DeviceBuffer<float>::from_host(host);
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(buffer.to_host(), host);
  buffer.fill_bytes(0xFF);
  for (float v : buffer.to_host()) EXPECT_TRUE(std::isnan(v));
  smk::cuda::DeviceBuffer<float> moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.size(), 3u);
}

}  // namespace
