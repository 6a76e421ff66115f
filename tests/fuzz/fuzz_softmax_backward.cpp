// libFuzzer target: drives the softmax family's backward passes and its online state through the CPU API —
// smk::softmax_backward, smk::log_softmax_backward, smk::softmax_state (softmaxkit/softmax.hpp), the CPU float path
// and the CPU float64 reference (softmaxkit/cpu/softmax.hpp) — with random bounded calls: rank ≤ 4, any dim
// (negative too), strides, offsets and stride-0 (broadcast) inputs, dtypes f32 / f16 / bf16 / f64, f32 gradients of
// 16-bit inputs, scalar and per-row temperatures, in-place dx over dy or y (and dy identical to y), masks and
// out-of-range empty_rows policies that the backward passes must ignore, y drawn as a real softmax / log-softmax
// output of random scores (rows summing to 1, zeros, one-hot rows, subnormals) or as arbitrary values, dy with
// ±inf / NaN / huge / tiny values. Every call is held to the contract:
//   - a valid call returns; each dx element is within the gate of docs/semantics.md §6 "Backward passes" of the
//     long-double oracle of the header's formula from the stored inputs (gates below, each with its source); the
//     state's m is the row max of the scaled, masked scores bit for bit and l = Σ exp(z − m) within §6's state
//     gate; the regimes of §2 where the formula gives no finite value; bytes outside the output views and every
//     input are untouched;
//   - a call made invalid on purpose (one defect: shapes of y / dy / dx / out_max / out_sum, dtypes, dim, negative
//     strides, null data, a self-overlapping or partially aliasing output, per-row temperatures inside an output,
//     bad temperatures scalar or per row (value, shape, dtype, both at once), an unknown empty_rows for the state)
//     throws smk::Error(invalid_argument) naming the op and the argument at fault, and writes nothing.
// A violation prints the case and aborts (keep the input in tests/fuzz/corpus_softmax_backward/; the replay test
// fuzz.softmax_backward_replay runs that folder in every build).
//
// Where docs/semantics.md is silent, this target decides (tell the lead if one of these should change):
//   - non-finite y / dy: the formula evaluated in IEEE long double is the contract (NaN where it gives NaN, the
//     same infinity where it gives one): PyTorch's CPU backward evaluates the same formula in IEEE arithmetic.
//   - an intermediate beyond the compute type's range (Σ|dy·y|, |dy| + |s|, exp(y), exp(y)·|S|, ... above half of
//     FLT_MAX in f32 compute): the element may be ±inf or NaN instead of the exact value (PyTorch overflows in f32
//     the same way); a finite output there must still be within the gate.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "conformance/numerics.hpp"
#include "reader.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"

using namespace smk;
using namespace smk::conformance;

namespace {

using smk::fuzz::PastEnd;
using smk::fuzz::Reader;

using ld = long double;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// An arbitrary value: specials, any float bit pattern, ordinary numbers.
double any_value(Reader& r) {
  static const double palette[] = {0,     -0.0,  1,      -1,    kInf, -kInf, kNaN,   1e10,  -1e10, 1e-10, 65504,
                                   -65504, 1e38, -1e38,  1e-40, -1e-45, 0.5, 0.25,   1e30,  -3e38, 3.5,   133120,
                                   1e-300, 1e300, 2.0};
  switch (r.below(4)) {
    case 0: return palette[r.below(sizeof palette / sizeof palette[0])];
    case 1: return static_cast<double>(r.f32());
    default: return (static_cast<double>(r.below(2001)) - 1000) / 37;
  }
}
// A score for a real forward output: mostly ordinary, sometimes −inf (a zero probability), far below the rest
// (probabilities that underflow to 0 or to subnormals) or huge.
double score(Reader& r) {
  static const double palette[] = {-kInf, -1000, -100, -90, -87.5, -745, -700, 0, 0, 1e7, -1e7, 88.7, 20};
  return r.chance(3) ? palette[r.below(sizeof palette / sizeof palette[0])]
                     : (static_cast<double>(r.below(2001)) - 1000) / 97;
}

enum class BwdOp { softmax_backward, log_softmax_backward, state };
enum class Path { dispatch, cpu_float, cpu_reference };
const char* op_name(BwdOp op) {
  return op == BwdOp::softmax_backward ? "softmax_backward"
                                    : (op == BwdOp::log_softmax_backward ? "log_softmax_backward" : "softmax_state");
}
std::string full_name(Path p, BwdOp op) {
  return std::string(p == Path::dispatch ? "" : (p == Path::cpu_float ? "cpu::" : "cpu::reference::")) + op_name(op);
}

// A tensor: a view over one of the case's buffers.
struct Tensor {
  int buf = -1;  // index into Case::bufs; -1: not passed
  ViewLayout v;
  bool null_data = false;
};
struct Buffer {
  std::vector<unsigned char> bytes, orig;
};

struct Case {
  BwdOp op = BwdOp::softmax_backward;
  Path path = Path::dispatch;
  std::vector<std::int64_t> shape;
  int dim = 0;
  SoftmaxOptions options{};
  // backward: 0 y, 1 dy, 2 dx; state: 0 in, 1 out_max, 2 out_sum; 3 mask, 4 per-row temperatures.
  Tensor t[5];
  std::vector<Buffer> bufs;
  std::string defect = "none";
};

[[noreturn]] void violation(const std::string& what, const Case& c) {
  static const char* names_bwd[] = {"y", "dy", "dx", "mask", "temperature_per_row"};
  static const char* names_state[] = {"in", "out_max", "out_sum", "mask", "temperature_per_row"};
  std::fprintf(stderr, "CONTRACT VIOLATION: %s\n  op %s, shape %s, dim %d (options.dim %d), temperature %g, defect %s\n",
               what.c_str(), full_name(c.path, c.op).c_str(), dims(c.shape).c_str(), c.dim, c.options.dim,
               c.options.temperature, c.defect.c_str());
  for (int k = 0; k < 5; ++k) {
    const Tensor& x = c.t[k];
    if (x.buf < 0) continue;
    std::fprintf(stderr, "  %s: buffer %d, %s shape %s strides %s offset %lld%s\n",
                 (c.op == BwdOp::state ? names_state : names_bwd)[k], x.buf, dtype_name(x.v.dtype),
                 dims(x.v.shape).c_str(), dims(x.v.strides).c_str(), static_cast<long long>(x.v.offset),
                 x.null_data ? " (null data)" : "");
  }
  std::abort();
}

// Outcome counts and the largest error / gate seen (dx, and the state's l), printed at exit when SMK_FUZZ_STATS is set.
struct Stats {
  long valid = 0, rejected = 0, elements = 0;
  double worst_dx = 0, worst_dx16 = 0, worst_l = 0;  // dx: f32 / f64 outputs; dx16: 16-bit ones (half an ulp in the gate)
  ~Stats() {
    if (std::getenv("SMK_FUZZ_STATS"))
      std::fprintf(stderr,
                   "fuzz_softmax_backward: %ld valid calls (%ld outputs checked), %ld invalid calls rejected; "
                   "largest error / gate: dx %.3g (16-bit dx %.3g), state l %.3g\n",
                   valid, elements, rejected, worst_dx, worst_dx16, worst_l);
  }
} stats;

std::int64_t numel_of(const std::vector<std::int64_t>& shape) {
  std::int64_t k = 1;
  for (auto s : shape) k *= s;
  return k;
}

// A non-overlapping layout of `shape`: dimensions stored in a random order, each with random padding.
std::vector<std::int64_t> random_strides(Reader& r, const std::vector<std::int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int> order(rank);
  for (int d = 0; d < rank; ++d) order[d] = rank - 1 - d;  // usually row-major
  if (r.chance(3))
    for (int d = rank - 1; d > 0; --d) std::swap(order[d], order[r.below(d + 1)]);
  std::vector<std::int64_t> strides(rank);
  std::int64_t step = 1 + (r.chance(4) ? r.below(3) : 0);
  for (int k = 0; k < rank; ++k) {
    const int d = order[k];
    strides[d] = step;
    step = step * std::max<std::int64_t>(shape[d], 1) + (r.chance(4) ? r.below(5) : 0);
  }
  return strides;
}

// Rows enumerate every index but `dim`, row-major; idx is the full index of (row, position i along dim).
std::vector<std::int64_t> index_of(const std::vector<std::int64_t>& shape, int dim, std::int64_t row, std::int64_t i) {
  std::vector<std::int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (d == dim) continue;
    idx[d] = row % shape[d];
    row /= shape[d];
  }
  idx[dim] = i;
  return idx;
}
// Element offset of a full index in a layout of the full rank (a broadcast size-1 dimension takes index 0), or of
// a row in a reduced layout (rank − 1: `dim` dropped; or full rank with dim of size 1).
std::int64_t offset_full(const ViewLayout& v, const std::vector<std::int64_t>& idx) {
  std::int64_t off = v.offset;
  for (std::size_t d = 0; d < idx.size(); ++d) off += (v.shape[d] == 1 ? 0 : idx[d]) * v.strides[d];
  return off;
}
// The step along `dim` of a full-rank layout (0 where it broadcasts with size 1): element (row, i) is at
// offset_full(v, index_of(row, 0)) + i * dim_step(v, dim).
std::int64_t dim_step(const ViewLayout& v, int dim) { return v.shape[dim] == 1 ? 0 : v.strides[dim]; }
std::int64_t offset_reduced(const ViewLayout& v, const std::vector<std::int64_t>& idx, int dim) {
  std::int64_t off = v.offset;
  if (v.shape.size() == idx.size()) {
    for (std::size_t d = 0; d < idx.size(); ++d)
      if (static_cast<int>(d) != dim) off += idx[d] * v.strides[d];
    return off;
  }
  for (std::size_t d = 0, o = 0; d < idx.size(); ++d)
    if (static_cast<int>(d) != dim) off += idx[d] * v.strides[o++];
  return off;
}

TensorView view_of(Case& c, const Tensor& x) {
  const bool none = x.buf < 0 || x.null_data;
  return make_view(x.v, none ? nullptr : c.bufs[x.buf].bytes.data(), none);
}

int new_buffer(Case& c, std::int64_t bytes, unsigned char fill) {
  c.bufs.push_back({std::vector<unsigned char>(static_cast<std::size_t>(bytes), fill), {}});
  return static_cast<int>(c.bufs.size()) - 1;
}
unsigned char* at(Case& c, const Tensor& x, std::int64_t off) {
  return c.bufs[x.buf].bytes.data() + off * static_cast<std::int64_t>(dtype_size(x.v.dtype));
}

// Marks the bytes a layout covers (the output views) in a per-buffer mask.
void cover(std::vector<char>& covered, const ViewLayout& v) {
  const std::int64_t n = numel_of(v.shape);
  const auto size = static_cast<std::int64_t>(dtype_size(v.dtype));
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t off = v.offset, rest = k;
    for (int d = static_cast<int>(v.shape.size()) - 1; d >= 0; --d) {
      off += (rest % v.shape[d]) * v.strides[d];
      rest /= v.shape[d];
    }
    for (std::int64_t b = 0; b < size; ++b) covered[static_cast<std::size_t>(off * size + b)] = 1;
  }
}

// ---- the gates --------------------------------------------------------------------------------------------------

// Unit roundoff and the smallest subnormal spacing of the compute type: f32 for f32 / f16 / bf16 tensors on the float
// path, f64 for f64 tensors (docs/semantics.md §3). The reference computes in f64 throughout; the f32 gates hold it
// a fortiori, since its own errors are smaller and its output rounds once (within the u·|dx| term).
struct Compute {
  ld u, eta, max;
};
Compute compute_of(DType t) {
  if (t == DType::f64) return {0x1p-53L, 0x1p-1074L, std::numeric_limits<double>::max()};
  return {0x1p-24L, 0x1p-149L, std::numeric_limits<float>::max()};
}

// Accepts `got` for the exact value `e` with absolute gate `g` (the compute's error before the output's rounding):
// within [e − g, e + g] widened by half an ulp of the output format for the final rounding of a 16-bit output
// (§6 "f16 / bf16 outputs"; an f32 or f64 output's one rounding is inside g), or the infinity that rounding an
// end of that interval to the output format gives.
ld output_gate(DType out, ld e, ld g) {
  return out == DType::f16 || out == DType::bf16 ? g + ulp_of(out, std::fabs(e) + g) / 2 : g;
}
bool within(DType out, ld got, ld e, ld g) {
  g = output_gate(out, e, g);
  if (std::isfinite(got)) return std::fabs(got - e) <= g;
  if (std::isnan(got)) return false;
  return got > 0 ? round_to(out, e + g) == INFINITY : round_to(out, e - g) == -INFINITY;
}

// Σ in long double, compensated (Neumaier), so the oracle's own error is about 2^-63 of Σ|terms|, far below every
// gate (the f64 gates included, which still get a slack below for the oracle's ~16 long-double roundings).
// A non-finite term (or partial sum) gives the plain IEEE sum: ±inf or NaN, as the formula does.
ld exact_sum(const std::vector<ld>& v) {
  ld s = 0, c = 0, plain = 0;
  bool finite = true;
  for (ld x : v) {
    plain += x;
    const ld t = s + x;
    if (!std::isfinite(t)) finite = false;
    if (finite) c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  return finite ? s + c : plain;
}

}  // namespace

namespace {

// ---- the checks of a valid call -----------------------------------------------------------------------------------

// The per-row temperature of row `row` (1 when none is set: dividing by 1 is exact).
ld row_temperature(const Case& c, const std::vector<std::int64_t>& idx) {
  const Tensor& t = c.t[4];
  if (t.buf < 0) return c.options.temperature;
  float v;
  std::memcpy(&v, c.bufs[t.buf].orig.data() + offset_reduced(t.v, idx, c.dim) * 4, 4);
  return v;
}
bool scaled(const Case& c) { return c.t[4].buf >= 0 || c.options.temperature != 1.0f; }
double load_orig(const Case& c, const Tensor& x, std::int64_t off) {
  return load(x.v.dtype, c.bufs[x.buf].orig.data() + off * static_cast<std::int64_t>(dtype_size(x.v.dtype)));
}
double load_now(const Case& c, const Tensor& x, std::int64_t off) {
  return load(x.v.dtype, c.bufs[x.buf].bytes.data() + off * static_cast<std::int64_t>(dtype_size(x.v.dtype)));
}
std::string row_at(std::int64_t row, std::int64_t i) {
  return " (row " + std::to_string(row) + ", position " + std::to_string(i) + ")";
}
std::string num(ld v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9Lg", v);
  return b;
}

// Bytes outside the output views keep what they held (the poison, or in place the input's bytes); inputs unchanged.
void check_untouched(const Case& c, std::initializer_list<int> outputs) {
  for (std::size_t b = 0; b < c.bufs.size(); ++b) {
    std::vector<char> covered(c.bufs[b].bytes.size(), 0);
    for (int k : outputs)
      if (c.t[k].buf == static_cast<int>(b)) cover(covered, c.t[k].v);
    for (std::size_t i = 0; i < covered.size(); ++i)
      if (!covered[i] && c.bufs[b].bytes[i] != c.bufs[b].orig[i])
        violation("byte " + std::to_string(i) + " of buffer " + std::to_string(b) + " outside the output was written", c);
  }
}

// docs/semantics.md §6 "Backward passes", per element, with D = L + 4 (summation_depth, the CPU's pairwise sum):
//   softmax:     |dx̂ − dx| ≤ u·(|y|·((D + 1)·Σ|dy ⊙ y| + |dy| + |s|) + 2|dx|)
//   log-softmax: |dx̂ − dx| ≤ u·(exp(y)·(D·Σ|dy| + (4 + 2)·|S|) + |dx|)
// for the unscaled dx0 = T·dx; with a temperature the error of dx0 is divided by T and the division costs 2u·|dx|
// more (§6). Subnormal results (the section is silent): each product or exp that underflows loses up to half the
// subnormal spacing η absolutely (expf 2η, its 2 ulp), additions of subnormals are exact: softmax's s gains n·η/2,
// times |y|, its product and the division η/2 each; log-softmax's exp(y)·S gains 2η·|S|, its product and the
// division η/2 each. f64 tensors compute in f64 (u = 2^-53); the long-double oracle's own ~16 roundings of 2^-64
// get a 2^-60 slack on the same magnitudes.
void check_backward(const Case& c) {
  check_untouched(c, {2});
  const Tensor &ty = c.t[0], &tdy = c.t[1], &tdx = c.t[2];
  const bool soft = c.op == BwdOp::softmax_backward;
  const Compute k = compute_of(ty.v.dtype);
  const std::int64_t n = c.shape[c.dim], rows = numel_of(c.shape) / std::max<std::int64_t>(n, 1);
  if (n == 0) return;  // nothing to write, and check_untouched saw nothing written
  const ld D = summation_depth(n, SumModel::tree);
  const ld slack_u = 0x1p-60L;
  std::vector<ld> y(n), g(n), terms(n);
  for (std::int64_t row = 0; row < rows; ++row) {
    const auto idx0 = index_of(c.shape, c.dim, row, 0);
    const std::int64_t oy = offset_full(ty.v, idx0), ody = offset_full(tdy.v, idx0), odx = offset_full(tdx.v, idx0);
    const std::int64_t sy = dim_step(ty.v, c.dim), sdy = dim_step(tdy.v, c.dim), sdx = dim_step(tdx.v, c.dim);
    for (std::int64_t i = 0; i < n; ++i) {
      y[i] = load_orig(c, ty, oy + i * sy);
      g[i] = load_orig(c, tdy, ody + i * sdy);
      terms[i] = soft ? y[i] * g[i] : g[i];
    }
    const ld s = exact_sum(terms);
    ld abs_finite = 0;  // Σ|terms| over the finite terms: the magnitude the compute's partial sums reach
    bool all_finite = true;
    for (ld v : terms) {
      if (std::isfinite(v)) abs_finite += std::fabs(v);
      else all_finite = false;
    }
    const ld abs_sum = all_finite ? abs_finite : INFINITY;
    const ld T = row_temperature(c, idx0);
    for (std::int64_t i = 0; i < n; ++i) {
      const ld got = load_now(c, tdx, odx + i * sdx);
      ld dx0, gate0, big, eta_part;
      bool underflow = false;
      if (soft) {
        dx0 = y[i] * (g[i] - s);
        gate0 = k.u * (std::fabs(y[i]) * ((D + 1) * abs_sum + std::fabs(g[i]) + std::fabs(s)) + 2 * std::fabs(dx0)) +
                slack_u * (std::fabs(y[i]) * (abs_sum + std::fabs(g[i]) + std::fabs(s)) + std::fabs(dx0));
        big = std::max({abs_finite, std::fabs(g[i]) + abs_finite, std::fabs(y[i]) * (std::fabs(g[i]) + abs_finite)});
        eta_part = k.eta * (std::fabs(y[i]) * static_cast<ld>(n) / 2 + 0.5L);
      } else {
        const ld e = std::exp(y[i]);
        dx0 = g[i] - e * s;
        gate0 = k.u * (e * (D * abs_sum + 6 * std::fabs(s)) + std::fabs(dx0)) +
                slack_u * (e * (abs_sum + std::fabs(s)) + std::fabs(dx0));
        big = std::max({abs_finite, e, e * abs_finite, std::fabs(g[i]) + e * abs_finite});
        eta_part = k.eta * (2 * std::fabs(s) + 0.5L);
        underflow = e < k.eta * 0x1p30L;  // exp(y) may be 0 or subnormal in the compute type
      }
      const ld dx = dx0 / T;
      const bool range = big > k.max / 2 || (!soft && std::exp(y[i]) > k.max / 2) || underflow ||
                         std::fabs(dx) > k.max / 2;
      auto where = [&] {  // built only for a violation
        return row_at(row, i) + ": got " + num(got) + ", exact " + num(dx) + " (y " + num(y[i]) + ", dy " +
               num(g[i]) + ", " + (soft ? "s " : "S ") + num(s) + ", sum of |terms| " + num(abs_sum) + ", T " +
               num(T) + ")";
      };
      // exp(y) beyond the range times a sum whose computed sign the gate does not fix (|s| within the sum's error
      // bound, 0 included) is an infinity of either sign, or NaN if the sum came out 0: inf · S with an exact S of 0
      // is NaN, with a computed S of ±2^-1000 it is ±inf.
      const bool sign_uncertain = std::fabs(s) <= (D + 1) * k.u * abs_sum;
      if (std::isnan(dx)) {
        if (!std::isnan(got) && !(range && sign_uncertain && std::isinf(got))) violation("dx should be NaN" + where(), c);
        continue;
      }
      if (std::isinf(dx)) {
        if (got == dx || (range && (std::isnan(got) || (std::isinf(got) && sign_uncertain)))) continue;
        violation("dx should be " + num(dx) + where(), c);
      }
      const ld gate = (gate0 + eta_part) / T + (scaled(c) ? 2 * k.u * std::fabs(dx) + k.eta / 2 : 0);
      if (within(tdx.v.dtype, got, dx, gate)) {
        if (std::isfinite(got) && gate > 0)
          (tdx.v.dtype == DType::f16 || tdx.v.dtype == DType::bf16 ? stats.worst_dx16 : stats.worst_dx) =
              std::max(tdx.v.dtype == DType::f16 || tdx.v.dtype == DType::bf16 ? stats.worst_dx16 : stats.worst_dx,
                       static_cast<double>(std::fabs(got - dx) / output_gate(tdx.v.dtype, dx, gate)));
        continue;
      }
      if (range && !std::isfinite(got)) continue;
      violation("dx outside the gate " + num(gate) + where(), c);
    }
  }
  stats.elements += numel_of(c.shape);
}

// The scores of the state: z = x / T (+ mask) in the path's compute type (§3: f32, a correctly rounded division,
// then the mask's addition; f64 tensors and the float64 reference in f64), exact as long doubles.
std::vector<ld> state_scores(const Case& c, std::int64_t row) {
  const std::int64_t n = c.shape[c.dim];
  const bool f32 = c.path != Path::cpu_reference && c.t[0].v.dtype != DType::f64;
  const auto idx0 = index_of(c.shape, c.dim, row, 0);
  const ld T = row_temperature(c, idx0);
  std::vector<ld> z(n);
  const Tensor& m = c.t[3];
  const std::int64_t ox = offset_full(c.t[0].v, idx0), sx = dim_step(c.t[0].v, c.dim);
  const std::int64_t om = m.buf >= 0 ? offset_full(m.v, idx0) : 0, sm = m.buf >= 0 ? dim_step(m.v, c.dim) : 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = load_orig(c, c.t[0], ox + i * sx);
    double mv = 0;
    bool removed = false;
    if (m.buf >= 0) {
      const std::int64_t off = om + i * sm;
      if (m.v.dtype == DType::b8) removed = c.bufs[m.buf].orig[off] == 0;
      else mv = load_orig(c, m, off);
    }
    if (f32) {
      float v = static_cast<float>(x);
      if (scaled(c)) v = v / static_cast<float>(T);
      if (m.buf >= 0 && m.v.dtype != DType::b8) v = v + static_cast<float>(mv);
      z[i] = removed ? -INFINITY : v;
    } else {
      double v = x;
      if (scaled(c)) v = v / static_cast<double>(T);
      if (m.buf >= 0 && m.v.dtype != DType::b8) v = v + mv;
      z[i] = removed ? -INFINITY : v;
    }
  }
  return z;
}

// softmax_state (§2, §6 "softmax_state"): m is the largest score bit for bit (its value rounded once to the output
// type, which for the f32 compute is the score itself), l = Σ exp(z − m) within state_sum_error (tests/conformance/
// numerics.hpp, the §6 bound, in units of the compute type's u), plus the oracle's sequential long-double sum
// (≤ n·2^-64 relative); the other regimes exactly (−inf, 0), (+inf, +inf), (NaN, NaN).
void check_state(const Case& c) {
  check_untouched(c, {1, 2});
  const Tensor &tm = c.t[1], &tl = c.t[2];
  const DType in = c.t[0].v.dtype;
  const Compute k = compute_of(in);
  const std::int64_t n = c.shape[c.dim];
  std::vector<std::int64_t> rshape = c.shape;
  rshape[c.dim] = 1;
  const std::int64_t rows = numel_of(rshape);
  const bool in16 = in == DType::f16 || in == DType::bf16;
  const ld rel = state_sum_error(n, SumModel::tree, in16) / kU * k.u + static_cast<ld>(n) * 0x1p-64L;
  for (std::int64_t row = 0; row < rows; ++row) {
    const auto idx0 = index_of(c.shape, c.dim, row, 0);
    const ld got_m = load_now(c, tm, offset_reduced(tm.v, idx0, c.dim));
    const ld got_l = load_now(c, tl, offset_reduced(tl.v, idx0, c.dim));
    const auto z = state_scores(c, row);
    const ExactRow e = exact_row(z.data(), n);
    auto where = [&] {  // built only for a violation
      return " (row " + std::to_string(row) + "): got m " + num(got_m) + ", l " + num(got_l) + "; exact m " +
             num(e.max) + ", l " + num(e.sum) + ", regime " + regime_name(e.regime);
    };
    switch (e.regime) {
      case Regime::empty:
        if (!(got_m == -INFINITY && got_l == 0)) violation("an empty row's state is not (-inf, 0)" + where(), c);
        break;
      case Regime::saturated:
        if (!(got_m == INFINITY && got_l == INFINITY)) violation("a saturated row's state is not (+inf, +inf)" + where(), c);
        break;
      case Regime::nan:
        if (!(std::isnan(got_m) && std::isnan(got_l))) violation("a NaN row's state is not (NaN, NaN)" + where(), c);
        break;
      case Regime::finite:
        if (got_m != round_to(tm.v.dtype, e.max)) violation("m is not the row max" + where(), c);
        if (!(std::fabs(got_l - e.sum) <= rel * e.sum)) violation("l outside the gate" + where(), c);
        stats.worst_l = std::max(stats.worst_l, static_cast<double>(std::fabs(got_l - e.sum) / (rel * e.sum)));
        break;
    }
  }
  stats.elements += rows;
}

// ---- building a case --------------------------------------------------------------------------------------------

enum class Defect {
  none, neg_stride, bad_dtype, dtype_mismatch, bad_out_dtype, shape_a, shape_b, dim_range, null_a, null_b, null_c,
  self_overlap, partial_alias, bad_temperature, bad_row_temperature, both_temperatures, row_temperature_shape,
  row_temperature_dtype, bad_policy, row_temperature_overlap, count
};
const char* defect_name(Defect d) {
  static const char* names[] = {"none", "neg_stride", "bad_dtype", "dtype_mismatch", "bad_out_dtype", "shape_a",
                                "shape_b", "dim_range", "null_a", "null_b", "null_c", "self_overlap", "partial_alias",
                                "bad_temperature", "bad_row_temperature", "both_temperatures",
                                "row_temperature_shape", "row_temperature_dtype", "bad_policy",
                                "row_temperature_overlap"};
  return names[static_cast<int>(d)];
}

// The reduced layout of a per-row view (`dim` dropped, or kept with size 1), random strides.
ViewLayout reduced_layout(Reader& r, DType t, const std::vector<std::int64_t>& shape, int dim, bool contiguous) {
  std::vector<std::int64_t> s;
  const bool keep = r.chance(3);
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != dim) s.push_back(shape[d]);
    else if (keep) s.push_back(1);
  std::vector<std::int64_t> st(s.size());
  if (contiguous) {
    std::int64_t step = 1;
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      st[d] = step;
      step *= std::max<std::int64_t>(s[d], 1);
    }
  } else {
    st = random_strides(r, s);
  }
  return {t, s, st, contiguous ? 0 : r.below(3)};
}
ViewLayout contiguous_layout(DType t, const std::vector<std::int64_t>& s) {
  std::vector<std::int64_t> st(s.size());
  std::int64_t step = 1;
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    st[d] = step;
    step *= std::max<std::int64_t>(s[d], 1);
  }
  return {t, s, st, 0};
}
bool writable_layout(const ViewLayout& v) {
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.strides[d] == 0 && v.shape[d] > 1) return false;
  return true;
}
bool has_unit_stride_dim(const ViewLayout& v) {
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.strides[d] == 1 && v.shape[d] > 1) return true;
  return false;
}

void call(Case& c) {
  const TensorView a = view_of(c, c.t[0]), b = view_of(c, c.t[1]), d = view_of(c, c.t[2]);
  SoftmaxOptions o = c.options;
  if (c.t[3].buf >= 0) o.mask = view_of(c, c.t[3]);
  if (c.t[4].buf >= 0) o.temperature_per_row = view_of(c, c.t[4]);
  switch (c.op) {
    case BwdOp::softmax_backward:
      if (c.path == Path::dispatch) smk::softmax_backward(d, a, b, o);
      else if (c.path == Path::cpu_float) cpu::softmax_backward(d, a, b, o);
      else cpu::reference::softmax_backward(d, a, b, o);
      return;
    case BwdOp::log_softmax_backward:
      if (c.path == Path::dispatch) smk::log_softmax_backward(d, a, b, o);
      else if (c.path == Path::cpu_float) cpu::log_softmax_backward(d, a, b, o);
      else cpu::reference::log_softmax_backward(d, a, b, o);
      return;
    case BwdOp::state:
      if (c.path == Path::dispatch) smk::softmax_state(b, d, a, o);
      else if (c.path == Path::cpu_float) cpu::softmax_state(b, d, a, o);
      else cpu::reference::softmax_state(b, d, a, o);
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size, PastEnd::hashed);
  Case c;
  c.op = static_cast<BwdOp>(r.below(3));
  c.path = static_cast<Path>(r.below(3));
  const bool bwd = c.op != BwdOp::state;
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  const DType dt = dtypes[r.below(4)];
  const bool sixteen = dt == DType::f16 || dt == DType::bf16;
  const int rank = 1 + static_cast<int>(r.below(4));
  // At most 4096 elements and 4096 rows: an empty dimension counts as 1 in the cap (the lesson of the 2026-11-30
  // CI timeout of fuzz_softmax, whose cap let 0 x 253 x 253 x 253 through).
  c.shape.resize(rank);
  std::int64_t cap = 1;
  for (int d = 0; d < rank; ++d) {
    c.shape[d] = r.chance(10) ? 0 : 1 + r.below(r.chance(4) ? 300 : 9);
    if (cap * std::max<std::int64_t>(c.shape[d], 1) > 4096) c.shape[d] = 1;
    cap *= std::max<std::int64_t>(c.shape[d], 1);
  }
  c.dim = static_cast<int>(r.below(rank));
  c.options.dim = r.chance(2) ? c.dim : c.dim - rank;
  const std::int64_t numel = numel_of(c.shape), n = c.shape[c.dim];
  std::vector<std::int64_t> rshape = c.shape;
  rshape[c.dim] = 1;
  const std::int64_t rows = numel_of(rshape);
  Defect defect = r.chance(4) ? static_cast<Defect>(1 + r.below(static_cast<int>(Defect::count) - 1)) : Defect::none;
  if (defect == Defect::bad_policy && bwd) {  // empty_rows does not apply to the backward passes: ignored, valid
    c.options.empty_rows = static_cast<EmptyRowPolicy>(2 + r.below(200));
    defect = Defect::none;
  }

  // Layouts. Backward: 0 y, 1 dy, 2 dx. State: 0 in, 1 out_max, 2 out_sum.
  Tensor& t0 = c.t[0];
  t0.v = {dt, c.shape, random_strides(r, c.shape), r.below(4)};
  if (r.chance(6)) t0.v.strides[r.below(rank)] = 0;  // a broadcast input (read only, any dimension)
  bool dy_is_y = false, dy_shifted = false, in_place_dy = false, in_place_y = false;
  if (bwd) {
    dy_is_y = r.chance(10);
    dy_shifted = !dy_is_y && r.chance(12);  // dy over y's bytes one element further: inputs may overlap (read only)
    c.t[1].v = dy_is_y ? t0.v : ViewLayout{dt, c.shape, random_strides(r, c.shape), r.below(4)};
    if (dy_shifted) {
      c.t[1].v = t0.v;
      c.t[1].v.offset += 1;
    }
    if (!dy_is_y && !dy_shifted && r.chance(6)) c.t[1].v.strides[r.below(rank)] = 0;
    const DType dx_t = sixteen && r.chance(2) ? DType::f32 : dt;
    c.t[2].v = {dx_t, c.shape, random_strides(r, c.shape), r.below(4)};
    const bool layout_defect = defect != Defect::none && defect != Defect::dim_range &&
                               defect != Defect::bad_temperature && defect != Defect::bad_row_temperature &&
                               defect != Defect::both_temperatures && defect != Defect::row_temperature_shape &&
                               defect != Defect::row_temperature_dtype;
    if (dx_t == dt && !layout_defect && !dy_shifted) {
      const std::uint32_t k = r.below(8);
      if (k < 2 && writable_layout(c.t[1].v)) in_place_dy = true;
      else if (k == 2 && writable_layout(t0.v)) in_place_y = true;
    }
    if (in_place_dy) c.t[2].v = c.t[1].v;
    if (in_place_y) c.t[2].v = t0.v;
  } else {
    const DType st = dt == DType::f64 ? DType::f64 : DType::f32;
    c.t[1].v = reduced_layout(r, st, c.shape, c.dim, false);
    c.t[2].v = reduced_layout(r, st, c.shape, c.dim, false);
  }
  // Per-row temperatures (f32, contiguous, reduced shape) or a scalar one.
  bool per_row = false;
  if (r.chance(4)) {
    per_row = true;
    c.t[4].v = reduced_layout(r, DType::f32, c.shape, c.dim, true);
  } else if (r.chance(3)) {
    const float temps[] = {0.5f, 3.0f, 1e-3f, 1e3f, 1e-30f, 1e30f, 0.1f};
    c.options.temperature = temps[r.below(7)];
  }
  // A mask: applied by the state, ignored by the backward passes (softmax.hpp).
  bool has_mask = false;
  if (r.chance(5) && !(dt == DType::f64 && r.chance(2))) {
    has_mask = true;
    std::vector<std::int64_t> ms(rank);
    for (int d = 0; d < rank; ++d) ms[d] = r.chance(2) ? c.shape[d] : 1;
    const DType mt = r.chance(3) ? DType::b8 : (dt != DType::f32 && r.chance(2) ? dt : DType::f32);
    c.t[3].v = contiguous_layout(mt, ms);
  }

  // Inject the defect where it applies; `arg` is the argument the message must name.
  const char* arg = nullptr;
  auto bump_shape = [&](ViewLayout& v) {  // one dimension one or two larger: never a valid shape
    std::vector<std::int64_t> s = c.shape;
    s[r.below(rank)] += 1 + r.below(2);
    v = contiguous_layout(v.dtype, s);
  };
  auto bad_reduced = [&](ViewLayout& v) {  // in's shape with `dim` of size 2: never a reduced shape
    std::vector<std::int64_t> s = c.shape;
    s[c.dim] = 2;
    v = contiguous_layout(v.dtype, s);
  };
  const char* names[3] = {bwd ? "'y'" : "'in'", bwd ? "'dy'" : "'out_max'", bwd ? "'dx'" : "'out_sum'"};
  switch (defect) {
    case Defect::neg_stride: {
      const int k = static_cast<int>(r.below(3));
      if (c.t[k].v.shape.empty() || (bwd && (dy_is_y || dy_shifted) && k < 2)) break;
      c.t[k].v.strides[r.below(static_cast<std::uint32_t>(c.t[k].v.shape.size()))] = -1 - static_cast<std::int64_t>(r.below(3));
      arg = names[k];
      break;
    }
    case Defect::bad_dtype:
      t0.v.dtype = r.chance(2) ? DType::i32 : DType::b8;
      if (dy_is_y || dy_shifted) c.t[1].v.dtype = t0.v.dtype;
      arg = names[0];
      break;
    case Defect::dtype_mismatch:
      if (bwd) {  // dy's dtype must be y's
        if (dy_is_y || dy_shifted) break;
        c.t[1].v.dtype = dt == DType::f32 ? (r.chance(2) ? DType::f16 : DType::f64) : DType::f32;
        arg = "'dy'";
      } else {  // out_sum's must be out_max's
        c.t[2].v.dtype = c.t[1].v.dtype == DType::f32 ? DType::f64 : DType::f32;
        arg = "'out_sum'";
      }
      break;
    case Defect::bad_out_dtype:
      if (bwd) {
        const DType bad[] = {DType::f64, DType::f16, DType::bf16, DType::i32};
        const DType t = bad[r.below(4)];
        if (t == dt || (sixteen && t == DType::f32)) break;
        c.t[2].v.dtype = t;
        arg = "'dx'";
      } else {
        const DType t = c.t[1].v.dtype == DType::f32 ? (r.chance(2) ? DType::f16 : DType::f64) : DType::f32;
        c.t[1].v.dtype = t;
        c.t[2].v.dtype = t;  // out_sum follows, so that out_max is the argument at fault
        arg = "'out_max'";
      }
      break;
    case Defect::shape_a:
      if (bwd) {
        if (dy_is_y || dy_shifted) break;
        bump_shape(c.t[1].v);
        arg = "'dy'";
      } else {
        bad_reduced(c.t[1].v);
        arg = "'out_max'";
      }
      break;
    case Defect::shape_b:
      if (bwd) bump_shape(c.t[2].v);
      else bad_reduced(c.t[2].v);
      arg = names[2];
      break;
    case Defect::dim_range: c.options.dim = r.chance(2) ? rank : -rank - 1; arg = "'options.dim'"; break;
    case Defect::null_a:
      if (numel == 0) break;
      t0.null_data = true;
      arg = names[0];
      break;
    case Defect::null_b:
      if ((bwd ? numel : rows) == 0) break;
      c.t[1].null_data = true;
      arg = names[1];
      break;
    case Defect::null_c:
      if ((bwd ? numel : rows) == 0) break;
      c.t[2].null_data = true;
      arg = names[2];
      break;
    case Defect::self_overlap: {
      const int k = bwd ? 2 : 1 + static_cast<int>(r.below(2));
      if (numel_of(c.t[k].v.shape) == 0) break;  // an empty output writes nothing, so it cannot overlap itself
      for (std::size_t d = 0; d < c.t[k].v.shape.size(); ++d)
        if (c.t[k].v.shape[d] > 1) {
          c.t[k].v.strides[d] = 0;
          arg = names[k];
          break;
        }
      break;
    }
    case Defect::partial_alias: break;  // placed with the buffers below
    case Defect::bad_temperature: {
      const float bad[] = {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf(""), -0.0f, -1e-30f};
      c.options.temperature = bad[r.below(6)];
      arg = "'options.temperature'";
      break;
    }
    case Defect::bad_row_temperature:
      if (rows == 0) break;
      if (!per_row) {
        per_row = true;
        c.t[4].v = reduced_layout(r, DType::f32, c.shape, c.dim, true);
        c.options.temperature = 1.0f;
      }
      arg = "'options.temperature_per_row'";
      break;
    case Defect::both_temperatures:
      if (!per_row) {
        per_row = true;
        c.t[4].v = reduced_layout(r, DType::f32, c.shape, c.dim, true);
      }
      c.options.temperature = 2.0f;
      arg = "'options.temperature'";
      break;
    case Defect::row_temperature_shape:
      per_row = true;
      c.options.temperature = 1.0f;
      c.t[4].v.dtype = DType::f32;
      bad_reduced(c.t[4].v);
      arg = "'options.temperature_per_row'";
      break;
    case Defect::row_temperature_dtype:
      if (!per_row) c.t[4].v = reduced_layout(r, DType::f32, c.shape, c.dim, true);
      per_row = true;
      c.options.temperature = 1.0f;
      c.t[4].v.dtype = r.chance(2) ? DType::f16 : DType::f64;
      arg = "'options.temperature_per_row'";
      break;
    case Defect::bad_policy: c.options.empty_rows = static_cast<EmptyRowPolicy>(2 + r.below(200)); arg = "'options.empty_rows'"; break;
    default: break;
  }
  if (per_row && c.options.temperature != 1.0f && defect != Defect::both_temperatures &&
      defect != Defect::bad_temperature)
    c.options.temperature = 1.0f;  // the scalar stays 1 beside per-row values (both at once is a defect)

  // Buffers: inputs padded with NaN (0xFF), outputs poisoned. Aliases share a buffer.
  const unsigned char poison = r.chance(2) ? 0xFF : 0x55;
  auto bytes_for = [](const ViewLayout& v) {
    return (std::max<std::int64_t>(extent(v), 0) + 4) * static_cast<std::int64_t>(dtype_size(v.dtype));
  };
  t0.buf = new_buffer(c, bytes_for(t0.v), 0xFF);
  if (bwd) {
    if (dy_is_y || dy_shifted) c.t[1].buf = t0.buf;  // (y's buffer has 4 elements of padding past its extent)
    else c.t[1].buf = new_buffer(c, bytes_for(c.t[1].v), 0xFF);
    if (in_place_dy) c.t[2].buf = c.t[1].buf;
    else if (in_place_y) c.t[2].buf = t0.buf;
    else c.t[2].buf = new_buffer(c, bytes_for(c.t[2].v), poison);
  } else {
    c.t[1].buf = new_buffer(c, bytes_for(c.t[1].v), poison);
    c.t[2].buf = new_buffer(c, bytes_for(c.t[2].v), poison);
  }
  if (defect == Defect::partial_alias) {
    if (bwd) {
      // dx over dy's (or y's) bytes, one element further: it overlaps them (a unit stride over a size > 1 dimension
      // makes element 1 of the input element 0 of dx) without being them.
      const int k = r.chance(2) ? 1 : 0;
      if (numel > 0 && has_unit_stride_dim(c.t[k].v) && !(dy_is_y && k == 1)) {
        c.t[2].v = c.t[k].v;
        c.t[2].v.dtype = dt;
        c.t[2].v.offset += 1;
        c.t[2].buf = c.t[k].buf;
        auto& bytes = c.bufs[c.t[k].buf].bytes;
        bytes.resize(std::max(bytes.size(), static_cast<std::size_t>(bytes_for(c.t[2].v))), 0xFF);
        arg = "'dx'";
      } else if (sixteen && writable_layout(c.t[1].v) && !dy_is_y && !dy_shifted && numel > 0) {
        // f32 dx over 16-bit dy's first element (offsets count elements of each view's own dtype: f32 element
        // ⌊o/2⌋ holds the bytes of 16-bit element o)
        c.t[2].v = c.t[1].v;
        c.t[2].v.dtype = DType::f32;
        c.t[2].v.offset = c.t[1].v.offset / 2;
        c.t[2].buf = c.t[1].buf;
        auto& bytes = c.bufs[c.t[1].buf].bytes;
        bytes.resize(std::max(bytes.size(), static_cast<std::size_t>(bytes_for(c.t[2].v))), 0xFF);
        arg = "'dx'";
      }
    } else if (rows > 0) {
      if (r.chance(2)) {  // out_sum is out_max
        c.t[2].v = c.t[1].v;
        c.t[2].buf = c.t[1].buf;
        arg = "'out_sum'";
      } else if (t0.v.dtype == c.t[1].v.dtype && numel > 0) {  // out_max over in's first elements (same dtype: exact or partial)
        c.t[1].v.offset = t0.v.offset;
        c.t[1].buf = t0.buf;
        c.bufs[t0.buf].bytes.resize(std::max(c.bufs[t0.buf].bytes.size(),
                                             static_cast<std::size_t>(bytes_for(c.t[1].v))), 0xFF);
        arg = "'out_max'";
      }
    }
  }
  if (defect == Defect::row_temperature_overlap && rows > 0 && numel_of(c.t[bwd ? 2 : 1].v.shape) > 0) {
    // the per-row temperatures inside dx's (out_max's) bytes: f32 element ⌊B/4⌋ holds the output's first byte B
    Tensor& o = c.t[bwd ? 2 : 1];
    if (!per_row) c.t[4].v = reduced_layout(r, DType::f32, c.shape, c.dim, true);
    per_row = true;
    c.options.temperature = 1.0f;
    c.t[4].buf = o.buf;
    c.t[4].v.offset = o.v.offset * static_cast<std::int64_t>(dtype_size(o.v.dtype)) / 4;
    auto& bytes = c.bufs[o.buf].bytes;
    bytes.resize(std::max(bytes.size(), static_cast<std::size_t>(bytes_for(c.t[4].v))), poison);
    arg = bwd ? "'dx'" : "'out_max'";
  }
  if (!arg) defect = Defect::none;
  c.defect = defect_name(defect);

  // Values, in logical row-major order, stored through each input's layout.
  const bool layout_ok = defect != Defect::neg_stride;
  if (layout_ok) {
    // y (or the state's scores): a real forward output of random scores, or arbitrary values.
    const bool real = bwd && !r.chance(3);
    const bool one_hot = real && r.chance(5);
    const bool log_y = c.op == BwdOp::log_softmax_backward;
    std::vector<double> xs(static_cast<std::size_t>(numel));
    for (std::int64_t row = 0; row < rows && n > 0; ++row) {
      const std::int64_t hot = r.below(static_cast<std::uint32_t>(std::min<std::int64_t>(n, 65535)));
      std::vector<ld> sc(n);
      ld m = -INFINITY;
      for (std::int64_t i = 0; i < n; ++i) {
        sc[i] = !real ? any_value(r) : (one_hot ? (i == hot ? 0.0 : -kInf) : score(r));
        if (real) m = std::max(m, sc[i]);
      }
      ld l = 0;
      if (real && m > -INFINITY)
        for (std::int64_t i = 0; i < n; ++i) l += std::exp(sc[i] - m);
      const bool zeros_policy = r.chance(2);
      const std::vector<std::int64_t> idx0 = index_of(c.shape, c.dim, row, 0);
      std::int64_t lin0 = 0, inner = 1;
      for (int d = 0; d < rank; ++d) lin0 = lin0 * c.shape[d] + idx0[d];
      for (int d = c.dim + 1; d < rank; ++d) inner *= c.shape[d];
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t lin = lin0 + i * inner;
        double v = static_cast<double>(sc[i]);
        if (real) {
          if (m == -INFINITY) v = zeros_policy ? 0.0 : kNaN;  // an empty row, as the forward writes it
          else v = static_cast<double>(log_y ? (sc[i] - m) - std::log(l) : std::exp(sc[i] - m) / l);
          if (r.chance(64)) v = any_value(r);  // a stray value in a real output
        }
        xs[static_cast<std::size_t>(lin)] = v;
      }
    }
    auto store_all = [&](const Tensor& x, auto&& value_at) {
      if (x.v.dtype == DType::i32 || x.v.dtype == DType::b8) return;
      std::int64_t idx[4] = {0, 0, 0, 0};
      for (std::int64_t lin = 0; lin < numel; ++lin) {
        std::int64_t off = x.v.offset;
        for (int d = 0; d < rank; ++d) off += idx[d] * x.v.strides[d];
        store(x.v.dtype, at(c, x, off), value_at(lin));
        for (int d = rank - 1; d >= 0 && ++idx[d] == c.shape[d]; --d) idx[d] = 0;  // the next row-major index
      }
    };
    store_all(t0, [&](std::int64_t lin) { return xs[static_cast<std::size_t>(lin)]; });
    if (bwd && !dy_is_y && !dy_shifted) {  // (a shifted dy reads y's values one element on)
      const bool plain = r.chance(2);  // ordinary gradients, or anything (±inf, NaN, huge, tiny)
      store_all(c.t[1], [&](std::int64_t) {
        return plain && !r.chance(50) ? (static_cast<double>(r.below(2001)) - 1000) / 129 : any_value(r);
      });
    }
  }
  if (per_row && c.t[4].buf < 0) {
    const std::int64_t cnt = std::max<std::int64_t>(extent(c.t[4].v), 1);
    c.t[4].buf = new_buffer(c, cnt * static_cast<std::int64_t>(dtype_size(c.t[4].v.dtype)), 0);
    const float temps[] = {1.0f, 0.5f, 2.0f, 1e-3f, 1e3f, 1e-30f, 1e30f, 0.7f};
    for (std::int64_t i = 0; i < cnt; ++i) store(c.t[4].v.dtype, at(c, c.t[4], i), temps[r.below(8)]);
    if (defect == Defect::bad_row_temperature) {
      const float bad[] = {0.0f, -2.0f, std::numeric_limits<float>::infinity(), std::nanf(""), -0.0f};
      const std::int64_t at_row = r.below(static_cast<std::uint32_t>(std::min<std::int64_t>(rows, 65535)));
      store(DType::f32, at(c, c.t[4], at_row), bad[r.below(5)]);
    }
  }
  if (has_mask) {
    const std::int64_t cnt = std::max<std::int64_t>(extent(c.t[3].v), 1);
    c.t[3].buf = new_buffer(c, cnt * static_cast<std::int64_t>(dtype_size(c.t[3].v.dtype)), 0);
    for (std::int64_t i = 0; i < cnt; ++i) {
      if (c.t[3].v.dtype == DType::b8) c.bufs[c.t[3].buf].bytes[i] = r.chance(4) ? 0 : 1;
      else store(c.t[3].v.dtype, at(c, c.t[3], i), r.chance(3) ? -kInf : any_value(r));
    }
  }
  // Empty tensors may come with null data (docs/semantics.md §1, zero rows): sometimes all of them, on a valid call.
  if (defect == Defect::none && r.chance(3)) {
    if (numel == 0) t0.null_data = true;
    if ((bwd ? numel : rows) == 0) {
      c.t[1].null_data = true;
      c.t[2].null_data = true;
    }
  }
  for (auto& b : c.bufs) b.orig = b.bytes;

  try {
    call(c);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (!arg) violation("a valid call threw: " + msg, c);
    if (e.code() != ErrorCode::invalid_argument) violation("wrong error code for an invalid call: " + msg, c);
    if (msg.find(arg) == std::string::npos) violation(std::string("the message does not name ") + arg + ": " + msg, c);
    if (msg.rfind(full_name(c.path, c.op) + ":", 0) != 0) violation("the message does not start with the op: " + msg, c);
    for (const auto& b : c.bufs)
      if (b.bytes != b.orig) violation("a rejected call wrote into a buffer: " + msg, c);
    ++stats.rejected;
    return 0;
  } catch (const std::exception& e) {
    violation(std::string("a non-smk exception escaped: ") + e.what(), c);
  }
  if (arg) violation(std::string("an invalid call was accepted (expected an error naming ") + arg + ")", c);
  if (bwd) check_backward(c);
  else check_state(c);
  ++stats.valid;
  return 0;
}
