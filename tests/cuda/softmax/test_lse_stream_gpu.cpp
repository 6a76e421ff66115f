// lse17 (session 17): logsumexp and the state of 16-bit rows past kLseStreamMaxN (32768) on lse_stream.cu's chunk
// kernel (lse_chunks_kernel: split_row's chunks of 12288, each on lse_stream's running state a thread, then split_row's
// merge order), as the dispatcher sends them (softmax_cuda.cpp lse_chunks_takes), at both built thread counts (64 and
// 128 a chunk, lse_chunk_threads_setting). Every case: outputs poisoned, checked against the float64 CPU reference with
// gpu_case.hpp's gates, the kernel's launch counted; beside it the same case through split_row forced (the path these
// rows took before lse17), whose error is printed next to the new one's (the new order is not split_row's bits, so its
// error is what is measured). Then: a row alone bitwise the same row in a batch (batch invariance); rows that take the
// general form (pitched, unaligned, masks, temperatures) bitwise the same values in plain rows where the transform is
// the identity; non-finite rows, ties, a slow ramp and its reverse (every chunk a rise); f32 rows not
// taken (the rule is 16-bit only).
//
// H200, 2026-12-01, lse17's run (scripts/device.sh lse17): all pass but GeneralForm's stride-2 expectation (since
// corrected, below); the error (in u·max(1, |LSE|), 44 lines) within 0.01 u of split_row's on every case but 4x262147
// bf16, where it is lower (logsumexp T64 0.53 against 0.59 u, state 0.01 against 0.04), at most 0.74 u (64x40000);
// memcheck (small) 0 errors, racecheck (small, AgainstTheReference and RowAlone) 0 hazards.
//
// lse18 (session 18): the forms (lse_chunks.hpp kLseForm*: the merge a warp a row, the one launch a cluster a row)
// bitwise session 17's two launches. H200, 2026-12-01, lse18's two runs (scripts/device.sh lse18 / lse18b, the library's
// form then the one launch with an L2 prefetch, since removed; every form forced here): all 8 tests pass at full size,
// memcheck (small) 0 errors, racecheck (small: the forms' tests, RowAlone...) 0 hazards.
//
// lse19 / lse19b (session 19): lse_stream's row kernels (lse_block_kernel T128, lse_warp_kernel L16). Since lse19b
// bf16's plain form (aligned unit-stride rows, no transform) widens by shift and mask (lse_stream.cu kLseRowLean), the
// form the lead's run lead19 timed at 0.970-0.984 of the kernel before; the general form (unaligned, pitched, masked
// rows) keeps the plain widening. GpuLse19: the plain form bitwise the general form on the same values (so bf16's lean
// kernels give the old arithmetic's bits), and both configurations against float64 on special rows. As lse19 ran them
// (H200, lead19 of 2193d3f, forms forced through a tuning switch since removed): FormsBitwiseTheLibrarysKernels and
// FormsAgainstTheReference passed at full size, memcheck 0 errors, racecheck 0 hazards (small).
//
// reg21 (session 20): f32's plain form of rows of at most 4096 on the T128 configuration runs lse_block_kernel built
// for 1536 threads an SM (lse_stream.cu kLseF32T128WideOccMaxN). GpuReg21: through the dispatcher, that kernel serves
// 2048 and 4096 and not 4097, with the bytes of the 1024 kernel (forced through lse_rows_occ.hpp's switch). Since then
// GpuLse19.PlainAndGeneralFormsBitwise compares, for f32 T128 rows ≤ 4096, the 1536 kernel (plain) against the 1024
// one (general). Both passed on the H200 in session 20's integrated run (tree of 85cae7c).
//
// SMK_GPU_TEST_SMALL=1 (scripts/device.sh under compute-sanitizer): each code path at small sizes (rows of 3-4 chunks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/lse_chunks.hpp"
#include "cuda/softmax/lse_rows_occ.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;

// The largest |LSE − reference| of a row op's result over its rows, in units of u·max(1, |reference|) (the state: of
// m + log l). NaN or infinite results where the reference is finite count as 1e30.
double worst_error_u(const Case& c, const Result& r, const Reference& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.out.size(); ++i) {
    const double want = c.op == Op::logsumexp ? ref.out[i] : ref.out[i] + std::log(ref.out2[i]);
    const double got = c.op == Op::logsumexp ? r.out[i] : r.out[i] + std::log(r.out2[i]);
    if (!std::isfinite(want)) continue;
    const double e = std::isfinite(got) ? std::fabs(got - want) / (kU * std::max(1.0, std::fabs(want))) : 1e30;
    worst = std::max(worst, e);
  }
  return worst;
}

// The case through the dispatcher (lse17's kernel at `threads` a chunk, its launch counted) against the reference;
// returned for bitwise comparisons.
Result run_chunks(const Case& c, int threads) {
  SCOPED_TRACE("case " + c.name + ", op " + op_name(c.op) + ", threads " + std::to_string(threads));
  cuda::kernels::lse_chunk_threads_setting() = threads;
  const std::uint64_t before = cuda::kernels::lse_chunks_launch_count();
  const Result r = run_gpu(c, SoftmaxPath::automatic);
  cuda::kernels::lse_chunk_threads_setting() = 0;
  EXPECT_TRUE(r.ran) << r.reason;
  EXPECT_EQ(cuda::kernels::lse_chunks_launch_count(), before + 1) << c.name << ": lse17's kernel did not serve";
  if (r.ran) {
    EXPECT_EQ(check(c, r, reference(c)), 0);
    EXPECT_FALSE(r.stray_write);
  }
  return r;
}

class GpuLseChunks : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
  void TearDown() override {
    cuda::kernels::lse_chunk_threads_setting() = 0;
    cuda::kernels::lse_chunks_form_setting() = -1;
  }
};

// Issue 3's long lengths (and 32769, the first one taken; ragged last chunks), few and many rows, bf16 and f16,
// logsumexp and the state, both thread counts; the error beside split_row's on the same inputs.
// lse17's claim, held (session 17's review, F5): on these rows the running order's worst error against float64 is
// split_row's within 0.01 u (lse17's run: 44 case lines, the largest 1.17 u, the gate ~36 u). kOrderMarginU is a
// regression guard, not a bound (the proved depths differ: semantics.md section 6): a quarter of a unit in the last
// place over split_row's, 25 times the difference measured, far under the gate.
constexpr double kOrderMarginU = 0.25;
TEST_F(GpuLseChunks, AgainstTheReferenceBesideSplitRow) {
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1, 32769},  {3, 65536},  {2, 151936}, {5, 65537},
                                                               {1, 1048581}, {64, 40000}, {4, 262147}};
  if (small_mode()) shapes = {{1, 32769}, {3, 40000}};
  std::uint64_t seed = 1700;
  for (const auto& [rows, n] : shapes) {
    for (DType t : {DType::bf16, DType::f16}) {
      for (Op op : {Op::logsumexp, Op::state}) {
        if (t == DType::f16 && op == Op::state && n != 65537) continue;  // f16 is bf16's code but for the loads
        const Case c = random_case(std::to_string(rows) + "x" + std::to_string(n) + "_" + dtype_name(t), op, t,
                                   DType::f32, rows, n, ++seed);
        const Reference ref = reference(c);
        const Result old = run_gpu(c, SoftmaxPath::split_row);
        ASSERT_TRUE(old.ran) << old.reason;
        for (int threads : {128, 64}) {
          const Result r = run_chunks(c, threads);
          if (!r.ran) continue;
          const double err = worst_error_u(c, r, ref), err_split = worst_error_u(c, old, ref);
          std::printf("[ lse17 ] %-18s %-9s T%-3d error %.2f u (split_row %.2f u)\n", c.name.c_str(), op_name(op),
                      threads, err, err_split);
          EXPECT_LE(err, err_split + kOrderMarginU) << c.name << " T" << threads << ": the running order's error "
                                                    << "grew past split_row's tree's on the same row";
          // The same form again over another poison (the automatic path's own thread count may be the other one).
          cuda::kernels::lse_chunk_threads_setting() = threads;
          const Result again = run_gpu(c, SoftmaxPath::automatic, 0x00);
          cuda::kernels::lse_chunk_threads_setting() = 0;
          expect_same_bits(r, again, c.name + ": run to run (another poison)");
        }
      }
    }
  }
}

// A row's result alone is bitwise the same row's in a batch (the dispatcher's rule takes every row count of a length),
// at both thread counts.
TEST_F(GpuLseChunks, RowAloneEqualsRowInBatch) {
  const std::int64_t rows = small_mode() ? 3 : 37;
  std::uint64_t seed = 1800;
  for (std::int64_t n : small_mode() ? std::vector<std::int64_t>{40000} : std::vector<std::int64_t>{65537, 151936}) {
    for (Op op : {Op::logsumexp, Op::state}) {
      for (int threads : {128, 64}) {
        const Case batch = random_case("batch", op, DType::bf16, DType::f32, rows, n, ++seed);
        const Result all = run_chunks(batch, threads);
        ASSERT_TRUE(all.ran);
        for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
          Case one = random_case("alone", op, DType::bf16, DType::f32, 1, n, seed);
          one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
          const Result a = run_chunks(one, threads);
          ASSERT_TRUE(a.ran);
          ASSERT_TRUE(same_bits(a.out[0], all.out[r])) << op_name(op) << " n " << n << " T" << threads << " row "
                                                       << r << ": alone " << a.out[0] << ", batch " << all.out[r];
          if (op == Op::state) {
            ASSERT_TRUE(same_bits(a.out2[0], all.out2[r])) << "l of row " << r;
          }
        }
      }
    }
  }
}

// The general form (rows not 16-byte aligned, pitched; an all-true mask, which changes no value) gives the plain form's
// bits on the same values; then real transforms and masks against the reference. (A temperature of 1 is not a case
// here: the library drops it before any kernel, so it ran the plain form; session 17's review, F6.) (A reduced
// dimension of stride 2 is not this kernel's: the dispatcher sends it to strided_inner, as before lse17; lse17's run
// had expected it here and failed on that expectation alone.)
TEST_F(GpuLseChunks, GeneralFormBitwiseThePlainOneAndTransforms) {
  const std::int64_t n = small_mode() ? 40000 : 151936, rows = small_mode() ? 2 : 4;
  std::uint64_t seed = 1900;
  for (DType t : {DType::bf16, DType::f16}) {
    for (Op op : {Op::logsumexp, Op::state}) {
      if (small_mode() && (t == DType::f16 || op == Op::state)) continue;  // under the sanitizer: each form once
      for (int threads : {128, 64}) {
        const Case plain = random_case("plain", op, t, DType::f32, rows, n, ++seed);
        const Result p = run_chunks(plain, threads);
        Case pitched = plain;
        pitched.name = "pitched_unaligned";
        pitched.in.strides = {n + 13, 1};
        pitched.in.offset = 1;
        expect_same_bits(p, run_chunks(pitched, threads), "pitched and unaligned against plain");
        if (threads == 128) {  // a reduced dimension of stride 2 takes strided_inner (its own order), not this kernel
          Case strided = plain;
          strided.name = "last_dim_stride_2";
          strided.in.strides = {2 * n + 1, 2};
          const std::uint64_t before = cuda::kernels::lse_chunks_launch_count();
          run_checked(strided, SoftmaxPath::automatic);
          EXPECT_EQ(cuda::kernels::lse_chunks_launch_count(), before) << "a stride-2 row took lse17's kernel";
        }
        Case all_true = plain;
        all_true.name = "mask_all_true";
        all_true.mask = contiguous(DType::b8, {rows, n});
        all_true.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
        expect_same_bits(p, run_chunks(all_true, threads), "all-true mask against plain");
      }
      Case temp = random_case("temperature_0.5", op, t, DType::f32, rows, n, ++seed);
      temp.options.temperature = 0.5f;
      run_chunks(temp, 128);
      Case rt = random_case("row_temperatures", op, t, DType::f32, rows, n, ++seed);
      rt.row_temperature.assign(static_cast<std::size_t>(rows), 0.25);
      rt.row_temperature[1] = 3.0;
      rt.row_temperature[0] = 0.0;  // invalid: a NaN row by contract
      rt.exact_scaling = false;
      run_chunks(rt, 128);
      for (auto policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
        Case b = random_case("bool_mask", op, t, DType::f32, rows, n, ++seed);
        b.mask = contiguous(DType::b8, {rows, n});
        b.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
        for (std::int64_t i = 0; i < n; ++i) {
          b.mask_values[static_cast<std::size_t>(1 * n + i)] = 0;                  // row 1 fully masked
          if (i >= 12288) b.mask_values[static_cast<std::size_t>(0 * n + i)] = 0;  // row 0: its first chunk only
        }
        b.options.empty_rows = policy;
        run_chunks(b, 128);
        run_chunks(b, 64);
        Case a = random_case("additive_mask", op, t, DType::f32, rows, n, ++seed);
        a.mask = contiguous(t, {1, n});  // broadcast over rows
        a.mask_values.resize(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) a.mask_values[static_cast<std::size_t>(i)] = i % 5 == 0 ? -kInf : (i % 3);
        a.options.empty_rows = policy;
        run_chunks(a, 128);
      }
    }
  }
}

// Non-finite rows (all −inf, +inf in the ragged tail, NaN at a chunk's last element, −inf every 13th), ties (every
// score equal; the max repeated in every chunk), the slow ramp and its reverse (every 16-byte step of every chunk a
// rise; session 10's F1), and huge shifts.
TEST_F(GpuLseChunks, SpecialRows) {
  const std::int64_t n = small_mode() ? 40000 : 151939;
  const std::int64_t rows = 9;
  std::uint64_t seed = 2000;
  for (DType t : {DType::bf16, DType::f16}) {
    for (Op op : {Op::logsumexp, Op::state}) {
      Case c = random_case("special", op, t, DType::f32, rows, n, ++seed);
      auto at = [&](std::int64_t r, std::int64_t i) -> double& { return c.x[static_cast<std::size_t>(r * n + i)]; };
      for (std::int64_t i = 0; i < n; ++i) at(0, i) = -kInf;                              // empty
      at(1, n - 2) = kInf;                                                                 // +inf in the last chunk
      at(2, 12287) = kNaN;                                                                 // NaN at a chunk's end
      for (std::int64_t i = 0; i < n; i += 13) at(3, i) = -kInf;                           // −inf every 13th
      for (std::int64_t i = 0; i < n; ++i) at(4, i) = 3.0;                                 // every score tied
      for (std::int64_t i = 0; i < n; i += 777) at(5, i) = 60.0;                           // the max in every chunk
      for (std::int64_t i = 0; i < n; ++i) at(6, i) = round_to(t, static_cast<double>(i) / n * 40.0);         // ramp
      for (std::int64_t i = 0; i < n; ++i) at(7, i) = round_to(t, static_cast<double>(n - i) / n * 40.0);     // reverse
      for (std::int64_t i = 0; i < n; ++i) at(8, i) = round_to(t, (t == DType::f16 ? 6.0e4 : 3.0e38) - i % 7);  // huge
      for (int threads : {128, 64}) run_chunks(c, threads);
    }
  }
}

// lse18 (session 18): the forms of a call give the same bits (lse_chunks.hpp kLseForm*): the merge a warp a row (rows of
// ≤ 32 chunks) and the one launch (a cluster a row: ≤ 16 chunks, 16-bit, 128 threads a chunk, the call resident at
// once) against session 17's two launches with the 512-thread merge kernel, bitwise, logsumexp and the state, plain
// and general rows (pitched and unaligned, a mask, temperatures), special rows, 1-33 chunks (3, 13, 16 take the cluster;
// 17 and 32 the warp merge; 33 the block merge in every form), the cluster at 64 threads not taken, and a row alone (one
// launch) bitwise the same row in a batch too large for one wave (two launches): batch invariance across the forms.
Result run_form(const Case& c, int form, int threads = 128) {
  cuda::kernels::lse_chunks_form_setting() = form;
  const Result r = run_chunks(c, threads);
  cuda::kernels::lse_chunks_form_setting() = -1;
  return r;
}

TEST_F(GpuLseChunks, FormsBitwiseTheBlockMerge) {
  using namespace cuda::kernels;
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1, 32769},  {1, 151936},  {3, 196608}, {37, 65537},
                                                               {32, 128256}, {5, 196609}, {2, 393216}, {2, 393217}};
  if (small_mode()) shapes = {{1, 32769}, {2, 40000}, {1, 208897}};  // 3, 4 and 18 chunks
  std::uint64_t seed = 2200;
  for (const auto& [rows, n] : shapes) {
    const std::int64_t chunks = (n + 12287) / 12288;
    for (DType t : {DType::bf16, DType::f16}) {
      for (Op op : {Op::logsumexp, Op::state}) {
        if (t == DType::f16 && (op == Op::state || rows > 3)) continue;  // f16 is bf16's code but for the loads
        const Case c = random_case(std::to_string(rows) + "x" + std::to_string(n) + "_" + dtype_name(t), op, t,
                                   DType::f32, rows, n, ++seed);
        SCOPED_TRACE(c.name + " " + op_name(op));
        const Result base = run_form(c, kLseFormBlockMerge);
        for (int form : {kLseFormWarpMerge, kLseFormCluster}) {
          const std::uint64_t c0 = lse_chunks_cluster_launch_count(), w0 = lse_chunks_warp_merge_launch_count();
          const Result r = run_form(c, form);
          const bool cluster = lse_chunks_cluster_launch_count() > c0, warp = lse_chunks_warp_merge_launch_count() > w0;
          std::printf("[ lse18 ] %-22s %-9s form %d: %s\n", c.name.c_str(), op_name(op), form,
                      cluster ? "one launch" : warp ? "warp merge" : "block merge");
          if (form == kLseFormWarpMerge || chunks > 16) EXPECT_FALSE(cluster);
          if (!cluster) EXPECT_EQ(warp, chunks <= 32);
          if (form >= kLseFormCluster && chunks <= 16 && rows <= 3) EXPECT_TRUE(cluster) << "three rows fit an H100/H200";
          expect_same_bits(base, r, c.name + ": form " + std::to_string(form) + " against the block merge");
        }
      }
    }
  }
  // The general form through the cluster kernel (pitched and unaligned rows, an all-true mask, a temperature, a
  // boolean mask with a fully masked row) against the two launches' block merge.
  const std::int64_t n = small_mode() ? 40000 : 151936, rows = 3;
  Case plain = random_case("general", Op::logsumexp, DType::bf16, DType::f32, rows, n, ++seed);
  Case pitched = plain;
  pitched.name = "pitched_unaligned";
  pitched.in.strides = {n + 13, 1};
  pitched.in.offset = 1;
  Case temp = plain;
  temp.name = "temperature_0.5";
  temp.options.temperature = 0.5f;
  Case masked = plain;
  masked.name = "bool_mask";
  masked.mask = contiguous(DType::b8, {rows, n});
  masked.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
  for (std::int64_t i = 0; i < n; ++i) {
    masked.mask_values[static_cast<std::size_t>(1 * n + i)] = 0;                  // row 1 fully masked
    if (i % 3 == 0) masked.mask_values[static_cast<std::size_t>(2 * n + i)] = 0;  // row 2: every third
  }
  for (const Case* c : {&pitched, &temp, &masked}) {
    SCOPED_TRACE(c->name);
    const Result base = run_form(*c, kLseFormBlockMerge);
    const std::uint64_t c0 = lse_chunks_cluster_launch_count();
    const Result r = run_form(*c, kLseFormCluster);
    EXPECT_GT(lse_chunks_cluster_launch_count(), c0) << c->name << ": the cluster kernel did not serve";
    expect_same_bits(base, r, c->name + ": one launch against the block merge");
  }
  // 64 threads a chunk: the cluster is not built for it (two launches, the warp merge).
  {
    const std::uint64_t c0 = lse_chunks_cluster_launch_count();
    const Result r64 = run_form(plain, kLseFormCluster, 64);
    EXPECT_EQ(lse_chunks_cluster_launch_count(), c0);
    expect_same_bits(run_form(plain, kLseFormBlockMerge, 64), r64, "T64: warp merge against the block merge");
  }
}

TEST_F(GpuLseChunks, SpecialRowsEveryForm) {
  using namespace cuda::kernels;
  const std::int64_t n = small_mode() ? 40000 : 151939, rows = 9;
  for (Op op : {Op::logsumexp, Op::state}) {
    Case c = random_case("special", op, DType::bf16, DType::f32, rows, n, 2300 + static_cast<int>(op));
    auto at = [&](std::int64_t r, std::int64_t i) -> double& { return c.x[static_cast<std::size_t>(r * n + i)]; };
    for (std::int64_t i = 0; i < n; ++i) at(0, i) = -kInf;                          // empty
    at(1, n - 2) = kInf;                                                             // +inf in the last chunk
    at(2, 12287) = kNaN;                                                             // NaN at a chunk's end
    for (std::int64_t i = 0; i < 12288; ++i) at(3, i) = -kInf;                       // an empty first chunk
    for (std::int64_t i = 0; i < n; ++i) at(4, i) = 3.0;                             // every score tied
    for (std::int64_t i = 0; i < n; i += 777) at(5, i) = 60.0;                       // the max in every chunk
    for (std::int64_t i = 0; i < n; ++i) at(6, i) = round_to(DType::bf16, static_cast<double>(i) / n * 40.0);
    at(7, 5) = kNaN;
    at(7, n - 1) = kInf;                                                             // NaN and +inf in one row
    for (std::int64_t i = 0; i < n; ++i) at(8, i) = round_to(DType::bf16, 3.0e38 - i % 7);  // huge
    const Result base = run_form(c, kLseFormBlockMerge);
    for (int form : {kLseFormWarpMerge, kLseFormCluster})
      expect_same_bits(base, run_form(c, form), "special rows: form " + std::to_string(form));
  }
}

TEST_F(GpuLseChunks, RowAloneOneLaunchEqualsRowInBatchTwoLaunches) {
  using namespace cuda::kernels;
  if (small_mode()) GTEST_SKIP() << "a batch past one wave of clusters is not small";
  const std::int64_t n = 151936, rows = 400;  // past one wave of 13-block clusters (~80 at 8 blocks an SM)
  for (Op op : {Op::logsumexp, Op::state}) {
    const Case batch = random_case("batch", op, DType::bf16, DType::f32, rows, n, 2400 + static_cast<int>(op));
    const std::uint64_t c0 = lse_chunks_cluster_launch_count();
    const Result all = run_form(batch, kLseFormCluster);
    ASSERT_TRUE(all.ran);
    EXPECT_EQ(lse_chunks_cluster_launch_count(), c0) << "the batch took one launch: make it larger";
    for (std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
      Case one = random_case("alone", op, DType::bf16, DType::f32, 1, n, 1);
      one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
      const std::uint64_t c1 = lse_chunks_cluster_launch_count();
      const Result a = run_form(one, kLseFormCluster);
      ASSERT_TRUE(a.ran);
      EXPECT_GT(lse_chunks_cluster_launch_count(), c1) << "the row alone did not take one launch";
      ASSERT_TRUE(same_bits(a.out[0], all.out[r])) << op_name(op) << " row " << r << ": alone " << a.out[0]
                                                   << ", batch " << all.out[r];
      if (op == Op::state) {
        ASSERT_TRUE(same_bits(a.out2[0], all.out2[r])) << "l of row " << r;
      }
    }
  }
}

// The rule: 16-bit rows past 32768 only (32768 stays on lse_stream's row kernel, f32 on split_row), and only under
// the automatic path (split_row forced keeps split_row's kernels).
TEST_F(GpuLseChunks, TheRuleTakesSixteenBitRowsPastLseStream) {
  std::uint64_t seed = 2100;
  auto took = [&](const Case& c, SoftmaxPath path) {
    const std::uint64_t before = cuda::kernels::lse_chunks_launch_count();
    const Result r = run_gpu(c, path);
    EXPECT_TRUE(r.ran) << r.reason;
    if (r.ran) {
      EXPECT_EQ(check(c, r, reference(c)), 0) << c.name;
    }
    return cuda::kernels::lse_chunks_launch_count() != before;
  };
  EXPECT_TRUE(took(random_case("bf16_32769", Op::logsumexp, DType::bf16, DType::f32, 2, 32769, ++seed),
                   SoftmaxPath::automatic));
  EXPECT_FALSE(took(random_case("bf16_32768", Op::logsumexp, DType::bf16, DType::f32, 2, 32768, ++seed),
                    SoftmaxPath::automatic));
  EXPECT_FALSE(took(random_case("f32_65536", Op::logsumexp, DType::f32, DType::f32, 2, 65536, ++seed),
                    SoftmaxPath::automatic));
  EXPECT_FALSE(took(random_case("bf16_65536_forced", Op::logsumexp, DType::bf16, DType::f32, 2, 65536, ++seed),
                    SoftmaxPath::split_row));
}

// ---- lse19 / lse19b (session 19): lse_stream's row kernels, bf16's plain form lean ----------------------------------
// The plain form (aligned rows: bf16 lean since lse19b) against the general form (the same values one element further
// on: every row unaligned, element-by-element loads and the plain widening, to_f32) on the library's grid: the
// statistics (LSE, or m and l) byte for byte, poisoned first. Rows: random, ascending (a rise every chunk), constant
// (ties everywhere), a planted max at both ends, NaN, +inf, all −inf, −inf every 7th, a slow ramp; lengths around each
// configuration's chunk (L16: 256 f32 / 512 16-bit elements a chunk of the row; T128: 2048 / 4096) with ragged tails,
// and the dispatcher's lengths. Both configurations launched directly (launch_lse_stream_rows), f32, bf16 and f16.
struct Lse19Out {
  std::vector<unsigned char> bytes;  // the statistics as written: rows floats (logsumexp) or 2·rows (state)
  std::uint64_t launches = 0;        // lse_stream_launch_count's rise: 1 if the row kernels served
};
Lse19Out lse19_run(const std::vector<unsigned char>& host, std::int64_t offset, DType t, Op op, std::int64_t rows,
                   std::int64_t n, cuda::kernels::LseStreamConfig cfg) {
  namespace k = cuda::kernels;
  void* din = nullptr;
  float* dstat = nullptr;
  const std::size_t stat_bytes = 2 * sizeof(float) * static_cast<std::size_t>(rows);
  EXPECT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), stat_bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dstat, 0xFF, stat_bytes), cudaSuccess);
  const k::RowProblem p = contiguous_rows(
      op == Op::logsumexp ? k::Op::logsumexp : k::Op::state,
      static_cast<const unsigned char*>(din) + offset * static_cast<std::int64_t>(dtype_size(t)), t, nullptr, t, dstat,
      rows, n);
  const std::uint64_t before = k::lse_stream_launch_count();
  k::launch_lse_stream_rows(p, cfg, nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Lse19Out r;
  r.launches = k::lse_stream_launch_count() - before;
  r.bytes.resize(op == Op::logsumexp ? stat_bytes / 2 : stat_bytes);
  EXPECT_EQ(cudaMemcpy(r.bytes.data(), dstat, r.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(din);
  cudaFree(dstat);
  return r;
}

void lse19_rows(Case& c, std::int64_t rows, std::int64_t n, DType t) {
  for (std::int64_t r = 0; r < rows; ++r) {
    auto first = c.x.begin() + r * n, last = first + n;
    switch (r % 9) {
      case 1: std::sort(first, last); break;
      case 2: std::fill(first, last, *first); break;
      case 3: *first = 60.0; *(last - 1) = 60.0; break;
      case 4: first[n / 2] = kNaN; break;
      case 5: first[n - 1] = kInf; break;
      case 6: std::fill(first, last, -kInf); break;
      case 7:
        for (std::int64_t i = 0; i < n; i += 7) first[i] = -kInf;
        break;
      case 8:
        for (std::int64_t i = 0; i < n; ++i) first[i] = round_to(t, std::ldexp(static_cast<double>(i), -16));
        break;
      default: break;
    }
  }
}

class GpuLse19 : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

TEST_F(GpuLse19, PlainAndGeneralFormsBitwise) {
  namespace k = cuda::kernels;
  struct Item {
    k::LseStreamConfig cfg;
    std::vector<std::int64_t> ns;
  };
  std::vector<Item> items = {
      {{16, 0}, {1, 3, 33, 255, 511, 512, 513, 1023, 1024, 1025, 2049, 4096}},
      {{0, 128}, {1, 33, 2047, 2048, 2049, 4095, 4096, 4097, 8193, 16384, 32000, 32768}},
  };
  if (small_mode()) items = {{{16, 0}, {33, 513, 1024}}, {{0, 128}, {33, 2049, 4097}}};
  std::uint64_t seed = 19000;
  int compared = 0;
  for (const Item& it : items)
    for (std::int64_t n : it.ns) {
      // Rows past one wave of the library's grid at the short lengths (warp kernel: 16 rows a block).
      const std::int64_t rows = small_mode() ? 37 : it.cfg.lanes ? (n <= 1025 ? 4500 : 300) : (n <= 8193 ? 400 : 140);
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        for (Op op : {Op::logsumexp, Op::state}) {
          const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n) +
                                  (it.cfg.lanes ? " L16 " : " T128 ") + op_name(op);
          SCOPED_TRACE(tag);
          Case c = random_case("lse19 " + tag, op, t, t, rows, n, ++seed);
          lse19_rows(c, rows, n, t);
          std::vector<double> xs(1, 0.0);  // one element before the rows: offset 1 is every row unaligned
          xs.insert(xs.end(), c.x.begin(), c.x.end());
          const std::vector<unsigned char> host = pack(contiguous(t, {rows * n + 1}), xs, 0);
          const std::vector<unsigned char> plain = pack(contiguous(t, {rows * n}), c.x, 0);
          const Lse19Out a = lse19_run(plain, 0, t, op, rows, n, it.cfg);
          const Lse19Out u = lse19_run(host, 1, t, op, rows, n, it.cfg);
          ASSERT_EQ(a.launches, 1u);
          ASSERT_EQ(u.launches, 1u);
          ASSERT_EQ(a.bytes.size(), u.bytes.size());
          ASSERT_EQ(std::memcmp(a.bytes.data(), u.bytes.data(), a.bytes.size()), 0)
              << tag << ": the plain form differs from the general form";
          // Every row's first statistic (the LSE, or m) written: the poison (all bits set) is no value a row holds.
          for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * 4; i += 4) {
            std::uint32_t w;
            std::memcpy(&w, a.bytes.data() + i, 4);
            ASSERT_NE(w, 0xFFFFFFFFu) << tag << ": word " << i / 4 << " not written";
          }
          ++compared;
        }
      }
    }
  std::printf("[ lse19 ] %d cases: the plain form byte for byte the general form\n", compared);
}

// Both configurations against float64 (the gates of gpu_case.hpp) at the dispatcher's lengths, L16 at 4096 (the
// library's configuration for 16-bit rows there since next20, session 20; f32 rows there take T128) and at 16384 (not
// the library's: a 128-thread block a row), each error printed beside T128's, as lead19 timed it: the bitwise test
// above ties the plain form to the general one; this one says both are right on the special rows.
TEST_F(GpuLse19, RowKernelsAgainstTheReference) {
  namespace k = cuda::kernels;
  std::uint64_t seed = 19500;
  for (const auto& [n, lanes] :
       std::vector<std::pair<std::int64_t, int>>{{1024, 16}, {4096, 0}, {4096, 16}, {16384, 0}, {16384, 16}, {32000, 0}}) {
    if (small_mode() && n > 4096) continue;
    const std::int64_t rows = small_mode() ? 19 : 300;
    for (DType t : {DType::f32, DType::bf16}) {
      for (Op op : {Op::logsumexp, Op::state}) {
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n) +
                                " " + op_name(op);
        SCOPED_TRACE(tag);
        Case c = random_case("lse19 " + tag, op, t, t, rows, n, ++seed);
        lse19_rows(c, rows, n, t);
        const Reference ref = reference(c);
        const std::vector<unsigned char> plain = pack(contiguous(t, {rows * n}), c.x, 0);
        k::LseStreamConfig cfg;
        cfg.lanes = lanes;
        cfg.threads = lanes ? 0 : 128;
        const Lse19Out r = lse19_run(plain, 0, t, op, rows, n, cfg);
        ASSERT_EQ(r.launches, 1u);
        Result res;
        res.ran = true;
        std::vector<float> f(r.bytes.size() / sizeof(float));
        std::memcpy(f.data(), r.bytes.data(), r.bytes.size());
        for (std::int64_t i = 0; i < rows; ++i) res.out.push_back(f[static_cast<std::size_t>(i)]);
        if (op == Op::state)
          for (std::int64_t i = 0; i < rows; ++i) res.out2.push_back(f[static_cast<std::size_t>(rows + i)]);
        EXPECT_EQ(check(c, res, ref), 0);
        std::printf("[ lse19 ] %-28s %s error %.2f u\n", tag.c_str(), lanes ? "L16 " : "T128", worst_error_u(c, res, ref));
        for (std::int64_t i = 0; i < rows; ++i) {
          std::uint32_t w;
          std::memcpy(&w, &f[static_cast<std::size_t>(i)], 4);
          EXPECT_NE(w, 0xFFFFFFFFu) << "row " << i << " not written";
        }
      }
    }
  }
}

// ---- reg21 (session 20): f32's plain-form T128 rows ≤ 4096 on the kernel built for 1536 threads an SM -------------
// f32 logsumexp and the state at 2048 and 4096 (the dispatcher's T128 lengths the rule takes) and 4097 (past it),
// through the public API: which kernel served (lse_stream_launch_count, the dispatcher's last configuration, the 1536
// kernel's launch count), the output poisoned (0xFF, then 0x00 for the forced run), every statistic byte for byte the
// same call's with the 1024 kernel forced (lse_stream_wide_occ() = false), and both against float64. Rows: lse19's
// special rows (random, sorted, constant, NaN, ±inf, all −inf, a slow ramp).
class GpuReg21 : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
  void TearDown() override { cuda::kernels::lse_stream_wide_occ() = true; }
};

TEST_F(GpuReg21, WideKernelServesShortF32RowsWithTheForcedKernelsBytes) {
  namespace k = cuda::kernels;
  const std::int64_t rows = small_mode() ? 19 : 300;
  std::uint64_t seed = 21000;
  for (std::int64_t n : {std::int64_t{2048}, std::int64_t{4096}, std::int64_t{4097}}) {
    for (Op op : {Op::logsumexp, Op::state}) {
      const std::string tag = "f32 " + std::to_string(rows) + "x" + std::to_string(n) + " " + op_name(op);
      SCOPED_TRACE(tag);
      Case c = random_case("reg21 " + tag, op, DType::f32, DType::f32, rows, n, ++seed);
      lse19_rows(c, rows, n, DType::f32);
      const Reference ref = reference(c);
      Result r[2];
      for (int forced = 0; forced < 2; ++forced) {
        k::lse_stream_wide_occ() = forced == 0;
        const std::uint64_t launches = k::lse_stream_launch_count(), wide = k::lse_stream_wide_occ_launch_count();
        k::lse_stream_last_config().lanes.store(-1);
        r[forced] = run_gpu(c, SoftmaxPath::automatic, forced ? 0x00 : 0xFF);
        k::lse_stream_wide_occ() = true;
        ASSERT_TRUE(r[forced].ran) << r[forced].reason;
        EXPECT_EQ(k::lse_stream_launch_count(), launches + 1) << "lse_stream's row kernels did not serve";
        EXPECT_EQ(k::lse_stream_last_config().lanes.load(), 0) << "not the T128 configuration";
        EXPECT_EQ(k::lse_stream_wide_occ_launch_count(), wide + (forced == 0 && n <= 4096 ? 1u : 0u))
            << (forced ? "forced 1024" : "auto") << ": the wrong kernel served";
        EXPECT_EQ(check(c, r[forced], ref), 0);
        EXPECT_FALSE(r[forced].stray_write);
      }
      ASSERT_EQ(r[0].raw.size(), r[1].raw.size());
      EXPECT_EQ(std::memcmp(r[0].raw.data(), r[1].raw.data(), r[0].raw.size()), 0)
          << tag << ": the LSE (or m) differs from the 1024 kernel's bytes";
      if (op == Op::state) {
        ASSERT_EQ(r[0].out2.size(), r[1].out2.size());
        EXPECT_EQ(std::memcmp(r[0].out2.data(), r[1].out2.data(), r[0].out2.size() * sizeof(double)), 0)
            << tag << ": l differs from the 1024 kernel's";
      }
    }
  }
}

}  // namespace
}  // namespace smk::gpu_test
