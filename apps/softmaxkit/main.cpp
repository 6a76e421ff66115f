// softmaxkit: the command-line tool.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "bench.hpp"
#include "demo.hpp"
#include "softmaxkit/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"softmaxkit: numerically stable softmax-family operations for CPUs and NVIDIA GPUs"};
  app.require_subcommand(1);

  smk::app::DemoOptions demo_options;
  auto* demo = app.add_subcommand("demo", "Walk through the lesson and the article, every value computed by the library");
  demo->add_flag("--cpu", demo_options.force_cpu, "Run on the CPU backend even when a GPU is present");

  smk::app::BenchOptions bench_options;
  auto* bench = smk::app::add_bench_subcommand(app, bench_options);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*demo) return smk::app::run_demo(demo_options);
    if (*bench) return smk::app::run_bench(bench_options);
  } catch (const smk::Error& e) {
    std::fprintf(stderr, "softmaxkit: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "softmaxkit: unexpected error: %s\n", e.what());
    return 2;
  }
  return 0;
}
