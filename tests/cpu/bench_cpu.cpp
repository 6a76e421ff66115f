// The CPU backend's speed, with Google Benchmark: the softmax family, cross-entropy and attention through the
// public API on host memory (the CPU float path the dispatcher takes there). Not a test: nothing here asserts a time
// (speed goals live in benchmarks, never in timed tests). Build target bench_cpu (when Debian's libbenchmark-dev is
// found); run e.g. `build/default/tests/bench_cpu --benchmark_filter=softmax`.
//
// Traffic is counted as `softmaxkit bench` counts it on the GPU (docs/perf-notebook.md, "Benchmark method"): the
// minimum bytes an op must move, in the input's dtype — softmax and log-softmax 2n elements, logsumexp n (its
// per-row output ignored), the backward passes 3n; cross-entropy forward n, forward + backward 2n; attention Q, K, V
// and O once. Google Benchmark reports them as bytes_per_second. The CPU path is one thread, scalar, built for its
// error bounds (docs/semantics.md), not for speed: these numbers are its baseline.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "softmaxkit/attention.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/softmax.hpp"

namespace {

using smk::DType;
using smk::TensorView;

// Values N(0, 2²) as the GPU bench draws them, stored as T (float or smk::bfloat16_t).
template <typename T>
std::vector<T> normal_values(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, float>) x = d(gen);
    else x = smk::to_bfloat16(d(gen));
  }
  return v;
}

enum class Op { softmax, log_softmax, logsumexp, softmax_backward, log_softmax_backward };

template <typename T>
void softmax_family(benchmark::State& state, Op op) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::int64_t n = rows * cols;
  auto x = normal_values<T>(n, 1);
  auto dy = normal_values<T>(n, 2);
  std::vector<T> y(static_cast<std::size_t>(n)), dx(static_cast<std::size_t>(n));
  std::vector<float> lse(static_cast<std::size_t>(rows));
  const TensorView in = TensorView::of(x.data(), {rows, cols});
  const TensorView out = TensorView::of(y.data(), {rows, cols});
  const bool log = op == Op::log_softmax || op == Op::log_softmax_backward;
  if (op == Op::softmax_backward || op == Op::log_softmax_backward) {
    log ? smk::log_softmax(out, in) : smk::softmax(out, in);  // y is a real forward output
  }
  for (auto _ : state) {
    switch (op) {
      case Op::softmax: smk::softmax(out, in); break;
      case Op::log_softmax: smk::log_softmax(out, in); break;
      case Op::logsumexp: smk::logsumexp(TensorView::of(lse.data(), {rows}), in); break;
      case Op::softmax_backward:
        smk::softmax_backward(TensorView::of(dx.data(), {rows, cols}), out, TensorView::of(dy.data(), {rows, cols}));
        break;
      case Op::log_softmax_backward:
        smk::log_softmax_backward(TensorView::of(dx.data(), {rows, cols}), out,
                                  TensorView::of(dy.data(), {rows, cols}));
        break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(dx.data());
    benchmark::DoNotOptimize(lse.data());
    benchmark::ClobberMemory();
  }
  const std::int64_t passes = op == Op::logsumexp ? 1 : (op == Op::softmax || op == Op::log_softmax) ? 2 : 3;
  state.SetBytesProcessed(state.iterations() * passes * n * static_cast<std::int64_t>(sizeof(T)));
  state.SetItemsProcessed(state.iterations() * n);
}

template <typename T>
void cross_entropy(benchmark::State& state, bool backward) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const std::int64_t n = rows * cols;
  auto logits = normal_values<T>(n, 3);
  std::vector<T> grad(static_cast<std::size_t>(n));
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  std::mt19937 gen(4);
  for (auto& t : targets) t = static_cast<std::int32_t>(gen() % static_cast<std::uint32_t>(cols));
  float loss = 0.0f;
  const TensorView lv = TensorView::of(logits.data(), {rows, cols});
  const TensorView tv = TensorView::of(targets.data(), {rows});
  const TensorView loss_v = TensorView::of(&loss, {});
  for (auto _ : state) {
    if (backward) {
      smk::cross_entropy_forward_backward(loss_v, TensorView::of(grad.data(), {rows, cols}), lv, tv);
    } else {
      smk::cross_entropy(loss_v, lv, tv);
    }
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(grad.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (backward ? 2 : 1) * n * static_cast<std::int64_t>(sizeof(T)));
  state.SetItemsProcessed(state.iterations() * n);
}

// attention_forward on (B, S, H, D) with S queries and S keys; Q, K, V read once and O written once.
template <typename T>
void attention(benchmark::State& state, bool causal) {
  const std::int64_t b = 1, s = state.range(0), h = state.range(1), d = state.range(2);
  const std::int64_t n = b * s * h * d;
  auto q = normal_values<T>(n, 5), k = normal_values<T>(n, 6), v = normal_values<T>(n, 7);
  std::vector<T> o(static_cast<std::size_t>(n));
  std::vector<float> lse(static_cast<std::size_t>(b * h * s));
  smk::AttentionOptions opt;
  opt.causal = causal;
  for (auto _ : state) {
    smk::attention_forward(TensorView::of(o.data(), {b, s, h, d}), TensorView::of(lse.data(), {b, h, s}),
                           TensorView::of(q.data(), {b, s, h, d}), TensorView::of(k.data(), {b, s, h, d}),
                           TensorView::of(v.data(), {b, s, h, d}), opt);
    benchmark::DoNotOptimize(o.data());
    benchmark::ClobberMemory();
  }
  const double flops = 4.0 * static_cast<double>(b * h * s * s * d) * (causal ? 0.5 : 1.0);
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(state.iterations() * 4 * n * static_cast<std::int64_t>(sizeof(T)));
}

// Shapes: decode rows of a vocabulary, a batch of them, and the short / medium rows of the GPU grid, scaled down so
// one repetition stays in milliseconds on one core.
constexpr std::pair<std::int64_t, std::int64_t> kSoftmaxShapes[] = {{1, 151936}, {32, 32000}, {256, 1024}, {4096, 128},
                                                                     {16384, 32}};

template <typename T>
void register_softmax_family(const char* dtype) {
  const std::pair<const char*, Op> ops[] = {{"softmax", Op::softmax},
                                            {"log_softmax", Op::log_softmax},
                                            {"logsumexp", Op::logsumexp},
                                            {"softmax_backward", Op::softmax_backward},
                                            {"log_softmax_backward", Op::log_softmax_backward}};
  for (const auto& [name, op] : ops) {
    auto* b = benchmark::RegisterBenchmark((std::string(name) + "/" + dtype).c_str(),
                                           [op = op](benchmark::State& st) { softmax_family<T>(st, op); });
    for (const auto& [r, c] : kSoftmaxShapes) b->Args({r, c});
    b->ArgNames({"rows", "cols"})->Unit(benchmark::kMicrosecond);
  }
}

template <typename T>
void register_cross_entropy(const char* dtype) {
  for (const bool backward : {false, true}) {
    auto* b = benchmark::RegisterBenchmark(
        (std::string(backward ? "cross_entropy_forward_backward/" : "cross_entropy/") + dtype).c_str(),
        [backward](benchmark::State& st) { cross_entropy<T>(st, backward); });
    b->Args({32, 32000})->Args({4, 151936})->ArgNames({"rows", "cols"})->Unit(benchmark::kMicrosecond);
  }
}

template <typename T>
void register_attention(const char* dtype) {
  for (const bool causal : {false, true}) {
    auto* b = benchmark::RegisterBenchmark(
        (std::string(causal ? "attention_forward_causal/" : "attention_forward/") + dtype).c_str(),
        [causal](benchmark::State& st) { attention<T>(st, causal); });
    b->Args({256, 4, 64})->Args({256, 4, 128})->ArgNames({"S", "H", "D"})->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_softmax_family<float>("f32");
  register_softmax_family<smk::bfloat16_t>("bf16");
  register_cross_entropy<float>("f32");
  register_cross_entropy<smk::bfloat16_t>("bf16");
  register_attention<float>("f32");
  register_attention<smk::bfloat16_t>("bf16");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
