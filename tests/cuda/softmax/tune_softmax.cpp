// tune_softmax: times the softmax family's kernels under explicit launch configurations, to choose the thresholds
// and configurations in src/cuda/softmax/softmax_cuda.cpp (docs/perf-notebook.md records what it printed).
// Not a test; scripts/device.sh's `tune` step runs it. Method (METHOD.md): CUDA events around each launch, a
// warm-up, inputs rotated over enough buffers that the set exceeds the L2 several times (so no launch reads
// another's cached input), random data, the median of the repeats. Bandwidth counts the minimum traffic: read +
// write (softmax), read (logsumexp).
//   usage: tune_softmax [--quick | --rowpipe | --rowpipe-ncu | --bw16 | --bw16b | --bw16-ncu | --mid16 | --fwd16 |
//                        --mid8 | --mid8-ncu | --short8 | --short9 | --mid9 | --vocab10 | --lse10 | --lse10-f4 |
//                        --lse10-ncu | --short10 | --short11 | --sbwd11 | --one11 | --mid11 [old] | --short12 |
//                        --short12-ncu | --one12 [ncu] | --mid12 [ncu] | --sbwd12 | --sbwd12-ncu | --pack14 [quick] |
//                        --pack14-ncu | --tma14 | --tma14-ncu | --tma14b | --short14 | --short14-ncu | --short15 |
//                        --short15-ncu | --split15 | --split15-ncu | --split15b | --short16 | --short16-ncu |
//                        --bwd16 | --bwd16-ncu | --split16 | --split16-ncu | --bwd17 |
//                        --blk17 | --blk17-ncu | --lse17 | --lse17-ncu | --short18]
//   (also --lse18 / --lse18-ncu, session 18, and --few19 / --few19-ncu, session 19: read before the list below)
//   (and --next20-f32-65536 / --next20-l16, prep20 of session 19 for the next session's first measurements)
//   (kModes below lists the same; any other argument starting with "--" prints the usage and exits 2.)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>  // split15b's Box-Muller
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda/softmax/backward_reread.hpp"  // mid12: BackwardRereadTuning::form
#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/lse_chunks.hpp"  // lse17: launch_lse_chunk_rows
#include "cuda/softmax/split_row_tuning.hpp"  // one12: the chunk kernel's L2 prefetch distance, the merge's preloading
#include "cuda/softmax/warp_backward.hpp"
#include "cuda/softmax/warp_occ.hpp"  // short14
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"  // next20: ScopedSoftmaxPath
#include "softmaxkit/softmax.hpp"  // bwd16: --bwd16-ncu launches the dispatcher's kernels

namespace {

using namespace smk::cuda::kernels;
using smk::DType;

constexpr double kCopyTBs = 4.27;  // ANCHORS.md: device-to-device copy, 2 GiB f32

struct Buffers {
  std::vector<void*> in;
  // Backward problems' inputs (make_buffers): y a softmax or log-softmax output, dy a gradient; as many copies as `in`.
  std::vector<void*> y_softmax, y_log_softmax, dy;
  void* out = nullptr;
  float* stats = nullptr;
};

std::uint64_t rng_state = 0x9E3779B97F4A7C15ull;
float next_uniform() {  // xorshift64*: fast enough to fill gigabytes
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return static_cast<float>((rng_state * 2685821657736338717ull) >> 40) / 16777216.0f;
}

// The forward problems' scores x: uniform in [16, 24) (rng_state's stream, as before session 12's review F7). The
// backward problems' inputs (F7: y and dy in [16, 24) made every f16 dx ±inf or NaN): y the softmax (softmax
// backward) or log-softmax (log-softmax backward) of row 0's scores, computed in float64 and rounded to t, dy uniform
// in [-1, 1) (its own generator, so rng_state's stream and every x stay as they were); row r holds those rows rotated
// by r elements (y) and 2r + 1 (dy): each row of y a real softmax / log-softmax output (of row 0's scores permuted),
// filled in O(n) arithmetic whatever the rows.
Buffers make_buffers(std::int64_t rows, std::int64_t n, DType t) {
  const std::size_t bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
  const std::size_t esize = smk::dtype_size(t), un = static_cast<std::size_t>(n);
  // At least two copies: a backward problem takes y and dy from copy i, the next problem from copy i + 1.
  const int copies = static_cast<int>(std::clamp<std::size_t>((512u << 20) / bytes, 2, 64));
  std::vector<unsigned char> host(bytes);
  std::vector<double> row0(un);  // row 0's scores as stored
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows * n); ++i) {
    const float v = 8.0f * next_uniform() - 4.0f + 20.0f;
    float stored = v;
    if (t == DType::f32) std::memcpy(host.data() + 4 * i, &v, 4);
    else if (t == DType::bf16) {
      const auto b = smk::to_bfloat16(v);
      std::memcpy(host.data() + 2 * i, &b, 2);
      stored = smk::to_float(b);
    } else {
      const auto h = smk::to_half(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
      stored = smk::to_float(h);
    }
    if (i < un) row0[i] = stored;
  }
  Buffers b;
  for (int c = 0; c < copies; ++c) {
    void* p = nullptr;
    SMK_CUDA_CHECK(cudaMalloc(&p, bytes));
    SMK_CUDA_CHECK(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
    b.in.push_back(p);
  }
  // The backward inputs: one row each (float64, rounded to t), then every row a rotation of it, in `copies` copies.
  auto put = [&](std::vector<unsigned char>& dst, std::size_t i, double v) {
    if (t == DType::f32) { const float f = static_cast<float>(v); std::memcpy(dst.data() + 4 * i, &f, 4); }
    else if (t == DType::bf16) { const auto h = smk::to_bfloat16(v); std::memcpy(dst.data() + 2 * i, &h, 2); }
    else { const auto h = smk::to_half(v); std::memcpy(dst.data() + 2 * i, &h, 2); }
  };
  double m = -1.0e300, l = 0;
  for (double v : row0) m = std::max(m, v);
  for (double v : row0) l += std::exp(v - m);
  const double lse = m + std::log(l);
  std::vector<unsigned char> sm_row(un * esize), lsm_row(un * esize), dy_row(un * esize);
  std::uint64_t g = 0x2545F4914F6CDD1Dull;  // dy's own xorshift64*
  for (std::size_t j = 0; j < un; ++j) {
    put(sm_row, j, std::exp(row0[j] - lse));
    put(lsm_row, j, row0[j] - lse);
    g ^= g >> 12;
    g ^= g << 25;
    g ^= g >> 27;
    put(dy_row, j, static_cast<double>((g * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0);  // [-1, 1)
  }
  struct Kind {
    const std::vector<unsigned char>* row;
    std::vector<void*>* dst;
    std::int64_t step, first;  // row r: rotated left by (first + step·r) mod n elements
  };
  for (const Kind& k : {Kind{&sm_row, &b.y_softmax, 1, 0}, Kind{&lsm_row, &b.y_log_softmax, 1, 0},
                        Kind{&dy_row, &b.dy, 2, 1}}) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::size_t at = static_cast<std::size_t>((k.first + k.step * r) % n) * esize, len = un * esize;
      unsigned char* d = host.data() + static_cast<std::size_t>(r) * len;
      std::memcpy(d, k.row->data() + at, len - at);
      std::memcpy(d + (len - at), k.row->data(), at);
    }
    for (int c = 0; c < copies; ++c) {
      void* p = nullptr;
      SMK_CUDA_CHECK(cudaMalloc(&p, bytes));
      if (c == 0) SMK_CUDA_CHECK(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice));
      else SMK_CUDA_CHECK(cudaMemcpy(p, k.dst->front(), bytes, cudaMemcpyDeviceToDevice));
      k.dst->push_back(p);
    }
  }
  SMK_CUDA_CHECK(cudaMalloc(&b.out, bytes));
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&b.stats), 2 * sizeof(float) * static_cast<std::size_t>(rows)));
  return b;
}
void free_buffers(Buffers& b) {
  for (void* p : b.in) cudaFree(p);
  for (const auto* v : {&b.y_softmax, &b.y_log_softmax, &b.dy})
    for (void* p : *v) cudaFree(p);
  cudaFree(b.out);
  cudaFree(b.stats);
  b = {};
}

RowProblem problem(Op op, std::int64_t rows, std::int64_t n, DType t, const Buffers& b, int copy) {
  RowProblem p;
  p.op = op;
  p.x = b.in[static_cast<std::size_t>(copy) % b.in.size()];
  p.out = b.out;
  p.stat0 = b.stats;
  p.stat1 = b.stats + rows;
  p.x_dtype = p.out_dtype = t;
  p.rows = rows;
  p.n = n;
  p.map.rank = 1;
  p.map.size[0] = rows;
  p.map.stride[kX][0] = n;
  p.map.stride[kOut][0] = n;
  p.map.stride[kStat0][0] = 1;
  p.map.stride[kStat1][0] = 1;
  p.step[kX] = p.step[kOut] = 1;
  return p;
}

// A backward problem: y (a softmax output for softmax backward, a log-softmax output for log-softmax backward) and dy
// from make_buffers' copy `copy` (session 12's review F7: before, y and dy were two copies of the forward scores in
// [16, 24), and every f16 dx was ±inf or NaN).
RowProblem backward_problem(Op op, std::int64_t rows, std::int64_t n, DType t, const Buffers& b, int copy) {
  RowProblem p = problem(op, rows, n, t, b, copy);
  const std::vector<void*>& y = op == Op::softmax_backward ? b.y_softmax : b.y_log_softmax;
  p.x = y[static_cast<std::size_t>(copy) % y.size()];
  p.dy = b.dy[static_cast<std::size_t>(copy) % b.dy.size()];
  p.map.stride[kDy][0] = n;
  p.step[kDy] = 1;
  return p;
}

// The median of `reps` timed launches (CUDA events, µs) after three untimed ones; where `flush` is given, each timed
// launch follows a memset of flush_bytes there (few19: L2 flushed before every launch, as the bench does).
template <typename Launch>
double timed_median_us(int reps, Launch&& launch, void* flush = nullptr, std::size_t flush_bytes = 0) {
  cudaEvent_t start, stop;
  SMK_CUDA_CHECK(cudaEventCreate(&start));
  SMK_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) launch(i);
  SMK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    if (flush != nullptr) SMK_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    SMK_CUDA_CHECK(cudaEventRecord(start));
    launch(i + 3);
    SMK_CUDA_CHECK(cudaEventRecord(stop));
    SMK_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

template <typename Launch>
double median_us(const Buffers& b, int reps, Launch&& launch) {
  (void)b;
  return timed_median_us(reps, launch);
}

struct Variant {
  std::string name;
  char kind;  // 'w' warp, 'b' block/cluster, 's' split
  WarpConfig warp{};
  BlockConfig block{};
  LseStreamConfig lse{};   // lse10: kind 'l', lse_stream.cu's kernels (tune_softmax --lse10 | --lse10-ncu | --lse10-f4)
  WarpRowTuning tuning{};  // short8: warp_per_row's grid (kernels.hpp; the default: the dispatcher's)
  RowLoopTuning loop{0};   // vocab10: kind 'L' runs row_loop.cu under it; every other kind with the row loop off
  SplitRowTuning split{};  // one11: split_row's tuning for this variant (the default: the library's)
};

void report(const char* shape, DType t, Op op, const Variant& v, double us, double bytes) {
  const double tbs = bytes / (us * 1e-6) / 1e12;
  std::printf("%-14s %-5s %-11s %-26s %10.2f us %6.2f TB/s %5.1f%%\n", shape, smk::dtype_name(t),
              op == Op::softmax ? "softmax" : op == Op::logsumexp ? "logsumexp" : op == Op::log_softmax ? "log_softmax"
              : op == Op::softmax_backward ? "softmax_bwd" : op == Op::log_softmax_backward ? "logsm_bwd" : "other",
              v.name.c_str(), us, tbs, 100.0 * tbs / kCopyTBs);
  std::fflush(stdout);
}

void run_shape(std::int64_t rows, std::int64_t n, const std::vector<Variant>& variants, const std::vector<DType>& types,
               const std::vector<Op>& ops, int reps) {
  char shape[64];
  std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
  for (DType t : types) {
    Buffers b = make_buffers(rows, n, t);
    for (Op op : ops) {
      const double elems = static_cast<double>(rows) * static_cast<double>(n);
      const bool bwd = op == Op::softmax_backward || op == Op::log_softmax_backward;
      const double bytes = elems * static_cast<double>(smk::dtype_size(t)) * (bwd ? 3 : writes_rows(op) ? 2 : 1);
      for (const Variant& v : variants) {
        // More than the 512-thread kernel's launch bound (the wide kernels take up to 1024).
        if (v.kind == 'b' && v.block.threads > 512 && !v.block.wide && !v.block.dy_shared) continue;
        // The dy-shared block's prefetching form (16-bit) was removed in session 11 (review F13): a launch asking for
        // it would time the unstaged kernel under the prefetching name, so such variants are skipped.
        if (v.kind == 'b' && v.block.dy_shared && v.block.staged) continue;
        warp_row_tuning() = v.tuning;
        row_loop_tuning() = v.loop;
        split_row_tuning() = v.split;  // one11
        const double us = median_us(b, reps, [&](int i) {
          if (bwd) {
            const RowProblem p = backward_problem(op, rows, n, t, b, i);
            if (v.kind == 'w') launch_backward_warp_rows(p, v.warp, nullptr);
            else if (v.kind == 'r') launch_backward_reread_rows(p, nullptr);  // mid9: the backward read twice
            else if (v.kind == 'L') {  // vocab10: the row loop, which must serve the call
              if (!launch_backward_row_loop_rows(p, nullptr)) std::abort();
            }
            else if (v.kind == 'b') launch_backward_block_rows(p, v.block, nullptr);
            else launch_backward_split_rows(p, nullptr);
            return;
          }
          const RowProblem p = problem(op, rows, n, t, b, i);
          if (v.kind == 'w') launch_warp_rows(p, v.warp, nullptr);
          else if (v.kind == 'l') launch_lse_stream_rows(p, v.lse, nullptr);  // lse10
          else if (v.kind == 'b') launch_block_rows(p, v.block, nullptr);
          else if (v.kind == 'L') {  // vocab10: the row loop, which must serve the call
            if (!launch_row_loop_rows(p, nullptr)) std::abort();
          } else if (v.kind == 'c') {  // vocab10: cluster_stage
            if (!launch_cluster_stage_rows(p, nullptr)) std::abort();
          } else {
            launch_split_rows(p, nullptr);
          }
        });
        report(shape, t, op, v, us, bytes);
      }
      row_loop_tuning() = RowLoopTuning{};
    }
    free_buffers(b);
  }
}

Variant warp(int elems, int lanes) {
  return {"warp E" + std::to_string(elems) + " L" + std::to_string(lanes), 'w', {elems, lanes}, {}};
}
Variant block(int threads, int cluster, bool staged = false) {
  return {"block T" + std::to_string(threads) + " C" + std::to_string(cluster) + (staged ? " staged" : ""), 'b', {},
          {threads, cluster, staged}};
}
// The smallest block size (multiple of 32) that holds n with `cluster` blocks.
Variant fit(std::int64_t n, int cluster, bool staged = false) {
  const std::int64_t per = (n + std::int64_t{cluster} * kBlockElems - 1) / (std::int64_t{cluster} * kBlockElems);
  return block(static_cast<int>(std::max<std::int64_t>(32, (per + 31) / 32 * 32)), cluster, staged);
}
// The dispatcher's cluster size for n (softmax_cuda.cpp cluster_config: blocks of ~kClusterTargetThreads = 192).
int dispatch_cluster(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + 192 * kBlockElems - 1) / (192 * kBlockElems), 2, 16));
}
Variant split() { return {"split", 's', {}, {}}; }
// tma14's (split15 moved it out of tma14_mode for split15_mode): the forward inputs alone (make_buffers also fills
// the backward's, which at 4096x151936 costs seconds of host time a dtype): 2^24 scores of make_buffers' distribution
// on the host, repeated across the first copy on the device, then that copy duplicated, as many copies as make_buffers
// takes (>= 512 MB in all, at least two). gauss (split15b): scores 3·N(0, 1) instead (Box-Muller on next_uniform),
// whose largest of a chunk is rarely tied, where the uniform scores' 16-bit values tie the chunk max in most warps.
Buffers forward_buffers(std::int64_t rows, std::int64_t n, DType t, bool gauss = false) {
  const std::size_t es = smk::dtype_size(t), elems = static_cast<std::size_t>(rows * n);
  const std::size_t bytes = elems * es, chunk = std::min<std::size_t>(elems, std::size_t{1} << 24);
  const int copies = static_cast<int>(std::clamp<std::size_t>((512u << 20) / bytes, 2, 64));
  std::vector<unsigned char> host(chunk * es);
  for (std::size_t i = 0; i < chunk; ++i) {
    float v = 8.0f * next_uniform() - 4.0f + 20.0f;
    if (gauss) {
      const float u1 = std::max(next_uniform(), 1e-7f), u2 = next_uniform();
      v = 3.0f * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
    if (t == DType::f32) {
      std::memcpy(host.data() + 4 * i, &v, 4);
    } else if (t == DType::f16) {  // session 19: f16 buffers held bf16's bits before (finite, other values)
      const auto h = smk::to_half(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    } else {
      const auto h = smk::to_bfloat16(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    }
  }
  Buffers b;
  for (int c = 0; c < copies; ++c) {
    void* p = nullptr;
    SMK_CUDA_CHECK(cudaMalloc(&p, bytes));
    if (c == 0) {
      for (std::size_t at = 0; at < bytes; at += host.size())
        SMK_CUDA_CHECK(cudaMemcpy(static_cast<unsigned char*>(p) + at, host.data(),
                                  std::min(host.size(), bytes - at), cudaMemcpyHostToDevice));
    } else {
      SMK_CUDA_CHECK(cudaMemcpy(p, b.in.front(), bytes, cudaMemcpyDeviceToDevice));
    }
    b.in.push_back(p);
  }
  SMK_CUDA_CHECK(cudaMalloc(&b.out, bytes));
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&b.stats), 2 * sizeof(float) * static_cast<std::size_t>(rows)));
  return b;
}

// tma14 (session 14, issue 3; docs/perf-notebook.md "tma14"): split_row as the dispatcher calls it (the library's
// row-loop rule, the one-launch kernel where it serves) with its compact chunk pass on the kernel before
// (chunk_states_plain_kernel, one block a chunk, its L2 prefetch 132 ahead: "plain") or on chunk_states_tma_kernel
// (chunk_tma.cuh: a persistent grid, the chunks staged in shared memory by bulk copies, 2 / 3 / 4 stages; "+L2 1g":
// also prefetching into L2 the chunk one grid past the last one staged, idx + (stages + 1)·grid, since split15; tma14's
// run prefetched idx + grid, a chunk a bulk copy already fetched, so its "+L2 1g" line timed only the prefetch's cost:
// session 14's review F5). Softmax, log-softmax and logsumexp at 1x16777216,
// 4x4194304, 1x151936, 32x128256 (forward ops), logsumexp at 4096x151936 (the one op the three kernels serve there);
// f32 and bf16. Each case: the variants in `rounds` alternating rounds, median of `reps` launches over rotated inputs
// (the L2 does not hold them); then every variant's output on copy 0 (poisoned with 0xFF first) compared byte for byte
// with the plain kernel's ("same bits" / "DIFFERS"), and whether the TMA kernel ran (its launch count).
// --tma14-ncu: one softmax launch at 1x16777216 f32 and bf16, plain then 2 stages, for Nsight Compute.
// --tma14b: the rule's thresholds (split_row.cu kChunkTmaMinChunksF32 / 16): logsumexp at 128 ... 2048 x 151936
// (1664 ... 26624 chunks) and softmax at 1x16777216, plain beside 2 stages and the library's rule ("default"), as
// above. (Its run timed the rule before it was narrowed to logsumexp / state and split by dtype.)
int tma14_mode(bool ncu, bool rule) {
  struct V14 {
    const char* name;
    int stages, ahead;  // ChunkTmaTuning (0 stages: the plain kernel; -1 the library's rule)
  };
  const std::vector<V14> vs =
      rule ? std::vector<V14>{{"plain (before)", 0, 0}, {"tma 2", 2, 0}, {"default (rule)", -1, 0}}
           : std::vector<V14>{{"plain (before)", 0, 0}, {"tma 2", 2, 0}, {"tma 3", 3, 0}, {"tma 4", 4, 0},
                              {"tma 2 +L2 1g", 2, -1}};
  const std::vector<DType> types = {DType::f32, DType::bf16};
  auto set = [](const V14& v) {
    split_row_tuning() = {};
    row_loop_tuning() = {};  // the library's row-loop rule, as the dispatcher runs split_row
    ChunkTmaTuning& t = split_row_chunk_tma();
    t = {};
    t.stages_f32 = t.stages_16 = v.stages;
    t.ahead = v.ahead;
  };
  const auto fwd_buffers = [](std::int64_t rows, std::int64_t n, DType t) { return forward_buffers(rows, n, t); };
  if (ncu) {
    for (DType t : types) {
      Buffers b = fwd_buffers(1, 16777216, t);
      for (const V14& v : {vs[0], vs[1]}) {
        set(v);
        launch_split_rows(problem(Op::softmax, 1, 16777216, t, b, 0), nullptr);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
      }
      free_buffers(b);
    }
    split_row_chunk_tma() = {};
    return 0;
  }
  auto time14 = [&](std::int64_t rows, std::int64_t n, const std::vector<Op>& ops, int reps, int rounds) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    for (DType t : types) {
      Buffers b = fwd_buffers(rows, n, t);
      const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
      for (Op op : ops) {
        const double bytes =
            static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t)) *
            (writes_rows(op) ? 2 : 1);
        for (int round = 0; round < rounds; ++round) {
          for (const V14& v : vs) {
            set(v);
            const std::uint64_t ran = split_chunk_tma_launch_count();
            const double us =
                median_us(b, reps, [&](int i) { launch_split_rows(problem(op, rows, n, t, b, i), nullptr); });
            const bool tma = split_chunk_tma_launch_count() != ran;
            report(shape, t, op, Variant{std::string(v.name) + (tma ? "" : " [not staged]"), 's'}, us, bytes);
          }
        }
        // The bits: each variant's outputs (rows or stats) on copy 0 against the plain kernel's.
        const std::size_t got_bytes = writes_rows(op) ? out_bytes : 2 * sizeof(float) * static_cast<std::size_t>(rows);
        void* dst = writes_rows(op) ? b.out : static_cast<void*>(b.stats);
        std::vector<unsigned char> ref(got_bytes), got(got_bytes);
        for (std::size_t k = 0; k < vs.size(); ++k) {
          set(vs[k]);
          SMK_CUDA_CHECK(cudaMemset(dst, 0xFF, got_bytes));
          launch_split_rows(problem(op, rows, n, t, b, 0), nullptr);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          SMK_CUDA_CHECK(cudaMemcpy(k == 0 ? ref.data() : got.data(), dst, got_bytes, cudaMemcpyDeviceToHost));
          if (k > 0)
            std::printf("%-14s %-5s %-11s %-26s %s\n", shape, smk::dtype_name(t),
                        op == Op::softmax ? "softmax" : op == Op::logsumexp ? "logsumexp" : "log_softmax", vs[k].name,
                        std::memcmp(ref.data(), got.data(), got_bytes) == 0 ? "same bits" : "DIFFERS");
        }
      }
      free_buffers(b);
    }
  };
  const std::vector<Op> fwd = {Op::softmax, Op::log_softmax, Op::logsumexp};
  if (rule) {
    time14(1, 16777216, {Op::softmax}, 21, 2);
    for (std::int64_t rows : {128, 512, 1024, 2048}) time14(rows, 151936, {Op::logsumexp}, rows >= 1024 ? 9 : 21, 2);
  } else {
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}, {1, 151936},
                                  {32, 128256}})
      time14(rows, n, fwd, 21, 2);
    time14(4096, 151936, {Op::logsumexp}, 5, 2);
  }
  split_row_tuning() = {};
  split_row_chunk_tma() = {};
  return 0;
}
// vocab10: row_loop.cu at `per_sm` blocks an SM (0: its occupancy, 2), with or without its cache hints.
Variant row_loop(int per_sm, bool hints) {
  Variant v{"row_loop " + std::to_string(per_sm == 0 ? 2 : per_sm) + "/SM" + (hints ? " hints" : ""), 'L', {}, {}};
  v.loop = RowLoopTuning{1, per_sm, 0, hints};
  return v;
}
// short8 (session 8): warp_per_row at E, L on a grid of up to `grid` times the resident blocks (0: persistent).
Variant warpg(int elems, int lanes, int grid) {
  Variant v = warp(elems, lanes);
  v.name += " g" + std::to_string(grid);
  v.tuning.grid = grid;
  return v;
}
// short9 (session 9): warp_per_row at E elements and L lanes on a grid of up to `grid` times the resident blocks (0
// persistent, 8 the f32 dispatcher's), set in the configuration as the dispatcher sets it.
Variant wv(int elems, int lanes, int grid) {
  Variant v = warpg(elems, lanes, grid);
  v.warp.grid = grid;
  v.tuning.grid = -1;
  return v;
}
// bw16: the wide block forward (32 elements a thread, staged or not) and the backward's wide blocks (16 + 16 in
// registers, or y's 32 in registers and dy in shared memory, prefetching the next row or not).
Variant wide(std::int64_t n, bool staged) {
  Variant v = block(static_cast<int>(std::max<std::int64_t>(32, ((n + kWideBlockElems - 1) / kWideBlockElems + 31) / 32 * 32)),
                    1, staged);
  v.name = std::string("wide T") + std::to_string(v.block.threads) + (staged ? " staged" : "");
  v.block.wide = true;
  return v;
}
// mid16: the 512-thread block_per_row lane-staged (BlockConfig::lane_stages: `stages` rows ahead in shared memory).
Variant lane(std::int64_t n, int stages) {
  Variant v = fit(n, 1);
  v.name += " lane" + std::to_string(stages);
  v.block.lane_stages = stages;
  return v;
}
// mid8: logsumexp / the state on block_per_row with the next rows' loads in flight in registers (BlockConfig::ahead),
// from the dispatcher's block for n (the 512-thread block to 12288, the wide block above).
Variant direct(std::int64_t n) { return n > 12288 ? wide(n, false) : fit(n, 1); }
Variant ahead(std::int64_t n, int rows, bool evict_first) {
  Variant v = direct(n);
  v.name += rows == kAheadReread ? std::string(" reread") : " ahead" + std::to_string(rows) + (evict_first ? " ef" : "");
  v.block.ahead = rows;
  v.block.evict_first = evict_first;
  return v;
}
Variant bwide16(std::int64_t n) {
  Variant v = block(static_cast<int>(((n + kBackwardWideBlockElems - 1) / kBackwardWideBlockElems + 31) / 32 * 32), 1);
  v.name = "bwd wide16 T" + std::to_string(v.block.threads);
  v.block.wide = true;
  return v;
}
Variant bshared(std::int64_t n, bool prefetch) {
  Variant v = block(static_cast<int>(((n + kBackwardWideSharedElems - 1) / kBackwardWideSharedElems + 31) / 32 * 32), 1,
                    prefetch);
  v.name = "bwd dy-shared T" + std::to_string(v.block.threads) + (prefetch ? " prefetch" : "");
  v.block.dy_shared = true;
  return v;
}
Variant bcluster_old(std::int64_t n) {  // the dispatcher's cluster_row backward before bw16 (blocks of ~192 threads)
  const int cluster =
      static_cast<int>(std::clamp<std::int64_t>((n + 192 * kBackwardBlockElems - 1) / (192 * kBackwardBlockElems), 2, 16));
  const std::int64_t per = (n + std::int64_t{cluster} * kBackwardBlockElems - 1) / (std::int64_t{cluster} * kBackwardBlockElems);
  Variant v = block(static_cast<int>(std::max<std::int64_t>(32, (per + 31) / 32 * 32)), cluster);
  v.name = "bwd cluster C" + std::to_string(cluster) + " T" + std::to_string(v.block.threads);
  return v;
}

// lse10 (session 10): lse_stream.cu's kernels, 16 lanes a row (lanes 16) or one block of 128 threads a row (lanes 0,
// threads 128): the two configurations built since the session 10 review's F3.
Variant lse_stream(int lanes, int threads) {
  Variant v{lanes > 0 ? "stream L" + std::to_string(lanes) : "stream T" + std::to_string(threads), 'l', {}, {}};
  v.lse.lanes = lanes;
  v.lse.threads = threads;
  return v;
}
// The dispatcher's kernel for logsumexp / the state before lse10 (softmax_cuda.cpp at 2280faa: warp_config,
// block_row_config, wide_row_pipeline_pays, block_lane_stages, block_ahead_rows), named "default".
Variant old_default(std::int64_t n, DType t) {
  Variant v;
  const bool half = t != DType::f32;
  if (n <= 1024) {
    const std::int64_t target = (half ? 64 : 128) / static_cast<std::int64_t>(smk::dtype_size(t));
    int lanes = 1;
    while (lanes < 32 && lanes * target < n) lanes *= 2;
    int elems = 4;
    while (elems < 32 && std::int64_t{elems} * lanes < n) elems *= 2;
    v = warp(elems, lanes);
  } else if (n > 16384) {
    v = wide(n, true);
  } else if (n > 12288) {
    v = half ? ahead(n, 1, false) : direct(n);
  } else {
    v = fit(n, 1);
    if (half && n >= 7168) v.block.lane_stages = 1;
    if (half ? n >= 1537 && n <= 10240 : n >= 6145 && n <= 10240) v.block.ahead = kAheadReread;
  }
  // ahead() names its rows ahead already; fit()'s re-read and lane stages are named here.
  v.name = "default " + v.name + (n <= 12288 && v.block.ahead == kAheadReread ? " reread" : "") +
           (v.block.lane_stages > 0 ? " lane1" : "");
  return v;
}

// pack14's and bwd16's report of their timings: for every variant of vs, then the first one again (" (last)"), the
// median of its rounds us[i] (report's line), then those rounds in the order timed and their spread. us holds
// vs.size() + 1 lists.
template <typename V>
void report_rounds(const char* shape, DType t, Op op, const std::vector<V>& vs,
                   const std::vector<std::vector<double>>& us, double bytes) {
  for (std::size_t i = 0; i <= vs.size(); ++i) {
    std::vector<double> u = us[i];
    std::sort(u.begin(), u.end());
    const V& v = vs[i == vs.size() ? 0 : i];
    report(shape, t, op, Variant{v.name + (i == vs.size() ? " (last)" : ""), 'w'}, u[u.size() / 2], bytes);
    std::printf("  rounds");
    for (double x : us[i]) std::printf(" %.2f", x);
    std::printf(" (spread %.2f%%)\n", 100.0 * (u.back() - u.front()) / u[u.size() / 2]);
  }
}

// pack14's and bwd16's bits: for each of `count` variants in turn, out's out_bytes poisoned with 0xFF, launch(i) (on
// copy 0), then out copied back; compare(i, ref, got) for each i > 0 (ref: variant 0's bytes, got: variant i's).
template <typename Launch, typename Compare>
void bits_against_first(void* out, std::size_t out_bytes, std::size_t count, Launch&& launch, Compare&& compare) {
  std::vector<unsigned char> ref(out_bytes), got(out_bytes);
  for (std::size_t i = 0; i < count; ++i) {
    SMK_CUDA_CHECK(cudaMemset(out, 0xFF, out_bytes));
    launch(i);
    SMK_CUDA_CHECK(cudaMemcpy(i == 0 ? ref.data() : got.data(), out, out_bytes, cudaMemcpyDeviceToHost));
    if (i == 0) continue;
    compare(i, ref, got);
  }
}

// pack14 (session 14, issue 3; docs/perf-notebook.md "pack14"): the 16-bit backward passes at rows of 32 / 64 / 128
// (the packed warp kernel: rows of 32 at E8 L4 beside E16 L2; 64 at E16 L4 on the persistent grid beside the grid of 8;
// 128 at E32 L4, the dispatcher's before pack14, beside E16 L8 and E8 L16; 100, not dense: the unpacked kernel at E32
// L4, E16 L8 and E8 L16), 1024 (the dispatcher's alone: a regression check), 4096 / 8192 / 16384 (the dy-shared
// block unpacked beside its packed form at 3 blocks of 512 threads an SM and the re-read kernel) and 32000 (the re-read kernel
// alone), bf16 and f16 (the f16 backward re-timed on sane inputs: review F7 of session 12), softmax and log-softmax
// backward. Each case: the variants in `rounds` alternating rounds, the first one timed first and last in each round,
// median of `reps` launches a timing over rotated inputs; then every variant's dx on copy 0 (outputs poisoned with 0xFF
// first) compared byte for byte with the first one's: "same bits" or "differs" (the 16-bit outputs round away most
// differences in the sum's last bits: "same bits" here does not show one summation order). The run of 600c491's kernels
// also timed the packed warp kernel's E16 build at 8 blocks an SM and the packed dy-shared block at 4 (both removed).
// --pack14 quick: the rows pack14's rule changed only (64, 100, 128, 4096, 16384). --pack14-ncu: one launch each of
// the 16384×4096 bf16 softmax backward kernels, for Nsight Compute.
int pack14_mode(bool ncu, bool quick) {
  struct V14 {
    std::string name;
    char kind;  // 'w' warp_per_row, 'b' the dy-shared block, 'r' the re-read kernel
    WarpConfig warp{};
    int shared_blocks = 0;  // BackwardPackedTuning::shared_blocks (0: the unpacked dy-shared block)
    BlockConfig block{};    // 'b': the dispatcher's dy-shared block for n (bshared)
  };
  auto launch = [](const V14& v, const RowProblem& p) {
    backward_packed_tuning() = {v.shared_blocks};
    warp_row_tuning() = {};
    if (v.kind == 'w') launch_backward_warp_rows(p, v.warp, nullptr);
    else if (v.kind == 'r') launch_backward_reread_rows(p, nullptr);
    else launch_backward_block_rows(p, v.block, nullptr);
  };
  // Whether the kernel named served the launch: the packed warp kernel, or the packed dy-shared form at its blocks.
  auto served = [](const V14& v) {
    if (v.kind == 'w') return !v.warp.packed || warp_backward_last().packed.load();
    if (v.kind == 'b') return backward_packed_last().shared_blocks.load() == v.shared_blocks;
    return true;
  };
  if (ncu) {
    Buffers b = make_buffers(16384, 4096, DType::bf16);
    const BlockConfig c = bshared(4096, false).block;
    for (const V14& v :
         {V14{"dy-shared", 'b', {}, 0, c}, V14{"dy-shared packed 3", 'b', {}, 3, c}, V14{"re-read", 'r'}})
      launch(v, backward_problem(Op::softmax_backward, 16384, 4096, DType::bf16, b, 0));
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    backward_packed_tuning() = {};
    return 0;
  }
  const int rounds = 3, reps = 40;
  struct Shape {
    std::int64_t rows, n;
  };
  for (const Shape& sh : {Shape{1048576, 32}, Shape{524288, 64}, Shape{262144, 128}, Shape{262144, 100},
                          Shape{32768, 1024}, Shape{16384, 4096}, Shape{8192, 8192}, Shape{4096, 16384},
                          Shape{8192, 32000}}) {
    const std::int64_t rows = sh.rows, n = sh.n;
    if (quick && (n == 32 || n == 1024 || n == 8192 || n == 32000)) continue;
    std::vector<V14> vs;
    auto w = [](int e, int l, int g) { return WarpConfig{e, l, g, true}; };
    if (n == 32) {
      vs = {{"default E8 L4 g8 packed8", 'w', w(8, 4, 8)}, {"E16 L2 g8 packed6", 'w', w(16, 2, 8)}};
    } else if (n == 64) {
      vs = {{"before E16 L4 g0 packed6", 'w', w(16, 4, 0)}, {"E16 L4 g8 packed6 (pack14)", 'w', w(16, 4, 8)}};
    } else if (n == 128) {  // E32 L4 the dispatcher's before pack14, E8 L16 after it
      vs = {{"before E32 L4 g8 packed4", 'w', w(32, 4, 8)}, {"E16 L8 g8 packed6", 'w', w(16, 8, 8)},
            {"E8 L16 g8 packed8 (pack14)", 'w', w(8, 16, 8)}};
    } else if (n == 100) {  // not dense: the unpacked kernel at E32 L4 before pack14, E8 L16 after it (65..127)
      vs = {{"before E32 L4 g0", 'w', WarpConfig{32, 4, 0}}, {"E16 L8 g0", 'w', WarpConfig{16, 8, 0}},
            {"E8 L16 g0 (pack14)", 'w', WarpConfig{8, 16, 0}}};
    } else if (n == 1024) {
      vs = {{"default E32 L32 g8 packed4", 'w', w(32, 32, 8)}};
    } else if (n <= 16384) {
      const BlockConfig c = bshared(n, false).block;
      vs = {{"before dy-shared T" + std::to_string(c.threads), 'b', {}, 0, c},
            {"dy-shared packed 3 (pack14)", 'b', {}, 3, c}, {"re-read", 'r'}};
    } else {
      vs = {{"default re-read", 'r'}};
    }
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    for (DType t : {DType::bf16, DType::f16}) {
      Buffers b = make_buffers(rows, n, t);
      const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
      const double bytes = 3.0 * static_cast<double>(out_bytes);
      for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
        // Timings: the default first and last in each round.
        std::vector<std::vector<double>> us(vs.size() + 1);
        for (int r = 0; r < rounds; ++r)
          for (std::size_t i = 0; i <= vs.size(); ++i) {
            const V14& v = vs[i == vs.size() ? 0 : i];
            us[i].push_back(median_us(b, reps, [&](int k) { launch(v, backward_problem(op, rows, n, t, b, k)); }));
            if (!served(v)) {
              std::printf("pack14: %s did not take the kernel asked for\n", v.name.c_str());
              return 1;
            }
          }
        report_rounds(shape, t, op, vs, us, bytes);
        // Bits: every variant's dx on copy 0 beside the default's.
        bits_against_first(
            b.out, out_bytes, vs.size(), [&](std::size_t i) { launch(vs[i], backward_problem(op, rows, n, t, b, 0)); },
            [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
              std::size_t diff = 0;
              if (std::memcmp(ref.data(), got.data(), out_bytes) != 0)
                for (std::size_t j = 0; j < out_bytes; j += 2) diff += std::memcmp(&ref[j], &got[j], 2) != 0;
              std::printf("bits %s %s %s %s: %s (%zu of %zu elements differ)\n", shape, smk::dtype_name(t),
                          op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", vs[i].name.c_str(),
                          diff == 0 ? "same bits" : "differs", diff, out_bytes / 2);
            });
      }
      free_buffers(b);
    }
  }
  backward_packed_tuning() = {};
  return 0;
}

// short14 (session 14, docs/perf-notebook.md "(session 14) — short14"): the f32 forward ops on rows of 32 ... 1024
// (2^25 elements) at the dispatcher's configuration ("default": warp_rows_kernel on the grid of 8 for softmax and
// log-softmax, the persistent grid for logsumexp, lse_stream L16 for logsumexp at 1024) beside warp_rows_occ_kernel
// (warp_row.cu, warp_occ.hpp: blocks of 64 threads, one row group a warp) at the same lanes and elements (the same
// bits) at 24 blocks an SM (E32 at 16). Two rounds of every variant in turn, median of 30 each: the two rounds of one
// kernel are its spread. --short14-ncu: one launch of each at 1048576x32 and 262144x128 (softmax). (The run of
// 6ea8c47 timed E16 at 28 blocks and E4 at 16 / 24 too: slower everywhere, not built since.)
int short14(bool ncu) {
  struct V {
    Variant v;
    int blocks;  // > 0: warp_rows_occ_kernel at that many blocks an SM
  };
  using Shape = std::pair<std::int64_t, std::int64_t>;
  const std::vector<Shape> shapes =
      ncu ? std::vector<Shape>{{1048576, 32}, {262144, 128}}
          : std::vector<Shape>{{1048576, 32}, {524288, 64}, {262144, 128}, {131072, 256}, {65536, 512}, {32768, 1024}};
  const DType t = DType::f32;
  for (const auto& [rows, n] : shapes) {
    Buffers b = make_buffers(rows, n, t);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
      if (ncu && op != Op::softmax) continue;
      const bool lse = op == Op::logsumexp;
      // The dispatcher's (softmax_cuda.cpp warp_config, lse_stream_config).
      const int e = n == 1024 || (lse && n >= 128) ? 32 : 16;
      Variant def = lse && n == 1024 ? lse_stream(16, 0) : wv(e, static_cast<int>(n) / e, lse ? 0 : 8);
      def.name = "default " + def.name;
      std::vector<V> vs = {{def, 0}};
      auto occ = [&](int elems, int blocks) {
        Variant v = wv(elems, static_cast<int>(n) / elems, 0);
        v.name = "occ E" + std::to_string(elems) + " L" + std::to_string(n / elems) + " b" + std::to_string(blocks);
        vs.push_back({v, blocks});
      };
      if (n <= 512) occ(16, 24);
      if (n == 1024 && op == Op::softmax) occ(32, 16);
      const double bytes = static_cast<double>(rows) * static_cast<double>(n) * 4.0 * (writes_rows(op) ? 2 : 1);
      for (int round = 0; round < (ncu ? 1 : 2); ++round)
        for (const V& v : vs) {
          warp_row_tuning() = v.v.tuning;
          auto launch = [&](int i) {
            const RowProblem p = problem(op, rows, n, t, b, i);
            if (v.blocks > 0) {
              if (!launch_warp_rows_occ(p, v.v.warp, v.blocks, nullptr)) std::abort();
            } else if (v.v.kind == 'w') {
              launch_warp_rows(p, v.v.warp, nullptr);
            } else {
              launch_lse_stream_rows(p, v.v.lse, nullptr);
            }
          };
          if (ncu) {  // one launch, outside any timing
            launch(0);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            std::printf("ncu launch: %s f32 softmax %s\n", shape, v.v.name.c_str());
            continue;
          }
          Variant named = v.v;
          named.name += round == 0 ? " (1)" : " (2)";
          report(shape, t, op, named, median_us(b, 30, launch), bytes);
        }
    }
    free_buffers(b);
  }
  warp_row_tuning() = {};
  return 0;
}

// short15's and short16's warp-row variants: each a Variant and, > 0, warp_rows_occ_kernel at that many blocks an SM
// (0: the dispatcher's warp kernel with the Variant's configuration). warp_variants_timed launches one of each for
// Nsight Compute (ncu) or times `rounds` rounds of every variant in turn (median of 30 each, named " (round)");
// warp_variants_bits compares each variant's output (dst's out_bytes, poisoned with 0xFF first, on copy 0) byte for
// byte with the first one's and returns how many differ. `label` names the op in the lines printed.
using WarpVariants = std::vector<std::pair<Variant, int>>;
template <typename Launch>
void warp_variants_timed(bool ncu, int rounds, const char* shape, DType t, Op op, const char* label, const Buffers& b,
                         const WarpVariants& vs, Launch&& launch_v, double bytes) {
  if (ncu) {  // one launch each, outside any timing
    for (const auto& v : vs) {
      warp_row_tuning() = v.first.tuning;
      launch_v(v, 0);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("ncu launch: %s %s %s %s\n", shape, smk::dtype_name(t), label, v.first.name.c_str());
    }
    return;
  }
  for (int round = 0; round < rounds; ++round)
    for (const auto& v : vs) {
      warp_row_tuning() = v.first.tuning;
      Variant named = v.first;
      named.name += " (" + std::to_string(round + 1) + ")";
      report(shape, t, op, named, median_us(b, 30, [&](int i) { launch_v(v, i); }), bytes);
    }
}
template <typename Launch>
int warp_variants_bits(const char* shape, DType t, const char* label, const WarpVariants& vs, Launch&& launch_v,
                       void* dst, std::size_t out_bytes) {
  int differs = 0;
  bits_against_first(
      dst, out_bytes, vs.size(),
      [&](std::size_t k) {
        warp_row_tuning() = vs[k].first.tuning;
        launch_v(vs[k], 0);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
      },
      [&](std::size_t k, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
        const bool same = ref == got;
        differs += !same;
        std::printf("%-14s %-5s %-11s %-26s %s\n", shape, smk::dtype_name(t), label, vs[k].first.name.c_str(),
                    same ? "same bits" : "DIFFERS");
      });
  return differs;
}

// short15 (session 15, docs/perf-notebook.md "(session 15) — short15"): the forward ops where torch.compile was ahead
// in compare-s14, 2^25 elements a shape: 16-bit softmax at 64 ... 1024 (bf16; f16 at 128 and 1024) at the kernels
// before short15's rule ("default": the general kernel E32 with the tier's terms at 64 ... 512, warp_rows_dense_kernel
// at 1024; persistent grids) beside warp_rows_occ_kernel at the same lanes and elements (the same bits) at 20 blocks an
// SM (the dispatcher's from 128 since short15); f32 softmax and log-softmax at 1048576x32 (E16 L2 on the grid of 8)
// beside the occupancy kernel at 24 blocks (short14's form). Two rounds of every variant in turn, median of 30 each
// (the two rounds of one kernel are its spread); then each variant's output on copy 0 (poisoned with 0xFF first)
// compared byte for byte with the default's ("same bits" / "DIFFERS"). --short15-ncu: one launch of each bf16 variant
// at 262144x128 and 32768x1024, for Nsight Compute. (The run of 4db3464 timed 128 / 512 / 1024 with also 16-bit
// softmax at 16 blocks, 16-bit log-softmax at 16 beside the packed kernel, and f32 E16 with two row groups a warp at
// 16 blocks: their code is in 4db3464.)
int short15(bool ncu) {
  struct Shape {
    DType t;
    std::int64_t rows, n;
  };
  const std::vector<Shape> shapes =
      ncu ? std::vector<Shape>{{DType::bf16, 262144, 128}, {DType::bf16, 32768, 1024}}
          : std::vector<Shape>{{DType::f32, 1048576, 32},  {DType::bf16, 524288, 64}, {DType::bf16, 262144, 128},
                               {DType::bf16, 131072, 256}, {DType::bf16, 65536, 512}, {DType::bf16, 32768, 1024},
                               {DType::f16, 262144, 128},  {DType::f16, 32768, 1024}};
  int differs = 0;
  for (const Shape& sh : shapes) {
    const auto [t, rows, n] = sh;
    Buffers b = make_buffers(rows, n, t);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
    for (Op op : {Op::softmax, Op::log_softmax}) {
      const bool f32 = t == DType::f32;
      if ((ncu || !f32) && op != Op::softmax) continue;
      // The dispatcher's kernels before short15's rule (softmax_cuda.cpp warp_config, warp_dense_rule).
      const int e = f32 ? 16 : 32;
      Variant def = wv(e, static_cast<int>(n) / e, f32 ? 8 : 0);
      def.warp.packed = !f32 && op == Op::log_softmax;
      def.warp.dense = !f32 && op == Op::softmax && n == 1024;
      def.name = std::string("default ") + (def.warp.packed ? "packed " : def.warp.dense ? "dense " : "") + def.name;
      WarpVariants vs = {{def, 0}};
      Variant occ = wv(e, static_cast<int>(n) / e, 0);
      occ.name = "occ E" + std::to_string(e) + " L" + std::to_string(n / e) + " b" + (f32 ? "24" : "20");
      vs.push_back({occ, f32 ? 24 : 20});
      const auto launch_v = [&](const std::pair<Variant, int>& v, int i) {
        const RowProblem p = problem(op, rows, n, t, b, i);
        if (v.second > 0) {
          if (!launch_warp_rows_occ(p, v.first.warp, v.second, nullptr)) std::abort();
        } else {
          launch_warp_rows(p, v.first.warp, nullptr);
        }
      };
      const double bytes = static_cast<double>(rows) * static_cast<double>(n) * 2.0 * smk::dtype_size(t);
      const char* label = op == Op::softmax ? "softmax" : "log_softmax";
      warp_variants_timed(ncu, 2, shape, t, op, label, b, vs, launch_v, bytes);
      if (ncu) continue;
      differs += warp_variants_bits(shape, t, label, vs, launch_v, b.out, out_bytes);
    }
    free_buffers(b);
  }
  warp_row_tuning() = {};
  std::printf("short15: %d variant(s) differ from the default\n", differs);
  return differs == 0 ? 0 : 1;
}

// short16 (session 16, docs/perf-notebook.md "(session 16) — short16"): the 16-bit log ops where torch.compile was
// ahead in compare-s15, 2^25 elements a shape: log-softmax at 32 ... 1024 and logsumexp at 32 ... 512 (1024 takes
// lse_stream), bf16 (f16 log-softmax at 32, 128, 1024), at the dispatcher's kernels before short16's rule ("default":
// warp_config's lanes and elements, packed where warp_packed_rule says (log-softmax at 64 unpacked), the persistent
// grid) beside warp_rows_packed_kernel at the occupancy kernel's blocks of 64 threads and grid at E32, 24 blocks an SM
// (warp_row.cu occ_built; log-softmax's rows of 32, E16, have no occupancy form: default only), the same bits. Three
// rounds of every variant in turn, median of 30 each (the rounds of one kernel are its spread); then each variant's
// output on copy 0 (poisoned with 0xFF first) compared byte for byte with the default's ("same bits" / "DIFFERS").
// --short16-ncu: one launch of each at bf16 262144x128 and 32768x1024 log-softmax, for Nsight Compute. (The run of
// 3374352 timed E32 at 16 and 20 and E16 at 24 and 32 blocks too: their code is in 3374352.)
int short16(bool ncu) {
  struct Shape {
    DType t;
    std::int64_t rows, n;
    bool lse;  // logsumexp too
  };
  const std::vector<Shape> shapes =
      ncu ? std::vector<Shape>{{DType::bf16, 262144, 128, false}, {DType::bf16, 32768, 1024, false}}
          : std::vector<Shape>{{DType::bf16, 1048576, 32, true}, {DType::bf16, 524288, 64, true},
                               {DType::bf16, 262144, 128, true}, {DType::bf16, 131072, 256, true},
                               {DType::bf16, 65536, 512, true},  {DType::bf16, 32768, 1024, false},
                               {DType::f16, 1048576, 32, false}, {DType::f16, 262144, 128, false},
                               {DType::f16, 32768, 1024, false}};
  int differs = 0;
  for (const Shape& sh : shapes) {
    const auto [t, rows, n, lse] = sh;
    Buffers b = forward_buffers(rows, n, t);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    for (Op op : {Op::log_softmax, Op::logsumexp}) {
      if (op == Op::logsumexp && !lse) continue;
      const bool rows_out = op == Op::log_softmax;
      // The dispatcher's configuration before short16 (softmax_cuda.cpp warp_config, warp_packed_rule).
      const int e = rows_out && n <= 32 ? 16 : 32;
      const int lanes = static_cast<int>(n) / e;
      Variant def = wv(e, lanes, 0);
      def.warp.packed = !(rows_out && n == 64);
      def.name = std::string("default ") + (def.warp.packed ? "packed " : "") + def.name;
      WarpVariants vs = {{def, 0}};
      if (e == 32) {  // the occupancy kernel at 24 blocks an SM
        Variant occ = wv(e, lanes, 0);
        occ.name = "occ packed E" + std::to_string(e) + " L" + std::to_string(lanes) + " b24";
        vs.push_back({occ, 24});
      }
      auto launch_v = [&](const std::pair<Variant, int>& v, int i) {
        const RowProblem p = problem(op, rows, n, t, b, i);
        if (v.second > 0) {
          if (!launch_warp_rows_occ(p, v.first.warp, v.second, nullptr)) std::abort();
        } else {
          launch_warp_rows(p, v.first.warp, nullptr);
        }
      };
      const double bytes = static_cast<double>(rows) * static_cast<double>(n) * (rows_out ? 2.0 : 1.0) *
                           static_cast<double>(smk::dtype_size(t));
      warp_occ_tuning() = {};
      const char* label = rows_out ? "log_softmax" : "logsumexp";
      warp_variants_timed(ncu, 3, shape, t, op, label, b, vs, launch_v, bytes);
      if (ncu) continue;
      const std::size_t out_bytes = rows_out ? static_cast<std::size_t>(rows * n) * smk::dtype_size(t)
                                             : sizeof(float) * static_cast<std::size_t>(rows);
      differs += warp_variants_bits(shape, t, label, vs, launch_v, rows_out ? b.out : static_cast<void*>(b.stats),
                                    out_bytes);
    }
    free_buffers(b);
  }
  warp_row_tuning() = {};
  std::printf("short16: %d variant(s) differ from the default\n", differs);
  return differs == 0 ? 0 : 1;
}

// split15 (session 15, issue 3; docs/perf-notebook.md "split15"): split_row as the dispatcher calls it (the library's
// row-loop and TMA rules, the one-launch kernel where it serves) with the compact chunk kernels' arithmetic as before
// (split_row_chunk_lean 0: "before") and lean (1: chunk_states.cuh kLean: "lean"; the library's rule, -1, takes it
// for f32 log ops only); the same bits. bf16
// softmax's lean kernel is its kernel before (kLeanDiffers): its two lines are the noise of one kernel. Softmax,
// log-softmax and logsumexp at 1x16777216, 4x4194304, 1x151936 (the one-launch kernel: neither), 32x128256;
// logsumexp at 4096x151936 (the TMA kernel's rule; the other ops take row_loop.cu / split_stream there, neither
// changed); f32 and bf16. Each case: the two in three alternating rounds (before, lean, before, lean, ...), median of
// `reps` launches over rotated inputs; then both outputs on copy 0 (poisoned with 0xFF first) compared byte for byte
// ("same bits" / "DIFFERS"). Returns 1 if any differs.
// --split15-ncu: one launch each at 1x16777216 (f32 softmax, f32 and bf16 logsumexp), before then lean, for Nsight
// Compute's instruction counts of the chunk kernel.
// --split15b: the log ops (log-softmax, logsumexp) at 1x16777216, 4x4194304 and 4096x151936 (f32 log-softmax there:
// split_stream; bf16's: row_loop.cu, unchanged), f32 and bf16, on scores 3·N(0, 1) (forward_buffers' gauss: the chunk
// max rarely tied), as above, with the library's rule ("rule": split_row_chunk_lean -1) beside them.
int split15_mode(bool ncu, bool gauss = false) {
  if (ncu) {
    for (DType t : {DType::f32, DType::bf16}) {
      Buffers b = forward_buffers(1, 16777216, t);
      split_row_tuning() = {};
      split_row_chunk_tma() = {};
      for (Op op : {Op::softmax, Op::logsumexp}) {
        if (t == DType::bf16 && op == Op::softmax) continue;  // the same kernel before and lean
        for (int lean : {0, 1}) {
          split_row_chunk_lean() = lean;
          launch_split_rows(problem(op, 1, 16777216, t, b, 0), nullptr);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
        }
      }
      free_buffers(b);
    }
    split_row_chunk_lean() = -1;
    return 0;
  }
  int differs = 0;
  auto time15 = [&](std::int64_t rows, std::int64_t n, const std::vector<Op>& ops, int reps) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    for (DType t : {DType::f32, DType::bf16}) {
      Buffers b = forward_buffers(rows, n, t, gauss);
      const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
      split_row_tuning() = {};
      row_loop_tuning() = {};  // the library's rules, as the dispatcher runs split_row
      split_row_chunk_tma() = {};
      for (Op op : ops) {
        const char* op_s = op == Op::softmax ? "softmax" : op == Op::logsumexp ? "logsumexp" : "log_softmax";
        const double bytes =
            static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t)) *
            (writes_rows(op) ? 2 : 1);
        for (int round = 0; round < 3; ++round) {
          for (int lean : gauss ? std::vector<int>{0, 1, -1} : std::vector<int>{0, 1}) {
            split_row_chunk_lean() = lean;
            const std::uint64_t ran = split_chunk_tma_launch_count();
            const double us =
                median_us(b, reps, [&](int i) { launch_split_rows(problem(op, rows, n, t, b, i), nullptr); });
            const bool tma = split_chunk_tma_launch_count() != ran;
            const std::string name = lean < 0 ? "rule" : lean ? "lean" : "before";
            report(shape, t, op, Variant{name + (gauss ? " gauss" : "") + (tma ? " [tma]" : ""), 's'}, us, bytes);
          }
        }
        const std::size_t got_bytes = writes_rows(op) ? out_bytes : 2 * sizeof(float) * static_cast<std::size_t>(rows);
        void* dst = writes_rows(op) ? b.out : static_cast<void*>(b.stats);
        std::vector<unsigned char> got0(got_bytes), got1(got_bytes);
        for (int lean : {0, 1}) {
          split_row_chunk_lean() = lean;
          SMK_CUDA_CHECK(cudaMemset(dst, 0xFF, got_bytes));
          launch_split_rows(problem(op, rows, n, t, b, 0), nullptr);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          SMK_CUDA_CHECK(cudaMemcpy(lean ? got1.data() : got0.data(), dst, got_bytes, cudaMemcpyDeviceToHost));
        }
        const bool same = std::memcmp(got0.data(), got1.data(), got_bytes) == 0;
        differs += !same;
        std::printf("%-14s %-5s %-11s %-26s %s\n", shape, smk::dtype_name(t), op_s, "lean / before",
                    same ? "same bits" : "DIFFERS");
      }
      free_buffers(b);
    }
  };
  if (gauss) {
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}})
      time15(rows, n, {Op::log_softmax, Op::logsumexp}, 21);
    time15(4096, 151936, {Op::logsumexp, Op::log_softmax}, 9);  // f32 log-softmax: split_stream (bf16: row_loop)
  } else {
    const std::vector<Op> fwd = {Op::softmax, Op::log_softmax, Op::logsumexp};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}, {1, 151936},
                                  {32, 128256}})
      time15(rows, n, fwd, 21);
    time15(4096, 151936, {Op::logsumexp}, 9);
  }
  split_row_tuning() = {};
  split_row_chunk_tma() = {};
  split_row_chunk_lean() = -1;
  std::printf("split15: %d case(s) differ\n", differs);
  return differs == 0 ? 0 : 1;
}

// bwd16 (session 16, issue 3; docs/perf-notebook.md "bwd16"): split_row's common-call elementwise pass with dx by plain
// or streaming stores (warp_backward.hpp BackwardSplitTuning: the same values to the same addresses) at 1x16777216,
// f32 and bf16, both backward ops, beside the dispatcher's choice ("rule": streaming for softmax backward). Two
// alternating rounds, the first variant timed first and last in each, median of `reps` launches a timing over rotated
// inputs; then every variant's dx on copy 0 (outputs poisoned with 0xFF first) byte for byte against the first's. (The
// run of 15182b6's binary timed load hints in that pass and the chunk-sums pass and the packed dy-shared block's
// streaming stores too; that commit has the code.) --bwd16-ncu: one launch each, through the library's dispatcher
// (smk::softmax_backward), of the softmax backward at f32 1048576x32 and 16384x4096, bf16 16384x4096, 32768x1024 and
// 1x16777216, for Nsight Compute beside torch.compile's kernels (scripts/ncu_torch.py).
int bwd16_mode(bool ncu) {
  if (ncu) {
    struct One {
      DType t;
      std::int64_t rows, n;
    };
    for (const One& o : {One{DType::f32, 1048576, 32}, One{DType::f32, 16384, 4096}, One{DType::bf16, 16384, 4096},
                         One{DType::bf16, 32768, 1024}, One{DType::bf16, 1, 16777216}}) {
      Buffers b = make_buffers(o.rows, o.n, o.t);
      const smk::Device dev = smk::Device::cuda(0);
      const auto view = [&](void* ptr) { return smk::TensorView::contiguous(ptr, o.t, dev, {o.rows, o.n}); };
      smk::softmax_backward(view(b.out), view(b.y_softmax[0]), view(b.dy[0]));
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    return 0;
  }
  struct V16 {
    std::string name;
    int streaming;  // BackwardSplitTuning
  };
  const std::vector<V16> vs = {{"split plain stores", 0}, {"split dx st.cs", 1}, {"split rule", -1}};
  const int rounds = 2, reps = 30;
  int differs = 0;
  for (DType t : {DType::bf16, DType::f32}) {
    const std::int64_t rows = 1, n = 16777216;
    auto launch = [&](const V16& v, const RowProblem& p) {
      backward_split_tuning() = {v.streaming};
      launch_backward_split_rows(p, nullptr);
    };
    const char* shape = "1x16777216";
    Buffers b = make_buffers(rows, n, t);
    const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
    const double bytes = 3.0 * static_cast<double>(out_bytes);
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      std::vector<std::vector<double>> us(vs.size() + 1);
      for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i <= vs.size(); ++i) {
          const V16& v = vs[i == vs.size() ? 0 : i];
          us[i].push_back(median_us(b, reps, [&](int k) { launch(v, backward_problem(op, rows, n, t, b, k)); }));
        }
      report_rounds(shape, t, op, vs, us, bytes);
      bits_against_first(
          b.out, out_bytes, vs.size(), [&](std::size_t i) { launch(vs[i], backward_problem(op, rows, n, t, b, 0)); },
          [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
            const bool same = std::memcmp(ref.data(), got.data(), out_bytes) == 0;
            differs += !same;
            std::printf("bits %s %s %s %s: %s\n", shape, smk::dtype_name(t),
                        op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", vs[i].name.c_str(),
                        same ? "same bits" : "DIFFERS");
          });
    }
    free_buffers(b);
  }
  backward_split_tuning() = {};
  return differs ? 1 : 0;
}

// bwd17 (session 17, issue 3; docs/perf-notebook.md "bwd17"): split_row's common-call backward with its chunk-sums
// kernel at 2 (HEAD's before bwd17) or 3 blocks an SM and its elementwise pass as the chunk kernel or, where dx is
// stored streaming (the dispatcher's rule), the vector kernel (one 16-byte vector a thread; warp_backward.hpp
// BackwardSplitTuning sums_blocks / grads_form, the same bits), and the dispatcher's choice: bf16 and f32 1x16777216,
// bf16 32x128256 and 1024x151936, both backward ops. Three alternating rounds, the first variant timed first and last
// in each, median of `reps` launches a timing over rotated inputs; each launch's record (BackwardSplitLast) checked to
// be the form expected; then every variant's dx on copy 0 (poisoned with 0xFF first) byte for byte against the
// first's. Returns 1 if any differs or was not served. (The run of 80f0911's kernels also timed the sums at 4 blocks
// and the vector kernel with plain stores, and --bwd17b torch.compile's form of the 2-D backward: removed since.)
int bwd17_mode() {
  struct V17 {
    std::string name;
    int sums_blocks, grads_form;  // 0 / -1: the dispatcher's
  };
  const std::vector<V17> vs = {{"split sums2 chunk (HEAD's)", 2, 0},
                               {"split sums3 chunk", 3, 0},
                               {"split sums3 vec (where cs)", 3, 1},
                               {"split dispatcher", 0, -1}};
  const int rounds = 3, reps = 30;
  int bad = 0;
  auto launch = [&](const V17& v, const RowProblem& p) {
    backward_split_tuning() = {-1, v.sums_blocks, v.grads_form};
    launch_backward_split_rows(p, nullptr);
    const bool sixteen = p.x_dtype != DType::f32;
    const std::int64_t elems = p.rows * p.n;
    const bool cs =
        p.op == Op::softmax_backward && elems >= (std::int64_t{1} << 23) && elems <= (std::int64_t{1} << 24);
    const int sums = v.sums_blocks > 0 ? v.sums_blocks : (sixteen ? 3 : 2);
    const int form = cs ? (v.grads_form >= 0 ? v.grads_form : (sixteen ? 1 : 0)) : 0;
    if (backward_split_last().grads_form.load() != form || backward_split_last().sums_blocks.load() != sums) {
      std::printf("NOT SERVED: %s\n", v.name.c_str());
      ++bad;
    }
  };
  struct Case {
    DType t;
    std::int64_t rows, n;
  };
  for (const Case& c : {Case{DType::bf16, 1, 16777216}, Case{DType::f32, 1, 16777216}, Case{DType::bf16, 32, 128256},
                        Case{DType::bf16, 1024, 151936}}) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(c.rows), static_cast<long long>(c.n));
    Buffers b = make_buffers(c.rows, c.n, c.t);
    const std::size_t out_bytes = static_cast<std::size_t>(c.rows * c.n) * smk::dtype_size(c.t);
    const double bytes = 3.0 * static_cast<double>(out_bytes);
    for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
      std::vector<std::vector<double>> us(vs.size() + 1);
      for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i <= vs.size(); ++i) {
          const V17& v = vs[i == vs.size() ? 0 : i];
          us[i].push_back(
              median_us(b, reps, [&](int k) { launch(v, backward_problem(op, c.rows, c.n, c.t, b, k)); }));
        }
      report_rounds(shape, c.t, op, vs, us, bytes);
      // Each variant's rounds against the default's first timing of the same round: the ratio's median and range.
      for (std::size_t i = 1; i < vs.size(); ++i) {
        std::vector<double> ratio;
        for (int r = 0; r < rounds; ++r) ratio.push_back(us[0][r] / us[i][r]);
        std::sort(ratio.begin(), ratio.end());
        std::printf("%-14s %-5s %-11s %s: default/this %.3f (%.3f-%.3f)\n", shape, smk::dtype_name(c.t),
                    op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", vs[i].name.c_str(),
                    ratio[ratio.size() / 2], ratio.front(), ratio.back());
      }
      bits_against_first(
          b.out, out_bytes, vs.size(),
          [&](std::size_t i) { launch(vs[i], backward_problem(op, c.rows, c.n, c.t, b, 0)); },
          [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
            const bool same = std::memcmp(ref.data(), got.data(), out_bytes) == 0;
            bad += !same;
            std::printf("bits %s %s %s %s: %s\n", shape, smk::dtype_name(c.t),
                        op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", vs[i].name.c_str(),
                        same ? "same bits" : "DIFFERS");
          });
    }
    free_buffers(b);
  }
  backward_split_tuning() = {};
  std::printf("bwd17: %d problem(s)\n", bad);
  return bad ? 1 : 0;
}

// split16 (session 16, issue 3; docs/perf-notebook.md "split16"): split_row's compact f32 normalising kernel in whole
// tiles (split_row_normalize_whole 1: 24 values a thread loaded at once, before the dependency wait; the library's
// default since split16) against its 32-byte sub-tiles (0, the kernel before), through launch_split_rows as the
// dispatcher calls it (the library's other rules): f32 softmax and log-softmax at 1x16777216, 4x4194304, 32x128256
// and 64x151936 (three kernels), median of 21 over rotated inputs, 3 rounds. Each round times before then new; a line
// per time, then per case the new / before ratios of the rounds (median, min-max), then both outputs on copy 0
// (poisoned with 0xFF first) compared byte for byte. Returns 1 if any differs. (Its run of 3c3e2d0 also timed the
// one-launch kernel's lean f32 arithmetic, "C": even, removed.)
// --split16-ncu: one launch each of 1x16777216 f32 softmax, sub-tiles then whole, for Nsight Compute.
int split16_mode(bool ncu) {
  const DType t = DType::f32;
  if (ncu) {
    Buffers b = forward_buffers(1, 16777216, t);
    split_row_tuning() = {};
    for (int whole : {0, 1}) {
      split_row_normalize_whole() = whole;
      launch_split_rows(problem(Op::softmax, 1, 16777216, t, b, 0), nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
    }
    split_row_normalize_whole() = -1;
    free_buffers(b);
    return 0;
  }
  int differs = 0;
  // One shape: softmax then log-softmax (both write rows: out_bytes of b.out), each under split_row_normalize_whole
  // 0 ("N before") and 1 ("N new"), then back to the library's rule (-1).
  auto run16 = [&](std::int64_t rows, std::int64_t n) {
    const int reps = 21, rounds = 3;
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    Buffers b = forward_buffers(rows, n, t);
    const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
    split_row_tuning() = {};
    row_loop_tuning() = {};
    split_row_chunk_tma() = {};
    for (Op op : {Op::softmax, Op::log_softmax}) {
      const char* op_s = op == Op::softmax ? "softmax" : "log_softmax";
      const double bytes = static_cast<double>(rows) * static_cast<double>(n) * 4.0 * 2;  // read x, write y
      std::vector<double> ratio;
      for (int round = 0; round < rounds; ++round) {
        double us[2];
        for (int v : {0, 1}) {
          split_row_normalize_whole() = v;
          us[v] = median_us(b, reps, [&](int i) { launch_split_rows(problem(op, rows, n, t, b, i), nullptr); });
          report(shape, t, op, Variant{v ? "N new" : "N before", 's'}, us[v], bytes);
        }
        ratio.push_back(us[1] / us[0]);
      }
      std::vector<double> sorted = ratio;
      std::sort(sorted.begin(), sorted.end());
      std::printf("%-14s %-5s %-11s N new/before %.3f (%.3f-%.3f) over %d rounds\n", shape, "f32", op_s,
                  sorted[sorted.size() / 2], sorted.front(), sorted.back(), rounds);
      std::vector<unsigned char> got[2] = {std::vector<unsigned char>(out_bytes),
                                           std::vector<unsigned char>(out_bytes)};
      for (int v : {0, 1}) {
        split_row_normalize_whole() = v;
        SMK_CUDA_CHECK(cudaMemset(b.out, 0xFF, out_bytes));
        launch_split_rows(problem(op, rows, n, t, b, 0), nullptr);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        SMK_CUDA_CHECK(cudaMemcpy(got[v].data(), b.out, out_bytes, cudaMemcpyDeviceToHost));
      }
      const bool same = std::memcmp(got[0].data(), got[1].data(), out_bytes) == 0;
      differs += !same;
      std::printf("%-14s %-5s %-11s N new / before: %s\n", shape, "f32", op_s, same ? "same bits" : "DIFFERS");
      split_row_normalize_whole() = -1;
    }
    free_buffers(b);
  };
  for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}, {32, 128256},
                                {64, 151936}})
    run16(rows, n);
  split_row_tuning() = {};
  split_row_normalize_whole() = -1;
  std::printf("split16: %d case(s) differ\n", differs);
  return differs == 0 ? 0 : 1;
}

// split18 (session 18, issue 3; docs/perf-notebook.md "split18"): 16-bit softmax / log-softmax of long rows on
// split_row as the dispatcher ran them before split18 ("HEAD": launch_split_rows, chunk_state's chunk pass, the merge
// and the normalising kernels) beside the three kernels with the chunk pass on a running state a thread ("run T64":
// launch_split_running_rows, a new summation order), bf16 at 32x2097152, 128x524288, 1x16777216 and 32x128256 (uniform
// scores in [16, 24]; "g": 3·N(0, 1) at 32x2097152). Each case: the variants in 3 alternating rounds, HEAD timed first
// and last in each, median of `reps` launches over rotated inputs, the ratio to HEAD's first timing a round. Then each
// variant's output on copy 0 (poisoned with 0xFF first) against float64 on rows 0, rows / 2 and rows − 1: the largest
// error in units of u = 2^-24 (softmax: relative, over outputs ≥ 1e-30; log-softmax: absolute over max(1, |y|)), the
// elements whose bytes differ from HEAD's, and the running kernel's output of a second run byte for byte against its
// first. --split18-ncu: one launch each of HEAD and run T64 at bf16 32x2097152 softmax, for Nsight Compute. (The run
// of f69ff89 had f32 and a T128 variant too: docs/bench/split18-s18-2026-12-01.md has what it printed.)
int split18_mode(bool ncu) {
  struct V18 {
    std::string name;
    int threads;  // 0: HEAD's kernels
  };
  const std::vector<V18> vs = {{"HEAD", 0}, {"run T64", 64}};
  auto launch = [](const V18& v, const RowProblem& p) {
    if (v.threads == 0) launch_split_rows(p, nullptr);
    else launch_split_running_rows(p, nullptr);
  };
  split_row_tuning() = {};
  split_row_chunk_tma() = {};
  row_loop_tuning() = {};
  if (ncu) {
    Buffers b = forward_buffers(32, 2097152, DType::bf16);
    for (std::size_t i = 0; i < 2; ++i) launch(vs[i], problem(Op::softmax, 32, 2097152, DType::bf16, b, 0));
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  int bad = 0;
  auto case18 = [&](std::int64_t rows, std::int64_t n, DType t, Op op, bool gauss, int reps) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld%s", static_cast<long long>(rows), static_cast<long long>(n),
                  gauss ? " g" : "");
    const char* op_s = op == Op::softmax ? "softmax" : "log_softmax";
    Buffers b = forward_buffers(rows, n, t, gauss);
    const std::size_t es = smk::dtype_size(t), count = static_cast<std::size_t>(rows * n), out_bytes = count * es;
    const double bytes = 2.0 * static_cast<double>(out_bytes);
    std::vector<std::vector<double>> us(vs.size() + 1);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i <= vs.size(); ++i) {
        const V18& v = vs[i == vs.size() ? 0 : i];
        us[i].push_back(median_us(b, reps, [&](int k) { launch(v, problem(op, rows, n, t, b, k)); }));
      }
    }
    report_rounds(shape, t, op, vs, us, bytes);
    for (std::size_t i = 1; i < vs.size(); ++i) {
      std::vector<double> r;
      for (int round = 0; round < 3; ++round) r.push_back(us[i][round] / us[0][round]);
      std::vector<double> s = r;
      std::sort(s.begin(), s.end());
      std::printf("%-14s %-5s %-11s ratio %s / HEAD: %.3f (rounds %.3f %.3f %.3f)\n", shape, smk::dtype_name(t), op_s,
                  vs[i].name.c_str(), s[1], r[0], r[1], r[2]);
    }
    // Accuracy: rows 0, rows / 2, rows − 1 of copy 0 against float64.
    auto decode = [&](const std::vector<unsigned char>& raw, std::size_t i) {
      if (t == DType::f32) {
        float f;
        std::memcpy(&f, raw.data() + 4 * i, 4);
        return static_cast<double>(f);
      }
      if (t == DType::f16) {
        smk::half_t h;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        return static_cast<double>(smk::to_float(h));
      }
      smk::bfloat16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      return static_cast<double>(smk::to_float(h));
    };
    std::vector<std::int64_t> pick = {0, rows / 2, rows - 1};
    pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
    std::vector<unsigned char> in_raw(out_bytes);
    SMK_CUDA_CHECK(cudaMemcpy(in_raw.data(), b.in[0], out_bytes, cudaMemcpyDeviceToHost));
    std::vector<std::vector<double>> ref(pick.size());
    for (std::size_t k = 0; k < pick.size(); ++k) {
      const std::size_t at = static_cast<std::size_t>(pick[k] * n);
      double m = -1e300, l = 0;
      for (std::int64_t i = 0; i < n; ++i) m = std::max(m, decode(in_raw, at + i));
      for (std::int64_t i = 0; i < n; ++i) l += std::exp(decode(in_raw, at + i) - m);
      const double lse = m + std::log(l);
      ref[k].resize(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        const double y = decode(in_raw, at + i) - lse;
        ref[k][static_cast<std::size_t>(i)] = op == Op::softmax ? std::exp(y) : y;
      }
    }
    const double u = 5.9604644775390625e-8;
    std::vector<unsigned char> head(out_bytes), got(out_bytes), again(out_bytes);
    for (std::size_t v = 0; v < vs.size(); ++v) {
      for (int rep = 0; rep < (v == 0 ? 1 : 2); ++rep) {
        SMK_CUDA_CHECK(cudaMemset(b.out, 0xFF, out_bytes));
        launch(vs[v], problem(op, rows, n, t, b, 0));
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<unsigned char>& dst = v == 0 ? head : (rep == 0 ? got : again);
        SMK_CUDA_CHECK(cudaMemcpy(dst.data(), b.out, out_bytes, cudaMemcpyDeviceToHost));
      }
      const std::vector<unsigned char>& mine = v == 0 ? head : got;
      double worst = 0;
      for (std::size_t k = 0; k < pick.size(); ++k) {
        const std::size_t at = static_cast<std::size_t>(pick[k] * n);
        for (std::int64_t i = 0; i < n; ++i) {
          const double want = ref[k][static_cast<std::size_t>(i)], y = decode(mine, at + i);
          double e = 0;
          if (op == Op::softmax) {
            if (want >= 1e-30) e = std::fabs(y - want) / (want * u);
          } else {
            e = std::fabs(y - want) / (u * std::max(1.0, std::fabs(want)));
          }
          worst = std::max(worst, e == e ? e : 1e30);
        }
      }
      std::size_t diff = 0;
      if (es == 4) {
        const auto* a = reinterpret_cast<const std::uint32_t*>(mine.data());
        const auto* h = reinterpret_cast<const std::uint32_t*>(head.data());
        for (std::size_t i = 0; i < count; ++i) diff += a[i] != h[i];
      } else {
        const auto* a = reinterpret_cast<const std::uint16_t*>(mine.data());
        const auto* h = reinterpret_cast<const std::uint16_t*>(head.data());
        for (std::size_t i = 0; i < count; ++i) diff += a[i] != h[i];
      }
      const bool same = v == 0 || std::memcmp(got.data(), again.data(), out_bytes) == 0;
      bad += !same || worst >= 1e30;
      std::printf("%-14s %-5s %-11s %-9s err %.2f u, %zu of %zu elements differ from HEAD%s\n", shape,
                  smk::dtype_name(t), op_s, vs[v].name.c_str(), worst, diff, count,
                  v == 0 ? "" : (same ? ", run to run same bits" : ", run to run DIFFERS"));
    }
    std::fflush(stdout);
    free_buffers(b);
  };
  // SMK_SPLIT18_DTYPE=f16 (session 19, review18 F10): the same cases in f16, which the rule (kSplitRunning16) sends to
  // the running pass though split18 timed bf16 alone.
  const char* d18 = std::getenv("SMK_SPLIT18_DTYPE");
  const DType t18 = d18 != nullptr && std::strcmp(d18, "f16") == 0 ? DType::f16 : DType::bf16;
  for (Op op : {Op::softmax, Op::log_softmax}) {
    case18(32, 2097152, t18, op, false, 15);
    case18(128, 524288, t18, op, false, 15);
    case18(1, 16777216, t18, op, false, 21);
    case18(32, 128256, t18, op, false, 41);
  }
  case18(32, 2097152, t18, Op::softmax, true, 15);
  std::printf("split18: %d case(s) not the same run to run or non-finite\n", bad);
  return bad == 0 ? 0 : 1;
}

// blk17 (session 17, issue 3; docs/perf-notebook.md "blk17"): block_per_row's f32 softmax / log-softmax lane-staged
// (block_rows_lane_kernel, BlockConfig::lane_stages 1 and 2: each thread's share of the block's next rows copied into
// shared memory by cp.async; 16-bit rows only before blk17) beside the direct kernel (lane_stages 0, the dispatcher's
// before blk17) at 2^26 elements a shape, f32 rows of 2048 / 4096 / 6144 / 8192 / 10240 / 12288 (the 512-thread block's
// lengths; rows ≥ 12289 take the wide block), and bf16 log-softmax at 2048 / 2560 (the direct kernel below the
// 16-bit rule's kLaneLogSoftmaxFromN16, 2560 until this run and 2048 since, which mid16 timed before fwd16's cheaper
// 16-bit terms: is the lane kernel still slower there?). Each case: the variants in 3 alternating rounds, the direct kernel timed
// first and last in each round, median of 15 launches a timing over rotated inputs; then every variant's output on
// copy 0 (poisoned with 0xFF first) compared byte for byte with the direct kernel's ("same bits" / "DIFFERS") and
// whether the lane kernel ran (its launch count). Returns 1 if any differs or did not run.
// --blk17-ncu: one launch each at 8192x8192 f32 softmax and log-softmax, direct then lane1, for Nsight Compute.
int blk17_mode(bool ncu) {
  if (ncu) {
    const DType t = DType::f32;
    const std::int64_t rows = 8192, n = 8192;
    Buffers b = forward_buffers(rows, n, t);
    for (Op op : {Op::softmax, Op::log_softmax})
      for (const Variant& v : {fit(n, 1), lane(n, 1)}) launch_block_rows(problem(op, rows, n, t, b, 0), v.block, nullptr);
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  const int rounds = 3, reps = 15;
  int bad = 0;
  struct Case {
    DType t;
    std::int64_t n;
    std::vector<Op> ops;
  };
  std::vector<Case> cases;
  for (std::int64_t n : {2048, 4096, 6144, 8192, 10240, 12288})
    cases.push_back({DType::f32, n, {Op::softmax, Op::log_softmax}});
  for (std::int64_t n : {2048, 2560}) cases.push_back({DType::bf16, n, {Op::log_softmax}});
  for (const Case& c : cases) {
    const DType t = c.t;
    const std::int64_t n = c.n;
    const std::int64_t rows = (std::int64_t{1} << 26) / n;
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    const std::vector<Variant> vs = {fit(n, 1), lane(n, 1), lane(n, 2)};
    Buffers b = forward_buffers(rows, n, t);
    const std::size_t out_bytes = static_cast<std::size_t>(rows * n) * smk::dtype_size(t);
    const double bytes = 2.0 * static_cast<double>(out_bytes);
    for (Op op : c.ops) {
      const char* op_s = op == Op::softmax ? "softmax" : "log_softmax";
      std::vector<std::vector<double>> us(vs.size() + 1);
      for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i <= vs.size(); ++i) {
          const Variant& v = vs[i == vs.size() ? 0 : i];
          us[i].push_back(median_us(b, reps, [&](int k) {
            launch_block_rows(problem(op, rows, n, t, b, k), v.block, nullptr);
          }));
        }
      report_rounds(shape, t, op, vs, us, bytes);
      for (std::size_t i = 1; i < vs.size(); ++i) {  // new / direct a round (the direct kernel's first timing)
        std::vector<double> ratio;
        for (int r = 0; r < rounds; ++r) ratio.push_back(us[i][r] / us[0][r]);
        std::sort(ratio.begin(), ratio.end());
        std::printf("%-14s %-5s %-11s %s / direct %.3f (%.3f-%.3f) over %d rounds\n", shape, smk::dtype_name(t), op_s,
                    vs[i].name.c_str(), ratio[ratio.size() / 2], ratio.front(), ratio.back(), rounds);
      }
      bits_against_first(
          b.out, out_bytes, vs.size(),
          [&](std::size_t i) {
            const std::uint64_t lanes0 = block_lane_launch_count();
            launch_block_rows(problem(op, rows, n, t, b, 0), vs[i].block, nullptr);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            if ((block_lane_launch_count() > lanes0) != (vs[i].block.lane_stages > 0)) {
              ++bad;
              std::printf("ran %s %s %s: NOT THE KERNEL NAMED\n", shape, op_s, vs[i].name.c_str());
            }
          },
          [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
            const bool same = std::memcmp(ref.data(), got.data(), out_bytes) == 0;
            bad += !same;
            std::printf("bits %s %s %s %s: %s\n", shape, smk::dtype_name(t), op_s, vs[i].name.c_str(),
                        same ? "same bits" : "DIFFERS");
          });
    }
    free_buffers(b);
  }
  std::printf("blk17: %d case(s) differ or ran another kernel\n", bad);
  return bad == 0 ? 0 : 1;
}

// lse18 (session 18, issue 3; docs/perf-notebook.md "lse18"): lse17's chunk order in its three forms, the same bits each
// (launch_lse_chunk_rows at 128 threads a chunk, lse_chunks_form_setting): "head" the two launches as session 17 left
// them (the chunk kernel, whose SASS lse18's lse_block_state left identical, and the 512-thread merge kernel), "warp"
// the merge a warp a row, "cluster" one launch (a cluster a row) where the call fits the device (else "warp"). bf16
// logsumexp at issue 3's shapes and lse17's, the state at 1x151936 and 32x128256, f16 at 1x151936. Each case: the
// variants in `rounds` alternating rounds, the first timed first and last, medians of `reps` launches over rotated
// inputs, ratios to the first a round; then every variant's outputs on copy 0 (poisoned with 0xFF) byte for byte
// against the first's, and which form served (the launch counters). Exits 1 if any output differs or a form did not
// serve where it should. Reached only by name (main's first lines), not listed in the usage. As run (with an L2-prefetch
// form, lse_stream's block kernel beside its session-17 copy, and --lse18b's load variants): 3a0acab.
int lse18_mode() {
  struct V18 {
    std::string name;
    int form;  // lse_chunks_form_setting
  };
  int bad = 0;
  auto case18 = [&](std::int64_t rows, std::int64_t n, DType t, Op op, const std::vector<V18>& vs, int reps,
                    int rounds) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    Buffers b = forward_buffers(rows, n, t);
    const double bytes = static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t));
    auto launch = [&](const V18& v, const RowProblem& p) {
      lse_chunks_form_setting() = v.form;
      launch_lse_chunk_rows(p, 128, nullptr);
      lse_chunks_form_setting() = -1;
    };
    std::vector<std::vector<double>> us(vs.size() + 1);
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i <= vs.size(); ++i) {
        const V18& v = vs[i == vs.size() ? 0 : i];
        us[i].push_back(median_us(b, reps, [&](int k) { launch(v, problem(op, rows, n, t, b, k)); }));
      }
    std::vector<Variant> names;
    for (const V18& v : vs) names.push_back(Variant{v.name, 'l'});
    report_rounds(shape, t, op, names, us, bytes);
    for (std::size_t i = 1; i < vs.size(); ++i) {
      std::vector<double> r;
      for (int round = 0; round < rounds; ++round) r.push_back(us[i][round] / us[0][round]);
      std::sort(r.begin(), r.end());
      std::printf("%-14s %-5s %-9s ratio %s / %s: %.3f (%.3f-%.3f) over %d rounds\n", shape, smk::dtype_name(t),
                  op == Op::logsumexp ? "logsumexp" : "state", vs[i].name.c_str(), vs[0].name.c_str(),
                  r[r.size() / 2], r.front(), r.back(), rounds);
    }
    const std::size_t out_bytes = sizeof(float) * static_cast<std::size_t>(rows) * (op == Op::state ? 2 : 1);
    bits_against_first(
        b.stats, out_bytes, vs.size(),
        [&](std::size_t i) {
          const std::uint64_t c0 = lse_chunks_cluster_launch_count(), w0 = lse_chunks_warp_merge_launch_count();
          launch(vs[i], problem(op, rows, n, t, b, 0));
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          const bool cluster = lse_chunks_cluster_launch_count() > c0, warp = lse_chunks_warp_merge_launch_count() > w0;
          std::printf("served %s %s %s: %s\n", shape, smk::dtype_name(t), vs[i].name.c_str(),
                      cluster ? "one launch (cluster)" : warp ? "two launches, warp merge" : "two launches, block merge");
          // the warp merge serves every call of ≤ 32 chunks that the cluster does not; the block merge only form 0
          const std::int64_t chunks = (n + kSplitChunk - 1) / kSplitChunk;
          if ((vs[i].form == 0 && (cluster || warp)) || (vs[i].form == 1 && (cluster || warp != (chunks <= 32))) ||
              (vs[i].form >= 2 && !cluster && warp != (chunks <= 32))) {
            ++bad;
            std::printf("  NOT THE FORM ASKED\n");
          }
        },
        [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
          const bool same = std::memcmp(ref.data(), got.data(), out_bytes) == 0;
          bad += !same;
          std::printf("bits %s %s %s %s: %s\n", shape, smk::dtype_name(t), op == Op::logsumexp ? "logsumexp" : "state",
                      vs[i].name.c_str(), same ? "same bits" : "DIFFERS");
        });
    std::fflush(stdout);
    free_buffers(b);
  };
  split_row_tuning() = {};
  const std::vector<V18> forms = {{"head", 0}, {"warp", 1}, {"cluster", 2}};
  case18(1, 151936, DType::bf16, Op::logsumexp, forms, 41, 5);
  case18(32, 128256, DType::bf16, Op::logsumexp, forms, 41, 5);
  case18(4, 151936, DType::bf16, Op::logsumexp, forms, 41, 3);
  case18(64, 151936, DType::bf16, Op::logsumexp, forms, 41, 3);
  case18(1, 151936, DType::bf16, Op::state, forms, 41, 3);
  case18(32, 128256, DType::bf16, Op::state, forms, 41, 3);
  case18(1, 151936, DType::f16, Op::logsumexp, forms, 41, 3);
  const std::vector<V18> two = {{"head", 0}, {"warp", 1}, {"cluster", 2}};
  case18(1024, 65536, DType::bf16, Op::logsumexp, two, 21, 3);
  case18(512, 131072, DType::bf16, Op::logsumexp, two, 21, 3);
  case18(4096, 151936, DType::bf16, Op::logsumexp, two, 9, 3);
  case18(32, 2097152, DType::bf16, Op::logsumexp, two, 21, 3);
  case18(1, 16777216, DType::bf16, Op::logsumexp, two, 21, 3);
  std::printf("lse18: %d case(s) differ or ran another form\n", bad);
  return bad == 0 ? 0 : 1;
}

// --lse18-ncu: one launch of each form, for Nsight Compute: bf16 logsumexp 1x151936 (head, cluster) and 1024x65536
// (head, warp).
int lse18_ncu() {
  split_row_tuning() = {};
  for (const auto& [rows, forms] : std::vector<std::pair<std::int64_t, std::vector<int>>>{{1, {0, 2}},
                                                                                           {1024, {0, 1}}}) {
    const std::int64_t n = rows == 1 ? 151936 : 65536;
    Buffers b = forward_buffers(rows, n, DType::bf16);
    for (int form : forms) {
      lse_chunks_form_setting() = form;
      launch_lse_chunk_rows(problem(Op::logsumexp, rows, n, DType::bf16, b, 0), 128, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
    }
    lse_chunks_form_setting() = -1;
    free_buffers(b);
  }
  return 0;
}

// lse17 (session 17, issue 3; docs/perf-notebook.md "lse17"): logsumexp of rows past kLseStreamMaxN on split_row as the
// dispatcher ran them before lse17 (launch_split_rows: the one-launch kernel where it serves, else the plain or TMA
// chunk pass by the library's rules and the merge: "split_row") beside lse_stream.cu's chunk kernel at 128 and 64
// threads a chunk ("chunks T128", "chunks T64": launch_lse_chunk_rows, the same chunks and merge order, each chunk on
// lse_stream's running state). bf16 at 1024x65536, 512x131072, 32x2097152, 4096x151936, 1x151936, 32x128256 and
// 1x16777216 (uniform scores; "gauss": 3·N(0, 1) at 1024x65536 and 4096x151936), f32 at 1024x65536, 32x2097152,
// 4096x151936 and 1x151936. Each case: the variants in 3 alternating rounds, split_row timed first and last in each,
// median of `reps` launches over rotated inputs, and the ratio to split_row's first timing a round. Then each variant's
// LSE on copy 0 (poisoned with 0xFF first) against float64 on rows 0, 1, rows / 2 and rows − 1: the largest error in
// units of u·max(1, |LSE|) and over the gate of docs/semantics.md §6 ((|LSE| + L + 10 + c ln n)·u, c = 3 f32, 4.25
// 16-bit); and the chunk kernel's LSE of a second run byte for byte against its first. --lse17-ncu: one launch each of
// split_row and chunks T128 at bf16 and f32 1024x65536, and lse_stream T128 at bf16 2048x32768, for Nsight Compute.
int lse17_mode(bool ncu) {
  struct V17 {
    std::string name;
    int threads;  // 0: split_row
  };
  const std::vector<V17> vs = {{"split_row", 0}, {"chunks T128", 128}, {"chunks T64", 64}};
  auto launch = [](const V17& v, const RowProblem& p) {
    if (v.threads == 0) launch_split_rows(p, nullptr);
    else launch_lse_chunk_rows(p, v.threads, nullptr);
  };
  split_row_tuning() = {};
  split_row_chunk_tma() = {};
  if (ncu) {
    for (DType t : {DType::bf16, DType::f32}) {
      Buffers b = forward_buffers(1024, 65536, t);
      for (std::size_t i = 0; i < 2; ++i) launch(vs[i], problem(Op::logsumexp, 1024, 65536, t, b, 0));
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    Buffers b = forward_buffers(2048, 32768, DType::bf16);
    launch_lse_stream_rows(problem(Op::logsumexp, 2048, 32768, DType::bf16, b, 0), LseStreamConfig{0, 128}, nullptr);
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  int bad = 0;
  auto case17 = [&](std::int64_t rows, std::int64_t n, DType t, bool gauss, int reps) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld%s", static_cast<long long>(rows), static_cast<long long>(n),
                  gauss ? " g" : "");
    Buffers b = forward_buffers(rows, n, t, gauss);
    const double bytes = static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t));
    std::vector<std::vector<double>> us(vs.size() + 1);
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i <= vs.size(); ++i) {
        const V17& v = vs[i == vs.size() ? 0 : i];
        us[i].push_back(
            median_us(b, reps, [&](int k) { launch(v, problem(Op::logsumexp, rows, n, t, b, k)); }));
      }
    }
    report_rounds(shape, t, Op::logsumexp, vs, us, bytes);
    for (std::size_t i = 1; i < vs.size(); ++i) {
      std::vector<double> r;
      for (int round = 0; round < 3; ++round) r.push_back(us[i][round] / us[0][round]);
      std::vector<double> s = r;
      std::sort(s.begin(), s.end());
      std::printf("%-14s %-5s ratio %s / split_row: %.3f (rounds %.3f %.3f %.3f)\n", shape, smk::dtype_name(t),
                  vs[i].name.c_str(), s[1], r[0], r[1], r[2]);
    }
    // Accuracy: rows 0, 1, rows / 2, rows − 1 of copy 0 against float64.
    const std::size_t es = smk::dtype_size(t);
    std::vector<std::int64_t> pick = {0, std::min<std::int64_t>(1, rows - 1), rows / 2, rows - 1};
    std::sort(pick.begin(), pick.end());
    pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
    std::vector<double> ref;
    std::vector<unsigned char> raw(static_cast<std::size_t>(n) * es);
    for (std::int64_t r : pick) {
      const auto* src = static_cast<const unsigned char*>(b.in[0]) + static_cast<std::size_t>(r * n) * es;
      SMK_CUDA_CHECK(cudaMemcpy(raw.data(), src, raw.size(), cudaMemcpyDeviceToHost));
      std::vector<double> x(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (t == DType::f32) {
          float f;
          std::memcpy(&f, raw.data() + 4 * i, 4);
          x[i] = f;
        } else {
          smk::bfloat16_t h;
          std::memcpy(&h, raw.data() + 2 * i, 2);
          x[i] = smk::to_float(h);
        }
      }
      double m = -1e300, l = 0;
      for (double v : x) m = std::max(m, v);
      for (double v : x) l += std::exp(v - m);
      ref.push_back(m + std::log(l));
    }
    const double u = 5.9604644775390625e-8, L = std::ceil(std::log2(static_cast<double>(n)));
    const double c = t == DType::f32 ? 3.0 : 4.25;
    std::vector<float> got(static_cast<std::size_t>(rows)), first(static_cast<std::size_t>(rows));
    for (std::size_t i = 0; i < vs.size(); ++i) {
      for (int rep = 0; rep < (i == 0 ? 1 : 2); ++rep) {
        SMK_CUDA_CHECK(cudaMemset(b.stats, 0xFF, sizeof(float) * static_cast<std::size_t>(rows)));
        launch(vs[i], problem(Op::logsumexp, rows, n, t, b, 0));
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
        SMK_CUDA_CHECK(cudaMemcpy(rep ? got.data() : first.data(), b.stats, sizeof(float) * got.size(),
                                  cudaMemcpyDeviceToHost));
      }
      double worst_u = 0, worst_gate = 0;
      for (std::size_t k = 0; k < pick.size(); ++k) {
        const double g = first[static_cast<std::size_t>(pick[k])], e = std::fabs(g - ref[k]);
        const double eu = e / (u * std::max(1.0, std::fabs(ref[k])));
        const double eg = e / ((std::fabs(ref[k]) + L + 10 + c * std::log(static_cast<double>(n))) * u);
        worst_u = std::max(worst_u, eu == eu ? eu : 1e30);
        worst_gate = std::max(worst_gate, eg == eg ? eg : 1e30);
      }
      const bool again = i == 0 || std::memcmp(got.data(), first.data(), sizeof(float) * got.size()) == 0;
      bad += worst_gate > 1.0 || !again;
      const char* bits = i == 0 ? "" : (again ? ", run to run same bits" : ", run to run DIFFERS");
      std::printf("%-14s %-5s %-12s err %.2f u (%.3f of the gate)%s%s\n", shape, smk::dtype_name(t),
                  vs[i].name.c_str(), worst_u, worst_gate, bits, worst_gate > 1.0 ? "  OVER THE GATE" : "");
    }
    std::fflush(stdout);
    free_buffers(b);
  };
  case17(1024, 65536, DType::bf16, false, 21);
  case17(4096, 151936, DType::bf16, false, 9);
  case17(32, 2097152, DType::bf16, false, 21);
  case17(1, 151936, DType::bf16, false, 41);
  case17(32, 128256, DType::bf16, false, 41);
  case17(512, 131072, DType::bf16, false, 21);
  case17(1, 16777216, DType::bf16, false, 21);
  case17(1024, 65536, DType::bf16, true, 21);
  case17(4096, 151936, DType::bf16, true, 9);
  case17(1024, 65536, DType::f32, false, 21);
  case17(4096, 151936, DType::f32, false, 9);
  case17(32, 2097152, DType::f32, false, 21);
  case17(1, 151936, DType::f32, false, 41);
  std::printf("lse17: %d case(s) over the gate or not the same run to run\n", bad);
  return bad == 0 ? 0 : 1;
}

// short18 (session 18, issue 3; docs/perf-notebook.md "(session 18) — short18"): the short rows where torch.compile
// led in compare-s17, and the sweep's bf16 softmax 1048576x64 (85.4 us in session 17 against 75.9 in 16, kernel
// unchanged), on the dispatcher's kernels ("default": warp_config's lanes and elements, the dense / occupancy forms
// where its rules take them) beside the same kernels on other grids (WarpRowTuning grid / max_blocks: a persistent
// grid's warps walk ceil(groups / warps) or one fewer row groups, so where groups / warps is not whole the last pass
// runs on a fraction of the warps; "max B (k a warp)" sizes the grid so that every warp walks k; "gK": up to K times
// the resident blocks, never more than needed), and 16-bit softmax rows of 64 on the occupancy kernel at 20 blocks an
// SM (short15's form, which its rule takes from 128). A grid changes which warp serves a row, not its arithmetic, so
// every variant gives the default's bits. Three rounds of every variant in turn, median of 30 each (rounds of one
// variant are its spread); then each variant's output on copy 0 (poisoned with 0xFF first) byte for byte against the
// default's ("same bits" / "DIFFERS"). Returns 1 if any differs.
int short18() {
  struct V18 {
    std::string name;
    WarpConfig c;
    int grid = -1, max_blocks = 0;  // WarpRowTuning's
    int occ = 0;                    // > 0: launch_warp_rows_occ at that many blocks an SM
  };
  struct Shape {
    DType t;
    std::int64_t rows, n;
    std::vector<Op> ops;
    std::vector<V18> vs;
  };
  const auto cfg = [](int e, int l, int grid, bool dense) {
    WarpConfig c;
    c.elems = e;
    c.lanes = l;
    c.grid = grid;
    c.dense = dense;
    return c;
  };
  // Blocks of 256 threads: 8 warps; a warp holds 32 / lanes row groups (R = 1 at E >= 16).
  const std::vector<Shape> shapes = {
      // bf16 rows of 32: dense E16 L2 at 6 blocks an SM (792 on 132 SMs), 8192 blocks' worth of row groups: 10.34 a warp.
      {DType::bf16, 1048576, 32, {Op::softmax},
       {{"default dense E16 L2 g0", cfg(16, 2, 0, true)},
        {"max 745 (11 a warp)", cfg(16, 2, 0, true), -1, 745},
        {"max 683 (12 a warp)", cfg(16, 2, 0, true), -1, 683},
        {"g2 (1584)", cfg(16, 2, 0, true), 2},
        {"g11 (8192, 1 a warp)", cfg(16, 2, 0, true), 11}}},
      // bf16 rows of 64: the general kernel E32 L2 (80 registers, 3 blocks an SM: 396), 20.7 a warp; occupancy b20.
      {DType::bf16, 1048576, 64, {Op::softmax},
       {{"default E32 L2 g0", cfg(32, 2, 0, false)},
        {"max 391 (21 a warp)", cfg(32, 2, 0, false), -1, 391},
        {"g2 (792)", cfg(32, 2, 0, false), 2},
        {"g21 (8192, 1 a warp)", cfg(32, 2, 0, false), 21},
        {"occ E32 L2 b20", cfg(32, 2, 0, false), -1, 0, 20}}},
      {DType::bf16, 524288, 64, {Op::softmax},
       {{"default E32 L2 g0", cfg(32, 2, 0, false)},
        {"occ E32 L2 b20", cfg(32, 2, 0, false), -1, 0, 20}}},
      // The sweep's neighbours of 1048576x64 (2^26 elements each).
      {DType::bf16, 2097152, 32, {Op::softmax},
       {{"default dense E16 L2 g0", cfg(16, 2, 0, true)},
        {"max 781 (21 a warp)", cfg(16, 2, 0, true), -1, 781},
        {"g21 (16384, 1 a warp)", cfg(16, 2, 0, true), 21}}},
      {DType::bf16, 524288, 128, {Op::softmax}, {{"default occ E32 L4 b20", cfg(32, 4, 0, false), -1, 0, 20}}},
      // bf16 rows of 1024: occupancy b20 (2 rows a block, 16384 blocks, 2640 resident); the dense kernel E32 L32
      // (4 blocks an SM: 528; 4096 blocks' worth, 7.76 a warp).
      {DType::bf16, 32768, 1024, {Op::softmax},
       {{"default occ E32 L32 b20", cfg(32, 32, 0, false), -1, 0, 20},
        {"occ persistent (2640)", cfg(32, 32, 0, false), 0, 0, 20},
        {"occ max 2341 (7 a warp)", cfg(32, 32, 0, false), -1, 2341, 20},
        {"dense g0 (528)", cfg(32, 32, 0, true)},
        {"dense max 512 (8 a warp)", cfg(32, 32, 0, true), -1, 512},
        {"dense g8 (4096, 1 a warp)", cfg(32, 32, 0, true), 8}}},
      // f32 rows of 32: the general kernel E16 L2 (4 blocks an SM: 528) on the grid of 8 (4224 of 8192: 1.94 a warp).
      {DType::f32, 1048576, 32, {Op::softmax, Op::log_softmax},
       {{"default E16 L2 g8", cfg(16, 2, 8, false)},
        {"max 4096 (2 a warp)", cfg(16, 2, 8, false), -1, 4096},
        {"g16 (8192, 1 a warp)", cfg(16, 2, 8, false), 16},
        {"max 2048 (4 a warp)", cfg(16, 2, 8, false), -1, 2048}}},
  };
  int differs = 0;
  for (const Shape& sh : shapes) {
    Buffers b = forward_buffers(sh.rows, sh.n, sh.t);
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(sh.rows), static_cast<long long>(sh.n));
    const std::size_t out_bytes = static_cast<std::size_t>(sh.rows * sh.n) * smk::dtype_size(sh.t);
    const double bytes = static_cast<double>(out_bytes) * 2.0;
    for (Op op : sh.ops) {
      WarpVariants vs;
      for (const V18& v : sh.vs) {
        Variant w{v.name, 'w', v.c};
        w.tuning.grid = v.grid;
        w.tuning.max_blocks = v.max_blocks;
        w.tuning.dense = v.c.dense ? 1 : 0;
        vs.push_back({w, v.occ});
      }
      const auto launch_v = [&](const std::pair<Variant, int>& v, int i) {
        const RowProblem p = problem(op, sh.rows, sh.n, sh.t, b, i);
        if (v.second > 0) {
          if (!launch_warp_rows_occ(p, v.first.warp, v.second, nullptr)) std::abort();
        } else {
          launch_warp_rows(p, v.first.warp, nullptr);
        }
      };
      warp_occ_tuning() = {};
      const char* label = op == Op::softmax ? "softmax" : "log_softmax";
      warp_variants_timed(false, 3, shape, sh.t, op, label, b, vs, launch_v, bytes);
      if (vs.size() > 1) differs += warp_variants_bits(shape, sh.t, label, vs, launch_v, b.out, out_bytes);
    }
    free_buffers(b);
  }
  warp_row_tuning() = {};
  std::printf("short18: %d variant(s) differ from the default\n", differs);
  return differs == 0 ? 0 : 1;
}

// few19 (session 19, issue 3; docs/perf-notebook.md "few19"): split_row's forms at the few-row vocabulary shapes,
// each the same bits (launch_split_rows as the dispatcher calls it, the library's other rules): "head" the library
// before few19 (the one-chunk-a-block one launch where one wave of its clusters holds the call, else the three
// kernels), "three" the three kernels always (split_row_cluster off), "waves" the one-chunk-a-block kernel at any call
// size (split_row_cluster_waves 64), "rule" the library with few19's rule (split_row_multi -1: the multi-chunk one
// launch where the one-chunk kernel does not fit one wave and it does; as run, d38b383, at the fewest of 2 … 4 chunks
// a block that fit and on every op; since then at 2 for 16-bit softmax / log-softmax and f32 log-softmax only), "k2"
// … "k4" the multi-chunk kernel forced at 2 … 4 chunks a block. Timed as the bench times (apps/softmaxkit/bench_timer.cpp): before each launch an untimed
// cudaMemsetAsync of 256 MB (the L2 flushed), then CUDA events around the one launch; the median of `reps`, the
// forms in `rounds` alternating rounds with head timed first and last in each, ratios to head a round. Then every
// form's outputs (poisoned with 0xFF) byte for byte against head's, and which kernel served (launch counters).
// Exits 1 if any differs. --few19-ncu: one launch each of head, rule and waves at bf16 and f32 32x128256 softmax.
// (Since 8b0770a the kernel takes softmax and log-softmax only: the f32 logsumexp case now times the three
// kernels in its k2 … k4 places; as run, d38b383, it timed the kernel's logsumexp instance there.)
// Reached by name from main's first lines.
int few19_mode(bool ncu) {
  struct F19 {
    std::string name;
    int multi;
    bool cluster;
    std::int64_t waves;
  };
  auto set = [](const F19& f) {
    split_row_multi() = f.multi;
    split_row_cluster() = f.cluster;
    split_row_cluster_waves() = f.waves;
  };
  auto reset = [] {
    split_row_multi() = -1;
    split_row_cluster() = true;
    split_row_cluster_waves() = kSplitClusterMaxWaves;
  };
  split_row_tuning() = {};
  row_loop_tuning() = {};
  split_row_chunk_tma() = {};
  const F19 head{"head", 0, true, 1}, three{"three", 0, false, 1}, waves{"waves", 0, true, 64},
      rule{"rule", -1, true, 1}, k2{"k2", 2, true, 1}, k3{"k3", 3, true, 1}, k4{"k4", 4, true, 1};
  if (ncu) {
    for (DType t : {DType::bf16, DType::f32}) {
      Buffers b = forward_buffers(32, 128256, t);
      for (const F19& f : {head, rule, waves}) {
        set(f);
        launch_split_rows(problem(Op::softmax, 32, 128256, t, b, 0), nullptr);
        SMK_CUDA_CHECK(cudaDeviceSynchronize());
      }
      reset();
      free_buffers(b);
    }
    return 0;
  }
  for (int per = 1; per <= 4; ++per)
    for (int blocks : {4, 6, 7, 11, 13, 16})
      std::printf("few19 resident clusters of %d blocks at %d chunk(s) a block: f32 %d, 16-bit %d%s\n", blocks, per,
                  per == 1 ? split_row_active_clusters(blocks) : split_row_multi_active_clusters(false, per, blocks),
                  per == 1 ? split_row_active_clusters(blocks) : split_row_multi_active_clusters(true, per, blocks),
                  per == 1 ? " (the one-chunk kernel's count, f32 softmax; the 16-bit kernels have the same bounds)"
                           : "");
  void* flush = nullptr;
  const std::size_t flush_bytes = std::size_t{256} << 20;
  SMK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  auto flushed_us = [&](int reps, auto&& launch) { return timed_median_us(reps, launch, flush, flush_bytes); };
  int bad = 0;
  auto case19 = [&](std::int64_t rows, std::int64_t n, DType t, Op op, const std::vector<F19>& fs, int reps,
                    int rounds) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    Buffers b = forward_buffers(rows, n, t);
    const bool rows_out = writes_rows(op);
    const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                         static_cast<double>(smk::dtype_size(t)) * (rows_out ? 2.0 : 1.0);
    std::vector<std::vector<double>> us(fs.size() + 1);
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i <= fs.size(); ++i) {
        set(fs[i == fs.size() ? 0 : i]);
        us[i].push_back(flushed_us(reps, [&](int k) { launch_split_rows(problem(op, rows, n, t, b, k), nullptr); }));
      }
    reset();
    std::vector<Variant> names;
    for (const F19& f : fs) names.push_back(Variant{f.name, 's'});
    report_rounds(shape, t, op, names, us, bytes);
    const char* op_s = op == Op::softmax ? "softmax" : op == Op::log_softmax ? "log_softmax" : "logsumexp";
    for (std::size_t i = 1; i < fs.size(); ++i) {
      std::vector<double> r;
      for (int round = 0; round < rounds; ++round) r.push_back(us[i][round] / us[0][round]);
      std::sort(r.begin(), r.end());
      std::printf("%-14s %-5s %-11s ratio %s / %s: %.3f (%.3f-%.3f) over %d rounds\n", shape, smk::dtype_name(t), op_s,
                  fs[i].name.c_str(), fs[0].name.c_str(), r[r.size() / 2], r.front(), r.back(), rounds);
    }
    void* out = rows_out ? b.out : static_cast<void*>(b.stats);
    const std::size_t out_bytes = rows_out ? static_cast<std::size_t>(rows * n) * smk::dtype_size(t)
                                           : sizeof(float) * static_cast<std::size_t>(rows);
    bits_against_first(
        out, out_bytes, fs.size(),
        [&](std::size_t i) {
          set(fs[i]);
          const std::uint64_t m0 = split_multi_launch_count(), p0 = split_plain_launch_count();
          launch_split_rows(problem(op, rows, n, t, b, 0), nullptr);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          reset();
          std::printf("served %s %s %s %s: %s\n", shape, smk::dtype_name(t), op_s, fs[i].name.c_str(),
                      split_multi_launch_count() > m0   ? "multi-chunk one launch"
                      : split_plain_launch_count() > p0 ? "three kernels (compact)"
                                                        : "one-chunk one launch (or another kernel)");
        },
        [&](std::size_t i, const std::vector<unsigned char>& ref, const std::vector<unsigned char>& got) {
          const bool same = std::memcmp(ref.data(), got.data(), out_bytes) == 0;
          bad += !same;
          std::printf("bits %s %s %s %s / %s: %s\n", shape, smk::dtype_name(t), op_s, fs[i].name.c_str(),
                      fs[0].name.c_str(), same ? "same bits" : "DIFFERS");
        });
    std::fflush(stdout);
    free_buffers(b);
  };
  const std::vector<F19> all = {head, three, waves, rule, k2, k3, k4};
  for (Op op : {Op::softmax, Op::log_softmax}) {
    case19(32, 128256, DType::bf16, op, all, 31, 5);
    case19(32, 128256, DType::f32, op, all, 31, 5);
  }
  case19(32, 128256, DType::f16, Op::softmax, all, 31, 3);
  case19(32, 128256, DType::f32, Op::logsumexp, all, 31, 3);
  for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{16, 128256}, {64, 128256}, {8, 151936},
                                {1, 151936}})
    for (DType t : {DType::bf16, DType::f32})
      for (Op op : {Op::softmax, Op::log_softmax}) case19(rows, n, t, op, all, 31, 3);
  case19(1, 151936, DType::f32, Op::logsumexp, all, 31, 3);
  case19(1, 262144, DType::bf16, Op::softmax, {head, k2, k3}, 31, 3);
  case19(8, 262144, DType::bf16, Op::softmax, {head, k2, k3}, 31, 3);
  case19(8, 262144, DType::f32, Op::softmax, {head, k2, k3}, 31, 3);
  cudaFree(flush);
  reset();
  std::printf("few19: %d case(s) differ\n", bad);
  return bad == 0 ? 0 : 1;
}

// next20 (prep20, session 19, for the next session's plan items 0 and 1 in docs/perf-notebook.md's top section; built,
// not run). Both modes time as few19 does (timed_median_us with a 256 MB cudaMemsetAsync before each timed launch: the
// L2 flushed, as the bench does; inputs rotated over forward_buffers' copies), the variants in 3 alternating rounds with
// the first timed first and last in each, ratios to the first a round (median and range). Paths that differ in order
// give other bits: the bits are printed (the whole output, poisoned with 0xFF first), never asserted; the error against
// float64 is printed and only an error over docs/semantics.md §6's gate fails the mode (exit 1). Without a CUDA device
// the modes print why and exit 1 (no crash): next20_device_ok.
//   --next20-f32-65536 (plan item 0): f32 softmax and log-softmax at rows of 32769 (a control: the rule's first
//     cluster_stage length), 40001, 45056, 49152, 57344 and 65536 (or SMK_N20_LENGTHS's lengths), row counts 1, 32,
//     1024 and 8192 (capped at kNext20MaxBytes of input), through the library's entry points: "auto" the dispatcher
//     (cluster_stage where softmax_cuda.cpp cluster_stage_takes takes the call; the served kernel is printed from its
//     launch counter) beside "split_row" and "cluster_row" forced (ScopedSoftmaxPath: the kernels those paths launch, split_row's own rules
//     included). Error: rows 0, 1, rows / 2 and rows − 1 of copy 0 against float64, softmax relative (in u of p, p ≥
//     1e−30; gate (18 + L)·u), log-softmax absolute (in u; gate (2|y| + L + 10 + 3 ln n)·u), L = ⌈log2 n⌉.
//   --next20-l16 (plan item 1): logsumexp and the state on lse_stream's kernels at rows of 2048, 3072, 4096, 6144,
//     8192, 12288 and 16384, row counts 1, 64, 4096 and 16384 (capped alike), bf16, f16 and f32: "T128" (one block of
//     128 a row, launch_lse_stream_rows {0, 128}: the dispatcher's kernel at f32 from 2048 and 16-bit from 4096)
//     beside "L16" (16 lanes a row, {16, 0}: the dispatcher's kernel at 1024 only; elsewhere another order, so its
//     error is the point), and "auto" (smk::logsumexp / smk::softmax_state) where the dispatcher serves the call
//     otherwise than T128 (16-bit below 4096 today; found by one dispatched call, lse_stream_last_config). Error
//     against float64: logsumexp in u·max(1, |LSE|) and as a fraction of the gate (|LSE| + L + 10 + c ln n)·u (c = 3
//     f32, 4.25 16-bit); the state's m must be the row max bit for bit, its l in u of l (gate (L + 11 + c' ln n)·u,
//     c' = 1 f32, 2.25 16-bit: tests/conformance/numerics.hpp state_sum_error, semantics.md §6). On rows 0, 1,
//     rows / 2, rows − 1, and the largest over the first min(rows, 2^24 / n) rows (every row of calls up to 2^24
//     elements; beyond, the host's float64 work is capped there).
// No library hook: launch_lse_stream_rows takes lanes 16 at any length (lse_stream.cu launch_form).
constexpr double kNext20MaxBytes = 2147483648.0;  // each case's input at most 2 GiB (8192×65536 f32 is exactly that)
constexpr std::int64_t kNext20RefElems = std::int64_t{1} << 24;  // --next20-l16: float64 over at most this many

// A mode run with its errors (smk::Error from the library or a CUDA call) printed, exit 1, instead of terminate.
int next20_run(int (*mode)(), const char* name) {
  try {
    return mode();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_softmax %s: %s\n", name, e.what());
    return 1;
  }
}

bool next20_device_ok(const char* mode) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "tune_softmax %s: no CUDA device (%s); nothing timed\n", mode,
                 e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
    return false;
  }
  return true;
}

// n stored values of type t at raw, in float64.
std::vector<double> next20_decode(const unsigned char* raw, std::int64_t n, DType t) {
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (t == DType::f32) {
      float f;
      std::memcpy(&f, raw + 4 * i, 4);
      x[i] = f;
    } else if (t == DType::bf16) {
      smk::bfloat16_t h;
      std::memcpy(&h, raw + 2 * i, 2);
      x[i] = smk::to_float(h);
    } else {
      smk::half_t h;
      std::memcpy(&h, raw + 2 * i, 2);
      x[i] = smk::to_float(h);
    }
  }
  return x;
}

// Row r of copy 0's input, as stored, in float64.
std::vector<double> next20_row(const Buffers& b, std::int64_t r, std::int64_t n, DType t) {
  const std::size_t row_bytes = static_cast<std::size_t>(n) * smk::dtype_size(t);
  std::vector<unsigned char> raw(row_bytes);
  const auto* src = static_cast<const unsigned char*>(b.in[0]) + static_cast<std::size_t>(r) * row_bytes;
  SMK_CUDA_CHECK(cudaMemcpy(raw.data(), src, row_bytes, cudaMemcpyDeviceToHost));
  return next20_decode(raw.data(), n, t);
}

// The rows a case checks on its own: 0, 1, rows / 2, rows − 1 (distinct, ascending).
std::vector<std::int64_t> next20_pick(std::int64_t rows) {
  std::vector<std::int64_t> pick = {0, std::min<std::int64_t>(1, rows - 1), rows / 2, rows - 1};
  std::sort(pick.begin(), pick.end());
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  return pick;
}

// Ratios of variant i's rounds to variant 0's: "median (min-max)".
std::string next20_ratio(const std::vector<double>& a, const std::vector<double>& base) {
  std::vector<double> r;
  for (std::size_t k = 0; k < a.size(); ++k) r.push_back(a[k] / base[k]);
  std::sort(r.begin(), r.end());
  char s[64];
  std::snprintf(s, sizeof s, "%.3f (%.3f-%.3f)", r[r.size() / 2], r.front(), r.back());
  return s;
}

// How many of the `count` 4-byte values at ref and got differ (bit for bit).
std::size_t next20_differing(const unsigned char* ref, const unsigned char* got, std::size_t count) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, ref + 4 * i, 4);
    std::memcpy(&b, got + 4 * i, 4);
    d += a != b;
  }
  return d;
}

// The row lengths a next20 mode times: SMK_N20_LENGTHS (comma-separated, e.g. "32769,34816,36864,38912") when set,
// else `fallback`. Session 20's plan item 2 re-times f32 softmax between 32769 and 40001 this way; --next20-l16 reads
// it too since session 21 (its first use, s21a, found it did not).
std::vector<std::int64_t> next20_lengths(std::vector<std::int64_t> fallback) {
  const char* env = std::getenv("SMK_N20_LENGTHS");
  if (env == nullptr || *env == '\0') return fallback;
  std::vector<std::int64_t> ns;
  for (const char* p = env; *p != '\0';) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 1) {
      std::fprintf(stderr, "tune_softmax: SMK_N20_LENGTHS=%s: expected positive integers separated by commas\n", env);
      std::exit(2);
    }
    ns.push_back(v);
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') {
      std::fprintf(stderr, "tune_softmax: SMK_N20_LENGTHS=%s: unexpected '%c'\n", env, *end);
      std::exit(2);
    }
  }
  return ns;
}

int next20_f32_65536() {
  if (!next20_device_ok("--next20-f32-65536")) return 1;
  using smk::cuda::ScopedSoftmaxPath;
  using smk::cuda::SoftmaxPath;
  struct P20 {
    const char* name;
    SoftmaxPath path;
  };
  const std::vector<P20> paths = {{"auto", SoftmaxPath::automatic}, {"split_row", SoftmaxPath::split_row},
                                  {"cluster_row", SoftmaxPath::cluster_row}};
  split_row_tuning() = {};
  row_loop_tuning() = {};
  cluster_stage_tuning() = {};
  void* flush = nullptr;
  const std::size_t flush_bytes = std::size_t{256} << 20;
  SMK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  // The outputs copied back into pinned memory (a whole 2 GiB output in tens of ms, not pageable copies' ~0.3 s).
  unsigned char *host_ref = nullptr, *host_got = nullptr;
  const auto host_bytes = static_cast<std::size_t>(kNext20MaxBytes);
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_ref), host_bytes));
  SMK_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_got), host_bytes));
  const smk::Device dev = smk::Device::cuda(0);
  int bad = 0;
  auto call = [&](const P20& v, Op op, std::int64_t rows, std::int64_t n, const Buffers& b, int copy) {
    const smk::TensorView in = smk::TensorView::contiguous(b.in[static_cast<std::size_t>(copy) % b.in.size()],
                                                            DType::f32, dev, {rows, n});
    const smk::TensorView out = smk::TensorView::contiguous(b.out, DType::f32, dev, {rows, n});
    ScopedSoftmaxPath scope(v.path);
    if (op == Op::softmax) smk::softmax(out, in);
    else smk::log_softmax(out, in);
  };
  auto case20 = [&](std::int64_t rows, std::int64_t n, const Buffers& b, Op op) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    const char* op_s = op == Op::softmax ? "softmax" : "log_softmax";
    const double bytes = 2.0 * 4.0 * static_cast<double>(rows) * static_cast<double>(n);
    const int reps = bytes > 1e9 ? 11 : bytes > 1e8 ? 15 : 31, rounds = 3;
    std::vector<std::vector<double>> us(paths.size() + 1);
    for (int round = 0; round < rounds; ++round)
      for (std::size_t i = 0; i <= paths.size(); ++i) {
        const P20& v = paths[i == paths.size() ? 0 : i];
        us[i].push_back(timed_median_us(reps, [&](int k) { call(v, op, rows, n, b, k); }, flush, flush_bytes));
      }
    std::vector<Variant> names;
    for (const P20& v : paths) names.push_back(Variant{v.name, 's'});
    report_rounds(shape, DType::f32, op, names, us, bytes);
    for (std::size_t i = 1; i < paths.size(); ++i)
      std::printf("%-14s f32   %-11s ratio %s / auto: %s over %d rounds\n", shape, op_s, paths[i].name,
                  next20_ratio(us[i], us[0]).c_str(), rounds);
    // Which kernel served each path (launch counters), then the bits of each against auto's and its error.
    const std::size_t out_elems = static_cast<std::size_t>(rows * n);
    const std::vector<std::int64_t> pick = next20_pick(rows);
    std::vector<std::vector<double>> xs;
    for (std::int64_t r : pick) xs.push_back(next20_row(b, r, n, DType::f32));
    const double u = 5.9604644775390625e-8, L = std::ceil(std::log2(static_cast<double>(n)));
    for (std::size_t i = 0; i < paths.size(); ++i) {
      SMK_CUDA_CHECK(cudaMemset(b.out, 0xFF, out_elems * 4));
      const std::uint64_t cs0 = cluster_stage_launch_count(), sp0 = split_plain_launch_count(),
                          sm0 = split_multi_launch_count(), rl0 = row_loop_launch_count(),
                          st0 = split_chunk_tma_launch_count();
      call(paths[i], op, rows, n, b, 0);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("served %s f32 %s %s: %s\n", shape, op_s, paths[i].name,
                  cluster_stage_launch_count() > cs0     ? "cluster_stage"
                  : row_loop_launch_count() > rl0        ? "row_loop"
                  : split_multi_launch_count() > sm0     ? "split_row multi-chunk one launch"
                  : split_chunk_tma_launch_count() > st0 ? "split_row three kernels (TMA chunk pass)"
                  : split_plain_launch_count() > sp0     ? "split_row three kernels (compact)"
                  : paths[i].path == SoftmaxPath::cluster_row ? "cluster_row (block rows in a cluster)"
                                                              : "split_row one-chunk one launch (or another kernel)");
      unsigned char* y = i == 0 ? host_ref : host_got;
      SMK_CUDA_CHECK(cudaMemcpy(y, b.out, out_elems * 4, cudaMemcpyDeviceToHost));
      if (i > 0) {
        const std::size_t d = next20_differing(host_ref, host_got, out_elems);
        std::printf("bits %s f32 %s %s / auto: %s", shape, op_s, paths[i].name, d == 0 ? "same bits\n" : "differ");
        if (d) std::printf(" in %zu of %zu elements\n", d, out_elems);
      }
      double worst_u = 0, worst_gate = 0;
      for (std::size_t k = 0; k < pick.size(); ++k) {
        const std::vector<double>& x = xs[k];
        double m = -1e300, l = 0;
        for (double v : x) m = std::max(m, v);
        for (double v : x) l += std::exp(v - m);
        const double lse = m + std::log(l);
        for (std::size_t j = 0; j < x.size(); ++j) {
          float g;
          std::memcpy(&g, y + 4 * (static_cast<std::size_t>(pick[k] * n) + j), 4);
          double eu, eg;
          if (op == Op::softmax) {
            const double p = std::exp(x[j] - lse), e = std::fabs(g - p);
            eu = e / (u * std::max(p, 1e-30));
            eg = eu / (18.0 + L);
          } else {
            const double yr = x[j] - lse, e = std::fabs(g - yr);
            eu = e / u;
            eg = e / ((2.0 * std::fabs(yr) + L + 10.0 + 3.0 * std::log(static_cast<double>(n))) * u);
          }
          worst_u = std::max(worst_u, eu == eu ? eu : 1e30);
          worst_gate = std::max(worst_gate, eg == eg ? eg : 1e30);
        }
      }
      bad += worst_gate > 1.0;
      std::printf("err %s f32 %s %s: %.2f u (%.3f of the gate) on rows 0, 1, rows/2, rows-1%s\n", shape, op_s,
                  paths[i].name, worst_u, worst_gate, worst_gate > 1.0 ? "  OVER THE GATE" : "");
    }
    std::fflush(stdout);
  };
  for (std::int64_t n : next20_lengths({32769, 40001, 45056, 49152, 57344, 65536}))
    for (std::int64_t rows : {1, 32, 1024, 8192}) {
      const auto cap = static_cast<std::int64_t>(kNext20MaxBytes / (4.0 * static_cast<double>(n)));
      const std::int64_t r = std::min(rows, cap);
      Buffers b = forward_buffers(r, n, DType::f32);
      for (Op op : {Op::softmax, Op::log_softmax}) case20(r, n, b, op);
      free_buffers(b);
    }
  cudaFree(flush);
  cudaFreeHost(host_ref);
  cudaFreeHost(host_got);
  std::printf("next20-f32-65536: %d case(s) over the gate\n", bad);
  return bad == 0 ? 0 : 1;
}

int next20_l16() {
  if (!next20_device_ok("--next20-l16")) return 1;
  struct V20 {
    const char* name;
    int lanes;  // 16: L16; 0: T128; -1: the dispatcher (the public entry points)
  };
  const V20 t128{"T128", 0}, l16{"L16", 16}, dispatched{"auto", -1};
  void* flush = nullptr;
  const std::size_t flush_bytes = std::size_t{256} << 20;
  SMK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  const smk::Device dev = smk::Device::cuda(0);
  int bad = 0;
  auto call = [&](const V20& v, Op op, std::int64_t rows, std::int64_t n, DType t, const Buffers& b, int copy) {
    if (v.lanes >= 0) {
      LseStreamConfig c;
      c.lanes = v.lanes;
      c.threads = v.lanes ? 0 : 128;
      return launch_lse_stream_rows(problem(op, rows, n, t, b, copy), c, nullptr);
    }
    const smk::TensorView in =
        smk::TensorView::contiguous(b.in[static_cast<std::size_t>(copy) % b.in.size()], t, dev, {rows, n});
    const smk::TensorView s0 = smk::TensorView::contiguous(b.stats, DType::f32, dev, {rows});
    if (op == Op::logsumexp) return smk::logsumexp(s0, in);
    smk::softmax_state(s0, smk::TensorView::contiguous(b.stats + rows, DType::f32, dev, {rows}), in);
  };
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (std::int64_t n : next20_lengths({2048, 3072, 4096, 6144, 8192, 12288, 16384}))  // session 21: the variable too
      for (std::int64_t rows0 : {1, 64, 4096, 16384}) {
        const auto cap = static_cast<std::int64_t>(
            kNext20MaxBytes / (static_cast<double>(smk::dtype_size(t)) * static_cast<double>(n)));
        const std::int64_t rows = std::min(rows0, cap);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        Buffers b = forward_buffers(rows, n, t);
        // The rows checked against float64: the first min(rows, 2^24 / n), and rows / 2, rows − 1.
        const std::int64_t first = std::min(rows, std::max<std::int64_t>(1, kNext20RefElems / n));
        std::vector<std::int64_t> checked;
        for (std::int64_t r = 0; r < first; ++r) checked.push_back(r);
        for (std::int64_t r : next20_pick(rows))
          if (r >= first) checked.push_back(r);
        std::vector<double> ref_m(checked.size()), ref_l(checked.size());
        {
          // rows 0 .. first − 1 in one copy back, the others one by one
          const std::size_t es = smk::dtype_size(t), un = static_cast<std::size_t>(n);
          std::vector<unsigned char> raw(static_cast<std::size_t>(first) * un * es);
          SMK_CUDA_CHECK(cudaMemcpy(raw.data(), b.in[0], raw.size(), cudaMemcpyDeviceToHost));
          for (std::size_t k = 0; k < checked.size(); ++k) {
            const std::vector<double> x =
                checked[k] < first ? next20_decode(raw.data() + static_cast<std::size_t>(checked[k]) * un * es, n, t)
                                   : next20_row(b, checked[k], n, t);
            double m = -1e300, l = 0;
            for (double v : x) m = std::max(m, v);
            for (double v : x) l += std::exp(v - m);
            ref_m[k] = m;
            ref_l[k] = l;
          }
        }
        const double bytes =
            static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t));
        const int reps = bytes > 2.5e8 ? 11 : 21, rounds = 3;
        for (Op op : {Op::logsumexp, Op::state}) {
          const char* op_s = op == Op::logsumexp ? "logsumexp" : "state";
          std::vector<V20> vs = {t128, l16};
          {  // the dispatcher's kernel: timed as "auto" unless it is T128
            const std::uint64_t c0 = lse_stream_launch_count();
            lse_stream_last_config().threads.store(-1);
            call(dispatched, op, rows, n, t, b, 0);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            const bool is_t128 = lse_stream_launch_count() > c0 && lse_stream_last_config().threads.load() == 128;
            std::printf("served %s %s %s auto: %s\n", shape, smk::dtype_name(t), op_s,
                        is_t128 ? "lse_stream T128 (not timed again)"
                        : lse_stream_launch_count() > c0 ? "lse_stream L16"
                                                         : "another kernel (timed as auto)");
            if (!is_t128) vs.push_back(dispatched);
          }
          std::vector<std::vector<double>> us(vs.size() + 1);
          for (int round = 0; round < rounds; ++round)
            for (std::size_t i = 0; i <= vs.size(); ++i) {
              const V20& v = vs[i == vs.size() ? 0 : i];
              us[i].push_back(
                  timed_median_us(reps, [&](int k) { call(v, op, rows, n, t, b, k); }, flush, flush_bytes));
            }
          std::vector<Variant> names;
          for (const V20& v : vs)
            names.push_back(Variant{std::string(v.name) + (op == Op::state ? " (state)" : ""), 'l'});
          report_rounds(shape, t, op, names, us, bytes);
          for (std::size_t i = 1; i < vs.size(); ++i)
            std::printf("%-14s %-5s %-9s ratio %s / T128: %s over %d rounds\n", shape, smk::dtype_name(t), op_s,
                        vs[i].name, next20_ratio(us[i], us[0]).c_str(), rounds);
          // Bits against T128 (the whole call), then each variant's error on the rows checked.
          const std::size_t out_floats = static_cast<std::size_t>(rows) * (op == Op::state ? 2 : 1);
          std::vector<unsigned char> ref(out_floats * 4), got(out_floats * 4);
          const double u = 5.9604644775390625e-8, L = std::ceil(std::log2(static_cast<double>(n)));
          const double c = t == DType::f32 ? 3.0 : 4.25, ln_n = std::log(static_cast<double>(n));
          for (std::size_t i = 0; i < vs.size(); ++i) {
            SMK_CUDA_CHECK(cudaMemset(b.stats, 0xFF, out_floats * 4));
            call(vs[i], op, rows, n, t, b, 0);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<unsigned char>& y = i == 0 ? ref : got;
            SMK_CUDA_CHECK(cudaMemcpy(y.data(), b.stats, out_floats * 4, cudaMemcpyDeviceToHost));
            if (i > 0) {
              const std::size_t d = next20_differing(ref.data(), got.data(), out_floats);
              std::printf("bits %s %s %s %s / T128: %s", shape, smk::dtype_name(t), op_s, vs[i].name,
                          d == 0 ? "same bits\n" : "differ");
              if (d) std::printf(" in %zu of %zu floats\n", d, out_floats);
            }
            auto stat = [&](std::size_t slot) {
              float f;
              std::memcpy(&f, y.data() + 4 * slot, 4);
              return static_cast<double>(f);
            };
            double pick_u = 0, all_u = 0, all_gate = 0;
            int m_wrong = 0;
            const std::vector<std::int64_t> pick = next20_pick(rows);
            for (std::size_t k = 0; k < checked.size(); ++k) {
              const auto r = static_cast<std::size_t>(checked[k]);
              double eu, eg;
              if (op == Op::logsumexp) {
                const double lse = ref_m[k] + std::log(ref_l[k]), e = std::fabs(stat(r) - lse);
                eu = e / (u * std::max(1.0, std::fabs(lse)));
                eg = e / ((std::fabs(lse) + L + 10.0 + c * ln_n) * u);
              } else {
                m_wrong += stat(r) != ref_m[k];
                eu = std::fabs(stat(r + static_cast<std::size_t>(rows)) - ref_l[k]) / (u * ref_l[k]);
                eg = eu / (L + 11.0 + (t == DType::f32 ? 1.0 : 2.25) * ln_n);
              }
              if (eu != eu) eu = eg = 1e30;
              if (std::find(pick.begin(), pick.end(), checked[k]) != pick.end()) pick_u = std::max(pick_u, eu);
              all_u = std::max(all_u, eu);
              all_gate = std::max(all_gate, eg);
            }
            bad += all_gate > 1.0 || m_wrong > 0;
            std::printf("err %s %s %s %s: %.2f u on rows 0, 1, rows/2, rows-1; largest over %zu rows %.2f u (%.3f of "
                        "the gate)%s%s\n",
                        shape, smk::dtype_name(t), op_s, vs[i].name, pick_u, checked.size(), all_u, all_gate,
                        op == Op::state ? (m_wrong ? ", m NOT the row max" : ", m the row max") : "",
                        all_gate > 1.0 ? "  OVER THE GATE" : "");
          }
          std::fflush(stdout);
        }
        free_buffers(b);
      }
  cudaFree(flush);
  std::printf("next20-l16: %d case(s) over the gate\n", bad);
  return bad == 0 ? 0 : 1;
}

// The modes main knows, with the words a mode reads after it (the usage above). Any other first argument starting with
// "--" prints the usage and exits 2 (session 16's review F2: a prefix match ran --bwd16b as --bwd16).
struct Mode {
  const char* flag;
  const char* more;
};
constexpr Mode kModes[] = {
    {"--split18", ""}, {"--split18-ncu", ""},
    {"--quick", ""}, {"--rowpipe", ""}, {"--rowpipe-ncu", ""}, {"--bw16", ""}, {"--bw16b", ""}, {"--bw16-ncu", ""},
    {"--mid16", ""}, {"--fwd16", ""}, {"--mid8", ""}, {"--mid8-ncu", ""}, {"--short8", ""}, {"--short9", ""},
    {"--mid9", ""}, {"--vocab10", ""}, {"--lse10", ""}, {"--lse10-f4", ""}, {"--lse10-ncu", ""}, {"--short10", ""},
    {"--short11", ""}, {"--sbwd11", ""}, {"--one11", ""}, {"--mid11", " [old]"}, {"--short12", ""},
    {"--short12-ncu", ""}, {"--one12", " [ncu]"}, {"--mid12", " [ncu]"}, {"--sbwd12", ""}, {"--sbwd12-ncu", ""},
    {"--pack14", " [quick]"}, {"--pack14-ncu", ""}, {"--tma14", ""}, {"--tma14-ncu", ""}, {"--tma14b", ""},
    {"--short14", ""}, {"--short14-ncu", ""}, {"--short15", ""}, {"--short15-ncu", ""}, {"--split15", ""},
    {"--split15-ncu", ""}, {"--split15b", ""}, {"--short16", ""}, {"--short16-ncu", ""}, {"--bwd16", ""},
    {"--bwd16-ncu", ""}, {"--split16", ""}, {"--split16-ncu", ""}, {"--bwd17", ""},
    {"--blk17", ""}, {"--blk17-ncu", ""}, {"--lse17", ""}, {"--lse17-ncu", ""}, {"--short18", ""},
    {"--next20-f32-65536", ""}, {"--next20-l16", ""}};

bool known_mode(const char* arg) {
  for (const Mode& m : kModes)
    if (std::strcmp(arg, m.flag) == 0) return true;
  return false;
}

void print_usage() {
  std::fprintf(stderr, "usage: tune_softmax [MODE]  (no MODE: the default sweep)\n  MODE:");
  std::size_t col = 8;
  for (const Mode& m : kModes) {
    const bool first = &m == kModes;
    const std::size_t w = std::strlen(m.flag) + std::strlen(m.more) + (first ? 1 : 3);
    if (col + w > 100) std::fprintf(stderr, "\n       "), col = 7;
    std::fprintf(stderr, "%s%s%s", first ? " " : " | ", m.flag, m.more);
    col += w;
  }
  std::fprintf(stderr, "\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--lse18") == 0) return lse18_mode();  // lse18 (session 18)
  if (argc > 1 && std::strcmp(argv[1], "--lse18-ncu") == 0) return lse18_ncu();
  if (argc > 1 && (std::strcmp(argv[1], "--few19") == 0 || std::strcmp(argv[1], "--few19-ncu") == 0))
    return few19_mode(std::strcmp(argv[1], "--few19-ncu") == 0);  // few19 (session 19)
  for (const auto& [flag, mode] : {std::pair{"--next20-f32-65536", &next20_f32_65536},
                                   std::pair{"--next20-l16", &next20_l16}})
    if (argc > 1 && std::strcmp(argv[1], flag) == 0) return next20_run(mode, flag);  // prep20 (session 19)
  if (argc > 1 && std::strncmp(argv[1], "--", 2) == 0 && !known_mode(argv[1])) {
    std::fprintf(stderr, "tune_softmax: unknown argument %s\n", argv[1]);
    print_usage();
    return 2;
  }
  if (argc > 1 && std::strcmp(argv[1], "--short18") == 0) return short18();
  if (argc > 1 && (std::strcmp(argv[1], "--lse17") == 0 || std::strcmp(argv[1], "--lse17-ncu") == 0))
    return lse17_mode(std::strcmp(argv[1], "--lse17-ncu") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--blk17") == 0 || std::strcmp(argv[1], "--blk17-ncu") == 0))
    return blk17_mode(std::strcmp(argv[1], "--blk17-ncu") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--split16") == 0 || std::strcmp(argv[1], "--split16-ncu") == 0))
    return split16_mode(std::strcmp(argv[1], "--split16-ncu") == 0);
  if (argc > 1 && std::strcmp(argv[1], "--bwd17") == 0) return bwd17_mode();
  if (argc > 1 && (std::strcmp(argv[1], "--bwd16") == 0 || std::strcmp(argv[1], "--bwd16-ncu") == 0))
    return bwd16_mode(std::strcmp(argv[1], "--bwd16-ncu") == 0);
  if (argc > 1 && std::strncmp(argv[1], "--split15", 9) == 0)
    return split15_mode(std::strcmp(argv[1], "--split15-ncu") == 0, std::strcmp(argv[1], "--split15b") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--short16") == 0 || std::strcmp(argv[1], "--short16-ncu") == 0))
    return short16(std::strcmp(argv[1], "--short16-ncu") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--short15") == 0 || std::strcmp(argv[1], "--short15-ncu") == 0))
    return short15(std::strcmp(argv[1], "--short15-ncu") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--short14") == 0 || std::strcmp(argv[1], "--short14-ncu") == 0))
    return short14(std::strcmp(argv[1], "--short14-ncu") == 0);
  if (argc > 1 && (std::strcmp(argv[1], "--split18") == 0 || std::strcmp(argv[1], "--split18-ncu") == 0))
    return split18_mode(std::strcmp(argv[1], "--split18-ncu") == 0);
  if (argc > 1 && std::strncmp(argv[1], "--tma14", 7) == 0)
    return tma14_mode(std::strcmp(argv[1], "--tma14-ncu") == 0, std::strcmp(argv[1], "--tma14b") == 0);
  if (argc > 1 && std::strncmp(argv[1], "--pack14", 8) == 0)
    return pack14_mode(std::strcmp(argv[1], "--pack14-ncu") == 0, argc > 2 && std::strcmp(argv[2], "quick") == 0);
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool rowpipe = argc > 1 && std::strcmp(argv[1], "--rowpipe") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--rowpipe-ncu") == 0) {
    // One launch of each kernel for Nsight Compute (device.sh's former step rowpipe): 8192×32000, the direct kernel then
    // the staged one, softmax in f32 and bf16, then logsumexp in bf16.
    const Variant old_v = fit(32000, dispatch_cluster(32000)), new_v = fit(32000, dispatch_cluster(32000), true);
    for (const auto& [t, op] : {std::pair{DType::f32, Op::softmax}, {DType::bf16, Op::softmax},
                                {DType::bf16, Op::logsumexp}}) {
      Buffers b = make_buffers(8192, 32000, t);
      for (const Variant& v : {old_v, new_v}) launch_block_rows(problem(op, 8192, 32000, t, b, 0), v.block, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--bw16-ncu") == 0) {
    // One launch of each kernel for Nsight Compute (device.sh's former step bw16): warp_per_row 262144×128 softmax bf16
    // (E32 L4) and f32 (E16 L8); the wide block bf16 8192×32000 softmax unstaged then staged; the backward bf16
    // 8192×32000 on cluster_row (before bw16) then the wide block with dy in shared memory (prefetching when this was
    // written; that form was removed in session 11, so the second launch now profiles the unstaged block).
    {
      Buffers b = make_buffers(262144, 128, DType::bf16);
      launch_warp_rows(problem(Op::softmax, 262144, 128, DType::bf16, b, 0), {32, 4}, nullptr);
      free_buffers(b);
      b = make_buffers(262144, 128, DType::f32);
      launch_warp_rows(problem(Op::softmax, 262144, 128, DType::f32, b, 0), {16, 8}, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    Buffers b = make_buffers(8192, 32000, DType::bf16);
    for (bool staged : {false, true})
      launch_block_rows(problem(Op::softmax, 8192, 32000, DType::bf16, b, 0), wide(32000, staged).block, nullptr);
    launch_backward_block_rows(backward_problem(Op::softmax_backward, 8192, 32000, DType::bf16, b, 0),
                               bcluster_old(32000).block, nullptr);
    launch_backward_block_rows(backward_problem(Op::softmax_backward, 8192, 32000, DType::bf16, b, 0),
                               bshared(32000, true).block, nullptr);
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  const bool short8 = argc > 1 && std::strcmp(argv[1], "--short8") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--mid8-ncu") == 0) {
    // One launch of each kernel for Nsight Compute (device.sh's former step mid8): logsumexp 4096x16384 f32 then bf16, the
    // direct wide block (T512) then one row ahead; 8192x32000 logsumexp f32 and bf16 on the dispatcher's staged wide
    // block; the bf16 backward 8192x32000 (softmax, log-softmax) on the dy-shared block (the dispatcher's prefetching
    // block when written; since session 11 the unstaged one: the prefetching form was removed, review F13).
    for (DType t : {DType::f32, DType::bf16}) {
      Buffers b = make_buffers(4096, 16384, t);
      for (const Variant& v : {direct(16384), ahead(16384, 1, false)})
        launch_block_rows(problem(Op::logsumexp, 4096, 16384, t, b, 0), v.block, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    for (DType t : {DType::f32, DType::bf16}) {
      Buffers b = make_buffers(8192, 32000, t);
      launch_block_rows(problem(Op::logsumexp, 8192, 32000, t, b, 0), wide(32000, true).block, nullptr);
      if (t == DType::bf16)
        for (Op op : {Op::softmax_backward, Op::log_softmax_backward})
          launch_backward_block_rows(backward_problem(op, 8192, 32000, t, b, 0), bshared(32000, true).block, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    return 0;
  }
  const bool mid8 = argc > 1 && std::strcmp(argv[1], "--mid8") == 0;
  const bool mid16 = argc > 1 && std::strcmp(argv[1], "--mid16") == 0;
  const bool fwd16 = argc > 1 && std::strcmp(argv[1], "--fwd16") == 0;
  const bool bw16 = argc > 1 && std::strcmp(argv[1], "--bw16") == 0;
  const bool bw16b = argc > 1 && std::strcmp(argv[1], "--bw16b") == 0;
  const int reps = quick ? 10 : bw16 || bw16b || mid16 || fwd16 ? 15 : short8 ? 25 : 30;
  {
    // The copy ceiling on this device, for reference (2 GiB, read + write counted).
    const std::size_t bytes = std::size_t{1} << 31;
    void *a = nullptr, *c = nullptr;
    SMK_CUDA_CHECK(cudaMalloc(&a, bytes));
    SMK_CUDA_CHECK(cudaMalloc(&c, bytes));
    SMK_CUDA_CHECK(cudaMemset(a, 1, bytes));
    Buffers dummy;
    const double us = median_us(dummy, 10, [&](int) { SMK_CUDA_CHECK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice)); });
    std::printf("copy 2 GiB: %.1f us, %.2f TB/s\n", us, 2.0 * bytes / (us * 1e-6) / 1e12);
    cudaFree(a);
    cudaFree(c);
  }
  const std::vector<DType> both = {DType::f32, DType::bf16};
  const std::vector<Op> fwd = {Op::softmax, Op::logsumexp};
  if (short8) {
    // short8 (session 8, docs/perf-notebook.md): warp_per_row's grid on the short rows of 2^25 elements, persistent
    // (g0, first and last: the spread of one kernel timed twice) against up to 4, 8 (the dispatcher's for f32,
    // kWarpGridF32), 16 and 64 times the resident blocks; the 16-bit backward of rows of 32 on one lane and on two.
    // (Session 8's first run timed cache hints, two rows at once and the backward's loads here too: commit 14ca731.)
    auto grids = [](int e, int l) {
      return std::vector<Variant>{warpg(e, l, 0), warpg(e, l, 4), warpg(e, l, 8), warpg(e, l, 16), warpg(e, l, 64),
                                  warpg(e, l, 0)};
    };
    const std::vector<DType> f32 = {DType::f32}, bf16 = {DType::bf16};
    const std::vector<Op> ops = {Op::softmax, Op::softmax_backward};
    run_shape(262144, 128, grids(16, 8), f32, ops, reps);
    run_shape(1048576, 32, grids(16, 2), f32, ops, reps);
    run_shape(32768, 1024, grids(32, 32), f32, ops, reps);
    run_shape(1048576, 32, {warpg(32, 1, 0), warpg(16, 2, 0), warpg(32, 1, 0), warpg(16, 2, 0)}, bf16,
              {Op::softmax_backward, Op::log_softmax_backward}, reps);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--short9") == 0) {
    // short9 (session 9, docs/perf-notebook.md): the backward passes' warp configurations on the issue's short rows
    // (2^25 elements) and three lengths between; the dispatcher's configuration before short9 (f32 on the grid of 8,
    // 16-bit persistent) timed first, in the middle and last (the spread of one kernel), the others between. (The run
    // of c16e5c4 also timed the kernel under tighter __launch_bounds__ and with 16-bit y and dy held packed: slower,
    // removed; their code is in that commit.)
    const std::vector<Op> bwd = {Op::softmax_backward, Op::log_softmax_backward};
    const int r9 = 40;
    auto f32_set = [](int e, int l) {
      std::vector<Variant> v = {wv(e, l, 8), wv(e, l, 0), wv(e, l, 8)};
      if (e == 16 && l < 32) v.push_back(wv(8, 2 * l, 8));  // short9's rule for 17..256
      if (e == 16 && l <= 8) v.push_back(wv(4, 4 * l, 8));
      v.push_back(wv(e, l, 8));
      return v;
    };
    auto bf16_set = [](int e, int l) {
      std::vector<Variant> v = {wv(e, l, 0), wv(e, l, 8), wv(e, l, 0)};
      if (e == 32 && l < 32) v.push_back(wv(16, 2 * l, 0));  // short9's rule for 33..64
      if (l * e / 8 <= 32) v.push_back(wv(8, l * e / 8, 0));
      if (e == 16 && l > 1) v.push_back(wv(32, l / 2, 0));
      v.push_back(wv(e, l, 0));
      return v;
    };
    const std::vector<DType> f32 = {DType::f32}, bf16 = {DType::bf16};
    run_shape(262144, 128, f32_set(16, 8), f32, bwd, r9);
    run_shape(1048576, 32, f32_set(16, 2), f32, bwd, r9);
    // At 1024 also block_per_row's backward kernel on blocks of 64 threads (16 + 16 a thread: 64 registers, up to 32
    // blocks an SM, Triton's occupancy), timed there in short8 (100.0 against the warp kernel's 101.9 in f32).
    auto with_block = [](std::vector<Variant> v) {
      v.insert(v.end() - 1, block(64, 1));
      return v;
    };
    run_shape(32768, 1024, with_block(f32_set(32, 32)), f32, bwd, r9);
    run_shape(262144, 128, bf16_set(32, 4), bf16, bwd, r9);
    run_shape(1048576, 32, bf16_set(16, 2), bf16, bwd, r9);
    run_shape(32768, 1024, with_block(bf16_set(32, 32)), bf16, bwd, r9);
    // Between: 64, 256, 512 (the dispatcher's before short9: E16 L4 / E16 L16 / E16 L32 in f32, E32 L2 / E32 L8 /
    // E32 L16 in bf16).
    run_shape(524288, 64, f32_set(16, 4), f32, bwd, r9);
    run_shape(131072, 256, f32_set(16, 16), f32, bwd, r9);
    run_shape(65536, 512, f32_set(16, 32), f32, bwd, r9);
    run_shape(524288, 64, bf16_set(32, 2), bf16, bwd, r9);
    run_shape(131072, 256, bf16_set(32, 8), bf16, bwd, r9);
    run_shape(65536, 512, bf16_set(32, 16), bf16, bwd, r9);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--short10") == 0) {
    // short10 (session 10, docs/perf-notebook.md "session 10 — short10"): 16-bit rows of 32 ... 512 (2^25 elements),
    // each op at the dispatcher's configuration before short10 ("default", timed first and last: the spread of one
    // kernel) beside the same configuration with the row held packed (WarpConfig::packed, packed16.cuh) and other
    // lanes: rows of 32 on 4 lanes at 8 elements (16-byte loads, 8 rows a warp), the backward at the other lane width.
    const int r10 = 30;
    auto packed = [](Variant v) {
      v.warp.packed = true;
      v.name += " packed";
      return v;
    };
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1048576, 32}, {524288, 64}, {262144, 128},
                                  {131072, 256}, {65536, 512}})
      for (DType t : {DType::bf16, DType::f16}) {
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp, Op::softmax_backward, Op::log_softmax_backward}) {
          const bool bwd = op == Op::softmax_backward || op == Op::log_softmax_backward;
          // The dispatcher's before short10 (softmax_cuda.cpp warp_config): 64 bytes a lane (E32), 32 (E16) for the
          // backward to 64 and log-softmax to 32.
          const bool narrow = (bwd && n <= 64) || (op == Op::log_softmax && n <= 32);
          const int e = narrow ? 16 : 32, l = static_cast<int>(n) / e;
          const Variant def = wv(e, l, 0);
          // Softmax has no packed kernel since the session 10 review (F13: measured 0.78-0.89×, warp_row.cu): its
          // packed variants would time the unpacked kernel, so softmax times the default and 4 lanes of 8 only.
          const bool pk = op != Op::softmax;
          std::vector<Variant> vs = {def};
          if (pk) vs.push_back(packed(def));
          if (n == 32) {
            vs.push_back(wv(8, 4, 0));
            if (pk) vs.push_back(packed(wv(8, 4, 0)));
          }
          if (pk && e == 16) vs.push_back(packed(wv(32, l / 2 > 0 ? l / 2 : 1, 0)));
          if (pk && e == 32 && (bwd || n == 32)) vs.push_back(packed(wv(16, 2 * l, 0)));
          vs.push_back(def);
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * (bwd ? 3 : writes_rows(op) ? 2 : 1);
          for (const Variant& v : vs) {
            warp_row_tuning() = v.tuning;
            const double us = median_us(b, r10, [&](int i) {
              if (bwd) launch_backward_warp_rows(backward_problem(op, rows, n, t, b, i), v.warp, nullptr);
              else launch_warp_rows(problem(op, rows, n, t, b, i), v.warp, nullptr);
            });
            report(shape, t, op, v, us, bytes);
          }
        }
        free_buffers(b);
      }
    warp_row_tuning() = {};
    return 0;
  }
  // short12 (session 12, docs/perf-notebook.md "session 12) — short12"): the forward ops on rows of 32 ... 1024 (2^25
  // elements), f32, bf16 and f16, at the dispatcher's configuration before short12 ("default", timed first and last:
  // the spread of one kernel) beside 16-bit softmax on 16 elements a lane (two lanes a row at 32: the 32 bytes a lane
  // that 16-bit log-softmax takes there) with the 16-bit tier's terms, on the general kernel and on the dense one
  // (warp_row.cu, E16 at kDenseMinBlocks<16> blocks an SM), 16-bit log-softmax and logsumexp packed at E16, and at
  // 1024 the default alone. --short12-ncu: one launch of each kernel Nsight Compute looks at (device.sh's former step short12).
  const bool s12_ncu = argc > 1 && std::strcmp(argv[1], "--short12-ncu") == 0;
  if (argc > 1 && (std::strcmp(argv[1], "--short12") == 0 || s12_ncu)) {
    const int r12 = s12_ncu ? 1 : 40;
    auto dense = [](Variant v) {
      v.warp.dense = true;
      v.name += " dense";
      return v;
    };
    auto packed = [](Variant v) {
      v.warp.packed = true;
      v.name += " packed";
      return v;
    };
    using Shape = std::pair<std::int64_t, std::int64_t>;
    const std::vector<Shape> shapes = s12_ncu ? std::vector<Shape>{{1048576, 32}}
                                              : std::vector<Shape>{{1048576, 32}, {262144, 128}, {65536, 512},
                                                                   {32768, 1024}};
    for (const auto& [rows, n] : shapes)
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        if (s12_ncu && t == DType::f16) continue;
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        const bool f32 = t == DType::f32;
        for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
          if (s12_ncu && (f32 ? op != Op::softmax : op == Op::logsumexp)) continue;
          // The dispatcher's before short12 (softmax_cuda.cpp warp_config, warp_packed_rule, warp_dense_rule,
          // lse_stream_config).
          const bool lse_stream_n = op == Op::logsumexp && n == 1024;
          int e = 0;
          if (f32) e = op == Op::logsumexp && n >= 128 ? 32 : 16;
          else e = op == Op::log_softmax && n <= 32 ? 16 : 32;
          if (n >= 1024) e = 32;
          const int l = std::max(1, static_cast<int>(n) / e);
          const int g = f32 && op != Op::logsumexp ? 8 : 0;
          Variant def = wv(e, l, g);
          if (!f32 && !lse_stream_n && (op == Op::logsumexp || op == Op::log_softmax)) def = packed(def);
          if (!f32 && op == Op::softmax && n == 1024) def = dense(def);
          if (lse_stream_n) def = lse_stream(16, 0);
          def.name = "default " + def.name;
          std::vector<Variant> vs = {def};
          if (!f32 && n < 1024) {
            const int l16 = static_cast<int>(n) / 16;
            if (op == Op::softmax) {
              vs.push_back(wv(16, l16, 0));  // the general kernel, the tier's terms (plain_exp_pays at E16)
              vs.push_back(dense(wv(16, l16, 0)));
              // (The run of a9b96ce also timed the dense kernel under a bound of 8 blocks an SM, "dense8": slower,
              // removed; warp_row.cu kDenseMinBlocks.)
            } else if (op == Op::log_softmax && e != 16) {
              vs.push_back(packed(wv(16, l16, 0)));
            } else if (op == Op::logsumexp) {
              vs.push_back(packed(wv(16, l16, 0)));
            }
          }
          if (!s12_ncu) vs.push_back(def);
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * (writes_rows(op) ? 2 : 1);
          for (const Variant& v : vs) {
            warp_row_tuning() = v.tuning;
            if (s12_ncu) {  // one launch, outside any timing
              const RowProblem p = problem(op, rows, n, t, b, 0);
              if (v.kind == 'w') launch_warp_rows(p, v.warp, nullptr);
              SMK_CUDA_CHECK(cudaDeviceSynchronize());
              std::printf("ncu launch: %s %s %s %s\n", shape, smk::dtype_name(t),
                          op == Op::softmax ? "softmax" : op == Op::log_softmax ? "log_softmax" : "logsumexp",
                          v.name.c_str());
              continue;
            }
            const double us = median_us(b, r12, [&](int i) {
              const RowProblem p = problem(op, rows, n, t, b, i);
              if (v.kind == 'w') launch_warp_rows(p, v.warp, nullptr);
              else launch_lse_stream_rows(p, v.lse, nullptr);
            });
            report(shape, t, op, v, us, bytes);
          }
        }
        free_buffers(b);
      }
    warp_row_tuning() = {};
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--short11") == 0) {
    // short11 (session 11, docs/perf-notebook.md "session 11 — short11"): the forward ops on rows of 32 ... 1024 (2^25
    // elements), f32, bf16 and f16, at the dispatcher's configuration before short11 ("default", timed first and last:
    // the spread of one kernel) beside the same configuration on the dense kernel (WarpConfig::dense,
    // warp_rows_dense_kernel: fewer registers, more blocks an SM; 16-bit softmax on two lanes or more only, the one
    // form built: the run of 542e967 also timed f32 dense forms, every forward op, on grids of 8, persistent and 16,
    // since removed), 16-bit log-softmax at 1024 held packed, logsumexp at 1024 on the warp kernel (its default is
    // lse_stream; f32 the general kernel, 16-bit packed), and at 1024 block_per_row's kernel on blocks of 64 and 128
    // threads (Triton's shape: a row a block, few registers).
    const int r11 = 30;
    auto dense = [](Variant v) {
      v.warp.dense = true;
      v.name += " dense";
      return v;
    };
    auto packed = [](Variant v) {
      v.warp.packed = true;
      v.name += " packed";
      return v;
    };
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1048576, 32}, {262144, 128}, {65536, 512},
                                  {32768, 1024}})
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        const bool f32 = t == DType::f32;
        for (Op op : {Op::softmax, Op::log_softmax, Op::logsumexp}) {
          // The dispatcher's before short11 (softmax_cuda.cpp warp_config, warp_packed_rule, lse_stream_config).
          const bool lse_stream_n = op == Op::logsumexp && n == 1024;
          int e = 0;
          if (f32) e = op == Op::logsumexp && n >= 128 ? 32 : 16;
          else e = op == Op::log_softmax && n <= 32 ? 16 : 32;
          if (n >= 1024) e = 32;
          const int l = std::max(1, static_cast<int>(n) / e);
          Variant def = wv(e, l, f32 && op != Op::logsumexp ? 8 : 0);
          def.warp.packed = !f32 && !lse_stream_n && (op == Op::logsumexp || (op == Op::log_softmax && n != 1024));
          if (def.warp.packed) def.name += " packed";
          if (lse_stream_n) def = lse_stream(16, 0);
          def.name = "default " + def.name;
          std::vector<Variant> vs = {def};
          const Variant w = wv(e, l, f32 && op != Op::logsumexp ? 8 : 0);
          // The dense kernel is built for 16-bit softmax at E32 only (warp_row.cu kDenseBuilt); asked for another, a
          // launch takes the general kernel, so no other row is labelled "dense".
          if (!f32 && op == Op::softmax && l > 1) vs.push_back(dense(w));
          if (lse_stream_n) vs.push_back(f32 ? w : packed(w));
          if (!f32 && op == Op::log_softmax && n == 1024) vs.push_back(packed(w));
          if (n == 1024 && op != Op::logsumexp) {
            vs.push_back(block(64, 1));
            vs.push_back(block(128, 1));
          }
          vs.push_back(def);
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * (writes_rows(op) ? 2 : 1);
          for (const Variant& v : vs) {
            warp_row_tuning() = v.tuning;
            const double us = median_us(b, r11, [&](int i) {
              const RowProblem p = problem(op, rows, n, t, b, i);
              if (v.kind == 'w') launch_warp_rows(p, v.warp, nullptr);
              else if (v.kind == 'l') launch_lse_stream_rows(p, v.lse, nullptr);
              else launch_block_rows(p, v.block, nullptr);
            });
            report(shape, t, op, v, us, bytes);
          }
        }
        free_buffers(b);
      }
    warp_row_tuning() = {};
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--sbwd11") == 0) {
    // sbwd11 (session 11, docs/perf-notebook.md "sbwd11"): both backward ops on rows of 32 ... 1024 (2^25 elements),
    // f32, bf16 and f16, the dispatcher's configuration as of e44d455 ("default", timed first and last) beside:
    // f32 — the dense kernel (warp_backward.hpp; d<blocks>: its __launch_bounds__ blocks an SM; the run of 90f1614 also
    // timed cache hints, since removed) at the same lanes and elements, on grids of 8 (the dispatcher's), 4, 16 and the
    // persistent one; 16-bit — rows of 1024 held packed (E32 L32, packed16.cuh), the packed rows on grids of 4 and 8;
    // and at 1024 block_per_row's backward block of 64 threads (16 + 16 a thread), unstaged.
    const int r11 = 50;
    struct V11 {
      std::string name;
      WarpConfig warp{};
      WarpBackwardDense dense{};
      int block = 0;  // > 0: launch_backward_block_rows at this many threads
    };
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1048576, 32}, {262144, 128}, {65536, 512},
                                  {32768, 1024}})
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        const bool f32 = t == DType::f32;
        // The dispatcher's (softmax_cuda.cpp warp_config / warp_backward_config at e44d455).
        WarpConfig def;
        if (f32) {
          def.elems = n <= 256 ? 8 : n / 32;
          def.lanes = static_cast<int>(n) / def.elems;
          def.grid = 8;
        } else {
          def.elems = n == 32 ? 8 : 32;
          def.lanes = static_cast<int>(n) / def.elems;
          def.packed = n <= 512;
        }
        auto name = [&](const WarpConfig& c) {
          return "E" + std::to_string(c.elems) + " L" + std::to_string(c.lanes) + " g" + std::to_string(c.grid) +
                 (c.packed ? " packed" : "");
        };
        std::vector<V11> vs = {{"default " + name(def), def}};
        if (f32) {
          const std::vector<int> bounds = def.elems == 8 ? std::vector<int>{4, 6, 8}
                                          : def.elems == 16 ? std::vector<int>{3, 4, 5} : std::vector<int>{2, 3};
          for (int b : bounds) vs.push_back({name(def) + " d" + std::to_string(b), def, {b}});
          const int mid = def.elems == 8 ? 6 : def.elems == 16 ? 4 : 2;
          for (int g : {0, 4, 16}) {
            WarpConfig c = def;
            c.grid = g;
            vs.push_back({name(c) + " d" + std::to_string(mid), c, {mid}});
          }
        } else {
          WarpConfig c = def;
          c.packed = true;
          if (n == 1024) vs.push_back({name(c), c});
          for (int g : {4, 8}) {
            c.grid = g;
            vs.push_back({name(c), c});
          }
        }
        // sbwd11 (after the run of 90f1614, which timed them all): only the dense builds the dispatcher takes are left
        // (warp_backward.hpp backward_dense_built); asked for another, a launch takes the general kernel.
        std::erase_if(vs, [](const V11& v) {
          return v.dense.blocks > 0 && !backward_dense_built(v.warp.elems, v.dense.blocks);
        });
        if (n == 1024) vs.push_back({"block T64", {}, {}, 64});
        vs.push_back(vs.front());
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * 3;
          for (const V11& v : vs) {
            warp_row_tuning() = {};
            warp_backward_dense_tuning() = {};
            const double us = median_us(b, r11, [&](int i) {
              const RowProblem p = backward_problem(op, rows, n, t, b, i);
              if (v.block > 0) launch_backward_block_rows(p, BlockConfig{v.block, 1}, nullptr);
              else launch_backward_warp_rows(p, v.warp, v.dense, nullptr);
            });
            // The kernel that served the last launch must be the one named (the dense kernel where asked).
            if (f32 && v.block == 0 && warp_backward_dense_last().blocks.load() != v.dense.blocks) {
              std::printf("sbwd11: %s did not take the dense kernel asked for\n", v.name.c_str());
              return 1;
            }
            report(shape, t, op, Variant{v.name, 'w'}, us, bytes);
          }
        }
        free_buffers(b);
      }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--sbwd12-ncu") == 0) {
    // sbwd12: one launch each for Nsight Compute (device.sh's former step sbwd12): the softmax backward kernels of 775cf6d's
    // dispatcher (before sbwd12's rule) at bf16 1048576×32 (E8 L4 packed, persistent grid; its 6-block build is gone,
    // this launch now takes the 8-block one), bf16 262144×128 (E32 L4 packed, grid of 8) and f32 1048576×32 (E8 L4
    // general kernel, grid of 8).
    struct One {
      std::int64_t rows, n;
      DType t;
      WarpConfig c;
    };
    for (const One& o : {One{1048576, 32, DType::bf16, {8, 4, 0, true}}, One{262144, 128, DType::bf16, {32, 4, 8, true}},
                         One{1048576, 32, DType::f32, {8, 4, 8}}}) {  // the configurations before sbwd12's rule
      Buffers b = make_buffers(o.rows, o.n, o.t);
      launch_backward_warp_rows(backward_problem(Op::softmax_backward, o.rows, o.n, o.t, b, 0), o.c, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--sbwd12") == 0) {
    // sbwd12 (session 12, docs/perf-notebook.md "sbwd12"): both backward ops on rows of 32 and 128 (2^25 elements), f32,
    // bf16 and f16, the dispatcher's configuration (softmax_cuda.cpp warp_backward_config / warp_backward_dense:
    // 16-bit 32 packed E8 L4 on the grid of 8, f32 32 / 128 the dense E8 kernel with streaming stores on a grid of 16;
    // "default", timed first and last) beside the configuration before sbwd12 where it is still built (f32: the
    // general kernel on the grid of 8; 16-bit 32: the packed kernel on the persistent grid, now at 8 blocks an SM; the
    // 6-block build is gone). The run of 69c6ce5 timed the variants not taken (the packed kernel with streaming stores,
    // 2 / 4 row groups a lane group, at 6 blocks; the dense E8 kernel with plain stores, E16 / E32 with streaming
    // stores); their code is in that commit.
    const int r12 = 80;
    struct V12 {
      std::string name;
      WarpConfig warp{};
      WarpBackwardDense dense{};
    };
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1048576, 32}, {262144, 128}})
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        const bool f32 = t == DType::f32;
        if (!f32 && n != 32) continue;
        const int lanes = static_cast<int>(n) / 8;
        const WarpConfig def{8, lanes, f32 ? 16 : 8, !f32};
        std::vector<V12> vs = {{"default E8 g" + std::to_string(def.grid) + (f32 ? " dense" : " packed"), def,
                                {f32 ? 4 : 0}}};
        if (f32) vs.push_back({"before: E8 g8 general", WarpConfig{8, lanes, 8}, {0}});
        else vs.push_back({"before: E8 g0 packed", WarpConfig{8, lanes, 0, true}, {0}});
        vs.push_back(vs.front());
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        for (Op op : {Op::softmax_backward, Op::log_softmax_backward}) {
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * 3;
          for (const V12& v : vs) {
            warp_row_tuning() = {};
            warp_backward_dense_tuning() = {};
            const double us = median_us(b, r12, [&](int i) {
              launch_backward_warp_rows(backward_problem(op, rows, n, t, b, i), v.warp, v.dense, nullptr);
            });
            // The kernel that served the last launch must be the one named.
            if (f32 ? warp_backward_dense_last().blocks.load() != v.dense.blocks
                    : !warp_backward_last().packed.load()) {
              std::printf("sbwd12: %s did not take the kernel asked for\n", v.name.c_str());
              return 1;
            }
            report(shape, t, op, Variant{v.name, 'w'}, us, bytes);
          }
        }
        free_buffers(b);
      }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--one11") == 0) {
    // one11 (session 11, docs/perf-notebook.md "one11"): split_row as the dispatcher calls it (the row loop under its
    // rule, the one-launch kernel where it serves), the library's (the normalising kernel's cache hints on) beside the
    // kernel before (SplitRowTuning::l2_hints 0), timed first and last; the same bits either way. The run of ec84571
    // also timed the chunk pass's evict-last loads and a persistent chunk kernel loading a chunk ahead (removed since).
    auto sv = [](const char* name, int hints) {
      Variant v{name, 's', {}, {}};
      v.loop = RowLoopTuning{};  // the library's row-loop rule, as the dispatcher runs split_row
      v.split.l2_hints = hints;
      return v;
    };
    const std::vector<Variant> all = {sv("hints off (before)", 0), sv("split default", 1), sv("hints off (before)", 0)};
    const std::vector<Variant> dflt = {sv("split default", 1)};
    const std::vector<Op> fwd = {Op::softmax, Op::log_softmax, Op::logsumexp};
    const std::vector<Op> bwd = {Op::softmax_backward, Op::log_softmax_backward};
    const int r = 31;
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}, {1, 151936},
                                  {32, 128256}, {256, 151936}}) {
      run_shape(rows, n, all, both, fwd, rows == 256 ? 11 : r);
      run_shape(rows, n, dflt, both, bwd, rows == 256 ? 5 : 11);
    }
    // 4096x151936: only logsumexp reaches the three kernels (softmax and log-softmax take the row loop / split_stream).
    run_shape(4096, 151936, dflt, both, {Op::logsumexp}, 5);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--one12") == 0) {
    // one12 (session 12, docs/perf-notebook.md "one12"): split_row as the dispatcher calls it, the library's (its
    // compact chunk kernel prefetching into L2 the chunk 132 indices on, its merge kernel loading its states before
    // merging) beside the kernels before one12 (distance 0, no preloading; timed first and last) and each lever alone;
    // the same values either way. Forward ops at the few-row shapes and 256x151936; 4096x151936 logsumexp (the one op
    // there the three kernels serve); the backward ops once (not on these kernels: a record of where they stand).
    // The run of f219827 also timed two waves ahead and the normalising kernel prefetching (removed since).
    struct V12 {
      const char* name;
      int chunk, merge;
    };
    const std::vector<V12> vs = {{"none (before)", 0, 0}, {"chunk 1w", -1, 0},      {"chunk 132", 132, 0},
                                 {"merge preload", 0, 1}, {"default (132 + preload)", 132, 1}, {"none (before)", 0, 0}};
    const std::vector<Op> fwd = {Op::softmax, Op::log_softmax, Op::logsumexp};
    auto time12 = [&](std::int64_t rows, std::int64_t n, const std::vector<Op>& ops, int reps12, bool all) {
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
      for (DType t : both) {
        Buffers b = make_buffers(rows, n, t);
        for (Op op : ops) {
          const bool bwd = op == Op::softmax_backward || op == Op::log_softmax_backward;
          const double bytes = static_cast<double>(rows) * static_cast<double>(n) *
                               static_cast<double>(smk::dtype_size(t)) * (bwd ? 3 : writes_rows(op) ? 2 : 1);
          for (const V12& v : vs) {
            if (!all && (v.chunk != 0 || v.merge != 0)) break;  // the kernels before only
            split_row_tuning() = {};
            row_loop_tuning() = {};  // the library's row-loop rule, as the dispatcher runs split_row
            split_row_chunk_l2_ahead() = v.chunk;
            split_row_merge_preload() = v.merge;
            const double us = median_us(b, reps12, [&](int i) {
              if (bwd) launch_backward_split_rows(backward_problem(op, rows, n, t, b, i), nullptr);
              else launch_split_rows(problem(op, rows, n, t, b, i), nullptr);
            });
            report(shape, t, op, Variant{v.name, 's'}, us, bytes);
          }
        }
        free_buffers(b);
      }
      split_row_chunk_l2_ahead() = 132;  // the library's
      split_row_merge_preload() = 1;
    };
    if (argc > 2 && std::strcmp(argv[2], "ncu") == 0) {
      // One softmax launch at 1x16777216 a setting and dtype, for Nsight Compute (before: f32, bf16; the library's).
      for (const auto& [chunk, merge] : {std::pair<int, int>{0, 0}, {132, 1}}) {
        for (DType t : both) {
          Buffers b = make_buffers(1, 16777216, t);
          split_row_chunk_l2_ahead() = chunk;
          split_row_merge_preload() = merge;
          launch_split_rows(problem(Op::softmax, 1, 16777216, t, b, 0), nullptr);
          SMK_CUDA_CHECK(cudaDeviceSynchronize());
          free_buffers(b);
        }
      }
      return 0;
    }
    const int r12 = 21;
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {4, 4194304}, {1, 151936},
                                  {32, 128256}, {256, 151936}})
      time12(rows, n, fwd, rows == 256 ? 9 : r12, true);
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{1, 16777216}, {32, 128256}})
      time12(rows, n, {Op::softmax_backward, Op::log_softmax_backward}, 11, false);
    time12(4096, 151936, {Op::logsumexp}, 5, true);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--vocab10") == 0) {
    // vocab10 (session 10, docs/perf-notebook.md): the many-row vocabulary shapes, split_row as the dispatcher runs
    // it before vocab10 (the three kernels; f32 log-softmax of >= 256 rows split_stream; the row loop off), timed
    // first and last, beside row_loop.cu at two and one blocks an SM, with and without its cache hints; forward and
    // both backward ops, f32 and bf16. 8192x65536 forward also on cluster_stage (the dispatcher's path there).
    // Since the session 10 review (F8) row_loop.cu builds only the kernels its rule takes (bf16 every op, f32
    // softmax): f32 log-softmax and the f32 backward, slower on the row loop in vocab10's run, are no longer timed.
    const std::vector<DType> f32 = {DType::f32}, bf16 = {DType::bf16};
    const std::vector<Op> ops = {Op::softmax, Op::log_softmax, Op::softmax_backward, Op::log_softmax_backward};
    const std::vector<Variant> loop = {split(), row_loop(0, true), row_loop(1, true), row_loop(0, false),
                                       row_loop(1, false), split()};
    const int r10 = 11;
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{4096, 151936}, {1024, 262144}, {256, 151936}}) {
      run_shape(rows, n, loop, f32, {Op::softmax}, r10);
      run_shape(rows, n, loop, bf16, ops, r10);
    }
    std::vector<Variant> at64k = loop;
    at64k.insert(at64k.begin() + 1, Variant{"cluster_stage", 'c', {}, {}});
    run_shape(8192, 65536, at64k, f32, {Op::softmax}, r10);
    run_shape(8192, 65536, at64k, bf16, {Op::softmax, Op::log_softmax}, r10);
    run_shape(8192, 65536, loop, bf16, {Op::softmax_backward, Op::log_softmax_backward}, r10);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--mid9") == 0) {
    // mid9 (session 9, docs/perf-notebook.md): f32 logsumexp / the state on block_per_row, the direct kernel (the
    // dispatcher's at 16384 and 4096 before) and mid8's re-read kernel (its at 8192; mid9's in four parts with the ftz
    // terms, timed here at 4096×16384, was removed after the session's review: commit 625272c has it), the first
    // variant timed again last;
    // then the backward passes: the dispatcher's block before mid9 (f32: the 512-thread block to 8192, the 16 + 16
    // wide block to 16384, dy in shared memory above; 16-bit: dy in shared memory, prefetching from 28673) beside the
    // re-read kernel (backward_reread.cu), each first variant again last. The re-read kernel is built for 16-bit
    // log-softmax backward only since the session's review (F17): f32 and softmax backward, slower at every shape in
    // mid9's run, are no longer timed; then the rule's range in bf16 and f16, 8192 rows of 28673 / 30000 / 32000 /
    // 32768 (the review's F4: one shape timed when the rule was set).
    const std::vector<DType> f32 = {DType::f32}, bf16 = {DType::bf16};
    const std::vector<Op> lse = {Op::logsumexp, Op::state};
    run_shape(4096, 16384, {direct(16384), ahead(16384, kAheadReread, false), direct(16384)}, f32, lse, reps);
    run_shape(8192, 8192, {direct(8192), ahead(8192, kAheadReread, false), direct(8192)}, f32, {Op::logsumexp}, reps);
    run_shape(16384, 4096, {direct(4096), ahead(4096, kAheadReread, false), direct(4096)}, f32, {Op::logsumexp}, reps);
    run_shape(5461, 12288, {direct(12288), ahead(12288, kAheadReread, false), direct(12288)}, f32, {Op::logsumexp},
              reps);
    const Variant rr{"bwd reread", 'r', {}, {}};
    const std::vector<Op> bwd = {Op::log_softmax_backward};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{8192, 32000}, {16384, 4096}, {4096, 16384},
                                  {8192, 8192}, {2048, 24576}})
      run_shape(rows, n, {bshared(n, n >= 28673), rr, bshared(n, n >= 28673)}, bf16, bwd, reps);
    for (std::int64_t n : {28673, 30000, 32000, 32768})
      run_shape(8192, n, {bshared(n, true), rr, bshared(n, true)}, {DType::bf16, DType::f16}, bwd, reps);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[1], "--mid12") == 0 && std::strcmp(argv[2], "ncu") == 0) {
    // One launch of each for Nsight Compute (device.sh's former step mid12): bf16 8192×32000 log-softmax backward, the
    // re-read kernel's forms 0 and 7 (evict-last, streaming dx, two vectors a step; mid12's run also profiled 3).
    Buffers b = make_buffers(8192, 32000, DType::bf16);
    for (const int form : {0, kRereadEvictLast | kRereadStreamOut | kRereadPairs}) {
      backward_reread_tuning().form = form;
      launch_backward_reread_rows(backward_problem(Op::log_softmax_backward, 8192, 32000, DType::bf16, b, 0), nullptr);
    }
    backward_reread_tuning().form = -1;
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--mid12") == 0) {
    // mid12 (session 12, docs/perf-notebook.md "session 12 — mid12"): the re-read backward's forms
    // (backward_reread.hpp kReread*: 0 the kernel before mid12; 7 = the first loop's loads L2 evict-last, dx stored
    // streaming, the first loop two vectors a step) beside the dy-shared block (backward.cu, the dispatcher's kernel
    // below the re-read rule), timed first and last, form 0 twice; 16-bit softmax and log-softmax backward, median of
    // 40. After each form's timing, an FNV-1a hash of its dx (copy 0's y and dy): every form must print form 0's.
    // Forms 1, 3 and 4 ran in mid12's run of 696c98f and were removed after it (backward_reread.cu has their times).
    const std::vector<int> forms = {0, kRereadEvictLast | kRereadStreamOut | kRereadPairs, 0};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{8192, 32000}, {4096, 16384}, {16384, 4096},
                                  {8192, 8192}, {2048, 24576}})
      for (DType t : {DType::bf16, DType::f16}) {
        if (t == DType::f16 && n != 32000) continue;
        rng_state = 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(n);
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        const double bytes = 3.0 * static_cast<double>(rows * n) * static_cast<double>(smk::dtype_size(t));
        for (Op op : {Op::log_softmax_backward, Op::softmax_backward}) {
          const Variant dflt = bshared(n, false);
          const double us0 = median_us(b, 40, [&](int i) {
            launch_backward_block_rows(backward_problem(op, rows, n, t, b, i), dflt.block, nullptr);
          });
          report(shape, t, op, dflt, us0, bytes);
          for (const int form : forms) {
            backward_reread_tuning().form = form;
            const Variant v{"bwd reread form " + std::to_string(form), 'r', {}, {}};
            const double us = median_us(b, 40, [&](int i) {
              launch_backward_reread_rows(backward_problem(op, rows, n, t, b, i), nullptr);
            });
            report(shape, t, op, v, us, bytes);
            SMK_CUDA_CHECK(cudaMemset(b.out, 0xFF, static_cast<std::size_t>(bytes / 3.0)));
            launch_backward_reread_rows(backward_problem(op, rows, n, t, b, 0), nullptr);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<unsigned char> host(static_cast<std::size_t>(bytes / 3.0));
            SMK_CUDA_CHECK(cudaMemcpy(host.data(), b.out, host.size(), cudaMemcpyDeviceToHost));
            std::uint64_t h = 0xcbf29ce484222325ull;
            for (unsigned char c : host) h = (h ^ c) * 0x100000001b3ull;
            std::printf("hash %s %s %s form %d %016llx\n", shape, smk::dtype_name(t),
                        op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", form,
                        static_cast<unsigned long long>(h));
          }
          backward_reread_tuning().form = -1;
          const double us1 = median_us(b, 40, [&](int i) {
            launch_backward_block_rows(backward_problem(op, rows, n, t, b, i), dflt.block, nullptr);
          });
          report(shape, t, op, dflt, us1, bytes);
        }
        free_buffers(b);
      }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--mid11") == 0) {
    // mid11 (session 11, docs/perf-notebook.md "session 11 — mid11"): the 16-bit backward passes, the dispatcher's
    // dy-shared block ("default", timed first and last; prefetching from 28673 in mid11's run, a form removed since
    // (review F13), so this binary times the unstaged block there) beside the re-read kernel
    // (backward_reread.cu, the kind 'r') at the issue's shapes and the re-read rule's range, bf16 and f16. With
    // "old" as the second argument (a binary built with the re-read kernel before mid11's unpack fix, which has no
    // softmax backward): the re-read log-softmax backward alone, at 8192 × 32000 and 30000 (the dispatched rows;
    // fewer shapes: the host fill of the inputs is most of the time). After each re-read timing, an FNV-1a hash of its dx
    // (copy 0's y and dy, the same random data in every binary) is printed, so that two builds' outputs can be
    // compared bit for bit.
    const bool old_build = argc > 2 && std::strcmp(argv[2], "old") == 0;
    const Variant rr{"bwd reread", 'r', {}, {}};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{8192, 32000}, {4096, 16384}, {16384, 4096},
                                  {8192, 8192}, {2048, 24576}, {8192, 30000}, {8192, 32768}})
      for (DType t : {DType::bf16, DType::f16}) {
        if (old_build && rows * n != 8192 * 32000 && rows * n != 8192 * 30000) continue;
        rng_state = 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(n);  // the same data whichever shapes ran before
        Buffers b = make_buffers(rows, n, t);
        char shape[64];
        std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
        const double bytes = 3.0 * static_cast<double>(rows * n) * static_cast<double>(smk::dtype_size(t));
        for (Op op : {Op::log_softmax_backward, Op::softmax_backward}) {
          if (old_build && op == Op::softmax_backward) continue;
          const Variant dflt = bshared(n, false);
          std::vector<Variant> vs = {rr};
          if (!old_build) vs = {dflt, rr, dflt};
          for (const Variant& v : vs) {
            const double us = median_us(b, 30, [&](int i) {
              const RowProblem p = backward_problem(op, rows, n, t, b, i);
              if (v.kind == 'r') launch_backward_reread_rows(p, nullptr);
              else launch_backward_block_rows(p, v.block, nullptr);
            });
            report(shape, t, op, v, us, bytes);
            if (v.kind != 'r') continue;
            launch_backward_reread_rows(backward_problem(op, rows, n, t, b, 0), nullptr);
            SMK_CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<unsigned char> host(static_cast<std::size_t>(bytes / 3.0));
            SMK_CUDA_CHECK(cudaMemcpy(host.data(), b.out, host.size(), cudaMemcpyDeviceToHost));
            std::uint64_t h = 0xcbf29ce484222325ull;
            for (unsigned char c : host) h = (h ^ c) * 0x100000001b3ull;
            std::printf("hash %s %s %s reread %016llx\n", shape, smk::dtype_name(t),
                        op == Op::softmax_backward ? "softmax_bwd" : "logsm_bwd", static_cast<unsigned long long>(h));
          }
        }
        free_buffers(b);
      }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--lse10") == 0) {
    // lse10 (session 10, docs/perf-notebook.md "session 10 — lse10"): logsumexp and the state, the dispatcher's kernel
    // before lse10 ("default", timed first and last) beside lse_stream.cu's two configurations (L16, T128; the L32,
    // T256 and T512 that lse10 also timed were removed after they lost: session 10 review, F3), f32 and bf16 (f16 at
    // 4096×16384).
    const std::vector<Op> lse = {Op::logsumexp, Op::state};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{4096, 16384}, {8192, 8192}, {16384, 4096},
                                  {32768, 1024}, {8192, 32000}, {65536, 2048}, {2048, 24576}})
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        if (t == DType::f16 && n != 16384) continue;
        std::vector<Variant> vs = {old_default(n, t)};
        if (n <= 1024) vs.push_back(lse_stream(16, 0));
        vs.push_back(lse_stream(0, 128));
        vs.push_back(old_default(n, t));
        run_shape(rows, n, vs, {t}, lse, 20);
      }
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--lse10-f4") == 0) {
    // lse10, the session 9 review's F4: 16-bit log-softmax backward at 8192 × 28673 / 30000 / 32000 / 32768 (the
    // backward_reread rule's range, set from one shape), the dy-shared prefetching block beside backward_reread,
    // alternated twice (two samples each).
    const Variant rr{"bwd reread", 'r', {}, {}};
    for (std::int64_t n : {28673, 30000, 32000, 32768})
      run_shape(8192, n, {bshared(n, true), rr, bshared(n, true), rr}, {DType::bf16, DType::f16},
                {Op::log_softmax_backward}, 15);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--lse10-ncu") == 0) {
    // One launch of each for Nsight Compute (device.sh's former step lse10): logsumexp 4096×16384 f32, the direct wide block
    // (the dispatcher's before lse10) then lse_stream T128; bf16 32768×1024, warp E32 L32 then lse_stream L16 (lse10's
    // run profiled T256, T512 and L32, removed since: session 10 review, F3).
    {
      Buffers b = make_buffers(4096, 16384, DType::f32);
      const RowProblem p = problem(Op::logsumexp, 4096, 16384, DType::f32, b, 0);
      launch_block_rows(p, direct(16384).block, nullptr);
      launch_lse_stream_rows(p, {0, 128}, nullptr);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      free_buffers(b);
    }
    Buffers b = make_buffers(32768, 1024, DType::bf16);
    const RowProblem p = problem(Op::logsumexp, 32768, 1024, DType::bf16, b, 0);
    launch_warp_rows(p, {32, 32}, nullptr);
    launch_lse_stream_rows(p, {16, 0}, nullptr);
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    free_buffers(b);
    return 0;
  }
  if (mid16) {
    // mid16 (docs/perf-notebook.md): 16-bit forward rows of 1025..12288 on the 512-thread block_per_row, the direct
    // kernel (the dispatcher's before) beside the lane-staged one at 1, 2 and 3 rows ahead, same threads; ~2^26
    // elements a shape (the bench's sweep) and the issue's 16384×4096. The warp kernel at 1024 for reference; f32 is
    // the direct kernel only (lane_stages is ignored there), timed as the reference it was.
    const std::vector<Op> ops = {Op::softmax, Op::log_softmax, Op::logsumexp};
    const std::vector<DType> half = {DType::bf16, DType::f16};
    for (const std::int64_t n : {std::int64_t{1025}, std::int64_t{2048}, std::int64_t{3000}, std::int64_t{4096},
                                 std::int64_t{6144}, std::int64_t{8192}, std::int64_t{12288}}) {
      const std::int64_t rows = (std::int64_t{1} << 26) / n;
      run_shape(rows, n, {fit(n, 1), lane(n, 1), lane(n, 2), lane(n, 3)}, half, ops, reps);
      run_shape(rows, n, {fit(n, 1)}, {DType::f32}, ops, reps);
    }
    run_shape(65536, 1024, {warp(32, 32), fit(1024, 1), lane(1024, 2)}, half, ops, reps);
    return 0;
  }
  if (fwd16) {
    // fwd16 (session 7, docs/perf-notebook.md): warp_per_row's elements a lane for each forward op on the short rows,
    // f32 and bf16 (the dispatcher's kWarpLaneBytes and kWarpReadOnlyWideFromNF32), and block_per_row at 1024.
    const std::vector<Op> ops = {Op::softmax, Op::log_softmax, Op::logsumexp};
    run_shape(1048576, 32, {warp(32, 1), warp(16, 2), warp(8, 4)}, both, ops, reps);
    run_shape(524288, 64, {warp(32, 2), warp(16, 4), warp(8, 8)}, both, ops, reps);
    run_shape(262144, 128, {warp(32, 4), warp(16, 8), warp(8, 16)}, both, ops, reps);
    run_shape(131072, 256, {warp(32, 8), warp(16, 16)}, both, ops, reps);
    run_shape(65536, 512, {warp(32, 16), warp(16, 32)}, both, ops, reps);
    run_shape(32768, 1024, {warp(32, 32), fit(1024, 1), block(128, 1)}, both, ops, reps);
    return 0;
  }
  if (bw16b) {
    // bw16's second run: y and dy distinct (two copies at least). The backward: the dispatcher's kernels before bw16
    // (cluster_row above 16384, the 1024 × (16 + 16) wide block above 8192, the 512-thread block, staged for 16-bit
    // rows, below) beside the dy-shared block, prefetching or not. (The run of d4f4d06 also timed a warp_per_row
    // kernel staged by cp.async beside the direct one; dropped: docs/perf-notebook.md "bw16".)
    const std::vector<Op> bwd = {Op::softmax_backward, Op::log_softmax_backward};
    run_shape(8192, 32000, {bcluster_old(32000), bshared(32000, false), bshared(32000, true)}, both, bwd, reps);
    run_shape(4096, 16384, {bwide16(16384), bshared(16384, false)}, both, bwd, reps);
    run_shape(8192, 12288, {bwide16(12288), bshared(12288, false)}, both, bwd, reps);
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{16384, 4096}, {65536, 2048}, {32768, 1025}}) {
      const int old_threads = static_cast<int>(std::min<std::int64_t>(512, ((n + kBackwardBlockElems - 1) / kBackwardBlockElems + 31) / 32 * 32));
      Variant b16 = block(old_threads, 1, true), f32b = block(old_threads, 1);
      b16.name += " (16-bit)";
      run_shape(rows, n, {f32b, b16, bshared(n, false)}, both, bwd, reps);
    }
    return 0;
  }
  if (bw16) {
    // Old beside new in one process (docs/perf-notebook.md "bw16"). The backward above 16384: cluster_row (the
    // dispatcher before) against the wide block with dy in shared memory, prefetching (16-bit) or not; at 16384 also
    // the 16 + 16 wide block (the dispatcher's there).
    const std::vector<Op> bwd = {Op::softmax_backward, Op::log_softmax_backward};
    const std::vector<DType> three = {DType::f32, DType::bf16, DType::f16};
    run_shape(8192, 32000, {bcluster_old(32000), bshared(32000, false), bshared(32000, true)}, three, bwd, reps);
    run_shape(2048, 24576, {bcluster_old(24576), bshared(24576, false), bshared(24576, true)}, both, bwd, reps);
    run_shape(4096, 16384, {bwide16(16384), bshared(16384, false), bshared(16384, true)}, both, bwd, reps);
    // The forward's wide block, staged or not.
    const std::vector<Op> ops = {Op::softmax, Op::log_softmax, Op::logsumexp};
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{8192, 32000}, {4096, 16384}, {2048, 24576}})
      run_shape(rows, n, {wide(n, false), wide(n, true)}, three, ops, reps);
    // Short rows: the warp configurations and the block, 16-bit and f32.
    run_shape(262144, 128, {warp(32, 4), warp(16, 8), warp(8, 16)}, both, {Op::softmax, Op::logsumexp}, reps);
    run_shape(1048576, 32, {warp(32, 1), warp(16, 2), warp(8, 4)}, both, {Op::softmax, Op::logsumexp}, reps);
    run_shape(32768, 1024, {warp(32, 32), block(64, 1), block(128, 1), block(256, 1)}, both,
              {Op::softmax, Op::logsumexp}, reps);
    run_shape(65536, 512, {warp(32, 16), warp(16, 32), block(64, 1)}, both, {Op::softmax}, reps);
    return 0;
  }
  if (rowpipe) {
    // The row pipeline (block_row.cu's staged kernels) beside the direct kernel it replaces, same configuration, on
    // the many-row shapes of issue 3 (docs/perf-notebook.md "row pipeline"); split_row where it is the dispatcher's.
    const std::vector<Op> ops = {Op::softmax, Op::log_softmax, Op::logsumexp};
    run_shape(16384, 4096, {fit(4096, 1), fit(4096, 1, true)}, both, ops, reps);
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{4096, 16384}, {8192, 32000}})
      run_shape(rows, n, {fit(n, dispatch_cluster(n)), fit(n, dispatch_cluster(n), true)}, both, ops, reps);
    run_shape(2048, 65536, {fit(65536, 15), fit(65536, 15, true), fit(65536, 8, true), split()}, both, ops, reps);
    run_shape(4096, 151936, {fit(151936, 16), fit(151936, 16, true), split()}, both, ops, 10);
    // The backward passes (16 elements of y and of dy a thread; the dispatcher's cluster is the fewest blocks of
    // ≤ 512 threads that hold a row, see softmax_cuda.cpp).
    auto bfit = [](std::int64_t n, int cluster, bool staged) {
      const std::int64_t per = (n + std::int64_t{cluster} * kBackwardBlockElems - 1) / (std::int64_t{cluster} * kBackwardBlockElems);
      return block(static_cast<int>(std::max<std::int64_t>(32, (per + 31) / 32 * 32)), cluster, staged);
    };
    auto bcluster = [](std::int64_t n) {
      return static_cast<int>(std::clamp<std::int64_t>((n + 192 * kBackwardBlockElems - 1) / (192 * kBackwardBlockElems), 2, 16));
    };
    const std::vector<Op> bwd = {Op::softmax_backward};
    run_shape(16384, 4096, {bfit(4096, 1, false), bfit(4096, 1, true)}, both, bwd, reps);
    for (const auto& [rows, n] : {std::pair<std::int64_t, std::int64_t>{4096, 16384}, {8192, 32000}, {2048, 65536}})
      run_shape(rows, n, {bfit(n, bcluster(n), false), bfit(n, bcluster(n), true)}, both, bwd, reps);
    return 0;
  }
  // Few long rows: the latency targets (≤ 8 µs) and how many SMs a row should spread over.
  run_shape(1, 151936, {fit(151936, 8), fit(151936, 12), fit(151936, 16), split()}, both, fwd, reps);
  run_shape(32, 128256, {fit(128256, 8), fit(128256, 11), fit(128256, 16), split()}, both, fwd, reps);
  run_shape(4096, 151936, {fit(151936, 13), fit(151936, 16), split()}, both, {Op::softmax}, quick ? 3 : 10);
  run_shape(8192, 32000, {fit(32000, 2), fit(32000, 3), fit(32000, 4), fit(32000, 8), split()}, both, {Op::softmax},
            reps);
  run_shape(4096, 16384, {fit(16384, 2), fit(16384, 4), split()}, both, {Op::softmax}, reps);
  run_shape(16384, 4096, {fit(4096, 1), block(256, 1), block(512, 1), fit(4096, 2)}, both, {Op::softmax}, reps);
  run_shape(32768, 1024, {warp(32, 32), fit(1024, 1), block(128, 1)}, both, {Op::softmax}, reps);
  run_shape(65536, 2048, {fit(2048, 1), block(256, 1)}, both, {Op::softmax}, reps);
  run_shape(262144, 128, {warp(4, 32), warp(8, 16), warp(16, 8), warp(32, 4)}, both, {Op::softmax}, reps);
  run_shape(1048576, 32, {warp(4, 8), warp(8, 4), warp(16, 2), warp(32, 1)}, both, {Op::softmax}, reps);
  run_shape(1, 16777216, {split()}, both, fwd, reps);
  return 0;
}
