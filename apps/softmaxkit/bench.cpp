// `softmaxkit bench`: options, the plan, and where the results go (stdout as a table, CSV or JSON; a JSON file).
#include "bench.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_report.hpp"
#include "bench_spec.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"
#include "softmaxkit/device.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "bench_cudnn.hpp"
#include "bench_gpu.hpp"
#endif

namespace smk::app {

using namespace bench;  // NOLINT: this file is the bench's front end

namespace {

using PathList = std::vector<std::pair<std::string, smk::cuda::SoftmaxPath>>;

// "auto" is the dispatcher's choice. "all" is "auto" plus every kernel path this build has for the layout the bench
// times (contiguous rows reduced over the last dimension), so not strided_inner, which exists for reductions over a
// non-last dimension, and not the lesson's row-per-thread kernels, which are teaching code (one thread per row: a
// single 16M-element row takes seconds). Name either explicitly to time it.
PathList resolve_paths(const std::vector<std::string>& items) {
  using smk::cuda::SoftmaxPath;
  PathList out;
  auto add = [&](std::string label, SoftmaxPath p) {
    for (const auto& e : out)
      if (e.second == p) return;
    out.emplace_back(std::move(label), p);
  };
  const auto built = smk::cuda::softmax_paths();
  for (const std::string& item : items) {
    if (item == "auto" || item == "automatic") {
      add("auto", SoftmaxPath::automatic);
    } else if (item == "all") {
      add("auto", SoftmaxPath::automatic);
      for (SoftmaxPath p : built)
        if (p != SoftmaxPath::automatic && p != SoftmaxPath::lesson_row_per_thread && p != SoftmaxPath::strided_inner)
          add(smk::cuda::to_string(p), p);
    } else {
      bool found = false;
      for (SoftmaxPath p : built) {
        if (item == smk::cuda::to_string(p)) {
          add(p == SoftmaxPath::automatic ? "auto" : item, p);
          found = true;
        }
      }
      if (!found) {
        std::string names;
        for (SoftmaxPath p : built)
          if (p != SoftmaxPath::automatic) names += std::string(", ") + smk::cuda::to_string(p);
        throw_invalid_argument("bench", "--path",
                               "'" + item + "' is not a kernel path of this build (auto, all" + names + ")");
      }
    }
  }
  return out;
}

[[maybe_unused]] std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void print_list(const PathList& all_paths) {
  std::string grid;
  for (const Shape& s : builtin_shapes()) {
    if (s.grid != grid) {
      grid = s.grid;
      fmt::print("grid '{}':\n", grid);
    }
    fmt::print("  {:<20} {:>9} x {:<9} {}\n", s.name, s.rows, s.cols, s.why);
  }
  fmt::print("kernel paths (--path):");
  for (const auto& p : all_paths) fmt::print(" {}", p.first);
  fmt::print("\ncuDNN anchor: {}\n",
#if SOFTMAXKIT_HAS_CUDA
             cudnn_built() ? "built" : "not built"
#else
             "not built (no CUDA)"
#endif
  );
}

[[maybe_unused]] void write_json_file(const std::string& file, const RunInfo& info,
                                     const std::vector<Result>& results) {
  if (file.empty()) return;
  std::ofstream f(file);
  if (!f) throw_invalid_argument("bench", "--json", "cannot open '" + file + "' for writing");
  f << to_json(info, results).dump(1) << '\n';
}

}  // namespace

CLI::App* add_bench_subcommand(CLI::App& app, BenchOptions& o) {
  auto* b = app.add_subcommand(
      "bench", "Time the softmax family on the GPU over a grid of shapes, beside the device's copy and read "
               "ceilings and cuDNN's softmax");
  b->add_option("--op", o.ops, "softmax, log_softmax, logsumexp, softmax_backward, log_softmax_backward or all (the softmax family); "
                "cross_entropy, cross_entropy_fwd_bwd, cross_entropy_backward, cross_entropy_fused or ce (the four)")
      ->delimiter(',');
  b->add_option("--dtype", o.dtypes, "f32, bf16, f16 or all (default: f32,bf16)")->delimiter(',');
  b->add_option("--shape", o.shapes, "grids (all, issue, decode, odd, sweep), shape names (see --list) or ROWSxCOLS")
      ->delimiter(',');
  b->add_option("--path", o.paths, "kernel paths: auto (the dispatcher's choice), all, or names (see --list)")
      ->delimiter(',');
  b->add_option("--format", o.format, "what stdout gets: table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  b->add_option("--json", o.json_file, "also write every row, with the run's device and method, as JSON here");
  b->add_flag("--no-cudnn", o.no_cudnn, "leave out the cuDNN anchor");
  b->add_flag("--list", o.list, "print the built-in shapes, grids and kernel paths, then exit");
  b->add_option("--device", o.device, "CUDA device ordinal");
  b->add_option("--target-ms", o.target_ms, "timed GPU time aimed at per row (default 40)");
  b->add_option("--min-reps", o.min_reps, "fewest timed repetitions per row (default 20)");
  b->add_option("--max-reps", o.max_reps, "most timed repetitions per row (default 300)");
  return b;
}

int run_bench(const BenchOptions& o) {
  // Resolve everything first, so a typo fails before any GPU work.
  const std::vector<Op> ops = resolve_ops(o.ops);
  const std::vector<DType> dtypes = resolve_dtypes(o.dtypes);
  const std::vector<Shape> shapes = resolve_shapes(o.shapes);
  const PathList paths = resolve_paths(o.paths);
  if (o.min_reps < 1 || o.max_reps < o.min_reps)
    throw_invalid_argument("bench", "--min-reps", "need 1 <= --min-reps <= --max-reps");
  if (!(o.target_ms > 0)) throw_invalid_argument("bench", "--target-ms", "must be positive");
  if (o.list) {
    PathList every;
    for (smk::cuda::SoftmaxPath p : smk::cuda::softmax_paths())
      every.emplace_back(p == smk::cuda::SoftmaxPath::automatic ? "auto" : smk::cuda::to_string(p), p);
    print_list(every);
    return 0;
  }
  if (!cuda_built()) {
    std::fprintf(stderr, "softmaxkit bench: this build has no CUDA backend; the bench times GPU kernels\n");
    return 1;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "softmaxkit bench: no GPU: %s\n", cuda_unavailable_reason().c_str());
    return 1;
  }
#if SOFTMAXKIT_HAS_CUDA
  GpuPlan plan;
  plan.ops = ops;
  plan.dtypes = dtypes;
  plan.shapes = shapes;
  plan.paths = paths;
  plan.cudnn = !o.no_cudnn;
  plan.device = o.device;
  plan.target_ms = o.target_ms;
  plan.min_reps = o.min_reps;
  plan.max_reps = o.max_reps;

  RunInfo info;
  info.date_utc = utc_now();
  std::vector<Result> seen;  // kept here too, so a failed run still writes what it measured
  int unsupported = 0, errors = 0;
  const bool table = o.format == "table", csv = o.format == "csv";
  GpuSink sink;
  sink.started = [&](const RunInfo& i) {
    if (table) {
      fmt::print("softmaxkit bench on {} (sm_{}{}, {} SMs, L2 {:.0f} MB), {}\n", i.device_name, i.cc_major,
                 i.cc_minor, i.sm_count, static_cast<double>(i.l2_bytes) / 1e6, i.date_utc);
      fmt::print("method: CUDA events around each call, L2 flushed before each ({:.0f} MB written), median of "
                 "{}..{} repetitions (~{:.0f} ms each row); GB/s of the minimum traffic\n",
                 static_cast<double>(i.flush_bytes) / 1e6, i.min_reps, i.max_reps, i.target_ms);
      fmt::print("{}\ncuDNN anchor: {}\n\n{}\n", ceilings_line(i.ceilings), i.cudnn, table_header());
    } else if (csv) {
      fmt::print("{}\n", csv_header());
    }
    std::fflush(stdout);
  };
  sink.measured = [&](const Result& r) {
    if (r.ok()) {
      if (table) fmt::print("{}\n", table_row(r, info.ceilings));
      if (csv) fmt::print("{}\n", csv_row(r, info.ceilings));
      std::fflush(stdout);
    } else if (r.status == "unsupported") {
      ++unsupported;
    } else {
      ++errors;
      std::fprintf(stderr, "softmaxkit bench: %s %s %s %s/%s: %s\n", op_name(r.op), dtype_name(r.dtype),
                   r.shape.name.c_str(), r.impl.c_str(), r.path.c_str(), r.reason.c_str());
    }
    seen.push_back(r);
  };
  try {
    run_gpu_bench(plan, info, sink);
  } catch (...) {
    write_json_file(o.json_file, info, seen);
    throw;
  }
  write_json_file(o.json_file, info, seen);
  if (o.format == "json") fmt::print("{}\n", to_json(info, seen).dump(1));
  std::FILE* summary = table ? stdout : stderr;
  fmt::print(summary, "\n{} rows timed, {} not served (unsupported: listed with the reason in the JSON), {} errors\n",
             seen.size() - static_cast<std::size_t>(unsupported + errors), unsupported, errors);
  fmt::print(summary, "{}\n", ceilings_line(info.ceilings));
  for (const std::string& line : headline_lines(info, seen)) fmt::print(summary, "{}\n", line);
  return errors == 0 ? 0 : 2;
#else
  return 1;
#endif
}

}  // namespace smk::app
