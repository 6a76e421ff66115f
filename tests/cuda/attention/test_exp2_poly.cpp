// 2^x on the FMA pipe (src/cuda/attention/exp2_poly.hpp, the share of the prefill softmax's exponentials that
// prefill_wgmma.cu's kPoly build computes as a polynomial), on the CPU: its host form performs the device's IEEE
// operations in the same order, so this checks the kernel's arithmetic over the whole input range against float64
// (std::exp2 in double), without a GPU.
// - Relative error on [−126, 1): every f32 in [−2, −1) (f = x + 2 takes every value of [0, 1) on the 2^-23 grid),
//   every 256th f32 in [−1, 0) (f = 1 + x rounded, up to 1 − 2^-24), a random sample of [−126, 0], the small
//   positive arguments the fold's FFMA can give (up to 2^-10) and both ends of the range.
// - Below P's 16-bit rounding: degree 3 within half an ulp of bf16 / 23, degree 4 within half an ulp of f16 / 80.
// - Exact where the kernel needs exact: 2^j for every integer j in [−126, 0] (so the row's max gives 1), +0 for −inf
//   and every x < −126 (as ex2.approx.ftz), NaN for NaN, never above 1 for x ≤ 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "cuda/attention/exp2_poly.hpp"

namespace {

namespace ep = smk::cuda::exp2_poly;

float next_up(float x) { return std::nextafter(x, std::numeric_limits<float>::infinity()); }

template <int kDeg>
double rel_error(float x) {
  const double want = std::exp2(static_cast<double>(x));  // float64: 2^-52 against errors of 2^-18 and up
  return std::fabs((static_cast<double>(ep::exp2<kDeg>(x)) - want) / want);
}

template <int kDeg>
double max_rel_error_over_range() {
  double worst = 0;
  for (float x = -2.0f; x < -1.0f; x = next_up(x)) worst = std::fmax(worst, rel_error<kDeg>(x));
  std::uint32_t u;
  const float lo = -1.0f;
  std::memcpy(&u, &lo, 4);
  for (; u > 0x80000000u; u -= 256) {  // the negative floats from −1 up towards −0, every 256th bit pattern
    float x;
    std::memcpy(&x, &u, 4);
    worst = std::fmax(worst, rel_error<kDeg>(x));
  }
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> any(-126.0f, 0.0f);
  for (int i = 0; i < 2000000; ++i) worst = std::fmax(worst, rel_error<kDeg>(any(rng)));
  for (float x = 0x1p-30f; x <= 0x1p-10f; x *= 1.01f) worst = std::fmax(worst, rel_error<kDeg>(x));
  for (float x : {-126.0f, next_up(-126.0f), -125.5f, -0.0f, 0.0f, -0x1p-30f, -0x1p-24f, 0.5f, 0.999f})
    worst = std::fmax(worst, rel_error<kDeg>(x));
  return worst;
}

TEST(Exp2Poly, RelativeErrorOverTheWholeRangeDegree3) {
  const double e = max_rel_error_over_range<3>();
  std::printf("degree 3: max relative error %.4g (bound %.3g)\n", e, ep::kDeg3RelError);
  EXPECT_LE(e, ep::kDeg3RelError);
  EXPECT_GT(e, ep::kDeg3RelError / 2);  // the bound is the measured error, not a loose one
  // Under bf16's rounding of P: half an ulp is 2^-9 relative at least; the polynomial's error is 1/23 of it.
  EXPECT_LT(ep::kDeg3RelError, std::ldexp(1.0, -9) / 20);
}

TEST(Exp2Poly, RelativeErrorOverTheWholeRangeDegree4) {
  const double e = max_rel_error_over_range<4>();
  std::printf("degree 4: max relative error %.4g (bound %.3g)\n", e, ep::kDeg4RelError);
  EXPECT_LE(e, ep::kDeg4RelError);
  EXPECT_GT(e, ep::kDeg4RelError / 2);
  EXPECT_LT(ep::kDeg4RelError, std::ldexp(1.0, -12) / 70);  // f16's half ulp, 2^-12 relative at least
}

template <int kDeg>
void expect_exact_cases() {
  SCOPED_TRACE(kDeg);
  for (int j = -126; j <= 0; ++j) EXPECT_EQ(ep::exp2<kDeg>(static_cast<float>(j)), std::ldexp(1.0f, j)) << j;
  // Below 2^-126 (ex2.approx.ftz flushes those to 0): +0 exactly, sign bit clear.
  const float zeros[] = {-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::max(), -1e30f,
                         -128.0f, -127.0f, -126.5f, std::nextafter(-126.0f, -200.0f), -200.0f};
  for (float x : zeros) {
    const float y = ep::exp2<kDeg>(x);
    EXPECT_EQ(y, 0.0f) << x;
    EXPECT_FALSE(std::signbit(y)) << x;
  }
  for (float x = -127.0f; x < -126.0f; x += 0x1p-12f) EXPECT_EQ(ep::exp2<kDeg>(x), 0.0f) << x;
  EXPECT_TRUE(std::isnan(ep::exp2<kDeg>(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(ep::exp2<kDeg>(-std::numeric_limits<float>::quiet_NaN())));
  // A probability never exceeds 1: p(f) < 2 on [0, 1), so 2^x ≤ 1 for every x ≤ 0.
  std::uint32_t u;
  const float lo = -1.0f;
  std::memcpy(&u, &lo, 4);
  for (; u > 0x80000000u; u -= 251) {  // every 251st negative float from −1 up towards −0
    float x;
    std::memcpy(&x, &u, 4);
    ASSERT_LE(ep::exp2<kDeg>(x), 1.0f) << x;
  }
  for (float x = -2.0f; x < -1.0f; x = next_up(x)) ASSERT_LE(ep::exp2<kDeg>(x), 0.5f) << x;
}

TEST(Exp2Poly, ExactWhereTheKernelNeedsExact) {
  expect_exact_cases<3>();
  expect_exact_cases<4>();
}

}  // namespace
