// tune_reg20 (session 20, helper reg20; issue 3, docs/perf-notebook.md plan item 2): lse_stream's row kernels
// (lse_stream.cu lse_block_kernel T128, lse_warp_kernel L16; plain form) at more threads an SM, i.e. fewer registers
// (lse_rows_occ.hpp: the same code built with __launch_bounds__ asking for 1152 / 1280 / 1536 / 2048 threads an SM;
// the library's kernels ask for 1024), beside the shipped kernel, on issue 3's logsumexp shapes. Not a test: a
// one-off A/B tool (tests/CMakeLists.txt), removed once its result is in the notebook.
//   usage: tune_reg20 [--reps N] [--quick]
// Per case (dtype, op, shape): which kernel the dispatcher serves it with (one smk::logsumexp / smk::softmax_state
// call, lse_stream_launch_count and lse_stream_last_config); where it is not lse_stream's row kernels the case is
// skipped. Else timed: "auto" (the public entry point), "forced" (launch_lse_stream_rows with the served
// configuration: the shipped kernel without the dispatcher) and each built variant (launch_lse_stream_rows_occ).
// Method: before each timed launch a cudaMemsetAsync of 240 MB (L2 flushed), CUDA events around the launch alone, the
// median of N launches (default 31) after 3 untimed; 3 rounds, the order reversed in round 2; per round the ratio
// entry / auto, printed as median (min-max) over the rounds. Bits: every entry's output against auto's, bit for bit
// over the whole call (both of the state's outputs). Input: uniform in [16, 24) (tune_softmax's scores), one buffer.
// Prints: one "attrs" line per built variant (registers, local bytes, resident blocks and threads an SM), then per
// case a "case" line and one line per entry, then "summary" lines per (dtype, op, kernel, variant) with each shape's
// median ratio. Exit 1 if any output differs from auto's bits, 2 on bad arguments, 3 without a device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/lse_rows_occ.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/softmax.hpp"

namespace {

using namespace smk::cuda::kernels;
using smk::DType;

constexpr std::size_t kFlushBytes = std::size_t{240} << 20;
constexpr double kReadTBs = 4.42;  // the read ceiling lse_stream.cu's floors use

struct Shape {
  std::int64_t rows, n;
};

struct Ctx {
  void* x = nullptr;  // the input, max_elems of the current dtype
  float* out = nullptr;  // logsumexp / the state's m, then l at out + rows
  void* flush = nullptr;
  int reps = 31;
};

RowProblem problem(Op op, std::int64_t rows, std::int64_t n, DType t, const Ctx& c) {
  RowProblem p;
  p.op = op;
  p.x = c.x;
  p.stat0 = c.out;
  p.stat1 = op == Op::state ? c.out + rows : nullptr;
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

void call_auto(Op op, std::int64_t rows, std::int64_t n, DType t, const Ctx& c) {
  const smk::Device dev = smk::Device::cuda(0);
  const smk::TensorView in = smk::TensorView::contiguous(c.x, t, dev, {rows, n});
  const smk::TensorView m = smk::TensorView::contiguous(c.out, DType::f32, dev, {rows});
  if (op == Op::logsumexp) return smk::logsumexp(m, in);
  smk::softmax_state(m, smk::TensorView::contiguous(c.out + rows, DType::f32, dev, {rows}), in);
}

// The median of c.reps launches (µs), each after the L2 flush, events around the launch alone; enqueued together, one
// synchronisation at the end (so the host's enqueueing never sits between a start event and its launch).
template <typename Launch>
double timed_median_us(const Ctx& c, Launch&& launch) {
  for (int i = 0; i < 3; ++i) launch();
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(c.reps));
  for (cudaEvent_t& e : ev) SMK_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < c.reps; ++i) {
    SMK_CUDA_CHECK(cudaMemsetAsync(c.flush, i & 0xff, kFlushBytes));
    SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i]));
    launch();
    SMK_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1]));
  }
  SMK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < c.reps; ++i) {
    float t = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]));
    ms.push_back(t);
  }
  for (cudaEvent_t& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

std::string ratio_str(const std::vector<double>& a, const std::vector<double>& base, double* median = nullptr) {
  std::vector<double> r;
  for (std::size_t k = 0; k < a.size(); ++k) r.push_back(a[k] / base[k]);
  std::sort(r.begin(), r.end());
  if (median) *median = r[r.size() / 2];
  char s[64];
  std::snprintf(s, sizeof s, "%.3f (%.3f-%.3f)", r[r.size() / 2], r.front(), r.back());
  return s;
}

// Fills c.x with max_elems values of type t, uniform in [16, 24) (tune_softmax's xorshift64* stream).
void fill(const Ctx& c, DType t, std::size_t max_elems) {
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  const std::size_t es = smk::dtype_size(t);
  std::vector<unsigned char> host(max_elems * es);
  for (std::size_t i = 0; i < max_elems; ++i) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const float v = 8.0f * (static_cast<float>((s * 2685821657736338717ull) >> 40) / 16777216.0f) + 16.0f;
    if (t == DType::f32) std::memcpy(host.data() + 4 * i, &v, 4);
    else if (t == DType::bf16) {
      const auto b = smk::to_bfloat16(v);
      std::memcpy(host.data() + 2 * i, &b, 2);
    } else {
      const auto h = smk::to_half(v);
      std::memcpy(host.data() + 2 * i, &h, 2);
    }
  }
  SMK_CUDA_CHECK(cudaMemcpy(c.x, host.data(), host.size(), cudaMemcpyHostToDevice));
}

struct Entry {
  std::string name;
  int occ;  // -1 auto, 0 forced (launch_lse_stream_rows), else the variant's threads an SM
};

int run(int argc, char** argv) {
  Ctx c;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) c.reps = std::max(3, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else {
      std::fprintf(stderr, "usage: tune_reg20 [--reps N] [--quick]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "tune_reg20: no CUDA device; nothing timed\n");
    return 3;
  }
  cudaDeviceProp prop{};
  SMK_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("tune_reg20: %s, %d SMs; median of %d launches, L2 flushed (240 MB memset) before each, 3 rounds\n",
              prop.name, prop.multiProcessorCount, c.reps);

  const LseStreamConfig t128{0, 128}, l16{16, 0};
  auto cfg_name = [](const LseStreamConfig& k) { return k.lanes == 16 ? "L16" : "T128"; };
  for (DType t : {DType::bf16, DType::f16, DType::f32})
    for (const LseStreamConfig& k : {t128, l16})
      for (int occ : lse_stream_row_occ_variants(t, k)) {
        LseRowOccAttrs a;
        if (!lse_stream_row_occ_attrs(t, k, occ, a)) continue;
        std::printf("attrs %-4s %-4s @%d%s: %d registers, %d B local, %d blocks of %d an SM = %d threads\n",
                    smk::dtype_name(t), cfg_name(k), occ, occ == 1024 ? " (shipped)" : "", a.regs, a.local_bytes,
                    a.blocks_per_sm, a.block, a.blocks_per_sm * a.block);
      }
  std::fflush(stdout);

  struct Case {
    DType t;
    Op op;
    Shape s;
  };
  std::vector<Case> cases;
  const std::vector<Shape> issue = {{32768, 1024}, {16384, 4096}, {4096, 16384}, {8192, 32000},
                                    {65536, 2048}, {1048576, 32}, {262144, 128}};
  // Grouped by dtype (the input is filled once a group).
  for (DType t : {DType::bf16, DType::f32}) {
    for (const Shape& s : issue)
      if (!quick || s.n == 4096) cases.push_back({t, Op::logsumexp, s});
    if (t == DType::bf16 || !quick) cases.push_back({t, Op::state, {16384, 4096}});
  }
  cases.push_back({DType::f16, Op::logsumexp, {16384, 4096}});
  if (!quick) cases.push_back({DType::f16, Op::logsumexp, {32768, 1024}});

  std::size_t max_elems = 0, max_rows = 0;
  for (const Case& k : cases) {
    max_elems = std::max(max_elems, static_cast<std::size_t>(k.s.rows * k.s.n));
    max_rows = std::max(max_rows, static_cast<std::size_t>(k.s.rows));
  }
  SMK_CUDA_CHECK(cudaMalloc(&c.x, max_elems * 4));
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&c.out), 2 * max_rows * sizeof(float)));
  SMK_CUDA_CHECK(cudaMalloc(&c.flush, kFlushBytes));

  // summary: (dtype op kernel @occ) → "shape ratio" pieces; the worst ratio; bits.
  struct Sum {
    std::string shapes;
    double worst = 0;
    bool same = true;
  };
  std::map<std::string, Sum> summary;
  std::vector<std::string> summary_order;
  int differ = 0;
  DType filled = DType::f64;
  for (const Case& k : cases) {
    const auto [rows, n] = k.s;
    const DType t = k.t;
    if (t != filled) {
      fill(c, t, max_elems);
      filled = t;
    }
    const char* op_s = k.op == Op::logsumexp ? "logsumexp" : "state";
    char shape[48];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(rows), static_cast<long long>(n));
    // Which kernel serves the call.
    const std::uint64_t c0 = lse_stream_launch_count();
    lse_stream_last_config().lanes.store(-1);
    lse_stream_last_config().threads.store(-1);
    call_auto(k.op, rows, n, t, c);
    SMK_CUDA_CHECK(cudaDeviceSynchronize());
    const bool lse = lse_stream_launch_count() > c0;
    const int lanes = lse_stream_last_config().lanes.load();
    if (!lse) {
      std::printf("case %-4s %-9s %-12s served by another kernel (not lse_stream's row kernels): skipped\n",
                  smk::dtype_name(t), op_s, shape);
      continue;
    }
    const LseStreamConfig cfg = lanes == 16 ? l16 : t128;
    std::vector<Entry> es = {{"auto", -1}, {"forced", 0}};
    for (int occ : lse_stream_row_occ_variants(t, cfg))
      if (occ != 1024) es.push_back({"@" + std::to_string(occ), occ});
    auto launch = [&](const Entry& e) {
      if (e.occ < 0) return call_auto(k.op, rows, n, t, c);
      const RowProblem p = problem(k.op, rows, n, t, c);
      if (e.occ == 0) return launch_lse_stream_rows(p, cfg, nullptr);
      if (!launch_lse_stream_rows_occ(p, cfg, e.occ, nullptr)) smk::throw_invalid_argument("tune_reg20", "variant", "built");
    };
    // Bits: auto's output, then each entry's, bit for bit.
    const std::size_t floats = static_cast<std::size_t>(rows) * (k.op == Op::state ? 2 : 1);
    std::vector<std::uint32_t> ref(floats), got(floats);
    std::vector<std::string> bits(es.size());
    for (std::size_t i = 0; i < es.size(); ++i) {
      SMK_CUDA_CHECK(cudaMemset(c.out, 0xFF, floats * 4));
      launch(es[i]);
      SMK_CUDA_CHECK(cudaDeviceSynchronize());
      SMK_CUDA_CHECK(cudaMemcpy(i == 0 ? ref.data() : got.data(), c.out, floats * 4, cudaMemcpyDeviceToHost));
      if (i == 0) continue;
      std::size_t d = 0;
      for (std::size_t j = 0; j < floats; ++j) d += ref[j] != got[j];
      bits[i] = d == 0 ? "same bits" : "DIFFER in " + std::to_string(d) + " of " + std::to_string(floats);
      differ += d != 0;
    }
    // Timing: 3 rounds, round 2 in reverse order.
    std::vector<std::vector<double>> us(es.size());
    for (int round = 0; round < 3; ++round)
      for (std::size_t j = 0; j < es.size(); ++j) {
        const std::size_t i = round == 1 ? es.size() - 1 - j : j;
        us[i].push_back(timed_median_us(c, [&] { launch(es[i]); }));
      }
    const double bytes = static_cast<double>(rows) * static_cast<double>(n) * static_cast<double>(smk::dtype_size(t));
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double a = med(us[0]);
    std::printf("case %-4s %-9s %-12s served by %s: auto %.2f us (rounds %.2f %.2f %.2f), %.2f TB/s, %.0f %% of read\n",
                smk::dtype_name(t), op_s, shape, cfg_name(cfg), a, us[0][0], us[0][1], us[0][2], bytes / a * 1e-6,
                100.0 * bytes / a * 1e-6 / kReadTBs);
    for (std::size_t i = 1; i < es.size(); ++i) {
      double r = 0;
      const std::string rs = ratio_str(us[i], us[0], &r);
      std::printf("  %-4s %-9s %-12s %-4s %-7s %8.2f us  ratio/auto %s  %s\n", smk::dtype_name(t), op_s, shape,
                  cfg_name(cfg), es[i].name.c_str(), med(us[i]), rs.c_str(), bits[i].c_str());
      const std::string key = std::string(smk::dtype_name(t)) + " " + op_s + " " + cfg_name(cfg) + " " + es[i].name;
      if (!summary.count(key)) summary_order.push_back(key);
      Sum& sm = summary[key];
      char piece[64];
      std::snprintf(piece, sizeof piece, " %s %.3f", shape, r);
      sm.shapes += piece;
      sm.worst = std::max(sm.worst, r);
      sm.same = sm.same && bits[i] == "same bits";
    }
    std::fflush(stdout);
  }
  for (const std::string& key : summary_order) {
    const Sum& sm = summary[key];
    std::printf("summary %-28s worst %.3f |%s | %s\n", key.c_str(), sm.worst, sm.shapes.c_str(),
                sm.same ? "same bits everywhere" : "BITS DIFFER");
  }
  cudaFree(c.x);
  cudaFree(c.out);
  cudaFree(c.flush);
  std::printf("tune_reg20: %s\n", differ ? "SOME OUTPUT DIFFERS FROM AUTO'S BITS" : "every output auto's bits");
  return differ ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_reg20: %s\n", e.what());
    return 1;
  }
}
