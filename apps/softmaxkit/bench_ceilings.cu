// `softmaxkit bench`: copy and read ceilings. The read ceiling uses CUB's device-wide reduction (a well-kept
// library kernel that reads each byte once), since no runtime call only reads memory.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime_api.h>

#include "bench_ceilings.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::app::bench {

Ceilings measure_ceilings(EventTimer& timer, std::int64_t bytes, int reps) {
  const auto s = static_cast<cudaStream_t>(timer.stream());
  const auto count = static_cast<std::size_t>(bytes) / sizeof(float);
  smk::cuda::DeviceBuffer<float> src(count), dst(count), result(1);
  // Not zeros: 0x3f bytes are the float 0.7470... (a finite, ordinary value).
  src.fill_bytes(0x3f);
  dst.fill_bytes(0x3f);

  Ceilings c;
  const std::size_t size = count * sizeof(float);
  auto copy = [&] {
    SMK_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), size, cudaMemcpyDeviceToDevice, s));
  };
  copy();
  c.copy_bytes = static_cast<std::int64_t>(size);
  c.copy_gbps = gb_per_s(2 * c.copy_bytes, summarize(timer.time(copy, reps)).median);

  std::size_t temp_bytes = 0;
  SMK_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, temp_bytes, src.data(), result.data(), count, s));
  smk::cuda::DeviceBuffer<unsigned char> temp(temp_bytes);
  auto read = [&] {
    SMK_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), temp_bytes, src.data(), result.data(), count, s));
  };
  read();
  c.read_bytes = static_cast<std::int64_t>(size);
  c.read_gbps = gb_per_s(c.read_bytes, summarize(timer.time(read, reps)).median);
  sync_and_check(timer.stream(), "ceiling measurements");
  return c;
}

}  // namespace smk::app::bench
