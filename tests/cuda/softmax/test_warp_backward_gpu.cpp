// The f32 dense form of warp_per_row's backward (sbwd11, session 11; src/cuda/softmax/backward.cu
// backward_warp_dense_kernel, warp_backward.hpp) against the general kernel (backward_warp_kernel), bitwise: the same
// terms, tree_sum, group_sum and backward_grads in the same order, so every dx must be the same bits. The general
// kernel's outputs are checked against the float64 reference here too (outputs poisoned with 0xFF first, stray writes
// checked). Rows of 8 ... 1024 at the dispatcher's lanes and elements (E8, E16, E32), every built bound (blocks an SM:
// E8 at 4 with streaming stores (sbwd12), E16 at 4, E32 at 2 with plain ones) on grids uncapped and capped at 7 blocks
// (every block walks many row groups); every other bound 1..8 asked for must fall back to the general kernel. (The run
// of 90f1614 built E8 at 4 / 6 / 8, E16 at 3 / 4 / 5, E32 at 2 / 3, each with three cache hints; the run of 69c6ce5 E8
// at 4 and E16 / E32 each with and without streaming stores: all passed here, at full size in 69c6ce5's.)
// The dense kernel serves only rows dense for the launch (warp_backward.hpp backward_dense_f32): rows of 29 and 100,
// an odd pitch and a temperature must take the general kernel, which the launch record (warp_backward_dense_last) must
// show. The odd pitch, temperature and non-finite y variants run at 32 (E8), 100, 512 (E16) and 1024 (E32), so both
// built dense kernels see non-finite y and refuse the pitch and the temperature.
// In place (session 12's review F8): the dense E8 f32 kernel (streaming stores) and the packed E8 16-bit kernel at
// their rule's bounds with dx written over dy and over y (DispatcherRuleAtItsBounds).
// pack14 (session 14): the dy-shared block's packed form bitwise the unpacked block
// (SharedPackedBitwiseTheUnpackedBlock) and the 16-bit rows of 64..128 that pack14's rule moved (SixteenBitRowsOf64To128).
// bwd16 (session 16): split_row's common-call elementwise pass with streaming dx stores gives the plain stores' bits,
// and the dispatcher takes it where its rule says (SplitStreamingStoresBitwisePlainStores).
// bwd17 (session 17): split_row's common-call chunk sums at 3 blocks an SM and its elementwise pass as the vector
// kernel give the bits of sums at 2 with the chunk kernel, and the dispatcher takes them where its rule says
// (SplitSumsBoundsAndVectorPassBitwiseTheDefault).
// bwd21 (session 20): the two f32 kernels that read y and dy evict-last by default (the dense warp kernel at E32, the
// 512-thread block's dense form) at lengths the dispatcher serves them, bitwise their plain forms
// (EvictLastF32KernelsBitwiseThePlainForms).
//
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer runs) keeps 2^15 elements a case.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/warp_backward.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;
namespace k = cuda::kernels;

class GpuWarpBackward : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

struct TuningGuard {
  ~TuningGuard() {
    k::warp_row_tuning() = k::WarpRowTuning{};
    k::warp_backward_dense_tuning() = k::WarpBackwardDenseTuning{};
    k::backward_packed_tuning() = k::BackwardPackedTuning{};
    k::backward_split_tuning() = k::BackwardSplitTuning{};
    k::backward_hint_tuning() = k::BackwardHintTuning{};
  }
};

// The dispatcher's lanes and elements for an f32 backward row of n (softmax_cuda.cpp warp_config, as the rule is
// written: 32 bytes a lane for rows of 17..256, else 64, at most 32 lanes, elements 4..32).
std::pair<int, int> f32_lanes_elems(std::int64_t n) {
  const std::int64_t target = n >= 17 && n <= 256 ? 8 : 16;
  int lanes = 1;
  while (lanes < (n + target - 1) / target && lanes < 32) lanes *= 2;
  int elems = 4;
  while (elems * lanes < n && elems < 32) elems *= 2;
  return {lanes, elems};
}

// The case again on the automatic path with dx written over dy (in place), checked against float64 and bitwise `base`,
// the out-of-place result.
Result run_dx_over_dy(const Case& c, const Result& base) {
  Case over_dy = c;
  over_dy.name += " dx over dy";
  over_dy.in_place = true;
  Result a = run_gpu(over_dy, SoftmaxPath::automatic);
  EXPECT_TRUE(a.ran) << a.reason;
  if (!a.ran) return a;
  EXPECT_EQ(check(over_dy, a, reference(over_dy)), 0);
  expect_same_bits(base, a, over_dy.name);
  return a;
}

TEST_F(GpuWarpBackward, DenseF32BitwiseTheGeneralKernel) {
  TuningGuard guard;
  auto& dense = k::warp_backward_dense_tuning();
  auto& last = k::warp_backward_dense_last();
  std::uint64_t seed = 4100;
  for (std::int64_t n : {8, 16, 29, 32, 64, 100, 128, 256, 512, 1024}) {
    const auto [lanes, elems] = f32_lanes_elems(n);
    for (int variant : {0, 1, 2, 3}) {  // 0 dense, 1 odd pitch, 2 a temperature of 0.75, 3 non-finite y
      if (variant > 0 && n != 32 && n != 100 && n != 512 && n != 1024) continue;
      const std::int64_t elements = small_mode() ? (1 << 15) : 400'000;
      const std::int64_t rows = elements / n + 5;
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        std::string name = "f32 " + std::to_string(rows) + "x" + std::to_string(n);
        Case c = backward_case(name, op, DType::f32, DType::f32, rows, n, ++seed);
        if (variant == 1) {
          c.in.strides = {n + 1, 1};
          c.in.offset = 1;
          c.name += " odd pitch";
        }
        if (variant == 2) {
          c.options.temperature = 0.75f;
          c.exact_scaling = false;
          c.name += " T 0.75";
        }
        if (variant == 3) {
          // Row 0 one +inf and one NaN in y, row 1 all −inf (log-softmax of a fully masked row), row 2 a huge dy.
          c.x[static_cast<std::size_t>(n / 2)] = std::numeric_limits<double>::infinity();
          c.x[0] = std::numeric_limits<double>::quiet_NaN();
          for (std::int64_t j = 0; j < n; ++j) c.x[static_cast<std::size_t>(n + j)] = -std::numeric_limits<double>::infinity();
          c.dy[static_cast<std::size_t>(2 * n)] = 3.0e38;
          c.name += " non-finite";
        }
        SCOPED_TRACE(c.name + " " + op_name(op) + " L" + std::to_string(lanes) + " E" + std::to_string(elems));
        const bool is_dense = (variant == 0 || variant == 3) && n == std::int64_t{lanes} * elems && elems >= 8;
        k::warp_row_tuning() = {};
        dense = {true, {0}};
        const Result base = run_gpu(c, SoftmaxPath::warp_per_row);
        ASSERT_TRUE(base.ran) << base.reason;
        EXPECT_FALSE(base.stray_write);
        EXPECT_EQ(last.blocks.load(), 0) << "general kernel asked for";
        if (variant != 3) check(c, base, reference(c));  // non-finite rows: the two kernels' bits only
        for (int blocks = 1; blocks <= 8; ++blocks)
          for (int cap : {0, 7}) {
            if (!k::backward_dense_built(elems, blocks) && cap > 0) continue;
            const std::string what = "dense d" + std::to_string(blocks) + " max_blocks " + std::to_string(cap);
            k::warp_row_tuning().max_blocks = cap;
            dense = {true, {blocks}};
            const Result r = run_gpu(c, SoftmaxPath::warp_per_row);
            ASSERT_TRUE(r.ran) << r.reason;
            EXPECT_FALSE(r.stray_write) << what;
            const bool took = is_dense && k::backward_dense_built(elems, blocks);
            EXPECT_EQ(last.blocks.load(), took ? blocks : 0) << what;
            expect_same_bits(base, r, what);
          }
      }
    }
  }
}

// The dispatcher's backward rule for these rows (softmax_cuda.cpp, sbwd11 and sbwd12) at its bounds, through the
// automatic path, each call checked against the float64 reference: f32 rows of 32 and 256 dense for E8 (L4, L32) take
// the dense kernel at 4 blocks an SM on a grid of 16 (sbwd12); rows of 512 dense for E16 L32 the dense kernel at 4
// blocks on the grid of 8; rows of 1024 dense for E32 L32 the dense kernel at 2 blocks on a grid of 16; every other f32
// row (16, 31, 32 at an odd pitch, 257, 511, 513, 1023, 1024 at an odd pitch) the general kernel on the grid of 8.
// 16-bit rows (bf16, f16) of 32 (packed E8 L4, sbwd12), 64 (packed E16 L4, pack14), 128 (packed E8 L16, pack14), 256,
// 512 and 1024, dense, take the packed kernel on the grid of 8; 65, 129, 513 and 32, 64, 128, 1024 at an odd pitch the
// unpacked one on the persistent grid (0). The expectations are the rule as
// written, not the code. In place (session 12's review F8): f32 32 and 256 (dense E8, streaming stores) and 16-bit 32
// (packed E8 at 8 blocks an SM) again with dx written over dy and over y: the same kernel and grid, within the float64
// reference's gates, and bitwise the out-of-place dx.
TEST_F(GpuWarpBackward, DispatcherRuleAtItsBounds) {
  TuningGuard guard;
  k::warp_row_tuning() = {};
  k::warp_backward_dense_tuning() = {};
  struct Want {
    DType t;
    std::int64_t n;
    bool odd;
    int dense_blocks;  // f32: the dense kernel's blocks an SM (0: the general kernel)
    bool packed;       // 16-bit: the packed kernel
    int grid;
  };
  std::uint64_t seed = 4500;
  std::vector<Want> wants = {{DType::f32, 16, false, 0, false, 8},   {DType::f32, 31, false, 0, false, 8},
                             {DType::f32, 32, false, 4, false, 16},  {DType::f32, 32, true, 0, false, 8},
                             {DType::f32, 256, false, 4, false, 16}, {DType::f32, 257, false, 0, false, 8},
                             {DType::f32, 511, false, 0, false, 8},  {DType::f32, 512, false, 4, false, 8},
                             {DType::f32, 512, true, 0, false, 8},   {DType::f32, 513, false, 0, false, 8},
                             {DType::f32, 1023, false, 0, false, 8}, {DType::f32, 1024, false, 2, false, 16},
                             {DType::f32, 1024, true, 0, false, 8}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Want& w : {Want{t, 32, false, 0, true, 8}, Want{t, 32, true, 0, false, 0},
                          Want{t, 64, false, 0, true, 8}, Want{t, 64, true, 0, false, 0},
                          Want{t, 65, false, 0, false, 0}, Want{t, 128, false, 0, true, 8},
                          Want{t, 128, true, 0, false, 0}, Want{t, 129, false, 0, false, 0},
                          Want{t, 256, false, 0, true, 8}, Want{t, 512, false, 0, true, 8},
                          Want{t, 513, false, 0, false, 0}, Want{t, 1024, false, 0, true, 8},
                          Want{t, 1024, true, 0, false, 0}})
      wants.push_back(w);
  for (const Want& w : wants)
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      Case c = backward_case("rule " + std::string(dtype_name(w.t)) + " 300x" + std::to_string(w.n), op, w.t, w.t, 300,
                             w.n, ++seed);
      if (w.odd) {
        c.in.strides = {w.n + 1, 1};
        c.in.offset = 1;
        c.name += " odd pitch";
      }
      SCOPED_TRACE(c.name + " " + op_name(op));
      auto& last = k::warp_backward_last();
      last.grid = -1;
      const Result r = run_gpu(c, SoftmaxPath::automatic);
      ASSERT_TRUE(r.ran) << r.reason;
      EXPECT_FALSE(r.stray_write);
      EXPECT_EQ(check(c, r, reference(c)), 0);
      auto expect_launch = [&](const std::string& what) {
        EXPECT_EQ(last.grid.load(), w.grid) << what << ": grid";
        if (w.t == DType::f32)
          EXPECT_EQ(k::warp_backward_dense_last().blocks.load(), w.dense_blocks) << what << ": dense kernel";
        else EXPECT_EQ(last.packed.load(), w.packed) << what << ": packed kernel";
      };
      expect_launch("out of place");
      if (w.odd || !(w.n == 32 || (w.t == DType::f32 && w.n == 256))) continue;
      last.grid = -1;
      if (!run_dx_over_dy(c, r).ran) continue;
      expect_launch(c.name + " dx over dy");
      Case over_y = c;
      over_y.name += " dx over y";
      over_y.in_place = true;  // check(): dx in y's dtype
      last.grid = -1;
      const Result b = run_over_y(over_y);
      EXPECT_EQ(check(over_y, b, reference(over_y)), 0);
      expect_launch(over_y.name);
      expect_same_bits(r, b, over_y.name);
    }
}

// pack14 (session 14): the dy-shared block (BlockConfig::dy_shared, the dispatcher's 16-bit backward rows of 2048 ..
// 24575 for log-softmax backward, 2048 .. 28672 for softmax backward) with y held packed (backward.cu backward_shared_packed_kernel, its build at 3 blocks of 512 threads an SM,
// the dispatcher's default) against the unpacked kernel (shared_blocks 0), bitwise: the same element map, terms, tree,
// block sum and gradient arithmetic. Rows dense for T = n / 32 threads (2048, 4096, 8192, 16384: T 64 .. 512) must take
// the packed form when asked (backward_packed_last), a count not built (4; built and run in 600c491) the unpacked
// kernel; rows of 4100 (a ragged last vector), 16384 at an odd pitch, 16384 under a temperature and a
// dx in f32 must fall back to the unpacked kernel, and rows of 24576 (T 768, above the packed build's 512) too. Every
// result within the float64 reference's gates (the unpacked kernel's) and without stray writes; non-finite y (one +inf
// and one NaN in row 0, row 1 all −inf) the two kernels' bits only; dx written over dy and over y bitwise the
// out-of-place dx (the packed form reads a thread's y and dy before it writes them).
TEST_F(GpuWarpBackward, SharedPackedBitwiseTheUnpackedBlock) {
  TuningGuard guard;
  auto& tuning = k::backward_packed_tuning();
  auto& last = k::backward_packed_last();
  std::uint64_t seed = 14000;
  struct Row {
    std::int64_t n;
    int variant;  // 0 dense, 1 odd pitch, 2 temperature 0.75, 3 non-finite y, 4 dx in f32
  };
  std::vector<Row> rows_of = {{2048, 0}, {4096, 0}, {8192, 0}, {16384, 0}, {4100, 0}, {24576, 0},
                              {16384, 1}, {16384, 2}, {4096, 3}, {8192, 4}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Row& w : rows_of) {
      if (small_mode() && w.n > 8192 && w.variant == 0) continue;
      const std::int64_t elements = small_mode() ? (1 << 15) : 1'200'000;
      const std::int64_t rows = std::max<std::int64_t>(3, elements / w.n + 3);
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        Case c = backward_case(std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(w.n), op,
                               t, w.variant == 4 ? DType::f32 : t, rows, w.n, ++seed);
        if (w.variant == 1) {
          c.in.strides = {w.n + 1, 1};
          c.in.offset = 1;
          c.name += " odd pitch";
        }
        if (w.variant == 2) {
          c.options.temperature = 0.75f;
          c.exact_scaling = false;
          c.name += " T 0.75";
        }
        if (w.variant == 3) {
          c.x[static_cast<std::size_t>(w.n / 2)] = std::numeric_limits<double>::infinity();
          c.x[0] = std::numeric_limits<double>::quiet_NaN();
          for (std::int64_t j = 0; j < w.n; ++j)
            c.x[static_cast<std::size_t>(w.n + j)] = -std::numeric_limits<double>::infinity();
          c.name += " non-finite";
        }
        if (w.variant == 4) c.name += " dx f32";
        SCOPED_TRACE(c.name + " " + op_name(op));
        const bool dense = (w.variant == 0 || w.variant == 3) && w.n % 1024 == 0 && w.n <= 16384;
        tuning.shared_blocks = 0;
        const Result base = run_gpu(c, SoftmaxPath::block_per_row);
        ASSERT_TRUE(base.ran) << base.reason;
        EXPECT_FALSE(base.stray_write);
        EXPECT_EQ(last.shared_blocks.load(), 0) << "unpacked kernel asked for";
        if (w.variant != 3) {
          EXPECT_EQ(check(c, base, reference(c)), 0);
        }
        for (int blocks : {3, 4}) {  // 4: not built, the unpacked kernel
          const std::string what = "packed " + std::to_string(blocks);
          tuning.shared_blocks = blocks;
          const Result r = run_gpu(c, SoftmaxPath::block_per_row);
          ASSERT_TRUE(r.ran) << r.reason;
          EXPECT_FALSE(r.stray_write) << what;
          const bool took = dense && blocks == 3;
          EXPECT_EQ(last.shared_blocks.load(), took ? blocks : 0) << what;
          expect_same_bits(base, r, what);
          if (w.variant != 0 || w.n != 4096 || !took) continue;
          Case over_dy = c;
          over_dy.name += " dx over dy";
          over_dy.in_place = true;
          const Result a = run_gpu(over_dy, SoftmaxPath::block_per_row);
          ASSERT_TRUE(a.ran) << a.reason;
          EXPECT_EQ(last.shared_blocks.load(), blocks) << over_dy.name;
          expect_same_bits(base, a, what + " " + over_dy.name);
          Case over_y = c;
          over_y.name += " dx over y";
          over_y.in_place = true;
          const Result b = run_over_y(over_y);
          EXPECT_EQ(last.shared_blocks.load(), blocks) << over_y.name;
          expect_same_bits(base, b, what + " " + over_y.name);
        }
      }
    }
}

// pack14: the 16-bit backward rows pack14's rule moved, through the dispatcher (warp_per_row): 64 (packed E16 L4, now
// on the grid of 8), 128 (packed E8 L16 on the grid of 8, was E32 L4) and 100 (not dense: the unpacked kernel at E8
// L16, was E32 L4). Each within the float64 reference's gates and without stray writes; the packed rows on the
// persistent grid and on a grid capped at 7 blocks (every block walks many row groups) give the dispatcher's bits (the
// grid changes which block walks a row, never how); the same values at an odd pitch take the unpacked kernel at the
// same lanes and elements and give them too (one reduction order a length: batch invariance).
TEST_F(GpuWarpBackward, SixteenBitRowsOf64To128) {
  TuningGuard guard;
  std::uint64_t seed = 14500;
  struct Want {
    std::int64_t n;
    int lanes, elems, grid;
    bool packed;
  };
  for (DType t : {DType::bf16, DType::f16})
    for (const Want& w : {Want{64, 4, 16, 8, true}, Want{128, 16, 8, 8, true}, Want{100, 16, 8, 0, false}})
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        const std::int64_t rows = (small_mode() ? (1 << 15) : 400'000) / w.n + 5;
        Case c = backward_case(std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(w.n), op,
                               t, t, rows, w.n, ++seed);
        SCOPED_TRACE(c.name + " " + op_name(op));
        k::warp_row_tuning() = {};
        auto& last = k::warp_backward_last();
        const Result base = run_gpu(c, SoftmaxPath::warp_per_row);
        ASSERT_TRUE(base.ran) << base.reason;
        EXPECT_FALSE(base.stray_write);
        EXPECT_EQ(last.lanes.load(), w.lanes);
        EXPECT_EQ(last.elems.load(), w.elems);
        EXPECT_EQ(last.grid.load(), w.grid);
        EXPECT_EQ(last.packed.load(), w.packed);
        EXPECT_EQ(check(c, base, reference(c)), 0);
        if (!w.packed) continue;
        for (int grid : {0, -1})
          for (int cap : {0, 7}) {
            k::warp_row_tuning().grid = grid;
            k::warp_row_tuning().max_blocks = cap;
            const Result r = run_gpu(c, SoftmaxPath::warp_per_row);
            ASSERT_TRUE(r.ran) << r.reason;
            EXPECT_FALSE(r.stray_write);
            EXPECT_TRUE(last.packed.load());
            expect_same_bits(base, r, "grid " + std::to_string(grid) + ", max_blocks " + std::to_string(cap));
          }
        k::warp_row_tuning() = {};
        Case odd = c;
        odd.in.strides = {w.n + 1, 1};
        odd.in.offset = 1;
        odd.name += " odd pitch";
        const Result u = run_gpu(odd, SoftmaxPath::warp_per_row);
        ASSERT_TRUE(u.ran) << u.reason;
        EXPECT_FALSE(u.stray_write);
        EXPECT_FALSE(last.packed.load());
        EXPECT_EQ(last.lanes.load(), w.lanes);
        EXPECT_EQ(last.elems.load(), w.elems);
        expect_same_bits(base, u, odd.name);
      }
}

// bwd16: split_row's common-call elementwise pass writes the same values to the same addresses with streaming stores
// (st.global.cs) as with plain ones, so the same bits: rows of 37 chunks with a ragged last one (300001, 300008), of
// exactly 33 chunks (270336) and two rows of 2^22 (2^23 elements, the rule's lower bound), 1 to 3 rows, f32 / bf16 /
// f16, both ops, dx over dy too. Only softmax backward's common call (rows 16-byte aligned: one row, or a row length a
// multiple of 8 elements) has a store form to choose: 3 rows of 300001 take the generic kernels and log-softmax
// backward the plain ones, whatever the switch. The plain stores' results are checked against the float64 reference,
// with no stray writes. The dispatcher's choice (backward.cu kBackwardSplitCsMinElems … kBackwardSplitCsMaxElems
// elements streaming) is read from backward_split_last.
TEST_F(GpuWarpBackward, SplitStreamingStoresBitwisePlainStores) {
  TuningGuard guard;
  SplitRowTuningGuard split_guard;
  k::row_loop_tuning().use = 0;  // split_row's three kernels, never the row loop
  auto& tuning = k::backward_split_tuning();
  auto& last = k::backward_split_last();
  std::uint64_t seed = 16000;
  struct Split {
    std::int64_t rows, n;
  };
  const std::vector<Split> splits =
      small_mode() ? std::vector<Split>{{1, 20001}, {2, 16384}}
                   : std::vector<Split>{{1, 300001}, {3, 300001}, {3, 300008}, {1, 270336}, {2, std::int64_t{4194304}}};
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Split& sp : splits)
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        Case c = backward_case(std::string(dtype_name(t)) + " " + std::to_string(sp.rows) + "x" + std::to_string(sp.n),
                               op, t, t, sp.rows, sp.n, ++seed);
        SCOPED_TRACE(c.name + " " + op_name(op));
        const bool common = sp.rows == 1 || sp.n % 8 == 0;
        const int switchable = (common && op == Op::softmax_backward) ? 1 : 0;
        const std::int64_t elems = sp.rows * sp.n;
        const int by_rule = (switchable && elems >= (std::int64_t{1} << 23) && elems <= (std::int64_t{1} << 24)) ? 1 : 0;
        tuning.streaming = 0;
        const Result base = run_gpu(c, SoftmaxPath::split_row);
        ASSERT_TRUE(base.ran) << base.reason;
        EXPECT_FALSE(base.stray_write);
        EXPECT_EQ(last.streaming.load(), 0);
        EXPECT_EQ(check(c, base, reference(c)), 0);
        tuning.streaming = 1;
        const Result r = run_gpu(c, SoftmaxPath::split_row);
        ASSERT_TRUE(r.ran) << r.reason;
        EXPECT_FALSE(r.stray_write);
        EXPECT_EQ(last.streaming.load(), switchable);
        expect_same_bits(base, r, "streaming stores");
        Case over_dy = c;
        over_dy.in_place = true;
        const Result a = run_gpu(over_dy, SoftmaxPath::split_row);
        ASSERT_TRUE(a.ran) << a.reason;
        EXPECT_EQ(last.streaming.load(), switchable);  // the streaming kernel served dx over dy too
        expect_same_bits(base, a, "streaming stores, dx over dy");
        tuning.streaming = -1;  // the dispatcher's rule
        const Result d = run_gpu(c, SoftmaxPath::split_row);
        ASSERT_TRUE(d.ran) << d.reason;
        EXPECT_EQ(last.streaming.load(), by_rule);
        expect_same_bits(base, d, "the dispatcher's stores");
      }
}

// bwd17 (session 17): split_row's common-call chunk-sums kernel built for 2 and 3 blocks an SM (the same code under
// another register bound; the dispatcher's: 3 for 16-bit rows, 2 for f32) and the elementwise pass as the vector kernel
// (backward.cu backward_elementwise_vec_kernel: one 16-byte vector a thread, dx by streaming stores; dx[i] a function
// of y[i], dy[i] and the row's sum alone) against sums at 2 with the chunk kernel, byte for byte: f32, bf16, f16, both
// ops, dx over dy too. The base's dx is checked against the float64 reference, with no stray writes. The launch record
// must show the sums bound asked for wherever the common call serves (rows 16-byte aligned: one row, or a length a
// multiple of 8), and the vector kernel only where dx is stored streaming (softmax backward of the common call, asked
// for or by the rule's 2^23 … 2^24 elements) and the rows are whole vectors (n a multiple of 16 / sizeof(T)); 3 rows
// of 300001 take the generic kernels (record 0). At full size one row of 2^23 runs the dispatcher's own choice (16-bit:
// sums at 3, the vector kernel; f32: sums at 2, the chunk kernel).
TEST_F(GpuWarpBackward, SplitSumsBoundsAndVectorPassBitwiseTheDefault) {
  TuningGuard guard;
  SplitRowTuningGuard split_guard;
  k::row_loop_tuning().use = 0;  // split_row's three kernels, never the row loop
  auto& tuning = k::backward_split_tuning();
  auto& last = k::backward_split_last();
  std::uint64_t seed = 17000;
  struct Split {
    std::int64_t rows, n;
  };
  const std::vector<Split> splits =
      small_mode() ? std::vector<Split>{{1, 20001}, {3, 8200}}
                   : std::vector<Split>{{1, 300001},  {3, 300001}, {3, 300008}, {1, 270336}, {1, std::int64_t{1048576}},
                                        {1, std::int64_t{1} << 23}};
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Split& sp : splits)
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        const std::int64_t elems = sp.rows * sp.n;
        const bool rule_size = elems >= (std::int64_t{1} << 23) && elems <= (std::int64_t{1} << 24);
        if (rule_size && op != Op::softmax_backward) continue;  // the big row: the streaming band's op alone
        Case c = backward_case(std::string(dtype_name(t)) + " " + std::to_string(sp.rows) + "x" + std::to_string(sp.n),
                               op, t, t, sp.rows, sp.n, ++seed);
        SCOPED_TRACE(c.name + " " + op_name(op));
        const bool common = sp.rows == 1 || sp.n % 8 == 0;
        const std::int64_t vec = 16 / static_cast<std::int64_t>(dtype_size(t));
        const bool whole = common && sp.n % vec == 0;
        const bool sixteen = t != DType::f32;
        // Whether dx is stored streaming under the store switch s (-1 the rule).
        auto streams = [&](int s) {
          return common && op == Op::softmax_backward && (s >= 0 ? s == 1 : rule_size);
        };
        tuning = {0, 2, 0};
        const Result base = run_gpu(c, SoftmaxPath::split_row);
        ASSERT_TRUE(base.ran) << base.reason;
        EXPECT_FALSE(base.stray_write);
        EXPECT_EQ(last.sums_blocks.load(), common ? 2 : 0);
        EXPECT_EQ(last.grads_form.load(), 0);
        EXPECT_EQ(check(c, base, reference(c)), 0);
        // {streaming, sums, form}: each bound with either pass under either store form, and the dispatcher's choice.
        for (const k::BackwardSplitTuning& v :
             {k::BackwardSplitTuning{0, 3, 0}, k::BackwardSplitTuning{1, 2, 0}, k::BackwardSplitTuning{1, 2, 1},
              k::BackwardSplitTuning{1, 3, 1}, k::BackwardSplitTuning{0, 3, 1}, k::BackwardSplitTuning{-1, 0, -1}}) {
          const std::string what = "sums " + std::to_string(v.sums_blocks) + " form " + std::to_string(v.grads_form) +
                                   " streaming " + std::to_string(v.streaming);
          tuning = v;
          const Result r = run_gpu(c, SoftmaxPath::split_row);
          ASSERT_TRUE(r.ran) << r.reason << " " << what;
          EXPECT_FALSE(r.stray_write) << what;
          const int sums = v.sums_blocks > 0 ? v.sums_blocks : (sixteen ? 3 : 2);
          const int form = v.grads_form >= 0 ? v.grads_form : (sixteen ? 1 : 0);
          EXPECT_EQ(last.sums_blocks.load(), common ? sums : 0) << what;
          EXPECT_EQ(last.grads_form.load(), whole && streams(v.streaming) ? form : 0) << what;
          expect_same_bits(base, r, what);
        }
        tuning = {1, 3, 1};
        Case over_dy = c;
        over_dy.in_place = true;
        const Result a = run_gpu(over_dy, SoftmaxPath::split_row);
        ASSERT_TRUE(a.ran) << a.reason;
        EXPECT_EQ(last.grads_form.load(), whole && streams(1) ? 1 : 0);  // the vector kernel served dx over dy too
        expect_same_bits(base, a, "sums 3, vector pass, streaming, dx over dy");
      }
}

// bwd21 (session 20): the f32 kernels that read y and dy L1::evict_last under an L2 evict-last policy by default
// (backward.cu kBackwardDenseE32Hints, kBackwardBlockF32Hints), through the automatic path at lengths the dispatcher
// serves them with: backward_warp_dense_kernel<32, 2> at 1024 (E32 L32; 300 rows and 2), the 512-thread block's dense
// form at 1536 (T96), 4096 (T256) and 8192 (T512; 2 to 64 rows, one block a row). Each call within the float64
// reference's gates, output poisoned first and no stray write, the launch record (BackwardHintLast) showing the kernel
// and its hinted form; then the plain forms forced (BackwardHintTuning hints 0: the dense kernel's plain loads, the
// block's general kernel) must record the same kernel, form 0, and give the same bits; dx written over dy at 1024 and
// 4096 too. Rows neither kernel serves record neither: a row alone (no row dimension: rows_dense refuses it), an odd
// pitch, 1000 (E32 L32, not dense) and 4000 (T256, not dense).
TEST_F(GpuWarpBackward, EvictLastF32KernelsBitwiseThePlainForms) {
  TuningGuard guard;
  k::warp_row_tuning() = {};
  k::warp_backward_dense_tuning() = {};
  struct Want {
    std::int64_t rows, n;
    bool odd;
    int kernel;  // BackwardHintLast::kernel: 1 the dense warp kernel at E32, 2 the 512-thread block; 0 neither
  };
  const std::vector<Want> wants = {{300, 1024, false, 1}, {2, 1024, false, 1},  {1, 1024, false, 0},
                                   {300, 1024, true, 0},  {300, 1000, false, 0}, {64, 1536, false, 2},
                                   {64, 4096, false, 2},  {2, 4096, false, 2},   {17, 8192, false, 2},
                                   {1, 4096, false, 0},   {64, 4096, true, 0},   {64, 4000, false, 0}};
  auto& tuning = k::backward_hint_tuning();
  auto& last = k::backward_hint_last();
  std::uint64_t seed = 5100;
  for (const Want& w : wants)
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      const std::int64_t rows = small_mode() ? std::min(w.rows, std::max<std::int64_t>(2, (1 << 15) / w.n)) : w.rows;
      Case c = backward_case("f32 " + std::to_string(rows) + "x" + std::to_string(w.n), op, DType::f32, DType::f32,
                             rows, w.n, ++seed);
      if (w.odd) {
        c.in.strides = {w.n + 1, 1};
        c.in.offset = 1;
        c.name += " odd pitch";
      }
      const int kernel = rows == 1 ? 0 : w.kernel;
      SCOPED_TRACE(c.name + " " + op_name(op));
      tuning = {};
      last.kernel = -1;
      const Result r = run_gpu(c, SoftmaxPath::automatic);
      ASSERT_TRUE(r.ran) << r.reason;
      EXPECT_FALSE(r.stray_write);
      EXPECT_EQ(check(c, r, reference(c)), 0);
      EXPECT_EQ(last.kernel.load(), kernel) << "the dispatcher's";
      EXPECT_EQ(last.hints.load(), kernel != 0 ? 1 : 0) << "the dispatcher's";
      tuning.hints = 0;
      last.kernel = -1;
      const Result p = run_gpu(c, SoftmaxPath::automatic);
      ASSERT_TRUE(p.ran) << p.reason;
      EXPECT_FALSE(p.stray_write);
      EXPECT_EQ(last.kernel.load(), kernel) << "plain forced";
      EXPECT_EQ(last.hints.load(), 0) << "plain forced";
      expect_same_bits(r, p, "plain forced");
      if (w.odd || rows < 64 || (w.n != 1024 && w.n != 4096)) continue;
      tuning = {};
      last.kernel = -1;
      if (!run_dx_over_dy(c, r).ran) continue;
      EXPECT_EQ(last.kernel.load(), kernel) << c.name << " dx over dy";
      EXPECT_EQ(last.hints.load(), 1) << c.name << " dx over dy";
    }
}

}  // namespace
}  // namespace smk::gpu_test
