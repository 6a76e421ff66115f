// cluster_stage (src/cuda/softmax/cluster_stage.cu): vocabulary-size forward rows on chip across a thread-block cluster,
// each block's slice copied into shared memory two rows ahead. Every case runs under the dispatcher, told to offer the
// kernel every forward row it holds (ClusterStageTuning::always), against the float64 CPU reference with outputs
// poisoned first
// (gpu_case.hpp's gates), and checks that the kernel actually ran (its launch count). Lengths 32769, 65537, 100003
// (divisible by no cluster size the kernel takes), 151936 and 262147; few rows and more rows than its persistent
// grid holds (a block walks several rows; the stages refill only from a cluster's third row, so
// StagesRefillAtFewClusters caps the grid at two clusters to refill them at 7 rows); every forward op; f32, bf16 and
// f16 in, the input dtype or f32 out. Bitwise: run to run (poison 0xFF, then 0x00), a row alone against the same row
// in a batch, and rows read directly (a pitched, unaligned input: row 0 is read directly, row 1 may be staged)
// against the same rows staged, and slices
// staged by each thread's cp.async (the default) against the bulk-copy engine's (whole, and in 16 KB pieces).
// SMK_GPU_TEST_SMALL=1 (compute-sanitizer) keeps the short cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/softmax/gpu_case.hpp"
#include "cuda/softmax/kernels.hpp"
#include "support/gpu.hpp"
#include "support/graph_timing.hpp"

namespace smk::gpu_test {
namespace {

using cuda::SoftmaxPath;

class GpuClusterStage : public ::testing::Test {
 protected:
  void SetUp() override {
    SMK_REQUIRE_GPU();
    int major = 0;
    SMK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major < 9) GTEST_SKIP() << "cluster_stage needs compute capability 9.0 (bulk copies, clusters)";
    // Every op and dtype on the kernel, not only what the dispatcher's rule sends it (ClusterStageTuning::always;
    // until the rule was set from the run of bb5aa68, the dispatcher sent it all of these).
    cuda::kernels::cluster_stage_tuning() = cuda::kernels::ClusterStageTuning{};
    cuda::kernels::cluster_stage_tuning().always = true;
  }
  void TearDown() override {
    cuda::kernels::cluster_stage_tuning() = cuda::kernels::ClusterStageTuning{};
    cuda::kernels::cluster_stage_on() = true;
  }
};

// Runs c under the dispatcher; checks it against the reference and that cluster_stage served it.
Result run_staged(const Case& c, unsigned char poison = 0xFF) {
  SCOPED_TRACE("case " + c.name + ", op " + op_name(c.op));
  const std::uint64_t before = cuda::kernels::cluster_stage_launch_count();
  const Result r = run_gpu(c, SoftmaxPath::automatic, poison);
  EXPECT_TRUE(r.ran) << r.reason;
  EXPECT_EQ(cuda::kernels::cluster_stage_launch_count(), before + 1) << c.name << ": cluster_stage did not run";
  if (r.ran) {
    EXPECT_EQ(check(c, r, reference(c)), 0);
    EXPECT_FALSE(r.stray_write);
  }
  return r;
}

// Rows enough that every cluster of the persistent grid walks more than one (the grid has at most one block an SM,
// so at most SMs / C clusters; C ≥ 2 for these lengths).
std::int64_t many_rows(std::int64_t n) {
  int sms = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::int64_t c = (n + 28671) / 28672;  // f32's slice capacity (896 × 32): the smallest grid's cluster size
  return sms / std::max<std::int64_t>(c, 2) + 3;
}

TEST_F(GpuClusterStage, EveryOpEveryLength) {
  std::vector<std::int64_t> lengths = {32769, 65537, 100003, 151936, 262147};
  if (small_mode()) lengths = {32769, 100003};
  std::uint64_t seed = 7000;
  for (std::int64_t n : lengths) {
    const std::string tag = "x" + std::to_string(n);
    for (std::int64_t rows : {std::int64_t{3}, many_rows(n)}) {
      const bool many = rows > 3;
      if (many && small_mode()) continue;
      const std::string t = std::to_string(rows) + tag;
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
        run_staged(random_case(t + "_f32", op, DType::f32, DType::f32, rows, n, ++seed));
        if (many && op != Op::softmax) continue;  // the 16-bit kernels walk many rows under softmax
        run_staged(random_case(t + "_bf16", op, DType::bf16, is_row_op(op) ? DType::f32 : DType::bf16, rows, n,
                               ++seed));
      }
      if (many) continue;
      run_staged(random_case(t + "_f16", Op::softmax, DType::f16, DType::f16, rows, n, ++seed));
      run_staged(random_case(t + "_f16", Op::log_softmax, DType::f16, DType::f16, rows, n, ++seed));
      run_staged(random_case(t + "_bf16_to_f32", Op::softmax, DType::bf16, DType::f32, rows, n, ++seed));
      run_staged(random_case(t + "_f16_to_f32", Op::log_softmax, DType::f16, DType::f32, rows, n, ++seed));
    }
  }
}

// The stages refilled, at few rows: at most two clusters (ClusterStageTuning::max_clusters), so each walks 3-4 of 7
// rows and every stage is refilled at least once (a cluster issues its first two rows' copies up front), for every op
// and dtype and each way of filling a stage (each thread's cp.async; bulk copies whole or in 16 KB pieces: the
// mbarrier's second phase). Against the reference, and bitwise against the uncapped grid (fewer clusters only make
// each walk more rows). Small enough for the sanitizers.
TEST_F(GpuClusterStage, StagesRefillAtFewClusters) {
  std::vector<std::int64_t> lengths = {32769, 65536, 100003, 151936};
  if (small_mode()) lengths = {32769};
  const std::int64_t rows = 7;
  std::uint64_t seed = 7300;
  for (std::int64_t n : lengths) {
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
        const std::string name = std::string(dtype_name(dt)) + "_7x" + std::to_string(n);
        const Case c = random_case(name, op, dt, is_row_op(op) ? DType::f32 : dt, rows, n, ++seed);
        const Result wide = run_staged(c);
        for (int copy : {-1, 0, 16384}) {
          if (copy != -1 && dt == DType::f16) continue;  // the copy modes do not depend on the 16-bit type
          cuda::kernels::cluster_stage_tuning().max_clusters = 2;
          cuda::kernels::cluster_stage_tuning().copy = copy;
          const Result capped = run_staged(c);
          cuda::kernels::cluster_stage_tuning().max_clusters = 0;
          cuda::kernels::cluster_stage_tuning().copy = cuda::kernels::ClusterStageTuning{}.copy;
          ASSERT_TRUE(wide.ran && capped.ran);
          expect_same_bits(wide, capped, name + " " + op_name(op) + ": two clusters (copy " + std::to_string(copy) +
                                             ") / the whole grid");
        }
      }
    }
  }
}

// Options: a temperature, per-row temperatures, a boolean mask with a fully masked row under both policies,
// non-finite rows (+inf, NaN, all −inf), in place.
TEST_F(GpuClusterStage, OptionsAndSpecialRows) {
  const std::int64_t n = small_mode() ? 40000 : 151936, rows = 3;
  std::uint64_t seed = 7500;
  for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
    for (const Case& c : option_cases(op, rows, n, seed)) run_staged(c);
    if (!is_row_op(op)) {
      Case ip = random_case("in_place", op, DType::bf16, DType::bf16, rows, n, ++seed);
      ip.in_place = true;
      run_staged(ip);
    }
  }
}

// The same bits run to run, alone or in a batch, staged or read directly.
TEST_F(GpuClusterStage, Bitwise) {
  const std::int64_t n = small_mode() ? 65537 : 151936;
  std::uint64_t seed = 7900;
  for (DType dt : {DType::f32, DType::bf16}) {
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::state}) {
      // Many rows (the stages refill) for softmax; 5 for the others, to bound the host's reference time.
      const std::int64_t rows = small_mode() ? 4 : (op == Op::softmax ? many_rows(n) : 5);
      const DType out = is_row_op(op) ? DType::f32 : dt;
      const std::string name = std::string(dtype_name(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(n);
      const Case batch = random_case(name, op, dt, out, rows, n, ++seed);
      const Result a = run_staged(batch, 0xFF);
      const Result b = run_staged(batch, 0x00);
      ASSERT_TRUE(a.ran && b.ran);
      expect_same_bits(a, b, name + " " + op_name(op) + ": run to run");
      // The slices copied by the bulk-copy engine (whole, and in 16 KB pieces) instead of each thread's cp.async.
      for (int copy : {0, 16384}) {
        cuda::kernels::cluster_stage_tuning().copy = copy;
        const Result bulk = run_staged(batch);
        cuda::kernels::cluster_stage_tuning().copy = cuda::kernels::ClusterStageTuning{}.copy;
        ASSERT_TRUE(bulk.ran);
        expect_same_bits(a, bulk, name + " " + op_name(op) + ": copied by cp.async / by bulk copies");
      }

      // The last row alone.
      Case one = batch;
      one.name += "_last_row_alone";
      one.in = contiguous(dt, {1, n});
      one.out = contiguous(out, {1, n});
      one.x.assign(batch.x.end() - n, batch.x.end());
      const Result alone = run_staged(one);
      ASSERT_TRUE(alone.ran);
      const std::size_t per = is_row_op(op) ? 1 : static_cast<std::size_t>(n);
      for (std::size_t i = 0; i < per; ++i)
        ASSERT_TRUE(same_bits(alone.out[i], a.out[(rows - 1) * per + i]))
            << name << " " << op_name(op) << ": element " << i << " of the last row, alone vs in the batch";
      if (op == Op::state) ASSERT_TRUE(same_bits(alone.out2[0], a.out2[rows - 1]));

      // Pitched (n + 7) and 1 element off: row 0 read directly from global memory, later rows staged where their start
      // is 16-byte aligned; the same bits.
      Case st = batch;
      st.name += "_pitched_unaligned";
      st.in.strides = {n + 7, 1};
      st.in.offset = 1;
      const Result direct = run_staged(st);
      ASSERT_TRUE(direct.ran);
      expect_same_bits(a, direct, name + " " + op_name(op) + ": staged / read directly");
    }
  }
}

// Off, the dispatcher's old paths serve the same calls (and cluster_stage does not run).
TEST_F(GpuClusterStage, OffKeepsTheOldPaths) {
  const std::int64_t n = 65537;
  cuda::kernels::cluster_stage_on() = false;
  const std::uint64_t before = cuda::kernels::cluster_stage_launch_count();
  const Case c = random_case("off", Op::softmax, DType::f32, DType::f32, 3, n, 7999);
  const Result r = run_gpu(c, SoftmaxPath::automatic);
  cuda::kernels::cluster_stage_on() = true;
  ASSERT_TRUE(r.ran);
  EXPECT_EQ(check(c, r, reference(c)), 0);
  EXPECT_EQ(cuda::kernels::cluster_stage_launch_count(), before);
}

// The dispatcher's own rule (softmax_cuda.cpp cluster_stage_takes): softmax and log-softmax rows of 32769 … 65536
// (16-bit and, since vocab8, f32) take cluster_stage; longer rows, logsumexp and the state keep the old paths; f32
// softmax rows of 45056 … 65536 take split_row (next20, split_row_f32_softmax_takes).
TEST_F(GpuClusterStage, DispatcherRule) {
  cuda::kernels::cluster_stage_tuning().always = false;
  struct Want {
    Op op;
    DType dt;
    std::int64_t n;
    bool staged;
  };
  std::uint64_t seed = 8100;
  for (const Want w : {Want{Op::softmax, DType::bf16, 151936, false}, Want{Op::log_softmax, DType::bf16, 65536, true},
                       Want{Op::log_softmax, DType::f16, 32769, true}, Want{Op::log_softmax, DType::bf16, 65537, false},
                       Want{Op::softmax, DType::bf16, 262147, false}, Want{Op::softmax, DType::f32, 40000, true},
                       Want{Op::log_softmax, DType::f32, 40001, true}, Want{Op::softmax, DType::f32, 65536, false},
                       Want{Op::softmax, DType::f32, 45055, true}, Want{Op::softmax, DType::f32, 45056, false},
                       Want{Op::log_softmax, DType::f32, 65536, true},
                       Want{Op::log_softmax, DType::f32, 65537, false}, Want{Op::logsumexp, DType::bf16, 65536, false},
                       Want{Op::state, DType::f32, 40000, false}, Want{Op::softmax, DType::bf16, 32768, false}}) {
    const Case c = random_case("rule", w.op, w.dt, is_row_op(w.op) ? DType::f32 : w.dt, 2, w.n, ++seed);
    const std::uint64_t before = cuda::kernels::cluster_stage_launch_count();
    const Result r = run_gpu(c, SoftmaxPath::automatic);
    ASSERT_TRUE(r.ran) << r.reason;
    EXPECT_EQ(check(c, r, reference(c)), 0);
    EXPECT_EQ(cuda::kernels::cluster_stage_launch_count() > before, w.staged)
        << op_name(w.op) << " " << dtype_name(w.dt) << " n = " << w.n;
  }
}

// next20: the f32 softmax rows that left cluster_stage (45056 … 65536) are split_row's, bit for bit, at every row count:
// the automatic path on 300 rows (split_row's row_loop form from 256 rows) and on 2 rows against split_row forced, and
// each of three rows alone against its place in the 300 (batch invariance); outputs poisoned by run_gpu.
TEST_F(GpuClusterStage, F32SoftmaxRowsOnSplitRow) {
  cuda::kernels::cluster_stage_tuning().always = false;
  std::uint64_t seed = 8200;
  for (const std::int64_t n : {std::int64_t{45056}, std::int64_t{65536}}) {
    const std::int64_t rows = small_mode() ? 2 : 300;
    const Case c = random_case("f32 softmax split", Op::softmax, DType::f32, DType::f32, rows, n, ++seed);
    const std::uint64_t before = cuda::kernels::cluster_stage_launch_count();
    const Result a = run_gpu(c, SoftmaxPath::automatic);
    ASSERT_TRUE(a.ran) << a.reason;
    EXPECT_EQ(cuda::kernels::cluster_stage_launch_count(), before) << "n = " << n;
    const Result f = run_gpu(c, SoftmaxPath::split_row);
    ASSERT_TRUE(f.ran) << f.reason;
    ASSERT_EQ(a.out.size(), f.out.size());
    for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_EQ(a.out[i], f.out[i]) << "n = " << n << " element " << i;
    for (const std::int64_t r : {std::int64_t{0}, rows / 2, rows - 1}) {
      Case one = c;
      one.in = contiguous(DType::f32, {1, n});
      one.out = contiguous(DType::f32, {1, n});
      one.x.assign(c.x.begin() + r * n, c.x.begin() + (r + 1) * n);
      const Result alone = run_gpu(one, SoftmaxPath::automatic);
      ASSERT_TRUE(alone.ran) << alone.reason;
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(alone.out[static_cast<std::size_t>(i)], a.out[static_cast<std::size_t>(r * n + i)])
            << "n = " << n << " row " << r << " element " << i;
    }
    if (!small_mode()) {
      Case two = c;
      two.in = contiguous(DType::f32, {2, n});
      two.out = contiguous(DType::f32, {2, n});
      two.x.resize(static_cast<std::size_t>(2 * n));
      EXPECT_EQ(check(two, run_gpu(two, SoftmaxPath::automatic), reference(two)), 0) << "n = " << n;
    }
  }
}

// SMK_CLUSTER_STAGE_TIMING=1: GPU µs a call (CUDA events, the median of 15 after 3 warm-ups; the inputs, ≥ 1 GB, are
// far past the 50 MB L2) of cluster_stage at its own slice size and at smaller ones (max_threads capped: a larger
// cluster), beside the old path (cluster_stage off: split_row), with the cluster it took and how many were resident.
TEST_F(GpuClusterStage, Timing) {
  const char* on = std::getenv("SMK_CLUSTER_STAGE_TIMING");
  if (on == nullptr || on[0] != '1') GTEST_SKIP() << "set SMK_CLUSTER_STAGE_TIMING=1 to time";
  using Buf = cuda::DeviceBuffer<unsigned char>;
  const Device dev = Device::cuda(0);
  struct Shape {
    std::int64_t rows, n;
  };
  for (const Shape sh : {Shape{4096, 151936}, Shape{1024, 262144}, Shape{8192, 65536}, Shape{4096, 40000}}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::int64_t es = static_cast<std::int64_t>(dtype_size(dt));
      const std::int64_t bytes = sh.rows * sh.n * es;
      Buf x(static_cast<std::size_t>(bytes)), y(static_cast<std::size_t>(bytes));
      SMK_CUDA_CHECK(cudaMemset(x.data(), 0x3c, static_cast<std::size_t>(bytes)));  // 0.0115 in f32 and bf16
      const Layout l = contiguous(dt, {sh.rows, sh.n});
      const TensorView in = l.view(x.data(), dev), out = l.view(y.data(), dev);
      const TensorView lse = contiguous(DType::f32, {sh.rows}).view(y.data(), dev);
      struct Variant {
        const char* name;
        int max_threads;
        bool pow2;
        int copy;
      };
      const Variant variants[] = {{"old path", -1, false, -1},       {"lanes", 0, false, -1},
                                  {"bulk", 0, false, 0},             {"bulk 16K", 0, false, 16384},
                                  {"lanes pow2", 0, true, -1},       {"lanes cap 416 pow2", 416, true, -1},
                                  {"lanes cap 512", 512, false, -1}, {"bulk cap 512", 512, false, 0}};
      for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
        for (const Variant& var : variants) {
          const int cap = var.max_threads;
          cuda::kernels::cluster_stage_on() = cap >= 0;
          cuda::kernels::cluster_stage_tuning().always = true;
          cuda::kernels::cluster_stage_tuning().max_threads = cap;
          cuda::kernels::cluster_stage_tuning().pow2_cluster = var.pow2;
          cuda::kernels::cluster_stage_tuning().copy = var.copy;
          const std::uint64_t launches = cuda::kernels::cluster_stage_launch_count();
          auto call = [&] {
            if (op == Op::softmax) softmax(out, in, SoftmaxOptions{});
            else if (op == Op::log_softmax) log_softmax(out, in, SoftmaxOptions{});
            else logsumexp(lse, in, SoftmaxOptions{});
          };
          for (int i = 0; i < 3; ++i) call();
          std::vector<float> ms;
          cudaEvent_t a, b;
          SMK_CUDA_CHECK(cudaEventCreate(&a));
          SMK_CUDA_CHECK(cudaEventCreate(&b));
          for (int i = 0; i < 15; ++i) {
            SMK_CUDA_CHECK(cudaEventRecord(a));
            call();
            SMK_CUDA_CHECK(cudaEventRecord(b));
            SMK_CUDA_CHECK(cudaEventSynchronize(b));
            float t = 0;
            SMK_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
            ms.push_back(t);
          }
          SMK_CUDA_CHECK(cudaEventDestroy(a));
          SMK_CUDA_CHECK(cudaEventDestroy(b));
          std::sort(ms.begin(), ms.end());
          const double us = 1000.0 * ms[ms.size() / 2];
          const auto& last = cuda::kernels::cluster_stage_last();
          const bool ran = cuda::kernels::cluster_stage_launch_count() > launches;  // else the old path served
          const double moved = (op == Op::logsumexp ? 1.0 : 2.0) * static_cast<double>(bytes);
          std::printf("timing %-11s %-4s %5lldx%-6lld %-20s %8.1f us %5.2f TB/s  %s C=%d T=%d resident=%d\n",
                      op_name(op), dtype_name(dt), static_cast<long long>(sh.rows), static_cast<long long>(sh.n),
                      var.name, us, moved / (us * 1e6), ran ? "cluster_stage" : "old path",
                      ran ? last.cluster.load() : 0, ran ? last.threads.load() : 0, ran ? last.active.load() : 0);
          std::fflush(stdout);
        }
      }
    }
  }
  cuda::kernels::cluster_stage_on() = true;
}

// SMK_CLUSTER_STAGE_TIMING=1 (vocab8): the fixed cost a single row pays, and what smaller slices (a cap on T: more
// blocks a row, more SMs for one row) do to it and to many rows. GPU µs a call: a CUDA graph of k calls replayed
// (median of 7 replays / k), on the rule's lengths (32769 … 65536 since vocab8, f32 as 16-bit) and 151936, beside
// the old path (cluster_stage off: split_row's one launch for few rows, cluster_row / split_row for many). Caps: -1 the
// old path, 0 the library's slices (256 threads wherever 16 slices hold the row, since vocab8), 1024 the slices before
// vocab8 (the kernel's most), 320 and 512 between.
TEST_F(GpuClusterStage, OneRowTiming) {
  const char* on = std::getenv("SMK_CLUSTER_STAGE_TIMING");
  if (on == nullptr || on[0] != '1') GTEST_SKIP() << "set SMK_CLUSTER_STAGE_TIMING=1 to time";
  using Buf = cuda::DeviceBuffer<unsigned char>;
  const Device dev = Device::cuda(0);
  cuda::StreamOwner owner;
  const cudaStream_t st = owner.get();
  const Stream stream{st};
  struct Shape {
    std::int64_t rows, n;
  };
  const std::int64_t max_bytes = std::int64_t{8192} * 65536 * 4;
  Buf x(static_cast<std::size_t>(max_bytes)), y(static_cast<std::size_t>(max_bytes));
  SMK_CUDA_CHECK(cudaMemset(x.data(), 0x3c, static_cast<std::size_t>(max_bytes)));
  for (const Shape sh : {Shape{1, 40000}, Shape{1, 65536}, Shape{1, 151936}, Shape{32, 65536}, Shape{4096, 40000},
                         Shape{8192, 65536}}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::int64_t bytes = sh.rows * sh.n * static_cast<std::int64_t>(dtype_size(dt));
      const Layout l = contiguous(dt, {sh.rows, sh.n});
      const TensorView in = l.view(x.data(), dev), out = l.view(y.data(), dev);
      const int k = bytes < (std::int64_t{1} << 24) ? 50 : 3;
      for (Op op : {Op::softmax, Op::log_softmax}) {
        for (const int cap : {-1, 0, 320, 512, 1024}) {
          cuda::kernels::cluster_stage_on() = cap >= 0;
          cuda::kernels::cluster_stage_tuning().always = true;
          cuda::kernels::cluster_stage_tuning().max_threads = cap;
          const std::uint64_t launches = cuda::kernels::cluster_stage_launch_count();
          auto call = [&] {
            if (op == Op::softmax) softmax(out, in, SoftmaxOptions{}, stream);
            else log_softmax(out, in, SoftmaxOptions{}, stream);
          };
          call();
          SMK_CUDA_CHECK(cudaStreamSynchronize(st));
          const bool ran = cuda::kernels::cluster_stage_launch_count() > launches;
          std::vector<double> us = graph_replay_us(call, st, k);
          std::sort(us.begin(), us.end());
          const auto& last = cuda::kernels::cluster_stage_last();
          std::printf("onerow %-11s %-4s %5lldx%-6lld cap %4d %9.2f us %5.2f TB/s  %s C=%d T=%d resident=%d\n",
                      op_name(op), dtype_name(dt), static_cast<long long>(sh.rows), static_cast<long long>(sh.n), cap,
                      us[us.size() / 2], 2.0 * static_cast<double>(bytes) / (us[us.size() / 2] * 1e6),
                      ran ? "cluster_stage" : "old path", ran ? last.cluster.load() : 0,
                      ran ? last.threads.load() : 0, ran ? last.active.load() : 0);
          std::fflush(stdout);
        }
      }
    }
  }
  cuda::kernels::cluster_stage_on() = true;
  cuda::kernels::cluster_stage_tuning() = cuda::kernels::ClusterStageTuning{};
}

}  // namespace
}  // namespace smk::gpu_test
