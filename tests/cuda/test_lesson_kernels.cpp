// The lesson's kernels on the GPU, judged against the CPU double reference with outputs poisoned first, and the
// public dispatch routing CUDA tensors to them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/cuda/lesson.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"
#include "softmaxkit/matmul.hpp"
#include "softmaxkit/softmax.hpp"
#include "support/gpu.hpp"

namespace {

using smk::TensorView;
using smk::cuda::DeviceBuffer;
constexpr double kU = 5.9604644775390625e-8;

// The float64 reference, kept in double so the comparison does not add the 0.5u of rounding it to float.
std::vector<double> reference_softmax(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  const std::vector<double> xd(x.begin(), x.end());
  std::vector<double> y(x.size());
  smk::cpu::reference::softmax(TensorView::of(y.data(), {rows, cols}), TensorView::of(xd.data(), {rows, cols}));
  return y;
}

TEST(LessonKernels, ShiftedSoftmaxMatchesReference) {
  SMK_REQUIRE_GPU();
  std::mt19937 rng(5);
  for (std::int64_t cols : {1, 2, 3, 31, 33, 1025}) {
    for (std::int64_t rows : {1, 7, 300}) {
      std::normal_distribution<float> dist(0, 6);
      std::vector<float> x(rows * cols);
      for (auto& v : x) v = dist(rng) + (rows == 7 ? 1000.0f : 0.0f);
      auto in = DeviceBuffer<float>::from_host(x);
      DeviceBuffer<float> out(x.size());
      out.fill_bytes(0xFF);  // NaN poison: an element left unwritten fails below
      smk::cuda::lesson::softmax_rows_shifted(out.data(), in.data(), rows, cols, nullptr);
      const auto got = out.to_host();
      const auto want = reference_softmax(x, rows, cols);
      // The lesson kernel sums sequentially, so it is not held to the library's pairwise (6 + log2 n)u gate: its
      // bound is exp_diff (expf ≤ 2 ulp ≤ 4u, TwoSum ~u) + a running sum of n positive terms ((n − 1)u) + the
      // reciprocal and product (1.5u): (n + 6)u.
      const double tol = (static_cast<double>(cols) + 6) * kU;
      for (std::size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << "rows=" << rows << " cols=" << cols << " i=" << i;
        if (want[i] > 1e-30)
          ASSERT_LE(std::fabs(got[i] - want[i]) / want[i], tol) << "rows=" << rows << " cols=" << cols << " i=" << i;
      }
    }
  }
}

TEST(LessonKernels, NaiveSoftmaxOverflowsAtLargeScores) {
  SMK_REQUIRE_GPU();
  const std::vector<float> x = {1, 2, 3, 1000, 1001, 1002};
  auto in = DeviceBuffer<float>::from_host(x);
  DeviceBuffer<float> out(6);
  out.fill_bytes(0x00);
  smk::cuda::lesson::softmax_rows_naive(out.data(), in.data(), 2, 3, nullptr);
  const auto y = out.to_host();
  EXPECT_NEAR(y[2], 0.6652410f, 1e-6f);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
}

TEST(LessonKernels, ShiftedSoftmaxFollowsTheContract) {
  SMK_REQUIRE_GPU();
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> x = {-inf, -inf, 1, inf, 1, nan, -inf, 0};
  auto in = DeviceBuffer<float>::from_host(x);
  DeviceBuffer<float> out(8);
  for (auto policy : {smk::EmptyRowPolicy::nan, smk::EmptyRowPolicy::zeros}) {
    out.fill_bytes(0x7F);
    smk::cuda::lesson::softmax_rows_shifted(out.data(), in.data(), 4, 2, nullptr, policy);
    const auto y = out.to_host();
    if (policy == smk::EmptyRowPolicy::nan) EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    else EXPECT_TRUE(y[0] == 0.0f && y[1] == 0.0f);
    EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]));
    EXPECT_TRUE(std::isnan(y[4]) && std::isnan(y[5]));
    EXPECT_EQ(y[6], 0.0f);
    EXPECT_EQ(y[7], 1.0f);
  }
}

TEST(LessonKernels, MatmulProducesLessonValues) {
  SMK_REQUIRE_GPU();
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12}, x = {1, 2, 3};
  auto da = DeviceBuffer<float>::from_host(a), db = DeviceBuffer<float>::from_host(b),
       dx = DeviceBuffer<float>::from_host(x);
  DeviceBuffer<float> dout(4), dy(2);
  dout.fill_bytes(0xFF);
  dy.fill_bytes(0xFF);
  const auto dev = smk::Device::cuda(0);
  smk::matmul(TensorView::of(dout.data(), {2, 2}, dev), TensorView::of(da.data(), {2, 3}, dev),
              TensorView::of(db.data(), {3, 2}, dev));
  smk::matvec(TensorView::of(dy.data(), {2}, dev), TensorView::of(da.data(), {2, 3}, dev),
              TensorView::of(dx.data(), {3}, dev));
  EXPECT_EQ(dout.to_host(), (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(dy.to_host(), (std::vector<float>{14, 32}));
}

TEST(LessonKernels, PublicDispatchRunsOnTheGpu) {
  SMK_REQUIRE_GPU();
  const std::vector<float> x = {1, 2, 3, 0, 0, 0};
  auto in = DeviceBuffer<float>::from_host(x);
  DeviceBuffer<float> out(6);
  out.fill_bytes(0xFF);
  const auto dev = smk::Device::cuda(0);
  smk::softmax(TensorView::of(out.data(), {2, 3}, dev), TensorView::of(in.data(), {2, 3}, dev));
  const auto y = out.to_host();
  const auto want = reference_softmax(x, 2, 3);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(y[i], want[i], (3 + 6) * kU * want[i]);
  DeviceBuffer<float> lse(2), logp(6);
  lse.fill_bytes(0xFF);
  logp.fill_bytes(0xFF);
  smk::logsumexp(TensorView::of(lse.data(), {2}, dev), TensorView::of(in.data(), {2, 3}, dev));
  smk::log_softmax(TensorView::of(logp.data(), {2, 3}, dev), TensorView::of(in.data(), {2, 3}, dev));
  const auto l = lse.to_host(), lp = logp.to_host();
  EXPECT_NEAR(l[0], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 8 * kU * 3.5);
  EXPECT_NEAR(l[1], std::log(3.0), 8 * kU);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(lp[i], std::log(want[i]), 8 * kU * 3.5);
  // Requests the lesson's kernels cannot serve are refused by name, not computed wrongly, when that path is forced.
  try {
    smk::cuda::ScopedSoftmaxPath lesson(smk::cuda::SoftmaxPath::lesson_row_per_thread);
    smk::softmax(TensorView::strided(out.data(), smk::DType::f32, dev, {3, 2}, {1, 3}),
                 TensorView::of(in.data(), {3, 2}, dev));
    FAIL();
  } catch (const smk::Error& e) {
    EXPECT_EQ(e.code(), smk::ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos);
  }
}

}  // namespace
