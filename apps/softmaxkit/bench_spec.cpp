// `softmaxkit bench`: ops, shapes, grids, minimum traffic and timing statistics (no GPU needed).
#include "bench_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "softmaxkit/core/error.hpp"

namespace smk::app::bench {

const char* op_name(Op op) noexcept {
  switch (op) {
    case Op::softmax: return "softmax";
    case Op::log_softmax: return "log_softmax";
    case Op::logsumexp: return "logsumexp";
    case Op::softmax_backward: return "softmax_backward";
    case Op::log_softmax_backward: return "log_softmax_backward";
    case Op::cross_entropy: return "cross_entropy";
    case Op::cross_entropy_fwd_bwd: return "cross_entropy_fwd_bwd";
    case Op::cross_entropy_backward: return "cross_entropy_backward";
    case Op::cross_entropy_fused: return "cross_entropy_fused";
  }
  return "?";
}

bool is_cross_entropy(Op op) noexcept {
  return op == Op::cross_entropy || op == Op::cross_entropy_fwd_bwd || op == Op::cross_entropy_backward ||
         op == Op::cross_entropy_fused;
}

bool is_backward(Op op) noexcept { return op == Op::softmax_backward || op == Op::log_softmax_backward; }

std::int64_t min_traffic_elements(Op op, std::int64_t rows, std::int64_t cols) noexcept {
  const std::int64_t n = rows * cols;
  switch (op) {
    case Op::softmax:
    case Op::log_softmax: return 2 * n;
    case Op::logsumexp: return n;
    case Op::softmax_backward:
    case Op::log_softmax_backward: return 3 * n;
    case Op::cross_entropy: return n;
    case Op::cross_entropy_fwd_bwd:
    case Op::cross_entropy_backward:
    case Op::cross_entropy_fused: return 2 * n;
  }
  return 0;
}

std::int64_t min_traffic_bytes(Op op, DType dtype, std::int64_t rows, std::int64_t cols) noexcept {
  return min_traffic_elements(op, rows, cols) * static_cast<std::int64_t>(dtype_size(dtype));
}

double gb_per_s(std::int64_t bytes, double microseconds) noexcept {
  if (!(microseconds > 0)) return 0.0;
  return static_cast<double>(bytes) / microseconds * 1e-3;  // bytes/µs = 10^6 B/s; /10^3 -> 10^9 B/s
}

double percent_of(double achieved, double ceiling) noexcept { return ceiling > 0 ? 100.0 * achieved / ceiling : 0.0; }

namespace {

// The sweep holds the tensor size fixed (2^26 elements: 256 MiB in f32, 128 MiB in bf16, each well over the
// 60 MB L2 and over the 64 MB the targets start at for softmax) and doubles the row length, so the plot shows
// bandwidth against row length alone, through every kernel regime from several rows per warp to split rows.
constexpr std::int64_t kSweepElements = std::int64_t{1} << 26;
constexpr std::int64_t kSweepFirstCols = 32;
constexpr std::int64_t kSweepLastCols = std::int64_t{1} << 21;

std::vector<Shape> make_shapes() {
  std::vector<Shape> s = {
      // The grid (issue 3, "Benchmark").
      {"qwen-vocab-1", "issue", 1, 151936, "one decode row of a Qwen2 vocabulary: the GPU must fill from one row"},
      {"llama3-vocab-32", "issue", 32, 128256, "decode batch 32 over Llama-3's vocabulary: few long rows"},
      {"qwen-vocab-4096", "issue", 4096, 151936, "prefill logits, 2.5 GB in f32: vocabulary-size rows at scale"},
      {"llama2-vocab-8192", "issue", 8192, 32000, "Llama-2 vocabulary rows: a row of 125 KB in f32"},
      {"rows-1024", "issue", 32768, 1024, "medium rows that fit a warp's registers"},
      {"rows-4096", "issue", 16384, 4096, "a block per row, row in registers"},
      {"rows-16384", "issue", 4096, 16384, "a block per row, row in shared memory"},
      {"attn-128", "issue", 262144, 128, "attention-score rows of 128: several rows per warp"},
      {"tiny-32", "issue", 1048576, 32, "rows of 32: a row is one 128-byte line in f32"},
      {"one-row-16M", "issue", 1, 16777216, "one enormous row: split across the whole GPU, states merged"},
      // Decode batches over Llama-3's vocabulary: where splitting each row stops paying.
      {"llama3-vocab-b1", "decode", 1, 128256, "decode batch 1"},
      {"llama3-vocab-b4", "decode", 4, 128256, "decode batch 4"},
      {"llama3-vocab-b16", "decode", 16, 128256, "decode batch 16"},
      {"llama3-vocab-b64", "decode", 64, 128256, "decode batch 64"},
      {"llama3-vocab-b256", "decode", 256, 128256, "decode batch 256: about two rows per SM"},
      // Row lengths that break alignment: vectors of 16 bytes no longer tile a row.
      {"gpt2-vocab-8192", "odd", 8192, 50257, "GPT-2's odd vocabulary: rows start unaligned to 16 bytes"},
      {"rows-4097", "odd", 16384, 4097, "one past a power of two: a tail in every row"},
      {"rows-100", "odd", 655360, 100, "short rows that are not a multiple of a vector"},
  };
  for (std::int64_t cols = kSweepFirstCols; cols <= kSweepLastCols; cols *= 2)
    s.push_back({"sweep-" + std::to_string(cols), "sweep", kSweepElements / cols, cols,
                 "row-length sweep at 2^26 elements"});
  return s;
}

bool parse_positive(std::string_view text, std::int64_t& value) {
  if (text.empty()) return false;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc{} && ptr == end && value > 0;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

const std::vector<Shape>& builtin_shapes() {
  static const std::vector<Shape> shapes = make_shapes();
  return shapes;
}

std::vector<std::string> grid_names() { return {"issue", "decode", "odd", "sweep"}; }

std::vector<Shape> resolve_shapes(const std::vector<std::string>& items) {
  std::vector<Shape> out;
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  auto add = [&](const Shape& s) {
    if (seen.insert({s.rows, s.cols}).second) out.push_back(s);
  };
  const auto grids = grid_names();
  for (const std::string& raw : items) {
    const std::string item = lower(raw);
    if (item.empty()) throw_invalid_argument("bench", "--shape", "empty item");
    if (item == "all") {
      for (const Shape& s : builtin_shapes()) add(s);
      continue;
    }
    if (std::find(grids.begin(), grids.end(), item) != grids.end()) {
      for (const Shape& s : builtin_shapes())
        if (s.grid == item) add(s);
      continue;
    }
    auto named = std::find_if(builtin_shapes().begin(), builtin_shapes().end(),
                              [&](const Shape& s) { return s.name == item; });
    if (named != builtin_shapes().end()) {
      add(*named);
      continue;
    }
    // "ROWSxCOLS", or with the multiplication sign (UTF-8 "×").
    std::string_view text = item;
    std::size_t sep = text.find('x'), sep_len = 1;
    if (sep == std::string_view::npos) {
      sep = text.find("\xc3\x97");
      sep_len = 2;
    }
    std::int64_t rows = 0, cols = 0;
    if (sep == std::string_view::npos || !parse_positive(text.substr(0, sep), rows) ||
        !parse_positive(text.substr(sep + sep_len), cols))
      throw_invalid_argument("bench", "--shape",
                             "'" + raw + "' is neither a grid (all, issue, decode, odd, sweep), a built-in shape "
                             "name (see --list) nor ROWSxCOLS with both positive");
    if (rows > (std::int64_t{1} << 40) / cols)
      throw_invalid_argument("bench", "--shape", "'" + raw + "' has more than 2^40 elements");
    add({std::to_string(rows) + "x" + std::to_string(cols), "custom", rows, cols, "given on the command line"});
  }
  return out;
}

std::vector<DType> resolve_dtypes(const std::vector<std::string>& items) {
  std::vector<DType> out;
  auto add = [&](DType d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  for (const std::string& raw : items) {
    const std::string item = lower(raw);
    if (item == "all") {
      add(DType::f32);
      add(DType::bf16);
      add(DType::f16);
    } else if (item == "f32" || item == "float32") {
      add(DType::f32);
    } else if (item == "bf16" || item == "bfloat16") {
      add(DType::bf16);
    } else if (item == "f16" || item == "float16") {
      add(DType::f16);
    } else {
      throw_invalid_argument("bench", "--dtype", "'" + raw + "' is not one of f32, bf16, f16, all");
    }
  }
  return out;
}

std::vector<Op> resolve_ops(const std::vector<std::string>& items) {
  std::vector<Op> out;
  auto add = [&](Op o) {
    if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
  };
  for (const std::string& raw : items) {
    const std::string item = lower(raw);
    if (item == "all") {
      for (Op o : kAllOps) add(o);
      continue;
    }
    if (item == "ce") {
      for (Op o : kCrossEntropyOps) add(o);
      continue;
    }
    auto ce = std::find_if(std::begin(kCrossEntropyOps), std::end(kCrossEntropyOps),
                           [&](Op o) { return item == op_name(o); });
    if (ce != std::end(kCrossEntropyOps)) {
      add(*ce);
      continue;
    }
    auto it = std::find_if(std::begin(kAllOps), std::end(kAllOps), [&](Op o) { return item == op_name(o); });
    if (it == std::end(kAllOps))
      throw_invalid_argument("bench", "--op",
                             "'" + raw + "' is not one of softmax, log_softmax, logsumexp, softmax_backward, "
                             "log_softmax_backward, all, cross_entropy, cross_entropy_fwd_bwd, "
                             "cross_entropy_backward, cross_entropy_fused, ce");
    add(*it);
  }
  return out;
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw_invalid_argument("bench", "samples", "no samples to take a quantile of");
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> samples) {
  if (samples.empty()) throw_invalid_argument("bench", "samples", "no samples to summarize");
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.count = static_cast<int>(samples.size());
  s.median = quantile_sorted(samples, 0.5);
  s.p10 = quantile_sorted(samples, 0.1);
  s.p90 = quantile_sorted(samples, 0.9);
  s.min = samples.front();
  double total = 0;
  for (double v : samples) total += v;
  s.mean = total / static_cast<double>(samples.size());
  return s;
}

int choose_reps(double estimate_ms, double target_ms, int min_reps, int max_reps, double slow_cap_ms) {
  if (!(estimate_ms > 0)) return max_reps;
  if (estimate_ms * min_reps > slow_cap_ms) return std::max(3, static_cast<int>(slow_cap_ms / estimate_ms));
  const double wanted = std::ceil(target_ms / estimate_ms);
  return static_cast<int>(std::clamp(wanted, static_cast<double>(min_reps), static_cast<double>(max_reps)));
}

}  // namespace smk::app::bench
