// block_per_row's read-only rows with their next rows in flight (src/cuda/softmax/block_row.cu block_rows_ahead_kernel,
// BlockConfig::ahead, mid8) or read twice (block_rows_reread_kernel, ahead = kAheadReread): logsumexp and the state,
// 1 and 2 rows ahead, plain and evict-first loads, and re-read, must give the direct kernel's bits (the same threads, elements, trees and terms) on every row, with more rows than any persistent
// grid holds (every block walks several rows, the last step partial), on aligned and unaligned rows (an unaligned row
// is loaded at its use, not ahead) and at ragged row ends; stats poisoned (0xFF: NaN) before each launch. The
// dispatcher's choice for these rows (automatic) is checked against the float64 CPU reference (gpu_case.hpp's gates)
// on the same inputs, and the direct kernel is checked to have written every row.
//
// lse10 (session 10): lse_stream.cu's kernels (the dispatcher's for logsumexp and the state on rows of 1024..32768), both
// configurations (L16, T128: the dispatcher's, the only ones built since the session 10 review's F3) launched directly
// against the float64 reference on rows shaped to stress the running state (sorted ascending: the max rises in every
// chunk; descending; constant: every score a tie; a planted tied max; the review's F1 slow ramp x_i = i·2^-16 and its
// reverse: every chunk raises the max and every chunk's mass still counts), aligned and unaligned (the same bits), run
// twice (the same bits, m and l); which configuration the dispatcher chose (lse_stream_last_config) and the rule's
// bounds; the dispatcher's rows with temperatures, masks and non-finite rows, f32, bf16 and f16; the launcher's
// refusals.
//
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer runs) keeps one many-rows shape and the few-row ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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

// Scores around 20 with a spread of 16 (the max far from 0: a wrong shift shows), every fifth row's max tied at both
// ends; `offset` elements before the first row (1 leaves every row unaligned).
std::vector<double> tied_scores(std::int64_t rows, std::int64_t n, int offset, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(12.0, 28.0);
  std::vector<double> x(static_cast<std::size_t>(rows * n + offset));
  for (auto& v : x) v = dist(rng);
  for (std::int64_t r = 0; r < rows; r += 5) {
    x[static_cast<std::size_t>(offset + r * n)] = 40.0;
    x[static_cast<std::size_t>(offset + r * n + n - 1)] = 40.0;
  }
  return x;
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
      const std::vector<double> x = tied_scores(sh.rows, sh.n, offset, ++seed);
      const std::size_t es = dtype_size(t);
      const std::vector<unsigned char> host = pack(contiguous(t, {count}), x, 0);
      void* din = nullptr;
      float* dstat = nullptr;
      const std::size_t bytes = 2 * sizeof(float) * static_cast<std::size_t>(sh.rows);
      ASSERT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
      for (k::Op op : {k::Op::logsumexp, k::Op::state}) {
        const k::RowProblem p = contiguous_rows(op, static_cast<const unsigned char*>(din) + offset * es, t, nullptr, t,
                                                dstat, sh.rows, sh.n);
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

// The dispatcher's path for read-only rows of 1024..32768 against the float64 reference, many rows and an unaligned
// pitch (bitwise the aligned rows' results); which kernel served: since lse10 (session 10) lse_stream.cu for rows of
// 1024 (16 lanes a row) and of 2048 (f32) … 32768 (one block of 128 a row), and since next20 (session 20) 16-bit rows
// of 1024 … 6144 on 16 lanes a row and 6145 … 32768 on the block (softmax_cuda.cpp lse_stream_config; the
// configuration checked through kernels.hpp lse_stream_last_config; 1023, 1025 and 2047 (f32) and 32769 lie just
// outside it); elsewhere the rule before it (block_ahead_rows: re-read for f32 of
// 6145..10240 and 16-bit of 1537..10240, one row ahead for 16-bit rows past 12288, on aligned rows; rows past 32768 leave
// block_per_row).
TEST_F(GpuBlockRow, DispatchedReadOnlyRowsMatchReference) {
  std::uint64_t seed = 8300;
  const std::int64_t elements = small_mode() ? (1 << 15) : (1 << 19);
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (std::int64_t n :
         {1023, 1024, 1025, 2047, 2048, 4095, 4096, 6144, 6145, 8192, 10240, 10241, 12289, 16384, 32000, 32768,
          32769}) {
      const std::int64_t rows = std::max<std::int64_t>(2, elements / n) + 3;
      const bool aligned = (n * static_cast<std::int64_t>(dtype_size(t))) % 16 == 0;
      const bool want_stream = n == 1024 || (n >= (t == DType::f32 ? 2048 : 1025) && n <= 32768);
      const bool want_lanes = n == 1024 || (t != DType::f32 && n > 1024 && n <= 6144);
      const bool want_reread =
          !want_stream && aligned && (t == DType::f32 ? n >= 6145 && n <= 10240 : n >= 1537 && n <= 10240);
      const bool want_ahead = !want_stream && t != DType::f32 && n > 12288 && n <= 32768;
      for (Op op : {Op::logsumexp, Op::state}) {
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n);
        SCOPED_TRACE(tag + " " + op_name(op));
        Case c = random_case("read-only " + tag, op, t, t, rows, n, ++seed);
        const std::uint64_t ahead0 = k::block_ahead_launch_count(), reread0 = k::block_reread_launch_count(),
                            stream0 = k::lse_stream_launch_count();
        k::LseStreamLast& last = k::lse_stream_last_config();
        last.lanes.store(-1);
        last.threads.store(-1);
        const Result a = run_gpu(c, cuda::SoftmaxPath::automatic);
        ASSERT_TRUE(a.ran) << a.reason;
        EXPECT_EQ(k::block_reread_launch_count() > reread0, want_reread) << "re-read kernel ran";
        EXPECT_EQ(k::block_ahead_launch_count() > ahead0, want_ahead) << "rows-ahead kernel ran";
        EXPECT_EQ(k::lse_stream_launch_count() > stream0, want_stream) << "lse_stream ran";
        // Which configuration: 16 lanes a row at 1024 and 16-bit rows to 6144 (L16), one block of 128 a row from
        // 2048 (f32) / 6145 (16-bit) to 32768 (T128); untouched (-1) where lse_stream did not serve.
        EXPECT_EQ(last.lanes.load(), !want_stream ? -1 : want_lanes ? 16 : 0) << "lse_stream lanes";
        EXPECT_EQ(last.threads.load(), !want_stream ? -1 : want_lanes ? 0 : 128) << "lse_stream threads";
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

// ---- lse10: lse_stream.cu's kernels launched directly, every configuration ----------------------------------------

// A contiguous rows × n read-only case through launch_lse_stream_rows, `offset` elements before the first row (1: every
// row unaligned, loaded element by element through the same map), the statistics poisoned (0xFF: NaN) first.
Result run_stream(const Case& c, k::LseStreamConfig cfg, std::int64_t offset) {
  const std::int64_t rows = c.in.shape[0], n = c.in.shape[1];
  const DType t = c.in.dtype;
  std::vector<double> xs(static_cast<std::size_t>(offset), 0.0);
  xs.insert(xs.end(), c.x.begin(), c.x.end());
  const std::vector<unsigned char> host = pack(contiguous(t, {rows * n + offset}), xs, 0);
  void* din = nullptr;
  float* dstat = nullptr;
  const std::size_t bytes = 2 * sizeof(float) * static_cast<std::size_t>(rows);
  Result r;
  EXPECT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dstat, 0xFF, bytes), cudaSuccess);
  const k::RowProblem p =
      contiguous_rows(c.op == Op::logsumexp ? k::Op::logsumexp : k::Op::state,
                      static_cast<const unsigned char*>(din) + offset * static_cast<std::int64_t>(dtype_size(t)), t,
                      nullptr, t, dstat, rows, n);
  const std::uint64_t before = k::lse_stream_launch_count();
  k::launch_lse_stream_rows(p, cfg, nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_GT(k::lse_stream_launch_count(), before);
  std::vector<float> got(bytes / sizeof(float));
  EXPECT_EQ(cudaMemcpy(got.data(), dstat, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(din);
  cudaFree(dstat);
  r.ran = true;
  for (std::int64_t i = 0; i < rows; ++i) r.out.push_back(got[static_cast<std::size_t>(i)]);
  if (c.op == Op::state)
    for (std::int64_t i = 0; i < rows; ++i) r.out2.push_back(got[static_cast<std::size_t>(rows + i)]);
  return r;
}

std::string config_name(k::LseStreamConfig cfg) {
  return cfg.lanes > 0 ? "lanes " + std::to_string(cfg.lanes) : "threads " + std::to_string(cfg.threads);
}

// Rows shaped to stress the running state (kShapes of them, by r % kShapes): random (rows 0, 7, …), sorted ascending
// (the max rises in every chunk: the most rescales), descending (never after the first chunk), constant (every score a
// tie of the max: l = n exactly), a planted tied max at both ends, and the session 10 review's F1 worst case: a slow
// ramp x_i = i·2^-16 (rounded to the dtype: a staircase in 16-bit, still rising in every chunk of a thread, whose
// chunks lie G·V·kUnroll ≥ 256 elements apart), so every chunk raises the max and every chunk's mass still counts
// (the row spans at most 0.5: the first chunk's terms weigh at least e^-0.5 of the last's), then its reverse.
constexpr std::int64_t kShapes = 7;
void shape_rows(Case& c, std::int64_t rows, std::int64_t n, DType t) {
  for (std::int64_t r = 0; r < rows; ++r) {
    auto first = c.x.begin() + r * n, last = first + n;
    switch (r % kShapes) {
      case 1: std::sort(first, last); break;
      case 2: std::sort(first, last, std::greater<double>()); break;
      case 3: std::fill(first, last, *first); break;
      case 4: *first = 60.0; *(last - 1) = 60.0; break;
      case 5:
      case 6:
        for (std::int64_t i = 0; i < n; ++i)
          first[i] = round_to(t, std::ldexp(static_cast<double>(r % kShapes == 5 ? i : n - 1 - i), -16));
        break;
      default: break;
    }
  }
}

void stream_configs(DType t, std::uint64_t seed) {
  struct Item {
    k::LseStreamConfig cfg;
    std::vector<std::int64_t> ns;
  };
  // The two configurations built (the dispatcher's), each at the lengths the rule gives it (L16: 1024; T128: 2048 (f32),
  // 4096, 32000, 32768) and around them, tails and lengths past the rule included.
  std::vector<Item> items = {
      {{16, 0}, {1, 2, 3, 31, 32, 33, 255, 1023, 1024, 1025, 2049}},
      {{0, 128}, {1, 3, 33, 255, 1025, 2047, 2048, 2049, 4096, 4097, 16384, 30001, 32000, 32768, 65537}},
  };
  for (const Item& it : items)
    for (std::int64_t n : it.ns) {
      if (small_mode() && n > 4097) continue;
      const std::int64_t rows = n > 30000 ? 10 : 12;
      for (Op op : {Op::logsumexp, Op::state}) {
        const std::string tag = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(n) +
                                " " + config_name(it.cfg) + " " + op_name(op);
        SCOPED_TRACE(tag);
        Case c = random_case("lse_stream " + tag, op, t, t, rows, n, ++seed);
        shape_rows(c, rows, n, t);
        const Reference ref = reference(c);
        const Result a = run_stream(c, it.cfg, 0);
        check(c, a, ref);
        // Every row finite, so a NaN is a row never written; the constant rows' l is n exactly (every score a tie).
        for (std::int64_t r = 0; r < rows; ++r) {
          ASSERT_TRUE(std::isfinite(a.out[static_cast<std::size_t>(r)])) << "row " << r << " not written";
          if (op == Op::state && r % kShapes == 3)
            ASSERT_EQ(a.out2[static_cast<std::size_t>(r)], static_cast<double>(n)) << "constant row " << r;
        }
        const Result b = run_stream(c, it.cfg, 1);  // unaligned: the same bits
        for (std::size_t i = 0; i < a.out.size(); ++i)
          ASSERT_TRUE(same_bits(a.out[i], b.out[i])) << "unaligned row " << i << ": " << b.out[i] << " vs " << a.out[i];
        for (std::size_t i = 0; i < a.out2.size(); ++i)
          ASSERT_TRUE(same_bits(a.out2[i], b.out2[i])) << "unaligned l " << i;
        const Result again = run_stream(c, it.cfg, 0);  // run to run: the same bits
        for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_TRUE(same_bits(a.out[i], again.out[i])) << "rerun " << i;
        ASSERT_EQ(a.out2.size(), again.out2.size());
        for (std::size_t i = 0; i < a.out2.size(); ++i)
          ASSERT_TRUE(same_bits(a.out2[i], again.out2[i])) << "rerun l " << i;
      }
    }
}

TEST_F(GpuBlockRow, LseStreamF32EveryConfigAgainstReference) { stream_configs(DType::f32, 8500); }
TEST_F(GpuBlockRow, LseStreamBf16EveryConfigAgainstReference) { stream_configs(DType::bf16, 8600); }
TEST_F(GpuBlockRow, LseStreamF16EveryConfigAgainstReference) { stream_configs(DType::f16, 8700); }

// The dispatcher's lse_stream rows with the options and special rows the long-row paths share (gpu_case.hpp
// option_cases: temperatures, per-row temperatures, a boolean mask emptying a row, +inf, NaN and all −inf rows).
TEST_F(GpuBlockRow, LseStreamOptionsAndSpecialRows) {
  std::uint64_t seed = 8800;
  for (std::int64_t n : {1024, 4097, 32000})  // lse_stream's rows under the rule (f32, bf16 and f16)
    for (Op op : {Op::logsumexp, Op::state})
      for (Case& c : option_cases(op, 3, n, seed))
        for (DType t : {DType::f32, DType::bf16, DType::f16}) {
          Case ct = c;
          ct.in.dtype = t;
          for (auto& v : ct.x) v = round_to(t, v);
          SCOPED_TRACE(ct.name + " " + dtype_name(t) + " n " + std::to_string(n));
          const std::uint64_t before = k::lse_stream_launch_count();
          const Result r = run_gpu(ct, cuda::SoftmaxPath::automatic);
          ASSERT_TRUE(r.ran) << r.reason;
          EXPECT_GT(k::lse_stream_launch_count(), before) << "lse_stream did not run";
          check(ct, r, reference(ct));
        }
}

// Bad configurations and the ops it does not compute: Error naming the op.
TEST_F(GpuBlockRow, LseStreamRefusesWhatItDoesNotServe) {
  k::RowProblem p;
  p.op = k::Op::logsumexp;
  p.rows = 1;
  p.n = 8;
  EXPECT_THROW(k::launch_lse_stream_rows(p, {4, 256}, nullptr), Error);
  EXPECT_THROW(k::launch_lse_stream_rows(p, {0, 1024}, nullptr), Error);
  // The configurations lse10 timed and the review's F3 removed (not built): refused, not launched.
  EXPECT_THROW(k::launch_lse_stream_rows(p, {8, 0}, nullptr), Error);
  EXPECT_THROW(k::launch_lse_stream_rows(p, {32, 0}, nullptr), Error);
  EXPECT_THROW(k::launch_lse_stream_rows(p, {0, 256}, nullptr), Error);
  EXPECT_THROW(k::launch_lse_stream_rows(p, {0, 512}, nullptr), Error);
  p.op = k::Op::softmax;
  EXPECT_THROW(k::launch_lse_stream_rows(p, {16, 0}, nullptr), Error);
}

// blk17 (session 17): block_per_row's f32 rows lane-staged (block_rows_lane_kernel, BlockConfig::lane_stages 1-3; the
// kernel was 16-bit only before) give the direct kernel's bits (the same threads, elements, trees and terms; only
// where a row's elements come from differs): softmax, log-softmax, logsumexp and the state, on rows that fill and do
// not fill the last vectors, aligned and not (unaligned rows go through registers), with more rows than any persistent
// grid holds (2048·SMs/threads + 7: every block walks several rows and its stage ring wraps) and fewer rows than it
// stages ahead; scores around 20 with planted tied maxima. Outputs poisoned (0xFF: NaN) before every launch; the lane
// kernel's launch count shows it served (test_softmax_gpu's LaneStagedBlockRowsBitwiseTheDirectKernel covers 16-bit);
// the direct kernel is held to the float64 reference by test_cuda_softmax.
TEST_F(GpuBlockRow, LaneStagedF32BitwiseTheDirectKernel) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  auto many_rows = [&](std::int64_t n) { return Shape{2048 * std::int64_t{sms} / direct_config(n).threads + 7, n}; };
  std::vector<Shape> shapes = {many_rows(2048), many_rows(8191), many_rows(12288), {2, 1025}, {300, 4097}, {5, 33}};
  // Under compute-sanitizer (racecheck tracks every shared-memory access): the stage ring still wraps, on short rows.
  if (small_mode()) shapes = {many_rows(33), {2, 1025}, {3, 4097}, {5, 33}};
  std::uint64_t seed = 17000;
  for (const Shape& sh : shapes)
    for (int offset : {0, 1}) {  // elements before the first row: 1 leaves every row unaligned
      const std::int64_t count = sh.rows * sh.n + offset;
      const std::vector<double> x = tied_scores(sh.rows, sh.n, offset, ++seed);
      const std::vector<unsigned char> host = pack(contiguous(DType::f32, {count}), x, 0);
      void *din = nullptr, *dout = nullptr;
      float* dstat = nullptr;
      const std::size_t out_bytes = static_cast<std::size_t>(sh.rows * sh.n) * sizeof(float);
      ASSERT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dstat), 2 * sizeof(float) * sh.rows), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
      for (k::Op op : {k::Op::softmax, k::Op::log_softmax, k::Op::logsumexp, k::Op::state}) {
        const k::RowProblem p = contiguous_rows(op, static_cast<const unsigned char*>(din) + offset * sizeof(float),
                                                DType::f32, dout, DType::f32, dstat, sh.rows, sh.n);
        const bool rows_out = k::writes_rows(op);
        const std::size_t bytes = rows_out ? out_bytes : 2 * sizeof(float) * static_cast<std::size_t>(sh.rows);
        // logsumexp writes stat0 alone; the state writes both.
        const std::size_t written = rows_out ? bytes / sizeof(float)
                                   : op == k::Op::logsumexp ? static_cast<std::size_t>(sh.rows)
                                                            : bytes / sizeof(float);
        void* const dst = rows_out ? dout : static_cast<void*>(dstat);
        auto run = [&](int stages) {
          EXPECT_EQ(cudaMemset(dst, 0xFF, bytes), cudaSuccess);
          k::BlockConfig c = direct_config(sh.n);
          c.lane_stages = stages;
          const std::uint64_t lanes0 = k::block_lane_launch_count();
          k::launch_block_rows(p, c, nullptr);
          EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          EXPECT_EQ(k::block_lane_launch_count() > lanes0, stages > 0) << "stages " << stages << ": which kernel ran";
          std::vector<float> got(bytes / sizeof(float));
          EXPECT_EQ(cudaMemcpy(got.data(), dst, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
          return got;
        };
        const std::vector<float> direct = run(0);
        // Finite inputs: every output is finite, so a NaN left is an element the kernel never wrote.
        for (std::size_t i = 0; i < written; ++i)
          ASSERT_TRUE(std::isfinite(direct[i])) << "direct kernel: element " << i << " = " << direct[i];
        for (int stages = 1; stages <= k::kMaxLaneStages; ++stages) {
          const std::vector<float> lane = run(stages);
          ASSERT_EQ(lane.size(), direct.size());
          const std::size_t first_diff = static_cast<std::size_t>(
              std::mismatch(lane.begin(), lane.begin() + written, direct.begin(),
                            [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; })
                  .first -
              lane.begin());
          EXPECT_EQ(first_diff, written) << sh.rows << "x" << sh.n << " offset " << offset << " op "
                                         << static_cast<int>(op) << " stages " << stages << ": first differing element "
                                         << first_diff;
        }
      }
      cudaFree(din);
      cudaFree(dout);
      cudaFree(dstat);
    }
}

// blk17's f32 lane-staged rows under the dispatcher with the options the rule does not look at (session 17's review,
// F11; gpu_case.hpp option_cases: a temperature, per-row temperatures, a boolean mask emptying a row under both empty-
// row policies, +inf, NaN and all −inf rows), against the float64 reference; the lane kernel's launch count shows it
// served (the rule takes any aligned f32 rows of kLaneFromNF32..kLaneMaxNF32). f32 inputs give f32 outputs only: the
// API refuses a bf16 `out` for them (the first form of this test asked for one and got that error on the H200).
TEST_F(GpuBlockRow, LaneF32OptionsAndSpecialRows) {
  std::uint64_t seed = 17500;
  for (std::int64_t n : small_mode() ? std::vector<std::int64_t>{8192} : std::vector<std::int64_t>{8192, 11264})
    for (Op op : {Op::softmax, Op::log_softmax})
      for (Case& c : option_cases(op, 3, n, seed)) {
        Case ct = c;
        ct.in.dtype = ct.out.dtype = DType::f32;  // the mask case's bf16 values are f32 values too
        SCOPED_TRACE(ct.name + " n " + std::to_string(n));
        const std::uint64_t before = k::block_lane_launch_count();
        const Result r = run_gpu(ct, cuda::SoftmaxPath::automatic);
        ASSERT_TRUE(r.ran) << r.reason;
        EXPECT_GT(k::block_lane_launch_count(), before) << "the lane-staged kernel did not serve";
        EXPECT_EQ(check(ct, r, reference(ct)), 0);
        EXPECT_FALSE(r.stray_write);
      }
}

// The dispatcher (automatic path) either side of blk17's bounds (softmax_cuda.cpp): f32 softmax / log-softmax of
// aligned rows lane-staged from kLaneFromNF32 = 7168 to kLaneMaxNF32 = 11264 (7164 and 11268, 12288 direct; unaligned
// rows and logsumexp stay on the kernels they had), 16-bit log-softmax from kLaneLogSoftmaxFromN16 = 2048 (2040
// direct); the lane kernel's launch count shows which ran, and the outputs are bitwise the direct kernel's launched by
// hand on the same rows (outputs poisoned with 0xFF before each launch; every element checked written).
TEST_F(GpuBlockRow, LaneRuleAtItsBounds) {
  struct Want {
    DType t;
    std::int64_t n;
    int offset;
    Op op;
    bool lane;
  };
  const std::vector<Want> wants = {
      {DType::f32, 7164, 0, Op::softmax, false},      {DType::f32, 7168, 0, Op::softmax, true},
      {DType::f32, 8192, 0, Op::log_softmax, true},   {DType::f32, 8192, 1, Op::softmax, false},
      {DType::f32, 8192, 0, Op::logsumexp, false},    {DType::f32, 11264, 0, Op::log_softmax, true},
      {DType::f32, 11268, 0, Op::softmax, false},     {DType::f32, 12288, 0, Op::softmax, false},
      {DType::bf16, 2040, 0, Op::log_softmax, false}, {DType::bf16, 2048, 0, Op::log_softmax, true},
      {DType::f16, 2048, 0, Op::log_softmax, true}};
  std::uint64_t seed = 17100;
  for (const Want& w : wants) {
    const std::int64_t rows = 300, count = rows * w.n + w.offset;
    const std::size_t es = dtype_size(w.t);
    std::mt19937_64 rng(++seed);
    std::uniform_real_distribution<double> dist(-8.0, 8.0);
    std::vector<double> x(static_cast<std::size_t>(count));
    for (auto& v : x) v = dist(rng);
    const std::vector<unsigned char> host = pack(contiguous(w.t, {count}), x, 0);
    const bool rows_out = w.op == Op::softmax || w.op == Op::log_softmax;
    const std::size_t out_count = rows_out ? static_cast<std::size_t>(rows * w.n) : static_cast<std::size_t>(rows);
    const std::size_t out_bytes = out_count * es;
    void *din = nullptr, *dout = nullptr;
    ASSERT_EQ(cudaMalloc(&din, host.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(din, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    const Device dev = Device::cuda(0);
    void* const x0 = static_cast<unsigned char*>(din) + w.offset * es;
    const TensorView in = TensorView::contiguous(x0, w.t, dev, {rows, w.n});
    const TensorView out = rows_out ? TensorView::contiguous(dout, w.t, dev, {rows, w.n})
                                    : TensorView::contiguous(dout, w.t, dev, {rows});
    SCOPED_TRACE(std::string(dtype_name(w.t)) + " n " + std::to_string(w.n) + " offset " + std::to_string(w.offset) +
                 " op " + op_name(w.op));
    ASSERT_EQ(cudaMemset(dout, 0xFF, out_bytes), cudaSuccess);
    const std::uint64_t lanes0 = k::block_lane_launch_count();
    if (w.op == Op::softmax) softmax(out, in);
    else if (w.op == Op::log_softmax) log_softmax(out, in);
    else logsumexp(out, in);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(k::block_lane_launch_count() > lanes0, w.lane) << "the lane-staged kernel ran";
    std::vector<unsigned char> got(out_bytes), want(out_bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), dout, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < out_bytes; i += es)  // finite inputs: no output may still be the poison
      ASSERT_FALSE(std::all_of(got.begin() + i, got.begin() + i + es, [](unsigned char b) { return b == 0xFF; }))
          << "element " << i / es << " unwritten";
    if (rows_out) {  // the direct kernel by hand, on the same rows
      k::RowProblem p;
      p.op = w.op == Op::softmax ? k::Op::softmax : k::Op::log_softmax;
      p.x = x0;
      p.out = dout;
      p.x_dtype = p.out_dtype = w.t;
      p.rows = rows;
      p.n = w.n;
      p.map.rank = 1;
      p.map.size[0] = rows;
      p.map.stride[k::kX][0] = w.n;
      p.map.stride[k::kOut][0] = w.n;
      p.step[k::kX] = p.step[k::kOut] = 1;
      ASSERT_EQ(cudaMemset(dout, 0xFF, out_bytes), cudaSuccess);
      const std::uint64_t lanes1 = k::block_lane_launch_count();
      k::launch_block_rows(p, direct_config(w.n), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(k::block_lane_launch_count(), lanes1) << "the direct kernel by hand";
      ASSERT_EQ(cudaMemcpy(want.data(), dout, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      const std::size_t first_diff =
          static_cast<std::size_t>(std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
      EXPECT_EQ(first_diff, out_bytes) << "dispatched against the direct kernel: first differing byte " << first_diff;
    }
    cudaFree(din);
    cudaFree(dout);
  }
}

}  // namespace
}  // namespace smk::gpu_test
