// `softmaxkit bench`: times the softmax family through the public API over a named grid of shapes, beside the
// device's copy and read ceilings and cuDNN's softmax. See README.md ("Benchmarks") and docs/perf-notebook.md
// ("Benchmark method").
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace smk::app {

struct BenchOptions {
  std::vector<std::string> ops{"all"};
  std::vector<std::string> dtypes{"f32", "bf16"};
  std::vector<std::string> shapes{"all"};
  std::vector<std::string> paths{"auto"};  // "auto", "all", or kernel path names (smk::cuda::to_string)
  std::string format = "table";            // table | csv | json (to stdout)
  std::string json_file;                   // also write the JSON here
  bool no_cudnn = false;
  bool list = false;                       // print shapes, grids and paths, then exit
  int device = 0;
  double target_ms = 40.0;                 // timed GPU time aimed at per row
  int min_reps = 20;
  int max_reps = 300;
};

// Registers the `bench` subcommand and its options on `app`.
CLI::App* add_bench_subcommand(CLI::App& app, BenchOptions& options);
// Runs it: 0 when every requested row was timed or skipped as unsupported, 1 when there is no GPU, 2 on an error.
int run_bench(const BenchOptions& options);

}  // namespace smk::app
