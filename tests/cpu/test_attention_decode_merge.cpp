// The merge of partial attention results (merge_attention_states), as decode's splits and its callers use it: the
// empty part is the identity (exactly), the merge commutes (bit for bit: both orders add the same two products), and
// it is associative up to rounding; on the CPU float path. tests/cuda/attention/test_decode.cpp checks the same on
// the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "softmaxkit/attention.hpp"

namespace {

using smk::TensorView;

struct Part {
  std::vector<float> o, lse;
};

Part random_part(std::int64_t rows, std::int64_t d, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0, 1);
  Part p{std::vector<float>(rows * d), std::vector<float>(rows)};
  for (float& x : p.o) x = dist(rng);
  for (float& x : p.lse) x = 4 * dist(rng);
  return p;
}

Part merge(const Part& a, const Part& b, std::int64_t rows, std::int64_t d) {
  Part out{std::vector<float>(rows * d, NAN), std::vector<float>(rows, NAN)};
  smk::merge_attention_states(TensorView::of(out.o.data(), {rows, d}), TensorView::of(out.lse.data(), {rows}),
                              TensorView::of(a.o.data(), {rows, d}), TensorView::of(a.lse.data(), {rows}),
                              TensorView::of(b.o.data(), {rows, d}), TensorView::of(b.lse.data(), {rows}));
  return out;
}

TEST(CpuMergeAlgebra, IdentityCommutativityAssociativity) {
  const std::int64_t rows = 257, d = 64;
  const Part a = random_part(rows, d, 1), b = random_part(rows, d, 2), c = random_part(rows, d, 3);
  Part empty{std::vector<float>(rows * d, NAN), std::vector<float>(rows, -INFINITY)};  // garbage O must not leak
  const Part ae = merge(a, empty, rows, d), ea = merge(empty, a, rows, d);
  for (std::int64_t i = 0; i < rows * d; ++i) {
    ASSERT_EQ(ae.o[i], a.o[i]) << i;
    ASSERT_EQ(ea.o[i], a.o[i]) << i;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(ae.lse[r], a.lse[r]) << r;
    ASSERT_EQ(ea.lse[r], a.lse[r]) << r;
  }
  const Part ab = merge(a, b, rows, d), ba = merge(b, a, rows, d);
  for (std::int64_t i = 0; i < rows * d; ++i) ASSERT_EQ(ab.o[i], ba.o[i]) << i;
  for (std::int64_t r = 0; r < rows; ++r) ASSERT_EQ(ab.lse[r], ba.lse[r]) << r;
  // (a ⊕ b) ⊕ c against a ⊕ (b ⊕ c), worst case: one merge's O is off by ≤ 13u·max|O| of its inputs (each weight
  // 5u, exp_diff's bound in docs/semantics.md, its product u, the sum u, the final 1/l 6u); two merges per side and
  // two sides: 52u·max|O| ≈ 6.2e-6·max|O|, checked at 8e-6. The LSE: m + log1p(d), d off by ~6u absolute and log1p
  // by u, plus u·|LSE| for the final add: 30u + 4u·|LSE| over both sides, checked at 4e-6 + 4.8e-7·|LSE|.
  const Part left = merge(ab, c, rows, d), bc = merge(b, c, rows, d), right = merge(a, bc, rows, d);
  for (std::int64_t r = 0; r < rows; ++r) {
    float scale = 0;
    for (const Part* p : {&a, &b, &c})
      for (std::int64_t x = 0; x < d; ++x) scale = std::max(scale, std::fabs(p->o[r * d + x]));
    for (std::int64_t x = 0; x < d; ++x) ASSERT_NEAR(left.o[r * d + x], right.o[r * d + x], 8e-6 * scale) << r;
    ASSERT_NEAR(left.lse[r], right.lse[r], 4e-6 + 4.8e-7 * std::fabs(left.lse[r])) << r;
  }
}

}  // namespace
