// tune_bwd20 (bwd20 in session 20, trimmed by bwd21 in session 21 to a confirmation tool; issue 3): the two f32 kernels
// that read y and dy evict-last by default since bwd21 (backward.cu kBackwardDenseE32Hints, kBackwardBlockF32Hints:
// ld.global.L1::evict_last with an L2 evict-last policy, the same bits), each timed as the library runs it ("auto",
// BackwardHintTuning::hints -1) beside its plain form forced (hints 0), at the lengths and row counts each serves:
//   dense_e32  backward_warp_dense_kernel<32, 2>: f32 rows of exactly 1024 (dense for E32 L32); 32768 rows (bwd20's
//              shape), 8192, 64 and 2.
//   block_f32  backward_block_kernel<float, unstaged, 16, 512, 2>'s dense form: f32 rows of 512·k, 1536 … 8192 under
//              the dispatcher (one block a row); 16384×4096 (bwd20's shape), 16384×1536, 16384×2048, 8192×6144,
//              8192×8192 (302-805 MB of traffic each), and 64 rows and 2 at 1536, 4096 and 8192.
// A single row is served by neither (one row has no row dimension, so rows_dense refuses it: the general kernels,
// hints or not): 1×1024 and 1×4096 run as the method's control (the same kernel timed twice under the two settings).
// Both ops (softmax and log-softmax backward) on every shape. BackwardHintLast must show the kernel and the form each
// call took (the controls: neither kernel), else the tool fails. Not a test: a one-off A/B tool (tests/CMakeLists.txt),
// removed once its result is in the notebook.
//   usage: tune_bwd20 [--reps N]
// Method (bwd20's): before each timed launch a cudaMemsetAsync of 240 MB (the bench's dirty L2), CUDA events around the
// call alone, the median of N launches (default 40) after 3 untimed; 3 rounds, the order reversed in round 2; per
// round the ratio plain / auto, printed as median (min-max) over the rounds (> 1: the shipped hints faster; auto /
// plain, bwd20's direction, beside it). Bits: plain's dx (output poisoned with 0xFF first) byte for byte against
// auto's over the whole call; auto's dx has no poisoned element left and the 16 KB past it still hold the poison.
// Auto's dx against float64 on the first and last rows (max |err| / max |dx|, gate 1e-5). Inputs: x uniform in
// [-4, 4), y = softmax(x) or log_softmax(x) by the library, dy uniform in [-1, 1).
// Prints a "case" line per shape and op, a "summary" line per kernel (the ratios' range over the many-row shapes and
// over the 2- and 64-row ones, bits) and for the controls, and a last line. Exit 1 on a differing bit, a stray or
// missing write, a form not taken or a reference error over the gate; 2 bad arguments; 3 no device. About 10-20 s on
// the H200.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct Case {
  int family;  // the summary line: 1 dense_e32, 2 block_f32, 0 the controls
  int kernel;  // BackwardHintLast::kernel wanted: 1 dense_e32, 2 block_f32, 0 neither
  std::int64_t rows, n;
};
const char* kKernelName[] = {"control", "dense_e32", "block_f32"};

std::uint64_t rng = 0x9E3779B97F4A7C15ull;
inline float uniform(float lo, float hi) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return lo + (hi - lo) * static_cast<float>(static_cast<double>((rng * 2685821657736338717ull) >> 11) /
                                             9007199254740992.0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
};

}  // namespace

int main(int argc, char** argv) {
  int reps = 40;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: tune_bwd20 [--reps N]\n");
      return 2;
    }
  }
  if (reps < 1) return 2;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("tune_bwd20: no CUDA device\n");
    return 3;
  }
  const std::vector<Case> cases = {
      {1, 1, 32768, 1024}, {1, 1, 8192, 1024}, {1, 1, 64, 1024},   {1, 1, 2, 1024},   {2, 2, 16384, 4096},
      {2, 2, 16384, 1536}, {2, 2, 16384, 2048}, {2, 2, 8192, 6144}, {2, 2, 8192, 8192}, {2, 2, 64, 1536},
      {2, 2, 2, 1536},     {2, 2, 64, 4096},    {2, 2, 2, 4096},    {2, 2, 64, 8192},   {2, 2, 2, 8192},
      {0, 0, 1, 1024},     {0, 0, 1, 4096}};
  const Op ops[] = {Op::softmax_backward, Op::log_softmax_backward};
  const int rounds = 3;
  const std::size_t flush_bytes = std::size_t{240} << 20, guard = 4096;  // guard: f32 elements past dx
  std::size_t max_count = 0;
  for (const Case& c : cases) max_count = std::max(max_count, static_cast<std::size_t>(c.rows * c.n));
  void* flush = nullptr;
  SMK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  float *x = nullptr, *y = nullptr, *dy = nullptr, *dx_ref = nullptr, *dx = nullptr;
  for (float** p : {&x, &y, &dy}) SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(p), max_count * sizeof(float)));
  for (float** p : {&dx_ref, &dx})
    SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(p), (max_count + guard) * sizeof(float)));
  {  // one set of inputs; each case takes its first rows · n elements
    std::vector<float> h(max_count);
    for (float& v : h) v = uniform(-4.0f, 4.0f);
    SMK_CUDA_CHECK(cudaMemcpy(x, h.data(), max_count * sizeof(float), cudaMemcpyHostToDevice));
    for (float& v : h) v = uniform(-1.0f, 1.0f);
    SMK_CUDA_CHECK(cudaMemcpy(dy, h.data(), max_count * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::uint32_t *host_ref = nullptr, *host_got = nullptr;
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_ref), (max_count + guard) * 4));
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_got), (max_count + guard) * 4));
  cudaEvent_t start, stop;
  SMK_CUDA_CHECK(cudaEventCreate(&start));
  SMK_CUDA_CHECK(cudaEventCreate(&stop));
  const smk::Device dev = smk::Device::cuda(0);
  int failures = 0;
  struct Sum {
    Range many, few;  // plain / auto medians: shapes of many rows; of 2 and 64 rows (the controls: 1 row)
    int cases = 0, same = 0;
    std::string by_case;
  };
  Sum sums[3];

  std::printf("tune_bwd20 (bwd21 confirmation): reps %d, rounds %d, 240 MB memset before each timed launch; "
              "ratio = plain / auto (> 1: the shipped hints faster)\n",
              reps, rounds);
  for (const Case& c : cases) {
    const std::size_t count = static_cast<std::size_t>(c.rows * c.n), bytes = count * sizeof(float);
    auto view = [&](void* p) { return smk::TensorView::contiguous(p, DType::f32, dev, {c.rows, c.n}); };
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
        backward_hint_tuning().hints = -1;
      };
      const char* opname = log ? "logsm_bwd" : "sm_bwd";
      // Which kernel and form each entry takes (entry 0 auto: hints -1, entry 1 plain: hints 0).
      const int entry_hints[2] = {-1, 0}, want_form[2] = {c.kernel != 0 ? 1 : 0, 0};
      bool taken = true;
      for (int e = 0; e < 2; ++e) {
        call(entry_hints[e], dx);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        const int k = backward_hint_last().kernel.load(), h = backward_hint_last().hints.load();
        if (k != c.kernel || h != want_form[e]) {
          std::printf("FAIL %s %s %s: %s took kernel %d form %d, want %d form %d\n", kKernelName[c.family], shape,
                      opname, e == 0 ? "auto" : "plain", k, h, c.kernel, want_form[e]);
          taken = false;
        }
      }
      if (!taken) {
        ++failures;
        continue;
      }
      std::vector<std::vector<double>> us(rounds, std::vector<double>(2));
      std::vector<float> ms(reps);
      for (int r = 0; r < rounds; ++r) {
        for (int j = 0; j < 2; ++j) {
          const int e = r % 2 == 0 ? j : 1 - j;
          for (int i = 0; i < 3; ++i) call(entry_hints[e], dx);
          for (int i = 0; i < reps; ++i) {
            SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
            SMK_CUDA_CHECK(cudaEventRecord(start));
            call(entry_hints[e], dx);
            SMK_CUDA_CHECK(cudaEventRecord(stop));
            SMK_CUDA_CHECK(cudaEventSynchronize(stop));
            SMK_CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
          }
          us[r][e] = 1000.0 * median(std::vector<double>(ms.begin(), ms.end()));
        }
      }
      // Bits: auto's and plain's dx, each over a poisoned buffer.
      const std::size_t span = (count + guard) * 4;
      SMK_CUDA_CHECK(cudaMemset(dx_ref, 0xff, span));
      call(-1, dx_ref);
      SMK_CUDA_CHECK(cudaMemcpy(host_ref, dx_ref, span, cudaMemcpyDeviceToHost));
      SMK_CUDA_CHECK(cudaMemset(dx, 0xff, span));
      call(0, dx);
      SMK_CUDA_CHECK(cudaMemcpy(host_got, dx, span, cudaMemcpyDeviceToHost));
      const bool same = std::memcmp(host_ref, host_got, span) == 0;
      std::size_t unwritten = 0, stray = 0;
      for (std::size_t i = 0; i < count; ++i) unwritten += host_ref[i] == 0xffffffffu;
      for (std::size_t i = count; i < count + guard; ++i) stray += host_ref[i] != 0xffffffffu;
      // Auto's dx against float64 on the first and last rows.
      double err = 0, scale = 0;
      {
        std::vector<float> hy(static_cast<std::size_t>(c.n)), hdy(hy.size());
        for (const std::int64_t row : {std::int64_t{0}, c.rows - 1}) {
          const std::size_t off = static_cast<std::size_t>(row * c.n);
          SMK_CUDA_CHECK(cudaMemcpy(hy.data(), y + off, c.n * sizeof(float), cudaMemcpyDeviceToHost));
          SMK_CUDA_CHECK(cudaMemcpy(hdy.data(), dy + off, c.n * sizeof(float), cudaMemcpyDeviceToHost));
          double s = 0;
          for (std::int64_t j = 0; j < c.n; ++j) s += log ? double{hdy[j]} : double{hdy[j]} * double{hy[j]};
          for (std::int64_t j = 0; j < c.n; ++j) {
            const double yv = hy[j], dv = hdy[j];
            const double want = log ? dv - std::exp(yv) * s : yv * (dv - s);
            float got;
            std::memcpy(&got, host_ref + off + j, 4);
            err = std::max(err, std::isfinite(got) ? std::fabs(double{got} - want) : INFINITY);
            scale = std::max(scale, std::fabs(want));
          }
        }
      }
      const double rel = err / std::max(scale, 1e-30);
      const bool ok = same && unwritten == 0 && stray == 0 && rel <= 1e-5;
      if (!ok) ++failures;
      std::vector<double> ratio(rounds);
      for (int r = 0; r < rounds; ++r) ratio[r] = us[r][1] / us[r][0];
      const double med = median(ratio);
      const double auto_us = median({us[0][0], us[1][0], us[2][0]}), plain_us = median({us[0][1], us[1][1], us[2][1]});
      const double tbs = 3.0 * static_cast<double>(bytes) / (auto_us * 1e-6) / 1e12;
      std::printf("case %-9s %-10s %-9s auto %8.2f us (%.2f TB/s)  plain %8.2f us  plain/auto %.4f (%.4f-%.4f)  "
                  "auto/plain %.4f  bits %s%s%s  ref err %.2e%s\n",
                  kKernelName[c.family], shape, opname, auto_us, tbs, plain_us, med,
                  *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
                  1.0 / med, same ? "same" : "DIFFER", unwritten ? " UNWRITTEN" : "", stray ? " STRAY" : "", rel,
                  rel <= 1e-5 ? "" : " OVER GATE");
      std::fflush(stdout);
      Sum& s = sums[c.family];
      (c.rows >= 1024 ? s.many : s.few).add(med);
      ++s.cases;
      s.same += same ? 1 : 0;
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s:%s %.3f", shape, log ? "L" : "S", med);
      s.by_case += buf;
    }
  }
  for (int k = 1; k <= 2; ++k) {
    const Sum& s = sums[k];
    std::printf("summary %s: plain/auto many rows %.4f-%.4f, 2 and 64 rows %.4f-%.4f; bits same %d/%d |%s\n",
                kKernelName[k], s.many.lo, s.many.hi, s.few.lo, s.few.hi, s.same, s.cases, s.by_case.c_str());
  }
  std::printf("summary control (1 row, the general kernels under both settings): plain/auto %.4f-%.4f; bits same "
              "%d/%d |%s\n",
              sums[0].few.lo, sums[0].few.hi, sums[0].same, sums[0].cases, sums[0].by_case.c_str());
  std::printf("tune_bwd20: %s (%d failures)\n", failures == 0 ? "all bits same, every form taken" : "FAILED",
              failures);
  cudaFreeHost(host_ref);
  cudaFreeHost(host_got);
  for (float* p : {x, y, dy, dx_ref, dx}) cudaFree(p);
  cudaFree(flush);
  return failures == 0 ? 0 : 1;
}
