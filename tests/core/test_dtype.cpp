// Host f16 / bf16 conversions: exhaustive round trips, and rounding checked at every midpoint between neighbours
// (computed independently in double), so the conversions the CPU backend and the references rely on are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "softmaxkit/core/dtype.hpp"

namespace {

using smk::bfloat16_t;
using smk::half_t;

TEST(Dtype, HalfRoundTripsEveryPattern) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const half_t h{static_cast<std::uint16_t>(b)};
    const float f = smk::to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(smk::to_float(smk::to_half(f)))) << std::hex << b;
      continue;
    }
    EXPECT_EQ(smk::to_half(f).bits, b) << std::hex << b;
  }
}

TEST(Dtype, HalfKnownValues) {
  EXPECT_EQ(smk::to_half(1.0f).bits, 0x3c00);
  EXPECT_EQ(smk::to_half(-2.0f).bits, 0xc000);
  EXPECT_EQ(smk::to_half(65504.0f).bits, 0x7bff);           // largest finite half
  EXPECT_EQ(smk::to_half(65519.0f).bits, 0x7bff);           // below the midpoint to 65536
  EXPECT_EQ(smk::to_half(65520.0f).bits, 0x7c00);           // the midpoint ties to even: infinity
  EXPECT_EQ(smk::to_half(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(smk::to_half(std::ldexp(1.0f, -25)).bits, 0x0000);  // half of it ties to even: zero
  EXPECT_EQ(smk::to_half(std::ldexp(3.0f, -26)).bits, 0x0001);  // 0.75 of it rounds up
  EXPECT_EQ(smk::to_half(INFINITY).bits, 0x7c00);
  EXPECT_EQ(smk::to_float(half_t{0x3555}), 0.333251953125f);
  // The article's threshold: e^11.09 ≈ 65,500 is the last exponential a half can hold.
  EXPECT_TRUE(std::isfinite(smk::to_float(smk::to_half(std::exp(11.08f)))));
  EXPECT_TRUE(std::isinf(smk::to_float(smk::to_half(std::exp(11.10f)))));
}

// For every pair of adjacent finite positive halves, values just below, at and just above their midpoint round to
// the expected neighbour (ties to the even pattern).
TEST(Dtype, HalfRoundsToNearestEvenAtEveryMidpoint) {
  for (std::uint16_t b = 0; b < 0x7bff; ++b) {
    const double lo = smk::to_float(half_t{b}), hi = smk::to_float(half_t{static_cast<std::uint16_t>(b + 1)});
    const double mid = 0.5 * (lo + hi);
    const float below = std::nextafter(static_cast<float>(mid), 0.0f);
    const float above = std::nextafter(static_cast<float>(mid), INFINITY);
    ASSERT_EQ(static_cast<double>(static_cast<float>(mid)), mid);  // midpoints are floats
    EXPECT_EQ(smk::to_half(below).bits, b);
    EXPECT_EQ(smk::to_half(above).bits, b + 1);
    EXPECT_EQ(smk::to_half(static_cast<float>(mid)).bits, (b & 1) ? b + 1 : b);
    EXPECT_EQ(smk::to_half(-above).bits, 0x8000 | (b + 1));
  }
}

TEST(Dtype, BFloat16RoundTripsAndRoundsAtMidpoints) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = smk::to_float(bfloat16_t{static_cast<std::uint16_t>(b)});
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(smk::to_float(smk::to_bfloat16(f))));
      continue;
    }
    EXPECT_EQ(smk::to_bfloat16(f).bits, b);
  }
  for (std::uint16_t b = 0; b < 0x7f7f; b = static_cast<std::uint16_t>(b + 7)) {
    const double lo = smk::to_float(bfloat16_t{b}), hi = smk::to_float(bfloat16_t{static_cast<std::uint16_t>(b + 1)});
    const double mid = 0.5 * (lo + hi);
    EXPECT_EQ(smk::to_bfloat16(std::nextafter(static_cast<float>(mid), 0.0f)).bits, b);
    EXPECT_EQ(smk::to_bfloat16(std::nextafter(static_cast<float>(mid), INFINITY)).bits, b + 1);
    EXPECT_EQ(smk::to_bfloat16(static_cast<float>(mid)).bits, (b & 1) ? b + 1 : b);
  }
  EXPECT_EQ(smk::to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(smk::to_float(bfloat16_t{0x4802}), 133120.0f);  // the conformance suite's "near 133120"
}

// Rounding a double through float first can round twice: 1 + 2^-11 + 2^-40 becomes the f16 midpoint 1 + 2^-11 in
// float, which then ties down to 1.0. The correct f16 is the upper neighbour.
TEST(Dtype, DoubleConversionsRoundOnce) {
  const double just_above_mid_h = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(smk::to_half(just_above_mid_h).bits, 0x3c01);
  EXPECT_EQ(smk::to_half(static_cast<float>(just_above_mid_h)).bits, 0x3c00);  // the double-rounding trap
  const double just_above_mid_b = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(smk::to_bfloat16(just_above_mid_b).bits, 0x3f81);
  const double just_below_mid_h = 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  EXPECT_EQ(smk::to_half(just_below_mid_h).bits, 0x3c00);
  EXPECT_EQ(smk::to_half(1e300).bits, 0x7c00);
  EXPECT_EQ(smk::to_half(-1e-300).bits, 0x8000);
  EXPECT_TRUE(std::isnan(smk::to_float(smk::to_half(std::nan("")))));
}

}  // namespace
