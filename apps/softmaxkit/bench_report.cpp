// `softmaxkit bench`: table, CSV and JSON renderings of a run, and the headline lines.
#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

namespace smk::app::bench {

namespace {

std::string impl_path(const Result& r) { return r.impl == "softmaxkit" ? "smk/" + r.path : r.impl + "/" + r.path; }

double pct_read(const Result& r, const Ceilings& c) {
  // Read bandwidth is the ceiling of an op that only reads (logsumexp); for the others it is reported too, but
  // the targets use the copy ceiling.
  return percent_of(r.gbps(), c.read_gbps);
}

}  // namespace

// A fixed-cost figure, or `none` where it was not measured.
std::string fixed_cost(double us, const char* fmt_spec, const char* none) {
  return std::isnan(us) ? std::string(none) : fmt::format(fmt::runtime(fmt_spec), us);
}

std::string table_header() {
  return fmt::format("{:<21} {:<5} {:<18} {:>16} {:<26} {:>10} {:>10} {:>10} {:>9} {:>6} {:>5} {:>8} {:>8} {:>8}",
                     "op", "dtype", "shape", "rows x cols", "impl/path", "median us", "p10 us", "p90 us", "GB/s",
                     "%copy", "reps", "host us", "loop us", "graph us");
}

std::string table_row(const Result& r, const Ceilings& c) {
  return fmt::format(
      "{:<21} {:<5} {:<18} {:>16} {:<26} {:>10.2f} {:>10.2f} {:>10.2f} {:>9.1f} {:>5.1f}% {:>5} {:>8} {:>8} {:>8}",
      op_name(r.op), dtype_name(r.dtype), r.shape.name, fmt::format("{}x{}", r.shape.rows, r.shape.cols),
      impl_path(r), r.micros.median, r.micros.p10, r.micros.p90, r.gbps(), percent_of(r.gbps(), c.copy_gbps),
      r.micros.count, fixed_cost(r.host_us, "{:.2f}", "-"), fixed_cost(r.loop_us, "{:.2f}", "-"),
      fixed_cost(r.graph_us, "{:.2f}", "-"));
}

std::string csv_header() {
  return "op,dtype,shape,rows,cols,impl,path,median_us,p10_us,p90_us,reps,bytes,gbps,pct_copy,pct_read,host_us,"
         "loop_us,graph_us";
}

std::string csv_row(const Result& r, const Ceilings& c) {
  return fmt::format("{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{},{},{:.2f},{:.2f},{:.2f},{},{},{}", op_name(r.op),
                     dtype_name(r.dtype), r.shape.name, r.shape.rows, r.shape.cols, r.impl, r.path, r.micros.median,
                     r.micros.p10, r.micros.p90, r.micros.count, r.bytes, r.gbps(), percent_of(r.gbps(), c.copy_gbps),
                     pct_read(r, c), fixed_cost(r.host_us, "{:.3f}", ""), fixed_cost(r.loop_us, "{:.3f}", ""),
                     fixed_cost(r.graph_us, "{:.3f}", ""));
}

nlohmann::json to_json(const RunInfo& info, const std::vector<Result>& results) {
  using nlohmann::json;
  json run = {
      {"device", {{"name", info.device_name},
                  {"compute_capability", fmt::format("{}.{}", info.cc_major, info.cc_minor)},
                  {"sm_count", info.sm_count},
                  {"l2_bytes", info.l2_bytes}}},
      {"date_utc", info.date_utc},
      {"cudnn", info.cudnn},
      {"ceilings", {{"copy_gbps", info.ceilings.copy_gbps},
                    {"copy_bytes", info.ceilings.copy_bytes},
                    {"copy_method", "cudaMemcpyAsync device to device; bytes read + written"},
                    {"read_gbps", info.ceilings.read_gbps},
                    {"read_bytes", info.ceilings.read_bytes},
                    {"read_method", "cub::DeviceReduce::Max over f32; bytes read"}}},
      {"method", {{"timer", "CUDA events around each call, one call per repetition"},
                  {"l2_flush_bytes", info.flush_bytes},
                  {"l2_flush", "cudaMemsetAsync of a buffer larger than L2 before every repetition (untimed)"},
                  {"warmup", "one untimed call, then three timed calls that set the repetition count"},
                  {"target_ms", info.target_ms},
                  {"min_reps", info.min_reps},
                  {"max_reps", info.max_reps},
                  {"statistic", "median; p10 and p90 beside it"},
                  {"fixed_cost", "no flush: host_us = steady_clock time to enqueue K back-to-back calls / K; "
                                 "loop_us = the K calls and one synchronisation / K; graph_us = the K calls captured "
                                 "in one CUDA graph, replayed, event time / K; medians of a few batches"},
                  {"traffic", "minimum bytes: softmax/log_softmax 2n, logsumexp n, backward 3n, cross_entropy n, "
                              "cross_entropy_fwd_bwd 2n, cross_entropy_backward 2n, cross_entropy_fused 2n elements"}}},
  };
  json rows = json::array();
  for (const Result& r : results) {
    json row = {{"op", op_name(r.op)},     {"dtype", dtype_name(r.dtype)}, {"shape", r.shape.name},
                {"grid", r.shape.grid},    {"rows", r.shape.rows},         {"cols", r.shape.cols},
                {"impl", r.impl},          {"path", r.path},               {"status", r.status},
                {"bytes", r.bytes}};
    if (r.ok()) {
      row["median_us"] = r.micros.median;
      row["p10_us"] = r.micros.p10;
      row["p90_us"] = r.micros.p90;
      row["min_us"] = r.micros.min;
      row["reps"] = r.micros.count;
      row["gbps"] = r.gbps();
      row["pct_copy"] = percent_of(r.gbps(), info.ceilings.copy_gbps);
      row["pct_read"] = pct_read(r, info.ceilings);
      for (const auto& [key, us] : {std::pair<const char*, double>{"host_us", r.host_us}, {"loop_us", r.loop_us},
                                    {"graph_us", r.graph_us}})
        if (!std::isnan(us)) row[key] = us;
    } else {
      row["reason"] = r.reason;
    }
    rows.push_back(std::move(row));
  }
  return {{"schema", 1}, {"tool", "softmaxkit bench"}, {"run", std::move(run)}, {"results", std::move(rows)}};
}

std::string ceilings_line(const Ceilings& c) {
  return fmt::format("headline ceilings: copy {:.0f} GB/s (cudaMemcpy of {:.1f} GiB, read + written), "
                     "read {:.0f} GB/s (CUB max over {:.1f} GiB)",
                     c.copy_gbps, static_cast<double>(c.copy_bytes) / (1 << 30), c.read_gbps,
                     static_cast<double>(c.read_bytes) / (1 << 30));
}

std::vector<std::string> headline_lines(const RunInfo& info, const std::vector<Result>& results) {
  const Ceilings& c = info.ceilings;
  // Group softmaxkit's automatic-path rows by (dtype, op), in first-seen order.
  std::vector<std::pair<DType, Op>> keys;
  std::map<std::pair<DType, Op>, std::vector<const Result*>> groups;
  for (const Result& r : results) {
    if (r.impl != "softmaxkit" || r.path != "auto" || !r.ok()) continue;
    const auto key = std::make_pair(r.dtype, r.op);
    if (!groups.count(key)) keys.push_back(key);
    groups[key].push_back(&r);
  }
  auto verdict = [](bool met) { return met ? "met" : "MISSED"; };
  std::vector<std::string> lines;
  for (const auto& key : keys) {
    const auto& rows = groups[key];
    const Op op = key.second;
    std::string line = fmt::format("headline {:<4} {:<20}", dtype_name(key.first), op_name(op));
    // Bandwidth on every shape that moves at least 64 MB: the worst one.
    const bool lse = op == Op::logsumexp || op == Op::cross_entropy;  // read-only: against the read ceiling
    const double ceiling = lse ? c.read_gbps : c.copy_gbps;
    const double target = lse ? kTargetLogsumexpPctRead
                              : is_backward(op) || op == Op::cross_entropy_fwd_bwd || op == Op::cross_entropy_backward ||
                                        op == Op::cross_entropy_fused
                                  ? kTargetBackwardPctCopy
                                                                                    : kTargetForwardPctCopy;
    const Result* worst = nullptr;
    for (const Result* r : rows)
      if (static_cast<double>(r->bytes) >= kTargetMinTrafficBytes && (!worst || r->gbps() < worst->gbps()))
        worst = r;
    if (worst) {
      const double pct = percent_of(worst->gbps(), ceiling);
      line += fmt::format(" >=64MB worst {:.1f}% of {} ({}) [>= {:.0f}%: {}]", pct, lse ? "read" : "copy",
                          worst->shape.name, target, ceiling > 0 ? verdict(pct >= target) : "no ceiling");
    }
    // The two few-row shapes: microseconds per call.
    for (const Result* r : rows) {
      if ((r->shape.rows == 1 && r->shape.cols == 151936) || (r->shape.rows == 32 && r->shape.cols == 128256))
        line += fmt::format("; {}x{} {:.1f} us [<= {:.0f}: {}]", r->shape.rows, r->shape.cols, r->micros.median,
                            kTargetFewRowsMicros, verdict(r->micros.median <= kTargetFewRowsMicros));
    }
    // One enormous row.
    for (const Result* r : rows) {
      if (r->shape.rows == 1 && r->shape.cols == 16777216)
        line += fmt::format("; 1x16777216 {:.0f} GB/s [>= {:.0f}: {}]", r->gbps(), kTargetOneRowGBps,
                            verdict(r->gbps() >= kTargetOneRowGBps));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace smk::app::bench
