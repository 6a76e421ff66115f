// The conformance suite: every case of issue 4's adversarial list, run on every backend (the CPU reference, the CPU
// float path, the public dispatch, and each GPU kernel path forced one by one), each held to the contract of
// docs/semantics.md by one checker (harness.cpp) against a long-double oracle computed from the stored inputs.
//
// A forced GPU path that cannot serve a case (smk::Error(unsupported)) does not pass it: the case is counted as not
// applicable, printed, and a test in which no case applied is reported as skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "conformance/fixture.hpp"

namespace smk::conformance {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

std::vector<double> normal(std::int64_t count, double sigma, std::uint64_t seed, double mean = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sigma);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = d(rng);
  return v;
}
std::vector<double> uniform(std::int64_t count, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = d(rng);
  return v;
}
std::string tname(DType t) { return dtype_name(t); }

}  // namespace

// 1. Rows of only −inf (fully masked), alone and mixed into batches, under both EmptyRowPolicy values.
TEST_P(Conformance, AllNegInfRows) {
  std::vector<Spec> specs;
  for (DType t : kTypes)
    for (EmptyRowPolicy policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
      const std::string pol = policy == EmptyRowPolicy::nan ? "nan" : "zeros";
      for (std::int64_t n : {1, 7, 1000}) {
        Spec s = spec("all_neg_inf_alone_n" + std::to_string(n) + "_" + pol, t, {1, n}, std::vector<double>(n, -kInf));
        s.options.empty_rows = policy;
        specs.push_back(s);
      }
      // Mixed: rows 0, 2 and 5 masked; row 3 partly masked; the others ordinary.
      std::vector<double> v = normal(6 * 37, 2, 11);
      for (int r : {0, 2, 5})
        for (int i = 0; i < 37; ++i) v[r * 37 + i] = -kInf;
      for (int i = 0; i < 37; i += 2) v[3 * 37 + i] = -kInf;
      Spec s = spec("all_neg_inf_mixed_" + pol, t, {6, 37}, v);
      s.options.empty_rows = policy;
      specs.push_back(s);
    }
  expect_conforms(specs);
  finish();
}

// 1. The first block (or tile, or split) of a row fully masked, the later ones negative: a kernel that shifts
// a block by 0 when its max is −inf, or merges an empty partial state wrongly, zeroes or NaNs the whole row.
TEST_P(Conformance, FirstBlockFullyMasked) {
  std::vector<Spec> specs;
  struct Shape { std::int64_t n, masked; bool all_types; };
  for (Shape sh : {Shape{5000, 2048, true}, Shape{70000, 65536, true}, Shape{300000, 262144, false}})
    for (DType t : kTypes) {
      if (!sh.all_types && t != DType::f32) continue;
      for (double level : {-1.0, -200.0}) {  // −200: exp(x − 0) underflows to 0 if the shift is wrongly 0
        std::vector<double> v = uniform(2 * sh.n, level - 10, level, 21 + sh.n);
        for (std::int64_t i = 0; i < sh.masked; ++i) v[i] = -kInf;                 // row 0: masked prefix
        for (std::int64_t i = sh.n - sh.masked; i < sh.n; ++i) v[sh.n + i] = -kInf;  // row 1: masked suffix
        specs.push_back(spec("first_" + std::to_string(sh.masked) + "_of_" + std::to_string(sh.n) + "_masked_level" +
                                 std::to_string(static_cast<int>(level)),
                             t, {2, sh.n}, v));
      }
    }
  expect_conforms(specs);
  finish();
}

// 2. +inf: alone, several, with −inf, with NaN (NaN wins); a clean row beside each, which must be unaffected.
TEST_P(Conformance, PositiveInfinity) {
  std::vector<Spec> specs;
  for (DType t : kTypes)
    for (std::int64_t n : {1, 37, 5000}) {
      std::vector<std::vector<double>> rows;
      auto base = [&](std::uint64_t seed) { return normal(n, 3, seed); };
      for (std::int64_t pos : {std::int64_t{0}, n / 2, n - 1}) {
        auto r = base(31 + pos);
        r[pos] = kInf;
        rows.push_back(r);
      }
      auto several = base(41);
      for (std::int64_t i = 0; i < n; i += 3) several[i] = kInf;
      rows.push_back(several);
      auto with_neg = base(42);
      with_neg[n - 1] = kInf;
      for (std::int64_t i = 0; i + 1 < n; i += 2) with_neg[i] = -kInf;
      rows.push_back(with_neg);
      auto with_nan = base(43);
      with_nan[0] = kInf;
      with_nan[n - 1] = kNaN;
      rows.push_back(with_nan);
      rows.push_back(base(44));  // clean
      std::vector<double> v;
      for (auto& r : rows) v.insert(v.end(), r.begin(), r.end());
      specs.push_back(spec("pos_inf_n" + std::to_string(n), t, {static_cast<std::int64_t>(rows.size()), n}, v));
    }
  expect_conforms(specs);
  finish();
}

// 2. NaN at the first, middle and last position and at 16-byte vector-lane boundaries (4 f32 or 8 f16 lanes),
// aligned and with the row start shifted off the vector boundary; NaN is never dropped by a max or a clamp.
TEST_P(Conformance, NaNAtEveryLaneBoundary) {
  std::vector<Spec> specs;
  for (DType t : kTypes)
    for (std::int64_t n : {37, 64, 5000})
      for (std::int64_t offset : {0, 1, 3}) {
        std::vector<std::int64_t> positions;
        for (std::int64_t pos : {std::int64_t{0}, std::int64_t{3}, std::int64_t{4}, std::int64_t{7}, std::int64_t{8},
                                 std::int64_t{15}, std::int64_t{16}, std::int64_t{31}, std::int64_t{32}, n / 2, n - 1})
          if (pos < n) positions.push_back(pos);
        const auto rows = static_cast<std::int64_t>(positions.size()) + 2;
        std::vector<double> v = normal(rows * n, 3, 51 + n);
        for (std::size_t r = 0; r < positions.size(); ++r) v[r * n + positions[r]] = kNaN;
        // A row with NaN and −inf, and a clean row last.
        v[positions.size() * n + n / 3] = kNaN;
        v[positions.size() * n] = -kInf;
        Spec s = spec("nan_positions_n" + std::to_string(n) + "_offset" + std::to_string(offset), t, {rows, n}, v);
        s.in_offset = offset;
        s.out_offset = offset;
        specs.push_back(s);
      }
  expect_conforms(specs);
  finish();
}

// 3. Empty rows (n × 0): softmax writes nothing, logsumexp writes −inf. Also a size-0 dimension reduced over
// with dim = 0, and a rank-3 tensor with an empty middle dimension.
TEST_P(Conformance, EmptyRows) {
  std::vector<Spec> specs;
  for (DType t : kTypes) {
    specs.push_back(spec("empty_rows_4x0", t, {4, 0}, {}));
    specs.push_back(spec("empty_rows_1x0", t, {1, 0}, {}));
    Spec s = spec("empty_rows_0x5_dim0", t, {0, 5}, {});
    s.dim = 0;
    specs.push_back(s);
    s = spec("empty_rows_2x0x3_dim1", t, {2, 0, 3}, {});
    s.dim = 1;
    specs.push_back(s);
  }
  expect_conforms(specs);
  finish();
}

// 3. Zero rows (0 × n): the call returns at once and writes nothing (the poisoned output is intact), with real
// buffers and with null pointers (a launch would fault on them).
TEST_P(Conformance, ZeroRowsWriteNothing) {
  std::vector<Spec> specs;
  for (DType t : kTypes)
    for (bool null_data : {false, true}) {
      for (std::int64_t n : {7, 5000}) {
        Spec s = spec("zero_rows_0x" + std::to_string(n) + (null_data ? "_null" : ""), t, {0, n}, {});
        s.null_data = null_data;
        specs.push_back(s);
      }
      Spec s = spec(std::string("zero_rows_3x0x7") + (null_data ? "_null" : ""), t, {3, 0, 7}, {});
      s.null_data = null_data;
      specs.push_back(s);
    }
  expect_conforms(specs);
  finish();
}

// 4. Shift invariance: a row and the same row shifted by c, where every shifted value is exact in the input type,
// give bitwise the same softmax and log-softmax (x − max is exact in both, so nothing else can differ), and each
// meets the gates; logsumexp moves by c within its gate.
TEST_P(Conformance, ShiftInvariance) {
  struct Shift { DType t; double c; double step; const char* what; };
  // step: the spacing of the base values, chosen so that base + c is exact in t.
  const Shift shifts[] = {{DType::f32, 1e3, 0x1p-10, "f32_plus_1e3"},   {DType::f32, 1e7, 1, "f32_plus_1e7"},
                          {DType::f32, -1e7, 1, "f32_minus_1e7"},        {DType::f16, 1.5e3, 1, "f16_plus_1500"},
                          {DType::bf16, 133120, 1024, "bf16_near_133120"}};
  for (const Shift& sh : shifts)
    for (std::int64_t n : {3, 37, 1000}) {
      std::mt19937_64 rng(61 + n);
      std::uniform_int_distribution<int> k(sh.t == DType::bf16 ? -3 : -20 * static_cast<int>(1 / sh.step), 0);
      std::vector<double> base(2 * n), shifted(2 * n);
      for (std::int64_t i = 0; i < 2 * n; ++i) {
        base[i] = k(rng) * sh.step;
        shifted[i] = base[i] + sh.c;
        ASSERT_EQ(representable(sh.t, shifted[i]), shifted[i]) << "the test's shift must be exact";
        ASSERT_EQ(representable(sh.t, base[i]), base[i]);
      }
      const std::string name = std::string("shift_") + sh.what + "_n" + std::to_string(n);
      const Spec a = spec(name + "_base", sh.t, {2, n}, base);
      const Spec b = spec(name, sh.t, {2, n}, shifted);
      for (Op op : {Op::softmax, Op::log_softmax}) {
        const RunResult ra = run_checked(a, op);
        const RunResult rb = run_checked(b, op);
        if (!ra.applicable || !rb.applicable) continue;
        const Problem pa = make_problem(a, op), pb = make_problem(b, op);
        for (std::int64_t row = 0; row < 2; ++row) {
          const auto ya = row_output(pa, ra, row), yb = row_output(pb, rb, row);
          for (std::int64_t i = 0; i < n; ++i)
            ASSERT_EQ(std::memcmp(&ya[i], &yb[i], sizeof(double)), 0)
                << name << " " << op_name(op) << " row " << row << " position " << i << ": unshifted " << ya[i]
                << ", shifted " << yb[i];
        }
      }
      run_checked(b, Op::logsumexp);
    }
  finish();
}

// 4. log_softmax([1000, 1]) = [0, −999] exactly: x − max is exact and log(1 + e^−999) rounds to log 1 = 0, so the
// dominant score's log-probability is exactly 0 and the other exactly −999 (rounded once to the output type).
// Also softmax = [1, 0] and logsumexp = 1000 exactly, and the same with the order reversed.
TEST_P(Conformance, LogSoftmaxWideGapIsExact) {
  for (DType t : kTypes)
    for (bool reversed : {false, true}) {
      const std::vector<double> x = reversed ? std::vector<double>{1, 1000} : std::vector<double>{1000, 1};
      const std::int64_t big = reversed ? 1 : 0, small = 1 - big;
      const Spec s = spec(std::string("gap_1000_1_") + tname(t) + (reversed ? "_reversed" : ""), t, {1, 2}, x);
      const RunResult ls = run_checked(s, Op::log_softmax);
      if (ls.applicable) {
        const auto y = row_output(make_problem(s, Op::log_softmax), ls, 0);
        EXPECT_EQ(y[big], 0.0) << s.name;
        EXPECT_EQ(y[small], static_cast<double>(round_to(t, -999.0L))) << s.name;
      }
      const RunResult sm = run_checked(s, Op::softmax);
      if (sm.applicable) {
        const auto y = row_output(make_problem(s, Op::softmax), sm, 0);
        EXPECT_EQ(y[big], 1.0) << s.name;
        EXPECT_EQ(y[small], 0.0) << s.name;
      }
      const RunResult lse = run_checked(s, Op::logsumexp);
      if (lse.applicable) EXPECT_EQ(row_output(make_problem(s, Op::logsumexp), lse, 0)[0], 1000.0) << s.name;
    }
  finish();
}

// 5. Wide ranges within a row, the f32 underflow region, and near-ties where one probability tends to 1.
TEST_P(Conformance, WideRangesAndNearTies) {
  for (DType t : kTypes) {
    const double huge = t == DType::f16 ? 6e4 : 1e10;  // f16 tops out at 65504
    const std::vector<std::vector<double>> rows = {
        {0, -40},
        {huge, 1e-10},
        {huge, -huge},
        {-huge, huge, 0},
        {0, -87, -88, -89, -100, -103, -104, -150},  // f32 exp underflows into subnormals, then to 0
        {30, 0, 0, 0, 0, 0, 0, 0},                   // one probability within 1e-12 of 1
        {0, -1e-3, -2e-3, -1e-3, 0, -5e-4},
        {1, 1 + 0x1p-20, 1 - 0x1p-20, 1},  // ties broken below f16/bf16 precision
        {-1e-30, 0, 1e-30, 0},
    };
    std::vector<Spec> specs;
    for (std::size_t r = 0; r < rows.size(); ++r)
      specs.push_back(spec("wide_" + std::to_string(r), t, {1, static_cast<std::int64_t>(rows[r].size())}, rows[r]));
    // A long near-tie: 4096 equal scores and one slightly larger.
    std::vector<double> tie(4096, 0.25);
    tie[1234] = 0.25 + 0x1p-12;
    specs.push_back(spec("near_tie_4096", t, {1, 4096}, tie));
    expect_conforms(specs);
  }
  finish();
}

// 6. Long f16 and bf16 rows of equal logits: every probability is 1/n within one ulp of the output type. A 16-bit
// accumulator stalls (f16 2048 + 1 = 2048) and fails this.
TEST_P(Conformance, EqualLogitsLongSixteenBitRows) {
  for (DType t : {DType::f16, DType::bf16})
    for (std::int64_t n : {1000, 4097, 65537})
      for (double level : {0.0, 3.5}) {
        const Spec s = spec("equal_" + std::to_string(n) + "_" + tname(t), t, {1, n}, std::vector<double>(n, level));
        const RunResult r = run_checked(s, Op::softmax);
        if (!r.applicable) continue;
        const auto y = row_output(make_problem(s, Op::softmax), r, 0);
        const double want = static_cast<double>(round_to(t, 1.0L / n));
        for (std::int64_t i = 0; i < n; ++i)
          ASSERT_LE(ulp_distance(t, y[i], want), 1) << s.name << " position " << i << ": " << y[i] << " vs 1/n " << want;
        run_checked(s, Op::log_softmax);
        run_checked(s, Op::logsumexp);
      }
  finish();
}

// 7. Row-length sweep across every block, warp and vector boundary the kernels have, in each dtype.
TEST_P(Conformance, RowLengthSweep) {
  const std::int64_t lengths[] = {1,   2,   3,    4,    5,    7,    8,    9,    15,   16,   17,    31,    32,   33,
                                  63,  64,  65,   127,  128,  129,  255,  256,  257,  511,  512,   513,   1023, 1024,
                                  1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8193, 16385, 32769, 65537, 131073};
  for (DType t : kTypes) {
    std::vector<Spec> specs;
    for (std::int64_t n : lengths) {
      std::vector<double> v = normal(n, 3, 71 + n);
      auto wide = uniform(n, -80, 0, 72 + n);  // probabilities down to e^-80: exp_diff's territory
      auto sharp = normal(n, 12, 73 + n);
      v.insert(v.end(), wide.begin(), wide.end());
      v.insert(v.end(), sharp.begin(), sharp.end());
      specs.push_back(spec("sweep_n" + std::to_string(n), t, {3, n}, v));
    }
    expect_conforms(specs);
  }
  finish();
}

// 7. Strided, offset, unaligned, transposed and broadcast inputs; outputs into offset and strided views; a
// reduction over a non-last dimension. Input padding is NaN, so reading outside the view shows.
TEST_P(Conformance, StridedOffsetUnalignedViews) {
  for (DType t : kTypes) {
    std::vector<Spec> specs;
    Spec s = spec("padded_rows_offset", t, {5, 37}, normal(5 * 37, 3, 81));
    s.in_strides = {41, 1};
    s.in_offset = 3;
    s.out_strides = {39, 1};
    s.out_offset = 1;
    specs.push_back(s);

    s = spec("column_major_rows", t, {5, 37}, normal(5 * 37, 3, 82));
    s.in_strides = {1, 5};
    specs.push_back(s);

    s = spec("reduce_dim0", t, {37, 5}, normal(37 * 5, 3, 83));
    s.dim = 0;
    specs.push_back(s);

    s = spec("reduce_middle_of_3d", t, {3, 33, 4}, normal(3 * 33 * 4, 3, 84));
    s.dim = 1;
    specs.push_back(s);

    s = spec("reduce_middle_of_3d_long", t, {2, 5000, 3}, normal(2 * 5000 * 3, 3, 85));
    s.dim = 1;
    specs.push_back(s);

    for (std::int64_t offset : {1, 2, 3}) {
      s = spec("unaligned_offset" + std::to_string(offset), t, {7, 64}, normal(7 * 64, 3, 86 + offset));
      s.in_offset = offset;
      s.out_offset = 4 - offset;
      specs.push_back(s);
    }

    s = spec("stride2_along_row", t, {4, 33}, normal(4 * 33, 3, 90));
    s.in_strides = {70, 2};
    specs.push_back(s);

    s = spec("broadcast_input_row", t, {4, 37}, [] {  // stride 0: four copies of one row
      auto r = normal(37, 3, 91);
      std::vector<double> v;
      for (int i = 0; i < 4; ++i) v.insert(v.end(), r.begin(), r.end());
      return v;
    }());
    s.in_strides = {0, 1};
    specs.push_back(s);

    s = spec("output_into_offset_strided_view", t, {6, 1000}, normal(6 * 1000, 3, 92));
    s.out_strides = {1003, 1};
    s.out_offset = 5;
    specs.push_back(s);

    s = spec("output_transposed", t, {6, 129}, normal(6 * 129, 3, 93));
    s.out_strides = {1, 6};
    specs.push_back(s);
    expect_conforms(specs);
  }
  finish();
}

// 7. In place (out is the input view): allowed for softmax and log-softmax with the same dtype, and correct.
TEST_P(Conformance, InPlace) {
  for (DType t : kTypes) {
    std::vector<Spec> specs;
    for (std::int64_t n : {37, 5000, 70000}) {
      Spec s = spec("in_place_n" + std::to_string(n), t, {3, n}, normal(3 * n, 3, 101 + n));
      s.values[n] = -kInf;
      s.in_place = true;
      specs.push_back(s);
    }
    Spec s = spec("in_place_strided", t, {4, 33}, normal(4 * 33, 3, 104));
    s.in_strides = {40, 1};
    s.in_offset = 1;
    s.in_place = true;
    specs.push_back(s);
    expect_conforms(specs, {Op::softmax, Op::log_softmax});
  }
  finish();
}

// 16-bit inputs with f32 outputs (softmax, log-softmax): the f32 gates apply.
TEST_P(Conformance, SixteenBitInputsFloatOutputs) {
  for (DType t : {DType::f16, DType::bf16}) {
    std::vector<Spec> specs;
    for (std::int64_t n : {1, 33, 1000, 5000, 70000}) {
      Spec s = spec("to_f32_n" + std::to_string(n), t, {2, n}, normal(2 * n, 4, 111 + n));
      s.out_dtype = DType::f32;
      specs.push_back(s);
    }
    std::vector<double> masked = normal(2 * 5000, 2, 112);
    for (int i = 0; i < 2048; ++i) masked[i] = -kInf;
    Spec s = spec("to_f32_first_block_masked", t, {2, 5000}, masked);
    s.out_dtype = DType::f32;
    specs.push_back(s);
    expect_conforms(specs, {Op::softmax, Op::log_softmax});
  }
  finish();
}

// Temperature: the contract applies to the exact x / T, with the division's rounding in the gate; per-row
// temperatures; and T → 0 (docs/semantics.md §3): the largest score's probability tends to 1 (ties share it)
// while the scaled scores stay finite, and a score that overflows to +inf makes the row saturated (NaN).
TEST_P(Conformance, Temperature) {
  for (DType t : kTypes) {
    std::vector<Spec> specs;
    for (float temp : {0.5f, 3.0f, 0.001f, 100.0f}) {
      Spec s = spec("temperature_" + std::to_string(temp), t, {4, 1000}, normal(4 * 1000, 3, 151));
      s.options.temperature = temp;
      specs.push_back(s);
    }
    Spec s = spec("temperature_per_row", t, {4, 257}, normal(4 * 257, 3, 152));
    s.temperatures = {0.25f, 1.0f, 7.0f, 1e-3f};
    specs.push_back(s);
    // T → 0 with finite scaled scores: [1, 2, 3] / 1e-3 → one-hot; a tie shares; [10, 20] / 1e-37 stays finite
    // (2e38); [50, 100] / 1e-37 overflows to +inf: saturated, a NaN row with LSE = +inf.
    for (auto [name, row, temp] : {std::tuple{"tiny_T_one_hot", std::vector<double>{1, 2, 3}, 1e-3f},
                                   std::tuple{"tiny_T_tie", std::vector<double>{3, 1, 3}, 1e-3f},
                                   std::tuple{"tiny_T_near_overflow", std::vector<double>{10, 20}, 1e-37f},
                                   std::tuple{"tiny_T_overflow", std::vector<double>{50, 100}, 1e-37f}}) {
      Spec z = spec(name, t, {1, static_cast<std::int64_t>(row.size())}, row);
      z.options.temperature = temp;
      specs.push_back(z);
    }
    expect_conforms(specs);
  }
  finish();
}

// Masks: an additive f32 mask broadcast over rows, an additive mask of in's dtype, and a boolean mask that removes
// positions (a removed NaN is gone), empties whole rows (then EmptyRowPolicy applies) and broadcasts over columns.
TEST_P(Conformance, Masks) {
  for (DType t : kTypes) {
    std::vector<Spec> specs;
    const std::int64_t rows = 6, n = 300;
    std::vector<double> additive(n);
    for (std::int64_t i = 0; i < n; ++i) additive[i] = i % 5 == 0 ? -kInf : (i % 7) * 0.5;
    Spec s = spec("additive_f32_mask_broadcast_rows", t, {rows, n}, normal(rows * n, 3, 161));
    s.mask_shape = {1, n};
    s.mask_values = additive;
    specs.push_back(s);
    s.name = "additive_mask_in_dtype";
    s.mask_dtype = t;
    specs.push_back(s);

    for (EmptyRowPolicy policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
      std::vector<double> keep(rows * n, 1);
      for (std::int64_t i = 0; i < n; ++i) keep[1 * n + i] = 0;  // row 1 fully removed
      for (std::int64_t i = 0; i < n; i += 3) keep[2 * n + i] = 0;
      keep[3 * n + 17] = 0;
      std::vector<double> x = normal(rows * n, 3, 162);
      x[3 * n + 17] = kNaN;  // removed by the mask: row 3 stays finite
      Spec b = spec(std::string("bool_mask_") + (policy == EmptyRowPolicy::nan ? "nan" : "zeros"), t, {rows, n}, x);
      b.mask_shape = {rows, n};
      b.mask_values = keep;
      b.mask_dtype = DType::b8;
      b.options.empty_rows = policy;
      specs.push_back(b);
    }
    std::vector<double> column_keep(rows, 1);
    column_keep[4] = 0;
    Spec c = spec("bool_mask_broadcast_columns", t, {rows, n}, normal(rows * n, 3, 163));
    c.mask_shape = {rows, 1};
    c.mask_values = column_keep;
    c.mask_dtype = DType::b8;
    specs.push_back(c);
    Spec w = spec("mask_with_temperature", t, {rows, n}, normal(rows * n, 3, 164));
    w.mask_shape = {1, n};
    w.mask_values = additive;
    w.options.temperature = 0.7f;
    specs.push_back(w);
    if (t == DType::f32) {
      // x + mask beyond the f32 range overflows in f32 arithmetic (docs/semantics.md §3, masks): to −inf, a removed
      // position (row 0: −2.3e38 − 1.78e38, the session-14 fuzz input); to +inf, a saturated row (row 1).
      Spec o = spec("additive_mask_overflow", t, {2, 4}, {-2.3e38, -2.3e38, -2.3e38, -2.3e38, 3e38, 1, 2, 3});
      o.mask_shape = {2, 4};
      o.mask_values = {0, 0, 0, -1.78e38, 1e38, 0, 0, 0};
      specs.push_back(o);
    }
    expect_conforms(specs);
  }
  finish();
}

// The reason exp_diff exists: probabilities near e^-66 where x − max is not exact in f32. A plain fl(x − m)
// is off by up to half an ulp of |x − m| (2^-18 here, 64u), so exp(fl(x − m)) misses the softmax gate; the test
// first shows that this input would catch that (its own power), then holds every backend to the gate.
TEST_P(Conformance, ExpDiffAccuracyAtLargeGaps) {
  const std::int64_t rows = 512;
  std::mt19937_64 rng(121);
  std::uniform_real_distribution<double> a(-1, 1), gap(64.5, 68.9);
  std::vector<double> v(2 * rows);
  double plain_worst = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float hi = static_cast<float>(a(rng));
    const float lo = static_cast<float>(hi - gap(rng));
    v[2 * r] = hi;
    v[2 * r + 1] = lo;
    const ExactRow e = exact_row(&v[2 * r], 2);
    const float plain_diff = lo - hi;  // what a kernel without exp_diff exponentiates
    const long double plain = std::exp(static_cast<long double>(plain_diff)) / (1 + std::exp(static_cast<long double>(plain_diff)));
    const long double exact = e.softmax(lo);
    plain_worst = std::max(plain_worst, static_cast<double>(std::fabs(plain - exact) / exact));
  }
  ASSERT_GT(plain_worst, softmax_gate(2, SumModel::tree)) << "this input no longer distinguishes exp_diff";
  const Spec s = spec("exp_diff_gap_64_69", DType::f32, {rows, 2}, v);
  expect_conforms({s});
  finish();
}

// 9. Determinism: bitwise identical outputs across repeated runs.
TEST_P(Conformance, BitwiseDeterministicAcrossRuns) {
  for (DType t : {DType::f32, DType::bf16})
    for (std::int64_t n : {37, 5000, 70000}) {
      const std::int64_t rows = n > 10000 ? 3 : 64;
      const Spec s = spec("determinism_n" + std::to_string(n), t, {rows, n}, normal(rows * n, 4, 131 + n));
      for (Op op : kAllOps) {
        const Problem p = make_problem(s, op);
        const RunResult first = run(GetParam(), p, 0xFF);
        if (!first.applicable) {
          note_not_applicable(s.name, first.reason);
          continue;
        }
        ++applicable_;
        for (int k = 0; k < 3; ++k) {
          const RunResult again = run(GetParam(), p, k % 2 ? 0x55 : 0xFF);
          ASSERT_TRUE(again.applicable);
          // Compare only the output view's elements (the poison outside it differs between runs).
          for (std::int64_t row = 0; row < row_count(p); ++row) {
            const auto y0 = row_output(p, first, row), y1 = row_output(p, again, row);
            ASSERT_EQ(std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(double)), 0)
                << s.name << " " << op_name(op) << " row " << row << " differs between runs";
          }
        }
      }
    }
  finish();
}

// 9. Batch invariance: row i computed alone is bitwise the row i of a batch of 4096 (of 256 for rows of 70000, to
// bound the host memory and time of the check: the dispatcher's choice is "one row" against "many" either way).
TEST_P(Conformance, BatchInvariance) {
  // On the CPU every row is computed alone anyway; the GPU dispatcher may pick another kernel for one row than
  // for a batch (a split-row kernel, say), which is what this test is for: long rows there.
  struct Size { std::int64_t batch, n; };
  const std::vector<Size> sizes = GetParam().is_gpu() ? std::vector<Size>{{4096, 1000}, {4096, 8192}, {256, 70000}}
                                                      : std::vector<Size>{{4096, 1000}};
  for (DType t : {DType::f32, DType::bf16})
    for (const Size& sz : sizes) {
      const std::int64_t batch = sz.batch, n = sz.n;
      const std::vector<double> all = uniform(batch * n, -12, 12, 141 + n);
      const Spec big = spec("batch_" + std::to_string(batch) + "x" + std::to_string(n), t, {batch, n}, all);
      for (Op op : kAllOps) {
        const Problem pb = make_problem(big, op);
        const RunResult rb = run(GetParam(), pb, 0xFF);
        if (!rb.applicable) {
          note_not_applicable(big.name, rb.reason);
          continue;
        }
        for (std::int64_t row : {std::int64_t{0}, std::int64_t{1}, batch / 2 - 1, batch - 1}) {
          const Spec one = spec(big.name + "_row" + std::to_string(row), t, {1, n},
                                std::vector<double>(all.begin() + row * n, all.begin() + (row + 1) * n));
          const Problem p1 = make_problem(one, op);
          const RunResult r1 = run(GetParam(), p1, 0xFF);
          if (!r1.applicable) {
            note_not_applicable(one.name, r1.reason);
            continue;
          }
          ++applicable_;
          const auto y_alone = row_output(p1, r1, 0), y_batch = row_output(pb, rb, row);
          ASSERT_EQ(std::memcmp(y_alone.data(), y_batch.data(), y_alone.size() * sizeof(double)), 0)
              << big.name << " " << op_name(op) << " row " << row << ": alone differs from in the batch";
        }
      }
    }
  finish();
}

}  // namespace smk::conformance

namespace smk::conformance {

// The checker itself must catch what it is for: outputs tampered with after a correct run fail it.
TEST(ConformanceChecker, CatchesWrongUnwrittenAndStrayOutputs) {
  const Backend cpu = cpu_backends()[1];
  std::vector<double> v = {0.5, -1, 2, 3, -0.25, 1, -kInf, -kInf, -kInf, 1, kNaN, 0};
  Spec s = spec("checker", DType::f32, {3, 4}, v);
  s.out_offset = 2;
  const Problem p = make_problem(s, Op::softmax);
  const RunResult good = run(cpu, p, 0xFF);
  ASSERT_TRUE(check(p, good, cpu, 0xFF).ok()) << check(p, good, cpu, 0xFF).summary();
  const std::size_t first = 2 * sizeof(float);  // byte offset of the output view's first element

  RunResult off_by_ulps = good;  // 64 ulps on one probability: beyond the gate
  float f;
  std::memcpy(&f, &off_by_ulps.out_bytes[first], 4);
  f = std::nextafter(f, 2.0f);
  for (int k = 0; k < 63; ++k) f = std::nextafter(f, 2.0f);
  std::memcpy(&off_by_ulps.out_bytes[first], &f, 4);
  EXPECT_FALSE(check(p, off_by_ulps, cpu, 0xFF).ok());

  RunResult unwritten_nan_row = good;  // row 2 is a NaN row: a NaN poison hides an unwritten element...
  const RunResult finite_poison = run(cpu, p, 0x55);
  unwritten_nan_row.out_bytes = finite_poison.out_bytes;
  std::memset(&unwritten_nan_row.out_bytes[first + 8 * 4], 0xFF, 4);
  std::memset(&unwritten_nan_row.out_bytes[first + 9 * 4], 0x55, 4);  // ...the finite poison does not
  EXPECT_FALSE(check(p, unwritten_nan_row, cpu, 0x55).ok());
  EXPECT_FALSE(check_same_outputs(p, good, unwritten_nan_row, 0x55).ok());

  RunResult stray = good;  // a write just before the view
  stray.out_bytes[first - 1] = 0;
  EXPECT_FALSE(check(p, stray, cpu, 0xFF).ok());

  RunResult masked_nonzero = good;  // row 1 is fully masked: NaN under the default policy, not 0
  std::memset(&masked_nonzero.out_bytes[first + 4 * 4], 0, 4);
  EXPECT_FALSE(check(p, masked_nonzero, cpu, 0xFF).ok());

  RunResult input_changed = good;
  input_changed.in_bytes[0] ^= 1;
  EXPECT_FALSE(check(p, input_changed, cpu, 0xFF).ok());
}

}  // namespace smk::conformance
