// softmaxkit conformance: the numerical contract in code — exact (long double) row results, the accuracy gates of
// docs/semantics.md, and ulp arithmetic in each storage format. Shared by the conformance suite, the accuracy
// report and the fuzzer, so all three judge outputs by one definition. Nothing here calls softmaxkit's maths: the
// oracle is computed independently, in long double (64-bit significand on x86-64), from the stored input values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "softmaxkit/core/dtype.hpp"

namespace smk::conformance {

// ---- formats --------------------------------------------------------------------------------------------------

inline int significand_bits(DType t) {  // p, counting the implicit bit
  switch (t) {
    case DType::f16: return 11;
    case DType::bf16: return 8;
    case DType::f64: return 53;
    default: return 24;
  }
}
inline int min_normal_exponent(DType t) {  // e_min: the smallest normal is 2^e_min
  switch (t) {
    case DType::f16: return -14;
    case DType::f64: return -1022;
    default: return -126;  // f32 and bf16 share the exponent range
  }
}
inline long double max_finite(DType t) {
  switch (t) {
    case DType::f16: return 65504.0L;
    case DType::bf16: return 0x1.fep127L;
    case DType::f64: return std::numeric_limits<double>::max();
    default: return std::numeric_limits<float>::max();
  }
}

// The spacing of format `t` at |y| (the ulp of the binade holding y; subnormal spacing below the normals).
inline long double ulp_of(DType t, long double y) {
  const int p = significand_bits(t);
  const int emin = min_normal_exponent(t);
  int e = (y == 0 || !std::isfinite(y)) ? emin : std::ilogb(y);
  e = std::max(e, emin);
  return std::ldexp(1.0L, e - (p - 1));
}

// y rounded once to format `t`, to nearest with ties to even (the "correctly rounded reference"). Computed in
// long double by scaling to an integer multiple of the ulp, which is exact.
inline long double round_to(DType t, long double y) {
  if (!std::isfinite(y) || y == 0) return y;
  const long double q = ulp_of(t, y);
  long double r = std::nearbyint(y / q) * q;  // default rounding mode: ties to even
  // A carry into the next binade is still exact (its ulp is twice q and r is a multiple of it).
  const long double half_ulp_above_max = ulp_of(t, max_finite(t)) / 2;
  if (std::fabs(y) >= max_finite(t) + half_ulp_above_max) return std::copysign(INFINITY, y);
  if (std::fabs(r) > max_finite(t)) r = std::copysign(max_finite(t), y);
  return r;
}

// Element codecs over raw storage: loads are exact, stores round once (nearest, ties to even) from double.
inline double load(DType t, const void* p) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::f16: { half_t h; std::memcpy(&h, p, 2); return to_float(h); }
    case DType::bf16: { bfloat16_t b; std::memcpy(&b, p, 2); return to_float(b); }
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}
inline void store(DType t, void* p, double v) {
  switch (t) {
    case DType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::f64: std::memcpy(p, &v, 8); return;
    case DType::f16: { const half_t h = to_half(v); std::memcpy(p, &h, 2); return; }
    case DType::bf16: { const bfloat16_t b = to_bfloat16(v); std::memcpy(p, &b, 2); return; }
    default: return;
  }
}
// The value `v` takes once stored in format `t`.
inline double representable(DType t, double v) {
  unsigned char buf[8];
  store(t, buf, v);
  return load(t, buf);
}

// Number of representable values of `t` between a and b (both representable in t, both non-NaN): 0 when equal,
// 1 for neighbours. ±0 count as one value.
inline std::int64_t ulp_distance(DType t, double a, double b) {
  auto ordered = [t](double v) -> std::int64_t {
    std::int64_t bits, sign_mask;
    if (t == DType::f32) {
      const float f = static_cast<float>(v);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u & 0x7fffffff;
      sign_mask = u >> 31;
    } else if (t == DType::f16) {
      const std::uint16_t u = to_half(v).bits;
      bits = u & 0x7fff;
      sign_mask = u >> 15;
    } else if (t == DType::bf16) {
      const std::uint16_t u = to_bfloat16(v).bits;
      bits = u & 0x7fff;
      sign_mask = u >> 15;
    } else {
      std::uint64_t u;
      std::memcpy(&u, &v, 8);
      bits = static_cast<std::int64_t>(u & 0x7fffffffffffffffull);
      sign_mask = static_cast<std::int64_t>(u >> 63);
    }
    return sign_mask ? -bits : bits;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// ---- the exact row -------------------------------------------------------------------------------------------

// The four regimes of include/softmaxkit/core/online_state.hpp, decided from the stored inputs alone.
enum class Regime { empty, finite, saturated, nan };
inline const char* regime_name(Regime r) {
  switch (r) {
    case Regime::empty: return "empty";
    case Regime::finite: return "finite";
    case Regime::saturated: return "saturated";
    case Regime::nan: return "nan";
  }
  return "?";
}

struct ExactRow {
  Regime regime = Regime::empty;
  long double max = -INFINITY;  // the largest score (finite regime)
  long double sum = 0;          // Σ exp(x − max)
  long double lse = -INFINITY;  // max + log(sum); −inf, +inf or NaN in the other regimes

  long double softmax(long double x) const { return std::exp(x - max) / sum; }
  long double log_softmax(long double x) const { return (x - max) - std::log(sum); }
};

template <typename Real>
ExactRow exact_row(const Real* x, std::int64_t n) {
  ExactRow r;
  bool any_nan = false, any_pos_inf = false;
  for (std::int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) any_nan = true;
    else if (x[i] == INFINITY) any_pos_inf = true;
    else if (x[i] > r.max) r.max = x[i];
  }
  if (any_nan) {
    r.regime = Regime::nan;
    r.lse = NAN;
  } else if (any_pos_inf) {
    r.regime = Regime::saturated;
    r.lse = INFINITY;
  } else if (r.max == -INFINITY) {
    r.regime = Regime::empty;  // n = 0, or every score −inf
  } else {
    r.regime = Regime::finite;
    // Summed in long double in descending order of the terms' size is unnecessary: 64 significand bits and at
    // most 2^31 terms keep the relative error below 2^-32, far under every gate.
    for (std::int64_t i = 0; i < n; ++i) r.sum += std::exp(static_cast<long double>(x[i]) - r.max);
    r.lse = r.max + std::log(r.sum);
  }
  return r;
}

// ---- the accuracy gates of docs/semantics.md -------------------------------------------------------------------
// u is the unit roundoff of f32, the compute type of every path (f16/bf16 included); L = ⌈log2 n⌉.

inline constexpr double kU = 0x1p-24;
// exp's error, in u: CUDA's expf is documented to 2 ulp, and an ulp of a float is at most 2u of its value.
// (glibc's expf is within 0.502 ulp; the gate is one contract for every backend, so it takes the larger.)
inline constexpr double kExpErrorU = 4;
// exp_diff's correction e + e·err adds one rounding.
inline constexpr double kExpDiffErrorU = kExpErrorU + 1;

inline int ceil_log2(std::int64_t n) {
  int L = 0;
  while ((std::int64_t{1} << L) < n) ++L;
  return L;
}

// How many roundings one term of the row sum passes through, at most.
//   tree:       pairwise summation whose leaves are runs of at most 8 terms added in sequence, joined by a
//               binary tree (the CPU float path's pairwise_sum; a GPU thread's vector, then warp and block trees):
//               7 + ⌈log2(n/8)⌉ ≤ L + 4.
//   sequential: one running sum (the lesson's row-per-thread kernels): n − 1.
enum class SumModel { tree, sequential };
inline double summation_depth(std::int64_t n, SumModel model) {
  if (n <= 1) return 0;
  return model == SumModel::sequential ? static_cast<double>(n - 1) : ceil_log2(n) + 4.0;
}

// The excess state (include/softmaxkit/core/online_state.hpp) sums the scores below the max without the max's exact
// 1 and adds it afterwards: up to two more roundings on the sum's path, (ties − 1) + rest when the max is tied and
// l = 1 + d where the reciprocal needs l. log l = log1p(d) takes only the first.
inline constexpr double kStateRoundingsU = 2;

// f32 softmax, relative error per element (absolute error ≤ gate · 1e-30 below a reference of 1e-30):
//   2·(exp_diff) for the numerator's and the average denominator term's exp errors, D for the sum,
//   one rounding for the reciprocal and one for the product.
inline double softmax_gate(std::int64_t n, SumModel m) {
  return (2 * kExpDiffErrorU + summation_depth(n, m) + kStateRoundingsU + 2) * kU;
}
inline constexpr double kSoftmaxRelativeFloor = 1e-30;
// |Σ p − 1|: the exp errors cancel (each term is divided by the sum of the same terms), leaving the sum's
// roundings, the reciprocal and the product.
inline double sum_gate(std::int64_t n, SumModel m) { return (summation_depth(n, m) + kStateRoundingsU + 2) * kU; }
// The sums whose log alone is used (log-softmax, logsumexp, the state) may form their terms without exp_diff's
// recovery of the subtraction's rounding (the GPU's log_term_exp, src/cuda/softmax/common.cuh): a term is then off
// by u·|x_j − m| more, and l's relative error by Σ p_j·|x_j − m|·u = (H(p) − log l)·u ≤ u·ln n. The factor of ln n.
inline constexpr double kLogTermSubtractionU = 1;
// The GPU's log ops on 16-bit inputs (src/cuda/softmax/common.cuh log_term_exp16, since session 7) form a term as
// 2^fl(fl(x_j − m)·log2e_hi) and fold nothing back: the product rounds (u·|t|) and log2e_hi is off by 0.224u, so a
// term gains 1.224u·|x_j − m| relative and l, weighted by p_j as above, at most 1.224u·ln n. (With 16-bit scores and
// no temperature or mask the subtraction is exact wherever x_j and m lie within 2^15 (f16: 2^12) of each other, so
// this replaces the subtraction's term there; with a temperature or mask both occur.) Only 16-bit inputs pay it: the
// gates below take it when `in16` is set, so an f32 input's gates stay as tight as its kernels (unchanged) allow.
inline constexpr double kLogTermProductU = 1.25;
inline double ln_n(std::int64_t n) { return std::log(static_cast<double>(std::max<std::int64_t>(n, 1))); }
// 16-bit softmax outputs (docs/semantics.md §6, "16-bit outputs"): the GPU forms their terms as expf(fl(x − m))
// (src/cuda/softmax/common.cuh out_exp), without exp_diff's recovery of the subtraction's rounding. A term gains
// u·|x_i − m| relative, and |x_i − m| = ln(1/p_i) − ln l ≤ ln(1/p_i): at most 69.1u for p_i ≥ 1e-30 (below that the
// softmax gate is absolute at the floor, and p·ln(1/p) only falls as p does, so the floor's gap covers it); the
// denominator averages its terms' gains with the weights p_j, Σ p_j·|x_j − m|·u ≤ u·ln n, as for log l above. The
// factor of both gaps:
inline constexpr double kPlainExpSubtractionU = 1;
// ln(1/p), the bound on |x − m| of an output p (at the relative floor below it).
inline double plain_exp_gap(long double p) {
  return -std::log(std::max(static_cast<double>(p), kSoftmaxRelativeFloor));
}
// The relative gate of a 16-bit softmax output's f32 computation (before its own rounding to the output type).
inline double softmax_gate_16bit(std::int64_t n, SumModel m, long double p) {
  return softmax_gate(n, m) + kPlainExpSubtractionU * (plain_exp_gap(p) + ln_n(n)) * kU;
}
// |Σ p − 1| of 16-bit outputs, before their rounding: a path may sum one exponential's terms and normalise with the
// other's (split_row sums exp_diff's and writes expf's), so the terms' errors no longer cancel: exp_diff's α, expf's
// E and the subtraction's weighted average u·ln n.
inline double sum_gate_16bit(std::int64_t n, SumModel m) {
  return sum_gate(n, m) + (kExpDiffErrorU + kExpErrorU + kPlainExpSubtractionU * ln_n(n)) * kU;
}
// log l = log1p(d) is off by the relative error of d (the terms' exp, their subtraction's rounding averaged, the sum,
// a tie's rounding) weighted by d/l ≤ 1, plus log1p's own 1 ulp (≤ 2u·ln l ≤ 2u·ln n).
inline double log_term_u(bool in16) { return kLogTermSubtractionU + (in16 ? kLogTermProductU : 0.0); }
inline double log_sum_error(std::int64_t n, SumModel m, bool in16 = false) {
  return (kExpDiffErrorU + log_term_u(in16) * ln_n(n) + summation_depth(n, m) + 1 + 2 * ln_n(n)) * kU;
}
// The state's l = 1 + d, relative: the same terms and sum, and both of the state's roundings.
inline double state_sum_error(std::int64_t n, SumModel m, bool in16 = false) {
  return (kExpDiffErrorU + log_term_u(in16) * ln_n(n) + summation_depth(n, m) + kStateRoundingsU) * kU;
}
// f32 logsumexp, absolute: the final m + log l rounds once (u·|LSE|).
inline double lse_gate(std::int64_t n, SumModel m, long double lse, bool in16 = false) {
  return static_cast<double>(std::fabs(lse)) * kU + log_sum_error(n, m, in16);
}
// f32 log-softmax, absolute: fl(x − m) rounds (u·|x − m| ≤ u·|y|) and the final subtraction rounds (u·|y|).
inline double log_softmax_gate(std::int64_t n, SumModel m, long double y, bool in16 = false) {
  return 2 * static_cast<double>(std::fabs(y)) * kU + log_sum_error(n, m, in16);
}

}  // namespace smk::conformance
