// `softmaxkit bench` on the GPU. The bench does no maths of its own: it makes inputs, calls the library's public
// ops (or cuDNN) and times them with bench_timer.
#include "bench_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "bench_ceilings.hpp"
#include "bench_cudnn.hpp"
#include "bench_timer.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/device.hpp"
#include "softmaxkit/softmax.hpp"

namespace smk::app::bench {

namespace {

// Input data: a tile of random logits, N(0, 2²) like a language model's, drawn once per (dtype, seed) on the host
// and repeated through each device buffer by device-to-device copies. 4 Mi elements is long enough that rows of
// every shape in the grid see different values, and cheap to draw.
constexpr std::int64_t kTileElements = std::int64_t{1} << 22;
constexpr float kLogitStddev = 2.0f;
constexpr std::uint64_t kSeedInput = 20261129, kSeedGrad = 77;

// Ceiling buffers: 2 GiB, as ../shared/ANCHORS.md measured them.
constexpr std::int64_t kCeilingBytes = std::int64_t{2} << 30;
constexpr int kCeilingReps = 10;
// Timed calls that estimate a row's call time before its repetition count is chosen.
constexpr int kEstimateReps = 3;
// The fixed cost of a call (Result::host_us, loop_us, graph_us): batches of K back-to-back calls, K chosen so a
// batch runs about kFixedCostBatchUs of GPU time, within [kFixedCostMinCalls, kFixedCostMaxCalls] (the upper bound
// keeps the stream's queue of launches from filling, which would make the host wait for the GPU); the median of
// kFixedCostBatches batches.
constexpr double kFixedCostBatchUs = 2000.0;
constexpr int kFixedCostMinCalls = 5, kFixedCostMaxCalls = 100, kFixedCostBatches = 5;

class Tiles {
 public:
  const std::vector<unsigned char>& get(DType dtype, std::uint64_t seed) {
    auto& tile = tiles_[{dtype, seed}];
    if (!tile.empty()) return tile;
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, kLogitStddev);
    const std::size_t esz = dtype_size(dtype);
    tile.resize(static_cast<std::size_t>(kTileElements) * esz);
    for (std::int64_t i = 0; i < kTileElements; ++i) {
      const float v = normal(rng);
      unsigned char* dst = tile.data() + static_cast<std::size_t>(i) * esz;
      if (dtype == DType::f32) {
        std::memcpy(dst, &v, 4);
      } else if (dtype == DType::bf16) {
        const bfloat16_t b = to_bfloat16(v);
        std::memcpy(dst, &b.bits, 2);
      } else {
        const half_t h = to_half(v);
        std::memcpy(dst, &h.bits, 2);
      }
    }
    return tile;
  }

 private:
  std::map<std::pair<DType, std::uint64_t>, std::vector<unsigned char>> tiles_;
};

void fill_from_tile(void* dst, std::int64_t n, DType dtype, const std::vector<unsigned char>& tile, cudaStream_t s) {
  const auto esz = static_cast<std::int64_t>(dtype_size(dtype));
  auto* d = static_cast<unsigned char*>(dst);
  const std::int64_t first = std::min(n, kTileElements);
  SMK_CUDA_CHECK(cudaMemcpyAsync(d, tile.data(), static_cast<std::size_t>(first * esz), cudaMemcpyHostToDevice, s));
  for (std::int64_t filled = first; filled < n;) {  // doubling copies of what is already there
    const std::int64_t count = std::min(filled, n - filled);
    SMK_CUDA_CHECK(cudaMemcpyAsync(d + filled * esz, d, static_cast<std::size_t>(count * esz),
                                   cudaMemcpyDeviceToDevice, s));
    filled += count;
  }
}

// The tensors of one (shape, dtype): x and dy random, y the forward output the backward passes read, out the
// output of the op timed, lse the per-row output of logsumexp (f32 for f16/bf16, as the API specifies).
struct Buffers {
  smk::cuda::DeviceBuffer<unsigned char> x, dy, y, out, lse;
  // Cross-entropy: targets (i64, uniform over the classes), the mean loss and its upstream gradient (1).
  smk::cuda::DeviceBuffer<std::int64_t> targets;
  smk::cuda::DeviceBuffer<float> loss, grad_loss;
  Buffers(std::int64_t rows, std::int64_t cols, DType dtype)
      : x(bytes(rows * cols, dtype)),
        dy(bytes(rows * cols, dtype)),
        y(bytes(rows * cols, dtype)),
        out(bytes(rows * cols, dtype)),
        lse(bytes(rows, DType::f32)),
        targets(static_cast<std::size_t>(rows)),
        loss(1),
        grad_loss(1) {
    std::mt19937_64 rng(kSeedInput + 5);
    std::uniform_int_distribution<std::int64_t> pick(0, cols - 1);
    std::vector<std::int64_t> t(static_cast<std::size_t>(rows));
    for (auto& v : t) v = pick(rng);
    targets.copy_from_host(t);
    const std::vector<float> one = {1.0f};
    grad_loss.copy_from_host(one);
  }
  static std::size_t bytes(std::int64_t n, DType d) { return static_cast<std::size_t>(n) * dtype_size(d); }
};

TensorView view(void* data, DType dtype, int device, std::int64_t rows, std::int64_t cols) {
  return TensorView::contiguous(data, dtype, Device::cuda(device), {rows, cols});
}

// Calls one op of the library through the public API.
void call_library(Op op, Buffers& b, DType dtype, const GpuPlan& plan, const Shape& shape, Stream stream) {
  const TensorView x = view(b.x.data(), dtype, plan.device, shape.rows, shape.cols);
  const TensorView out = view(b.out.data(), dtype, plan.device, shape.rows, shape.cols);
  switch (op) {
    case Op::softmax: return smk::softmax(out, x, {}, stream);
    case Op::log_softmax: return smk::log_softmax(out, x, {}, stream);
    case Op::logsumexp:
      return smk::logsumexp(TensorView::contiguous(b.lse.data(), DType::f32, Device::cuda(plan.device), {shape.rows}),
                            x, {}, stream);
    case Op::softmax_backward:
    case Op::log_softmax_backward: {
      const TensorView y = view(b.y.data(), dtype, plan.device, shape.rows, shape.cols);
      const TensorView dy = view(b.dy.data(), dtype, plan.device, shape.rows, shape.cols);
      if (op == Op::softmax_backward) return smk::softmax_backward(out, y, dy, {}, stream);
      return smk::log_softmax_backward(out, y, dy, {}, stream);
    }
    case Op::cross_entropy:
    case Op::cross_entropy_fwd_bwd:
    case Op::cross_entropy_backward:
    case Op::cross_entropy_fused: {
      const Device dev = Device::cuda(plan.device);
      const TensorView t = TensorView::contiguous(b.targets.data(), DType::i64, dev, {shape.rows});
      const TensorView loss = TensorView::contiguous(b.loss.data(), DType::f32, dev, {});
      const TensorView lse = TensorView::contiguous(b.lse.data(), DType::f32, dev, {shape.rows});
      // One call, in place (the upstream gradient left out: 1).
      if (op == Op::cross_entropy_fused) return smk::cross_entropy_forward_backward(loss, x, x, t, {}, {}, lse, {}, stream);
      // The backward alone reads the LSE of an untimed forward (run_gpu_bench).
      if (op != Op::cross_entropy_backward) smk::cross_entropy(loss, x, t, {}, lse, {}, stream);
      if (op == Op::cross_entropy) return;
      // In place: each repetition's logits are the previous one's gradient (finite; the kernels' work does not
      // depend on the values). The inputs are refilled after the row.
      return smk::cross_entropy_backward(x, x, t, TensorView::contiguous(b.grad_loss.data(), DType::f32, dev, {}), {},
                                         lse, stream);
    }
  }
}

class RowTimer {
 public:
  RowTimer(EventTimer& timer, const GpuPlan& plan) : timer_(timer), plan_(plan) {}

  // Warm-up call, then the estimate, then the timed repetitions. A call the library or cuDNN refuses as
  // unsupported makes an "unsupported" row; any other smk::Error makes an "error" row.
  void time(Result& r, const std::function<void()>& call) {
    try {
      call();
      sync_and_check(timer_.stream(), "warm-up call");
      const double estimate_us = summarize(timer_.time(call, kEstimateReps)).median;
      const int reps = choose_reps(estimate_us / 1000.0, plan_.target_ms, plan_.min_reps, plan_.max_reps);
      r.micros = summarize(timer_.time(call, reps));
      r.status = "ok";
      fixed_cost(r, call, estimate_us);
    } catch (const Error& e) {
      // A CUDA error that left the context usable (a refused launch configuration, say) fails this row only; a
      // sticky one (an illegal address) poisons every later call, so the run stops.
      if (e.code() == ErrorCode::cuda_error && !context_still_usable()) throw;
      r.status = e.code() == ErrorCode::unsupported ? "unsupported" : "error";
      r.reason = e.what();
    }
  }

  // Host time per call (enqueue only), per call in a loop with one synchronisation, and per call replayed from a
  // CUDA graph (the GPU alone), all without the flush. A call that cannot be captured (cuDNN may refuse) leaves
  // graph_us unset; the capture is always ended, so the stream stays usable.
  void fixed_cost(Result& r, const std::function<void()>& call, double estimate_us) {
    using clock = std::chrono::steady_clock;
    const auto s = static_cast<cudaStream_t>(timer_.stream());
    const int k = static_cast<int>(std::clamp(kFixedCostBatchUs / std::max(estimate_us, 1.0),
                                              double{kFixedCostMinCalls}, double{kFixedCostMaxCalls}));
    std::vector<double> host, loop;
    for (int b = 0; b < kFixedCostBatches; ++b) {
      sync_and_check(timer_.stream(), "before the fixed-cost batch");
      const auto t0 = clock::now();
      for (int i = 0; i < k; ++i) call();
      const auto t1 = clock::now();
      sync_and_check(timer_.stream(), "fixed-cost batch");
      const auto t2 = clock::now();
      host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / k);
      loop.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count() / k);
    }
    r.host_us = summarize(host).median;
    r.loop_us = summarize(loop).median;

    cudaGraph_t graph = nullptr;
    SMK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    bool captured = true;
    try {
      for (int i = 0; i < k; ++i) call();
    } catch (const Error&) {
      captured = false;
    }
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    (void)cudaGetLastError();
    if (!captured || end != cudaSuccess || graph == nullptr) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      return;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    cudaEvent_t a = nullptr, b = nullptr;
    SMK_CUDA_CHECK(cudaEventCreate(&a));
    SMK_CUDA_CHECK(cudaEventCreate(&b));
    std::vector<double> per_call;
    SMK_CUDA_CHECK(cudaGraphLaunch(exec, s));  // warm-up: the first replay uploads the graph
    for (int rep = 0; rep < kFixedCostBatches; ++rep) {
      SMK_CUDA_CHECK(cudaEventRecord(a, s));
      SMK_CUDA_CHECK(cudaGraphLaunch(exec, s));
      SMK_CUDA_CHECK(cudaEventRecord(b, s));
      sync_and_check(timer_.stream(), "graph replay");
      float ms = 0;
      SMK_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      per_call.push_back(1000.0 * ms / k);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(exec);
    r.graph_us = summarize(per_call).median;
  }

  static bool context_still_usable() {
    (void)cudaGetLastError();
    const bool ok = cudaDeviceSynchronize() == cudaSuccess;
    (void)cudaGetLastError();
    return ok && cudaDeviceSynchronize() == cudaSuccess;
  }

 private:
  EventTimer& timer_;
  const GpuPlan& plan_;
};

}  // namespace

std::vector<Result> run_gpu_bench(const GpuPlan& plan, RunInfo& info, const GpuSink& sink) {
  smk::cuda::set_device(plan.device);
  const DeviceInfo dev = cuda_device_info(plan.device);
  info.device_name = dev.name;
  info.cc_major = dev.cc_major;
  info.cc_minor = dev.cc_minor;
  info.sm_count = dev.sm_count;
  info.l2_bytes = static_cast<std::int64_t>(dev.l2_bytes);
  info.target_ms = plan.target_ms;
  info.min_reps = plan.min_reps;
  info.max_reps = plan.max_reps;

  smk::cuda::StreamOwner stream_owner;
  const cudaStream_t s = stream_owner.get();
  const Stream stream{s};
  EventTimer timer(s, flush_bytes_for(info.l2_bytes));
  info.flush_bytes = timer.flush_bytes();
  info.ceilings = measure_ceilings(timer, kCeilingBytes, kCeilingReps);

  std::unique_ptr<CudnnAnchor> cudnn;
  if (!plan.cudnn) {
    info.cudnn = "disabled (--no-cudnn)";
  } else {
    try {
      cudnn = std::make_unique<CudnnAnchor>(static_cast<void*>(s));
      info.cudnn = cudnn->version();
    } catch (const Error& e) {
      info.cudnn = e.what();
    }
  }
  if (sink.started) sink.started(info);

  std::vector<Result> results;
  auto emit = [&](Result r) {
    if (sink.measured) sink.measured(r);
    results.push_back(std::move(r));
  };
  RowTimer row_timer(timer, plan);
  Tiles tiles;

  for (const Shape& shape : plan.shapes) {
    for (DType dtype : plan.dtypes) {
      Buffers b(shape.rows, shape.cols, dtype);
      const std::int64_t n = shape.rows * shape.cols;
      fill_from_tile(b.x.data(), n, dtype, tiles.get(dtype, kSeedInput), s);
      fill_from_tile(b.dy.data(), n, dtype, tiles.get(dtype, kSeedGrad), s);
      sync_and_check(s, "filling the inputs");

      for (Op op : plan.ops) {
        auto base = [&] {
          Result r;
          r.op = op;
          r.dtype = dtype;
          r.shape = shape;
          r.bytes = min_traffic_bytes(op, dtype, shape.rows, shape.cols);
          return r;
        };
        // The backward passes read y, the forward output: softmaxkit's own (automatic path).
        std::string no_y;
        if (is_backward(op)) {
          try {
            const TensorView x = view(b.x.data(), dtype, plan.device, shape.rows, shape.cols);
            const TensorView y = view(b.y.data(), dtype, plan.device, shape.rows, shape.cols);
            if (op == Op::softmax_backward) smk::softmax(y, x, {}, stream);
            else smk::log_softmax(y, x, {}, stream);
            sync_and_check(s, "forward output for a backward pass");
          } catch (const Error& e) {
            if (e.code() == ErrorCode::cuda_error) throw;
            no_y = std::string("needs y from the forward op: ") + e.what();
          }
        }
        if (op == Op::cross_entropy_backward) {  // the forward's LSE for the backward alone, untimed
          const Device dev = Device::cuda(plan.device);
          smk::cross_entropy(TensorView::contiguous(b.loss.data(), DType::f32, dev, {}),
                             view(b.x.data(), dtype, plan.device, shape.rows, shape.cols),
                             TensorView::contiguous(b.targets.data(), DType::i64, dev, {shape.rows}), {},
                             TensorView::contiguous(b.lse.data(), DType::f32, dev, {shape.rows}), {}, stream);
          sync_and_check(s, "the forward's LSE for cross_entropy_backward");
        }
        for (const auto& [label, path] : plan.paths) {
          // Cross-entropy has one dispatcher and no forced paths: timed once, under the first label ("auto").
          if (is_cross_entropy(op) && label != plan.paths.front().first) continue;
          Result r = base();
          r.path = label;
          if (!no_y.empty()) {
            r.status = "unsupported";
            r.reason = no_y;
          } else {
            row_timer.time(r, [&, path = path] {
              smk::cuda::ScopedSoftmaxPath force(path);
              call_library(op, b, dtype, plan, shape, stream);
            });
          }
          emit(std::move(r));
        }
        if (op == Op::cross_entropy_fwd_bwd || op == Op::cross_entropy_backward ||
            op == Op::cross_entropy_fused) {  // gradients over the logits
          fill_from_tile(b.x.data(), n, dtype, tiles.get(dtype, kSeedInput), s);
          sync_and_check(s, "refilling the logits");
        }
        if (cudnn && CudnnAnchor::serves(op)) {
          Result r = base();
          r.impl = "cudnn";
          r.path = CudnnAnchor::algorithm(op);
          try {
            if (is_backward(op)) {  // cuDNN's backward reads cuDNN's own forward output
              const Op fwd = op == Op::softmax_backward ? Op::softmax : Op::log_softmax;
              cudnn->prepare(fwd, dtype, shape.rows, shape.cols, b.y.data(), b.x.data(), nullptr)();
              sync_and_check(s, "cuDNN forward output for a backward pass");
            }
            const auto call =
                cudnn->prepare(op, dtype, shape.rows, shape.cols, b.out.data(),
                               is_backward(op) ? b.y.data() : b.x.data(), b.dy.data());
            row_timer.time(r, call);
          } catch (const Error& e) {
            if (e.code() == ErrorCode::cuda_error) throw;
            r.status = "unsupported";
            r.reason = e.what();
          }
          emit(std::move(r));
        }
      }
    }
  }
  return results;
}

}  // namespace smk::app::bench
