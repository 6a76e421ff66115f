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
        // kAheadReread4 (mid9): the f32 wide block's rows in four parts with the ftz terms, which give the direct
        // kernel's bits but where a term is below 2^-126 (none here: scores 12..40) — elsewhere mid8's kernel.
        std::vector<std::pair<int, bool>> variants = {{k::kAheadReread, false}, {k::kAheadReread4, false}};
        for (int ahead = 1; ahead <= k::kMaxAheadRows; ++ahead)
          for (bool ef : {false, true}) variants.emplace_back(ahead, ef);
        for (const auto& [ahead, ef] : variants) {
          {
            const std::uint64_t ahead0 = k::block_ahead_launch_count(), reread0 = k::block_reread_launch_count();
            const std::vector<float> got = run(ahead, ef);
            // Which kernel served (the launcher falls back to the direct kernel where the asked one cannot): the
            // rows-ahead kernel always here (≤ 512 threads, cluster 1); the re-read kernel only on whole aligned
            // vectors (the base aligned and, past one row, the pitch a multiple of 16 bytes).
            if (ahead == k::kAheadReread || ahead == k::kAheadReread4) {
              // mid9's f32 wide instantiation takes any row (unaligned ones element by element).
              const bool any_row = ahead == k::kAheadReread4 && t == DType::f32 && direct_config(sh.n).wide;
              const bool fits =
                  any_row || (offset == 0 && (sh.rows == 1 || (sh.n * static_cast<std::int64_t>(es)) % 16 == 0));
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
      // (mid9's f32 four-part kernel, kAheadReread4, was slower than the direct wide block: not dispatched.)
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

// mid9's f32 re-read kernel in four parts (kAheadReread4) on rows whose terms reach below 2^-126 (scores spread over
// 130, so most exp(x − max) are subnormal or flush): the logsumexp and the state against a float64 LSE of the same f32
// inputs within logsumexp's f32 gate ((|LSE| + L + 10 + 3 ln n)·u, gpu_case.hpp), and the same bits from aligned,
// unaligned (one element in) and strided (pitch n + 3) rows: the kernel loads every layout through one element map.
TEST_F(GpuBlockRow, Reread4AnyLayoutSameBitsAndWithinGate) {
  const std::int64_t n = 16384, rows = small_mode() ? 5 : 1100;  // 1100: more rows than 3 blocks an SM hold
  for (std::int64_t len : {n, std::int64_t{13001}}) {
    std::mt19937_64 rng(9400 + static_cast<std::uint64_t>(len));
    std::uniform_real_distribution<double> dist(-100.0, 30.0);
    std::vector<float> xs(static_cast<std::size_t>(rows * len));
    for (auto& v : xs) v = static_cast<float>(dist(rng));
    std::vector<double> want(static_cast<std::size_t>(rows)), row_max(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, l = 0;
      for (std::int64_t i = 0; i < len; ++i) m = std::max(m, static_cast<double>(xs[static_cast<std::size_t>(r * len + i)]));
      for (std::int64_t i = 0; i < len; ++i) l += std::exp(static_cast<double>(xs[static_cast<std::size_t>(r * len + i)]) - m);
      want[static_cast<std::size_t>(r)] = m + std::log(l);
      row_max[static_cast<std::size_t>(r)] = m;
    }
    std::vector<std::vector<float>> got;
    for (const auto& [offset, pitch] : {std::pair<std::int64_t, std::int64_t>{0, len}, {1, len}, {3, len + 3}}) {
      std::vector<float> host(static_cast<std::size_t>(offset + rows * pitch), 0.0f);
      for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(&host[static_cast<std::size_t>(offset + r * pitch)], &xs[static_cast<std::size_t>(r * len)],
                    sizeof(float) * static_cast<std::size_t>(len));
      float* din = nullptr;
      float* dstat = nullptr;
      const std::size_t bytes = 2 * sizeof(float) * static_cast<std::size_t>(rows);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&din), host.size() * sizeof(float)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(din, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      std::vector<float> all;
      for (k::Op op : {k::Op::logsumexp, k::Op::state}) {
        k::RowProblem p;
        p.op = op;
        p.x = din + offset;
        p.stat0 = dstat;
        p.stat1 = dstat + rows;
        p.x_dtype = p.out_dtype = DType::f32;
        p.rows = rows;
        p.n = len;
        p.map.rank = 1;
        p.map.size[0] = rows;
        p.map.stride[k::kX][0] = pitch;
        p.map.stride[k::kStat0][0] = 1;
        p.map.stride[k::kStat1][0] = 1;
        p.step[k::kX] = 1;
        ASSERT_EQ(cudaMemset(dstat, 0xFF, bytes), cudaSuccess);
        k::BlockConfig c = direct_config(len);
        ASSERT_TRUE(c.wide);
        c.ahead = k::kAheadReread4;
        const std::uint64_t reread0 = k::block_reread_launch_count();
        k::launch_block_rows(p, c, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_GT(k::block_reread_launch_count(), reread0) << "offset " << offset << ": re-read kernel ran";
        std::vector<float> out(bytes / sizeof(float));
        ASSERT_EQ(cudaMemcpy(out.data(), dstat, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        const double L = std::ceil(std::log2(static_cast<double>(len))), ln_n = std::log(static_cast<double>(len));
        for (std::int64_t r = 0; r < rows; ++r) {
          const double w = want[static_cast<std::size_t>(r)], m = row_max[static_cast<std::size_t>(r)];
          const double got_lse = op == k::Op::logsumexp
                                     ? out[static_cast<std::size_t>(r)]
                                     : out[static_cast<std::size_t>(r)] + std::log(static_cast<double>(out[static_cast<std::size_t>(rows + r)]));
          const double gate = (std::fabs(w) + L + 10 + 3 * ln_n) * kU;
          ASSERT_LE(std::fabs(got_lse - w), gate) << "n " << len << " offset " << offset << " row " << r;
          if (op == k::Op::state) ASSERT_EQ(out[static_cast<std::size_t>(r)], static_cast<float>(m)) << "m, row " << r;
        }
        all.insert(all.end(), out.begin(), out.begin() + (op == k::Op::logsumexp ? rows : 2 * rows));
      }
      got.push_back(all);
      cudaFree(din);
      cudaFree(dstat);
    }
    for (std::size_t v = 1; v < got.size(); ++v)
      for (std::size_t i = 0; i < got[0].size(); ++i)
        ASSERT_EQ(std::memcmp(&got[v][i], &got[0][i], sizeof(float)), 0)
            << "n " << len << " layout " << v << " stat " << i << ": " << got[v][i] << " against " << got[0][i];
  }
}

}  // namespace
}  // namespace smk::gpu_test
