// row_loop (src/cuda/softmax/row_loop.cu, vocab10): split_row's many-row calls in one persistent launch, each block
// walking whole rows twice. Its outputs must be bitwise the three kernels' (the dispatcher may pick either by the
// size of the call, which batch invariance allows only for kernels that give the same bits), so every case runs:
// against the float64 CPU reference with the output poisoned first (gpu_case.hpp's gates, stray writes), then on the
// row loop under several grids (each block then walks many rows: max_blocks 1, 3, 7), with and without the cache
// hints and at one block an SM, each output poisoned and compared bit for bit with the three kernels' (the one-launch
// kernel and split_stream off). The kernels built (row_loop_built_for, the rule's: bf16 softmax, log-softmax and both
// backward passes, f32 softmax); rows of 2 … 32 chunks with +inf, NaN and all −inf rows under both empty-row
// policies. And: the calls it does not serve (a temperature, a mask, a pitched unaligned row, 33 chunks, a kernel not
// built: f16, f32 log-softmax, the f32 backward) run the three kernels (its launch count does not move).
// The dispatcher's rule: its bounds on the host (RowLoopRule, runs without a GPU) and under the automatic path.
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer) keeps the short cases, backward ones included (bf16, 2 and 4 chunks, which
// take the row loop: asserted); SMK_ROW_LOOP_FEW=1 (memcheck, whose launches cost ~100×) runs two of the six variants
// (the default grid, and 3 blocks walking many rows without hints). OneForwardCase / OneBackwardCase: one small case
// each (9 rows on 3 blocks), for racecheck.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;
namespace k = cuda::kernels;

using Guard = SplitRowTuningGuard;

// The kernels' op for the test's.
k::Op kernel_op(Op op) {
  switch (op) {
    case Op::log_softmax: return k::Op::log_softmax;
    case Op::softmax_backward: return k::Op::softmax_backward;
    case Op::log_softmax_backward: return k::Op::log_softmax_backward;
    default: return k::Op::softmax;
  }
}

// Rows pitched to whole 16-byte vectors (y, dy and dx, or x and the output, share the layout): still the common call.
void pitch_to_vectors(Case& c, std::int64_t n) {
  const std::int64_t pitch = (n + 7) / 8 * 8 + 8;
  c.in.strides = {pitch, 1};
  c.out.strides = {pitch, 1};
}

class GpuRowLoop : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};


// The three kernels' result (row loop, one-launch kernel and split_stream off), checked against the reference.
Result three_kernels(const Case& c) {
  k::row_loop_tuning().use = 0;
  k::split_row_tuning().active_clusters = 0;
  k::split_row_tuning().stream = 0;
  return run_checked(c, SoftmaxPath::split_row);
}

struct Variant {
  int max_blocks, blocks_per_sm;
  bool hints;
};

// The row loop under each variant, output poisoned (0xFF: NaN), bitwise `three`; asserts that it ran and on which grid.
void expect_row_loop_bitwise(const Case& c, const Result& three, std::int64_t rows) {
  const bool few = std::getenv("SMK_ROW_LOOP_FEW") != nullptr;
  for (const Variant& v : {Variant{0, 0, true}, Variant{0, 0, false}, Variant{0, 1, true}, Variant{1, 0, true},
                           Variant{3, 0, false}, Variant{7, 0, true}}) {
    if (few && !(v.max_blocks == 0 && v.blocks_per_sm == 0 && v.hints) && v.max_blocks != 3) continue;
    k::row_loop_tuning().use = 1;
    k::row_loop_tuning().max_blocks = v.max_blocks;
    k::row_loop_tuning().blocks_per_sm = v.blocks_per_sm;
    k::row_loop_tuning().hints = v.hints;
    const std::uint64_t before = k::row_loop_launch_count();
    const Result loop = run_gpu(c, SoftmaxPath::split_row);
    ASSERT_TRUE(loop.ran) << loop.reason;
    ASSERT_EQ(k::row_loop_launch_count(), before + 1) << c.name << ": row_loop did not run";
    EXPECT_FALSE(loop.stray_write) << c.name;
    const unsigned grid = k::row_loop_last_grid();
    if (v.max_blocks > 0) EXPECT_EQ(static_cast<std::int64_t>(grid), std::min<std::int64_t>(v.max_blocks, rows));
    else EXPECT_TRUE(grid >= 1 && grid <= rows) << c.name << ": grid " << grid;
    expect_same_bits(loop, three,
                     c.name + " " + op_name(c.op) + " " + dtype_name(c.in.dtype) + ": row_loop (grid " +
                         std::to_string(grid) + ", hints " + std::to_string(v.hints) + ") / three kernels");
  }
}

TEST_F(GpuRowLoop, ForwardBitwiseTheThreeKernels) {
  Guard guard;
  // 2 chunks, 3 (the last ragged, not a whole vector), 13 (the vocabulary row), 32 (the kernel's bound).
  std::vector<std::int64_t> lengths = {12289, 12288 * 3 - 5, 151936, 393216};
  if (small_mode()) lengths = {12289, 30001};
  std::uint64_t seed = 31000;
  for (std::int64_t n : lengths) {
    for (DType t : {DType::f32, DType::bf16}) {
      for (Op op : {Op::softmax, Op::log_softmax}) {
        if (!k::row_loop_built_for(kernel_op(op), t)) continue;  // f32 log-softmax: CallsItDoesNotServe
        for (std::int64_t rows : small_mode() ? std::vector<std::int64_t>{3, 9} : std::vector<std::int64_t>{3, 37}) {
          if (!small_mode() && n > 200000 && rows > 3) continue;  // 37 × 393216 adds time, not paths
          Case c = random_case(std::to_string(rows) + "x" + std::to_string(n), op, t, t, rows, n, ++seed);
          pitch_to_vectors(c, n);
          c.x[static_cast<std::size_t>(n - 1)] = kInf;      // row 0: +inf in the last chunk
          c.x[static_cast<std::size_t>(n + n / 2)] = kNaN;  // row 1: NaN
          for (std::int64_t i = 0; i < n; ++i) c.x[static_cast<std::size_t>(2 * n + i)] = -kInf;  // row 2 empty
          c.options.empty_rows = seed % 2 == 0 ? EmptyRowPolicy::zeros : EmptyRowPolicy::nan;
          const Result three = three_kernels(c);
          ASSERT_TRUE(three.ran);
          expect_row_loop_bitwise(c, three, rows);
        }
      }
    }
  }
}

TEST_F(GpuRowLoop, BackwardBitwiseTheThreeKernels) {
  Guard guard;
  // 2 chunks of 8192, 19 (the vocabulary row, ragged), 32 (the bound).
  std::vector<std::int64_t> lengths = {8193, 151936, 262144};
  if (small_mode()) lengths = {8193, 30001};
  std::uint64_t seed = 32000;
  for (std::int64_t n : lengths) {
    for (DType t : {DType::bf16}) {  // the f32 backward is not built: CallsItDoesNotServe
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        for (std::int64_t rows : small_mode() ? std::vector<std::int64_t>{2, 9} : std::vector<std::int64_t>{2, 37}) {
          if (!small_mode() && n > 200000 && rows > 2) continue;
          Case c = backward_case(std::to_string(rows) + "x" + std::to_string(n), op, t, t, rows, n, ++seed);
          // Pitched (8193 and 30001 rows packed would not be the common call, and the row loop would not run:
          // vocab10's run of a39b8b6 found the test so); expect_row_loop_bitwise asserts that it ran.
          pitch_to_vectors(c, n);
          const Result three = three_kernels(c);
          ASSERT_TRUE(three.ran);
          expect_row_loop_bitwise(c, three, rows);
        }
      }
    }
  }
}

// One small case each way, for racecheck (and memcheck): 9 rows of 30001 (3 forward chunks, an odd count, so wmax's
// parity alternates across rows; 4 backward chunks) on grids of 3 blocks, each walking 3 rows (the shared arrays
// reused row after row) and on the default grid; bf16 log-softmax (every shared array, ties included) and bf16 softmax
// backward. Each asserts that the row loop ran and matches the three kernels bit for bit.
void one_case(const Case& c) {
  Guard guard;
  const Result three = three_kernels(c);
  ASSERT_TRUE(three.ran);
  for (int max_blocks : {3, 0}) {
    k::row_loop_tuning() = k::RowLoopTuning{};
    k::row_loop_tuning().use = 1;
    k::row_loop_tuning().max_blocks = max_blocks;
    const std::uint64_t before = k::row_loop_launch_count();
    const Result loop = run_checked(c, SoftmaxPath::split_row);
    ASSERT_TRUE(loop.ran);
    ASSERT_EQ(k::row_loop_launch_count(), before + 1) << c.name << ": row_loop did not run";
    expect_same_bits(loop, three, c.name + " " + op_name(c.op) + ": row_loop / three kernels");
  }
}

TEST_F(GpuRowLoop, OneForwardCase) {
  const std::int64_t n = 30001;
  Case c = random_case("9x30001", Op::log_softmax, DType::bf16, DType::bf16, 9, n, 35001);
  pitch_to_vectors(c, n);
  c.x[static_cast<std::size_t>(n + 7)] = kInf;  // row 1: +inf
  one_case(c);
}

TEST_F(GpuRowLoop, OneBackwardCase) {
  const std::int64_t n = 30001;
  Case c = backward_case("9x30001", Op::softmax_backward, DType::bf16, DType::bf16, 9, n, 35002);
  pitch_to_vectors(c, n);
  one_case(c);
}

// Calls outside the kernels (a temperature, a boolean mask, a pitched unaligned input, 33 chunks forward / backward):
// with use = 1 the row loop still does not run, and the three kernels give the reference's answer.
TEST_F(GpuRowLoop, CallsItDoesNotServe) {
  Guard guard;
  const std::int64_t n = small_mode() ? 30001 : 151936;
  std::uint64_t seed = 33000;
  std::vector<Case> cases;
  Case t = random_case("temperature", Op::softmax, DType::f32, DType::f32, 3, n, ++seed);
  t.options.temperature = 0.5f;
  cases.push_back(t);
  Case m = random_case("mask", Op::log_softmax, DType::bf16, DType::bf16, 3, n, ++seed);
  m.mask = contiguous(DType::b8, {3, n});
  m.mask_values.assign(static_cast<std::size_t>(3 * n), 1.0);
  m.mask_values[5] = 0.0;
  cases.push_back(m);
  Case u = random_case("unaligned", Op::softmax, DType::f32, DType::f32, 3, n, ++seed);
  u.in.strides = {n + 3, 1};
  u.in.offset = 1;
  cases.push_back(u);
  cases.push_back(random_case("33_chunks", Op::softmax, DType::bf16, DType::bf16, 2, 12288 * 32 + 1, ++seed));
  Case bt = backward_case("bwd_temperature", Op::softmax_backward, DType::f32, DType::f32, 3, n, ++seed);
  bt.options.temperature = 0.5f;
  cases.push_back(bt);
  cases.push_back(backward_case("bwd_33_chunks", Op::log_softmax_backward, DType::bf16, DType::bf16, 2,
                                8192 * 32 + 1, ++seed));
  // Calls the kernels would serve but for which none is built (row_loop_built_for): pitched, the common call.
  for (const auto& [op, t] :
       {std::pair{Op::softmax, DType::f16}, std::pair{Op::log_softmax, DType::f32},
        std::pair{Op::softmax_backward, DType::f32}, std::pair{Op::log_softmax_backward, DType::f32},
        std::pair{Op::log_softmax_backward, DType::f16}}) {
    EXPECT_FALSE(k::row_loop_built_for(kernel_op(op), t));
    Case nb = is_backward(op) ? backward_case("not_built", op, t, t, 3, n, ++seed)
                              : random_case("not_built", op, t, t, 3, n, ++seed);
    pitch_to_vectors(nb, n);
    cases.push_back(nb);
  }
  for (const Case& c : cases) {
    k::row_loop_tuning() = k::RowLoopTuning{};
    k::row_loop_tuning().use = 1;
    k::split_row_tuning().active_clusters = 0;
    const std::uint64_t before = k::row_loop_launch_count();
    run_checked(c, SoftmaxPath::split_row);
    EXPECT_EQ(k::row_loop_launch_count(), before) << c.name << ": row_loop ran on a call it does not serve";
  }
}

// The dispatcher's rule (row_loop.cu row_loop_rule) at its bounds, on the host (no GPU: CI runs it): bf16 every
// forward and backward op and f32 softmax from kRowLoopMinRows (256) rows; f32 log-softmax (split_stream's), the f32
// backward and f16 (not timed) never; 255 rows never.
TEST(RowLoopRule, AtItsBounds) {
  using KOp = k::Op;
  for (KOp op : {KOp::softmax, KOp::log_softmax, KOp::softmax_backward, KOp::log_softmax_backward}) {
    EXPECT_TRUE(k::row_loop_rule(op, DType::bf16, 256, 151936));
    EXPECT_TRUE(k::row_loop_rule(op, DType::bf16, 4096, 262144));
    EXPECT_FALSE(k::row_loop_rule(op, DType::bf16, 255, 151936));
    EXPECT_FALSE(k::row_loop_rule(op, DType::f16, 4096, 151936));
    EXPECT_EQ(k::row_loop_rule(op, DType::f32, 4096, 151936), op == KOp::softmax);
  }
  EXPECT_FALSE(k::row_loop_rule(KOp::softmax, DType::f32, 255, 151936));
  // The kernels built are the ones the rule sends to (the session's review, F8).
  for (KOp op : {KOp::softmax, KOp::log_softmax, KOp::softmax_backward, KOp::log_softmax_backward}) {
    EXPECT_TRUE(k::row_loop_built_for(op, DType::bf16));
    EXPECT_FALSE(k::row_loop_built_for(op, DType::f16));
    EXPECT_EQ(k::row_loop_built_for(op, DType::f32), op == KOp::softmax);
  }
}

// The rule under the dispatcher (automatic path) at 256 rows of 70000 (6 forward chunks, 9 backward): the row loop ran
// where the rule says (bf16 softmax, log-softmax and both backward ops, f32 softmax) and not where it does not (f32
// log-softmax, f32 softmax backward),
// the reference's gates hold, the result is bitwise the three kernels', and the last row alone (one row: split_row's
// one-launch kernel, or the three kernels for the backward) is bitwise the batch's last row.
TEST_F(GpuRowLoop, RuleUnderTheDispatcher) {
  if (small_mode()) GTEST_SKIP() << "256 rows of more than 65536 (the rule's least): not a small case";
  Guard guard;
  const std::int64_t rows = 256, n = 70000;
  std::uint64_t seed = 34000;
  struct Pick {
    Op op;
    DType t;
    bool loop;
  };
  for (const Pick& pk :
       {Pick{Op::softmax, DType::bf16, true}, Pick{Op::log_softmax, DType::bf16, true},
        Pick{Op::softmax, DType::f32, true}, Pick{Op::log_softmax, DType::f32, false},
        Pick{Op::softmax_backward, DType::bf16, true}, Pick{Op::log_softmax_backward, DType::bf16, true},
        Pick{Op::softmax_backward, DType::f32, false}}) {
    const Case c = is_backward(pk.op) ? backward_case("256x70000", pk.op, pk.t, pk.t, rows, n, ++seed)
                                      : random_case("256x70000", pk.op, pk.t, pk.t, rows, n, ++seed);
    k::row_loop_tuning() = k::RowLoopTuning{};
    k::split_row_tuning() = k::SplitRowTuning{};
    const std::uint64_t before = k::row_loop_launch_count();
    const Result automatic = run_checked(c, SoftmaxPath::automatic);
    EXPECT_EQ(k::row_loop_launch_count() > before, pk.loop) << c.name << " " << op_name(pk.op);
    const Result three = three_kernels(c);
    expect_same_bits(automatic, three, c.name + " " + op_name(pk.op) + ": automatic / three kernels");
    k::row_loop_tuning() = k::RowLoopTuning{};
    k::split_row_tuning() = k::SplitRowTuning{};
    Case one = c;
    one.in = contiguous(c.in.dtype, {1, n});
    one.out = contiguous(c.out.dtype, {1, n});
    one.x.assign(c.x.end() - n, c.x.end());
    if (is_backward(pk.op)) one.dy.assign(c.dy.end() - n, c.dy.end());
    const Result alone = run_checked(one, SoftmaxPath::automatic);
    ASSERT_TRUE(alone.ran && automatic.ran);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(same_bits(alone.out[static_cast<std::size_t>(i)],
                            automatic.out[static_cast<std::size_t>((rows - 1) * n + i)]))
          << c.name << " " << op_name(pk.op) << ": element " << i << " of the last row, alone vs in the batch";
  }
}

}  // namespace
}  // namespace smk::gpu_test
