// Tests of `softmaxkit bench`'s GPU-free part: minimum traffic, bandwidth arithmetic, shape grids and parsing,
// statistics and the repetition count. Expected values are worked out by hand from the definitions in
// ../shared/ANCHORS.md (softmax 2n, logsumexp n, backward 3n elements), not taken from the code's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "bench_spec.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::app::bench {
namespace {

TEST(BenchTraffic, MinimumBytesFollowTheAnchorDefinition) {
  // 4096 × 151936 = 622,329,856 elements; softmax reads and writes them: × 2 × 4 bytes in f32.
  EXPECT_EQ(min_traffic_bytes(Op::softmax, DType::f32, 4096, 151936), 4978638848LL);
  EXPECT_EQ(min_traffic_bytes(Op::log_softmax, DType::f32, 4096, 151936), 4978638848LL);
  // logsumexp only reads: 16,777,216 bf16 elements of 2 bytes.
  EXPECT_EQ(min_traffic_bytes(Op::logsumexp, DType::bf16, 1, 16777216), 33554432LL);
  // Backward reads y and dy and writes dx: 3 × 32 × 128256 × 2 bytes.
  EXPECT_EQ(min_traffic_bytes(Op::softmax_backward, DType::bf16, 32, 128256), 24625152LL);
  EXPECT_EQ(min_traffic_bytes(Op::log_softmax_backward, DType::f16, 32, 128256), 24625152LL);
  EXPECT_EQ(min_traffic_bytes(Op::log_softmax_backward, DType::f32, 1048576, 32), 402653184LL);
  EXPECT_EQ(min_traffic_elements(Op::logsumexp, 262144, 128), 33554432LL);
}

TEST(BenchTraffic, BandwidthAndPercent) {
  EXPECT_DOUBLE_EQ(gb_per_s(1000000000, 1e6), 1.0);         // 1 GB in one second
  EXPECT_DOUBLE_EQ(gb_per_s(4270000000LL, 1000.0), 4270.0);  // 4.27 GB in a millisecond
  EXPECT_DOUBLE_EQ(gb_per_s(100, 0.0), 0.0);                 // no time measured: no bandwidth, not infinity
  EXPECT_DOUBLE_EQ(percent_of(3843.0, 4270.0), 90.0);
  EXPECT_DOUBLE_EQ(percent_of(1.0, 0.0), 0.0);
}

TEST(BenchShapes, IssueGridHoldsEveryRequiredShape) {
  const std::vector<Shape> issue = resolve_shapes({"issue"});
  std::set<std::pair<std::int64_t, std::int64_t>> got;
  for (const Shape& s : issue) {
    EXPECT_EQ(s.grid, "issue");
    got.insert({s.rows, s.cols});
  }
  const std::set<std::pair<std::int64_t, std::int64_t>> required = {
      {1, 151936},    {32, 128256},  {4096, 151936},  {8192, 32000},  {32768, 1024},
      {16384, 4096},  {4096, 16384}, {262144, 128},   {1048576, 32},  {1, 16777216}};
  EXPECT_EQ(got, required);
}

TEST(BenchShapes, SweepHoldsTheSizeAndDoublesTheRow) {
  const std::vector<Shape> sweep = resolve_shapes({"sweep"});
  ASSERT_EQ(sweep.size(), 17u);  // 2^5 .. 2^21
  std::int64_t cols = 32;
  for (const Shape& s : sweep) {
    EXPECT_EQ(s.cols, cols);
    EXPECT_EQ(s.rows * s.cols, std::int64_t{1} << 26);
    cols *= 2;
  }
}

TEST(BenchShapes, AllIsEveryDistinctBuiltinOnceAndNamesAreUnique) {
  // Two sweep points, 16384 x 4096 and 4096 x 16384, are issue shapes too: "all" keeps each (rows, cols) once,
  // under its first (issue) name.
  const std::vector<Shape> all = resolve_shapes({"all"});
  std::set<std::pair<std::int64_t, std::int64_t>> distinct;
  std::set<std::string> names;
  for (const Shape& s : builtin_shapes()) {
    distinct.insert({s.rows, s.cols});
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
  }
  EXPECT_EQ(all.size(), distinct.size());
  EXPECT_EQ(builtin_shapes().size(), distinct.size() + 2);
  const auto it =
      std::find_if(all.begin(), all.end(), [](const Shape& s) { return s.rows == 16384 && s.cols == 4096; });
  ASSERT_NE(it, all.end());
  EXPECT_EQ(it->grid, "issue");
}

TEST(BenchShapes, ExplicitNamedAndDuplicateItems) {
  const std::vector<Shape> s = resolve_shapes({"7x9", "qwen-vocab-1", "1x151936", "3\xc3\x97" "5", "ISSUE"});
  ASSERT_GE(s.size(), 3u);
  EXPECT_EQ(s[0].rows, 7);
  EXPECT_EQ(s[0].cols, 9);
  EXPECT_EQ(s[0].grid, "custom");
  EXPECT_EQ(s[1].name, "qwen-vocab-1");  // "1x151936" is the same shape: kept once, the first occurrence
  EXPECT_EQ(s[2].rows, 3);
  EXPECT_EQ(s[2].cols, 5);
  EXPECT_EQ(s.size(), 3u + 9u);  // the issue grid adds its other nine shapes
}

TEST(BenchShapes, BadItemsNameTheOption) {
  for (const char* bad : {"0x5", "5x", "x5", "abc", "1x2x3", "-1x4", "", "4x1099511627777"}) {
    try {
      resolve_shapes({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("--shape"), std::string::npos) << e.what();
    }
  }
}

TEST(BenchOps, ResolveOpsAndDtypes) {
  EXPECT_EQ(resolve_ops({"all"}).size(), 5u);
  const std::vector<Op> two = resolve_ops({"logsumexp", "softmax", "logsumexp"});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], Op::logsumexp);
  EXPECT_EQ(two[1], Op::softmax);
  EXPECT_THROW(resolve_ops({"softmax_forward"}), Error);
  const std::vector<DType> d = resolve_dtypes({"bf16", "f32", "float32"});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], DType::bf16);
  EXPECT_EQ(d[1], DType::f32);
  EXPECT_EQ(resolve_dtypes({"all"}).size(), 3u);
  EXPECT_THROW(resolve_dtypes({"f64"}), Error);
  EXPECT_TRUE(is_backward(Op::log_softmax_backward));
  EXPECT_FALSE(is_backward(Op::logsumexp));
  EXPECT_STREQ(op_name(Op::softmax_backward), "softmax_backward");
}

TEST(BenchStats, QuantilesInterpolateLinearly) {
  // 1..11 in scrambled order: the median is 6; the 10 % point sits at position 1 (value 2), the 90 % at 9 (10).
  const Summary s = summarize({7, 3, 11, 1, 9, 5, 2, 10, 4, 8, 6});
  EXPECT_EQ(s.count, 11);
  EXPECT_DOUBLE_EQ(s.median, 6.0);
  EXPECT_DOUBLE_EQ(s.p10, 2.0);
  EXPECT_DOUBLE_EQ(s.p90, 10.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.mean, 6.0);
  // Four samples: positions 1.5 (median), 0.3 and 2.7 between order statistics.
  const Summary f = summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(f.median, 2.5);
  EXPECT_NEAR(f.p10, 1.3, 1e-12);
  EXPECT_NEAR(f.p90, 3.7, 1e-12);
  const Summary one = summarize({5});
  EXPECT_DOUBLE_EQ(one.median, 5.0);
  EXPECT_DOUBLE_EQ(one.p90, 5.0);
  EXPECT_THROW(summarize({}), Error);
}

TEST(BenchStats, RepetitionCount) {
  EXPECT_EQ(choose_reps(0.1, 40.0, 20, 300), 300);  // 400 wanted, capped
  EXPECT_EQ(choose_reps(1.0, 40.0, 20, 300), 40);
  EXPECT_EQ(choose_reps(2.5, 40.0, 20, 300), 20);   // 16 wanted, raised to the minimum
  EXPECT_EQ(choose_reps(500.0, 40.0, 20, 300), 4);  // 20 × 0.5 s would take 10 s: 2 s of it, 4 calls
  EXPECT_EQ(choose_reps(3000.0, 40.0, 20, 300), 3); // never fewer than 3
  EXPECT_EQ(choose_reps(0.0, 40.0, 20, 300), 300);
}

}  // namespace
}  // namespace smk::app::bench
