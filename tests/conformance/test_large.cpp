// 64-bit indexing on the device (CTest label gpu-large; skipped without a GPU): more than 2^31 elements in total,
// and one row of more than 2^31 elements, on every GPU kernel path (strided_inner: rows along a non-unit-stride
// dimension whose offsets pass 2^31; see kStridedCases). An index kept in 32 bits wraps past 2^31 and
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

// outer × n × inner, reduced over n (dim 1). inner = 1 is the usual [rows, n] layout reduced over its last dimension;
// inner > 1 is the layout strided_inner exists for (the reduced dimension not unit-stride). Row r is
// (r / inner, r % inner); its element i sits at flat index (r / inner)·n·inner + i·inner + r % inner.
struct LargeCase {
  const char* name;
  std::int64_t outer, n, inner;
  RowForm (*form)(std::int64_t row, std::int64_t n);
  std::int64_t rows() const { return outer * inner; }
  std::int64_t total() const { return outer * n * inner; }
};

RowForm many_rows_form(std::int64_t row, std::int64_t n) { return {{{row % n, static_cast<double>(row % 7)}}}; }
RowForm one_row_form(std::int64_t, std::int64_t n) {
  return {{{0, 1}, {k2p31 - 1, 2}, {k2p31, 3}, {n - 1, 4}}};
}

const LargeCase kCases[] = {
    {"65537_rows_of_32771", 65537, 32771, 1, &many_rows_form},  // 2^31 + 229379 elements
    {"one_row_of_2p31_plus_5", 1, k2p31 + 5, 1, &one_row_form},
};
// strided_inner walks a row with `depth` (≤ 16) threads of one block, so one contiguous row of 2^31 elements would
// take it minutes and [rows, n] rows (inner = 1) leave its coalescing unused; the dispatcher sends it only reductions
// over a non-unit-stride dimension. Its 64-bit cases are that layout: element offsets i·inner past 2^31 within one
// row (a row spanning more than 2^31 positions of memory), and row bases outer·n·inner past 2^31.
const LargeCase kStridedCases[] = {
    {"1x65539x32771_over_dim1", 1, 65539, 32771, &many_rows_form},  // rows span 65538·32771 > 2^31 positions
    {"2x32771x32771_over_dim1", 2, 32771, 32771, &many_rows_form},  // 2^31 + 393234 elements
};

class LargeIndexing : public ::testing::TestWithParam<Backend> {};

TEST_P(LargeIndexing, EveryElementOfHugeTensors) {
  SMK_REQUIRE_GPU();
  const Backend& b = GetParam();
  int applicable = 0;
  std::string not_applicable;
  const bool strided = b.path == cuda::SoftmaxPath::strided_inner;
  std::vector<LargeCase> cases;
  if (strided) cases.assign(std::begin(kStridedCases), std::end(kStridedCases));
  else cases.assign(std::begin(kCases), std::end(kCases));
  for (const LargeCase& c : cases) {
    if (c.rows() == 1 && b.path == cuda::SoftmaxPath::lesson_row_per_thread) {
      not_applicable += std::string(" ") + c.name + " (the lesson's one-thread-per-row kernels would take minutes)";
      continue;
    }
    const std::int64_t total = c.total(), rows = c.rows(), lines = c.outer * c.n;
    auto flat = [&](std::int64_t r, std::int64_t i) { return (r / c.inner) * c.n * c.inner + i * c.inner + r % c.inner; };
    SCOPED_TRACE(c.name);
    std::vector<RowForm> forms(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) forms[r] = c.form(r, c.n);
    std::unique_ptr<float[]> host(new float[total]);
    parallel_for(lines, [&](std::int64_t q0, std::int64_t q1) {
      std::fill(host.get() + q0 * c.inner, host.get() + q1 * c.inner, 0.0f);
    });
    for (std::int64_t r = 0; r < rows; ++r)
      for (const Spike& k : forms[r].spikes) host[flat(r, k.pos)] = static_cast<float>(k.value);
    auto din = DeviceBuffer<float>::from_host({host.get(), static_cast<std::size_t>(total)});
    host.reset();  // the checks use the closed forms: keep host memory to one output copy per process
    DeviceBuffer<float> dout(static_cast<std::size_t>(total));
    std::unique_ptr<float[]> got(new float[total]);
    const TensorView in = c.inner == 1 ? TensorView::of(din.data(), {c.outer, c.n}, Device::cuda(0))
                                       : TensorView::of(din.data(), {c.outer, c.n, c.inner}, Device::cuda(0));

    for (Op op : kAllOps) {
      if (op == Op::log_softmax && rows > 1) continue;  // softmax covers the many-rows layout; saves device time
      const bool reduce = op == Op::logsumexp;
      dout.fill_bytes(0xFF);
      TensorView out = c.inner == 1 ? TensorView::of(dout.data(), {c.outer, c.n}, Device::cuda(0))
                                    : TensorView::of(dout.data(), {c.outer, c.n, c.inner}, Device::cuda(0));
      if (reduce)
        out = c.inner == 1 ? TensorView::of(dout.data(), {c.outer}, Device::cuda(0))
                           : TensorView::of(dout.data(), {c.outer, c.inner}, Device::cuda(0));
      SoftmaxOptions dim1;
      dim1.dim = 1;
      try {
        cuda::ScopedSoftmaxPath force(b.path);
        if (op == Op::softmax) smk::softmax(out, in, dim1);
        else if (op == Op::log_softmax) smk::log_softmax(out, in, dim1);
        else smk::logsumexp(out, in, dim1);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        not_applicable += std::string(" ") + c.name + "/" + op_name(op) + " (" + e.what() + ")";
        continue;
      }
      ++applicable;
      SMK_CUDA_CHECK(cudaMemcpy(got.get(), dout.data(), (reduce ? rows : total) * sizeof(float), cudaMemcpyDeviceToHost));

      std::atomic<std::int64_t> failures{0};
      std::atomic<std::int64_t> first_bad{-1};
      auto bad = [&](std::int64_t index) {
        if (failures++ == 0) first_bad = index;
      };
      if (reduce) {
        parallel_for(rows, [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r) {
            const long double lse = forms[r].max() + std::log(forms[r].sum(c.n));
            if (!(std::fabs(got[r] - lse) <= lse_gate(c.n, b.sum_model, lse))) bad(r);
          }
        });
      } else {
        // The zeros of a row share one exact value; each spike has its own. Checked in memory order, line by line
        // (a line: the inner positions of one (outer, i)), so the host walks the 8 GiB output once.
        std::vector<long double> zero_exact(static_cast<std::size_t>(rows));
        std::vector<double> zero_gate(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) {
          const long double l = forms[r].sum(c.n), m = forms[r].max();
          zero_exact[r] = op == Op::softmax ? std::exp(-m) / l : -m - std::log(l);
          zero_gate[r] = op == Op::softmax ? softmax_gate(c.n, b.sum_model) * static_cast<double>(zero_exact[r])
                                           : log_softmax_gate(c.n, b.sum_model, zero_exact[r]);
        }
        parallel_for(lines, [&](std::int64_t q0, std::int64_t q1) {
          for (std::int64_t q = q0; q < q1; ++q) {
            const std::int64_t o = q / c.n, i = q - o * c.n;
            for (std::int64_t col = 0; col < c.inner; ++col) {
              const std::int64_t r = o * c.inner + col;
              const float y = got[q * c.inner + col];
              long double exact = zero_exact[r];
              double gate = zero_gate[r];
              for (const Spike& k : forms[r].spikes) {
                if (k.pos != i) continue;
                const long double l = forms[r].sum(c.n), m = forms[r].max();
                exact = op == Op::softmax ? std::exp(k.value - m) / l : (k.value - m) - std::log(l);
                gate = op == Op::softmax ? softmax_gate(c.n, b.sum_model) * static_cast<double>(exact)
                                         : log_softmax_gate(c.n, b.sum_model, exact);
              }
              if (!(std::fabs(y - exact) <= gate)) bad(q * c.inner + col);
            }
          }
        });
      }
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
