// warp_per_row (src/cuda/softmax/warp_row.cu) over many steps of its persistent grid: rows of exactly lanes · E
// contiguous, aligned elements (every lane's slots full 16-byte vectors), enough rows that warps take two steps, the
// second one partial; f32, bf16 and f16 at row lengths 8 ... 1024 and every forward op. Each batch is
// checked against the CPU float64 reference (gpu_case.hpp's gates), and against the same rows stored at an odd pitch
// (unaligned: scalar loads), which must give the same bits: how a row is loaded never changes what is computed.
// (Written for a prefetching variant of the kernel, measured and not kept: docs/perf-notebook.md "warpdiet".)
//
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer runs) keeps 65536 elements a case (one step: the memory checks only).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/softmax/gpu_case.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;


class GpuWarpRow : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

void dense_rows_many_steps(DType t, std::uint64_t seed) {
  // A step of the persistent grid holds at most 132 SMs × 4 blocks × 256 threads × 16 elements (E = 16) or
  // 132 × 3 × 256 × 32 (E = 32) ≈ 2.2M-3.2M elements on the H200: with 4M, warps take two steps, the second partial.
  const std::int64_t elements = small_mode() ? (1 << 16) : 4'000'000;
  for (std::int64_t n : {8, 32, 128, 1024}) {
    const std::int64_t rows = elements / n + 7;  // + 7: the last step partial
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
      const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n);
      SCOPED_TRACE(tag + " " + op_name(op));
      Case dense;
      dense.name = "dense " + tag;
      dense.op = op;
      dense.in = contiguous(t, {rows, n});
      dense.out = contiguous(t, {rows, n});
      dense.x = random_values(t, rows * n, n % 3 ? 6.0 : 20.0, -3.0, ++seed);
      const Result a = run_gpu(dense, SoftmaxPath::warp_per_row);
      ASSERT_TRUE(a.ran) << a.reason;
      check(dense, a, reference(dense));

      Case odd = dense;
      odd.name = "odd pitch " + tag;
      odd.in.strides = {n + 1, 1};
      odd.in.offset = 1;
      const Result b = run_gpu(odd, SoftmaxPath::warp_per_row);
      ASSERT_TRUE(b.ran) << b.reason;
      ASSERT_EQ(a.out.size(), b.out.size());
      for (std::size_t i = 0; i < a.out.size(); ++i)
        ASSERT_TRUE((std::isnan(a.out[i]) && std::isnan(b.out[i])) || a.out[i] == b.out[i])
            << "element " << i << ": dense " << a.out[i] << ", odd pitch " << b.out[i];
      ASSERT_EQ(a.out2.size(), b.out2.size());
      for (std::size_t i = 0; i < a.out2.size(); ++i) ASSERT_EQ(a.out2[i], b.out2[i]) << "l of row " << i;
    }
  }
}

TEST_F(GpuWarpRow, DenseF32RowsManyStepsMatchReferenceAndUnalignedBits) { dense_rows_many_steps(DType::f32, 100); }
TEST_F(GpuWarpRow, DenseBf16RowsManyStepsMatchReferenceAndUnalignedBits) { dense_rows_many_steps(DType::bf16, 200); }
TEST_F(GpuWarpRow, DenseF16RowsManyStepsMatchReferenceAndUnalignedBits) { dense_rows_many_steps(DType::f16, 300); }

}  // namespace
}  // namespace smk::gpu_test
