// `softmaxkit bench`: what one run measured, and its three renderings (a readable table, CSV, JSON) plus the
// headline lines that check the targets. No GPU needed; tested in tests/apps/.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_spec.hpp"

namespace smk::app::bench {

// The targets (issue 3, "Targets"), checked by the headline lines. Percentages are of the ceilings
// measured in the same run.
inline constexpr double kTargetMinTrafficBytes = 64e6;    // the bandwidth targets apply from 64 MB of traffic
inline constexpr double kTargetForwardPctCopy = 90.0;     // softmax, log_softmax: % of copy bandwidth
inline constexpr double kTargetLogsumexpPctRead = 90.0;   // logsumexp: % of read bandwidth
inline constexpr double kTargetBackwardPctCopy = 85.0;    // both backward passes: % of copy bandwidth
inline constexpr double kTargetFewRowsMicros = 8.0;       // (1, 151936) and (32, 128256): µs per call
inline constexpr double kTargetOneRowGBps = 3000.0;       // (1, 16777216): GB/s

struct RunInfo {
  std::string device_name;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::string date_utc;               // ISO 8601
  std::string cudnn = "not built";    // cuDNN's version when the anchor ran, else why it did not
  std::int64_t flush_bytes = 0;       // bytes written between repetitions to flush L2
  double target_ms = 0;               // timed GPU time aimed at per row
  int min_reps = 0, max_reps = 0;
  Ceilings ceilings;
};

struct Result {
  Op op = Op::softmax;
  DType dtype = DType::f32;
  Shape shape;
  std::string impl = "softmaxkit";  // "softmaxkit" or "cudnn"
  std::string path = "auto";        // softmaxkit: "auto" or the forced path; cudnn: its algorithm
  std::string status = "ok";        // "ok", or "unsupported" (the path or library cannot serve it)
  std::string reason;               // for a row that was not timed
  Summary micros;                   // per call, microseconds
  std::int64_t bytes = 0;           // minimum traffic (min_traffic_bytes)
  // The fixed cost of a call, without the L2 flush (NaN where not measured): `host_us` the host's time to enqueue
  // one call (K calls back to back, no synchronisation, steady_clock, divided by K); `loop_us` the same K calls
  // and one synchronisation, divided by K (what a caller in a loop sees: the larger of host and GPU time);
  // `graph_us` the K calls captured in one CUDA graph and replayed, event time divided by K (the GPU alone, the
  // launches' host cost gone). Medians of a few batches.
  double host_us = std::numeric_limits<double>::quiet_NaN();
  double loop_us = std::numeric_limits<double>::quiet_NaN();
  double graph_us = std::numeric_limits<double>::quiet_NaN();

  bool ok() const { return status == "ok"; }
  double gbps() const { return gb_per_s(bytes, micros.median); }
};

// The readable table, one line per timed row (rows not timed are left out; the JSON keeps them).
std::string table_header();
std::string table_row(const Result& r, const Ceilings& c);
// CSV with a header line; fields: op,dtype,shape,rows,cols,impl,path,median_us,p10_us,p90_us,reps,bytes,gbps,
// pct_copy,pct_read,host_us,loop_us,graph_us (the last three empty where not measured).
std::string csv_header();
std::string csv_row(const Result& r, const Ceilings& c);
// The whole run: {"schema":1, "tool", "run":{device, ceilings, method}, "results":[...]}; untimed rows carry their
// status and reason.
nlohmann::json to_json(const RunInfo& info, const std::vector<Result>& results);

// One line per (dtype, op) of softmaxkit's automatic path checking the targets above, each starting "headline ".
std::vector<std::string> headline_lines(const RunInfo& info, const std::vector<Result>& results);
// The ceilings, one line starting "headline ".
std::string ceilings_line(const Ceilings& c);

}  // namespace smk::app::bench
