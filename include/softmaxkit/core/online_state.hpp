// softmaxkit: the online-softmax state, the one type that softmax, log-sum-exp, cross-entropy, attention and
// multi-GPU merges all share.
//
// A state summarises a multiset of scores x_1..x_k by two numbers:
//   m  the largest score seen (the running max),
//   d  the excess Σ exp(x_j − m) − 1 = l − 1, where l = Σ exp(x_j − m) is the classic online-softmax sum.
// Together they are the log-sum-exp stored in two safe pieces: LSE = m + log1p(d). A finite state always holds at
// least one score equal to m, whose term is exactly 1, so l ≥ 1 and d ≥ 0: storing d instead of l loses nothing,
// and it keeps the mass of the other scores, s = l − 1, at full *relative* precision. Stored as l, s would keep only
// the absolute precision u of a number near 1; log(l) (the LSE, the max score's log-probability −log l) would then
// carry an absolute error of ~u even when it is ~1e-6 itself (docs/accuracy.md "Beside torch": 27 f16 ulp on
// logsumexp of 7 elements). With d, log l = log1p(d) keeps its relative precision.
//
// Two states merge exactly (Milakov & Gimelshein 2018): with M = max(m_a, m_b) taken from side a,
// l = l_a + l_b·exp(m_b − M), that is d = d_a + (1 + d_b)·exp(m_b − M), or d_a + d_b + 1 on a tie. Every exponent
// is ≤ 0, so nothing overflows, and merge is commutative (bitwise) and associative up to rounding.
//
// The rules below are the contract (docs/semantics.md repeats them with their reasons). Each state is in exactly
// one of four regimes, told apart by m alone:
//
//   regime     m       d          l()        lse()          softmax of the row       why
//   empty      −inf    −1         0          −inf           NaN, or 0 (zeros policy) no scores, or only −inf
//   finite     finite  [0, k−1]   1 + d      m + log1p(d)   exp(x − m) / (1 + d)     the ordinary case
//   saturated  +inf    +inf       +inf       +inf           NaN                      a +inf score: LSE is +inf, but
//                                                                                    inf/inf is undefined (PyTorch)
//   nan        NaN     NaN        NaN        NaN            NaN                      a NaN score poisons the row
//
// - The empty state is the identity of merge, and (−inf) − (−inf) is never evaluated: merge and push branch on an
//   empty side before any subtraction.
// - NaN is sticky: no max, comparison or clamp can drop it (a plain `x > m` would).
// - A saturated state absorbs every finite or −inf score; merging it with a NaN state gives NaN.
// - Kernels that know the row max before they sum build a state with from_max_ties_and_rest(): the count of scores
//   equal to the max and the sum of the others' exponentials, so d = (ties − 1) + rest without ever adding a 1.
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
SMK_HD SMK_FORCEINLINE float log1p_(float x) { return ::log1pf(x); }
SMK_HD SMK_FORCEINLINE double log1p_(double x) { return ::log1p(x); }
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
  T inv_sum;     // 1 / l = 1 / (1 + d) for a finite row; NaN for NaN outputs; 0 for the zeros policy
  T log_sum;     // log l = log1p(d) for a finite row; NaN for NaN outputs; 0 for the zeros policy
  bool zero_fill;  // empty row under EmptyRowPolicy::zeros: every output is exactly 0

  SMK_HD SMK_FORCEINLINE T softmax(T x) const { return zero_fill ? T(0) : exp_diff(x, shift) * inv_sum; }
  // The same, for a kernel that already holds e = exp_diff(x, OnlineSoftmaxState::shift_for(row_max)) from its
  // summing pass. Equal to softmax(x) in every regime: for a non-finite row inv_sum is NaN or 0 and decides alone.
  SMK_HD SMK_FORCEINLINE T softmax_from_exp(T e) const { return e * inv_sum; }
  // (x − m) − log l, never x − LSE: for x near m the first difference is exact, so a dominant score gets
  // log-probability −log l = −log1p(d) without the cancellation of two large numbers, at full relative precision.
  SMK_HD SMK_FORCEINLINE T log_softmax(T x) const { return zero_fill ? T(0) : (x - shift) - log_sum; }
};

template <typename T>
struct OnlineSoftmaxState {
  T m;  // running max: −inf empty, +inf saturated, NaN poisoned
  T d;  // excess Σ exp(x − m) − 1 ≥ 0: −1 empty, +inf saturated, NaN poisoned

  // Declared so that the type is not an aggregate: a brace list {m, l} written for the former (m, l) layout fails
  // to compile instead of being read as (m, d). Still trivial, so arrays of states live in raw device memory.
  OnlineSoftmaxState() = default;
  // The two fields as they are, for code that moves a state through shuffles or memory and rebuilds it.
  SMK_HD static constexpr OnlineSoftmaxState from_fields(T m, T d) {
    OnlineSoftmaxState s;
    s.m = m;
    s.d = d;
    return s;
  }

  SMK_HD static constexpr OnlineSoftmaxState empty() { return from_fields(-detail::inf_<T>(), T(-1)); }

  // A state from a block's max and its excess; every regime is decided by `max` alone, as the table above says.
  SMK_HD static OnlineSoftmaxState from_max_and_excess(T max, T excess) {
    if (max != max) return from_fields(max, max);
    if (max == -detail::inf_<T>()) return empty();
    if (max == detail::inf_<T>()) return from_fields(max, max);
    return from_fields(max, excess);
  }

  // A state from a block's already-reduced max and shifted sum. `sum` must be Σ exp(x − shift) with
  // shift = shift_for(max). sum − 1 is exact for sum ≤ 2 (Sterbenz), so this adds no error of its own, but a sum
  // that already added the max's 1 has lost the small terms' relative precision: prefer from_max_ties_and_rest.
  SMK_HD static OnlineSoftmaxState from_max_and_sum(T max, T sum) { return from_max_and_excess(max, sum - T(1)); }

  // A state from a block's max, the number of its scores equal to the max (≥ 1 when the max is finite) and
  // `rest` = Σ exp(x − max) over the scores below it: d = (ties − 1) + rest, where rest keeps full relative
  // precision because no 1 was ever added to it. Any count type (int, int64) works.
  template <typename Count>
  SMK_HD static OnlineSoftmaxState from_max_ties_and_rest(T max, Count ties, T rest) {
    return from_max_and_excess(max, ties == Count(1) ? rest : T(ties - Count(1)) + rest);
  }

  // The state of a partial result whose log-sum-exp is `lse` (an attention split, another GPU's partial row).
  SMK_HD static OnlineSoftmaxState from_lse(T lse) { return from_max_and_excess(lse, T(0)); }

  // The shift a kernel subtracts before exponentiating, given the row (or block) max: the max itself, or 0 when
  // the max is −inf so that an all −inf block sums exp(−inf) = 0 instead of evaluating (−inf) − (−inf).
  SMK_HD static SMK_FORCEINLINE T shift_for(T max) { return max == -detail::inf_<T>() ? T(0) : max; }

  SMK_HD bool is_empty() const { return m == -detail::inf_<T>(); }
  SMK_HD bool is_saturated() const { return m == detail::inf_<T>(); }
  SMK_HD bool is_nan() const { return m != m; }

  // l = Σ exp(x − m) = 1 + d (rounded): 0 empty, +inf saturated, NaN poisoned. What softmax_state outputs; the
  // library's own formulas use d.
  SMK_HD T l() const { return is_empty() ? T(0) : T(1) + d; }

  SMK_HD void push(T x) {
    if (x != x || m != m) {  // NaN in, or already NaN: stays NaN
      m = d = detail::nan_<T>();
    } else if (x == -detail::inf_<T>() || m == detail::inf_<T>()) {
      // exp(−inf) adds nothing; a saturated state absorbs everything but NaN
    } else if (x == detail::inf_<T>()) {
      m = d = x;
    } else if (is_empty()) {
      m = x;
      d = T(0);
    } else if (x > m) {  // new max: every old term, the old max's 1 included, scales by exp(m − x)
      d = (T(1) + d) * exp_diff(m, x);
      m = x;
    } else {
      d += exp_diff(x, m);  // exactly 1 on a tie
    }
  }

  SMK_HD void merge(const OnlineSoftmaxState& other) {
    if (m != m || other.m != other.m) {
      m = d = detail::nan_<T>();
    } else if (other.is_empty()) {
      // identity
    } else if (is_empty()) {
      *this = other;
    } else if (is_saturated() || other.is_saturated()) {
      m = d = detail::inf_<T>();
    } else if (m == other.m) {
      d = (d + other.d) + T(1);
    } else if (m > other.m) {  // the side holding M keeps its excess; the other's whole sum 1 + d scales down
      d = d + (T(1) + other.d) * exp_diff(other.m, m);
    } else {
      d = other.d + (T(1) + d) * exp_diff(m, other.m);
      m = other.m;
    }
  }

  // Weights that carry two partial *outputs* through the same merge: after `merge(other)`, an accumulator that was
  // relative to this state scales by `self`, one relative to `other` by `other` (the attention recurrence:
  // acc = acc_a·self + acc_b·other; final o = acc / l). Computed against the merged max M, so both are ≤ 1, with
  // the same exponentials as merge().
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
    return {exp_diff(m, M), exp_diff(other.m, M)};
  }

  SMK_HD T lse() const {
    if (m != m || m == -detail::inf_<T>() || m == detail::inf_<T>()) return m;
    return m + detail::log1p_(d);
  }

  SMK_HD RowNormalizer<T> normalizer(EmptyRowPolicy policy = EmptyRowPolicy::nan) const {
    const T nan = detail::nan_<T>();
    if (m != m) return {nan, nan, nan, false};
    if (is_saturated()) return {T(0), nan, nan, false};
    if (is_empty()) {
      if (policy == EmptyRowPolicy::zeros) return {T(0), T(0), T(0), true};
      return {T(0), nan, nan, false};
    }
    return {m, T(1) / (T(1) + d), detail::log1p_(d), false};
  }
};

}  // namespace smk
