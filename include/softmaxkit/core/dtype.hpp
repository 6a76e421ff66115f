// softmaxkit: element types, and exact host conversions for the two 16-bit types.
//
// f16 and bf16 are storage types only. Every op loads them, computes in f32 and rounds once on output
// (docs/semantics.md). On the host they are plain 16-bit patterns (half_t, bfloat16_t) converted with
// round-to-nearest-even; device code reinterprets the same bits as CUDA's __half / __nv_bfloat16.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace smk {

// f32, f16, bf16 (and f64 on the CPU) are the floating types ops compute on. b8 is a boolean mask (one byte,
// non-zero = true); i32 and i64 are index types (e.g. class targets).
enum class DType : std::uint8_t { f32, f16, bf16, f64, b8, i32, i64 };

constexpr std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::b8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::b8: return "b8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

// IEEE binary16 bit pattern.
struct half_t {
  std::uint16_t bits;
};
// bfloat16 bit pattern (the upper half of an IEEE binary32).
struct bfloat16_t {
  std::uint16_t bits;
};

namespace detail {
inline std::uint32_t float_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

// binary16 -> binary32 is exact.
inline float to_float(half_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return detail::bits_float(detail::float_bits(magnitude) | sign);
  }
  if (exponent == 31) return detail::bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN (payload kept)
  return detail::bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// binary32 -> binary16, round to nearest, ties to even; overflow gives inf, NaN stays NaN (quiet).
inline half_t to_half(float f) noexcept {
  const std::uint32_t x = detail::float_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return {static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu))};
  if (ax == 0x7f800000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (ax < 0x38800000u) {
    // Below the smallest normal half (2^-14): the result is a subnormal count of 2^-24 units. Scaling by 2^24 is
    // exact in float; rounding the integer part ties-to-even gives the correctly rounded count (1024 carries into
    // the smallest normal, which has the same bit pattern).
    float scaled = detail::bits_float(ax) * 16777216.0f;
    auto whole = static_cast<std::uint32_t>(scaled);
    const float fraction = scaled - static_cast<float>(whole);
    if (fraction > 0.5f || (fraction == 0.5f && (whole & 1u))) ++whole;
    return {static_cast<std::uint16_t>(sign | whole)};
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even, letting the carry ripple into the exponent.
  std::uint32_t rounded = (ax + 0x0fffu + ((ax >> 13) & 1u)) >> 13;
  rounded -= (127u - 15u) << 10;
  if (rounded >= 0x7c00u) rounded = 0x7c00u;  // overflow to inf
  return {static_cast<std::uint16_t>(sign | rounded)};
}

inline float to_float(bfloat16_t b) noexcept { return detail::bits_float(static_cast<std::uint32_t>(b.bits) << 16); }

// binary32 -> bfloat16, round to nearest, ties to even; NaN stays NaN (quiet).
inline bfloat16_t to_bfloat16(float f) noexcept {
  const std::uint32_t x = detail::float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((x >> 16) | 0x0040u)};
  return {static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

namespace detail {
// double -> float rounded to odd: truncate toward zero, then set the last bit if anything was lost. Rounding that
// float once more to a format at least two bits narrower (f16: 11 bits, bf16: 8, against float's 24) gives the
// correctly rounded result of the original double, with no double-rounding error.
inline float round_to_odd_float(double d) noexcept {
  if (d != d) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if ((f > 0 && static_cast<double>(f) > d) || (f < 0 && static_cast<double>(f) < d)) {
    std::uint32_t u = float_bits(f);
    --u;  // one step toward zero in magnitude (also turns an overflowed inf into the largest finite float)
    f = bits_float(u);
  }
  return bits_float(float_bits(f) | 1u);
}
}  // namespace detail

// Correctly rounded (nearest, ties to even) conversions from double, for references that must round only once.
inline half_t to_half(double d) noexcept { return to_half(detail::round_to_odd_float(d)); }
inline bfloat16_t to_bfloat16(double d) noexcept { return to_bfloat16(detail::round_to_odd_float(d)); }

}  // namespace smk
