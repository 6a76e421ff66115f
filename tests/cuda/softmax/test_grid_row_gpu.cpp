// grid_row (src/cuda/softmax/grid_row.cu): few long rows in one grid-resident launch. Every case runs forced
// grid_row against the float64 CPU reference (outputs poisoned first; gpu_case.hpp's gates) AND forced split_row,
// whose outputs grid_row must reproduce bit for bit: the dispatcher picks between the two by the size of the whole
// input, so that equality is what keeps a row's result the same alone or in a batch. Issue 3's few-row lengths,
// rows spanning blocks and blocks spanning rows, inputs past the on-chip stash (re-read), sliced / strided /
// unaligned / in place, temperatures, masks and non-finite rows, a row alone on grid_row against the same row in a
// batch on split_row. H200, 2026-11-30 (commit 219cea4): all pass; memcheck, racecheck and synccheck clean.
//
// SMK_GPU_TEST_SMALL=1 (scripts/device.sh under compute-sanitizer) keeps the cases that exercise each code path of
// the kernel (staged and unstaged chunks, a ragged last chunk, a strided copy, the row outputs) at small sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;

// grid_row against the reference, then bitwise against split_row on the same case.
void check_grid_row(const Case& c) {
  SCOPED_TRACE("case " + c.name + ", op " + op_name(c.op));
  const Result g = run_gpu(c, SoftmaxPath::grid_row);
  ASSERT_TRUE(g.ran) << g.reason;
  EXPECT_EQ(check(c, g, reference(c)), 0);
  const Result s = run_gpu(c, SoftmaxPath::split_row, 0x00);  // another poison: a shared unwritten byte shows
  ASSERT_TRUE(s.ran) << s.reason;
  expect_same_bits(g, s, "grid_row against split_row");
}

class GpuGridRow : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

// Issue 3's lengths above the cluster path (65537, 128256, 151936, 262147) with few rows (one row over a handful of
// blocks; many chunks per row spread over many blocks, some of which span a row boundary), every forward op.
TEST_F(GpuGridRow, IssueLengthsFewRows) {
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1, 65537}, {3, 151936}, {2, 262147}, {32, 128256},
                                                               {64, 65537}, {1, 151936}};
  if (small_mode()) shapes = {{1, 65537}, {3, 151936}, {64, 65537}};
  std::uint64_t seed = 1;
  for (const auto& [rows, n] : shapes) {
    const std::string tag = std::to_string(rows) + "x" + std::to_string(n);
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state})
      check_grid_row(random_case(tag + "_f32", op, DType::f32, DType::f32, rows, n, ++seed));
    check_grid_row(random_case(tag + "_bf16", Op::softmax, DType::bf16, DType::bf16, rows, n, ++seed));
    check_grid_row(random_case(tag + "_bf16", Op::log_softmax, DType::bf16, DType::bf16, rows, n, ++seed));
    check_grid_row(random_case(tag + "_bf16", Op::logsumexp, DType::bf16, DType::f32, rows, n, ++seed));
    check_grid_row(random_case(tag + "_f16_to_f32", Op::softmax, DType::f16, DType::f32, rows, n, ++seed));
  }
}

// More chunks than the grid holds on chip (2 × 48 KB f32 or 4 × 24 KB bf16 per block, 2 blocks per SM: 528 chunks
// of 12288 on 132 SMs, ~6.5M elements), so each block reduces some chunks from global memory and re-reads them:
// one row above 2^24 elements, and many rows of 65537.
TEST_F(GpuGridRow, PastTheOnChipStash) {
  const std::int64_t big = (std::int64_t{1} << 24) + 3;
  check_grid_row(random_case("1x2^24+3_f32", Op::softmax, DType::f32, DType::f32, 1, big, 11));
  if (small_mode()) return;
  check_grid_row(random_case("1x2^24+3_f32", Op::log_softmax, DType::f32, DType::f32, 1, big, 12));
  check_grid_row(random_case("1x2^24+3_f32", Op::state, DType::f32, DType::f32, 1, big, 13));
  check_grid_row(random_case("1x2^24+3_bf16", Op::softmax, DType::bf16, DType::bf16, 1, big, 14));
  check_grid_row(random_case("1x2^24+3_bf16_to_f32", Op::log_softmax, DType::bf16, DType::f32, 1, big, 15));
  check_grid_row(random_case("160x65537_f32", Op::softmax, DType::f32, DType::f32, 160, 65537, 16));
}

// Sliced rows (a pitch longer than the row), unaligned base pointers (no cp.async: the element-wise copy), a
// strided last dimension, in place, 16-bit in and f32 out.
TEST_F(GpuGridRow, SlicedStridedUnalignedInPlace) {
  std::uint64_t seed = 100;
  for (std::int64_t n : {std::int64_t{65537}, std::int64_t{151936}}) {
    const std::int64_t rows = small_mode() ? 2 : 5;
    for (DType t : {DType::f32, DType::bf16}) {
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
        Case c = random_case("pitched_unaligned_" + std::to_string(n), op, t, t, rows, n, ++seed);
        c.in.strides = {n + 13, 1};
        c.in.offset = 1;
        c.out.strides = {n + 3, 1};
        c.out.offset = 2;
        check_grid_row(c);
        Case e = random_case("last_dim_stride_2_" + std::to_string(n), op, t, DType::f32, rows, n, ++seed);
        e.in.strides = {2 * n + 1, 2};
        check_grid_row(e);
      }
    }
    for (Op op : {Op::softmax, Op::log_softmax}) {
      Case c = random_case("in_place_" + std::to_string(n), op, DType::f32, DType::f32, 3, n, ++seed);
      c.in_place = true;
      check_grid_row(c);
    }
    if (small_mode()) break;
  }
}

// Temperatures (scalar, per row with invalid ones), masks (additive broadcast over rows, boolean per row with a
// fully masked row under both policies), non-finite rows (empty, +inf, NaN at a chunk boundary).
TEST_F(GpuGridRow, TemperatureMasksNonFinite) {
  const std::int64_t n = small_mode() ? 30000 : 151936, rows = 4;
  std::uint64_t seed = 200;
  for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
    Case t = random_case("temperature", op, DType::f32, DType::f32, rows, n, ++seed);
    t.options.temperature = 0.5f;
    check_grid_row(t);
    Case r = random_case("row_temperatures", op, DType::f32, DType::f32, rows, n, ++seed);
    r.row_temperature = {0.5, 4.0, 0.0, kNaN};  // rows 2 and 3: invalid, NaN rows by contract
    check_grid_row(r);
    for (auto policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
      Case b = random_case("bool_mask", op, DType::bf16, DType::bf16, rows, n, ++seed);
      b.out = contiguous(DType::bf16, {rows, n});
      b.mask = contiguous(DType::b8, {rows, n});
      b.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
      for (std::int64_t i = 0; i < n; ++i) {
        b.mask_values[1 * n + i] = 0;                    // row 1 fully masked
        b.mask_values[2 * n + i] = i % 2 == 0 ? 1 : 0;  // row 2 keeps the even positions
      }
      b.options.empty_rows = policy;
      check_grid_row(b);
      Case a = random_case("additive_mask", op, DType::f32, DType::f32, rows, n, ++seed);
      for (auto& v : a.x) v = std::round(v * 64) / 64;  // x + mask exact in f32
      a.mask = contiguous(DType::f32, {1, n});
      a.mask_values.resize(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) a.mask_values[i] = i % 5 == 0 ? -kInf : static_cast<double>(i % 3);
      a.options.empty_rows = policy;
      check_grid_row(a);
      Case f = random_case("non_finite", op, DType::f32, DType::f32, rows, n, ++seed);
      for (std::int64_t i = 0; i < n; ++i) f.x[0 * n + i] = -kInf;  // empty row
      f.x[1 * n + n / 2] = kInf;                                     // saturated
      f.x[2 * n + 12287] = kNaN;                                     // NaN at a chunk's last element
      f.options.empty_rows = policy;
      check_grid_row(f);
    }
  }
}

// A row alone through grid_row (forced) and through the dispatcher, and the same row inside a batch the
// dispatcher sends to split_row (78.6 MB of f32: past any kGridRowMaxBytes worth having): bitwise the same, and run
// to run. This is what lets the dispatcher's rule look at the number of rows (softmax_cuda.cpp).
TEST_F(GpuGridRow, AloneOnGridRowEqualsBatchOnSplitRow) {
  if (small_mode()) GTEST_SKIP() << "an 80 MB batch: not under the sanitizer";
  const std::int64_t n = 65537, rows = 300;
  for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
    const Case batch = random_case("batch", op, DType::f32, DType::f32, rows, n, 31);
    const Result all = run_gpu(batch, SoftmaxPath::automatic);
    ASSERT_TRUE(all.ran) << all.reason;
    for (std::int64_t r : {std::int64_t{0}, std::int64_t{151}, rows - 1}) {
      Case one = random_case("alone", op, DType::f32, DType::f32, 1, n, 31);
      one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
      const Result a = run_gpu(one, SoftmaxPath::grid_row), b = run_gpu(one, SoftmaxPath::grid_row, 0x00);
      const Result d = run_gpu(one, SoftmaxPath::automatic);
      ASSERT_TRUE(a.ran && b.ran && d.ran);
      const std::int64_t width = is_row_op(op) ? 1 : n;
      for (std::int64_t i = 0; i < width; ++i) {
        ASSERT_TRUE(same_bits(a.out[i], all.out[r * width + i]))
            << op_name(op) << " row " << r << " element " << i << ": alone " << a.out[i] << ", batch "
            << all.out[r * width + i];
        ASSERT_TRUE(same_bits(a.out[i], b.out[i])) << "run to run, element " << i;
        ASSERT_TRUE(same_bits(a.out[i], d.out[i])) << "the dispatcher's choice, element " << i;
      }
      if (op == Op::state) ASSERT_EQ(a.out2[0], all.out2[r]);
    }
  }
}

// Forced on a backward pass, grid_row refuses and names itself; zero-length rows still give the per-row outputs.
TEST_F(GpuGridRow, RefusesBackwardServesZeroLengthRows) {
  Case c = random_case("backward", Op::softmax_backward, DType::f32, DType::f32, 2, 70000, 1);
  c.dy = random_values(DType::f32, 2 * 70000, 1.0, 0.0, 2);
  const Result r = run_gpu(c, SoftmaxPath::grid_row);
  EXPECT_FALSE(r.ran);
  EXPECT_NE(r.reason.find("grid_row"), std::string::npos) << r.reason;
  for (Op op : {Op::logsumexp, Op::state}) check_grid_row(random_case("zero_length", op, DType::f32, DType::f32, 3, 0, 1));
}

// Timing of grid_row's levers beside split_row (not a test: SMK_GRID_ROW_TIMING=1 runs it, scripts/device.sh
// `fewrows`): the median of `reps` calls through the public API, CUDA events around each call, L2 flushed before it
// (a 256 MB memset, as `softmaxkit bench` does). Variants: split_row; grid_row as the library runs it; its staging
// off (every chunk re-read, the second time from L2); the staged reads without the evict-first hint; a plain launch
// whose barrier is an atomic counter zeroed by a memset (what the cooperative launch costs). SMK_GRID_ROW_FLUSH
// chooses the flush: `write` (the bench's memset, which leaves up to the L2's size of dirty lines to be written back
// while the timed call runs), `read` (a logsumexp over the 256 MB, which leaves clean lines) or `none` (the inputs
// stay in L2: launch and on-chip work alone). A 1×32 row gives each flush's floor.
TEST_F(GpuGridRow, LeversTiming) {
  const char* on = std::getenv("SMK_GRID_ROW_TIMING");
  if (on == nullptr || on[0] != '1') GTEST_SKIP() << "timing: set SMK_GRID_ROW_TIMING=1";
  const char* flush_env = std::getenv("SMK_GRID_ROW_FLUSH");
  const std::string flush_mode = flush_env != nullptr ? flush_env : "write";
  using cuda::kernels::GridRowTuning;
  const std::size_t flush_bytes = std::size_t{256} << 20;
  cuda::DeviceBuffer<unsigned char> flush(flush_bytes);
  cuda::DeviceBuffer<float> flush_sums(256);
  const auto flush_cols = static_cast<std::int64_t>(flush_bytes / 1024);  // [256, 262144] f32
  const TensorView flush_in = TensorView::contiguous(flush.data(), DType::f32, Device::cuda(0), {256, flush_cols});
  const TensorView flush_out = TensorView::contiguous(flush_sums.data(), DType::f32, Device::cuda(0), {256});
  SMK_CUDA_CHECK(cudaMemset(flush.data(), 0x3c, flush_bytes));  // finite f32 scores (about 0.0115)
  cudaEvent_t a, b;
  SMK_CUDA_CHECK(cudaEventCreate(&a));
  SMK_CUDA_CHECK(cudaEventCreate(&b));
  struct Variant {
    const char* name;
    SoftmaxPath path;
    GridRowTuning tune;
  };
  const std::vector<Variant> variants = {
      {"split_row", SoftmaxPath::split_row, {}},
      {"grid_row", SoftmaxPath::grid_row, {}},
      {"grid_no_stage", SoftmaxPath::grid_row, {0, true, true}},
      {"grid_no_evict_hint", SoftmaxPath::grid_row, {-1, false, true}},
      {"grid_plain_launch", SoftmaxPath::grid_row, {-1, true, false}},
  };
  std::printf("L2 flush before each call: %s\n", flush_mode.c_str());
  std::printf("%-10s %-5s %-14s", "op", "dtype", "shape");
  for (const auto& v : variants) std::printf(" %18s", v.name);
  std::printf("   (median us)\n");
  for (const auto& [rows, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 32}, {1, 151936}, {32, 128256}, {1, 16777216}, {4, 1000000}, {64, 65537}}) {
    for (DType t : {DType::f32, DType::bf16}) {
      cuda::DeviceBuffer<unsigned char> din(static_cast<std::size_t>(rows * n) * dtype_size(t));
      cuda::DeviceBuffer<unsigned char> dout(static_cast<std::size_t>(rows * n) * dtype_size(t));
      {  // random scores: never time zeros
        const Layout l = contiguous(t, {rows, n});
        const auto bytes = pack(l, random_values(t, rows * n, 4.0, 0.0, 5), 0);
        SMK_CUDA_CHECK(cudaMemcpy(din.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
      }
      const TensorView in = TensorView::contiguous(din.data(), t, Device::cuda(0), {rows, n});
      const TensorView out = TensorView::contiguous(dout.data(), t, Device::cuda(0), {rows, n});
      const TensorView lse = TensorView::contiguous(dout.data(), DType::f32, Device::cuda(0), {rows});
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
        std::printf("%-10s %-5s %-14s", op_name(op), t == DType::f32 ? "f32" : "bf16",
                    (std::to_string(rows) + "x" + std::to_string(n)).c_str());
        for (const auto& v : variants) {
          cuda::kernels::grid_row_tuning() = v.tune;
          auto call = [&] {
            cuda::ScopedSoftmaxPath force(v.path);
            if (op == Op::softmax) softmax(out, in);
            else if (op == Op::log_softmax) log_softmax(out, in);
            else logsumexp(lse, in);
          };
          call();
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          std::vector<float> ms;
          for (int r = 0; r < 40; ++r) {
            if (flush_mode == "write") SMK_CUDA_CHECK(cudaMemsetAsync(flush.data(), r & 0xff, flush_bytes));
            else if (flush_mode == "read") logsumexp(flush_out, flush_in);
            SMK_CUDA_CHECK(cudaEventRecord(a));
            call();
            SMK_CUDA_CHECK(cudaEventRecord(b));
            SMK_CUDA_CHECK(cudaEventSynchronize(b));
            float t_ms = 0;
            SMK_CUDA_CHECK(cudaEventElapsedTime(&t_ms, a, b));
            ms.push_back(t_ms);
          }
          std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
          std::printf(" %18.1f", 1000.0 * ms[ms.size() / 2]);
        }
        std::printf("\n");
      }
    }
  }
  cuda::kernels::grid_row_tuning() = GridRowTuning{};
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

}  // namespace
}  // namespace smk::gpu_test
