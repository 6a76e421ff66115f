// common.cuh's row loads and stores on unit-stride rows that start off a vector boundary (odd21, session 21): a
// contiguous rows × n tensor with n not a multiple of the vector starts its rows at every offset in turn, and RowTile /
// running_state.cuh now assemble such a row's vectors from the two aligned blocks that hold each (load_shifted) and
// store them as words (store_shifted), where they loaded and stored element by element before. Every path, f32, bf16
// and f16, the five ops and the state, few rows and many:
//   - against the float64 reference, outputs poisoned first and checked for stray writes (gpu_case.hpp run_checked);
//   - under the dispatcher's choice, row by row, bitwise against the same row alone in a fresh (aligned) buffer: the
//     element map is the row's, so a row's bits may not depend on its offset in memory (docs/semantics.md §5, batch
//     invariance, which holds the automatic path);
//   - on a forced path, where the rows are off the boundary (n·size not a multiple of 16 bytes), the whole batch
//     bitwise against the same rows read through a pitch of 2n with a last-dimension stride of 2 (element loads, the
//     same kernels: the dispatcher's own choice may differ by layout, and rows that are all aligned, f32 at 100, may take
//     plain-form kernels, so neither is compared).
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer) keeps rows ≤ 4097 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/softmax/gpu_case.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;

const std::vector<SoftmaxPath> kOddPaths = {SoftmaxPath::automatic, SoftmaxPath::warp_per_row,
                                            SoftmaxPath::block_per_row, SoftmaxPath::cluster_row,
                                            SoftmaxPath::split_row};

// Lengths whose rows start at every offset of a 16-byte block in turn (odd, so every element offset mod 8 appears; 100:
// every 8-byte offset for 16-bit rows, every 16-byte one for f32), short to one past the long rows' cut.
std::vector<std::int64_t> odd_lengths() {
  std::vector<std::int64_t> all = {3, 33, 100, 257, 1025, 4097, 12289, 50257};
  if (small_mode()) all.erase(std::remove_if(all.begin(), all.end(), [](auto n) { return n > 4097; }), all.end());
  return all;
}

Case odd_case(Op op, DType t, std::int64_t rows, std::int64_t n, std::uint64_t seed) {
  const std::string name = std::to_string(rows) + "x" + std::to_string(n) + "_" + dtype_name(t);
  return is_backward(op) ? backward_case(name, op, t, t, rows, n, seed) : random_case(name, op, t, t, rows, n, seed);
}

class GpuCommon : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

TEST_F(GpuCommon, ShiftedRowsMatchTheReferenceTheRowAloneAndElementLoads) {
  std::uint64_t seed = 21000;
  for (std::int64_t n : odd_lengths())
    for (std::int64_t rows : {std::int64_t{9}, std::clamp<std::int64_t>((std::int64_t{1} << 18) / n, 9, 256)})
      for (DType t : {DType::f32, DType::bf16, DType::f16})
        for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state, Op::softmax_backward,
                      Op::log_softmax_backward}) {
          if (t == DType::f16 && rows > 9) continue;  // f16 takes bf16's code with another conversion: few rows
          const Case batch = odd_case(op, t, rows, n, ++seed);
          Case strided = batch;  // the same rows, every other element: the element loads
          strided.in.strides = {2 * n, 2};
          for (SoftmaxPath path : kOddPaths) {
            SCOPED_TRACE(std::string("path ") + cuda::to_string(path) + ", case " + batch.name + ", op " +
                         op_name(op));
            const Result all = run_gpu(batch, path);
            if (!all.ran) {  // a forced path may refuse a length it cannot hold, never for the layout
              EXPECT_NE(all.reason.find("capacity"), std::string::npos) << all.reason;
              continue;
            }
            const Result checked = run_checked(batch, path);
            expect_same_bits(all, checked, "the same call twice");
            if (path != SoftmaxPath::automatic) {
              if ((n * static_cast<std::int64_t>(dtype_size(t))) % 16 == 0) continue;
              const Result elems = run_gpu(strided, path);
              if (elems.ran) expect_same_bits(all, elems, "contiguous rows against the stride-2 view");
              continue;
            }
            for (std::int64_t r : {std::int64_t{1}, std::int64_t{2}, rows / 2 + 1, rows - 1}) {
              Case one = odd_case(op, t, 1, n, seed);
              one.x.assign(batch.x.begin() + r * n, batch.x.begin() + (r + 1) * n);
              if (is_backward(op)) one.dy.assign(batch.dy.begin() + r * n, batch.dy.begin() + (r + 1) * n);
              const Result alone = run_gpu(one, path);
              ASSERT_TRUE(alone.ran) << alone.reason;
              const std::int64_t width = is_row_op(op) ? 1 : n;
              for (std::int64_t i = 0; i < width; ++i)
                ASSERT_TRUE(same_bits(alone.out[i], all.out[r * width + i]))
                    << "row " << r << " element " << i << ": alone " << alone.out[i] << ", in the batch "
                    << all.out[r * width + i];
              if (op == Op::state) ASSERT_TRUE(same_bits(alone.out2[0], all.out2[r])) << "l of row " << r;
            }
          }
        }
}

}  // namespace
}  // namespace smk::gpu_test
