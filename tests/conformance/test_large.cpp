// 64-bit indexing on the device (CTest label gpu-large; skipped without a GPU): more than 2^31 elements in total,
// and one row of more than 2^31 elements, on every GPU kernel path. An index kept in 32 bits wraps past 2^31 and
// reads or writes the wrong element, so every output element is checked, against closed forms: each row is zeros
// except a few known scores, whose softmax, log-softmax and log-sum-exp follow exactly. Outputs are poisoned (NaN)
// before each run. A forced path that refuses the size (Error(unsupported)) is reported as not applicable.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "conformance/harness.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"
#include "softmaxkit/softmax.hpp"
#include "support/gpu.hpp"

namespace smk::conformance {
namespace {

using cuda::DeviceBuffer;
constexpr std::int64_t k2p31 = std::int64_t{1} << 31;

// Runs f(begin, end) over [0, count) on every core (the host side fills and checks 8 GiB arrays).
template <typename F>
void parallel_for(std::int64_t count, F f) {
  const std::int64_t workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const std::int64_t chunk = (count + workers - 1) / workers;
  for (std::int64_t w = 0; w < workers; ++w) {
    const std::int64_t b = w * chunk, e = std::min(count, b + chunk);
    if (b < e) pool.emplace_back([=] { f(b, e); });
  }
  for (auto& t : pool) t.join();
}

// A rows × n tensor of zeros with, in each row, a few scores `spikes` (position, value) — positions may depend
// on the row. The exact results of a row follow from its spikes alone.
struct Spike {
  std::int64_t pos;
  double value;
};
struct RowForm {
  std::vector<Spike> spikes;
  long double sum(std::int64_t n) const {  // Σ exp(x − max), max = largest spike (≥ 0) or 0
    long double m = 0, s = static_cast<long double>(n - static_cast<std::int64_t>(spikes.size()));
    for (const auto& k : spikes) m = std::max<long double>(m, k.value);
    s *= std::exp(-m);
    for (const auto& k : spikes) s += std::exp(k.value - m);
    return s;
  }
  long double max() const {
    long double m = 0;
    for (const auto& k : spikes) m = std::max<long double>(m, k.value);
    return m;
  }
};

struct LargeCase {
  const char* name;
  std::int64_t rows, n;
  RowForm (*form)(std::int64_t row, std::int64_t n);
};

RowForm many_rows_form(std::int64_t row, std::int64_t n) { return {{{row % n, static_cast<double>(row % 7)}}}; }
RowForm one_row_form(std::int64_t, std::int64_t n) {
  return {{{0, 1}, {k2p31 - 1, 2}, {k2p31, 3}, {n - 1, 4}}};
}

const LargeCase kCases[] = {
    {"65537_rows_of_32771", 65537, 32771, &many_rows_form},  // 2^31 + 229379 elements
    {"one_row_of_2p31_plus_5", 1, k2p31 + 5, &one_row_form},
};

class LargeIndexing : public ::testing::TestWithParam<Backend> {};

TEST_P(LargeIndexing, EveryElementOfHugeTensors) {
  SMK_REQUIRE_GPU();
  const Backend& b = GetParam();
  int applicable = 0;
  std::string not_applicable;
  for (const LargeCase& c : kCases) {
    if (c.rows == 1 && b.path == cuda::SoftmaxPath::lesson_row_per_thread) {
      not_applicable += std::string(" ") + c.name + " (the lesson's one-thread-per-row kernels would take minutes)";
      continue;
    }
    const std::int64_t total = c.rows * c.n;
    SCOPED_TRACE(c.name);
    std::unique_ptr<float[]> host(new float[total]);
    parallel_for(c.rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        float* row = host.get() + r * c.n;
        std::fill(row, row + c.n, 0.0f);
        for (const Spike& k : c.form(r, c.n).spikes) row[k.pos] = static_cast<float>(k.value);
      }
    });
    auto din = DeviceBuffer<float>::from_host({host.get(), static_cast<std::size_t>(total)});
    host.reset();  // the checks use the closed forms: keep host memory to one 8 GiB output copy per process
    DeviceBuffer<float> dout(static_cast<std::size_t>(total));
    std::unique_ptr<float[]> got(new float[total]);
    const TensorView in = TensorView::of(din.data(), {c.rows, c.n}, Device::cuda(0));

    for (Op op : kAllOps) {
      if (op == Op::log_softmax && c.rows > 1) continue;  // softmax covers the many-rows layout; saves device time
      const bool reduce = op == Op::logsumexp;
      dout.fill_bytes(0xFF);
      const TensorView out = reduce ? TensorView::of(dout.data(), {c.rows}, Device::cuda(0))
                                    : TensorView::of(dout.data(), {c.rows, c.n}, Device::cuda(0));
      try {
        cuda::ScopedSoftmaxPath force(b.path);
        if (op == Op::softmax) smk::softmax(out, in);
        else if (op == Op::log_softmax) smk::log_softmax(out, in);
        else smk::logsumexp(out, in);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        not_applicable += std::string(" ") + c.name + "/" + op_name(op) + " (" + e.what() + ")";
        continue;
      }
      ++applicable;
      SMK_CUDA_CHECK(cudaMemcpy(got.get(), dout.data(), (reduce ? c.rows : total) * sizeof(float), cudaMemcpyDeviceToHost));

      std::atomic<std::int64_t> failures{0};
      std::atomic<std::int64_t> first_bad{-1};
      parallel_for(c.rows, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const RowForm f = c.form(r, c.n);
          const long double l = f.sum(c.n), m = f.max();
          auto bad = [&](std::int64_t index) {
            if (failures++ == 0) first_bad = index;
          };
          if (reduce) {
            const long double lse = m + std::log(l);
            if (!(std::fabs(got[r] - lse) <= lse_gate(c.n, b.sum_model, lse))) bad(r);
            continue;
          }
          // The zeros of the row share one exact value; each spike has its own.
          const long double zero_exact = op == Op::softmax ? std::exp(-m) / l : -m - std::log(l);
          const double gate = op == Op::softmax ? softmax_gate(c.n, b.sum_model) * static_cast<double>(zero_exact)
                                                : log_softmax_gate(c.n, b.sum_model, zero_exact);
          const float* y = got.get() + r * c.n;
          for (std::int64_t i = 0; i < c.n; ++i) {
            bool spike = false;
            for (const Spike& k : f.spikes) spike |= k.pos == i;
            if (spike) continue;
            if (!(std::fabs(y[i] - zero_exact) <= gate)) {
              bad(r * c.n + i);
              break;
            }
          }
          for (const Spike& k : f.spikes) {
            const long double exact = op == Op::softmax ? std::exp(k.value - m) / l : (k.value - m) - std::log(l);
            const double g = op == Op::softmax ? softmax_gate(c.n, b.sum_model) * static_cast<double>(exact)
                                               : log_softmax_gate(c.n, b.sum_model, exact);
            if (!(std::fabs(y[k.pos] - exact) <= g)) bad(r * c.n + k.pos);
          }
        }
      });
      EXPECT_EQ(failures.load(), 0) << op_name(op) << ": first wrong element at flat index " << first_bad.load()
                                    << " (got " << got[first_bad.load() < 0 ? 0 : first_bad.load()] << ")";
    }
  }
  if (!not_applicable.empty()) std::cout << "[ N/A      ] on " << b.name << ":" << not_applicable << "\n";
  if (applicable == 0) GTEST_SKIP() << "no large case applies to " << b.name << ":" << not_applicable;
}

INSTANTIATE_TEST_SUITE_P(Gpu, LargeIndexing, ::testing::ValuesIn(gpu_backends()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smk::conformance
