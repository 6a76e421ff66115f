// merge_attention_states on the GPU against the CPU float64 reference: random parts, empty and NaN parts, a
// permuted (strided) LSE layout as attention_forward produces it, in-place accumulation; outputs poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "support/gpu.hpp"

namespace {

using smk::TensorView;
using smk::cuda::DeviceBuffer;

TEST(CudaMergeAttentionStates, MatchesReferenceOnStridedLayouts) {
  SMK_REQUIRE_GPU();
  // O as attention_forward writes it, [S, H, D]; LSE as it writes it, [H, S], viewed as [S, H] with strides (1, S).
  const std::int64_t S = 37, H = 5, D = 96;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> oa(S * H * D), ob(S * H * D), la(H * S), lb(H * S);
  for (auto* v : {&oa, &ob}) for (float& x : *v) x = dist(rng);
  for (auto* v : {&la, &lb}) for (float& x : *v) x = 5 * dist(rng);
  la[0] = -INFINITY;                    // one side empty
  la[1] = lb[1] = -INFINITY;            // both empty
  lb[2] = NAN;                          // poisoned
  for (std::int64_t x = 0; x < D; ++x) oa[x * 1] = NAN;  // garbage O under the empty LSE must not leak
  const auto dev = smk::Device::cuda(0);
  auto d_oa = DeviceBuffer<float>::from_host(oa), d_ob = DeviceBuffer<float>::from_host(ob);
  auto d_la = DeviceBuffer<float>::from_host(la), d_lb = DeviceBuffer<float>::from_host(lb);
  DeviceBuffer<float> d_o(S * H * D), d_l(H * S);
  d_o.fill_bytes(0xFF);
  d_l.fill_bytes(0xFF);
  const auto lse_view = [&](float* p, smk::Device device) {
    return TensorView::strided(p, smk::DType::f32, device, {S, H}, {1, S});
  };
  smk::merge_attention_states(TensorView::of(d_o.data(), {S, H, D}, dev), lse_view(d_l.data(), dev),
                              TensorView::of(d_oa.data(), {S, H, D}, dev), lse_view(d_la.data(), dev),
                              TensorView::of(d_ob.data(), {S, H, D}, dev), lse_view(d_lb.data(), dev));
  const auto o = d_o.to_host(), l = d_l.to_host();
  const std::vector<double> oad(oa.begin(), oa.end()), obd(ob.begin(), ob.end()), lad(la.begin(), la.end()),
      lbd(lb.begin(), lb.end());
  std::vector<double> want_o(S * H * D), want_l(H * S);
  const auto cpu_lse = [&](const double* p) {
    return TensorView::strided(const_cast<double*>(p), smk::DType::f64, smk::Device::cpu(), {S, H}, {1, S});
  };
  smk::cpu::reference::merge_attention_states(TensorView::of(want_o.data(), {S, H, D}), cpu_lse(want_l.data()),
                                              TensorView::of(oad.data(), {S, H, D}), cpu_lse(lad.data()),
                                              TensorView::of(obd.data(), {S, H, D}), cpu_lse(lbd.data()));
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (std::isnan(want_o[i])) {
      EXPECT_TRUE(std::isnan(o[i])) << i;
      continue;
    }
    ASSERT_NEAR(o[i], want_o[i], 1e-5 * (1 + std::fabs(want_o[i]))) << i;
  }
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (std::isnan(want_l[i])) EXPECT_TRUE(std::isnan(l[i])) << i;
    else if (std::isinf(want_l[i])) EXPECT_EQ(l[i], want_l[i]) << i;
    else EXPECT_NEAR(l[i], want_l[i], 4e-7 * (1 + std::fabs(want_l[i]))) << i;
  }
  // Two empty parts: O = 0 exactly (row s = 1, head 0 of the [H, S] LSE is flat index 1).
  for (std::int64_t x = 0; x < D; ++x) EXPECT_EQ(o[(1 * H + 0) * D + x], 0.0f);
}

TEST(CudaMergeAttentionStates, Bf16InPlaceAccumulation) {
  SMK_REQUIRE_GPU();
  const std::int64_t rows = 1000, D = 128;
  std::mt19937 rng(4);
  std::normal_distribution<float> dist(0, 1);
  std::vector<smk::bfloat16_t> acc(rows * D), part(rows * D);
  std::vector<float> lacc(rows), lpart(rows);
  for (auto* v : {&acc, &part}) for (auto& x : *v) x = smk::to_bfloat16(dist(rng));
  for (auto* v : {&lacc, &lpart}) for (float& x : *v) x = 3 * dist(rng);
  const auto dev = smk::Device::cuda(0);
  auto d_acc = DeviceBuffer<smk::bfloat16_t>::from_host(acc), d_part = DeviceBuffer<smk::bfloat16_t>::from_host(part);
  auto d_lacc = DeviceBuffer<float>::from_host(lacc), d_lpart = DeviceBuffer<float>::from_host(lpart);
  smk::merge_attention_states(TensorView::of(d_acc.data(), {rows, D}, dev), TensorView::of(d_lacc.data(), {rows}, dev),
                              TensorView::of(d_acc.data(), {rows, D}, dev), TensorView::of(d_lacc.data(), {rows}, dev),
                              TensorView::of(d_part.data(), {rows, D}, dev), TensorView::of(d_lpart.data(), {rows}, dev));
  const auto got = d_acc.to_host();
  const auto got_l = d_lacc.to_host();
  for (std::int64_t r = 0; r < rows; ++r) {
    const double L = std::log(std::exp(double(lacc[r])) + std::exp(double(lpart[r])));
    EXPECT_NEAR(got_l[r], L, 4e-7 * (1 + std::fabs(L)));
    for (std::int64_t x = 0; x < D; ++x) {
      const double want = std::exp(lacc[r] - L) * smk::to_float(acc[r * D + x]) +
                          std::exp(lpart[r] - L) * smk::to_float(part[r * D + x]);
      // bf16 output: within one bf16 ulp of the exact value (2^-8 relative, and the f32 arithmetic adds ~1e-7).
      ASSERT_NEAR(smk::to_float(got[r * D + x]), want, std::ldexp(std::fabs(want), -8) + 1e-6) << r << "," << x;
    }
  }
}

// A part with terms whose weight underflows to 0 (LSE_b = −200 against LSE_a = 0: e^−200 is below f32's smallest
// subnormal) keeps its NaN and inf O in the sum, as the exact e^(L_b − L)·O_b = 0·NaN would and as the CPU's merge does
// (tests/cpu/test_attention.cpp, MergeKeepsNonFiniteOfANonEmptyPartWhoseWeightUnderflows, beside which this runs);
// an empty part (LSE −inf) keeps its NaN out. The GPU skipped every zero weight until session 14. Both orders of the
// parts, since the merge is commutative.
TEST(CudaMergeAttentionStates, KeepsNonFiniteOfANonEmptyPartWhoseWeightUnderflows) {
  SMK_REQUIRE_GPU();
  const std::vector<float> oa = {1, 2, 3}, ob = {NAN, INFINITY, 5};
  const auto dev = smk::Device::cuda(0);
  for (const float lb : {-200.0f, -INFINITY}) {
    for (const bool swap : {false, true}) {
      SCOPED_TRACE(testing::Message() << "lse_b " << lb << (swap ? ", parts swapped" : ""));
      const std::vector<float> la = {0.0f}, lbv = {lb};
      auto d_oa = DeviceBuffer<float>::from_host(oa), d_ob = DeviceBuffer<float>::from_host(ob);
      auto d_la = DeviceBuffer<float>::from_host(la), d_lb = DeviceBuffer<float>::from_host(lbv);
      DeviceBuffer<float> d_o(3), d_l(1);
      d_o.fill_bytes(0xFF);
      d_l.fill_bytes(0xFF);
      const TensorView va = TensorView::of(d_oa.data(), {1, 3}, dev), vb = TensorView::of(d_ob.data(), {1, 3}, dev);
      const TensorView wa = TensorView::of(d_la.data(), {1}, dev), wb = TensorView::of(d_lb.data(), {1}, dev);
      smk::merge_attention_states(TensorView::of(d_o.data(), {1, 3}, dev), TensorView::of(d_l.data(), {1}, dev),
                                  swap ? vb : va, swap ? wb : wa, swap ? va : vb, swap ? wa : wb);
      const auto o = d_o.to_host(), l = d_l.to_host();
      EXPECT_EQ(l[0], 0.0f);  // log(1 + e^−200) rounds to 0 in f32; log(1 + 0) = 0
      if (lb == -INFINITY) {
        EXPECT_EQ(o, oa);  // the empty part's NaN and inf stay out
      } else {
        EXPECT_TRUE(std::isnan(o[0])) << o[0];   // 0·NaN
        EXPECT_TRUE(std::isnan(o[1])) << o[1];   // 0·inf
        EXPECT_EQ(o[2], 3.0f);                   // 3·1 + 5·0
      }
    }
  }
}

}  // namespace
