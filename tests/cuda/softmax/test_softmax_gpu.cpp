// The softmax family's CUDA kernels: every path forced one by one (and the dispatcher's choice) against the CPU
// float64 reference, over the row lengths of issue 3, few and many rows, sliced / strided / unaligned / non-last-dim
// layouts, temperatures and masks, non-finite rows, both backward passes; outputs poisoned first and checked for
// unwritten and stray elements; run-to-run bitwise determinism and batch invariance. Gates: gpu_case.hpp.
//
// SMK_GPU_TEST_SMALL=1 (set by scripts/device.sh under compute-sanitizer) keeps rows ≤ 4097 elements and few rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;


const std::vector<SoftmaxPath> kPaths = {SoftmaxPath::automatic,    SoftmaxPath::warp_per_row,
                                         SoftmaxPath::block_per_row, SoftmaxPath::cluster_row,
                                         SoftmaxPath::split_row,     SoftmaxPath::strided_inner};

std::vector<std::int64_t> lengths() {
  std::vector<std::int64_t> all = {1, 2, 3, 31, 32, 33, 255, 1023, 1024, 1025, 2047, 2049, 4097, 30001, 65537,
                                   151936, 262147};
  if (small_mode()) all.erase(std::remove_if(all.begin(), all.end(), [](auto n) { return n > 4097; }), all.end());
  return all;
}

// A row-major rows × n case with contiguous input and output.
Case plain_case(const std::string& name, Op op, DType in, DType out, std::int64_t rows, std::int64_t n,
                std::uint64_t seed) {
  Case c = random_case(name, op, in, out, rows, n, seed);
  if (is_backward(op)) {
    // y: a softmax (or log-softmax) of the scores, as a forward pass would have produced it, in y's dtype.
    std::vector<double> y(c.x.size());
    const Layout f64 = contiguous(DType::f64, {rows, n});
    if (op == Op::softmax_backward) cpu::reference::softmax(f64.view(y.data(), Device::cpu()), f64.view(c.x.data(), Device::cpu()));
    else cpu::reference::log_softmax(f64.view(y.data(), Device::cpu()), f64.view(c.x.data(), Device::cpu()));
    for (auto& v : y) v = round_to(in, v);
    c.x = y;
    c.dy = random_values(in, rows * n, 1.0, 0.0, seed + 1);
  }
  return c;
}

// Runs `c` on every path of `paths` against one reference; a refusal is allowed only for a capacity reason.
void run_all_paths(const Case& c, const std::vector<SoftmaxPath>& paths = kPaths) {
  const Reference ref = reference(c);
  for (SoftmaxPath path : paths) {
    SCOPED_TRACE(std::string("path ") + cuda::to_string(path) + ", case " + c.name + ", op " + op_name(c.op));
    const Result r = run_gpu(c, path);
    if (!r.ran) {
      EXPECT_NE(r.reason.find(cuda::to_string(path)), std::string::npos) << r.reason;
      EXPECT_NE(r.reason.find("capacity"), std::string::npos) << "refused for another reason: " << r.reason;
      EXPECT_GT(c.in.shape[norm_dim(c)], 1024) << "every path serves rows of up to 1024: " << r.reason;
      continue;
    }
    check(c, r, ref);
  }
}

class GpuSoftmax : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

// Issue 3's row lengths, few rows and many, every forward op, f32 and 16-bit, on every path.
TEST_F(GpuSoftmax, EveryPathEveryLength) {
  std::uint64_t seed = 1;
  for (std::int64_t n : lengths()) {
    const std::int64_t many = std::clamp<std::int64_t>((small_mode() ? 1 << 14 : 1 << 18) / n, 8, small_mode() ? 64 : 2048);
    for (std::int64_t rows : {std::int64_t{3}, many}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state})
        run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed));
      if (rows == 3 || n <= 4097) {
        run_all_paths(plain_case(tag + "_bf16", Op::softmax, DType::bf16, DType::bf16, rows, n, ++seed));
        run_all_paths(plain_case(tag + "_bf16", Op::log_softmax, DType::bf16, DType::bf16, rows, n, ++seed));
        run_all_paths(plain_case(tag + "_f16_to_f32", Op::softmax, DType::f16, DType::f32, rows, n, ++seed));
        run_all_paths(plain_case(tag + "_f16", Op::logsumexp, DType::f16, DType::f32, rows, n, ++seed));
      }
    }
  }
}

// fwd16 (session 7): the log ops' terms from 16-bit inputs (common.cuh log_term_exp16, on warp_per_row, block_per_row,
// the lane-staged block, the wide block and cluster_row) where the outputs are f32 and so show the f32 computation's
// error, not a 16-bit rounding: the state (m bit for bit, l within (L + 11 + 2.25 ln n)u), logsumexp and log-softmax
// to f32, bf16 and f16, on every path, at lengths that reach each kernel (the lane-staged block from 2048 for softmax
// and log-softmax (2560 for log-softmax before session 17) and 7168 for the read-only ops, on aligned rows; the wide
// block above 12288), few rows and many; outputs poisoned (gpu_case.hpp run_gpu).
TEST_F(GpuSoftmax, SixteenBitLogTermsToF32EveryPath) {
  std::vector<std::int64_t> ns = {7, 32, 33, 128, 1000, 2048, 4096, 8192, 12288, 16385, 32768};
  if (small_mode()) ns = {7, 32, 33, 128, 1000, 2048, 4096};
  std::uint64_t seed = 7000;
  for (std::int64_t n : ns)
    for (std::int64_t rows : {std::int64_t{3}, std::clamp<std::int64_t>((std::int64_t{1} << 16) / n, 8, 512)})
      for (DType t : {DType::bf16, DType::f16})
        for (Op op : {Op::state, Op::logsumexp, Op::log_softmax}) {
          const std::string name = std::to_string(rows) + "x" + std::to_string(n) + "_" + dtype_name(t) + "_to_f32";
          run_all_paths(plain_case(name, op, t, DType::f32, rows, n, ++seed));
        }
}

// Sliced rows (a pitch longer than the row), unaligned base pointers, a strided last dimension, a non-last
// dimension, in place, and 16-bit inputs with f32 outputs.
TEST_F(GpuSoftmax, SlicedStridedUnalignedAndNonLastDims) {
  std::vector<std::int64_t> ns = {33, 1025, 4097, 30001, 151936};
  if (small_mode()) ns = {33, 1025, 4097};
  std::uint64_t seed = 100;
  for (std::int64_t n : ns) {
    const std::int64_t rows = n > 5000 ? 3 : 40;
    for (DType t : {DType::f32, DType::bf16}) {
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
        Case c = plain_case("pitched_unaligned_" + std::to_string(n), op, t, t, rows, n, ++seed);
        c.in.strides = {n + 13, 1};
        c.in.offset = 1;  // 4 or 2 bytes past an aligned allocation
        c.out.strides = {n + 3, 1};
        c.out.offset = 2;
        run_all_paths(c);
        Case e = plain_case("last_dim_stride_2_" + std::to_string(n), op, t, DType::f32, rows, n, ++seed);
        e.in.strides = {2 * n + 1, 2};
        run_all_paths(e);
      }
      // Reduction over dim 1 of [3, n, 33] and over dim 0 of [n, 7]: strided_inner's home, every path.
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
        if (n > 30001) continue;
        Case c;
        c.name = "dim1_of_3x" + std::to_string(n) + "x33";
        c.op = op;
        c.dim = 1;
        c.in = contiguous(t, {3, n, 33});
        c.out = contiguous(t, {3, n, 33}, 1);
        c.x = random_values(t, 3 * n * 33, 5.0, -20.0, ++seed);
        run_all_paths(c);
        Case d;
        d.name = "dim0_of_" + std::to_string(n) + "x7";
        d.op = op;
        d.dim = 0;
        d.in = contiguous(t, {n, 7});
        d.out = contiguous(DType::f32, {n, 7});
        d.x = random_values(t, n * 7, 3.0, 0.0, ++seed);
        run_all_paths(d);
      }
    }
    // In place, forward and backward.
    for (Op op : {Op::softmax, Op::log_softmax, Op::softmax_backward, Op::log_softmax_backward}) {
      Case c = plain_case("in_place_" + std::to_string(n), op, DType::f32, DType::f32, 3, n, ++seed);
      c.in_place = true;
      run_all_paths(c);
    }
  }
}

// Temperatures (scalar, exact and not; per row, including invalid ones, which give NaN rows on the GPU) and masks
// (additive f32 and in-dtype, boolean, broadcast over rows and over positions; a fully masked row under both
// policies).
TEST_F(GpuSoftmax, TemperatureAndMasks) {
  std::vector<std::int64_t> ns = {5, 1000, 5000, 70000, 300000};
  if (small_mode()) ns = {5, 1000, 4097};
  std::uint64_t seed = 200;
  for (std::int64_t n : ns) {
    const std::int64_t rows = 4;
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
      for (float T : {2.0f, 0.3f}) {
        Case c = plain_case("temperature_" + std::to_string(T) + "_" + std::to_string(n), op, DType::f32, DType::f32,
                            rows, n, ++seed);
        c.options.temperature = T;
        c.exact_scaling = T == 2.0f;
        run_all_paths(c);
      }
      Case c = plain_case("row_temperatures_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, ++seed);
      c.row_temperature = {0.5, 4.0, 0.0, kNaN};  // rows 2 and 3: invalid, NaN rows by contract
      run_all_paths(c);
    }
    for (DType t : {DType::f32, DType::bf16}) {
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
        for (auto policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
          // Additive [1, n] mask in f32 (or bf16 for bf16 input): −inf on every 5th position, small integers else;
          // scores are multiples of 1/64 below 512 so that x + mask is exact in f32.
          Case c = plain_case("additive_mask_" + std::to_string(n), op, t, t, rows, n, ++seed);
          for (auto& v : c.x) v = round_to(t, std::round(v * 64) / 64);
          c.mask = contiguous(t == DType::f32 ? DType::f32 : t, {1, n});
          c.mask_values.resize(n);
          for (std::int64_t i = 0; i < n; ++i) c.mask_values[i] = i % 5 == 0 ? -kInf : static_cast<double>(i % 3);
          c.options.empty_rows = policy;
          if (t == DType::f32) run_all_paths(c);
          // Boolean [rows, n] mask: row 1 fully masked, row 2 keeps the even positions; given as a [rows, 1]
          // broadcast of a per-row flag for row 3 through an additive mask on top is not possible: one mask per call.
          Case b = plain_case("bool_mask_" + std::to_string(n), op, t, t, rows, n, ++seed);
          b.mask = contiguous(DType::b8, {rows, n});
          b.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
          for (std::int64_t i = 0; i < n; ++i) {
            b.mask_values[1 * n + i] = 0;
            b.mask_values[2 * n + i] = i % 2 == 0 ? 1 : 0;
          }
          b.options.empty_rows = policy;
          run_all_paths(b);
          if (t == DType::bf16) {  // an in-dtype additive mask broadcast over positions: [rows, 1]
            Case r = plain_case("row_mask_" + std::to_string(n), op, t, t, rows, n, ++seed);
            r.mask = contiguous(t, {rows, 1});
            r.mask_values = {0.0, -kInf, 3.0, -2.0};  // row 1: fully masked
            r.options.empty_rows = policy;
            run_all_paths(r);
          }
        }
      }
    }
  }
}

// Empty rows (all −inf), +inf, NaN at lane, vector, block and chunk boundaries, and n = 0 for the per-row ops.
TEST_F(GpuSoftmax, NonFiniteRows) {
  std::vector<std::int64_t> ns = {7, 1000, 5000, 70000, 300000};
  if (small_mode()) ns = {7, 1000, 4097};
  std::uint64_t seed = 300;
  for (std::int64_t n : ns) {
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
      for (auto policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
        Case c = plain_case("non_finite_" + std::to_string(n), op, DType::f32, DType::f32, 6, n, ++seed);
        for (std::int64_t i = 0; i < n; ++i) c.x[0 * n + i] = -kInf;  // empty row
        c.x[1 * n + n / 2] = kInf;                                     // saturated
        for (std::int64_t pos : {std::int64_t{0}, n - 1}) c.x[2 * n + pos] = kNaN;  // NaN at the ends
        c.x[3 * n + std::min<std::int64_t>(n - 1, 12287)] = kNaN;     // NaN at a block/chunk boundary
        for (std::int64_t i = 0; i < n; i += 2) c.x[4 * n + i] = -kInf;  // half masked
        c.options.empty_rows = policy;
        run_all_paths(c);
      }
    }
  }
  for (Op op : {Op::logsumexp, Op::state}) {
    Case c = plain_case("zero_length_rows", op, DType::f32, DType::f32, 3, 0, 1);
    run_all_paths(c);
  }
}

// A row dominated by one score: its log-probability −log l and the row's LSE (max 0) are tiny, and the excess state
// (online_state.hpp) keeps them to a few ulps of themselves, where a sum that held the max's 1 would leave an
// absolute error of ~u (thousands of their ulps). Closed form: the max 0 at one position, every other score −t,
// so log l = log1p((n − 1)·e^−t), in long double. Relative bound: d's (α + D + 1)·u (exp_diff, the sum, a tie's
// rounding), log1p's 2u and the one exact subtraction: (L + 12)·u (docs/semantics.md §6).
TEST_F(GpuSoftmax, DominantScoreKeepsItsRelativePrecision) {
  std::vector<std::int64_t> ns = {7, 1000, 5000, 70000, 300000};
  if (small_mode()) ns = {7, 1000, 4097};
  for (std::int64_t n : ns) {
    const std::vector<double> ts = {12, 18, 25, 40};
    const std::int64_t rows = static_cast<std::int64_t>(ts.size());
    const Gate gate{Op::log_softmax, DType::f32, n};
    const double bound = (gate.L() + 12) * kU;
    for (Op op : {Op::log_softmax, Op::logsumexp}) {
      Case c = plain_case("dominant_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, 1);
      std::vector<std::int64_t> at(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) {
        at[r] = (r * (n / 3 + 12289)) % n;  // the max at the start, inside, across block and chunk boundaries
        for (std::int64_t i = 0; i < n; ++i) c.x[r * n + i] = i == at[r] ? 0.0 : -ts[r];
      }
      for (SoftmaxPath path : kPaths) {
        SCOPED_TRACE(std::string("path ") + cuda::to_string(path) + ", n " + std::to_string(n) + ", " + op_name(op));
        const Result res = run_gpu(c, path);
        if (!res.ran) continue;  // a capacity refusal; run_all_paths' tests hold the paths to that
        for (std::int64_t r = 0; r < rows; ++r) {
          const long double exact = std::log1p(static_cast<long double>(n - 1) * std::exp(-static_cast<long double>(ts[r])));
          const double got = op == Op::logsumexp ? res.out[r] : -res.out[r * n + at[r]];
          EXPECT_LE(std::fabs(static_cast<long double>(got) - exact) / exact, bound)
              << "row " << r << " (t = " << ts[r] << "): got " << got << ", exact " << static_cast<double>(exact);
        }
      }
    }
  }
}

// Both backward passes: lengths, few and many rows, f32 and bf16, temperatures, a non-last dimension.
TEST_F(GpuSoftmax, BackwardEveryPath) {
  std::uint64_t seed = 400;
  for (std::int64_t n : lengths()) {
    const std::int64_t many = std::clamp<std::int64_t>((small_mode() ? 1 << 13 : 1 << 19) / n, 8, 1024);
    for (std::int64_t rows : {std::int64_t{2}, many}) {
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
        run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed));
        if (rows == 2) {
          run_all_paths(plain_case(tag + "_bf16", op, DType::bf16, DType::bf16, rows, n, ++seed));
          Case t = plain_case(tag + "_temperature", op, DType::f32, DType::f32, rows, n, ++seed);
          t.row_temperature = {0.5, 3.0};
          run_all_paths(t);
        }
      }
    }
  }
  for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
    Case c = plain_case("dim1", op, DType::f32, DType::f32, 1, 1, 1);
    const std::int64_t n = 257;
    c.dim = 1;
    c.in = contiguous(DType::f32, {2, n, 9});
    c.out = contiguous(DType::f32, {2, n, 9});
    c.x = random_values(DType::f32, 2 * n * 9, 0.01, 0.0, 5);  // y: anything; the formula is linear in dy
    c.dy = random_values(DType::f32, 2 * n * 9, 1.0, 0.0, 6);
    run_all_paths(c);
  }
}

// The same call twice gives the same bits (no atomics, no order-dependent reductions).
TEST_F(GpuSoftmax, BitwiseDeterministicAcrossRuns) {
  std::vector<std::int64_t> ns = {1000, 30001, 151936, 300000};
  if (small_mode()) ns = {1000, 4097};
  for (std::int64_t n : ns)
    for (Op op : {Op::softmax, Op::logsumexp, Op::softmax_backward})
      for (SoftmaxPath path : kPaths) {
        const Case c = plain_case("determinism_" + std::to_string(n), op, DType::f32, DType::f32, 5, n, 7);
        const Result a = run_gpu(c, path, 0xFF), b = run_gpu(c, path, 0x00);
        if (!a.ran) continue;
        ASSERT_TRUE(b.ran);
        EXPECT_EQ(a.out.size(), b.out.size());
        for (std::size_t i = 0; i < a.out.size(); ++i) {
          const bool same = (std::isnan(a.out[i]) && std::isnan(b.out[i])) || a.out[i] == b.out[i];
          ASSERT_TRUE(same) << cuda::to_string(path) << " n=" << n << " element " << i << ": " << a.out[i] << " vs "
                            << b.out[i];
        }
      }
}

// A row's result is bitwise the same computed alone (a fresh, aligned buffer) or inside a batch (rows at an odd
// pitch, so most are unaligned), under the dispatcher's choice: the reduction trees depend on n alone.
TEST_F(GpuSoftmax, BatchInvariance) {
  std::vector<std::int64_t> ns = {33, 1000, 4097, 30001, 151936, 300000};
  if (small_mode()) ns = {33, 1000, 4097};
  for (std::int64_t n : ns) {
    const std::int64_t rows = n > 100000 ? 3 : 37;
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state, Op::softmax_backward}) {
      Case batch = plain_case("batch_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, 9);
      batch.in.strides = {n + 1, 1};
      batch.in.offset = 1;
      const Result all = run_gpu(batch, SoftmaxPath::automatic);
      ASSERT_TRUE(all.ran);
      for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
        Case one = plain_case("alone", op, DType::f32, DType::f32, 1, n, 9);
        one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
        if (is_backward(op)) one.dy.assign(batch.dy.begin() + r * n, batch.dy.begin() + (r + 1) * n);
        const Result alone = run_gpu(one, SoftmaxPath::automatic);
        ASSERT_TRUE(alone.ran);
        const std::int64_t width = is_row_op(op) ? 1 : n;
        for (std::int64_t i = 0; i < width; ++i) {
          const double a = alone.out[i], b = all.out[r * width + i];
          ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
              << op_name(op) << " n=" << n << " row " << r << " element " << i << ": alone " << a << ", batch " << b;
        }
        if (op == Op::state) ASSERT_EQ(alone.out2[0], all.out2[r]);
      }
    }
  }
  // 16-bit rows (session 10 review, F11 and F2's bf16 half), each against a batch at an odd pitch and a dense batch:
  // - bf16 and f16 backward at n = 32: the row alone (rank 0) and the odd pitch take warp_config's L2 E16 unpacked, the
  //   dense batch L4 E8 packed (softmax_cuda.cpp warp_backward_config): the same bits by a tree identity stated there;
  // - bf16 logsumexp and the state at n = 1024, 3000, 4097 and 6144 (lse_stream.cu's rows alone against the batch;
  //   16 lanes a row to 6144 since next20);
  // - f32 softmax at n = 50000 (split_row since next20, cluster_stage before);
  // - session 11's layout-chosen kernels (its review, F7), the dense batch against the row alone and the odd pitch (the
  //   general kernels): bf16 softmax at 1024 (warp_rows_dense_kernel), bf16 log-softmax and softmax backward at 1024
  //   (packed), f32 backward at 512 and 1024 (backward_warp_dense_kernel).
  struct Wide {
    DType t;
    std::int64_t n;
    Op op;
  };
  std::vector<Wide> wides;
  for (DType t : {DType::bf16, DType::f16})
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) wides.push_back({t, 32, op});
  for (std::int64_t n : {1024, 3000, 4097, 6144})
    for (Op op : {Op::logsumexp, Op::state}) wides.push_back({DType::bf16, n, op});
  wides.push_back({DType::f32, 50000, Op::softmax});
  for (Op op : {Op::softmax, Op::log_softmax, Op::softmax_backward}) wides.push_back({DType::bf16, 1024, op});
  for (std::int64_t n : {512, 1024})
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) wides.push_back({DType::f32, n, op});
  for (const Wide& w : wides)
    for (bool odd : {true, false}) {
      const std::int64_t n = w.n, rows = 37;
      Case batch = plain_case("batch16_" + std::to_string(n), w.op, w.t, w.t, rows, n, 19);
      if (odd) {
        batch.in.strides = {n + 1, 1};
        batch.in.offset = 1;
      }
      const Result all = run_gpu(batch, SoftmaxPath::automatic);
      ASSERT_TRUE(all.ran) << all.reason;
      for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
        Case one = plain_case("alone16", w.op, w.t, w.t, 1, n, 19);
        one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
        if (is_backward(w.op)) one.dy.assign(batch.dy.begin() + r * n, batch.dy.begin() + (r + 1) * n);
        const Result alone = run_gpu(one, SoftmaxPath::automatic);
        ASSERT_TRUE(alone.ran) << alone.reason;
        const std::int64_t width = is_row_op(w.op) ? 1 : n;
        for (std::int64_t i = 0; i < width; ++i) {
          const double a = alone.out[i], b = all.out[r * width + i];
          ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
              << dtype_name(w.t) << " " << op_name(w.op) << " n=" << n << (odd ? " odd pitch" : " dense") << " row "
              << r << " element " << i << ": alone " << a << ", batch " << b;
        }
        if (w.op == Op::state) ASSERT_EQ(alone.out2[0], all.out2[r]);
      }
    }
}

// The row pipeline (block_row.cu, backward.cu, row_stage.cuh), which the dispatcher runs for log-softmax, logsumexp
// and the state on cluster_row, and for the 16-bit backward passes on block_per_row: a persistent grid whose blocks
// each walk several rows, staging the next one in shared memory while they work on the current one (forward clusters:
// one exchange of block states a row). Enough rows that every block or cluster takes two or more (the H200 holds 84
// clusters of 7 blocks of 192 threads, about 44 of 15, 396 backward blocks of 288), at lengths whose rows are 16-byte
// aligned only now and then (staged) and otherwise not (loaded directly) within one launch, against the float64
// reference; then rows of the batch against the same rows alone, bitwise.
TEST_F(GpuSoftmax, RowPipelineManyRowsPerBlock) {
  struct Shape {
    std::int64_t rows, n;
    SoftmaxPath path;
  };
  std::vector<Shape> shapes = {{1400, 4097, SoftmaxPath::block_per_row}, {1400, 4097, SoftmaxPath::cluster_row},
                               {200, 30001, SoftmaxPath::cluster_row}, {200, 32000, SoftmaxPath::cluster_row},
                               {100, 65537, SoftmaxPath::cluster_row}};
  if (small_mode()) shapes = {{1400, 4097, SoftmaxPath::block_per_row}, {1400, 4097, SoftmaxPath::cluster_row}};
  std::uint64_t seed = 900;
  for (const Shape& sh : shapes) {
    const std::string tag = std::to_string(sh.rows) + "x" + std::to_string(sh.n);
    std::vector<Case> cases;
    if (sh.path == SoftmaxPath::block_per_row) {
      // The backward passes' staged kernel (16-bit rows).
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward})
        cases.push_back(plain_case(tag + "_bf16", op, DType::bf16, DType::bf16, sh.rows, sh.n, ++seed));
      Case t = plain_case(tag + "_f16_temperature", Op::softmax_backward, DType::f16, DType::f16, sh.rows, sh.n,
                          ++seed);
      t.row_temperature.resize(static_cast<std::size_t>(sh.rows));
      for (std::int64_t r = 0; r < sh.rows; ++r) t.row_temperature[static_cast<std::size_t>(r)] = r % 2 ? 0.5 : 2.0;
      cases.push_back(t);
    } else {
      // The forward log ops' staged kernel with its one exchange of block states.
      for (Op op : {Op::log_softmax, Op::logsumexp, Op::state})
        cases.push_back(plain_case(tag + "_f32", op, DType::f32, DType::f32, sh.rows, sh.n, ++seed));
      cases.push_back(plain_case(tag + "_bf16", Op::log_softmax, DType::bf16, DType::bf16, sh.rows, sh.n, ++seed));
      cases.push_back(plain_case(tag + "_f16_to_f32", Op::log_softmax, DType::f16, DType::f32, sh.rows, sh.n, ++seed));
      // A masked tail (the last blocks' states empty) and per-row temperatures through the merged states.
      Case m = plain_case(tag + "_masked", Op::log_softmax, DType::f32, DType::f32, sh.rows, sh.n, ++seed);
      m.mask = contiguous(DType::b8, {1, sh.n});
      m.mask_values.assign(static_cast<std::size_t>(sh.n), 1.0);
      for (std::int64_t i = sh.n / 3; i < sh.n; ++i) m.mask_values[static_cast<std::size_t>(i)] = 0.0;
      m.row_temperature.resize(static_cast<std::size_t>(sh.rows));
      for (std::int64_t r = 0; r < sh.rows; ++r) m.row_temperature[static_cast<std::size_t>(r)] = r % 2 ? 0.5 : 2.0;
      cases.push_back(m);
    }
    for (const Case& c : cases) {
      run_all_paths(c, {sh.path});
      // Bits: rows of the batch (staged or not by their alignment, several per block) against the row alone.
      const Result all = run_gpu(c, sh.path);
      ASSERT_TRUE(all.ran) << all.reason;
      for (std::int64_t r : {std::int64_t{1}, sh.rows / 2, sh.rows - 1}) {
        Case one = plain_case("alone", c.op, c.in.dtype, c.out.dtype, 1, sh.n, 1);
        one.x.assign(c.x.begin() + r * sh.n, c.x.begin() + (r + 1) * sh.n);
        if (is_backward(c.op)) one.dy.assign(c.dy.begin() + r * sh.n, c.dy.begin() + (r + 1) * sh.n);
        one.mask = c.mask;
        one.mask_values = c.mask_values;
        if (!c.row_temperature.empty()) one.row_temperature = {c.row_temperature[static_cast<std::size_t>(r)]};
        const Result alone = run_gpu(one, sh.path);
        ASSERT_TRUE(alone.ran) << alone.reason;
        const std::int64_t width = is_row_op(c.op) ? 1 : sh.n;
        for (std::int64_t i = 0; i < width; ++i) {
          const double a = alone.out[i], b = all.out[r * width + i];
          ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
              << c.name << " " << op_name(c.op) << " row " << r << " element " << i << ": alone " << a << ", batch "
              << b;
        }
        if (c.op == Op::state) ASSERT_EQ(alone.out2[0], all.out2[r]);
      }
    }
  }
}

// block_per_row's wide block (block_row.cu, backward.cu: up to 1024 threads × 32 elements, backward 1024 × 16 of y
// and dy), which takes rows above 12288 (backward 8192) that the 512-thread block cannot hold: lengths at and past its
// edges (a partial last vector, a full block, the capacity), forced and under the dispatcher, few and many rows, f32
// and 16-bit, against the float64 reference with outputs poisoned; temperatures, masks, non-finite rows and ties of
// the max (the log ops count them); the rows of a batch bitwise equal to the rows alone. Also logsumexp and the state
// at 40000, past the wide block, where the dispatcher takes split_row for them (cluster_row for the others).
TEST_F(GpuSoftmax, WideBlockRows) {
  if (small_mode()) GTEST_SKIP() << "rows above 4097 elements";
  const std::vector<SoftmaxPath> paths = {SoftmaxPath::automatic, SoftmaxPath::block_per_row};
  std::uint64_t seed = 1200;
  for (std::int64_t n : {12289, 16384, 24577, 32000, 32767, 32768}) {
    for (std::int64_t rows : {std::int64_t{3}, std::int64_t{20}}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state})
        run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_bf16", Op::softmax, DType::bf16, DType::bf16, rows, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_bf16", Op::log_softmax, DType::bf16, DType::bf16, rows, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_f16_to_f32", Op::softmax, DType::f16, DType::f32, rows, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_bf16", Op::logsumexp, DType::bf16, DType::f32, rows, n, ++seed), paths);
    }
  }
  for (std::int64_t n : {8193, 12289, 16383, 16384}) {
    for (std::int64_t rows : {std::int64_t{2}, std::int64_t{20}}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed), paths);
        run_all_paths(plain_case(tag + "_bf16", op, DType::bf16, DType::bf16, rows, n, ++seed), paths);
        Case t = plain_case(tag + "_temperature", op, DType::f32, DType::f32, rows, n, ++seed);
        t.row_temperature.resize(static_cast<std::size_t>(rows));
        for (std::int64_t r = 0; r < rows; ++r) t.row_temperature[static_cast<std::size_t>(r)] = r % 2 ? 0.5 : 3.0;
        run_all_paths(t, paths);
      }
    }
  }
  for (std::int64_t n : {16384, 30001, 32768}) {
    const std::int64_t rows = 4;
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
      // Scalar and per-row temperatures (rows 2 and 3 invalid: NaN rows by contract).
      Case c = plain_case("wide_temperature_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, ++seed);
      c.options.temperature = 0.3f;
      c.exact_scaling = false;
      run_all_paths(c, paths);
      Case t = plain_case("wide_row_temperatures_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, ++seed);
      t.row_temperature = {0.5, 4.0, 0.0, kNaN};
      run_all_paths(t, paths);
      for (auto policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
        // Boolean [rows, n] mask: row 1 fully masked, row 2 the even positions, row 3 all but the last 100.
        Case b = plain_case("wide_bool_mask_" + std::to_string(n), op, DType::bf16, DType::bf16, rows, n, ++seed);
        b.mask = contiguous(DType::b8, {rows, n});
        b.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
        for (std::int64_t i = 0; i < n; ++i) {
          b.mask_values[static_cast<std::size_t>(1 * n + i)] = 0;
          b.mask_values[static_cast<std::size_t>(2 * n + i)] = i % 2 == 0 ? 1 : 0;
          if (i >= n - 100) b.mask_values[static_cast<std::size_t>(3 * n + i)] = 0;
        }
        b.options.empty_rows = policy;
        run_all_paths(b, paths);
        // Non-finite rows: empty, +inf, NaN at the ends and at the last thread's slot, half masked; then the max
        // tied at positions in different threads and warps (and every element of row 5 equal).
        Case f = plain_case("wide_non_finite_ties_" + std::to_string(n), op, DType::f32, DType::f32, 6, n, ++seed);
        for (std::int64_t i = 0; i < n; ++i) f.x[static_cast<std::size_t>(i)] = -kInf;
        f.x[static_cast<std::size_t>(1 * n + n / 2)] = kInf;
        for (std::int64_t pos : {std::int64_t{0}, n - 1, std::int64_t{1023}})
          f.x[static_cast<std::size_t>(2 * n + pos)] = kNaN;
        for (std::int64_t i = 0; i < n; i += 2) f.x[static_cast<std::size_t>(3 * n + i)] = -kInf;
        for (std::int64_t pos : {std::int64_t{0}, std::int64_t{5}, std::int64_t{4096}, n / 2 + 1, n - 1})
          f.x[static_cast<std::size_t>(4 * n + pos)] = 200.0;  // far above every score (mean 37, σ ≤ 12): a max tied 5×
        for (std::int64_t i = 0; i < n; ++i) f.x[static_cast<std::size_t>(5 * n + i)] = 1.5;
        f.options.empty_rows = policy;
        run_all_paths(f, paths);
      }
    }
  }
  // logsumexp and the state past the wide block (kClusterAutoMaxNReadOnly) under the dispatcher: split_row for f32,
  // lse_stream's chunk kernel for 16-bit rows (lse17, session 17).
  for (Op op : {Op::logsumexp, Op::state})
    for (DType t : {DType::f32, DType::bf16})
      run_all_paths(plain_case("read_only_3x40000", op, t, DType::f32, 3, 40000, ++seed), {SoftmaxPath::automatic});
  // Rows of a batch (odd pitch: unaligned) bitwise equal to the same rows alone, under the dispatcher.
  for (std::int64_t n : {16384, 24577, 32768, 40000}) {
    const std::int64_t rows = 9;
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state, Op::softmax_backward}) {
      if (is_backward(op) && n > 16384) continue;
      if (n > 32768 && !is_row_op(op)) continue;  // 40000: the read-only ops' route only
      Case batch = plain_case("wide_batch_" + std::to_string(n), op, DType::f32, DType::f32, rows, n, 11);
      batch.in.strides = {n + 1, 1};
      batch.in.offset = 1;
      const Result all = run_gpu(batch, SoftmaxPath::automatic);
      ASSERT_TRUE(all.ran) << all.reason;
      for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
        Case one = plain_case("alone", op, DType::f32, DType::f32, 1, n, 11);
        one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
        if (is_backward(op)) one.dy.assign(batch.dy.begin() + r * n, batch.dy.begin() + (r + 1) * n);
        const Result alone = run_gpu(one, SoftmaxPath::automatic);
        ASSERT_TRUE(alone.ran) << alone.reason;
        const std::int64_t width = is_row_op(op) ? 1 : n;
        for (std::int64_t i = 0; i < width; ++i) {
          const double a = alone.out[i], b = all.out[r * width + i];
          ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
              << op_name(op) << " n=" << n << " row " << r << " element " << i << ": alone " << a << ", batch " << b;
        }
        if (op == Op::state) ASSERT_EQ(alone.out2[0], all.out2[r]);
      }
    }
  }
}

// The wide block at its edges on two rows, in small mode too (compute-sanitizer runs this one: scripts/device.sh
// wideblock): the first length past the 512-thread block and the capacity, forward and backward, f32 and bf16.
TEST_F(GpuSoftmax, WideBlockEdges) {
  std::uint64_t seed = 1500;
  for (std::int64_t n : {12289, 32768})
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state})
      for (DType t : {DType::f32, DType::bf16})
        run_all_paths(plain_case("wide_edge_" + std::to_string(n), op, t, t == DType::f32 ? t : DType::f32, 2, n,
                                 ++seed),
                      {SoftmaxPath::block_per_row});
  for (std::int64_t n : {8193, 16384})
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward})
      for (DType t : {DType::f32, DType::bf16})
        run_all_paths(plain_case("wide_edge_backward_" + std::to_string(n), op, t, t, 2, n, ++seed),
                      {SoftmaxPath::block_per_row});
}

// bw16: the backward's block with dy in shared memory (block_per_row up to 32768; 16-bit rows from 2048; its prefetching
// form was removed in session 11, and 16-bit rows from 24576 / 28673 now take the re-read kernel) and the forward's wide block staged (above 16384), against the float64 reference with poisoned outputs: few rows and more rows than blocks
// resident (the staged kernel's blocks walk several), f32 / bf16 / f16 in, f32 out, temperatures, rows of an odd pitch
// (unaligned: cp.async and the bulk copy decline some rows, take others), and rows of a batch bitwise equal to the
// same rows alone.
TEST_F(GpuSoftmax, WideSharedBackwardAndStagedWideForward) {
  const std::vector<SoftmaxPath> paths = {SoftmaxPath::automatic, SoftmaxPath::block_per_row};
  std::uint64_t seed = 2600;
  const std::vector<std::int64_t> ns =
      small_mode() ? std::vector<std::int64_t>{16385, 32768} : std::vector<std::int64_t>{16385, 20000, 30001, 32768};
  for (std::int64_t n : ns) {
    const std::string tag = "3x" + std::to_string(n);
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, 3, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_bf16", op, DType::bf16, DType::bf16, 3, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_f16_to_f32", op, DType::f16, DType::f32, 3, n, ++seed), paths);
      Case t = plain_case(tag + "_temperature", op, DType::bf16, DType::bf16, 3, n, ++seed);
      t.row_temperature = {0.5, 3.0, 0.25};
      run_all_paths(t, paths);
      Case u = plain_case(tag + "_unaligned_bf16", op, DType::bf16, DType::bf16, 3, n, ++seed);
      u.in.strides = {n + 3, 1};
      u.in.offset = 1;
      run_all_paths(u, paths);
    }
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
      run_all_paths(plain_case(tag + "_fwd_bf16", op, DType::bf16, DType::bf16, 3, n, ++seed), paths);
      run_all_paths(plain_case(tag + "_fwd_f32", op, DType::f32, DType::f32, 3, n, ++seed), paths);
      Case u = plain_case(tag + "_fwd_unaligned_f16", op, DType::f16, DType::f32, 3, n, ++seed);
      u.in.strides = {n + 3, 1};
      u.in.offset = 1;
      run_all_paths(u, paths);
    }
  }
  // More rows than blocks resident (132 at one block an SM above 16384), so blocks of the persistent (staged) forward
  // kernels walk two rows; aligned rows and rows of an odd pitch (some rows staged, some not). The bf16 softmax
  // backward here has gone to the re-read kernel (backward_reread.cu) since mid11's rule (session 11), not to a
  // staged block: the dy-shared block's prefetching form is removed.
  if (!small_mode()) {
    for (std::int64_t pitch : {std::int64_t{0}, std::int64_t{1}}) {
      const std::int64_t n = 32768, rows = 140;
      const std::string tag = "140x32768_pitch+" + std::to_string(pitch);
      for (Op op : {Op::softmax_backward, Op::softmax, Op::log_softmax}) {
        Case c = plain_case(tag, op, DType::bf16, DType::bf16, rows, n, ++seed);
        c.in.strides = {n + pitch, 1};
        c.in.offset = pitch;
        run_all_paths(c, {SoftmaxPath::automatic});
      }
    }
  }
  // Below 16385: bf16 on the dy-shared block from 2048 (softmax_cuda.cpp kBackwardSharedFromN16), f32 on the
  // 16 + 16 blocks; few and many rows, unaligned.
  for (std::int64_t n : {1025, 2047, 4097, 8193, 12289, 16384}) {
    if (small_mode() && n > 4097) continue;
    for (std::int64_t rows : {std::int64_t{2}, std::int64_t{small_mode() ? 4 : n <= 4097 ? 300 : 40}}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        run_all_paths(plain_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed), paths);
        Case u = plain_case(tag + "_unaligned_bf16", op, DType::bf16, DType::bf16, rows, n, ++seed);
        u.in.strides = {n + 3, 1};
        u.in.offset = 1;
        run_all_paths(u, paths);
      }
    }
  }
  if (small_mode()) return;
  // Batch invariance: rows of an odd pitch in a batch of more rows than blocks resident, bitwise equal alone.
  for (std::int64_t n : {4097, 32768}) {
    const std::int64_t rows = 140;
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward, Op::softmax, Op::log_softmax}) {
      for (DType t : {DType::f32, DType::bf16}) {
        Case batch = plain_case("wide_shared_batch_" + std::to_string(n), op, t, t, rows, n, 13);
        batch.in.strides = {n + 1, 1};
        batch.in.offset = 1;
        const Result all = run_gpu(batch, SoftmaxPath::automatic);
        ASSERT_TRUE(all.ran) << all.reason;
        for (std::int64_t r : {std::int64_t{0}, std::int64_t{70}, std::int64_t{133}, rows - 1}) {
          Case one = plain_case("alone", op, t, t, 1, n, 13);
          one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
          if (is_backward(op)) one.dy.assign(batch.dy.begin() + r * n, batch.dy.begin() + (r + 1) * n);
          const Result alone = run_gpu(one, SoftmaxPath::automatic);
          ASSERT_TRUE(alone.ran) << alone.reason;
          for (std::int64_t i = 0; i < n; ++i) {
            const double a = alone.out[i], b = all.out[r * n + i];
            ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || a == b)
                << op_name(op) << " " << dtype_name(t) << " n=" << n << " row " << r << " element " << i
                << ": alone " << a << ", batch " << b;
          }
        }
      }
    }
  }
}

// A forced path that cannot serve a call says so, naming itself; it never falls back silently.
TEST_F(GpuSoftmax, ForcedPathsRefuseWhatTheyCannotServe) {
  auto refused = [](const Case& c, SoftmaxPath path, const char* words) {
    const Result r = run_gpu(c, path);
    EXPECT_FALSE(r.ran) << cuda::to_string(path) << " served " << c.name;
    EXPECT_NE(r.reason.find(cuda::to_string(path)), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(words), std::string::npos) << r.reason;
  };
  refused(plain_case("warp_1025", Op::softmax, DType::f32, DType::f32, 2, 1025, 1), SoftmaxPath::warp_per_row,
          "capacity");
  // block_per_row's wide block holds 1024 × 32 elements (backward 1024 × 32 of y, dy in shared memory).
  refused(plain_case("block_32769", Op::softmax, DType::f32, DType::f32, 2, 32769, 1), SoftmaxPath::block_per_row,
          "capacity");
  refused(plain_case("block_backward_32769", Op::softmax_backward, DType::f32, DType::f32, 2, 32769, 1),
          SoftmaxPath::block_per_row, "capacity");
  refused(plain_case("cluster_196609", Op::logsumexp, DType::f32, DType::f32, 1, 196609, 1),
          SoftmaxPath::cluster_row, "capacity");
  refused(plain_case("lesson_bf16", Op::softmax, DType::bf16, DType::bf16, 2, 10, 1),
          SoftmaxPath::lesson_row_per_thread, "lesson");
  refused(plain_case("lesson_state", Op::state, DType::f32, DType::f32, 2, 10, 1), SoftmaxPath::lesson_row_per_thread,
          "lesson");
  refused(plain_case("lesson_backward", Op::softmax_backward, DType::f32, DType::f32, 2, 10, 1),
          SoftmaxPath::lesson_row_per_thread, "lesson");
  // ...while the lesson path still serves what it can.
  const Case ok = plain_case("lesson_ok", Op::softmax, DType::f32, DType::f32, 3, 100, 2);
  const Result r = run_gpu(ok, SoftmaxPath::lesson_row_per_thread);
  ASSERT_TRUE(r.ran) << r.reason;
  const Reference ref = reference(ok);
  for (std::size_t i = 0; i < r.out.size(); ++i) EXPECT_NEAR(r.out[i], ref.out[i], 1e-6 * ref.out[i] + 1e-30);
}

// The 16-bit-output tier (common.cuh out_exp; docs/semantics.md §6, "16-bit softmax outputs"): a bf16 / f16 softmax
// output forms its terms as expf(fl(z − m)), giving up only the subtraction's rounding, so its f32 value p̂ lies within
// (18 + L + ln(1/p) + ln n)·u of the exact p, relative (softmax_gate_16bit). Rounding is monotonic, so the output can
// only be one of the roundings of that interval's two ends: where the interval holds no rounding boundary (nearly
// everywhere) the output must be the correctly rounded value itself, stricter than the suite's 1-ulp gate.
// expect_plain_exp_bound runs `c` on the paths and holds every output to that; `exact` is the float64-or-better softmax
// of the f32 scores the device forms, in c's logical order. `ran(path)` is called after each path that served.
template <typename Ran>
void expect_plain_exp_bound(const Case& c, DType t, std::int64_t n, const std::vector<long double>& exact, Ran ran) {
  const Gate gate{Op::softmax, t, n};
  for (SoftmaxPath path : {SoftmaxPath::automatic, SoftmaxPath::warp_per_row, SoftmaxPath::block_per_row,
                           SoftmaxPath::cluster_row, SoftmaxPath::split_row}) {
    SCOPED_TRACE(std::string("path ") + cuda::to_string(path) + ", " + c.name + ", " + dtype_name(t));
    const Result res = run_gpu(c, path);
    if (path == SoftmaxPath::automatic) ASSERT_TRUE(res.ran) << res.reason;  // the dispatcher always serves
    if (!res.ran) continue;  // a capacity refusal (run_all_paths' tests hold the paths to those)
    ran(path);
    int failures = 0;
    for (std::size_t i = 0; i < exact.size() && failures < 5; ++i) {
      const double p = static_cast<double>(exact[i]);
      const double g = (18 + gate.L() - std::log(std::max(p, 1e-30)) + gate.ln_n()) * kU;
      const double lo = round_to(t, p - g * std::max(p, 1e-30)), hi = round_to(t, p + g * std::max(p, 1e-30));
      if (res.out[i] == lo || res.out[i] == hi) continue;
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << res.out[i] << ", exact " << p << " rounds to " << lo
                    << (lo == hi ? "" : " or " + sci(hi)) << " within the bound";
    }
  }
}

// The scores are divided by T = 0.7 (z = fl(x / T) in f32, as on the device), so z − m is inexact for most elements
// (the test first checks that it is: its power), at gaps up to 60 where the lost rounding is largest.
TEST_F(GpuSoftmax, SixteenBitSoftmaxWithinItsPlainExponentialBound) {
  const float T = 0.7f;
  std::uint64_t seed = 9000;
  for (DType t : {DType::bf16, DType::f16})
    for (std::int64_t n : {std::int64_t{300}, std::int64_t{4097}, std::int64_t{30001}}) {
      if (small_mode() && n > 4097) continue;
      const std::int64_t rows = n > 4097 ? 8 : 64;
      Case c = random_case("plain_exp_" + std::to_string(n), Op::softmax, t, t, rows, n, ++seed);
      // f16 probabilities below 2^-25 round to 0: keep the gaps where the outputs carry information.
      const double spread = t == DType::f16 ? 16.0 : 60.0;
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<double> gap(0.0, spread * static_cast<double>(T));
      for (auto& x : c.x) x = round_to(t, 0.37 - gap(rng));
      c.options.temperature = T;
      c.exact_scaling = false;
      // The exact softmax of the f32 scores the device divides out, and how many differences are inexact in f32.
      std::vector<long double> exact(c.x.size());
      std::int64_t inexact = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<float> z(static_cast<std::size_t>(n));
        float m = -INFINITY;
        for (std::int64_t i = 0; i < n; ++i) m = std::max(m, z[i] = static_cast<float>(c.x[r * n + i]) / T);
        long double l = 0;
        for (std::int64_t i = 0; i < n; ++i) l += std::exp(static_cast<long double>(z[i]) - m);
        for (std::int64_t i = 0; i < n; ++i) {
          exact[r * n + i] = std::exp(static_cast<long double>(z[i]) - m) / l;
          inexact += static_cast<long double>(z[i] - m) != static_cast<long double>(z[i]) - m;
        }
      }
      ASSERT_GT(inexact, rows * n / 4) << "these scores no longer exercise the subtraction's rounding";
      expect_plain_exp_bound(c, t, n, exact, [](SoftmaxPath) {});
    }
}

// The same bound on 16-bit softmax rows of 17..32 (softmax_cuda.cpp kWarpSoftmax16NarrowMinN..MaxN, short12: two
// lanes of 16 elements, the tier's terms), which a temperature keeps off the dense kernel: no temperature here, so
// z = x. n = 32 with contiguous rows takes warp_rows_dense_kernel at E16; 32 at an odd pitch (base one element off)
// and 29 (contiguous and odd) the general kernel at E16; forced warp_per_row's launch record must say so. Without a
// temperature z − m is exact for nearly every element, so each row carries two planted scores of magnitude at most
// 15·2^-24, with the row's maximum near 40 (bf16; f16: 8, whose outputs underflow sooner): their differences from the
// maximum need more than f32's 24 bits, inexact (checked: the test's power over the subtraction's lost rounding).
TEST_F(GpuSoftmax, SixteenBitSoftmaxShortRowsWithinItsPlainExponentialBound) {
  std::uint64_t seed = 9100;
  const std::int64_t rows = small_mode() ? 64 : 2048;
  for (DType t : {DType::bf16, DType::f16})
    for (std::int64_t n : {std::int64_t{29}, std::int64_t{32}})
      for (bool odd : {false, true}) {
        Case c = random_case("plain_exp_short_" + std::to_string(n) + (odd ? "_odd_pitch" : ""), Op::softmax, t, t,
                             rows, n, ++seed);
        if (odd) {
          c.in.strides = {n + 3, 1};
          c.in.offset = 1;
        }
        const double spread = t == DType::f16 ? 16.0 : 60.0, top = t == DType::f16 ? 8.0 : 40.0;
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> gap(0.0, spread);
        for (auto& x : c.x) x = round_to(t, top - gap(rng));
        // ±(2j + 1)·2^-24, j = r mod 8: exact in bf16 and in f16 (subnormal); its lowest bit 2^-24 lies more than 24
        // bits below a maximum of 1 or more, so z − m is inexact in f32.
        for (std::int64_t r = 0; r < rows; ++r) {
          const double tiny = round_to(t, std::ldexp(static_cast<double>(2 * (r % 8) + 1), -24));
          c.x[r * n + (r % n)] = tiny;
          c.x[r * n + ((r + n / 2) % n)] = -tiny;
        }
        std::vector<long double> exact(c.x.size());
        std::int64_t inexact = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          float m = -INFINITY;
          for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<float>(c.x[r * n + i]));
          long double l = 0;
          for (std::int64_t i = 0; i < n; ++i) l += std::exp(static_cast<long double>(c.x[r * n + i]) - m);
          for (std::int64_t i = 0; i < n; ++i) {
            const float z = static_cast<float>(c.x[r * n + i]);
            exact[r * n + i] = std::exp(static_cast<long double>(z) - m) / l;
            inexact += static_cast<long double>(z - m) != static_cast<long double>(z) - m;
          }
        }
        ASSERT_GE(inexact, rows * 3 / 2) << "the planted scores no longer exercise the subtraction's rounding";
        const bool dense = n == 32 && !odd;
        expect_plain_exp_bound(c, t, n, exact, [&](SoftmaxPath path) {
          if (path != SoftmaxPath::warp_per_row) return;
          const auto& last = cuda::kernels::warp_row_last();
          EXPECT_EQ(last.lanes.load(), 2);
          EXPECT_EQ(last.elems.load(), 16);
          EXPECT_EQ(last.dense.load(), dense) << "warp_rows_dense_kernel";
        });
      }
}

// mid16: block_per_row's 16-bit forward lane-staged (BlockConfig::lane_stages: each thread's share of the block's next
// rows copied into shared memory by cp.async, on a persistent grid) computes the direct kernel's outputs bit for bit
// (the same threads, elements and trees; only where a row's elements come from differs), at 1, 2 and 3 rows ahead, on
// rows that fill and do not fill the last vectors, aligned and not (unaligned rows go through registers), with more
// rows than the grid holds (each block walks several, its stage ring wrapping) and fewer rows than it stages ahead.
// Outputs poisoned (0xFF bytes: NaN) before every launch; the direct kernel is held to the float64 reference by the
// tests above. (The dispatcher takes the lane-staged kernel since this test's many-rows shapes passed on the H200:
// softmax_cuda.cpp kBlockLaneStagedByDefault.)
TEST_F(GpuSoftmax, LaneStagedBlockRowsBitwiseTheDirectKernel) {
  namespace k = cuda::kernels;
  struct Shape {
    std::int64_t rows, n;
  };
  // The first three outnumber any persistent grid, whatever the occupancy: an SM holds at most 2048 threads, so the
  // grid of a launch of `threads` threads a block has at most 2048·SMs/threads blocks, and these shapes have 7 rows
  // more (H200: 2823×2048, 775×8191, 535×12288): blocks walk several rows and the kernel prefetches, the case the
  // lane-staged kernel exists for. (The run of c21f565 had 12 M-element shapes outlast device.sh's 8 s cap, its time
  // on the host: the bytes are compared with std::mismatch below, not byte by byte.) Under compute-sanitizer
  // (small mode) the shortest many-rows shape stays, with the few-row ones.
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  auto threads_for = [](std::int64_t n) {
    const std::int64_t threads = ((n + k::kBlockElems - 1) / k::kBlockElems + 31) / 32 * 32;
    return std::min<std::int64_t>(512, std::max<std::int64_t>(32, threads));
  };
  auto many_rows = [&](std::int64_t n) { return Shape{2048 * std::int64_t{sms} / threads_for(n) + 7, n}; };
  std::vector<Shape> shapes = {many_rows(2048), many_rows(8191), many_rows(12288), {2, 1025}, {300, 4097}, {5, 33}};
  if (small_mode()) shapes.erase(shapes.begin() + 1, shapes.begin() + 3);
  std::uint64_t seed = 16000;
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : shapes)
      for (int offset : {0, 1}) {  // elements before the first row: 1 leaves every row unaligned
        const std::int64_t count = sh.rows * sh.n + offset;
        std::mt19937_64 rng(++seed);
        std::uniform_real_distribution<double> dist(-8.0, 8.0);
        std::vector<double> x(static_cast<std::size_t>(count));
        for (auto& v : x) v = dist(rng);
        const std::size_t es = dtype_size(t);
        const std::vector<unsigned char> host = pack(contiguous(t, {count}), x, 0);
        void *din = nullptr, *dout = nullptr;
        float* dstat = nullptr;
        const std::size_t out_bytes = static_cast<std::size_t>(sh.rows * sh.n) * sizeof(float);
        ASSERT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
        ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), 2 * sizeof(float) * sh.rows), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
        for (k::Op op : {k::Op::softmax, k::Op::log_softmax, k::Op::logsumexp, k::Op::state})
          for (DType out_t : {t, DType::f32}) {
            if (!k::writes_rows(op) && out_t != t) continue;
            const k::RowProblem p = contiguous_rows(op, static_cast<const unsigned char*>(din) + offset * es, t, dout,
                                                    out_t, dstat, sh.rows, sh.n);
            const std::size_t bytes = k::writes_rows(op) ? static_cast<std::size_t>(sh.rows * sh.n) * dtype_size(out_t)
                                                          : 2 * sizeof(float) * static_cast<std::size_t>(sh.rows);
            void* const dst = k::writes_rows(op) ? dout : static_cast<void*>(dstat);
            auto run = [&](int stages) {
              EXPECT_EQ(cudaMemset(dst, 0xFF, bytes), cudaSuccess);
              k::BlockConfig c;
              c.threads = static_cast<int>(threads_for(sh.n));
              c.lane_stages = stages;
              k::launch_block_rows(p, c, nullptr);
              EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
              std::vector<unsigned char> got(bytes);
              EXPECT_EQ(cudaMemcpy(got.data(), dst, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
              return got;
            };
            const std::vector<unsigned char> direct = run(0);
            // The inputs are finite, so no output may still be the poison (an element left unwritten).
            if (k::writes_rows(op)) {
              const std::size_t os = dtype_size(out_t);
              for (std::size_t i = 0; i < bytes; i += os)
                ASSERT_FALSE(std::all_of(direct.begin() + i, direct.begin() + i + os, [](unsigned char b) { return b == 0xFF; }))
                    << "direct kernel left element " << i / os << " unwritten";
            }
            for (int stages = 1; stages <= k::kMaxLaneStages; ++stages) {
              const std::vector<unsigned char> lane = run(stages);
              const std::size_t first_diff =
                  static_cast<std::size_t>(std::mismatch(lane.begin(), lane.end(), direct.begin()).first - lane.begin());
              EXPECT_EQ(first_diff, bytes) << dtype_name(t) << " -> " << dtype_name(out_t) << " op "
                                           << static_cast<int>(op) << " " << sh.rows << "x" << sh.n << " offset "
                                           << offset << " stages " << stages << ": first differing byte "
                                           << first_diff;
            }
          }
        cudaFree(din);
        cudaFree(dout);
        cudaFree(dstat);
      }
}

}  // namespace
}  // namespace smk::gpu_test
