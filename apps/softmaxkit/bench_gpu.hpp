// `softmaxkit bench`: the GPU run itself: buffers, the ceilings, one timed row per (shape, dtype, op, path) and the
// cuDNN anchor. CUDA builds only; no CUDA types in this header.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench_report.hpp"
#include "bench_spec.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"

namespace smk::app::bench {

struct GpuPlan {
  std::vector<Op> ops;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<std::pair<std::string, smk::cuda::SoftmaxPath>> paths;  // (label, path); "auto" = automatic
  bool cudnn = true;
  int device = 0;
  double target_ms = 40.0;
  int min_reps = 20, max_reps = 300;
};

struct GpuSink {
  std::function<void(const RunInfo&)> started;    // after the device and ceilings are known
  std::function<void(const Result&)> measured;    // after each row (timed or not)
};

// Fills `info` (device, ceilings, cuDNN, method) and returns every row, in the order measured. Rows that a path or
// cuDNN cannot serve come back with status "unsupported"; a library error other than that comes back as "error".
// A CUDA error that leaves the context usable fails its row ("error"); a sticky one throws smk::Error(cuda_error).
std::vector<Result> run_gpu_bench(const GpuPlan& plan, RunInfo& info, const GpuSink& sink);

}  // namespace smk::app::bench
