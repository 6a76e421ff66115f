// `softmaxkit bench`: the device's two memory ceilings, measured in the same run as the ops they judge.
#pragma once

#include "bench_spec.hpp"
#include "bench_timer.hpp"

namespace smk::app::bench {

// Copy: a device-to-device cudaMemcpyAsync of `bytes` (bytes read + written count). Read: cub::DeviceReduce::Max
// over the same `bytes` of f32 (bytes read count). Each the median of `reps` calls timed by `timer`.
Ceilings measure_ceilings(EventTimer& timer, std::int64_t bytes, int reps);

}  // namespace smk::app::bench
