// tune_reg20 (sessions 20-21, helpers reg20 and reg21; issue 3): since reg21, a confirmation tool for what reg20's run
// chose. lse_stream's f32 plain-form T128 rows of at most 4096 take lse_block_kernel built for 1536 threads an SM
// (lse_stream.cu kLseF32T128WideOccMaxN; lse_rows_occ.hpp); this times the library's choice ("auto", the public entry
// point) beside the same call with the 1024 kernel forced (lse_stream_wide_occ() = false, the kernel before reg21).
// Not a test: a one-off A/B tool (tests/CMakeLists.txt), removed once its result is in the notebook. reg20's variants
// (16-bit at 1152 / 1280, L16, f32 at 1280 / 2048) were removed with their hooks.
//   usage: tune_reg20 [--reps N]
// Cases: f32 logsumexp and the state, plain form (contiguous rows), n = 2048, 3072, 4096 (the 1536 kernel) and 4097,
// 6144 (the 1024 kernel either way: a control whose ratio is the method's noise), rows 1, 64 and many (≥ 256 MB read).
// Per case: which kernel serves (one call: lse_stream_launch_count, lse_stream_last_config, and
// lse_stream_wide_occ_launch_count's rise); a case the dispatcher sends elsewhere is skipped.
// Method (tune_reg20's since reg20): before each timed launch a cudaMemsetAsync of 240 MB (L2 flushed), CUDA events
// around the launch alone, the median of N launches (default 31) after 3 untimed; 3 rounds, the order reversed in round
// 2; per round the ratio auto / forced 1024, printed as median (min-max) over the rounds (< 1: the rule's kernel is
// faster).
// Bits: auto's output against the forced form's, bit for bit over the whole call (both of the state's outputs).
// Input: uniform in [16, 24) (tune_softmax's scores), one buffer.
// Exit: 0 all well; 1 if any output differs from the forced form's bits; 4 if a case took the other kernel than the
// rule says (the 1536 kernel at n ≤ 4096 only); 2 on bad arguments; 3 without a device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/lse_rows_occ.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/softmax.hpp"

namespace {

using namespace smk::cuda::kernels;
using smk::DType;

constexpr std::size_t kFlushBytes = std::size_t{240} << 20;
constexpr double kReadTBs = 4.42;  // the read ceiling lse_stream.cu's floors use

struct Ctx {
  float* x = nullptr;    // the input, max_elems floats
  float* out = nullptr;  // logsumexp / the state's m, then l at out + rows
  void* flush = nullptr;
  int reps = 31;
};

void call_auto(Op op, std::int64_t rows, std::int64_t n, const Ctx& c) {
  const smk::Device dev = smk::Device::cuda(0);
  const smk::TensorView in = smk::TensorView::contiguous(c.x, DType::f32, dev, {rows, n});
  const smk::TensorView m = smk::TensorView::contiguous(c.out, DType::f32, dev, {rows});
  if (op == Op::logsumexp) return smk::logsumexp(m, in);
  smk::softmax_state(m, smk::TensorView::contiguous(c.out + rows, DType::f32, dev, {rows}), in);
}

// The median of c.reps launches (µs), each after the L2 flush, events around the launch alone; enqueued together, one
// synchronisation at the end (so the host's enqueueing never sits between a start event and its launch).
template <typename Launch>
double timed_median_us(const Ctx& c, Launch&& launch) {
  for (int i = 0; i < 3; ++i) launch();
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(c.reps));
  for (cudaEvent_t& e : ev) SMK_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < c.reps; ++i) {
    SMK_CUDA_CHECK(cudaMemsetAsync(c.flush, i & 0xff, kFlushBytes));
    SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i]));
    launch();
    SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1]));
  }
  SMK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < c.reps; ++i) {
    float t = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]));
    ms.push_back(t);
  }
  for (cudaEvent_t& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Fills c.x with n floats uniform in [16, 24) (tune_softmax's xorshift64* stream).
void fill(const Ctx& c, std::size_t n) {
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    host[i] = 8.0f * (static_cast<float>((s * 2685821657736338717ull) >> 40) / 16777216.0f) + 16.0f;
  }
  SMK_CUDA_CHECK(cudaMemcpy(c.x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

int run(int argc, char** argv) {
  Ctx c;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) c.reps = std::max(3, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: tune_reg20 [--reps N]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "tune_reg20: no CUDA device; nothing timed\n");
    return 3;
  }
  cudaDeviceProp prop{};
  SMK_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("tune_reg20 (reg21 confirmation): %s, %d SMs; median of %d launches, L2 flushed (240 MB memset) before "
              "each, 3 rounds; ratio = auto / forced 1024\n",
              prop.name, prop.multiProcessorCount, c.reps);
  for (bool wide : {false, true}) {
    const LseRowOccAttrs a = lse_stream_f32_t128_attrs(wide);
    const std::string rows_s = wide ? " (rows <= " + std::to_string(a.max_n) + ")" : " (longer rows)";
    std::printf("attrs f32 T128 plain @%d%s: %d registers, %d B local, %d blocks of %d an SM = %d threads\n",
                wide ? 1536 : 1024, rows_s.c_str(), a.regs, a.local_bytes, a.blocks_per_sm, a.block,
                a.blocks_per_sm * a.block);
  }
  std::fflush(stdout);

  const std::int64_t max_wide_n = lse_stream_f32_t128_attrs(true).max_n;
  struct Shape {
    std::int64_t rows, n;
  };
  // Many rows: reg20's 65536×2048 (512 MB) and 16384×4096 (256 MB), 32768×3072 (384 MB), 16384 rows past 4096.
  std::vector<Shape> shapes;
  for (std::int64_t n : {2048, 3072, 4096, 4097, 6144}) {
    const std::int64_t many = n == 2048 ? 65536 : n == 3072 ? 32768 : 16384;
    for (std::int64_t rows : {std::int64_t{1}, std::int64_t{64}, many}) shapes.push_back({rows, n});
  }
  std::size_t max_elems = 0, max_rows = 0;
  for (const Shape& s : shapes) {
    max_elems = std::max(max_elems, static_cast<std::size_t>(s.rows * s.n));
    max_rows = std::max(max_rows, static_cast<std::size_t>(s.rows));
  }
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&c.x), max_elems * sizeof(float)));
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&c.out), 2 * max_rows * sizeof(float)));
  SMK_CUDA_CHECK(cudaMalloc(&c.flush, kFlushBytes));
  fill(c, max_elems);

  int differ = 0, unexpected = 0;
  std::vector<std::string> summary;
  for (Op op : {Op::logsumexp, Op::state}) {
    const char* op_s = op == Op::logsumexp ? "logsumexp" : "state";
    for (const Shape& s : shapes) {
      const auto [rows, n] = s;
      char shape[48];
      std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
      // Which kernel serves the call.
      const std::uint64_t c0 = lse_stream_launch_count(), w0 = lse_stream_wide_occ_launch_count();
      lse_stream_last_config().lanes.store(-1);
      call_auto(op, rows, n, c);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      if (lse_stream_launch_count() != c0 + 1 || lse_stream_last_config().lanes.load() != 0) {
        std::printf("case f32 %-9s %-12s served by another kernel (not lse_stream's T128): skipped\n", op_s, shape);
        continue;
      }
      const bool wide = lse_stream_wide_occ_launch_count() == w0 + 1;
      const bool want_wide = n <= max_wide_n;
      if (wide != want_wide) ++unexpected;
      auto launch = [&](bool forced) {
        lse_stream_wide_occ() = !forced;
        call_auto(op, rows, n, c);
        lse_stream_wide_occ() = true;
      };
      // Bits: auto's output against the forced form's, outputs poisoned first.
      const std::size_t floats = static_cast<std::size_t>(rows) * (op == Op::state ? 2 : 1);
      std::vector<std::uint32_t> ref(floats), got(floats);
      for (int i = 0; i < 2; ++i) {
        SMK_CUDA_CHECK(cudaMemset(c.out, 0xFF, floats * 4));
        launch(i == 1);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        SMK_CUDA_CHECK(cudaMemcpy(i == 0 ? ref.data() : got.data(), c.out, floats * 4, cudaMemcpyDeviceToHost));
      }
      std::size_t d = 0;
      for (std::size_t j = 0; j < floats; ++j) d += ref[j] != got[j];
      const std::string bits =
          d == 0 ? "same bits" : "DIFFER in " + std::to_string(d) + " of " + std::to_string(floats);
      differ += d != 0;
      // Timing: 3 rounds, round 2 in reverse order (forced first).
      std::vector<double> us[2];
      for (int round = 0; round < 3; ++round)
        for (int j = 0; j < 2; ++j) {
          const int i = round == 1 ? 1 - j : j;
          us[i].push_back(timed_median_us(c, [&] { launch(i == 1); }));
        }
      std::vector<double> r;
      for (int k = 0; k < 3; ++k) r.push_back(us[0][k] / us[1][k]);
      std::sort(r.begin(), r.end());
      const double a = median(us[0]), f = median(us[1]);
      const double bytes = static_cast<double>(rows) * static_cast<double>(n) * 4.0;
      char line[320];
      std::snprintf(line, sizeof line,
                    "f32 %-9s %-12s auto @%d%s  auto %8.2f us  forced 1024 %8.2f us  ratio %.3f (%.3f-%.3f)  auto "
                    "%.2f TB/s (%.0f %% of read)  %s",
                    op_s, shape, wide ? 1536 : 1024, wide == want_wide ? "" : " (UNEXPECTED)", a, f, r[1], r[0], r[2],
                    bytes / a * 1e-6, 100.0 * bytes / a * 1e-6 / kReadTBs, bits.c_str());
      std::printf("case %s\n", line);
      std::fflush(stdout);
      if (rows > 64) summary.push_back(line);
    }
  }
  for (const std::string& s : summary) std::printf("summary %s\n", s.c_str());
  cudaFree(c.x);
  cudaFree(c.out);
  cudaFree(c.flush);
  std::printf("tune_reg20: %s; %s\n",
              differ ? "SOME OUTPUT DIFFERS FROM THE FORCED FORM'S BITS" : "every output the forced form's bits",
              unexpected ? "SOME CASE TOOK THE OTHER KERNEL THAN THE RULE"
                         : "the 1536 kernel served exactly the cases n <= 4096");
  return differ ? 1 : unexpected ? 4 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_reg20: %s\n", e.what());
    return 1;
  }
}
