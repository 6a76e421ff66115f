// tune_prefill: times attention_forward's GPU kernel (src/cuda/attention/prefill.cu) on issue 7's benchmark rows,
// under every built variant (kPrefillVariants: warps × m-tiles, key-tile size, stages; then the wgmma kernel's,
// kPrefillWgmmaVariants, on an sm_90a build and device) and, on the dispatcher's
// default variant for the head dimension, with each of the fold, the shared-memory O and the skipped rescale turned
// off alone and all together (the levers' ablation), and prints TFLOP/s (4·B·H·S²·D, halved for causal). Not a test: scripts/device.sh's
// `prefill` step runs it beside scripts/bench_sdpa.py (torch's SDPA backends on the same rows, same run), and
// docs/perf-notebook.md records both. Method (METHOD.md): CUDA events around each launch, 3 warm-ups, the median of
// 10 (attention is compute-bound, and Q, K, V of these rows fit neither in L2 nor matter for it).
// --pfx15 (session 15, pfx15): pfx15() below instead: the dispatcher's kernel with P·V done before the softmax (form 1
// of prefill_args.hpp's prefill_wgmma_set_pv_form) and under it (form 2, the default) interleaved on issue 7's rows.
// --pfx16 (session 16, pfx16): pfx16() below: the dispatcher's kernel under form 2 (P·V under the softmax before the
// first causal crossing tile) and form 4 (the crossing tile too; the causal default since) interleaved on D = 128 rows.
//   usage: tune_prefill [--json FILE] | tune_prefill --pfx15 | tune_prefill --pfx16
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/prefill_args.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace {

struct Row {
  std::int64_t b, h, s, d;
  bool causal;
};

std::vector<Row> rows() {
  std::vector<Row> r = {{4, 32, 4096, 128, false}, {4, 32, 4096, 128, true}, {16, 16, 2048, 64, false},
                        {1, 32, 16384, 128, true}};
  // SMK_TUNE_ROWS=issue: the four rows above only (a short run).
  if (const char* e = std::getenv("SMK_TUNE_ROWS"); e && std::string(e) == "issue") return r;
  // The sweep: 16k tokens in the batch, a model width of 2048 (H = 2048 / D), full and causal.
  for (std::int64_t d : {64, 128})
    for (std::int64_t s = 512; s <= 16384; s *= 2)
      for (bool causal : {false, true}) r.push_back({16384 / s, 2048 / d, s, d, causal});
  return r;
}

struct Config {
  std::string name;
  smk::cuda::PrefillConfig cfg;
};

// The columns for head dimension d: every variant with the levers on, then the ablation.
// SMK_TUNE_TMA=0: no TMA columns; =only: the wgmma kernel's TMA columns and the dispatcher's alone (a run can time
// the rest first, so that a fault on the TMA path, which ends the process's CUDA context, costs only its own columns).
std::string tma_mode() {
  const char* e = std::getenv("SMK_TUNE_TMA");
  return e ? e : "";
}

// "wgK" for K consumer warpgroups; "wsK": K and the producer warpgroup (warps = 4K + 1).
std::string wg_name(const smk::cuda::PrefillVariant& x) {
  return (x.warps % 4 == 1 ? "ws" : "wg") + std::to_string(x.warps / 4);
}
// Whether x also has a build with the softmax pinned ahead of the P·V wait (TMA only).
bool pinned(const smk::cuda::PrefillVariant& x) {
  for (const auto& p : smk::cuda::kPrefillWgmmaPinned)
    if (p.d == x.d && p.warps == x.warps && p.block_n == x.block_n) return true;
  return false;
}

std::vector<Config> configs(std::int64_t d) {
  using smk::cuda::PrefillKernel;
  using smk::cuda::PrefillToggle;
  constexpr auto on = PrefillToggle::on, off = PrefillToggle::off;
  const std::string mode = tma_mode();
  std::vector<Config> r;
  // SMK_TUNE_PFX9=1 (session 9): the dispatcher's TMA variant for d with the causal schedule and the trimmed
  // diagonal off (`base`, the kernel before), each alone, and both (`both`, the default), then the dispatcher.
  if (const char* e = std::getenv("SMK_TUNE_PFX9"); e && std::string(e) == "1") {
    using namespace smk::cuda;
    PrefillConfig cfg{d == 64 ? kPrefillWgmmaWarpsD64 : kPrefillWgmmaWarpsD128, 1,
                      d == 64 ? kPrefillWgmmaBlockND64 : kPrefillWgmmaBlockND128, 3, on, on, on};
    cfg.kernel = PrefillKernel::wgmma;
    cfg.tma = on;
    for (const auto& [name, sched, trim] : {std::tuple{"base", off, off}, {"sched", on, off}, {"trim", off, on},
                                            {"both", on, on}}) {
      cfg.causal_schedule = sched;
      cfg.trim_diagonal = trim;
      r.push_back({name, cfg});
    }
    r.push_back({"dispatcher", {}});
    return r;
  }
  if (mode == "only") {
    if (smk::cuda::prefill_wgmma_available(0))
      for (const auto& x : smk::cuda::kPrefillWgmmaVariants) {
        if (x.d != d) continue;
        smk::cuda::PrefillConfig cfg{x.warps, x.m_tiles, x.block_n, x.stages, on, on, on};
        cfg.kernel = PrefillKernel::wgmma;
        cfg.tma = on;
        r.push_back({wg_name(x) + " n" + std::to_string(x.block_n) + " tma", cfg});
        if (pinned(x)) {
          cfg.pin_softmax = on;
          r.push_back({wg_name(x) + " n" + std::to_string(x.block_n) + " pin", cfg});
        }
      }
    r.push_back({"dispatcher", {}});  // what attention_forward runs by default
    return r;
  }
  for (const auto& x : smk::cuda::kPrefillVariants) {
    if (x.d != d) continue;
    r.push_back({std::to_string(x.warps) + "w x" + std::to_string(x.m_tiles) + " n" + std::to_string(x.block_n) +
                     " s" + std::to_string(x.stages),
                 {x.warps, x.m_tiles, x.block_n, x.stages, on, on, on, PrefillKernel::mma_sync}});
  }
  using namespace smk::cuda;
  const bool d64 = d == 64;
  const int w = d64 ? kPrefillWarpsD64 : kPrefillWarpsD128, m = d64 ? kPrefillMTilesD64 : kPrefillMTilesD128,
            n = d64 ? kPrefillBlockND64 : kPrefillBlockND128, st = d64 ? kPrefillStagesD64 : kPrefillStagesD128;
  r.push_back({"default -fold", {w, m, n, st, off, on, on, PrefillKernel::mma_sync}});
  r.push_back({"default -smemO", {w, m, n, st, on, off, on, PrefillKernel::mma_sync}});
  r.push_back({"default -skip", {w, m, n, st, on, on, off, PrefillKernel::mma_sync}});
  r.push_back({"default -all", {w, m, n, st, off, off, off, PrefillKernel::mma_sync}});
  // The wgmma kernel (prefill_wgmma.cu), where this build and device have it: each built variant, levers on.
  if (smk::cuda::prefill_wgmma_available(0))
    for (const auto& x : smk::cuda::kPrefillWgmmaVariants) {
      if (x.d != d) continue;
      for (const auto tma : {off, on}) {
        if (tma == on && mode == "0") continue;
        if (tma == off && x.warps % 4 == 1) continue;  // the producer is TMA's: cp.async runs the 8-warp kernel
        PrefillConfig cfg{x.warps, x.m_tiles, x.block_n, x.stages, on, on, on};
        cfg.kernel = PrefillKernel::wgmma;
        cfg.tma = tma;
        r.push_back({wg_name(x) + " n" + std::to_string(x.block_n) + (tma == on ? " tma" : " cpa"),
                     cfg});
      }
    }
  r.push_back({"dispatcher", {}});  // what attention_forward runs by default
  return r;
}

double time_ms(const Row& row, const smk::cuda::PrefillConfig& cfg, void* q, void* k, void* v, void* o, float* lse) {
  const auto dev = smk::Device::cuda(0);
  const auto view = [&](void* p) {
    return smk::TensorView::contiguous(p, smk::DType::bf16, dev, {row.b, row.s, row.h, row.d});
  };
  const auto lv = smk::TensorView::of(lse, {row.b, row.h, row.s}, dev);
  smk::AttentionOptions opt;
  opt.causal = row.causal;
  const double scale = 1.0 / std::sqrt(static_cast<double>(row.d));
  cudaEvent_t e0, e1;
  SMK_CUDA_CHECK(cudaEventCreate(&e0));
  SMK_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    SMK_CUDA_CHECK(cudaEventRecord(e0));
    smk::cuda::attention_forward(view(o), lv, view(q), view(k), view(v), opt, false, row.b, row.s, row.s, scale, cfg,
                                 {});
    SMK_CUDA_CHECK(cudaEventRecord(e1));
    SMK_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    SMK_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  SMK_CUDA_CHECK(cudaEventDestroy(e0));
  SMK_CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// "B,H,S,D,mask" of a row, as the tables print it.
std::string row_label(const Row& r) {
  char name[64];
  std::snprintf(name, sizeof name, "%lld,%lld,%lld,%lld,%s", static_cast<long long>(r.b), static_cast<long long>(r.h),
                static_cast<long long>(r.s), static_cast<long long>(r.d), r.causal ? "causal" : "full");
  return std::string(name);
}

double median_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x.size() % 2 ? x[x.size() / 2] : 0.5 * (x[x.size() / 2 - 1] + x[x.size() / 2]);
}

using Rounds = std::vector<std::vector<std::vector<double>>>;  // t[row][column][round], ms

// pfx15's and pfx16's rounds: `rounds` rounds, each timing every column of every row once (time_ms's median of 10)
// after set_column(c), the order of the columns rotating by round (no column always first); then the dispatcher's
// form again (prefill_wgmma_set_pv_form(0)).
template <typename SetColumn>
Rounds interleaved_rounds(const std::vector<Row>& rs, int cols, int rounds, SetColumn&& set_column, void* q, void* k,
                          void* v, void* o, float* lse) {
  Rounds t(rs.size(), std::vector<std::vector<double>>(static_cast<std::size_t>(cols)));
  for (int rd = 0; rd < rounds; ++rd)
    for (std::size_t ri = 0; ri < rs.size(); ++ri)
      for (int i = 0; i < cols; ++i) {
        const int c = (i + rd) % cols;
        set_column(c);
        t[ri][static_cast<std::size_t>(c)].push_back(time_ms(rs[ri], {}, q, k, v, o, lse));
      }
  smk::cuda::prefill_wgmma_set_pv_form(0);
  return t;
}

// pfx15's and pfx16's table under their headers: per row the label, each column's median TFLOP/s, column 0's median
// ms (ms_column), then each later column's per-round ratios column 0 / column (of time, i.e. column / column 0 of
// TFLOP/s): median (min-max); then "per round, ms (<order>):" and every timing.
void print_rounds(const std::vector<Row>& rs, const Rounds& t, int rounds, bool ms_column, const char* order) {
  for (std::size_t ri = 0; ri < rs.size(); ++ri) {
    const Row& r = rs[ri];
    const double flops = 4.0 * r.b * r.h * r.s * r.s * r.d * (r.causal ? 0.5 : 1.0);
    std::printf("%-24s", row_label(r).c_str());
    for (const auto& col : t[ri]) std::printf(" %8.1f", flops / median_of(col) / 1e9);
    if (ms_column) std::printf(" %8.3f  ", median_of(t[ri][0]));
    else std::printf("  ");
    for (std::size_t c = 1; c < t[ri].size(); ++c) {
      std::vector<double> ratio;
      for (int rd = 0; rd < rounds; ++rd) ratio.push_back(t[ri][0][rd] / t[ri][c][rd]);
      char b[64];
      std::snprintf(b, sizeof b, "%.3f (%.3f-%.3f)", median_of(ratio), *std::min_element(ratio.begin(), ratio.end()),
                    *std::max_element(ratio.begin(), ratio.end()));
      std::printf(" %-22s", b);
    }
    std::printf("\n");
  }
  std::printf("per round, ms (%s):\n", order);
  for (std::size_t ri = 0; ri < rs.size(); ++ri) {
    std::printf("row %zu:", ri);
    for (int rd = 0; rd < rounds; ++rd) {
      std::printf(" ");
      for (std::size_t c = 0; c < t[ri].size(); ++c)
        std::printf("%s%.3f", c ? "/" : "", t[ri][c][static_cast<std::size_t>(rd)]);
    }
    std::printf("\n");
  }
}

// Session 15 (pfx15): the rows of issue 7 that pfx15 times (bf16, D = 128: the overlap form is built there only):
// (4, 32, 4096) full and causal, (8, 32, 4096) causal, (1, 32, 16384) causal. (2430dcc's run also timed a form 3 and
// D = 64 rows.)
std::vector<Row> pfx15_rows() {
  return {{4, 32, 4096, 128, false}, {4, 32, 4096, 128, true}, {8, 32, 4096, 128, true}, {1, 32, 16384, 128, true}};
}

// Session 15 (pfx15): on each row the dispatcher's kernel under the forms "before" (1: P·V done before the softmax,
// the kernel before session 15), "overlap" (2: P·V under the softmax, the default) and "before" again ("again": the
// spread of one kernel against itself).
// First each form's O is compared byte for byte with before's (the same inputs; a difference fails the run). Then
// SMK_PFX15_ROUNDS rounds (default 20), each timing every form of every row once, the order rotating by round (no
// form always first); each timing is time_ms's median of 10. Prints per row the median TFLOP/s of each form and the
// median (min-max) over rounds of the per-round ratios form / before (of TFLOP/s, i.e. time before / time form), then
// every timing.
int pfx15(void* q, void* k, void* v, void* o, float* lse) {
  int rounds = 20;
  if (const char* e = std::getenv("SMK_PFX15_ROUNDS")) rounds = std::max(1, std::atoi(e));
  const std::vector<Row> rs = pfx15_rows();
  constexpr int kForms = 3;
  const char* names[kForms] = {"before", "overlap", "again"};
  const int forms[kForms] = {1, 2, 1};
  int bad = 0;
  for (const Row& r : rs) {
    const std::size_t n = static_cast<std::size_t>(r.b * r.s * r.h * r.d);
    std::vector<std::uint16_t> base(n), got(n);
    for (int f = 0; f < 2; ++f) {
      SMK_CUDA_CHECK(cudaMemset(o, 0xFF, n * 2));
      smk::cuda::prefill_wgmma_set_pv_form(forms[f]);
      const std::int64_t n0 = smk::cuda::prefill_wgmma_overlap_launches();
      time_ms(r, {}, q, k, v, o, lse);
      const bool ran = smk::cuda::prefill_wgmma_overlap_launches() > n0;
      SMK_CUDA_CHECK(cudaMemcpy(f == 0 ? base.data() : got.data(), o, n * 2, cudaMemcpyDeviceToHost));
      if (f > 0 && (std::memcmp(base.data(), got.data(), n * 2) != 0 || !ran)) {
        std::printf("pfx15: row %s form %s: %s\n", row_label(r).c_str(), names[f],
                    ran ? "O differs from before's" : "overlap kernel not run");
        ++bad;
      }
    }
  }
  std::printf("pfx15: bits of overlap against before on every row: %s\n", bad ? "DIFFER" : "the same");
  std::fflush(stdout);
  const Rounds t = interleaved_rounds(
      rs, kForms, rounds, [&](int f) { smk::cuda::prefill_wgmma_set_pv_form(forms[f]); }, q, k, v, o, lse);
  std::printf("pfx15: %d rounds, TFLOP/s medians; ratios form / before of TFLOP/s per round: median (min-max)\n",
              rounds);
  std::printf("%-24s %8s %8s %8s   %-22s %-22s\n", "B,H,S,D,mask (bf16)", "before", "overlap", "again",
              "overlap/before", "again/before");
  print_rounds(rs, t, rounds, false, "before overlap again");
  return bad ? 1 : 0;
}

// Session 16 (pfx16): the rows and the forms compared on each: "old" (form 2), "new" (form 4) and "old" again. The full
// row has no crossing tile: form 4 runs form 2's loop there in another build (a control). (2a5e68f's runs also timed
// a D = 64 two-warpgroup overlap build against the dispatcher on D = 64 rows: 0.81-0.88, removed.)
std::vector<Row> pfx16_rows() {
  return {{4, 32, 4096, 128, true}, {8, 32, 4096, 128, true}, {1, 32, 16384, 128, true}, {8, 32, 2048, 128, true},
          {4, 32, 4096, 128, false}};
}
// First the bits: new's O byte for byte against old's on every row (the same inputs; a difference fails the run).
// Then SMK_PFX16_ROUNDS rounds (default 24) as pfx15(): every column of every row once a round, the order rotating;
// each timing time_ms's median of 10. Prints TFLOP/s medians and the per-round ratios new / old and again / old (of
// TFLOP/s: time old / time column), median (min-max), then every timing.
int pfx16(void* q, void* k, void* v, void* o, float* lse) {
  int rounds = 24;
  if (const char* e = std::getenv("SMK_PFX16_ROUNDS")) rounds = std::max(1, std::atoi(e));
  const std::vector<Row> rs = pfx16_rows();
  constexpr int kCols = 3;
  const char* names[kCols] = {"old", "new", "again"};
  const auto col = [&](int c) { smk::cuda::prefill_wgmma_set_pv_form(c == 1 ? 4 : 2); };
  int bad = 0;
  for (const Row& r : rs) {
    const std::size_t n = static_cast<std::size_t>(r.b * r.s * r.h * r.d);
    std::vector<std::uint16_t> base(n), got(n);
    for (int c = 0; c < 2; ++c) {
      SMK_CUDA_CHECK(cudaMemset(o, 0xFF, n * 2));
      col(c);
      time_ms(r, {}, q, k, v, o, lse);
      SMK_CUDA_CHECK(cudaMemcpy(c == 0 ? base.data() : got.data(), o, n * 2, cudaMemcpyDeviceToHost));
    }
    if (std::memcmp(base.data(), got.data(), n * 2) != 0) {
      std::printf("pfx16: row %s: new's O differs from old's\n", row_label(r).c_str());
      ++bad;
    }
  }
  std::printf("pfx16: bits of new against old on every row: %s\n", bad ? "DIFFER" : "the same");
  std::fflush(stdout);
  const Rounds t = interleaved_rounds(rs, kCols, rounds, col, q, k, v, o, lse);
  std::printf("pfx16: %d rounds, TFLOP/s medians (ms of old); ratios column / old of TFLOP/s per round: median "
              "(min-max)\n", rounds);
  std::printf("%-24s %8s %8s %8s %8s   %-22s %-22s\n", "B,H,S,D,mask (bf16)", names[0], names[1], names[2], "old ms",
              "new/old", "again/old");
  print_rounds(rs, t, rounds, true, "old new again");
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::FILE* json = nullptr;
  if (argc == 3 && std::string(argv[1]) == "--json") json = std::fopen(argv[2], "w");
  const bool pfx15_mode = argc == 2 && std::string(argv[1]) == "--pfx15";
  const bool pfx16_mode = argc == 2 && std::string(argv[1]) == "--pfx16";
  std::int64_t most = 0;
  // The chosen mode's rows only (q, k, v, o of the largest, lse the same count of floats).
  for (const Row& r : pfx15_mode ? pfx15_rows() : pfx16_mode ? pfx16_rows() : rows())
    most = std::max(most, r.b * r.s * r.h * r.d);
  std::vector<std::uint16_t> host(static_cast<std::size_t>(most));
  std::uint64_t st = 0x9E3779B97F4A7C15ull;
  for (auto& x : host) {
    st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
    x = smk::to_bfloat16(static_cast<float>((st * 2685821657736338717ull) >> 40) / 8388608.0f - 1.0f).bits;
  }
  void *q, *k, *v, *o;
  float* lse;
  for (void** p : {&q, &k, &v, &o}) {
    SMK_CUDA_CHECK(cudaMalloc(p, host.size() * 2));
    SMK_CUDA_CHECK(cudaMemcpy(*p, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  }
  SMK_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&lse), static_cast<std::size_t>(most) * 4));
  if (pfx15_mode) return pfx15(q, k, v, o, lse);
  if (pfx16_mode) return pfx16(q, k, v, o, lse);
  if (json) std::fprintf(json, "[\n");
  bool first = true;
  std::int64_t header_d = 0;
  // SMK_TUNE_REVERSE=1: the columns in reverse order (a call's later columns ran a few per cent slower in session 5's
  // runs: a second pass in the other order takes that drift out of a comparison between neighbours).
  const bool reverse = std::getenv("SMK_TUNE_REVERSE") && std::string(std::getenv("SMK_TUNE_REVERSE")) == "1";
  for (const Row& r : rows()) {
    auto cols = configs(r.d);
    if (reverse) std::reverse(cols.begin(), cols.end());
    if (r.d != header_d) {  // one header per head dimension: the columns differ
      header_d = r.d;
      std::printf("\n%-24s", "B,H,S,D,mask (bf16)");
      for (const Config& c : cols) std::printf(" %14s", c.name.c_str());
      std::printf("   (TFLOP/s; ms of the first column)\n");
    }
    const double flops = 4.0 * r.b * r.h * r.s * r.s * r.d * (r.causal ? 0.5 : 1.0);
    char name[64];
    std::snprintf(name, sizeof name, "%lld,%lld,%lld,%lld,%s", static_cast<long long>(r.b),
                  static_cast<long long>(r.h), static_cast<long long>(r.s), static_cast<long long>(r.d),
                  r.causal ? "causal" : "full");
    std::printf("%-24s", name);
    if (json)
      std::fprintf(json, "%s  {\"b\": %lld, \"h\": %lld, \"s\": %lld, \"d\": %lld, \"causal\": %s, \"tflops\": {",
                   first ? "" : ",\n", static_cast<long long>(r.b), static_cast<long long>(r.h),
                   static_cast<long long>(r.s), static_cast<long long>(r.d), r.causal ? "true" : "false");
    bool first_c = true;
    double first_ms = 0;
    for (const Config& c : cols) {
      const double t = time_ms(r, c.cfg, q, k, v, o, lse);
      if (first_c) first_ms = t;
      std::printf(" %14.1f", flops / t / 1e9);
      if (json) std::fprintf(json, "%s\"%s\": %.1f", first_c ? "" : ", ", c.name.c_str(), flops / t / 1e9);
      first_c = false;
    }
    std::printf("   %.3f\n", first_ms);
    std::fflush(stdout);
    if (json) std::fprintf(json, "}}");
    first = false;
  }
  if (json) std::fprintf(json, "\n]\n"), std::fclose(json);
  return 0;
}
