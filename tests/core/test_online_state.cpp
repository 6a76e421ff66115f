// The online-softmax state: its algebra (identity, commutativity, associativity) and its four regimes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "softmaxkit/core/online_state.hpp"

namespace {

using State = smk::OnlineSoftmaxState<double>;
using StateF = smk::OnlineSoftmaxState<float>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

State of(std::initializer_list<double> xs) {
  State s = State::empty();
  for (double x : xs) s.push(x);
  return s;
}

double exact_lse(const std::vector<double>& xs) {  // long double, two-pass: an independent oracle
  long double m = -INFINITY;
  for (double x : xs) m = std::max<long double>(m, x);
  long double sum = 0;
  for (double x : xs) sum += std::exp(static_cast<long double>(x) - m);
  return static_cast<double>(m + std::log(sum));
}

// The article's trace over [1, 3, 2]: m = 3, l = e^-2 + 1 + e^-1 = 1.5032, LSE = 3.4076.
TEST(OnlineState, ArticleTraceOneThreeTwo) {
  State s = State::empty();
  s.push(1);
  EXPECT_EQ(s.m, 1);
  EXPECT_EQ(s.l(), 1);
  s.push(3);
  EXPECT_EQ(s.m, 3);
  EXPECT_NEAR(s.l(), std::exp(-2.0) + 1, 1e-15);
  s.push(2);
  EXPECT_EQ(s.m, 3);
  EXPECT_NEAR(s.l(), 1.5032, 5e-5);
  EXPECT_NEAR(s.l(), std::exp(-2.0) + 1 + std::exp(-1.0), 1e-15);
  EXPECT_NEAR(s.lse(), 3.4076, 5e-5);
  EXPECT_NEAR(s.lse(), std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0)), 1e-14);
}

TEST(OnlineState, EmptyIsTheIdentityOfMerge) {
  const State e = State::empty();
  EXPECT_TRUE(e.is_empty());
  EXPECT_EQ(e.lse(), -kInf);
  for (const State& s : {of({1.0, 2.0}), of({-5.0}), of({kInf}), State::empty()}) {
    State left = e;
    left.merge(s);
    State right = s;
    right.merge(e);
    EXPECT_EQ(left.m, s.m);
    EXPECT_EQ(right.m, s.m);
    if (!std::isnan(s.l())) {
      EXPECT_EQ(left.l(), s.l());
      EXPECT_EQ(right.l(), s.l());
    }
  }
  State both = e;
  both.merge(e);  // (−inf) − (−inf) would make this NaN
  EXPECT_TRUE(both.is_empty());
  EXPECT_EQ(both.l(), 0.0);
  State only_neg_inf = of({-kInf, -kInf});
  EXPECT_TRUE(only_neg_inf.is_empty());
  EXPECT_FALSE(std::isnan(only_neg_inf.l()));
}

TEST(OnlineState, MergeIsCommutativeAndAssociative) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> score(-60, 60);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<double> xs[3];
    State parts[3];
    for (int p = 0; p < 3; ++p) {
      parts[p] = State::empty();
      for (int i = 0; i < 1 + trial % 17; ++i) {
        xs[p].push_back(score(rng));
        parts[p].push(xs[p].back());
      }
    }
    State ab = parts[0], ba = parts[1];
    ab.merge(parts[1]);
    ba.merge(parts[0]);
    EXPECT_EQ(ab.m, ba.m);
    EXPECT_EQ(ab.d, ba.d);  // IEEE addition commutes: bitwise equal
    State ab_c = ab, bc = parts[1], a_bc = parts[0];
    ab_c.merge(parts[2]);
    bc.merge(parts[2]);
    a_bc.merge(bc);
    EXPECT_EQ(ab_c.m, a_bc.m);
    EXPECT_NEAR(ab_c.l(), a_bc.l(), 8 * std::numeric_limits<double>::epsilon() * ab_c.l());
    std::vector<double> all;
    for (auto& v : xs) all.insert(all.end(), v.begin(), v.end());
    EXPECT_NEAR(ab_c.lse(), exact_lse(all), 1e-13 * (1 + std::fabs(ab_c.lse())));
  }
}

TEST(OnlineState, PushEqualsMergeOfSingletons) {
  State pushed = of({0.5, -3.0, 7.25, 7.25});
  State merged = State::empty();
  for (double x : {0.5, -3.0, 7.25, 7.25}) merged.merge(State::from_max_and_sum(x, 1.0));
  EXPECT_EQ(pushed.m, merged.m);
  EXPECT_NEAR(pushed.l(), merged.l(), 1e-15);
}

// The excess d = l − 1 keeps the mass of the non-max scores at full relative precision, so the LSE and the max's
// log-probability −log l stay accurate when they are tiny. The oracle is analytic: for [0, −t, −t, ...] with k
// scores at −t, l − 1 = k·e^−t exactly, and log l = log1p(k·e^−t), evaluated in long double.
TEST(OnlineState, ExcessKeepsTinyLogSumsRelativelyExact) {
  for (float t : {5.0f, 12.0f, 20.0f, 40.0f, 80.0f}) {
    for (int k : {1, 2, 6, 31}) {
      StateF pushed = StateF::empty();
      pushed.push(0.0f);
      for (int i = 0; i < k; ++i) pushed.push(-t);
      StateF merged = StateF::empty();  // the same scores through merges of singletons, max last
      for (int i = 0; i < k; ++i) merged.merge(StateF::from_lse(-t));
      merged.merge(StateF::from_lse(0.0f));
      // A kernel's way: the max counted, the rest summed without it.
      float rest = 0;
      for (int i = 0; i < k; ++i) rest += smk::exp_diff(-t, 0.0f);
      const StateF kernel = StateF::from_max_ties_and_rest(0.0f, 1, rest);
      const long double excess = k * std::exp(-static_cast<long double>(t));
      const long double lse = std::log1p(excess);
      for (const StateF& s : {pushed, merged, kernel}) {
        EXPECT_EQ(s.m, 0.0f);
        // k roundings of the running sum and one of exp: ≤ (k + 2)·u relative.
        EXPECT_LE(std::fabs(s.d - excess) / excess, (k + 2) * std::ldexp(1.0, -24)) << t << " " << k;
        EXPECT_LE(std::fabs(s.lse() - lse) / lse, (k + 4) * std::ldexp(1.0, -24)) << t << " " << k;
        EXPECT_LE(std::fabs(s.normalizer().log_softmax(0.0f) + lse) / lse, (k + 4) * std::ldexp(1.0, -24));
      }
    }
  }
  // Ties: d counts every extra copy of the max exactly.
  const StateF ties = StateF::from_max_ties_and_rest(2.0f, 3, 0.25f);
  EXPECT_EQ(ties.d, 2.25f);
  EXPECT_EQ(ties.l(), 3.25f);
  StateF a = StateF::from_lse(1.0f), b = StateF::from_lse(1.0f);
  a.merge(b);
  EXPECT_EQ(a.d, 1.0f);
  EXPECT_EQ(a.lse(), 1.0f + std::log(2.0f));
  EXPECT_EQ(StateF::from_max_ties_and_rest(-INFINITY, 7, 0.0f).lse(), -INFINITY);
  EXPECT_TRUE(StateF::from_max_ties_and_rest(NAN, 0, 0.0f).is_nan());
  EXPECT_EQ(StateF::from_max_ties_and_rest(INFINITY, 2, 0.0f).lse(), INFINITY);
}

TEST(OnlineState, NaNIsStickyAndNeverDropped) {
  EXPECT_TRUE(of({kNaN}).is_nan());
  EXPECT_TRUE(of({1.0, kNaN, 2.0}).is_nan());   // a later larger score must not overwrite it
  EXPECT_TRUE(of({kNaN, -kInf}).is_nan());
  EXPECT_TRUE(of({kInf, kNaN}).is_nan());
  EXPECT_TRUE(of({kNaN, kInf}).is_nan());
  EXPECT_TRUE(std::isnan(of({3.0, kNaN}).lse()));
  State nan = of({kNaN});
  State e = State::empty();
  e.merge(nan);
  EXPECT_TRUE(e.is_nan());
  State sat = of({kInf});
  sat.merge(nan);
  EXPECT_TRUE(sat.is_nan());
  EXPECT_TRUE(std::isnan(smk::nan_max(1.0, kNaN)));
  EXPECT_TRUE(std::isnan(smk::nan_max(kNaN, 1.0)));
}

TEST(OnlineState, PositiveInfinitySaturates) {
  State s = of({1.0, kInf, 2.0, kInf, -kInf});
  EXPECT_TRUE(s.is_saturated());
  EXPECT_EQ(s.lse(), kInf);
  State t = of({5.0});
  t.merge(s);
  EXPECT_EQ(t.lse(), kInf);
  const auto norm = s.normalizer();
  EXPECT_TRUE(std::isnan(norm.softmax(1.0)));
  EXPECT_TRUE(std::isnan(norm.softmax(kInf)));
  EXPECT_TRUE(std::isnan(norm.log_softmax(1.0)));
}

TEST(OnlineState, NormalizerRegimes) {
  const State finite = of({1.0, 2.0, 3.0});
  const auto n = finite.normalizer();
  const double total = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(n.softmax(3.0), std::exp(3.0) / total, 1e-15);
  EXPECT_NEAR(n.log_softmax(1.0), 1.0 - std::log(total), 1e-14);
  EXPECT_EQ(n.softmax(-kInf), 0.0);
  EXPECT_EQ(n.log_softmax(-kInf), -kInf);

  const State empty = of({-kInf, -kInf});
  EXPECT_TRUE(std::isnan(empty.normalizer(smk::EmptyRowPolicy::nan).softmax(-kInf)));
  EXPECT_TRUE(std::isnan(empty.normalizer(smk::EmptyRowPolicy::nan).log_softmax(-kInf)));
  EXPECT_EQ(empty.normalizer(smk::EmptyRowPolicy::zeros).softmax(-kInf), 0.0);
  EXPECT_EQ(empty.normalizer(smk::EmptyRowPolicy::zeros).log_softmax(-kInf), 0.0);
  EXPECT_EQ(empty.normalizer(smk::EmptyRowPolicy::zeros).softmax_from_exp(0.0), 0.0);
}

TEST(OnlineState, MergeWeightsCarryPartialOutputs) {
  // Two halves of [1, 3, 2, 0]: weighted partial sums of a value v_i = i must merge to the full weighted sum.
  const std::vector<double> x = {1, 3, 2, 0};
  State a = of({x[0], x[1]}), b = of({x[2], x[3]});
  double acc_a = std::exp(x[0] - a.m) * 0 + std::exp(x[1] - a.m) * 1;
  double acc_b = std::exp(x[2] - b.m) * 2 + std::exp(x[3] - b.m) * 3;
  const auto w = a.merge_weights(b);
  a.merge(b);
  const double o = (acc_a * w.self + acc_b * w.other) / a.l();
  double num = 0, den = 0;
  for (int i = 0; i < 4; ++i) {
    num += std::exp(x[i]) * i;
    den += std::exp(x[i]);
  }
  EXPECT_NEAR(o, num / den, 1e-15);
  const auto we = State::empty().merge_weights(of({1.0}));
  EXPECT_EQ(we.self, 0.0);
  EXPECT_EQ(we.other, 1.0);
}

// exp_diff folds the subtraction's rounding back in: for x = 1e-3 and m = 50 the float difference is off by up
// to 2^-20, which a plain expf(x − m) carries into a relative error of ~1e-6 (≈ 16 u).
TEST(OnlineState, ExpDiffIsAccurateForLargeGaps) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> small(-1e-2f, 1e-2f), big(20.0f, 80.0f);
  double worst = 0;
  for (int i = 0; i < 10000; ++i) {
    const float x = small(rng), m = big(rng);
    const double exact = std::exp(static_cast<double>(x) - static_cast<double>(m));
    worst = std::max(worst, std::fabs(smk::exp_diff(x, m) - exact) / exact);
  }
  // glibc's expf is correctly rounded to within 1 ulp (≤ 2u relative); the TwoSum correction adds ~u.
  EXPECT_LT(worst, 4.0 * std::ldexp(1.0, -24));
}

}  // namespace
