// block_per_row's read-only rows with their next rows in flight (src/cuda/softmax/block_row.cu block_rows_ahead_kernel,
// BlockConfig::ahead, mid8) or read twice (block_rows_reread_kernel, ahead = kAheadReread): logsumexp and the state,
// 1 and 2 rows ahead, plain and evict-first loads, and re-read, must give the direct kernel's bits (the same threads, elements, trees and terms) on every row, with more rows than any persistent
// grid holds (every block walks several rows, the last step partial), on aligned and unaligned rows (an unaligned row
// is loaded at its use, not ahead) and at ragged row ends; stats poisoned (0xFF: NaN) before each launch. The
// dispatcher's choice for these rows (automatic) is checked against the float64 CPU reference (gpu_case.hpp's gates)
// on the same inputs, and the direct kernel is checked to have written every row.
//
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer runs) keeps one many-rows shape and the few-row ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

namespace k = cuda::kernels;

class GpuBlockRow : public ::testing::Test {
 protected:
  void SetUp() override { SMK_REQUIRE_GPU(); }
};

struct Shape {
  std::int64_t rows, n;
};

// The dispatcher's block for n (softmax_cuda.cpp block_row_config): the 512-thread block of 24 elements a thread up
// to 12288, the wide block of 32 above.
k::BlockConfig direct_config(std::int64_t n) {
  k::BlockConfig c;
  const bool wide = n > 512 * k::kBlockElems;
  const int elems = wide ? k::kWideBlockElems : k::kBlockElems;
  c.threads = static_cast<int>(std::max<std::int64_t>(32, ((n + elems - 1) / elems + 31) / 32 * 32));
  c.wide = wide;
  return c;
}

void ahead_bitwise(DType t, std::uint64_t seed) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  // An SM holds at most 2048 threads, so a persistent grid of T-thread blocks has at most 2048·SMs/T blocks: 7 rows
  // more make every block walk several rows, the last step partial.
  auto many_rows = [&](std::int64_t n) {
    return Shape{2048 * std::int64_t{sms} / direct_config(n).threads + 7, n};
  };
  std::vector<Shape> shapes = {many_rows(1025), many_rows(4096), many_rows(12288), many_rows(16384),
                               many_rows(13001), {3, 16384}, {2, 2049}, {1, 8191}};
  if (small_mode()) shapes.erase(shapes.begin() + 1, shapes.begin() + 5);
  for (const Shape& sh : shapes)
    for (int offset : {0, 1}) {  // elements before the first row: 1 leaves every row unaligned
      const std::int64_t count = sh.rows * sh.n + offset;
      std::mt19937_64 rng(++seed);
      // Scores around 20 with a spread of 16 (the max far from 0: a wrong shift shows), some rows with a tied max.
      std::uniform_real_distribution<double> dist(12.0, 28.0);
      std::vector<double> x(static_cast<std::size_t>(count));
      for (auto& v : x) v = dist(rng);
      for (std::int64_t r = 0; r < sh.rows; r += 5) {
        x[static_cast<std::size_t>(offset + r * sh.n)] = 40.0;
        x[static_cast<std::size_t>(offset + r * sh.n + sh.n - 1)] = 40.0;
      }
      const std::size_t es = dtype_size(t);
      const std::vector<unsigned char> host = pack(contiguous(t, {count}), x, 0);
      void* din = nullptr;
      float* dstat = nullptr;
      const std::size_t bytes = 2 * sizeof(float) * static_cast<std::size_t>(sh.rows);
      ASSERT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
      for (k::Op op : {k::Op::logsumexp, k::Op::state}) {
        k::RowProblem p;
        p.op = op;
        p.x = static_cast<const unsigned char*>(din) + offset * es;
        p.stat0 = dstat;
        p.stat1 = dstat + sh.rows;
        p.x_dtype = p.out_dtype = t;
        p.rows = sh.rows;
        p.n = sh.n;
        p.map.rank = 1;
        p.map.size[0] = sh.rows;
        p.map.stride[k::kX][0] = sh.n;
        p.map.stride[k::kStat0][0] = 1;
        p.map.stride[k::kStat1][0] = 1;
        p.step[k::kX] = 1;
        auto run = [&](int ahead, bool evict_first) {
          EXPECT_EQ(cudaMemset(dstat, 0xFF, bytes), cudaSuccess);
          k::BlockConfig c = direct_config(sh.n);
          c.ahead = ahead;
          c.evict_first = evict_first;
          k::launch_block_rows(p, c, nullptr);
          EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          std::vector<float> got(bytes / sizeof(float));
          EXPECT_EQ(cudaMemcpy(got.data(), dstat, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
          return got;
        };
        const std::vector<float> direct = run(0, false);
        // Finite inputs: every row's LSE (or m and l) is finite, so a NaN left is a row the kernel never wrote.
        const std::size_t written = op == k::Op::logsumexp ? static_cast<std::size_t>(sh.rows) : direct.size();
        for (std::size_t i = 0; i < written; ++i)
          ASSERT_TRUE(std::isfinite(direct[i])) << "direct kernel: stat " << i << " = " << direct[i];
        // The row max is 40 wherever it was planted: m is exact, l at least the two ties.
        if (op == k::Op::state)
          for (std::int64_t r = 0; r < sh.rows; r += 5) {
            ASSERT_EQ(direct[static_cast<std::size_t>(r)], 40.0f) << "row " << r;
            ASSERT_GE(direct[static_cast<std::size_t>(sh.rows + r)], 2.0f) << "row " << r;
          }
        std::vector<std::pair<int, bool>> variants = {{k::kAheadReread, false}};
        for (int ahead = 1; ahead <= k::kMaxAheadRows; ++ahead)
          for (bool ef : {false, true}) variants.emplace_back(ahead, ef);
        for (const auto& [ahead, ef] : variants) {
          {
            const std::uint64_t ahead0 = k::block_ahead_launch_count(), reread0 = k::block_reread_launch_count();
            const std::vector<float> got = run(ahead, ef);
            // Which kernel served (the launcher falls back to the direct kernel where the asked one cannot): the
            // rows-ahead kernel always here (≤ 512 threads, cluster 1); the re-read kernel only on whole aligned
            // vectors (the base aligned and, past one row, the pitch a multiple of 16 bytes).
            if (ahead == k::kAheadReread) {
              const bool fits = offset == 0 && (sh.rows == 1 || (sh.n * static_cast<std::int64_t>(es)) % 16 == 0);
              EXPECT_EQ(k::block_reread_launch_count() > reread0, fits)
                  << dtype_name(t) << " " << sh.rows << "x" << sh.n << " offset " << offset << ": re-read kernel ran";
            } else {
              EXPECT_GT(k::block_ahead_launch_count(), ahead0)
                  << dtype_name(t) << " " << sh.rows << "x" << sh.n << " ahead " << ahead << ": kernel did not run";
            }
            ASSERT_EQ(got.size(), direct.size());
            for (std::size_t i = 0; i < written; ++i)
              ASSERT_EQ(std::memcmp(&got[i], &direct[i], sizeof(float)), 0)
                  << dtype_name(t) << " " << sh.rows << "x" << sh.n << " offset " << offset << " op "
                  << static_cast<int>(op) << " ahead " << ahead << (ef ? " evict-first" : "") << ": stat " << i
                  << " " << got[i] << ", direct " << direct[i];
          }
        }
      }
      cudaFree(din);
      cudaFree(dstat);
    }
}

TEST_F(GpuBlockRow, AheadF32BitwiseTheDirectKernel) { ahead_bitwise(DType::f32, 8000); }
TEST_F(GpuBlockRow, AheadBf16BitwiseTheDirectKernel) { ahead_bitwise(DType::bf16, 8100); }
TEST_F(GpuBlockRow, AheadF16BitwiseTheDirectKernel) { ahead_bitwise(DType::f16, 8200); }

// The dispatcher's path for read-only rows of 1025..16384 (the kernel with its next row ahead, wherever the rule sends
// it) against the float64 reference, many rows (the persistent grid walks them) and an unaligned pitch; on the aligned
// rows, which kernel the rule (softmax_cuda.cpp block_ahead_rows) sends them to: re-read for f32 of 6145..10240 and
// 16-bit of 1537..10240, one row ahead for 16-bit rows past 12288, the direct (or lane-staged) kernel elsewhere.
TEST_F(GpuBlockRow, DispatchedReadOnlyRowsMatchReference) {
  std::uint64_t seed = 8300;
  const std::int64_t elements = small_mode() ? (1 << 15) : (1 << 19);
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t n : {1025, 4096, 8192, 10240, 10241, 12289, 16384}) {
      const std::int64_t rows = std::max<std::int64_t>(2, elements / n) + 3;
      const bool aligned = (n * static_cast<std::int64_t>(dtype_size(t))) % 16 == 0;
      const bool want_reread =
          aligned && (t == DType::f32 ? n >= 6145 && n <= 10240 : n >= 1537 && n <= 10240);
      const bool want_ahead = t != DType::f32 && n > 12288;
      for (Op op : {Op::logsumexp, Op::state}) {
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n);
        SCOPED_TRACE(tag + " " + op_name(op));
        Case c = random_case("ahead " + tag, op, t, t, rows, n, ++seed);
        const std::uint64_t ahead0 = k::block_ahead_launch_count(), reread0 = k::block_reread_launch_count();
        const Result a = run_gpu(c, cuda::SoftmaxPath::automatic);
        ASSERT_TRUE(a.ran) << a.reason;
        EXPECT_EQ(k::block_reread_launch_count() > reread0, want_reread) << "re-read kernel ran";
        EXPECT_EQ(k::block_ahead_launch_count() > ahead0, want_ahead) << "rows-ahead kernel ran";
        check(c, a, reference(c));
        Case odd = c;
        odd.name = "odd pitch " + tag;
        odd.in.strides = {n + 1, 1};
        odd.in.offset = 1;
        const Result b = run_gpu(odd, cuda::SoftmaxPath::automatic);
        ASSERT_TRUE(b.ran) << b.reason;
        check(odd, b, reference(odd));
        ASSERT_EQ(a.out.size(), b.out.size());
        for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_EQ(a.out[i], b.out[i]) << "stat " << i;
        ASSERT_EQ(a.out2.size(), b.out2.size());
        for (std::size_t i = 0; i < a.out2.size(); ++i) ASSERT_EQ(a.out2[i], b.out2[i]) << "l of row " << i;
      }
    }
}

}  // namespace
}  // namespace smk::gpu_test
