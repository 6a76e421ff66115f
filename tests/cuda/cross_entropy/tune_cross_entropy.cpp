// Cross-entropy forward + backward on the shapes, every way we have, side by side in one run (not a test):
//   two_calls   cross_entropy (with the LSE) then cross_entropy_backward in place: the logits read twice
//   backward    cross_entropy_backward alone, in place, from the forward's LSE (its fast path, backward.cu)
//   fused       cross_entropy_forward_backward in place, the dispatcher's choice (fused.cu: the one-read kernel
//               up to 49152 classes, the two calls above)
//   forward     cross_entropy alone (mean, with the LSE): the logits read once; GB/s counts n, % is of the read
//               ceiling (4.30 TB/s, ANCHORS.md)
//   fused/stage    the one-read kernel at any width on the fewest wide blocks (1024 × 32) that hold a row, each block
//                  bulk-copying its share of the next row into shared memory (row_stage.cuh)
//   fused/nostage  the same, rows loaded straight into registers
//   fused/narrow   (--narrow) the narrow blocks (512 × 24), no default uses them
//   fused/base     the dispatcher's launch with dependent launches off (the launches before ce9)
//   fused/pdl      the same with dependent launches (scan -> one-read kernel -> reduction, griddepcontrol)
//   fused/nofix    the dispatcher's launch without the mean's f32 target entries re-formed in double by the mean's
//                  kernel (kFusedTargetFix, ce10; on by default since session 10's review): the launches before ce10
//   fused/cN       (--clusters N,...) the one-read kernel on clusters of N wide blocks (when N is at least what a
//                  row needs), staged by the dispatcher's rule: the cluster shapes of session 8 (ce6), for rows
//                  whose fewest blocks leave SMs idle (4096×151936 on 5 blocks: 22 clusters resident, 110 SMs)
//   fused/one      (ce11) the dispatcher without the row loop: the one-read kernel where a row fits, else the two calls
//   loop/b2        (ce11) the row loop (row_loop.cuh) at any width, two blocks an SM (its occupancy), cache hints on
//   loop/b1        the same at one block an SM (half the rows in flight: more of pass 2 from L2)
//   loop/nohint    loop/b2 with plain loads and stores
//   loop/s0        (ce12) the row loop at two blocks an SM without staged steps (ce11's kernel, as loop/b2 before ce12)
//   loop/s3        the row loop with its first 3 steps (96 KB a block) kept in shared memory, two blocks an SM
//   loop/b1s6      the same with 6 steps (192 KB) at one block an SM
// (fused, the dispatcher's choice, takes the row loop where fused.cu row_loop_rule says so since ce11.)
// Every one-read variant's line ends with its launch (fused.cu last_fused_launch): blocks a cluster, threads a block,
// clusters resident at once, and the grid's blocks.
// (set_fused_tuning): the measurements behind fused.cu's launch shape, kFusedAutoMaxCols and kFusedStage16 /
// kFusedStageF32. The run of ce1a473 (2026-11-30) also timed f32 with one 512-thread block an SM (128 registers):
// slower, removed; ce3's runs timed clusters of one more wide block than a row needs: slower everywhere, dropped here.
// CUDA-event time of each call (host waits included: each call synchronizes for its error flag), median of the
// repeats; before every repeat the logits are restored from a pristine copy (2.5 GB at the largest shape, which
// also leaves nothing of them in the 50 MB L2). GB/s counts the bound: logits read once, gradient written
// once (2n of the dtype); % is of the H200's measured copy ceiling, 4.27 TB/s (docs/ANCHORS).
//   tune_cross_entropy [--reps N] [--json FILE] [--narrow] [--only PREFIX,...] [--dtypes bf16,f16,f32]
//                      [--shapes RxC,...] [--clusters N,...]
//   (--only: the variants whose names start with one of the prefixes, or exactly NAME for NAME$ (ce12); --dtypes
//   default bf16,f32; --shapes default
//   the four below)
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/device.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace {

constexpr double kCopyGBps = 4270;
constexpr double kReadGBps = 4300;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Normal(0, 2) logits rounded to the dtype: a tile of 2^20 + 7 random values (odd, so rows do not line up with
// it) repeated over the tensor, which costs seconds less than drawing 622 M values and times the same.
std::vector<unsigned char> logits_bytes(smk::DType dt, std::int64_t n, std::uint64_t seed) {
  const std::size_t es = smk::dtype_size(dt), tile = (std::size_t{1} << 20) + 7;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<unsigned char> t(tile * es);
  for (std::size_t i = 0; i < tile; ++i) {
    const float f = d(rng);
    if (dt == smk::DType::f32) {
      std::memcpy(t.data() + i * 4, &f, 4);
    } else if (dt == smk::DType::f16) {  // the host conversion of cuda_fp16.h, round to nearest even
      const __half h = __float2half_rn(f);
      std::memcpy(t.data() + i * 2, &h, 2);
    } else {  // bf16: the top half of the f32, rounded to nearest even
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      u += 0x7FFF + ((u >> 16) & 1);
      const auto h = static_cast<std::uint16_t>(u >> 16);
      std::memcpy(t.data() + i * 2, &h, 2);
    }
  }
  std::vector<unsigned char> b(static_cast<std::size_t>(n) * es);
  for (std::size_t at = 0; at < b.size(); at += t.size()) std::memcpy(b.data() + at, t.data(), std::min(t.size(), b.size() - at));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  const char* json = nullptr;
  bool narrow = false;
  std::string only, dtypes = "bf16,f32", shape_list, cluster_list;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--narrow")) narrow = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc) dtypes = argv[++i];
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) shape_list = argv[++i];
    else if (!std::strcmp(argv[i], "--clusters") && i + 1 < argc) cluster_list = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
  }
  if (smk::cuda_device_count() == 0) {
    std::printf("no GPU: %s\n", smk::cuda_unavailable_reason().c_str());
    return 0;
  }
  struct Shape {
    std::int64_t rows, cols;
  };
  // The two shapes, then a row two wide blocks hold (the dispatcher's cluster range) and one a narrow block
  // holds (its single-block range).
  // --shapes RxC,RxC,... replaces them (one shape under Nsight Compute); --dtypes picks among bf16, f16, f32.
  std::vector<Shape> shapes = {{4096, 151936}, {8192, 32000}, {4096, 65536}, {16384, 8192}};
  if (!shape_list.empty()) {
    shapes.clear();
    for (std::size_t at = 0; at < shape_list.size();) {
      const std::size_t end = std::min(shape_list.find(',', at), shape_list.size());
      long long r = 0, c = 0;
      if (std::sscanf(shape_list.substr(at, end - at).c_str(), "%lldx%lld", &r, &c) == 2 && r > 0 && c > 0)
        shapes.push_back({r, c});
      at = end + 1;
    }
  }
  std::vector<smk::DType> dts;
  for (const auto& [name, dt] : {std::pair{"bf16", smk::DType::bf16}, std::pair{"f16", smk::DType::f16},
                                 std::pair{"f32", smk::DType::f32}})
    if (("," + dtypes + ",").find(std::string(",") + name + ",") != std::string::npos) dts.push_back(dt);
  std::string out = "[\n";
  std::printf("%-6s %-14s %-12s %10s %9s %7s\n", "dtype", "shape", "variant", "median_us", "GB/s", "% bound");
  for (smk::DType dt : dts)
    for (const Shape& sh : shapes) {
      const std::int64_t n = sh.rows * sh.cols;
      const std::size_t bytes = static_cast<std::size_t>(n) * smk::dtype_size(dt);
      void *x = nullptr, *pristine = nullptr, *t = nullptr, *loss = nullptr, *lse = nullptr, *gl = nullptr;
      check(cudaMalloc(&x, bytes), "cudaMalloc x");
      check(cudaMalloc(&pristine, bytes), "cudaMalloc pristine");
      check(cudaMalloc(&t, sh.rows * 8), "cudaMalloc t");
      check(cudaMalloc(&loss, 4), "cudaMalloc loss");
      check(cudaMalloc(&lse, sh.rows * 4), "cudaMalloc lse");
      check(cudaMalloc(&gl, 4), "cudaMalloc gl");
      {
        const auto hx = logits_bytes(dt, n, 20261130);
        check(cudaMemcpy(pristine, hx.data(), bytes, cudaMemcpyHostToDevice), "upload x");
        std::vector<std::int64_t> ht(sh.rows);
        std::mt19937_64 rng(7);
        for (auto& v : ht) v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(sh.cols));
        check(cudaMemcpy(t, ht.data(), sh.rows * 8, cudaMemcpyHostToDevice), "upload t");
        const float one = 1.0f;
        check(cudaMemcpy(gl, &one, 4, cudaMemcpyHostToDevice), "upload gl");
      }
      const smk::Device dev = smk::Device::cuda(0);
      const smk::TensorView xv = smk::TensorView::contiguous(x, dt, dev, {sh.rows, sh.cols});
      const smk::TensorView tv = smk::TensorView::contiguous(t, smk::DType::i64, dev, {sh.rows});
      const smk::TensorView lv = smk::TensorView::contiguous(loss, smk::DType::f32, dev, {});
      const smk::TensorView lsev = smk::TensorView::contiguous(lse, smk::DType::f32, dev, {sh.rows});
      const smk::TensorView glv = smk::TensorView::contiguous(gl, smk::DType::f32, dev, {});
      struct Variant {
        std::string name;
        std::function<void()> run;
        bool needs_lse;
        bool read_only = false;  // the forward: n bytes, against the read ceiling
      };
      std::vector<Variant> variants = {
          {"forward", [&] { smk::cross_entropy(lv, xv, tv, {}, lsev); }, false, true},
          {"two_calls", [&] { smk::cross_entropy(lv, xv, tv, {}, lsev); smk::cross_entropy_backward(xv, xv, tv, glv, {}, lsev); }, false},
          {"backward", [&] { smk::cross_entropy_backward(xv, xv, tv, glv, {}, lsev); }, true},
          {"fused", [&] { smk::cross_entropy_forward_backward(lv, xv, xv, tv, {}, {}, lsev); }, false},
      };
      auto tuned = [&](const std::string& name, smk::cuda::ce::FusedTuning tuning) {
        variants.push_back({name, [&, tuning] {
                              smk::cuda::ce::set_fused_tuning(tuning);
                              smk::cross_entropy_forward_backward(lv, xv, xv, tv, {}, {}, lsev);
                              smk::cuda::ce::set_fused_tuning({});
                            }, false});
      };
      // The one-read kernel at every width (the dispatcher takes the two calls above 49152 classes), on each block
      // kind with the fewest blocks that hold a row, then with more.
      namespace ce = smk::cuda::ce;
      tuned("fused/base", {0, -1, false, 0, 0});
      tuned("fused/pdl", {0, -1, false, 0, 1});
      tuned("fused/nofix", {0, -1, false, 0, -1, 0});
      tuned("fused/stage", {0, 1, true, 1024});
      tuned("fused/nostage", {0, 0, true, 1024});
      if (narrow) tuned("fused/narrow", {0, 0, true, 512});
      // ce11: the one-read kernel where it holds the row (else the two calls), never the row loop: the dispatcher
      // before ce11; and the row loop (row_loop.cuh) at two blocks an SM (its occupancy), at one, and without its
      // cache hints.
      auto loop_tuning = [](int row_loop, int blocks, int hints, int stage = -1) {
        smk::cuda::ce::FusedTuning t;
        t.row_loop = row_loop;
        t.loop_blocks = blocks;
        t.loop_hints = hints;
        t.loop_stage = stage;
        return t;
      };
      tuned("fused/one", loop_tuning(0, 0, -1));
      tuned("loop/b2", loop_tuning(1, 0, -1));
      tuned("loop/b1", loop_tuning(1, 1, -1));
      tuned("loop/nohint", loop_tuning(1, 0, 0));
      tuned("loop/s0", loop_tuning(1, 0, -1, 0));
      tuned("loop/s3", loop_tuning(1, 0, -1, 3));
      tuned("loop/b1s6", loop_tuning(1, 1, -1, 6));
      for (std::size_t at = 0; at < cluster_list.size();) {  // --clusters: wide clusters, the dispatcher's staging
        const std::size_t end = std::min(cluster_list.find(',', at), cluster_list.size());
        const int c = std::atoi(cluster_list.substr(at, end - at).c_str());
        if (c > 0) tuned("fused/c" + std::to_string(c), {c, -1, true, 1024});
        at = end + 1;
      }
      cudaEvent_t e0, e1;
      check(cudaEventCreate(&e0), "event");
      check(cudaEventCreate(&e1), "event");
      for (const Variant& v : variants) {
        bool picked = only.empty();
        for (std::size_t at = 0; at <= only.size() && !picked;) {  // --only: a comma-separated list of prefixes
          const std::size_t end = std::min(only.find(',', at), only.size());
          const std::string prefix = only.substr(at, end - at);
          if (prefix.size() > 1 && prefix.back() == '$') picked = v.name == prefix.substr(0, prefix.size() - 1);  // exact
          else picked = !prefix.empty() && v.name.rfind(prefix, 0) == 0;
          at = end + 1;
        }
        if (!picked) continue;
        std::vector<float> ms;
        for (int r = 0; r < reps + 2; ++r) {
          check(cudaMemcpy(x, pristine, bytes, cudaMemcpyDeviceToDevice), "restore x");
          if (v.needs_lse) smk::cross_entropy(lv, xv, tv, {}, lsev);  // the forward's LSE, untimed
          check(cudaDeviceSynchronize(), "sync");
          check(cudaEventRecord(e0), "record");
          try {
            v.run();
          } catch (const std::exception& e) {
            std::printf("%s: %s\n", v.name.c_str(), e.what());
            break;
          }
          check(cudaEventRecord(e1), "record");
          check(cudaEventSynchronize(e1), "sync");
          float m = 0;
          check(cudaEventElapsedTime(&m, e0, e1), "elapsed");
          if (r >= 2) ms.push_back(m);  // two warm-up runs
        }
        if (ms.empty()) continue;
        std::sort(ms.begin(), ms.end());
        const double us = 1000.0 * ms[ms.size() / 2];
        const double gbps = (v.read_only ? 1.0 : 2.0) * static_cast<double>(bytes) / (us * 1e-6) / 1e9;
        const std::string shape = std::to_string(sh.rows) + "x" + std::to_string(sh.cols);
        // The one-read variants' launch (fused.cu); the others launch other kernels (or it fell back: cluster 0).
        smk::cuda::ce::FusedLaunch fl{};
        if (v.name.rfind("fused", 0) == 0 || v.name.rfind("loop", 0) == 0) fl = smk::cuda::ce::last_fused_launch();
        const smk::cuda::ce::FusedLaunch none{};
        smk::cuda::ce::set_last_fused_launch(none);
        char launch[160] = "";
        if (fl.cluster > 0)
          std::snprintf(launch, sizeof launch, "  c%d t%d resident %d grid %d%s%s s%d", fl.cluster, fl.threads,
                        fl.resident, fl.grid, fl.pdl ? " pdl" : "", fl.row_loop ? " row-loop" : "", fl.loop_stage);
        std::printf("%-6s %-14s %-12s %10.1f %9.0f %6.1f%%  [%.1f-%.1f]%s\n", smk::dtype_name(dt), shape.c_str(),
                    v.name.c_str(), us, gbps, 100.0 * gbps / (v.read_only ? kReadGBps : kCopyGBps),
                    1000.0 * ms.front(), 1000.0 * ms.back(), launch);
        char line[320];
        std::snprintf(line, sizeof line,
                      "  {\"dtype\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"variant\": \"%s\", \"median_us\": %.2f, "
                      "\"cluster\": %d, \"threads\": %d, \"resident\": %d, \"grid\": %d, \"pdl\": %d, \"row_loop\": %d, "
                      "\"loop_stage\": %d},\n",
                      smk::dtype_name(dt), static_cast<long long>(sh.rows), static_cast<long long>(sh.cols),
                      v.name.c_str(), us, fl.cluster, fl.threads, fl.resident, fl.grid, fl.pdl ? 1 : 0, fl.row_loop ? 1 : 0,
                      fl.loop_stage);
        out += line;
      }
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
      for (void* p : {x, pristine, t, loss, lse, gl}) cudaFree(p);
    }
  if (out.size() > 2) out.erase(out.size() - 2, 1);
  out += "]\n";
  if (json) {
    if (FILE* f = std::fopen(json, "w")) {
      std::fputs(out.c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}
