// `softmaxkit bench`, the part that needs no GPU: which ops, dtypes and shapes a run covers, the minimum traffic
// each op must move (the figure every GB/s in the report is computed from), and the statistics of a set of timings.
// Everything here is tested on the CPU (tests/apps/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "softmaxkit/core/dtype.hpp"

namespace smk::app::bench {

enum class Op {
  softmax,
  log_softmax,
  logsumexp,
  softmax_backward,
  log_softmax_backward,
  // Cross-entropy (issue 5): the forward with mean reduction and the per-row LSE, and the forward followed by the
  // backward in place over the logits (the gradient of a training step), targets uniform over the classes.
  cross_entropy,
  cross_entropy_fwd_bwd,
  cross_entropy_backward,  // the backward alone, in place, with the forward's LSE (what fwd_bwd adds to the forward)
  cross_entropy_fused,     // cross_entropy_forward_backward in place: one call, the logits read once
};

inline constexpr Op kAllOps[] = {Op::softmax, Op::log_softmax, Op::logsumexp, Op::softmax_backward,
                                 Op::log_softmax_backward};
// Not in "all" (the softmax family); `--op ce` selects both, or name each.
inline constexpr Op kCrossEntropyOps[] = {Op::cross_entropy, Op::cross_entropy_fwd_bwd, Op::cross_entropy_backward,
                                          Op::cross_entropy_fused};

const char* op_name(Op op) noexcept;
bool is_backward(Op op) noexcept;
bool is_cross_entropy(Op op) noexcept;

// Minimum bytes an op must move through device memory for a rows × cols tensor of `dtype` (../shared/ANCHORS.md):
//   softmax, log_softmax: read x, write y            -> 2n elements
//   logsumexp:            read x (the per-row output is negligible and not counted) -> n
//   the backward passes:  read y and dy, write dx    -> 3n
//   cross_entropy:        read the logits            -> n
//   cross_entropy_fwd_bwd: read the logits once, write the gradient over them -> 2n (the bound; two calls
//                         read the logits twice, 3n, so this row shows what a fused step would gain)
//   cross_entropy_backward: read the logits, write the gradient over them -> 2n
//   cross_entropy_fused:  read the logits once, write the gradient over them -> 2n (one call)
std::int64_t min_traffic_elements(Op op, std::int64_t rows, std::int64_t cols) noexcept;
std::int64_t min_traffic_bytes(Op op, DType dtype, std::int64_t rows, std::int64_t cols) noexcept;

// Achieved bandwidth, in GB/s (10^9 bytes per second), of `bytes` moved in `microseconds`.
double gb_per_s(std::int64_t bytes, double microseconds) noexcept;
// `achieved` as a percentage of `ceiling` (same unit); 0 when the ceiling is unknown (≤ 0).
double percent_of(double achieved, double ceiling) noexcept;

struct Shape {
  std::string name;  // e.g. "qwen-decode-1"
  std::string grid;  // the named grid it belongs to: "issue", "sweep", "decode", "odd" or "custom"
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::string why;  // what the shape teaches, for `--list`
};

// Every built-in shape, grid by grid (issue first), in a stable order.
const std::vector<Shape>& builtin_shapes();
// The names of the built-in grids, in order.
std::vector<std::string> grid_names();

// Resolves `--shape` items: a grid name ("issue", "sweep", "decode", "odd", or "all" for every built-in shape), a
// built-in shape's name, or an explicit "ROWSxCOLS" (both ≥ 1). Duplicates (same rows and cols) are kept once,
// the first occurrence wins. Throws smk::Error(invalid_argument) naming the bad item.
std::vector<Shape> resolve_shapes(const std::vector<std::string>& items);

// Parses "f32", "f16", "bf16" ("all" = f32, bf16, f16) and op names ("all" = every op); throws naming the item.
std::vector<DType> resolve_dtypes(const std::vector<std::string>& items);
std::vector<Op> resolve_ops(const std::vector<std::string>& items);

// Median, 10th and 90th percentile (linear interpolation between order statistics, as numpy's default), minimum
// and mean of a set of samples. Throws smk::Error(invalid_argument) on an empty set.
struct Summary {
  double median = 0, p10 = 0, p90 = 0, min = 0, mean = 0;
  int count = 0;
};
Summary summarize(std::vector<double> samples);
// The q-quantile (q in [0, 1]) of sorted samples, linear interpolation.
double quantile_sorted(const std::vector<double>& sorted, double q);

// The device's ceilings, measured in the same run.
struct Ceilings {
  double copy_gbps = 0;          // device-to-device cudaMemcpy, bytes read + written
  std::int64_t copy_bytes = 0;   // size of the buffer copied
  double read_gbps = 0;          // a device-wide reduction (CUB), bytes read
  std::int64_t read_bytes = 0;   // size of the buffer reduced
};

// How many timed repetitions a row gets, from one estimated call time: enough to fill `target_ms` of GPU time,
// at least `min_reps` and at most `max_reps`, but never more than `slow_cap_ms` of total time for a very slow call
// (then at least 3 repetitions).
int choose_reps(double estimate_ms, double target_ms, int min_reps, int max_reps, double slow_cap_ms = 2000.0);

}  // namespace smk::app::bench
