// softmaxkit: the online-softmax state, the one type that softmax, log-sum-exp, cross-entropy, attention and
// multi-GPU merges all share.
//
// A state summarises a multiset of scores x_1..x_k by two numbers:
//   m  the largest score seen (the running max),
//   l  Σ exp(x_j − m), the sum of exponentials measured against that max, so 1 ≤ l ≤ k while m is finite.
// Together they are the log-sum-exp stored in two safe pieces: LSE = m + log(l). Two states merge exactly
// (Milakov & Gimelshein 2018): with M = max(m_a, m_b), l = l_a·exp(m_a − M) + l_b·exp(m_b − M). Every exponent is
// ≤ 0, so nothing overflows, and merge is commutative and associative up to rounding.
//
// The rules below are the contract (docs/semantics.md repeats them with their reasons). Each state is in exactly
// one of four regimes, told apart by m alone:
//
//   regime     m       l          lse()      softmax of the row       why
//   empty      −inf    0          −inf       NaN, or 0 (zeros policy) no scores, or only −inf (fully masked)
//   finite     finite  [1, k]     m + log l  exp(x − m) / l           the ordinary case
//   saturated  +inf    +inf       +inf       NaN                      a +inf score: LSE is +inf, but the shares
//                                                                     inf/inf are undefined (PyTorch agrees)
//   nan        NaN     NaN        NaN        NaN                      a NaN score poisons the row; never dropped
//
// - The empty state is the identity of merge, and (−inf) − (−inf) is never evaluated: merge and push branch on an
//   empty side before any subtraction.
// - NaN is sticky: no max, comparison or clamp can drop it (a plain `x > m` would).
// - A saturated state absorbs every finite or −inf score; merging it with a NaN state gives NaN.
#pragma once

#include <cmath>
#include <limits>

#include "softmaxkit/core/config.hpp"

namespace smk {

// What a row with no finite mass (every score −inf, e.g. fully masked) produces in softmax and log-softmax.
// Its log-sum-exp is −inf under both policies.
enum class EmptyRowPolicy : unsigned char {
  nan,    // NaN in every position: PyTorch's behaviour, the default
  zeros,  // 0 in every position: the "safe softmax" attention users want
};

namespace detail {
SMK_HD SMK_FORCEINLINE float exp_(float x) { return ::expf(x); }
SMK_HD SMK_FORCEINLINE double exp_(double x) { return ::exp(x); }
SMK_HD SMK_FORCEINLINE float log_(float x) { return ::logf(x); }
SMK_HD SMK_FORCEINLINE double log_(double x) { return ::log(x); }
template <typename T>
SMK_HD SMK_FORCEINLINE constexpr T inf_() {
  return std::numeric_limits<T>::infinity();
}
template <typename T>
SMK_HD SMK_FORCEINLINE constexpr T nan_() {
  return std::numeric_limits<T>::quiet_NaN();
}
}  // namespace detail

// max(a, b) that returns NaN when either is NaN (fmax and `a > b ? a : b` both drop it).
template <typename T>
SMK_HD SMK_FORCEINLINE T nan_max(T a, T b) {
  return (a > b || a != a) ? a : b;
}

// exp(x − m) with the rounding error of the subtraction folded back in. fl(x − m) is off by up to half an ulp of
// |x − m|, a relative error of |x − m|·u in the result (about 40u for a probability of 1e-18), more than the
// whole accuracy budget of docs/semantics.md. TwoSum recovers that error exactly, and exp(d + err) ≈ exp(d)·(1 + err)
// puts it back, leaving only the exp's own error. Non-finite inputs (x = −inf for masked scores, NaN, m = +inf)
// make err NaN; then exp(d) alone is already the right answer (0, NaN, inf). This needs IEEE arithmetic: never build
// softmaxkit with fast-math flags, which would fold err to 0.
template <typename T>
SMK_HD SMK_FORCEINLINE T exp_diff(T x, T m) {
  const T d = x - m;
  const T bb = d - x;
  const T err = (x - (d - bb)) + (-m - bb);
  const T e = detail::exp_(d);
  return err == err ? e + e * err : e;
}

// Applies a row's final state to its scores. Built by OnlineSoftmaxState::normalizer(); every backend writes
// softmax and log-softmax through these two functions so the regimes above behave identically everywhere.
template <typename T>
struct RowNormalizer {
  T shift;       // m for a finite row; 0 otherwise
  T inv_sum;     // 1 / l for a finite row; NaN for NaN outputs; 0 for the zeros policy
  T log_sum;     // log(l) for a finite row; NaN for NaN outputs; 0 for the zeros policy
  bool zero_fill;  // empty row under EmptyRowPolicy::zeros: every output is exactly 0

  SMK_HD SMK_FORCEINLINE T softmax(T x) const { return zero_fill ? T(0) : exp_diff(x, shift) * inv_sum; }
  // The same, for a kernel that already holds e = exp_diff(x, OnlineSoftmaxState::shift_for(row_max)) from its
  // summing pass. Equal to softmax(x) in every regime: for a non-finite row inv_sum is NaN or 0 and decides alone.
  SMK_HD SMK_FORCEINLINE T softmax_from_exp(T e) const { return e * inv_sum; }
  // (x − m) − log l, never x − LSE: for x near m the first difference is exact, so a dominant score gets
  // log-probability −log l without the cancellation of two large numbers.
  SMK_HD SMK_FORCEINLINE T log_softmax(T x) const { return zero_fill ? T(0) : (x - shift) - log_sum; }
};

template <typename T>
struct OnlineSoftmaxState {
  T m;  // running max: −inf empty, +inf saturated, NaN poisoned
  T l;  // Σ exp(x − m): 0 empty, +inf saturated, NaN poisoned

  SMK_HD static constexpr OnlineSoftmaxState empty() { return {-detail::inf_<T>(), T(0)}; }

  // A state from a block's already-reduced max and shifted sum (how kernels build one after a block reduction).
  // `sum` must be Σ exp(x − shift) with shift = (max == −inf ? 0 : max); see shift_for().
  SMK_HD static OnlineSoftmaxState from_max_and_sum(T max, T sum) {
    if (max != max) return {max, max};
    if (max == -detail::inf_<T>()) return empty();
    if (max == detail::inf_<T>()) return {max, max};
    return {max, sum};
  }

  // The state of a partial result whose log-sum-exp is `lse` (an attention split, another GPU's partial row).
  SMK_HD static OnlineSoftmaxState from_lse(T lse) { return from_max_and_sum(lse, T(1)); }

  // The shift a kernel subtracts before exponentiating, given the row (or block) max: the max itself, or 0 when
  // the max is −inf so that an all −inf block sums exp(−inf) = 0 instead of evaluating (−inf) − (−inf).
  SMK_HD static SMK_FORCEINLINE T shift_for(T max) { return max == -detail::inf_<T>() ? T(0) : max; }

  SMK_HD bool is_empty() const { return m == -detail::inf_<T>(); }
  SMK_HD bool is_saturated() const { return m == detail::inf_<T>(); }
  SMK_HD bool is_nan() const { return m != m; }

  SMK_HD void push(T x) {
    if (x != x || m != m) {  // NaN in, or already NaN: stays NaN
      m = l = detail::nan_<T>();
    } else if (x == -detail::inf_<T>() || m == detail::inf_<T>()) {
      // exp(−inf) adds nothing; a saturated state absorbs everything but NaN
    } else if (x == detail::inf_<T>()) {
      m = l = x;
    } else if (x > m) {  // new max; m may be −inf here, and exp(−inf − x) = 0 is the empty sum
      l = l * detail::exp_(m - x) + T(1);
      m = x;
    } else {
      l += detail::exp_(x - m);
    }
  }

  SMK_HD void merge(const OnlineSoftmaxState& other) {
    if (m != m || other.m != other.m) {
      m = l = detail::nan_<T>();
    } else if (other.is_empty()) {
      // identity
    } else if (is_empty()) {
      *this = other;
    } else if (is_saturated() || other.is_saturated()) {
      m = l = detail::inf_<T>();
    } else {
      const T M = m > other.m ? m : other.m;
      l = l * detail::exp_(m - M) + other.l * detail::exp_(other.m - M);
      m = M;
    }
  }

  // Weights that carry two partial *outputs* through the same merge: after `merge(other)`, an accumulator that was
  // relative to this state scales by `self`, one relative to `other` by `other` (the attention recurrence:
  // acc = acc_a·self + acc_b·other; final o = acc / l). Computed against the merged max M, so both are ≤ 1.
  struct MergeWeights {
    T self;
    T other;
  };
  SMK_HD MergeWeights merge_weights(const OnlineSoftmaxState& other) const {
    if (m != m || other.m != other.m || is_saturated() || other.is_saturated())
      return {detail::nan_<T>(), detail::nan_<T>()};
    if (other.is_empty()) return {T(1), T(0)};
    if (is_empty()) return {T(0), T(1)};
    const T M = m > other.m ? m : other.m;
    return {detail::exp_(m - M), detail::exp_(other.m - M)};
  }

  SMK_HD T lse() const {
    if (m != m || m == -detail::inf_<T>() || m == detail::inf_<T>()) return m;
    return m + detail::log_(l);
  }

  SMK_HD RowNormalizer<T> normalizer(EmptyRowPolicy policy = EmptyRowPolicy::nan) const {
    const T nan = detail::nan_<T>();
    if (m != m) return {nan, nan, nan, false};
    if (is_saturated()) return {T(0), nan, nan, false};
    if (is_empty()) {
      if (policy == EmptyRowPolicy::zeros) return {T(0), T(0), T(0), true};
      return {T(0), nan, nan, false};
    }
    return {m, T(1) / l, detail::log_(l), false};
  }
};

}  // namespace smk
