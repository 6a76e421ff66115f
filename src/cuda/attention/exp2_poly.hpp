// softmaxkit (internal): 2^x on the FMA pipe, for the share of the prefill softmax's exponentials that
// prefill_wgmma.cu's kPoly build takes off the MUFU unit (session 12, pfx12; FlashAttention-4's idea, our own code).
//
// Why: in the wgmma prefill kernel's tile loop the 66 MUFU.EX2 a thread issues per 128-key tile sit about 8 cycles
// apart (the MUFU pipe's rate, 521 of the loop's 1162 cycles a warp; docs/perf-notebook.md, "session 11 — pfx11"),
// while the FMA pipe is mostly idle. Computing a fixed quarter of them here lets both pipes run at once.
//
// How (Cody-Waite split, x ≤ 0 in the kernel): x is clamped to ≥ −127 (NaN kept), j = floor(x) by one add rounded
// down against 1.5·2^23 (the sum's last bits are then j), f = x − j ∈ [0, 1) exactly, 2^f by a polynomial p with
// p(0) = 1 exactly, and 2^j built as an integer into the exponent field, (j + 127) << 23, then multiplied in. So:
//   x = −inf and every x < −126: exactly +0 (as ex2.approx.ftz, whose subnormal results flush to 0);
//   x = 0 and every integer x ≥ −126: exactly 2^x (p(0) = 1, the product by 2^j exact);
//   NaN: NaN (the clamp keeps it, p(NaN) is NaN, NaN · 2^j is NaN);
//   elsewhere on [−126, 1): relative error ≤ kExp2PolyRelError<T> (the polynomial's minimax error plus f32
//   rounding; tests/cuda/attention/test_exp2_poly.cpp checks it against float64 over the whole range).
// Not for x ≥ 128 (the exponent field would overflow): the kernel's arguments are x = s·c − max ≤ a few ulps of the
// max above 0 (the fold's FFMA), or NaN.
// Degree: the polynomial's error must stay under P's 16-bit rounding (half an ulp: 2^-9 relative for bf16, 2^-12
// for f16). Degree 3 (8.6e-5) is 1/23 of bf16's half ulp; for f16 it would be 1/3 of it, so f16 takes degree 4
// (3.0e-6, 1/80). Coefficients: minimax of the relative error on [0, 1] with c0 = 1 fixed (a linear program on
// 20001 points, scipy's HiGHS), rounded to f32; the errors above are those of the f32 evaluation.
// Cost a value: FMNMX (clamp), 3 FADD, 3 or 4 FFMA, one integer multiply-add, one FMUL: 9 or 10 issue slots, all but
// the clamp on the FMA pipe, against one MUFU.EX2 (8 cycles of the MUFU pipe a warp).
#pragma once

#include <cstdint>
#include <cstring>

#include "softmaxkit/core/config.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace smk::cuda::exp2_poly {

// 1.5·2^23: x + this, rounded down, is 1.5·2^23 + floor(x) exactly for |x| < 2^22 (the ulp there is 1).
inline constexpr float kRoundBias = 12582912.0f;
inline constexpr float kClampLow = -127.0f;  // 2^(−127) and below: 0 (j = −127 gives a zero exponent field)

// Coefficients c1..c3 (degree 3) and c1..c4 (degree 4) of p(f) = 1 + c1 f + c2 f² + ..., hex floats (f32 exact);
// scalars, not arrays (a constexpr array is not usable in device code).
inline constexpr float kDeg3C1 = 0x1.63e66ap-1f, kDeg3C2 = 0x1.d236c6p-3f, kDeg3C3 = 0x1.3babb0p-4f;
inline constexpr float kDeg4C1 = 0x1.62d6c0p-1f, kDeg4C2 = 0x1.ee24c8p-3f, kDeg4C3 = 0x1.abf578p-5f,
                       kDeg4C4 = 0x1.b7fcfep-7f;
// The relative error bounds the host test asserts (measured there: degree 3 8.57e-5, degree 4 2.97e-6 over every
// f32 f in [0, 1), evaluated as below), with a little room.
inline constexpr double kDeg3RelError = 8.7e-5;
inline constexpr double kDeg4RelError = 3.1e-6;

SMK_HD SMK_FORCEINLINE std::uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}
SMK_HD SMK_FORCEINLINE float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}

// 2^x, degree kDeg (3 or 4). The host form gives the device's bits: the same IEEE operations (round-down add,
// round-to-nearest adds, fused multiply-adds, an integer add, one product), the round-down add written as the
// exact 1.5·2^23 + floor(x) it equals.
template <int kDeg>
SMK_HD SMK_FORCEINLINE float exp2(float x) {
  static_assert(kDeg == 3 || kDeg == 4, "degree 3 or 4");
#if defined(__CUDA_ARCH__)
  float xc;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(xc) : "f"(x), "f"(kClampLow));  // NaN stays NaN (fmaxf would drop it)
  const float xr = __fadd_rd(xc, kRoundBias);
#else
  const float xc = x != x ? x : (x < kClampLow ? kClampLow : x);
  const float xr = xc != xc ? xc : kRoundBias + std::floor(xc);  // exact: an integer below 2^24
#endif
  const float fl = xr - kRoundBias;  // floor(x), exact
  const float f = xc - fl;           // [0, 1]; exact but where x ∈ (−1, 0) rounds 1 + x
  float p;
  if constexpr (kDeg == 3) {
    p = fmaf(kDeg3C3, f, kDeg3C2);
    p = fmaf(p, f, kDeg3C1);
  } else {
    p = fmaf(kDeg4C4, f, kDeg4C3);
    p = fmaf(p, f, kDeg4C2);
    p = fmaf(p, f, kDeg4C1);
  }
  p = fmaf(p, f, 1.0f);
  // xr's low 9 bits are j (two's complement); (xr_bits + 127) << 23 keeps (j + 127) mod 512 in the exponent field
  // and sign: 2^j for j ≥ −126, +0 for j = −127.
  const float scale = float_of((bits_of(xr) + 127u) << 23);
  return p * scale;
}

}  // namespace smk::cuda::exp2_poly
