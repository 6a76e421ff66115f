// Benchmark of attention_decode on issue 8's rows (not a test): bf16, one new token, D = 128, 32 query and 8 KV
// heads, (B, S) = (1, 32768), (1, 131072), (16, 8192), (64, 4096), (128, 1024), and rows with 64 query heads.
// Each call is timed with CUDA events after an untimed write of 256 MB that evicts L2 (the H200 has 60 MB), the way
// triton.testing.do_bench times, so scripts/bench_decode.py can put torch SDPA's backends beside it; the median of
// kReps calls after kWarmup; the dispatcher's choice timed first and again last, for the spread. An event recorded between the split kernel and the merge kernel gives the merge's share.
// Reports µs and TB/s of K and V read (B·S·Hkv·D·2 bytes each), against the 4.27 TB/s copy ceiling (ANCHORS.md),
// for the dispatcher's choice (round 4: at most 16 splits, merged in a cluster up to 8 splits for blocks of more than
// 4 rows, in clusters spread one block an SM above 8 where they all run at once, else by the fused merge) and, beside
// it, under the same rule (the same bits: the merge's cost alone): the cluster merge forced, packed (round 3's launch)
// and spread; the fused (atomic) merge with counters kept per stream and with counters zeroed by a memset; the merge
// kernel instead (an event between the two kernels measures its share: the split kernel alone is the rest). And the
// fixed cost, counted: the dispatcher with an event recorded inside the call (round 3's method for every variant),
// after a flush that leaves L2 clean (the 256 MB write, then an untimed logsumexp that reads 256 MB, so no dirty line
// is written back during the timed call; the fused merge too), with every sequence empty (the same grid), the timing
// method's floor (a 4-byte memset between the events), the call captured into a graph (its nodes counted by kind, its
// replay timed: the GPU alone), the host µs per call (back to back, no sync; internal entry point and public API), and
// how many clusters of 16 the device runs at once, packed and spread.
// Session 6 (dec5): the split kernel as a programmatic dependent launch (DecodeConfig::pdl) beside the plain launch,
// alone and right after a small kernel inside the timed window ("after a kernel": a 1×1024 f32 logsumexp, the way a
// decode step follows the previous layer's kernels; its own time is timed too), and the empty call both ways.
// Session 9 (dec9), in every mode: the dispatcher with 3 ring stages a warp (DecodeConfig::mma_stages; two blocks an
// SM instead of three), and the dispatcher on K and V stored head-major, [B][Hkv][S][D] viewed as [B][S][Hkv][D]
// through strides (torch's layout in scripts/bench_decode.py: each KV head's rows contiguous), so the timing tells
// how much of the gap to torch's backends is the cache's layout rather than the kernel.
// --quick times only the dispatcher, the plain launch, the fused merge, the merge kernel (its share), the clean-L2
// probe, the empty calls, the floor and the after-a-kernel probes (a device call of 200 s holds more); --ncu makes
// just four calls at (1, 32768): empty, full, empty, full, for Nsight Compute (skip 2 launches, profile 2).
// --ab (session 9) times only the dispatcher (twice), 3 stages and head-major K and V: the old-beside-new samples of
// one device call (the other fields are -1, which scripts/compare_torch_decode.py prints as n/a).
// --tma (session 10, dec10) times only the tensor-core kernel with K and V tiles by cp.async (DecodeConfig::tma off)
// and by TMA (on), alternating, kTmaSamples of each per row, under the dispatcher's merge: the A/B of one device call
// (json: us_cp / us_tma, the samples' medians, and every sample).
// --sweep (session 11, dec11) times the tensor-core kernel over S_max ∈ {1024, ..., 32768} × B ∈ {1, 8, 16, 64}
// (32/8 heads, D = 128, every sequence S_max long) and the other rows ((128, 1024), (1, 131072), 64/8 heads):
// K and V tiles by cp.async and by TMA (the data of decode_tma_rule), kSweepSamples of each alternating, kSweepReps
// calls a sample after the same flush; the grid's blocks and its waves at 3 blocks an SM; cp.async and TMA outputs
// compared bit for bit (outputs poisoned first). (Session 11 also timed blocks of 3 warps here, DecodeConfig::mma_warps:
// measured and removed after the session's review, F17; e16cc07 has that code.)
// --dec12 (session 12) times the dispatcher (TMA by S_max, decode_tma_rule) beside the TMA choice by the grid
// (DecodeConfig::tma_grid, decode_tma_grid_rule) on the rows and on the sweep's cells where the two rules
// differ, and, on the single-sequence rows, the split rule's cap at 24 and 32 (DecodeConfig::max_splits; the fused
// merge) beside its 16: kDec12Samples of each alternating, kSweepReps calls a sample; the two TMA rules' outputs
// compared bit for bit (outputs poisoned first).
// --dec14 (session 14) times 2 and 3 ring stages on the cells where the dispatcher takes cp.async (dec14_mode below;
// in session 14 also the cp.async issue before dec14, since removed); --dec14-ncu makes one call at (1, 32768) and one
// at 64 × 4096 for Nsight Compute.
// --dec15 (session 15) times the dispatcher beside the merge kernel with its split kernel's and its own share, on the
// single-sequence rows and two batch rows: the tail after the split kernel (dec15_mode below).
// Session 16 (dec16) had --dec16 / --dec16-ncu: the tensor-core kernel's L2 prefetches (its first tiles before the
// length's load, tiles ahead in its loop) and q's pairs as 32-bit loads beside the default, through switches since
// removed (commits 4008706 and 310902b have them as run; docs/bench/dec16-s16-2026-12-01.md).
// --dec17 (session 17) times HEAD's tensor-core kernel beside the dispatcher's wide-q kernel since dec17 (dec17_mode
// below; as run, 7f9f852, also the flags since removed).
//   usage: bench_decode [--json FILE] [--quick | --ab | --tma | --sweep | --dec12 | --dec14 | --dec14-ncu | --dec15
//          | --dec17] [--ncu]
// Why a tool here rather than a `softmaxkit bench` entry: the merge's share needs the kernel boundary, which only
// the internal entry point (src/cuda/attention/attention_cuda.hpp) exposes; the public API is timed the same way.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention/args.hpp"
#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/decode_split.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/softmax.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/device.hpp"

namespace {

constexpr int kWarmup = 5;
constexpr int kReps = 200;  // 50 in the runs of c09ff0d and 98f32d4; more, as round 2's levers are worth 1-3 µs each
constexpr double kCopyTBs = 4.27;  // ANCHORS.md: device-to-device copy on the H200
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;

struct Row {
  std::int64_t B, S, hq, hkv, d;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Fills n values at dst with random bf16 (never time on zeros): the pool once from the host, then doubled on the
// device (the sweep's 8.6 GB of K and V in seconds).
void fill_from_pool(const std::vector<smk::bfloat16_t>& pool, smk::bfloat16_t* dst, std::size_t n) {
  std::size_t have = std::min(pool.size(), n);
  SMK_CUDA_CHECK(cudaMemcpy(dst, pool.data(), have * 2, cudaMemcpyHostToDevice));
  while (have < n) {
    const std::size_t c = std::min(have, n - have);
    SMK_CUDA_CHECK(cudaMemcpy(dst + have, dst, c * 2, cudaMemcpyDeviceToDevice));
    have += c;
  }
}

// --dec14's and --dec15's summaries of `series` lists of timings t[0 .. series): samples "[a, b, ...], [...]" (every
// timing, in the order taken) and spread "lo-hi, lo-hi" (each list's extremes; list no_spread left out).
void summarise_samples(const std::vector<double>* t, int series, int no_spread, std::string& samples,
                       std::string& spread) {
  for (int c = 0; c < series; ++c) {
    samples += c ? ", [" : "[";
    for (std::size_t k = 0; k < t[c].size(); ++k) samples += (k ? ", " : "") + std::to_string(t[c][k]);
    samples += "]";
    if (c == no_spread) continue;
    char b[64];
    std::snprintf(b, sizeof b, "%s%.1f-%.1f", c ? ", " : "", *std::min_element(t[c].begin(), t[c].end()),
                  *std::max_element(t[c].begin(), t[c].end()));
    spread += b;
  }
}

// --dec14's and --dec15's buffers: q, K, V, O and the LSE, each sized for the largest of the cells (B sequences of S
// keys, hq query heads; hkv KV heads of d), q, K and V filled from the pool.
struct CellBuffers {
  smk::cuda::DeviceBuffer<smk::bfloat16_t> q, k, v, o;
  smk::cuda::DeviceBuffer<float> lse;
};
template <typename Cells>
CellBuffers cell_buffers(const Cells& cells, std::int64_t hkv, std::int64_t d,
                         const std::vector<smk::bfloat16_t>& pool) {
  std::size_t max_kv = 0, max_q = 0;
  for (const auto& c : cells) {
    max_kv = std::max<std::size_t>(max_kv, c.B * c.S * hkv * d);
    max_q = std::max<std::size_t>(max_q, c.B * c.hq * d);
  }
  CellBuffers b{smk::cuda::DeviceBuffer<smk::bfloat16_t>(max_q), smk::cuda::DeviceBuffer<smk::bfloat16_t>(max_kv),
                smk::cuda::DeviceBuffer<smk::bfloat16_t>(max_kv), smk::cuda::DeviceBuffer<smk::bfloat16_t>(max_q),
                smk::cuda::DeviceBuffer<float>(max_q / d)};
  fill_from_pool(pool, b.q.data(), max_q);
  fill_from_pool(pool, b.k.data(), max_kv);
  fill_from_pool(pool, b.v.data(), max_kv);
  return b;
}

// One timed cell of the sweep and --dec14: B sequences of S keys, one new token, hq query heads over hkv KV heads of
// dimension d, on buffers sized for the largest cell; its views, its lengths on the device and the checked problem;
// a call of the internal entry point under a configuration, its time and its outputs.
struct DecodeCell {
  DecodeCell(std::int64_t B, std::int64_t S, std::int64_t hq, std::int64_t hkv, std::int64_t d, smk::bfloat16_t* o,
             float* lse, smk::bfloat16_t* q, smk::bfloat16_t* k, smk::bfloat16_t* v)
      : lens(smk::cuda::DeviceBuffer<std::int32_t>::from_host(
            std::vector<std::int32_t>(B, static_cast<std::int32_t>(S)))),
        O(smk::TensorView::of(o, {B, 1, hq, d}, smk::Device::cuda(0))),
        L(smk::TensorView::of(lse, {B, hq, 1}, smk::Device::cuda(0))),
        Q(smk::TensorView::of(q, {B, 1, hq, d}, smk::Device::cuda(0))),
        K(smk::TensorView::of(k, {B, S, hkv, d}, smk::Device::cuda(0))),
        V(smk::TensorView::of(v, {B, S, hkv, d}, smk::Device::cuda(0))),
        N(smk::TensorView::of(lens.data(), {B}, smk::Device::cuda(0))),
        p(smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, opt)),
        o_data(o),
        lse_data(lse),
        o_bytes(static_cast<std::size_t>(B * hq * d) * 2),
        lse_bytes(static_cast<std::size_t>(B * hq) * 4) {}
  void run(const smk::cuda::DecodeConfig& c, cudaStream_t s) const {
    smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{s}, nullptr, c);
  }
  // The median µs of `reps` calls under c after kWarmup untimed ones, each call after an L2-evicting write of `flush`
  // (kFlushBytes) and between two of ev's events (2 · reps of them), on s.
  double median_us(const smk::cuda::DecodeConfig& c, int reps, void* flush, const std::vector<cudaEvent_t>& ev,
                   cudaStream_t s) const {
    for (int i = 0; i < kWarmup; ++i) run(c, s);
    for (int i = 0; i < reps; ++i) {
      SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, kFlushBytes, s));
      SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i], s));
      run(c, s);
      SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], s));
    }
    SMK_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      float a = 0;
      SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[2 * i], ev[2 * i + 1]));
      t.push_back(1e3 * a);
    }
    return median(t);
  }
  // The outputs of one call under c (O, then the LSE), poisoned first (0xFF: NaN in bf16 and f32), for the bitwise
  // comparison.
  std::vector<unsigned char> outputs(const smk::cuda::DecodeConfig& c, cudaStream_t s) const {
    SMK_CUDA_CHECK(cudaMemsetAsync(o_data, 0xFF, o_bytes, s));
    SMK_CUDA_CHECK(cudaMemsetAsync(lse_data, 0xFF, lse_bytes, s));
    run(c, s);
    SMK_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<unsigned char> h(o_bytes + lse_bytes);
    SMK_CUDA_CHECK(cudaMemcpy(h.data(), o_data, o_bytes, cudaMemcpyDeviceToHost));
    SMK_CUDA_CHECK(cudaMemcpy(h.data() + o_bytes, lse_data, lse_bytes, cudaMemcpyDeviceToHost));
    return h;
  }
  smk::cuda::DeviceBuffer<std::int32_t> lens;
  smk::TensorView O, L, Q, K, V, N;
  smk::AttentionDecodeOptions opt;
  smk::detail::DecodeProblem p;
  smk::bfloat16_t* o_data;
  float* lse_data;
  std::size_t o_bytes, lse_bytes;
};

// --dec14 (session 14): the dispatcher (2 ring stages) beside 3 ring stages on the cells where the dispatcher takes the
// cp.async tiles: the single-sequence rows (one block an SM or fewer), 64 × 4096 (2048 blocks) and two small batches of
// one wave or less. kDec14Samples of each in turn, kDec14Reps calls a sample after the 256 MB flush; the outputs
// compared bit for bit (poisoned first). As run in session 14 (commit f68c7e8) it also timed the cp.async issue as
// before dec14 (a switch since removed): old / new 1.009-1.034x, docs/bench/dec14-s14-2026-11-30.md. --dec14-ncu: one
// call at (1, 32768) and one at 64 × 4096 (no flush: Nsight Compute flushes before each replay).
int dec14_mode(bool ncu_only, const std::string& json_path, const std::vector<smk::bfloat16_t>& pool, cudaStream_t s,
               void* flush, std::vector<cudaEvent_t>& ev) {
  using smk::TensorView;
  using smk::cuda::DecodeConfig;
  constexpr int kDec14Samples = 5, kDec14Reps = 100;
  constexpr std::int64_t kHkv = 8, kD = 128;
  struct Cell {
    std::int64_t S, B, hq;
  };
  std::vector<Cell> cells = {{32768, 1, 32}, {131072, 1, 32}, {4096, 64, 32}, {32768, 1, 64},
                             {8192, 1, 32},  {2048, 8, 32},   {1024, 16, 32}};
  if (ncu_only) cells = {{32768, 1, 32}, {4096, 64, 32}};
  CellBuffers buf = cell_buffers(cells, kHkv, kD, pool);
  auto &q = buf.q, &k = buf.k, &v = buf.v, &o = buf.o;
  auto& lse = buf.lse;
  DecodeConfig three{};
  three.mma_stages = 3;
  constexpr int kVariants = 2;
  const DecodeConfig dflt{};
  const DecodeConfig* var[kVariants] = {&dflt, &three};
  int sms = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int max_splits = smk::cuda::decode_max_splits(sms);
  std::string json = "[";
  if (!ncu_only)
    std::printf("bench_decode --dec14: the dispatcher (2 ring stages) and 3 ring stages\n%-16s %6s %8s %8s  %9s  %s\n",
                "S, B, Hq", "blocks", "2st us", "3st us", "2st/3st", "same bits; samples 2, 3 stages (min-max)");
  for (const Cell& cell : cells) {
    const std::int64_t S = cell.S, B = cell.B, hq = cell.hq;
    const DecodeCell problem(B, S, hq, kHkv, kD, o.data(), lse.data(), q.data(), k.data(), v.data());
    const auto call = [&](const DecodeConfig* x) { problem.run(*x, s); };
    if (ncu_only) {  // one call of the dispatcher's configuration
      call(var[0]);
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      std::printf("bench_decode --dec14-ncu: (%lld, %lld, %lld): one call\n", (long long)B, (long long)S,
                  (long long)hq);
      continue;
    }
    const auto time = [&](const DecodeConfig* x) { return problem.median_us(*x, kDec14Reps, flush, ev, s); };
    const auto result = [&](const DecodeConfig* x) { return problem.outputs(*x, s); };
    const bool same = result(var[0]) == result(var[1]);
    std::vector<double> t[kVariants];
    for (int k2 = 0; k2 < kDec14Samples; ++k2)
      for (int c = 0; c < kVariants; ++c) t[c].push_back(time(var[c]));
    double m[kVariants];
    std::string samples, spread;
    for (int c = 0; c < kVariants; ++c) m[c] = median(t[c]);
    summarise_samples(t, kVariants, -1, samples, spread);
    const long long blocks = B * kHkv * smk::cuda::decode_splits(S, max_splits);
    const double kv = 2.0 * B * S * kHkv * kD * 2;
    char label[48];
    std::snprintf(label, sizeof label, "%lld, %lld, %lld", (long long)S, (long long)B, (long long)hq);
    std::printf("%-16s %6lld %8.1f %8.1f  %9.3f  %s; %s (%.2f TB/s at 2 stages)\n", label, blocks, m[0], m[1],
                m[0] / m[1], same ? "yes" : "NO", spread.c_str(), kv / m[0] / 1e6);
    std::fflush(stdout);
    json += (json.size() > 1 ? ", " : "") + std::string("{\"S\": ") + std::to_string(S) +
            ", \"B\": " + std::to_string(B) + ", \"Hq\": " + std::to_string(hq) +
            ", \"blocks\": " + std::to_string(blocks) + ", \"kv_bytes\": " + std::to_string(kv) +
            ", \"us\": " + std::to_string(m[0]) + ", \"us_3stages\": " + std::to_string(m[1]) +
            ", \"same_bits\": " + (same ? "true" : "false") + ", \"samples\": [" + samples + "]}";
    if (!same) std::printf("bench_decode --dec14: 2 and 3 stages' outputs differ at (%lld, %lld)\n", (long long)S,
                           (long long)B);
  }
  json += "]\n";
  if (!json_path.empty()) {
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs(json.c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}

// --dec15 (session 15): the decode tail, on the single-sequence rows (where the tail is: one wave or less, 16 splits
// merged) and two batch rows. Per cell, kDec15Samples of each in turn, kDec15Reps calls a sample after the 256 MB
// flush: the dispatcher ("dflt") and, with the merge kernel instead of the in-kernel merge, the call ("mk"), its split
// kernel alone ("split": an event between the two kernels, so the call with no merge) and the merge kernel
// ("merge"). dflt − split is what the dispatcher's in-kernel merge adds after the split kernel's own work (its
// partials written either way). As run in session 15 (commit 013cb4f) it also timed the deep prologue and the late
// reset (switches since removed): 0.993-0.998x and 0.999-1.003x, docs/bench/dec15-s15-2026-12-01.md.
int dec15_mode(const std::string& json_path, const std::vector<smk::bfloat16_t>& pool, cudaStream_t s, void* flush,
               std::vector<cudaEvent_t>& ev) {
  using smk::cuda::DecodeConfig;
  constexpr int kDec15Samples = 5, kDec15Reps = 60;
  constexpr std::int64_t kHkv = 8, kD = 128;
  struct Cell {
    std::int64_t S, B, hq;
  };
  const std::vector<Cell> cells = {{32768, 1, 32}, {131072, 1, 32}, {32768, 1, 64},
                                   {8192, 1, 32},  {4096, 64, 32},  {1024, 16, 32}};
  CellBuffers buf = cell_buffers(cells, kHkv, kD, pool);
  auto &q = buf.q, &k = buf.k, &v = buf.v, &o = buf.o;
  auto& lse = buf.lse;
  DecodeConfig mk{};
  mk.merge = smk::cuda::DecodeMerge::kernel;
  const DecodeConfig dflt{};
  int sms = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int max_splits = smk::cuda::decode_max_splits(sms);
  std::string json = "[";
  std::printf("bench_decode --dec15: the dispatcher, the merge kernel (split kernel + merge)\n"
              "%-16s %6s %7s  %7s %7s %7s %7s  %s\n", "S, B, Hq", "blocks", "dflt", "mk", "split", "merge",
              "dflt-spl", "samples' min-max dflt, mk, split");
  for (const Cell& cell : cells) {
    const std::int64_t S = cell.S, B = cell.B, hq = cell.hq;
    const DecodeCell problem(B, S, hq, kHkv, kD, o.data(), lse.data(), q.data(), k.data(), v.data());
    // Variant 0: dflt, 1: mk (with the event between the kernels).
    constexpr int kMk = 1;
    const auto call = [&](int x, cudaEvent_t mid) {
      smk::cuda::attention_decode(problem.O, problem.L, problem.Q, problem.K, problem.V, problem.N, problem.opt,
                                  problem.p, smk::Stream{s}, x == kMk ? mid : nullptr, x == kMk ? mk : dflt);
    };
    // Returns the median call µs; for mk also the medians of its split kernel and merge kernel.
    const auto time = [&](int x, double* split, double* merge) {
      for (int i = 0; i < 5; ++i) call(x, ev[2]);
      for (int i = 0; i < kDec15Reps; ++i) {
        SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, std::size_t{256} << 20, s));
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i], s));
        call(x, ev[3 * i + 1]);
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i + 2], s));
      }
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<double> t, ts, tm;
      for (int i = 0; i < kDec15Reps; ++i) {
        float a = 0;
        SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[3 * i], ev[3 * i + 2]));
        t.push_back(1e3 * a);
        if (x == kMk) {
          SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[3 * i], ev[3 * i + 1]));
          ts.push_back(1e3 * a);
          SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[3 * i + 1], ev[3 * i + 2]));
          tm.push_back(1e3 * a);
        }
      }
      if (x == kMk) *split = median(ts), *merge = median(tm);
      return median(t);
    };
    constexpr int kSeries = 4;  // dflt, mk, split, merge
    std::vector<double> t[kSeries];
    for (int k2 = 0; k2 < kDec15Samples; ++k2)
      for (int x = 0; x <= kMk; ++x) {
        double sp = 0, me = 0;
        t[x].push_back(time(x, &sp, &me));
        if (x == kMk) t[2].push_back(sp), t[3].push_back(me);
      }
    double m[kSeries];
    std::string samples, spread;
    for (int c = 0; c < kSeries; ++c) m[c] = median(t[c]);
    summarise_samples(t, kSeries, 3, samples, spread);  // the merge kernel's own series: no spread
    const long long blocks = B * kHkv * smk::cuda::decode_splits(S, max_splits);
    const double kv = 2.0 * B * S * kHkv * kD * 2;
    char label[48];
    std::snprintf(label, sizeof label, "%lld, %lld, %lld", (long long)S, (long long)B, (long long)hq);
    std::printf("%-16s %6lld %7.1f  %7.1f %7.1f %7.1f %7.1f  %s (%.2f TB/s dflt)\n", label, blocks, m[0], m[1], m[2],
                m[3], m[0] - m[2], spread.c_str(), kv / m[0] / 1e6);
    std::fflush(stdout);
    json += (json.size() > 1 ? ", " : "") + std::string("{\"S\": ") + std::to_string(S) +
            ", \"B\": " + std::to_string(B) + ", \"Hq\": " + std::to_string(hq) +
            ", \"blocks\": " + std::to_string(blocks) + ", \"kv_bytes\": " + std::to_string(kv) +
            ", \"us\": " + std::to_string(m[0]) + ", \"us_mk\": " + std::to_string(m[1]) +
            ", \"us_split\": " + std::to_string(m[2]) + ", \"us_merge\": " + std::to_string(m[3]) +
            ", \"samples\": [" + samples + "]}";
  }
  json += "]\n";
  if (!json_path.empty()) {
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs(json.c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}

// --dec17 (session 17): HEAD's tensor-core kernel (head: cp.async tiles, 2 stages, no cluster, the dispatcher's kernel
// before dec17 on every cell here) beside the dispatcher's (rule: kDecodeMmaTweaks) and decode_mma_tw_kernel with wide
// q forced (wq: decode_mma_tweaks(2), decode_split.hpp; the same kernel as rule). On the cells where the dispatcher
// takes cp.async without clusters: the single-sequence rows, 64 × 4096 and two small batches. kDec17Samples rounds,
// each timing every variant in turn (kDec17Reps calls a sample after the 256 MB flush); outputs compared bit for bit
// with head's (poisoned first). As run in session 17 (commit 7f9f852, two calls) it also timed flags since removed:
// the ramp's L2 prefetches, the merge's one-atomic arrival, a copy of HEAD's kernel (the control) and their unions;
// docs/bench/dec17-s17-2026-12-01.md. This form is built, not run.
int dec17_mode(const std::string& json_path, const std::vector<smk::bfloat16_t>& pool, cudaStream_t s, void* flush,
               std::vector<cudaEvent_t>& ev) {
  using smk::cuda::DecodeConfig;
  constexpr int kDec17Samples = 9, kDec17Reps = 80;
  constexpr std::int64_t kHkv = 8, kD = 128;
  struct Cell {
    std::int64_t S, B, hq;
  };
  const std::vector<Cell> cells = {{32768, 1, 32}, {131072, 1, 32}, {32768, 1, 64}, {8192, 1, 32},
                                   {4096, 64, 32}, {2048, 8, 32},   {1024, 16, 32}};
  CellBuffers buf = cell_buffers(cells, kHkv, kD, pool);
  constexpr int kVariants = 3;
  const unsigned flags[kVariants] = {0u, smk::cuda::kDecodeTweaksRule, 2u};
  const char* names[kVariants] = {"head", "rule", "wq"};
  bool any_differs = false;
  const DecodeConfig dflt{};
  int sms = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int max_splits = smk::cuda::decode_max_splits(sms);
  std::string json = "[";
  std::printf("bench_decode --dec17: HEAD's kernel (head), the dispatcher's (rule) and the flagged instantiations, µs "
              "(median of %d samples)\n"
              "%-16s %6s %7s %7s %7s  %s\n",
              kDec17Samples, "S, B, Hq", "blocks", names[0], names[1], names[2],
              "head/variant; same bits; samples' min-max");
  for (const Cell& cell : cells) {
    const std::int64_t S = cell.S, B = cell.B, hq = cell.hq;
    const DecodeCell problem(B, S, hq, kHkv, kD, buf.o.data(), buf.lse.data(), buf.q.data(), buf.k.data(),
                             buf.v.data());
    const auto with = [&](unsigned f, const auto& fn) {
      const unsigned before = smk::cuda::decode_mma_tweaks(f);
      auto r = fn();
      smk::cuda::decode_mma_tweaks(before);
      return r;
    };
    const std::vector<unsigned char> ref = with(0u, [&] { return problem.outputs(dflt, s); });
    bool same[kVariants];
    for (int x = 0; x < kVariants; ++x) same[x] = with(flags[x], [&] { return problem.outputs(dflt, s); }) == ref;
    std::vector<double> t[kVariants];
    for (int k2 = 0; k2 < kDec17Samples; ++k2)
      for (int x = 0; x < kVariants; ++x)
        t[x].push_back(with(flags[x], [&] { return problem.median_us(dflt, kDec17Reps, flush, ev, s); }));
    double m[kVariants];
    for (int x = 0; x < kVariants; ++x) m[x] = median(t[x]);
    std::string samples, spread;
    summarise_samples(t, kVariants, -1, samples, spread);
    const long long blocks = B * kHkv * smk::cuda::decode_splits(S, max_splits);
    const double kv = 2.0 * B * S * kHkv * kD * 2;
    char label[48];
    std::snprintf(label, sizeof label, "%lld, %lld, %lld", (long long)S, (long long)B, (long long)hq);
    std::printf("%-16s %6lld %7.1f %7.1f %7.1f  %.3f %.3f; %s%s; %s (%.2f TB/s head)\n", label, blocks, m[0], m[1],
                m[2], m[0] / m[1], m[0] / m[2], same[1] ? "y" : "N", same[2] ? "y" : "N", spread.c_str(),
                kv / m[0] / 1e6);
    std::fflush(stdout);
    json += (json.size() > 1 ? ", " : "") + std::string("{\"S\": ") + std::to_string(S) +
            ", \"B\": " + std::to_string(B) + ", \"Hq\": " + std::to_string(hq) +
            ", \"blocks\": " + std::to_string(blocks) + ", \"kv_bytes\": " + std::to_string(kv);
    for (int x = 0; x < kVariants; ++x)
      json += std::string(", \"us_") + names[x] + "\": " + std::to_string(m[x]) + ", \"same_" + names[x] +
              "\": " + (same[x] ? "true" : "false");
    json += ", \"samples\": [" + samples + "]}";
    for (int x = 1; x < kVariants; ++x)
      if (!same[x]) {
        any_differs = true;
        std::printf("bench_decode --dec17: %s's outputs differ from head's at (%lld, %lld, %lld)\n", names[x],
                    (long long)S, (long long)B, (long long)hq);
      }
  }
  json += "]\n";
  if (!json_path.empty()) {
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs(json.c_str(), f);
      std::fclose(f);
    }
  }
  return any_differs ? 1 : 0;  // a variant that changed the bits fails the step (as tune_softmax's modes do)
}

}  // namespace

int main(int argc, char** argv) {
  using smk::TensorView;
  using smk::cuda::DeviceBuffer;
  std::string json_path;
  bool quick = false, ncu = false, ab = false, tma_ab = false, sweep = false, dec12 = false, dec14 = false,
       dec14_ncu = false, dec15 = false, dec17 = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    else if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--ncu") == 0) ncu = true;
    else if (std::strcmp(argv[i], "--ab") == 0) ab = quick = true;
    else if (std::strcmp(argv[i], "--tma") == 0) tma_ab = true;
    else if (std::strcmp(argv[i], "--sweep") == 0) sweep = true;
    else if (std::strcmp(argv[i], "--dec12") == 0) sweep = dec12 = true;
    else if (std::strcmp(argv[i], "--dec14") == 0) dec14 = true;
    else if (std::strcmp(argv[i], "--dec14-ncu") == 0) dec14_ncu = true;
    else if (std::strcmp(argv[i], "--dec15") == 0) dec15 = true;
    else if (std::strcmp(argv[i], "--dec17") == 0) dec17 = true;
    else {  // an unknown flag (e.g. a removed session's mode) must not run the whole default bench in its place
      std::fprintf(stderr,
                   "bench_decode: unknown argument '%s' (known: --json PATH, --quick, --ncu, --ab, --tma, --sweep, "
                   "--dec12, --dec14, --dec14-ncu, --dec15, --dec17)\n",
                   argv[i]);
      return 2;
    }
  }
  if (smk::cuda_device_count() == 0) {
    std::printf("bench_decode: no GPU: %s\n", smk::cuda_unavailable_reason().c_str());
    return 2;
  }
  std::vector<Row> rows = {{1, 32768, 32, 8, 128},  {1, 131072, 32, 8, 128}, {16, 8192, 32, 8, 128},
                           {64, 4096, 32, 8, 128},  {128, 1024, 32, 8, 128}, {1, 32768, 64, 8, 128},
                           {16, 8192, 64, 8, 128}};
  if (ncu) rows.resize(1);
  // Random bf16 values (never time on zeros), copied into every buffer.
  std::vector<smk::bfloat16_t> pool(std::size_t{1} << 24);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0, 1);
  for (auto& x : pool) x = smk::to_bfloat16(dist(rng));
  const auto fill = [&](smk::bfloat16_t* dst, std::size_t n) {
    for (std::size_t off = 0; off < n; off += pool.size())
      SMK_CUDA_CHECK(cudaMemcpy(dst + off, pool.data(), std::min(pool.size(), n - off) * 2, cudaMemcpyHostToDevice));
  };
  cudaStream_t s;
  SMK_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* flush = nullptr;
  SMK_CUDA_CHECK(cudaMalloc(&flush, kFlushBytes));
  // The clean flush's read: logsumexp over 256 MB of f32 rows (zeros: its time is not measured, only what it leaves
  // in L2).
  constexpr std::int64_t kReadRows = 65536, kReadCols = 1024;
  DeviceBuffer<float> read_in(kReadRows * kReadCols), read_out(kReadRows);
  read_in.fill_bytes(0);
  const auto read_in_v = TensorView::of(read_in.data(), {kReadRows, kReadCols}, smk::Device::cuda(0));
  const auto read_out_v = TensorView::of(read_out.data(), {kReadRows}, smk::Device::cuda(0));
  // The small kernel before the call in the "after a kernel" probe: logsumexp over 1×1024 f32 (zeros).
  DeviceBuffer<float> tiny_in(1024), tiny_out(1);
  tiny_in.fill_bytes(0);
  const auto tiny_in_v = TensorView::of(tiny_in.data(), {1, 1024}, smk::Device::cuda(0));
  const auto tiny_out_v = TensorView::of(tiny_out.data(), {1}, smk::Device::cuda(0));
  const auto tiny = [&] { smk::logsumexp(tiny_out_v, tiny_in_v, {}, smk::Stream{s}); };
  std::vector<cudaEvent_t> ev(3 * kReps);
  for (auto& e : ev) SMK_CUDA_CHECK(cudaEventCreate(&e));
  const auto dev = smk::Device::cuda(0);

  std::string json = "[";
  if (dec14 || dec14_ncu) return dec14_mode(dec14_ncu, json_path, pool, s, flush, ev);
  if (dec15) return dec15_mode(json_path, pool, s, flush, ev);
  if (dec17) return dec17_mode(json_path, pool, s, flush, ev);
  if (sweep) {
    using smk::cuda::DecodeConfig;
    using smk::cuda::DecodeMerge;
    using smk::cuda::DecodeToggle;
    constexpr int kSweepSamples = 3, kSweepReps = 40;
    constexpr std::int64_t kHq = 32, kHkv = 8, kD = 128;
    const std::int64_t lens_s[] = {1024, 2048, 4096, 8192, 16384, 32768};
    const std::int64_t batches[] = {1, 8, 16, 64};
    const std::size_t max_kv = std::size_t{64} * 32768 * kHkv * kD, max_q = std::size_t{128} * 64 * kD;
    DeviceBuffer<smk::bfloat16_t> q(max_q), k(max_kv), v(max_kv), o(max_q);
    DeviceBuffer<float> lse(128 * 64);
    fill(q.data(), max_q);
    fill_from_pool(pool, k.data(), max_kv);
    fill_from_pool(pool, v.data(), max_kv);
    // cp.async and TMA tiles; the two give the same bits (checked below).
    // --dec12: the dispatcher (TMA by S_max), the TMA choice by the grid (same bits, checked), the cap 24, the cap 32.
    constexpr int kConfigs = 5;
    const int n_cfg = dec12 ? 5 : 2;
    DecodeConfig cfg[kConfigs];
    const char* cfg_name[kConfigs] = {"cp4", "tma4", "cap24", "cap32", "cap32tma"};
    if (dec12) cfg_name[0] = "len", cfg_name[1] = "grid";
    for (int c = 0; c < kConfigs; ++c) {
      cfg[c].kernel = smk::cuda::DecodeKernel::mma;
      cfg[c].mma_stages = 2;
      if (!dec12) cfg[c].tma = c % 2 ? DecodeToggle::on : DecodeToggle::off;
    }
    if (dec12) {
      cfg[0] = DecodeConfig{};
      cfg[0].tma_grid = DecodeToggle::off;
      cfg[1] = DecodeConfig{};
      cfg[1].tma_grid = DecodeToggle::on;
      cfg[2] = DecodeConfig{};
      cfg[2].max_splits = 24;
      cfg[3] = DecodeConfig{};
      cfg[3].max_splits = 32;
      cfg[4] = cfg[3];
      cfg[4].tma = DecodeToggle::on;
    }
    int sms = 0;
    SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int max_splits = smk::cuda::decode_max_splits(sms);
    if (dec12) std::printf("bench_decode --dec12: columns cp = the dispatcher (TMA by S_max), tma = TMA by the grid\n");
    std::printf("%-16s %6s %7s  %8s %8s  %7s  %s\n", "S_max, B, Hq", "blocks", "waves", "cp us", "tma us", "cp/tma",
                "same bits (cp/TMA); samples cp, tma");
    struct Cell {
      std::int64_t S, B, hq;
    };
    std::vector<Cell> cells;
    if (dec12) {
      // The seven rows, then the sweep's cells where the two TMA rules differ, and (1024, 64) where both take
      // TMA (the control).
      cells = {{32768, 1, kHq},   {131072, 1, kHq}, {8192, 16, kHq},  {4096, 64, kHq},  {1024, 128, kHq},
               {32768, 1, 64},    {8192, 16, 64},   {1024, 1, kHq},   {1024, 8, kHq},   {1024, 16, kHq},
               {2048, 64, kHq},   {4096, 16, kHq},  {8192, 1, kHq},   {8192, 64, kHq},  {16384, 8, kHq},
               {32768, 8, kHq},   {1024, 64, kHq}};
    } else {
      for (const std::int64_t S : lens_s)
        for (const std::int64_t B : batches) cells.push_back({S, B, kHq});
      // The rows the product misses: (128, 1024), (1, 131072), and 64 query heads.
      for (const Cell c : {Cell{1024, 128, kHq}, Cell{131072, 1, kHq}, Cell{32768, 1, 64}, Cell{8192, 16, 64}})
        cells.push_back(c);
    }
    for (const Cell& cell : cells) {
      {
        const std::int64_t S = cell.S, B = cell.B, kHq = cell.hq;
        const DecodeCell problem(B, S, kHq, kHkv, kD, o.data(), lse.data(), q.data(), k.data(), v.data());
        const auto time = [&](const DecodeConfig& c) { return problem.median_us(c, kSweepReps, flush, ev, s); };
        const auto result = [&](const DecodeConfig& c) { return problem.outputs(c, s); };
        const bool same = result(cfg[0]) == result(cfg[1]);
        // --dec12: the caps only where they change the split count (one sequence of at least 32768 keys).
        const int nc = dec12 && B == 1 && S >= 32768 ? n_cfg : 2;
        std::vector<double> t[kConfigs];
        for (int k2 = 0; k2 < kSweepSamples; ++k2)
          for (int c = 0; c < nc; ++c) t[c].push_back(time(cfg[c]));
        double m[kConfigs] = {-1, -1, -1, -1, -1};
        for (int c = 0; c < nc; ++c) m[c] = median(t[c]);
        // Rows of 8 query rows a block: Hq / Hkv ≤ 8 here, one row chunk.
        const long long blocks = B * kHkv * smk::cuda::decode_splits(S, max_splits);
        const double waves = static_cast<double>(blocks) / (3.0 * sms);
        std::string samples;
        for (int c = 0; c < nc; ++c) {
          samples += c ? ", [" : "[";
          for (int k2 = 0; k2 < kSweepSamples; ++k2) samples += (k2 ? ", " : "") + std::to_string(t[c][k2]);
          samples += "]";
        }
        std::printf("%6lld, %3lld, %2lld %6lld %7.2f  %8.1f %8.1f  %7.3f  %s  %s\n", (long long)S, (long long)B,
                    (long long)kHq, blocks, waves, m[0], m[1], m[0] / m[1], same ? "yes" : "NO", samples.c_str());
        if (nc > 2)
          std::printf("%16s cap 24: %.1f us (16/24 %.3f), cap 32: %.1f us (16/32 %.3f), cap 32 TMA: %.1f us (%.3f)\n",
                      "", m[2], m[0] / m[2], m[3], m[0] / m[3], m[4], m[0] / m[4]);
        std::fflush(stdout);
        std::string us;
        for (int c = 0; c < nc; ++c) us += ", \"us_" + std::string(cfg_name[c]) + "\": " + std::to_string(m[c]);
        json += (json.size() > 1 ? ", " : "") + std::string("{\"S\": ") + std::to_string(S) +
                ", \"B\": " + std::to_string(B) + ", \"Hq\": " + std::to_string(kHq) +
                ", \"blocks\": " + std::to_string(blocks) + us + ", \"same_bits\": " + (same ? "true" : "false") +
                ", \"samples\": [" + samples + "]}";
        if (!same) std::printf("bench_decode --sweep: cp.async and TMA differ at S_max %lld, B %lld\n", (long long)S,
                               (long long)B);
      }
    }
    json += "]\n";
    if (!json_path.empty()) {
      if (FILE* f = std::fopen(json_path.c_str(), "w")) {
        std::fputs(json.c_str(), f);
        std::fclose(f);
      }
    }
    return 0;
  }
  std::printf("%-26s %10s %10s %9s %8s\n", "B, S, Hq, Hkv, D", "us", "floor us", "TB/s", "% copy");
  using smk::cuda::DecodeConfig;
  using smk::cuda::DecodeKernel;
  using smk::cuda::DecodeScores;
  for (const Row& r : rows) {
    const std::size_t nq = r.B * r.hq * r.d, nkv = r.B * r.S * r.hkv * r.d;
    DeviceBuffer<smk::bfloat16_t> q(nq), k(nkv), v(nkv), o(nq);
    DeviceBuffer<float> lse(r.B * r.hq);
    fill(q.data(), nq);
    fill(k.data(), nkv);
    fill(v.data(), nkv);
    const std::vector<std::int32_t> lens_host(r.B, static_cast<std::int32_t>(r.S));
    auto lens = DeviceBuffer<std::int32_t>::from_host(lens_host);
    const auto O = TensorView::of(o.data(), {r.B, 1, r.hq, r.d}, dev);
    const auto L = TensorView::of(lse.data(), {r.B, r.hq, 1}, dev);
    const auto Q = TensorView::of(q.data(), {r.B, 1, r.hq, r.d}, dev);
    const auto K = TensorView::of(k.data(), {r.B, r.S, r.hkv, r.d}, dev);
    const auto V = TensorView::of(v.data(), {r.B, r.S, r.hkv, r.d}, dev);
    const auto N = TensorView::of(lens.data(), {r.B}, dev);
    const smk::AttentionDecodeOptions opt;
    const auto p = smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, opt);
    if (ncu) {  // four calls, no flush (Nsight Compute flushes the caches before each replay): empty, full, empty, full
      const std::vector<std::int32_t> none(r.B, 0);
      auto dnone = DeviceBuffer<std::int32_t>::from_host(none);
      const auto E = TensorView::of(dnone.data(), {r.B}, dev);
      for (int i = 0; i < 2; ++i) {
        smk::cuda::attention_decode(O, L, Q, K, V, E, opt, p, smk::Stream{s});
        smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{s});
      }
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      std::printf("bench_decode --ncu: 4 calls at (1, 32768): empty, full, empty, full\n");
      return 0;
    }
    // Median µs of the whole call and of the merge, under a kernel configuration ({}: the dispatcher's).
    // clean: the flush then a 256 MB read, so L2 holds no dirty line; lens: the sequence lengths (N, or all zero);
    // between: record an event between the split kernel and the merge kernel (round 3 did for every variant: one more
    // GPU operation inside the timed call; round 4 only for the merge kernel, whose share it measures).
    const auto measure = [&](smk::cuda::DecodeConfig config, double& merge_us, bool clean = false,
                             const TensorView* lens_v = nullptr, bool between = false, bool after_kernel = false) {
      const auto call = [&](void* ev_between) {
        smk::cuda::attention_decode(O, L, Q, K, V, lens_v ? *lens_v : N, opt, p, smk::Stream{s},
                                    between ? ev_between : nullptr, config);
      };
      for (int i = 0; i < kWarmup; ++i) call(nullptr);
      for (int i = 0; i < kReps; ++i) {
        SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, kFlushBytes, s));
        if (clean) smk::logsumexp(read_out_v, read_in_v, {}, smk::Stream{s});
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i], s));
        if (after_kernel) tiny();
        call(ev[3 * i + 1]);
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i + 2], s));
      }
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<double> total, merge;
      for (int i = 0; i < kReps; ++i) {
        float a = 0, b = 0;
        SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[3 * i], ev[3 * i + 2]));
        if (between) SMK_CUDA_CHECK(cudaEventElapsedTime(&b, ev[3 * i + 1], ev[3 * i + 2]));
        total.push_back(1e3 * a);
        merge.push_back(1e3 * b);
      }
      merge_us = median(merge);
      return median(total);
    };
    // Any stream work timed the same way (after the same flush): the timing method's floor, a graph's replay.
    const auto measure_op = [&](const auto& op) {
      op();
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      std::vector<double> total;
      for (int i = 0; i < kReps; ++i) {
        SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, kFlushBytes, s));
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i], s));
        op();
        SMK_CUDA_CHECK(cudaEventRecord(ev[3 * i + 2], s));
      }
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      for (int i = 0; i < kReps; ++i) {
        float a = 0;
        SMK_CUDA_CHECK(cudaEventElapsedTime(&a, ev[3 * i], ev[3 * i + 2]));
        total.push_back(1e3 * a);
      }
      return median(total);
    };
    // Host µs per call: steady_clock around kReps calls back to back on an idle stream, no flush, no sync between
    // (the GPU runs behind; the queue never fills at this count). internal: the internal entry point (no argument
    // checks); else the public smk::attention_decode.
    const auto host_us = [&](bool internal) {
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kReps; ++i) {
        if (internal) smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{s});
        else smk::attention_decode(O, L, Q, K, V, N, opt, smk::Stream{s});
      }
      const auto t1 = std::chrono::steady_clock::now();
      SMK_CUDA_CHECK(cudaStreamSynchronize(s));
      return std::chrono::duration<double, std::micro>(t1 - t0).count() / kReps;
    };
    using smk::cuda::DecodeMerge;
    using smk::cuda::DecodeToggle;
    constexpr auto kMma = DecodeKernel::mma;
    constexpr auto kDisp = DecodeScores::dispatcher;
    constexpr auto kT = DecodeToggle::dispatcher;
    double merge_us = 0, merge_mk = 0, unused = 0;
    const DecodeConfig plain{0, kDisp, DecodeKernel::dispatcher, 0, DecodeMerge::dispatcher, 0, 0, kT, kT,
                             DecodeToggle::off};
    if (tma_ab) {
      constexpr int kTmaSamples = 4;
      const DecodeConfig cp{0, kDisp, kMma, 2, DecodeMerge::dispatcher, 0, 0, kT, kT, kT, DecodeToggle::off};
      const DecodeConfig tma{0, kDisp, kMma, 2, DecodeMerge::dispatcher, 0, 0, kT, kT, kT, DecodeToggle::on};
      std::vector<double> t_cp, t_tma;
      for (int k = 0; k < kTmaSamples; ++k) {
        t_cp.push_back(measure(cp, unused));
        t_tma.push_back(measure(tma, unused));
      }
      const double m_cp = median(t_cp), m_tma = median(t_tma);
      const double bytes = 2.0 * static_cast<double>(nkv) * 2;
      char label[64];
      std::snprintf(label, sizeof label, "%lld, %lld, %lld, %lld, %lld", (long long)r.B, (long long)r.S,
                    (long long)r.hq, (long long)r.hkv, (long long)r.d);
      std::string cs, ts;
      for (int k = 0; k < kTmaSamples; ++k) {
        cs += (k ? ", " : "") + std::to_string(t_cp[k]);
        ts += (k ? ", " : "") + std::to_string(t_tma[k]);
      }
      std::printf("%-26s cp.async %8.1f us (%5.2f TB/s)  TMA %8.1f us (%5.2f TB/s)  cp/TMA %.3f   samples cp [%s] "
                  "tma [%s]\n",
                  label, m_cp, bytes / m_cp / 1e6, m_tma, bytes / m_tma / 1e6, m_cp / m_tma, cs.c_str(), ts.c_str());
      json += (json.size() > 1 ? ", " : "") + std::string("{\"B\": ") + std::to_string(r.B) +
              ", \"S\": " + std::to_string(r.S) + ", \"Hq\": " + std::to_string(r.hq) +
              ", \"Hkv\": " + std::to_string(r.hkv) + ", \"D\": " + std::to_string(r.d) +
              ", \"kv_bytes\": " + std::to_string(bytes) + ", \"us_cp\": " + std::to_string(m_cp) +
              ", \"us_tma\": " + std::to_string(m_tma) + ", \"cp_samples\": [" + cs + "], \"tma_samples\": [" + ts +
              "]}";
      continue;
    }
    const double us = measure({}, merge_us);
    const double us_nopdl = ab ? -1 : measure(plain, unused);
    const double us_after = ab ? -1 : measure({}, unused, false, nullptr, false, true);
    const double us_after_nopdl = ab ? -1 : measure(plain, unused, false, nullptr, false, true);
    const double us_tiny = ab ? -1 : measure_op(tiny);
    const bool full = !quick;
    const double us_event = full ? measure({}, unused, false, nullptr, true) : -1;  // round 3's method
    // The merges under the same rule give the same bits, so the differences are the merges' alone.
    const double us_packed =
        full ? measure({0, kDisp, kMma, 0, DecodeMerge::cluster, 0, 0, kT, DecodeToggle::off}, unused) : -1;
    const double us_spread =
        full ? measure({0, kDisp, kMma, 0, DecodeMerge::cluster, 0, 0, kT, DecodeToggle::on}, unused) : -1;
    const double us_fused = ab ? -1 : measure({0, kDisp, kMma, 0, DecodeMerge::fused}, unused);
    const double us_memset =
        full ? measure({0, kDisp, kMma, 0, DecodeMerge::fused, 0, 0, DecodeToggle::off}, unused) : -1;
    const double us_mk = ab ? -1 : measure({0, kDisp, kMma, 0, DecodeMerge::kernel}, merge_mk, false, nullptr, true);
    const double us_clean = ab ? -1 : measure({}, unused, true);
    const double us_fused_clean = full ? measure({0, kDisp, kMma, 0, DecodeMerge::fused}, unused, true) : -1;
    const std::vector<std::int32_t> zeros_host(r.B, 0);
    auto zeros = DeviceBuffer<std::int32_t>::from_host(zeros_host);
    const auto Z = TensorView::of(zeros.data(), {r.B}, dev);
    const double us_empty = ab ? -1 : measure({}, unused, false, &Z);
    const double us_empty_nopdl = ab ? -1 : measure(plain, unused, false, &Z);
    // The timing method's floor: one 4-byte memset between the events.
    const double us_floor = ab ? -1 : measure_op([&] { SMK_CUDA_CHECK(cudaMemsetAsync(zeros.data(), 0, 4, s)); });
    // The dispatcher's call captured into a graph: its GPU operations counted by kind, and its replay timed (the GPU
    // alone: no host work between the events). A capturing stream takes the memset counters (decode.cu says why).
    int n_kernel = 0, n_memset = 0, n_other = 0;
    double us_graph = -1;
    if (full) {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      SMK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{s});
      SMK_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
      std::size_t n = 0;
      SMK_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
      std::vector<cudaGraphNode_t> nodes(n);
      SMK_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
      for (auto node : nodes) {
        cudaGraphNodeType t;
        SMK_CUDA_CHECK(cudaGraphNodeGetType(node, &t));
        (t == cudaGraphNodeTypeKernel ? n_kernel : t == cudaGraphNodeTypeMemset ? n_memset : n_other) += 1;
      }
      SMK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      us_graph = measure_op([&] { SMK_CUDA_CHECK(cudaGraphLaunch(exec, s)); });
      SMK_CUDA_CHECK(cudaGraphExecDestroy(exec));
      SMK_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    const double host_internal = full ? host_us(true) : -1, host_public = full ? host_us(false) : -1;
    const int active_spread =
        full ? smk::cuda::decode_mma_active_clusters(0, true, 128, smk::cuda::kDecodeMmaStages, 16, true) : -1;
    const int active_packed =
        full ? smk::cuda::decode_mma_active_clusters(0, true, 128, smk::cuda::kDecodeMmaStages, 16, false) : -1;
    const double us_stages3 = measure({0, kDisp, kMma, 3}, unused);
    double us_headmajor = -1;
    {
      DeviceBuffer<smk::bfloat16_t> kh(nkv), vh(nkv);
      fill(kh.data(), nkv);
      fill(vh.data(), nkv);
      const std::int64_t hs = r.S * r.d;  // one KV head's rows
      const auto KH = TensorView::strided(kh.data(), smk::DType::bf16, dev, {r.B, r.S, r.hkv, r.d},
                                          {r.hkv * hs, r.d, hs, 1});
      const auto VH = TensorView::strided(vh.data(), smk::DType::bf16, dev, {r.B, r.S, r.hkv, r.d},
                                          {r.hkv * hs, r.d, hs, 1});
      const auto ph = smk::detail::check_decode_args("attention_decode", O, L, Q, KH, VH, N, opt);
      for (int i = 0; i < kWarmup; ++i) smk::cuda::attention_decode(O, L, Q, KH, VH, N, opt, ph, smk::Stream{s});
      us_headmajor = measure_op([&] { smk::cuda::attention_decode(O, L, Q, KH, VH, N, opt, ph, smk::Stream{s}); });
    }
    const double us_again = measure({}, unused);  // the dispatcher again, last: the spread between two timings
    const double bytes = 2.0 * static_cast<double>(nkv) * 2;
    const auto tb = [&](double t) { return bytes / (t * 1e-6) / 1e12; };
    const double tbs = tb(us), floor_us = bytes / (kCopyTBs * 1e12) * 1e6;
    char label[64];
    std::snprintf(label, sizeof label, "%lld, %lld, %lld, %lld, %lld", (long long)r.B, (long long)r.S, (long long)r.hq,
                  (long long)r.hkv, (long long)r.d);
    std::printf("%-26s %10.1f %10.1f %9.2f %7.0f%%   again %.1f", label, us, floor_us, tbs, 100 * tbs / kCopyTBs,
                us_again);
    std::printf("   plain launch %.1f | after a kernel %.1f (plain %.1f; the kernel alone %.1f) | empty plain %.1f",
                us_nopdl, us_after, us_after_nopdl, us_tiny, us_empty_nopdl);
    std::printf("   with event %.1f | cluster packed %.1f | spread %.1f | fused %.1f | memset %.1f | merge kernel %.1f "
                "(merge %.1f%%) | clean L2 %.1f (fused %.1f) | empty %.1f | floor %.1f | graph %.1f (%d kernels, "
                "%d memsets, %d other) | host %.2f / public %.2f us | 16-clusters at once: spread %d, packed %d"
                " | 3 stages %.1f | head-major K, V %.1f\n",
                us_event, us_packed, us_spread, us_fused, us_memset, us_mk, 100 * merge_mk / us_mk, us_clean,
                us_fused_clean, us_empty, us_floor, us_graph, n_kernel, n_memset, n_other, host_internal, host_public,
                active_spread, active_packed, us_stages3, us_headmajor);
    char item[2048];
    std::snprintf(item, sizeof item,
                  "%s{\"B\": %lld, \"S\": %lld, \"Hq\": %lld, \"Hkv\": %lld, \"D\": %lld, \"us\": %.3f, \"us_again\": %.3f, "
                  "\"kv_bytes\": %.0f, \"tbs\": %.4f, \"us_event\": %.3f, \"us_cluster_packed\": %.3f, "
                  "\"us_cluster_spread\": %.3f, \"us_fused\": %.3f, \"us_memset\": %.3f, \"us_merge_kernel\": %.3f, "
                  "\"merge_us_merge_kernel\": %.3f, \"us_clean_l2\": %.3f, \"us_fused_clean_l2\": %.3f, "
                  "\"us_empty\": %.3f, \"us_floor\": %.3f, \"us_graph\": %.3f, \"graph_kernels\": %d, "
                  "\"graph_memsets\": %d, \"graph_other\": %d, \"host_us\": %.3f, \"host_us_public\": %.3f, "
                  "\"active16_spread\": %d, \"active16_packed\": %d, "
                  "\"default_stages\": %d, \"default_min_chunk\": %lld, \"us_nopdl\": %.3f, "
                  "\"us_after\": %.3f, \"us_after_nopdl\": %.3f, \"us_tiny\": %.3f, \"us_empty_nopdl\": %.3f, "
                  "\"default_pdl\": %d, \"us_stages3\": %.3f, \"us_headmajor\": %.3f}",
                  json.size() > 1 ? ", " : "", (long long)r.B, (long long)r.S, (long long)r.hq, (long long)r.hkv,
                  (long long)r.d, us, us_again, bytes, tbs, us_event, us_packed, us_spread, us_fused, us_memset, us_mk,
                  merge_mk, us_clean, us_fused_clean, us_empty, us_floor, us_graph, n_kernel, n_memset, n_other,
                  host_internal, host_public, active_spread, active_packed, smk::cuda::kDecodeMmaStages,
                  (long long)smk::cuda::kDecodeMinChunk, us_nopdl, us_after, us_after_nopdl, us_tiny, us_empty_nopdl,
                  smk::cuda::kDecodePdl ? 1 : 0, us_stages3, us_headmajor);
    json += item;
  }
  json += "]\n";
  for (auto& e : ev) cudaEventDestroy(e);
  cudaFree(flush);
  cudaStreamDestroy(s);
  if (!json_path.empty()) {
    if (FILE* f = std::fopen(json_path.c_str(), "w")) {
      std::fputs(json.c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}
