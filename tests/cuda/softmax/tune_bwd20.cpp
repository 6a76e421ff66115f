// tune_bwd20 (session 20, helper bwd20; issue 3, docs/perf-notebook.md plan item 4): the 2-D backward passes' serving
// kernels under cache-hint sets (backward.cu kHints, warp_backward.hpp BackwardHintTuning: the same arithmetic, the
// same bits) beside the public call, with the L2 left full of dirty lines as the bench leaves it (bwd18: Triton's
// kernels equal ours under Nsight Compute's clean caches, ours pays ~3 µs more in event timing). Not a test: a one-off
// A/B tool (tests/CMakeLists.txt), removed once its result is in the notebook.
//   usage: tune_bwd20 [--reps N] [--quick]
// Sets (load | store << 2): 1 ld L1::evict_last + L2 evict-last policy (Triton's first read), 2 ld L2 evict-first
// policy, 3 ld L1::no_allocate, 4 st.global.cs, 8 st L2 evict-first policy, 5 = 1+4, 6 = 2+4, 9 = 1+8, 10 = 2+8, and
// 16 the control (the warp kernels and the dy-shared block: their default code under another name, i.e. the method's
// noise; the f32 register block: its dense form with plain loads and stores, the hinted forms' own baseline).
// Per case (dtype, op, shape): "auto" (smk::softmax_backward / log_softmax_backward, hints 0) and each set (the same
// call with BackwardHintTuning::hints = set; BackwardHintLast must report the set taken, else the case says so and
// the tool exits 1). Method: before each timed launch a cudaMemsetAsync of 240 MB (the bench's dirty L2), CUDA events
// around the call alone, the median of N launches (default 40) after 3 untimed; 3 rounds, the order reversed in round
// 2; per round the ratio set / auto, printed as median (min-max) over the rounds (< 1: the set is faster). Bits: every
// set's dx (output poisoned with 0xFF first) byte for byte against auto's over the whole call. Auto's dx against
// float64 on the first and last rows (max |err| / max |dx|). Inputs: x uniform in [-4, 4), y = softmax(x) or
// log_softmax(x) by the library, dy uniform in [-1, 1).
// bf16 8192x32000 is served by backward_reread.cu (softmax_cuda.cpp backward_reread_takes), which has no hint sets
// here: auto only (its kernel confirmed by backward_reread_launch_count).
// Prints "case" lines, one line per set, then "summary" lines per (kernel, set): the median ratios by shape and op,
// their maximum. Exit 1 on a differing bit, a set not taken or a reference error over the gate; 2 bad arguments; 3 no
// device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/warp_backward.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/softmax.hpp"

namespace {

using namespace smk::cuda::kernels;
using smk::DType;

struct Set {
  int hints;
  const char* name;
};
constexpr Set kSets[] = {{1, "ld.EL+L2el"}, {2, "ld.L2ef"},      {3, "ld.NA"},         {4, "st.cs"},
                         {8, "st.L2ef"},    {5, "ld.EL+st.cs"}, {6, "ld.L2ef+st.cs"}, {9, "ld.EL+st.L2ef"},
                         {10, "ld.L2ef+st.L2ef"}, {16, "control"}};
const char* kKernelName[] = {"none", "dy_shared_packed", "warp_packed", "warp_dense_f32", "block_f32"};

struct Case {
  DType t;
  std::int64_t rows, n;
  bool hinted;  // served by a kernel with hint sets
};

std::uint64_t rng = 0x9E3779B97F4A7C15ull;
inline double uniform01() {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return static_cast<double>((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

// Host values of `count` elements of type t, uniform in [lo, hi).
std::vector<unsigned char> random_host(std::size_t count, DType t, double lo, double hi) {
  const std::size_t es = smk::dtype_size(t);
  std::vector<unsigned char> h(count * es);
  for (std::size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(lo + (hi - lo) * uniform01());
    if (t == DType::f32) std::memcpy(h.data() + 4 * i, &v, 4);
    else {
      const auto b = smk::to_bfloat16(v);
      std::memcpy(h.data() + 2 * i, &b, 2);
    }
  }
  return h;
}
double host_value(const unsigned char* p, std::size_t i, DType t) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  smk::bfloat16_t b;
  std::memcpy(&b, p + 2 * i, 2);
  return smk::to_float(b);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 40;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else {
      std::fprintf(stderr, "usage: tune_bwd20 [--reps N] [--quick]\n");
      return 2;
    }
  }
  if (reps < 1) return 2;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("tune_bwd20: no CUDA device\n");
    return 3;
  }
  std::vector<Case> cases = {{DType::bf16, 8192, 32000, false}, {DType::bf16, 16384, 4096, true},
                             {DType::bf16, 4096, 16384, true},  {DType::bf16, 32768, 1024, true},
                             {DType::bf16, 262144, 128, true},  {DType::f32, 16384, 4096, true},
                             {DType::f32, 32768, 1024, true}};
  if (quick) cases = {{DType::bf16, 16384, 4096, true}, {DType::f32, 32768, 1024, true}};
  const Op ops[] = {Op::softmax_backward, Op::log_softmax_backward};
  const int rounds = 3;
  const std::size_t flush_bytes = std::size_t{240} << 20;
  void* flush = nullptr;
  SMK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  std::size_t max_bytes = 0;
  for (const Case& c : cases)
    max_bytes = std::max(max_bytes, static_cast<std::size_t>(c.rows * c.n) * smk::dtype_size(c.t));
  unsigned char *host_ref = nullptr, *host_got = nullptr;
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_ref), max_bytes));
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_got), max_bytes));
  cudaEvent_t start, stop;
  SMK_CUDA_CHECK(cudaEventCreate(&start));
  SMK_CUDA_CHECK(cudaEventCreate(&stop));
  const smk::Device dev = smk::Device::cuda(0);
  int failures = 0;
  // summary[(kernel, set)] = per case "shape op ratio", and the maximum ratio
  struct Sum {
    std::string by_case;
    double worst = 0;
  };
  std::map<std::pair<int, int>, Sum> summary;

  std::printf("tune_bwd20: reps %d, rounds %d, 240 MB memset before each timed launch; ratio = set / auto (< 1 faster)\n",
              reps, rounds);
  for (const Case& c : cases) {
    const std::size_t count = static_cast<std::size_t>(c.rows * c.n), bytes = count * smk::dtype_size(c.t);
    void *x = nullptr, *y = nullptr, *dy = nullptr, *dx_ref = nullptr, *dx = nullptr;
    for (void** p : {&x, &y, &dy, &dx_ref, &dx}) SMK_CUDA_CHECK(cudaMalloc(p, bytes));
    {
      const auto hx = random_host(count, c.t, -4.0, 4.0);
      SMK_CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
      const auto hd = random_host(count, c.t, -1.0, 1.0);
      SMK_CUDA_CHECK(cudaMemcpy(dy, hd.data(), bytes, cudaMemcpyHostToDevice));
    }
    auto view = [&](void* p) { return smk::TensorView::contiguous(p, c.t, dev, {c.rows, c.n}); };
    char shape[48];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(c.rows), static_cast<long long>(c.n));
    for (const Op op : ops) {
      const bool log = op == Op::log_softmax_backward;
      if (log) smk::log_softmax(view(y), view(x));
      else smk::softmax(view(y), view(x));
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      auto call = [&](int hints, void* out) {
        backward_hint_tuning().hints = hints;
        if (log) smk::log_softmax_backward(view(out), view(y), view(dy));
        else smk::softmax_backward(view(out), view(y), view(dy));
        backward_hint_tuning().hints = 0;
      };
      const char* opname = log ? "logsm_bwd" : "sm_bwd";
      // Which kernel: one call per set, BackwardHintLast read after it.
      std::vector<Set> sets;
      int kernel = 0;
      bool reread = false;
      {
        const std::uint64_t before = backward_reread_launch_count();
        call(0, dx);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        reread = backward_reread_launch_count() != before;
      }
      if (c.hinted) {
        for (const Set& s : kSets) {
          call(s.hints, dx);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          const int k = backward_hint_last().kernel.load(), h = backward_hint_last().hints.load();
          if (k == 0 || h != s.hints || (kernel != 0 && k != kernel)) {
            std::printf("FAIL %s %s %s: set %d not taken (kernel %d, hints %d)\n", smk::dtype_name(c.t), shape, opname,
                        s.hints, k, h);
            ++failures;
            continue;
          }
          kernel = k;
          sets.push_back(s);
        }
      }
      std::printf("case %s %s %s kernel %s%s\n", smk::dtype_name(c.t), shape, opname,
                  c.hinted ? kKernelName[kernel] : "backward_reread (backward_reread.cu: no hint sets)",
                  !c.hinted && !reread ? " [NOT the re-read kernel]" : "");
      if (!c.hinted && !reread) ++failures;
      // Timing: entry 0 auto, then the sets; rounds alternate the order.
      const int entries = 1 + static_cast<int>(sets.size());
      std::vector<std::vector<double>> us(rounds, std::vector<double>(entries));
      std::vector<float> ms(reps);
      for (int r = 0; r < rounds; ++r) {
        for (int j = 0; j < entries; ++j) {
          const int e = r % 2 == 0 ? j : entries - 1 - j;
          const int hints = e == 0 ? 0 : sets[e - 1].hints;
          for (int i = 0; i < 3; ++i) call(hints, dx);
          for (int i = 0; i < reps; ++i) {
            SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
            SMK_CUDA_CHECK(cudaEventRecord(start));
            call(hints, dx);
            SMK_CUDA_CHECK(cudaEventRecord(stop));
            SMK_CUDA_CHECK(cudaEventSynchronize(stop));
            SMK_CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
          }
          std::vector<double> v(ms.begin(), ms.end());
          us[r][e] = 1000.0 * median(v);
        }
      }
      // Auto's bits (poisoned output first) and its error against float64 on the first and last rows.
      SMK_CUDA_CHECK(cudaMemset(dx_ref, 0xff, bytes));
      call(0, dx_ref);
      SMK_CUDA_CHECK(cudaMemcpy(host_ref, dx_ref, bytes, cudaMemcpyDeviceToHost));
      double err = 0, scale = 0;
      {
        std::vector<unsigned char> hy(static_cast<std::size_t>(c.n) * smk::dtype_size(c.t)), hdy(hy.size());
        for (const std::int64_t row : {std::int64_t{0}, c.rows - 1}) {
          const std::size_t off = static_cast<std::size_t>(row * c.n) * smk::dtype_size(c.t);
          SMK_CUDA_CHECK(cudaMemcpy(hy.data(), static_cast<unsigned char*>(y) + off, hy.size(), cudaMemcpyDeviceToHost));
          SMK_CUDA_CHECK(cudaMemcpy(hdy.data(), static_cast<unsigned char*>(dy) + off, hy.size(), cudaMemcpyDeviceToHost));
          double s = 0;
          for (std::int64_t j = 0; j < c.n; ++j)
            s += log ? host_value(hdy.data(), j, c.t) : host_value(hdy.data(), j, c.t) * host_value(hy.data(), j, c.t);
          for (std::int64_t j = 0; j < c.n; ++j) {
            const double yv = host_value(hy.data(), j, c.t), dv = host_value(hdy.data(), j, c.t);
            const double want = log ? dv - std::exp(yv) * s : yv * (dv - s);
            const double got = host_value(host_ref + off, j, c.t);
            err = std::max(err, std::isfinite(got) ? std::fabs(got - want) : INFINITY);
            scale = std::max(scale, std::fabs(want));
          }
        }
      }
      const double rel = err / std::max(scale, 1e-30), gate = c.t == DType::f32 ? 1e-5 : 1e-2;
      const double auto_us = median({us[0][0], us[1][0], us[2][0]});
      const double tbs = 3.0 * static_cast<double>(bytes) / (auto_us * 1e-6) / 1e12;
      std::printf("  auto            %9.2f us (rounds %.2f %.2f %.2f) %.2f TB/s  ref err %.2e of max|dx| %s\n", auto_us,
                  us[0][0], us[1][0], us[2][0], tbs, rel, rel <= gate ? "ok" : "OVER GATE");
      if (!(rel <= gate)) ++failures;
      for (std::size_t k = 0; k < sets.size(); ++k) {
        const int e = static_cast<int>(k) + 1;
        std::vector<double> ratio(rounds);
        for (int r = 0; r < rounds; ++r) ratio[r] = us[r][e] / us[r][0];
        SMK_CUDA_CHECK(cudaMemset(dx, 0xff, bytes));
        call(sets[k].hints, dx);
        SMK_CUDA_CHECK(cudaMemcpy(host_got, dx, bytes, cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(host_ref, host_got, bytes) == 0;
        if (!same) ++failures;
        const double med = median(ratio);
        std::printf("  %2d %-16s %8.2f us  ratio %.4f (%.4f-%.4f)  bits %s\n", sets[k].hints, sets[k].name,
                    median({us[0][e], us[1][e], us[2][e]}), med, *std::min_element(ratio.begin(), ratio.end()),
                    *std::max_element(ratio.begin(), ratio.end()), same ? "same" : "DIFFER");
        Sum& s = summary[{kernel, sets[k].hints}];
        char buf[96];
        std::snprintf(buf, sizeof buf, " %s:%s:%s %.3f", smk::dtype_name(c.t), shape, log ? "L" : "S", med);
        s.by_case += buf;
        s.worst = std::max(s.worst, med);
      }
      std::fflush(stdout);
    }
    for (void* p : {x, y, dy, dx_ref, dx}) cudaFree(p);
  }
  for (const auto& [key, s] : summary) {
    const char* name = "?";
    for (const Set& t : kSets)
      if (t.hints == key.second) name = t.name;
    std::printf("summary %s set %d %s: max %.4f |%s\n", kKernelName[key.first], key.second, name, s.worst,
                s.by_case.c_str());
  }
  std::printf("tune_bwd20: %s (%d failures)\n", failures == 0 ? "all bits same, every set taken" : "FAILED", failures);
  cudaFreeHost(host_ref);
  cudaFreeHost(host_got);
  cudaFree(flush);
  return failures == 0 ? 0 : 1;
}
