// libFuzzer target: drives the CPU cross-entropy (include/softmaxkit/cross_entropy.hpp: cross_entropy,
// cross_entropy_backward, cross_entropy_forward_backward; include/softmaxkit/cpu/cross_entropy.hpp: the float path and
// the float64 reference) on host memory with random bounded calls — N × C logits (C sometimes 1, rarely 0) in f32,
// f16, bf16 or f64 with random row and column strides and offsets, i32 / i64 targets with ignored rows (ignore_index
// −100, another negative value, a valid class, or one above C), every reduction, mean_of_nothing_is_zero, label
// smoothing, z-loss, soft-capping, class weights, the optional lse / z_loss outputs, grad_loss of the loss's shape
// or (forward_backward) null, the gradient in place over the logits, and special logits (±inf, NaN, huge, tiny, one
// dominant logit) — and holds every call to the header's contract:
//   - a valid call returns, and its loss, lse, z_loss and gradient match a long-double oracle written from the
//     header's formulas (below, `Oracle`) within gates derived from the algorithm (below, "Gates"); non-finite
//     results are exactly the formula's (NaN, +inf, −inf); nothing is written outside the output views (each output
//     buffer is poisoned, with padding); the inputs are untouched (the logits too, unless the gradient is in place);
//   - a target outside [0, C) that is not ignore_index throws smk::Error(invalid_argument) naming 'targets' and the
//     row (targets[i]), and writes nothing (the CPU checks every target before it writes);
//   - every other injected defect (shapes, dtypes, negative or self-overlapping strides, null data, option values,
//     negative / NaN / inf class weights, aliasing outputs, a tensor on another device) throws
//     smk::Error(invalid_argument) whose message names the op and the argument at fault, and writes nothing;
//   - valid calls on empty tensors (N = 0 or C = 0) may pass null data, which UBSan holds to no pointer arithmetic.
// A violation prints the case and aborts (libFuzzer keeps the input: add it to tests/fuzz/corpus_cross_entropy/,
// which fuzz.cross_entropy_replay replays in every build).
//
// Where the header is silent, this target holds the code to PyTorch's behaviour (tell the lead if one changes):
//   - ε = 0 has no smoothing term and s = 0 no z-loss term (PyTorch's label_smoothing = 0 adds nothing), so a row
//     whose smoothing sum is inf or NaN still has the plain nll when ε = 0;
//   - a row whose largest logit is +inf (no NaN) has LSE = +inf, so its nll is +inf (NaN when its target is the +inf
//     logit, or with ε > 0, where some LSE − z_c is inf − inf); a row of only −inf has LSE = −inf and nll NaN; the
//     gradient of every such row is NaN (p = inf/inf or 0/0). With soft-capping ±inf logits are ±c (finite).
//   - mean with a zero denominator (every row ignored, or every counted row of weight 0) divides by 0 (0/0 = NaN,
//     x/0 = inf, as PyTorch), or gives 0 for that part under mean_of_nothing_is_zero.
#include <algorithm>
#include <array>
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
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cross_entropy.hpp"

using namespace smk;
using smk::conformance::load;
using smk::conformance::max_finite;
using smk::conformance::store;
using smk::conformance::ulp_of;
using LD = long double;

namespace {

using smk::conformance::dims;
using smk::fuzz::Reader;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// A logit: ordinary values, and (in a "wild" call) a palette of special ones or any float bit pattern.
double logit_value(Reader& r, bool wild) {
  static const double palette[] = {0,     -0.0,   1,     -1,     kInf,  -kInf, kNaN, 1e10, -1e10, 1e-10, 88.72,
                                   -103.9, 65504, -65504, 1000,  -999,  1e7,   133120, 1e38, -1e38, 1e-40, 3.5,
                                   -40,    0.25,  -87,    30,    -30};
  if (wild) {
    switch (r.below(4)) {
      case 0: return palette[r.below(sizeof palette / sizeof palette[0])];
      case 1: return static_cast<double>(r.f32());
      default: break;
    }
  }
  return (static_cast<double>(r.below(2001)) - 1000) / 37;
}

struct Lay {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset = 0;
};

std::int64_t extent(const Lay& v) {  // one past the last element addressed, in elements
  std::int64_t last = v.offset;
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] == 0) return v.offset;
    last += (v.shape[d] - 1) * std::max<std::int64_t>(v.strides[d], 0);
  }
  return last + 1;
}


const char* dtype_str(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::b8: return "b8";
    default: return "?";
  }
}

// A buffer holding one view: `bytes` is what the call sees, `orig` the bytes before the call.
struct Buf {
  Lay lay;
  std::vector<unsigned char> bytes, orig;
  bool present = false, null_data = false;
  std::size_t esize() const { return dtype_size(lay.dtype); }
  void alloc(unsigned char fill) {
    bytes.assign(static_cast<std::size_t>(extent(lay) + 4) * esize(), fill);
  }
  unsigned char* at(std::int64_t off) { return bytes.data() + off * static_cast<std::int64_t>(esize()); }
  TensorView view() {
    TensorView t;
    if (!present) return t;
    t.data = null_data || bytes.empty() ? nullptr : at(lay.offset);  // (empty: a view the call replaces)
    t.dtype = lay.dtype;
    t.rank = static_cast<int>(lay.shape.size());
    for (int d = 0; d < t.rank; ++d) {
      t.shape[d] = lay.shape[d];
      t.strides[d] = lay.strides[d];
    }
    return t;
  }
};

enum class Api { fwd, bwd, fwd_bwd, cpu_fwd, cpu_bwd, ref_fwd, ref_bwd, count };
const char* api_name(Api a) {
  switch (a) {
    case Api::fwd: return "cross_entropy";
    case Api::bwd: return "cross_entropy_backward";
    case Api::fwd_bwd: return "cross_entropy_forward_backward";
    case Api::cpu_fwd: return "cpu::cross_entropy";
    case Api::cpu_bwd: return "cpu::cross_entropy_backward";
    case Api::ref_fwd: return "cpu::reference::cross_entropy";
    default: return "cpu::reference::cross_entropy_backward";
  }
}
bool has_forward(Api a) { return a == Api::fwd || a == Api::fwd_bwd || a == Api::cpu_fwd || a == Api::ref_fwd; }
bool has_backward(Api a) { return a == Api::bwd || a == Api::fwd_bwd || a == Api::cpu_bwd || a == Api::ref_bwd; }

enum class Defect { none, smoothing, z_loss_opt, softcap, weight_value, weight_view, logits_view, targets_view,
                    loss_view, lse_view, grad_view, grad_loss_view, null_data, alias, reduction, neg_stride,
                    target_range, grad_self_overlap, z_out_view, device, count };

struct Case {
  Api api = Api::fwd;
  std::int64_t n = 0, c = 0;
  CrossEntropyOptions o;
  bool in_place = false, wild = false;
  Defect defect = Defect::none;
  const char* arg = nullptr;
  Buf logits, targets, weights, loss, lse, zout, grad, grad_loss;
};

void describe(const std::string& what, const Case& k);

// Aborts, so libFuzzer keeps the input.
[[noreturn]] void violation(const std::string& what, const Case& k) {
  describe("CONTRACT VIOLATION: " + what, k);
  std::abort();
}

// Prints the case (SMK_FUZZ_VERBOSE: the stored inputs too).
void describe(const std::string& what, const Case& k) {
  auto lay = [](const char* name, const Buf& b) {
    if (!b.present) return;
    std::fprintf(stderr, "  %s %s shape %s strides %s offset %lld%s\n", name, dtype_str(b.lay.dtype),
                 dims(b.lay.shape).c_str(), dims(b.lay.strides).c_str(), static_cast<long long>(b.lay.offset),
                 b.null_data ? " (null data)" : "");
  };
  std::fprintf(stderr,
               "%s\n  op %s, N %lld, C %lld, reduction %d, ignore_index %lld, "
               "mean_of_nothing_is_zero %d, label_smoothing %g, z_loss %g, softcap %g%s\n",
               what.c_str(), api_name(k.api), static_cast<long long>(k.n), static_cast<long long>(k.c),
               static_cast<int>(k.o.reduction), static_cast<long long>(k.o.ignore_index), k.o.mean_of_nothing_is_zero,
               static_cast<double>(k.o.label_smoothing), static_cast<double>(k.o.z_loss),
               static_cast<double>(k.o.softcap), k.in_place ? " (gradient in place)" : "");
  lay("logits", k.logits);
  lay("targets", k.targets);
  lay("class_weights", k.weights);
  lay("loss", k.loss);
  lay("lse", k.lse);
  lay("z_loss", k.zout);
  lay("grad_logits", k.grad);
  lay("grad_loss", k.grad_loss);
  if (std::getenv("SMK_FUZZ_VERBOSE")) {  // the stored inputs (the first rows and classes)
    auto at = [](const Buf& b, std::int64_t off) {
      return load(b.lay.dtype, b.orig.data() + off * static_cast<std::int64_t>(b.esize()));
    };
    for (std::int64_t i = 0; i < std::min<std::int64_t>(k.n, 4) && k.logits.orig.size() && k.logits.lay.shape.size() == 2; ++i) {
      std::fprintf(stderr, "  row %lld:", static_cast<long long>(i));
      for (std::int64_t j = 0; j < std::min<std::int64_t>(k.c, 12); ++j)
        std::fprintf(stderr, " %.9g", at(k.logits, k.logits.lay.offset + i * k.logits.lay.strides[0] + j * k.logits.lay.strides[1]));
      std::fprintf(stderr, "\n");
    }
    if (k.targets.lay.dtype == DType::i32 || k.targets.lay.dtype == DType::i64) {
      std::fprintf(stderr, "  targets:");
      for (std::int64_t i = 0; i < std::min<std::int64_t>(k.n, 12); ++i) {
        const unsigned char* p = k.targets.orig.data() + (k.targets.lay.offset + i * k.targets.lay.strides[0]) * k.targets.esize();
        std::int64_t t = 0;
        if (k.targets.lay.dtype == DType::i32) {
          std::int32_t t32;
          std::memcpy(&t32, p, 4);
          t = t32;
        } else {
          std::memcpy(&t, p, 8);
        }
        std::fprintf(stderr, " %lld", static_cast<long long>(t));
      }
      std::fprintf(stderr, "\n");
    }
    if (k.weights.present && k.weights.lay.shape[0] == k.c) {
      std::fprintf(stderr, "  weights:");
      for (std::int64_t j = 0; j < std::min<std::int64_t>(k.c, 12); ++j)
        std::fprintf(stderr, " %g", at(k.weights, k.weights.lay.offset + j * k.weights.lay.strides[0]));
      std::fprintf(stderr, "\n");
    }
    if (k.grad_loss.present && k.grad_loss.lay.shape.empty()) std::fprintf(stderr, "  grad_loss: %g\n", at(k.grad_loss, k.grad_loss.lay.offset));
  }
}

struct Stats {
  long valid = 0, rejected = 0, values = 0, skipped = 0;
  long by_defect[32] = {}, by_api[8] = {};
  double worst[4] = {};  // largest |error| / gate seen: loss, lse, z_loss, gradient
  ~Stats() {
    if (std::getenv("SMK_FUZZ_STATS")) {
      std::fprintf(stderr, "fuzz_cross_entropy: valid calls by op (fwd bwd fwd_bwd cpu_fwd cpu_bwd ref_fwd ref_bwd):");
      for (int a = 0; a < 7; ++a) std::fprintf(stderr, " %ld", by_api[a]);
      std::fprintf(stderr, "\nfuzz_cross_entropy: largest |error| / gate: loss %.3g, lse %.3g, z_loss %.3g, gradient %.3g",
                   worst[0], worst[1], worst[2], worst[3]);
      std::fprintf(stderr, "\nfuzz_cross_entropy: rejected calls by defect (1..19):");
      for (int d = 1; d < 20; ++d) std::fprintf(stderr, " %ld", by_defect[d]);
      std::fprintf(stderr, "\n");
    }
    if (std::getenv("SMK_FUZZ_STATS"))
      std::fprintf(stderr,
                   "fuzz_cross_entropy: %ld valid calls (%ld outputs checked, %ld beyond the compute type's range), "
                   "%ld invalid calls rejected\n",
                   valid, values, skipped, rejected);
  }
} stats;

// ---- Oracle: the header's formulas in long double, from the stored values -------------------------------------
//
// Gates. The CPU computes each row as the float path of §6 of docs/semantics.md (u: the compute type's unit
// roundoff, 2^-24 for f32/f16/bf16 logits on the float path, 2^-53 for f64 logits and for the reference; L = ⌈log2 C⌉;
// D = L + 4 the pairwise sum's depth; α = 5u exp_diff's error; the bounds are first order, with a 1% margin and
// the underflow terms added at the end):
//   z_j       soft-capping z = c·tanh(x / c): the division rounds (u·|x/c|, which tanh's slope sech² ≤ tanh/y keeps
//             below u·|tanh|), tanh within 2 ulp (glibc lists tanhf and tanh at ≤ 2: 4u), the product u: δz ≤ 6u·|z|,
//             so every z moves by at most Δ = 6u·max|z| (0 without soft-capping: 16-bit values are exact in f32).
//   log l     log1p(d̂), d̂ the excess (§2): d's relative error (α + D + 1)·u weighted by d/l ≤ log l, log1p's 1 ulp
//             (2u·log l): |err| ≤ (L + 12)·u·log l, relative to log l; moved by Δ through the z.
//   LSE − z_c (m − z_c) + log l: u·|m − z_c| + err(log l) + u·(LSE − z_c) + 2Δ.
//   LSE       m + log l: u·|LSE| + err(log l) + Δ.
//   ce        (1 − ε)·w_t·nll: two products and 1 − ε, 3u relative, plus (1 − ε)·w_t·err(nll);
//             (ε / C)·Σ_c w_c·(LSE − z_c): the terms are ≥ 0, so the tree sum costs D·u of the sum, each product u,
//             ε / C and the product 2u; the two parts' sum u·ce.
//   zl        s·LSE²: two products 2u relative, 2·s·|LSE|·err(LSE) (+ s·err(LSE)² to second order).
//   loss      ce + zl: u·loss. Reductions add the rows in double (N·2^-53 of Σ|·|) and divide by a double sum of
//             the weights or the count (N·2^-53 + 2^-53 relative), and round once to the compute type (u).
//   gradient  p_j = e_j / l: §6's softmax gate (18 + L)·u·max(p_j, floor) (floor 1e-30, 1e-300 in f64) and 2Δ·p_j;
//             the target's p_t − 1 = −(Σ_{j≠t} e_j) / l: the sum (α + D)u, 1/(1 + d) (α + D + 2)u, the product u:
//             (2L + 21)·u·(1 − p_t) + 2Δ·(1 − p_t), relative to 1 − p_t (the header's "keeps its digits as p → 1");
//             W = Σ w summed in sequence: (C − 1)·u·W; W·p_j − w_j: u·|W p_j − w_j| + W·err(p_j) + p_j·err(W)
//             + u·W·p_j; hard·(p − [j = t]) with hard = (1 − ε)·w_t: 3u and hard·err; soft·(W p − w) with soft = ε/C:
//             2u and soft·err; their sum u; the upstream scale (per row exact, sum exact, mean g / den: 3u) and its
//             product u; the z-loss part g_z·2s·LSE·p_j: 4u and |g_z·2s|·(|LSE|·err(p_j) + p_j·err(LSE)); the sum u;
//             soft-capping multiplies by 1 − th², th = tanhf(fl(x/c)) off by 5u relative, th² by 11u: absolute
//             11u·th² + u·(1 − th²), and the product u.
//   output    a narrower output (f32 from the double reference, 16-bit gradients) rounds once: half an ulp of it.
// The oracle itself is long double (2^-64): every gate gains (C + 16)·2^-64 of the magnitudes it is relative to,
// through u_eff = u + (C + 16)·2^-64. Underflow: each exponential term below the normal range is off by up to half
// a subnormal step, so sums of C terms gain C·2^-149 (f32) / C·2^-1074 (f64) absolutely, scaled like p.
// Quantities beyond the compute type's range (|z| near 1e38 in f32, whose differences and weighted sums overflow)
// give inf where the exact value is finite, as PyTorch's float path does: those calls are counted and their values
// not checked (only the writes and the inputs).

struct RowExact {
  enum Regime { finite, empty, saturated, nan } regime = finite;
  std::vector<LD> z, e;  // capped logits; e_j = exp(z_j − m) (finite rows)
  LD m = 0, logl = 0, l = 1, lse = 0, zmax = 0;
  LD lse_minus(LD zc) const { return regime == finite ? (m - zc) + logl : lse - zc; }
};

RowExact exact_row(const Case& k, std::int64_t i) {
  RowExact row;
  const LD cap = k.o.softcap;
  row.z.resize(static_cast<std::size_t>(k.c));
  bool any_nan = false;
  LD m = -INFINITY;
  for (std::int64_t j = 0; j < k.c; ++j) {
    const std::int64_t off = k.logits.lay.offset + i * k.logits.lay.strides[0] + j * k.logits.lay.strides[1];
    LD x = load(k.logits.lay.dtype, k.logits.orig.data() + off * static_cast<std::int64_t>(k.logits.esize()));
    if (cap > 0) x = cap * std::tanh(x / cap);
    row.z[j] = x;
    if (std::isnan(x)) any_nan = true;
    else m = std::max(m, x);
    if (std::isfinite(x)) row.zmax = std::max(row.zmax, std::fabs(x));
  }
  row.m = m;
  if (any_nan) {
    row.regime = RowExact::nan;
    row.lse = NAN;
  } else if (m == INFINITY) {
    row.regime = RowExact::saturated;
    row.lse = INFINITY;
  } else if (m == -INFINITY) {  // every logit −inf, or C = 0
    row.regime = RowExact::empty;
    row.lse = -INFINITY;
  } else {
    row.e.resize(static_cast<std::size_t>(k.c));
    LD excess = 0;
    bool max_seen = false;
    for (std::int64_t j = 0; j < k.c; ++j) {
      row.e[j] = std::exp(row.z[j] - m);
      if (row.z[j] == m && !max_seen) max_seen = true;
      else excess += row.e[j];
    }
    row.l = 1 + excess;
    row.logl = std::log1p(excess);
    row.lse = m + row.logl;
  }
  return row;
}

struct Ctx {
  LD u, tiny, pfloor;
  int L;
  LD acc_max;
};

struct Val {
  LD v = 0, gate = 0;
};

// Δ, the largest error of a soft-capped logit (see "Gates"): 6u·max|z|, and where x/c, tanh or the product is
// subnormal each is off by up to half a subnormal step absolutely (the first two then scaled by c).
LD cap_delta(const Case& k, const Ctx& x, const RowExact& row) {
  const LD c = k.o.softcap;
  return c > 0 ? 6 * x.u * row.zmax + (2 * c + 1) * x.tiny : 0;
}

// Per-row loss parts with their gates (first order; see "Gates").
struct RowLoss {
  Val ce, zl, lse;
  LD w_t = 0;
};

LD weight(const Case& k, std::int64_t j) {
  if (!k.weights.present) return 1;
  const std::int64_t off = k.weights.lay.offset + j * k.weights.lay.strides[0];
  return load(k.weights.lay.dtype, k.weights.orig.data() + off * static_cast<std::int64_t>(k.weights.esize()));
}

std::int64_t target(const Case& k, std::int64_t i) {
  const std::int64_t off = k.targets.lay.offset + i * k.targets.lay.strides[0];
  const unsigned char* p = k.targets.orig.data() + off * static_cast<std::int64_t>(k.targets.esize());
  if (k.targets.lay.dtype == DType::i32) {
    std::int32_t t;
    std::memcpy(&t, p, 4);
    return t;
  }
  std::int64_t t;
  std::memcpy(&t, p, 8);
  return t;
}

RowLoss row_loss(const Case& k, const Ctx& x, const RowExact& row, std::int64_t t) {
  RowLoss out;
  const LD u = x.u, eps = k.o.label_smoothing, s = k.o.z_loss, C = static_cast<LD>(k.c);
  const LD delta = cap_delta(k, x, row);
  const LD err_logl = (x.L + 12) * u * row.logl + k.c * x.tiny;
  auto err_lm = [&](LD zc) {
    const LD lm = row.lse_minus(zc);
    return u * std::fabs(row.m - zc) + err_logl + u * std::fabs(lm) + 2 * delta;
  };
  out.lse.v = row.lse;
  out.lse.gate = u * std::fabs(row.lse) + err_logl + delta;
  out.w_t = weight(k, t);
  const LD nll = row.lse_minus(row.z[t]);
  const LD hard = (1 - eps) * out.w_t;
  LD ce = hard * nll, err = 3 * u * std::fabs(ce) + hard * err_lm(row.z[t]);
  if (eps > 0) {
    LD smooth = 0, err_s = 0;
    for (std::int64_t c = 0; c < k.c; ++c) {
      const LD w = weight(k, c), lm = row.lse_minus(row.z[c]);
      smooth += w * lm;
      err_s += w * (err_lm(row.z[c]) + u * std::fabs(lm));
    }
    err_s += (x.L + 4) * u * std::fabs(smooth);
    const LD soft = eps / C * smooth;
    ce += soft;
    err += 2 * u * std::fabs(soft) + eps / C * err_s;
  }
  err += u * std::fabs(ce);
  out.ce = {ce, err};
  if (s > 0) {
    const LD zl = s * row.lse * row.lse;
    out.zl = {zl, 2 * u * std::fabs(zl) + 2 * s * std::fabs(row.lse) * out.lse.gate + s * out.lse.gate * out.lse.gate};
  }
  return out;
}

// Compares one stored output with the exact value. `narrow`: the output type is narrower than the compute type, so
// the store rounds once (half an ulp of the output). A result may be ±inf only where the exact one, within its gate,
// reaches the output's overflow threshold.
bool matches(double got, LD exact, LD gate, DType out, bool narrow) {
  if (std::isnan(exact)) return std::isnan(got);
  if (std::isinf(exact)) return static_cast<LD>(got) == exact;
  if (std::isnan(got)) return false;
  gate = gate * 1.01L;
  if (narrow) gate += ulp_of(out, std::fabs(exact) + gate) / 2;
  if (std::isinf(got)) return (got > 0) == (exact > 0) && std::fabs(exact) + gate >= max_finite(out);
  return std::fabs(static_cast<LD>(got) - exact) <= gate;
}

std::string num(LD v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.10Lg", v);
  return b;
}

// ---- The case ------------------------------------------------------------------------------------------------

Lay vector_lay(Reader& r, DType t, std::int64_t n) {
  Lay v;
  v.dtype = t;
  v.shape = {n};
  v.strides = {1 + (r.chance(4) ? static_cast<std::int64_t>(r.below(3)) : 0)};
  v.offset = r.below(4);
  return v;
}
Lay scalar_lay(Reader& r, DType t) {
  Lay v;
  v.dtype = t;
  v.offset = r.below(4);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  Case k;
  k.api = static_cast<Api>(r.below(static_cast<int>(Api::count)));
  const DType ldt = std::array<DType, 4>{DType::f32, DType::f16, DType::bf16, DType::f64}[r.below(4)];
  const DType stat = ldt == DType::f64 ? DType::f64 : DType::f32;
  // At most 4096 logits and 512 rows (an empty dimension counted as 1 in the cap).
  k.n = r.chance(12) ? 0 : 1 + r.below(r.chance(4) ? 512 : 9);
  k.c = r.chance(24) ? 0 : (r.chance(5) ? 1 : 1 + r.below(r.chance(4) ? 700 : 12));
  if (std::max<std::int64_t>(k.n, 1) * std::max<std::int64_t>(k.c, 1) > 4096)
    k.c = std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(k.n, 1));
  k.wild = r.chance(3);

  // Logits: rows padded, columns sometimes strided, sometimes column-major.
  k.logits.present = true;
  k.logits.lay.dtype = ldt;
  k.logits.lay.shape = {k.n, k.c};
  {
    const std::int64_t cs = 1 + (r.chance(4) ? r.below(3) : 0);
    if (r.chance(5)) {
      k.logits.lay.strides = {cs, cs * std::max<std::int64_t>(k.n, 1) + r.below(3)};
    } else {
      k.logits.lay.strides = {cs * std::max<std::int64_t>(k.c, 1) + (r.chance(3) ? r.below(5) : 0), cs};
    }
    k.logits.lay.offset = r.below(4);
  }
  k.targets.present = true;
  k.targets.lay = vector_lay(r, r.chance(2) ? DType::i32 : DType::i64, k.n);

  // Options.
  switch (r.below(5)) {
    case 0: k.o.ignore_index = -1; break;
    case 1: k.o.ignore_index = -7; break;
    case 2: k.o.ignore_index = k.c > 0 ? static_cast<std::int64_t>(r.below(static_cast<std::uint32_t>(k.c))) : -100; break;  // a valid class
    case 3: k.o.ignore_index = k.c + 1000; break;
    default: k.o.ignore_index = -100; break;
  }
  k.o.reduction = static_cast<Reduction>(r.below(3));
  k.o.mean_of_nothing_is_zero = r.chance(2);
  {
    const float eps[] = {0, 0, 0, 0.1f, 0.5f, 1, 1e-6f, 0.999f};
    const std::uint32_t e = r.below(9);
    k.o.label_smoothing = e < 8 ? eps[e] : static_cast<float>(r.below(256)) / 255;
    const float zl[] = {0, 0, 0, 1e-4f, 1e-2f, 0.5f, 1, 2.5f};
    k.o.z_loss = zl[r.below(8)];
    const float caps[] = {0, 0, 0, 0, 30, 1, 0.25f, 15, 50, 1e4f};
    k.o.softcap = caps[r.below(10)];
  }
  if (r.chance(3)) {
    k.weights.present = true;
    k.weights.lay = vector_lay(r, stat, k.c);
  }
  const bool per_row = k.o.reduction == Reduction::none;
  const DType grad_dt = (ldt == DType::f16 || ldt == DType::bf16) && r.chance(2) ? DType::f32 : ldt;
  if (has_forward(k.api)) {
    k.loss.present = true;
    k.loss.lay = per_row ? vector_lay(r, stat, k.n) : scalar_lay(r, stat);
    if (r.chance(2)) {
      k.lse.present = true;
      k.lse.lay = vector_lay(r, stat, k.n);
    }
    if (r.chance(3)) {
      k.zout.present = true;
      k.zout.lay = per_row ? vector_lay(r, stat, k.n) : scalar_lay(r, stat);
    }
  } else if (r.chance(3)) {  // the backward's optional lse input (the CPU recomputes it)
    k.lse.present = true;
    k.lse.lay = vector_lay(r, stat, k.n);
  }
  if (has_backward(k.api)) {
    k.grad.present = true;
    k.in_place = grad_dt == ldt && r.chance(4);
    if (k.in_place) {
      k.grad.lay = k.logits.lay;
    } else {
      k.grad.lay.dtype = grad_dt;
      k.grad.lay.shape = {k.n, k.c};
      const std::int64_t cs = 1 + (r.chance(5) ? r.below(2) : 0);
      k.grad.lay.strides = {cs * std::max<std::int64_t>(k.c, 1) + (r.chance(3) ? r.below(4) : 0), cs};
      k.grad.lay.offset = r.below(4);
    }
    if (k.api != Api::fwd_bwd || !r.chance(3)) {
      k.grad_loss.present = true;
      k.grad_loss.lay = per_row ? vector_lay(r, stat, k.n) : scalar_lay(r, stat);
    }
  }

  // One defect, where it applies to this case; the message must name `arg`.
  // (A byte past the end reads 0, so a short input is a valid call, not the first defect every time.)
  Defect defect = r.below(4) == 3 ? static_cast<Defect>(1 + r.below(static_cast<int>(Defect::count) - 1)) : Defect::none;
  const char* arg = nullptr;
  std::int64_t bad_row = -1, bad_weight = -1;
  const std::int64_t numel = k.n * k.c;
  switch (defect) {
    case Defect::smoothing: {
      const float bad[] = {1.5f, -0.1f, std::nanf(""), INFINITY, -INFINITY, 1.0000001f};
      k.o.label_smoothing = bad[r.below(6)];
      arg = "'options.label_smoothing'";
      break;
    }
    case Defect::z_loss_opt: {
      const float bad[] = {-1e-4f, std::nanf(""), INFINITY, -0.5f};
      k.o.z_loss = bad[r.below(4)];
      arg = "'options.z_loss'";
      break;
    }
    case Defect::softcap: {
      const float bad[] = {-1, std::nanf(""), INFINITY, -1e-30f};
      k.o.softcap = bad[r.below(4)];
      arg = "'options.softcap'";
      break;
    }
    case Defect::weight_value:
      if (k.c == 0) break;
      if (!k.weights.present) {
        k.weights.present = true;
        k.weights.lay = vector_lay(r, stat, k.c);
      }
      bad_weight = r.below(static_cast<std::uint32_t>(k.c));
      arg = "'options.class_weights'";
      break;
    case Defect::weight_view:
      if (!k.weights.present) {
        k.weights.present = true;
        k.weights.lay = vector_lay(r, stat, k.c);
      }
      if (r.chance(2)) k.weights.lay.shape[0] = k.c + 1;
      else k.weights.lay.dtype = stat == DType::f64 ? DType::f32 : (r.chance(2) ? DType::f64 : DType::f16);
      arg = "'options.class_weights'";
      break;
    case Defect::logits_view:
      switch (r.below(3)) {
        case 0: k.logits.lay.dtype = r.chance(2) ? DType::i32 : DType::b8; break;
        case 1: k.logits.lay.shape = {k.n * std::max<std::int64_t>(k.c, 1)}; k.logits.lay.strides = {1}; break;
        default: k.logits.lay.shape.push_back(1); k.logits.lay.strides.push_back(1); break;
      }
      if (k.in_place) k.grad.lay = k.logits.lay;  // (the logits are named first)
      arg = "'logits'";
      break;
    case Defect::targets_view:
      if (r.chance(2)) k.targets.lay.dtype = r.chance(2) ? DType::f32 : DType::b8;
      else k.targets.lay.shape[0] = k.n + 1 + r.below(3);
      arg = "'targets'";
      break;
    case Defect::loss_view:
      if (!k.loss.present) break;
      if (r.chance(2)) k.loss.lay.dtype = stat == DType::f64 ? DType::f32 : (r.chance(2) ? DType::f64 : DType::f16);
      else if (per_row) k.loss.lay.shape[0] = k.n + 1;
      else k.loss.lay = vector_lay(r, stat, 1);
      arg = "'loss'";
      break;
    case Defect::lse_view:
      if (!k.lse.present) {
        k.lse.present = true;
        k.lse.lay = vector_lay(r, stat, k.n);
      }
      if (r.chance(2)) k.lse.lay.dtype = stat == DType::f64 ? DType::f32 : DType::f16;
      else k.lse.lay.shape[0] = k.n + 2;
      arg = "'lse'";
      break;
    case Defect::grad_view:
      if (!k.grad.present || k.in_place) break;
      if (r.chance(2)) k.grad.lay.shape[1] = k.c + 1;
      else k.grad.lay.dtype = ldt == DType::f32 ? DType::f16 : (ldt == DType::f64 ? DType::f32 : DType::f64);
      arg = "'grad_logits'";
      break;
    case Defect::grad_loss_view:
      if (!k.grad_loss.present) break;
      if (r.chance(2)) k.grad_loss.lay.dtype = stat == DType::f64 ? DType::f32 : DType::f16;
      else if (per_row) k.grad_loss.lay.shape[0] = k.n + 1;
      else k.grad_loss.lay = vector_lay(r, stat, 1);
      arg = "'grad_loss'";
      break;
    case Defect::null_data:  // null data on a non-empty view: the logits, the targets, the loss or the gradient
      switch (r.below(3)) {
        case 0:
          if (numel == 0) break;
          k.logits.null_data = true;
          if (k.in_place) k.grad.null_data = true;
          arg = "'logits'";
          break;
        case 1:
          if (k.n == 0) break;
          k.targets.null_data = true;
          arg = "'targets'";
          break;
        default:
          if (k.loss.present && (!per_row || k.n > 0)) {
            k.loss.null_data = true;
            arg = "'loss'";
          } else if (k.grad.present && !k.in_place && numel > 0) {
            k.grad.null_data = true;
            arg = "'grad_logits'";
          }
          break;
      }
      break;
    case Defect::alias:
      // Forward: lse over the loss (an output may not overlap another). Backward: grad_logits shifted one element
      // into the logits (a partial overlap; only the identical view is in place).
      if (k.loss.present && per_row && k.n >= 1) {
        k.lse.present = true;
        arg = "'lse'";
      } else if (k.grad.present && k.loss.present == false && numel >= 2 && !k.in_place && grad_dt == ldt) {
        arg = "'grad_logits'";
      }
      break;
    case Defect::reduction:
      k.o.reduction = static_cast<Reduction>(3 + r.below(200));
      arg = "'options.reduction'";
      break;
    case Defect::neg_stride:
      k.logits.lay.strides[r.below(2)] = -1;
      if (k.in_place) k.grad.lay = k.logits.lay;
      arg = "'logits'";
      break;
    case Defect::target_range:
      if (k.n == 0) break;
      bad_row = r.below(static_cast<std::uint32_t>(std::min<std::int64_t>(k.n, 65535)));
      arg = "'targets'";
      break;
    case Defect::grad_self_overlap:
      if (!k.grad.present || k.in_place || k.n < 2 || k.c == 0) break;  // (an empty output writes nothing)
      k.grad.lay.strides[0] = 0;
      arg = "'grad_logits'";
      break;
    case Defect::z_out_view:
      if (!k.loss.present) break;
      k.zout.present = true;
      k.zout.lay = per_row ? scalar_lay(r, stat) : vector_lay(r, stat, k.n + 1);
      arg = "'z_loss'";
      break;
    case Defect::device:  // a tensor on another device than the logits (checked before any data is touched)
      switch (r.below(3)) {
        case 0: arg = "'targets'"; break;
        case 1:
          if (k.loss.present) arg = "'loss'";
          else if (k.grad.present && !k.in_place) arg = "'grad_logits'";
          break;
        default:
          if (!k.weights.present) {
            k.weights.present = true;
            k.weights.lay = vector_lay(r, stat, k.c);
          }
          arg = "'options.class_weights'";
          break;
      }
      break;
    default: break;
  }
  if (!arg) defect = Defect::none;
  // Valid calls may pass null data for empty tensors (docs/semantics.md §1: "null data pointers are accepted for
  // empty tensors"); a path that still offsets such a pointer is undefined behaviour, which UBSan reports.
  if (defect == Defect::none && r.chance(3)) {
    if (numel == 0) k.logits.null_data = k.grad.null_data = true;
    if (k.n == 0) {
      k.targets.null_data = true;
      for (Buf* b : {&k.loss, &k.lse, &k.zout, &k.grad_loss})
        if (!b->lay.shape.empty()) b->null_data = true;
    }
  }
  k.defect = defect;
  k.arg = arg;

  // Fill the inputs: logits (padding NaN), targets, weights, grad_loss, the backward's lse.
  const bool valid_logits = k.logits.lay.dtype == ldt && k.logits.lay.shape.size() == 2 &&
                            k.logits.lay.strides[0] >= 0 && k.logits.lay.strides[1] >= 0;
  if (valid_logits) {
    k.logits.alloc(0xFF);
    const int mode = static_cast<int>(r.below(4));  // 0, 1: independent; 2: one dominant logit; 3: all equal
    for (std::int64_t i = 0; i < k.n; ++i) {
      const std::int64_t dom = k.c > 0 ? r.below(static_cast<std::uint32_t>(k.c)) : 0;
      const double base = logit_value(r, false), gap = 10 + r.below(200);
      for (std::int64_t j = 0; j < k.c; ++j) {
        double v = logit_value(r, k.wild);
        if (mode == 2) v = (j == dom) ? base + gap : base - static_cast<double>(r.below(64)) / 16;
        if (mode == 3) v = base;
        store(ldt, k.logits.at(k.logits.lay.offset + i * k.logits.lay.strides[0] + j * k.logits.lay.strides[1]), v);
      }
    }
  } else {
    Lay tmp = k.logits.lay;
    for (auto& s : tmp.strides) s = std::max<std::int64_t>(s, 0);
    k.logits.bytes.assign(static_cast<std::size_t>(extent(tmp) + 4) * k.logits.esize(), 0x3C);
  }
  {
    k.targets.alloc(0xAB);
    const bool int_targets = k.targets.lay.dtype == DType::i32 || k.targets.lay.dtype == DType::i64;
    for (std::int64_t i = 0; i < k.targets.lay.shape[0] && int_targets; ++i) {
      std::int64_t t = k.o.ignore_index;
      if (k.c > 0 && !r.chance(6)) t = r.below(static_cast<std::uint32_t>(k.c));
      if (i == bad_row) {
        const std::int64_t bad[] = {k.c, -1, k.c + 5, -100, std::numeric_limits<std::int32_t>::max(),
                                    std::numeric_limits<std::int32_t>::min()};
        t = bad[r.below(6)];
        if (t == k.o.ignore_index) t = k.c + 3;
      }
      unsigned char* p = k.targets.at(k.targets.lay.offset + i * k.targets.lay.strides[0]);
      if (k.targets.lay.dtype == DType::i32) {
        const auto t32 = static_cast<std::int32_t>(t);
        std::memcpy(p, &t32, 4);
      } else {
        std::memcpy(p, &t, 8);
      }
    }
  }
  if (k.weights.present) {
    k.weights.alloc(0xFF);
    const double pal[] = {1, 0, 0.5, 2, 1e-3, 7.25, 100, 0.1};
    for (std::int64_t j = 0; j < k.weights.lay.shape[0]; ++j) {
      double w = pal[r.below(8)];
      if (j == bad_weight) {
        const double bad[] = {-1, kNaN, kInf, -1e-30, -kInf};
        w = bad[r.below(5)];
      }
      store(k.weights.lay.dtype, k.weights.at(k.weights.lay.offset + j * k.weights.lay.strides[0]), w);
    }
  }
  if (k.grad_loss.present) {
    k.grad_loss.alloc(0xFF);
    const double pal[] = {1, -1, 0.5, 2, 0, 1e-3, 3.7, -0.25, 1, 1, 1, kNaN};
    const std::int64_t cnt = k.grad_loss.lay.shape.empty() ? 1 : k.grad_loss.lay.shape[0];
    for (std::int64_t i = 0; i < cnt; ++i) {
      const std::int64_t off = k.grad_loss.lay.offset + (k.grad_loss.lay.shape.empty() ? 0 : i * k.grad_loss.lay.strides[0]);
      store(k.grad_loss.lay.dtype, k.grad_loss.at(off), pal[r.below(r.chance(16) ? 12 : 11)]);
    }
  }
  k.logits.orig = k.logits.bytes;
  k.targets.orig = k.targets.bytes;
  k.weights.orig = k.weights.bytes;
  k.grad_loss.orig = k.grad_loss.bytes;

  // The exact rows (from the stored values), for the backward's lse input and the checks.
  const bool value_checks = defect == Defect::none;
  Ctx x{};
  const bool acc_double = ldt == DType::f64 || k.api == Api::ref_fwd || k.api == Api::ref_bwd;
  x.u = (acc_double ? std::ldexp(1.0L, -53) : std::ldexp(1.0L, -24)) + (k.c + 16) * std::ldexp(1.0L, -64);
  x.tiny = acc_double ? std::ldexp(1.0L, -1074) : std::ldexp(1.0L, -149);
  x.pfloor = acc_double ? 1e-300L : 1e-30L;
  x.L = 0;
  while ((std::int64_t{1} << x.L) < k.c) ++x.L;
  x.acc_max = acc_double ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  std::vector<RowExact> rows;
  if (value_checks) {
    rows.reserve(static_cast<std::size_t>(k.n));
    for (std::int64_t i = 0; i < k.n; ++i) rows.push_back(exact_row(k, i));
  }

  // Outputs: poisoned, with padding. The backward's lse input holds the forward's LSE, rounded.
  const unsigned char poison = r.chance(2) ? 0xFF : 0x55;
  const bool lse_is_input = k.lse.present && !has_forward(k.api);
  for (Buf* b : {&k.loss, &k.lse, &k.zout, &k.grad}) {
    if (!b->present || (b == &k.grad && k.in_place)) continue;
    if (b == &k.lse && defect == Defect::alias && std::string(arg) == "'lse'") continue;
    b->alloc(poison);
  }
  if (lse_is_input) {
    for (std::int64_t i = 0; i < k.lse.lay.shape[0]; ++i) {
      const double v = i < static_cast<std::int64_t>(rows.size()) ? static_cast<double>(rows[i].lse) : 0.0;
      store(k.lse.lay.dtype, k.lse.at(k.lse.lay.offset + i * k.lse.lay.strides[0]), v);
    }
  }
  k.lse.orig = k.lse.bytes;
  for (Buf* b : {&k.loss, &k.zout, &k.grad}) b->orig = b->bytes;

  TensorView logits = k.logits.view(), targets = k.targets.view(), loss = k.loss.view(), lse = k.lse.view(),
             zout = k.zout.view(), grad = k.grad.view(), grad_loss = k.grad_loss.view();
  if (k.in_place) grad = logits;
  if (k.weights.present) k.o.class_weights = k.weights.view();
  if (defect == Defect::alias) {
    if (std::string(arg) == "'lse'") lse = loss;  // identical to the loss: two outputs over the same elements
    else {
      grad = logits;
      grad.dtype = ldt;
      grad.data = static_cast<unsigned char*>(logits.data) + dtype_size(ldt);
    }
  }
  if (defect == Defect::z_out_view) zout = k.zout.view();
  if (defect == Defect::device) {
    const std::string a(arg);
    TensorView& v = a == "'targets'" ? targets : a == "'loss'" ? loss : a == "'grad_logits'" ? grad : k.o.class_weights;
    v.device = Device::cuda(0);
  }

  if (std::getenv("SMK_FUZZ_PRINT")) describe(std::string("case (defect ") + (arg ? arg : "none") + ")", k);
  try {
    switch (k.api) {
      case Api::fwd: smk::cross_entropy(loss, logits, targets, k.o, lse, zout); break;
      case Api::bwd: smk::cross_entropy_backward(grad, logits, targets, grad_loss, k.o, lse); break;
      case Api::fwd_bwd: smk::cross_entropy_forward_backward(loss, grad, logits, targets, k.o, grad_loss, lse, zout); break;
      case Api::cpu_fwd: cpu::cross_entropy(loss, logits, targets, k.o, lse, zout); break;
      case Api::cpu_bwd: cpu::cross_entropy_backward(grad, logits, targets, grad_loss, k.o, lse); break;
      case Api::ref_fwd: cpu::reference::cross_entropy(loss, logits, targets, k.o, lse, zout); break;
      default: cpu::reference::cross_entropy_backward(grad, logits, targets, grad_loss, k.o, lse); break;
    }
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (defect == Defect::none) violation("a valid call threw: " + msg, k);
    if (e.code() != ErrorCode::invalid_argument) violation("wrong error code for an invalid call: " + msg, k);
    if (msg.find(std::string("argument ") + arg) == std::string::npos)
      violation(std::string("the message does not name ") + arg + ": " + msg, k);
    if (msg.find(api_name(k.api)) == std::string::npos) violation("the message does not name the op: " + msg, k);
    if (defect == Defect::target_range && msg.find("targets[" + std::to_string(bad_row) + "]") == std::string::npos)
      violation("the message does not name the row targets[" + std::to_string(bad_row) + "]: " + msg, k);
    for (Buf* b : {&k.logits, &k.targets, &k.weights, &k.grad_loss, &k.lse, &k.loss, &k.zout, &k.grad})
      if (b->bytes != b->orig) violation("a rejected call wrote into a buffer: " + msg, k);
    ++stats.rejected;
    ++stats.by_defect[static_cast<int>(defect)];
    return 0;
  } catch (const std::exception& e) {
    violation(std::string("a non-smk exception escaped: ") + e.what(), k);
  }
  if (defect != Defect::none) violation(std::string("an invalid call was accepted (expected an error naming ") + arg + ")", k);
  ++stats.by_api[static_cast<int>(k.api)];

  // Inputs untouched; outputs written only inside their views.
  for (Buf* b : {&k.targets, &k.weights, &k.grad_loss}) if (b->bytes != b->orig) violation("an input was written", k);
  if (lse_is_input && k.lse.bytes != k.lse.orig) violation("the backward's lse input was written", k);
  auto addressed = [](const Lay& v, std::size_t elements) {  // which elements of its buffer a view addresses
    std::vector<bool> in(elements, false);
    if (v.shape.empty()) {
      in[static_cast<std::size_t>(v.offset)] = true;
      return in;
    }
    const std::int64_t rows = v.shape[0], cols = v.shape.size() > 1 ? v.shape[1] : 1;
    const std::int64_t s1 = v.shape.size() > 1 ? v.strides[1] : 0;
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) in[static_cast<std::size_t>(v.offset + i * v.strides[0] + j * s1)] = true;
    return in;
  };
  for (Buf* b : {&k.loss, &k.lse, &k.zout, &k.grad, &k.logits}) {
    if (!b->present || b->bytes.empty() || (b == &k.lse && lse_is_input)) continue;
    if (b == &k.grad && k.in_place) continue;
    const std::size_t es = b->esize();
    const bool writes = b != &k.logits || k.in_place;
    const std::vector<bool> in = addressed(b->lay, b->bytes.size() / es);
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(b->bytes.size() / es); ++e) {
      if (writes && in[static_cast<std::size_t>(e)]) continue;
      if (std::memcmp(b->bytes.data() + e * es, b->orig.data() + e * es, es) != 0)
        violation(std::string(b == &k.logits ? "the logits buffer" : "an output buffer") + " was written at element " +
                      std::to_string(e) + ", outside its view",
                  k);
    }
  }

  // Values. Beyond the compute type's range (see "Gates") only the regimes above are checked.
  LD big = 0, wmax = 1;
  for (std::int64_t j = 0; j < k.c; ++j) wmax = std::max(wmax, weight(k, j));
  for (const RowExact& row : rows) big = std::max(big, row.zmax);
  const LD ln_c = std::log(static_cast<LD>(std::max<std::int64_t>(k.c, 1)));
  const LD reach = (k.c + 2) * wmax * (2 * big + ln_c + 2) * std::max<std::int64_t>(k.n, 1) *
                   (1 + k.o.z_loss * (big + ln_c + 1)) * 1e3L;
  if (reach >= x.acc_max / 64) {
    ++stats.skipped;
    ++stats.valid;
    return 0;
  }
  auto out_at = [](Buf& b, std::int64_t i) {
    const std::int64_t off = b.lay.offset + (b.lay.shape.empty() ? 0 : i * b.lay.strides[0]);
    return load(b.lay.dtype, b.at(off));
  };
  const DType acc_t = acc_double ? DType::f64 : DType::f32;
  auto narrow_out = [&](DType t) { return conformance::significand_bits(t) < conformance::significand_bits(acc_t); };
  LD floor_abs = 0;  // underflow: set below, once the mean's denominators are known
  auto expect = [&](const char* what, std::int64_t i, std::int64_t j, double got, LD exact, LD gate, DType t) {
    ++stats.values;
    gate += floor_abs;
    if (!matches(got, exact, gate, t, narrow_out(t)))
      violation(std::string(what) + "[" + std::to_string(i) + (j >= 0 ? ", " + std::to_string(j) : "") + "] = " +
                    num(got) + ", exact " + num(exact) + ", gate " + num(gate * 1.01L) +
                    (narrow_out(t) ? " + half an ulp" : ""),
                k);
    // How much of its gate each kind of output used (finite values, unrounded outputs), to see the gates bite.
    if (std::isfinite(exact) && std::isfinite(got) && !narrow_out(t) && gate > 0) {
      const int kind = what[0] == 'l' ? (what[1] == 'o' ? 0 : 1) : (what[0] == 'z' ? 2 : 3);
      const double ratio = static_cast<double>(std::fabs(got - exact) / gate);
      stats.worst[kind] = std::max(stats.worst[kind], ratio);
      if (const char* show = std::getenv("SMK_FUZZ_SHOW_RATIO"); show && ratio > std::atof(show))
        describe(std::string(what) + "[" + std::to_string(i) + "] used " + std::to_string(ratio) + " of its gate: got " +
                     num(got) + ", exact " + num(exact),
                 k);
    }
  };

  // Forward outputs, and the per-row parts the reductions and the backward need.
  std::vector<RowLoss> parts(static_cast<std::size_t>(k.n));
  std::vector<bool> counted(static_cast<std::size_t>(k.n));
  LD wt_sum = 0, count = 0;
  for (std::int64_t i = 0; i < k.n; ++i) {
    const std::int64_t t = target(k, i);
    counted[i] = t != k.o.ignore_index;
    if (counted[i]) {
      parts[i] = row_loss(k, x, rows[i], t);
      wt_sum += parts[i].w_t;
      count += 1;
    } else {
      parts[i].lse.v = rows[i].lse;
      parts[i].lse.gate = x.u * std::fabs(rows[i].lse) + (x.L + 12) * x.u * rows[i].logl + k.c * x.tiny +
                          cap_delta(k, x, rows[i]);
    }
  }
  auto safe_div = [&](LD num_, LD den) -> LD {
    if (den == 0 && k.o.mean_of_nothing_is_zero) return 0;
    return num_ / den;
  };
  {
    // Underflow: a product or term whose result is subnormal is off by up to half a subnormal step (x.tiny), a
    // quantity no relative gate above covers. At most C + 8 such roundings reach one output, each scaled afterwards
    // by at most the weights, the upstream gradient and the mean's 1 / denominator.
    LD gmax = 1;
    if (k.grad_loss.present) {
      const std::int64_t cnt = k.grad_loss.lay.shape.empty() ? 1 : k.n;
      for (std::int64_t i = 0; i < cnt; ++i) {
        const LD g = std::fabs(static_cast<LD>(out_at(k.grad_loss, i)));
        if (std::isfinite(g)) gmax = std::max(gmax, g);
      }
    }
    LD inv_den = 1;
    if (k.o.reduction == Reduction::mean && wt_sum > 0) inv_den = std::max<LD>(1, 1 / wt_sum);
    floor_abs = (k.c + 8) * x.tiny * (1 + wmax) * gmax * inv_den * (1 + k.o.z_loss);
  }
  const LD u53 = std::ldexp(1.0L, -53);
  if (has_forward(k.api)) {
    if (k.lse.present)
      for (std::int64_t i = 0; i < k.n; ++i) expect("lse", i, -1, out_at(k.lse, i), parts[i].lse.v, parts[i].lse.gate, stat);
    if (per_row) {
      for (std::int64_t i = 0; i < k.n; ++i) {
        const RowLoss& q = parts[i];
        const LD v = q.ce.v + q.zl.v, g = q.ce.gate + q.zl.gate + x.u * std::fabs(v);
        expect("loss", i, -1, out_at(k.loss, i), counted[i] ? v : 0, counted[i] ? g : 0, stat);
        if (k.zout.present) expect("z_loss", i, -1, out_at(k.zout, i), counted[i] ? q.zl.v : 0, counted[i] ? q.zl.gate : 0, stat);
      }
    } else {
      LD ce = 0, zl = 0, ce_g = 0, zl_g = 0, ce_abs = 0, zl_abs = 0;
      for (std::int64_t i = 0; i < k.n; ++i) {
        if (!counted[i]) continue;
        ce += parts[i].ce.v;
        zl += parts[i].zl.v;
        ce_g += parts[i].ce.gate;
        zl_g += parts[i].zl.gate;
        ce_abs += std::fabs(parts[i].ce.v);
        zl_abs += std::fabs(parts[i].zl.v);
      }
      ce_g += (k.n + 1) * u53 * ce_abs;
      zl_g += (k.n + 1) * u53 * zl_abs;
      LD ce_t = ce, zl_t = zl, ce_tg = ce_g, zl_tg = zl_g;
      bool undefined = false;  // a zero denominator whose numerator is within its gate of 0: 0/0 or x/0
      if (k.o.reduction == Reduction::mean) {
        ce_t = safe_div(ce, wt_sum);
        zl_t = safe_div(zl, count);
        if ((wt_sum == 0 || count == 0) && !k.o.mean_of_nothing_is_zero) undefined = (wt_sum == 0 && ce <= ce_g) || (count == 0 && zl <= zl_g);
        ce_tg = wt_sum > 0 ? ce_g / wt_sum + (k.n + 2) * u53 * std::fabs(ce_t) : 0;
        zl_tg = count > 0 ? zl_g / count + (k.n + 2) * u53 * std::fabs(zl_t) : 0;
      }
      const LD total = ce_t + zl_t, total_g = ce_tg + zl_tg + x.u * std::fabs(total);
      const double got = out_at(k.loss, 0);
      if (undefined) {
        if (!std::isnan(got) && !std::isinf(got)) violation("a mean over a zero denominator is finite: " + num(got), k);
      } else {
        expect("loss", 0, -1, got, total, total_g, stat);
        if (k.zout.present) expect("z_loss", 0, -1, out_at(k.zout, 0), zl_t, zl_tg + x.u * std::fabs(zl_t), stat);
      }
    }
  }

  if (!has_backward(k.api)) {
    ++stats.valid;
    return 0;
  }
  // Gradient: exact values from the header's formula, gates as derived in "Gates".
  const LD eps = k.o.label_smoothing, s = k.o.z_loss, C = static_cast<LD>(k.c), cap = k.o.softcap;
  LD W = 0;
  for (std::int64_t j = 0; j < k.c; ++j) W += weight(k, j);
  const LD err_W = std::max<std::int64_t>(k.c - 1, 0) * x.u * W;
  LD g_scalar = 1;
  if (!per_row && k.grad_loss.present) g_scalar = out_at(k.grad_loss, 0);
  LD scale_ce = g_scalar, scale_z = g_scalar, scale_err = 0;
  if (k.o.reduction == Reduction::mean) {
    scale_ce = safe_div(g_scalar, wt_sum);
    scale_z = safe_div(g_scalar, count);
    scale_err = 3 * x.u;
  }
  for (std::int64_t i = 0; i < k.n; ++i) {
    const std::int64_t t = target(k, i);
    const RowExact& row = rows[i];
    LD g_ce = scale_ce, g_z = scale_z;
    if (per_row) g_ce = g_z = k.grad_loss.present ? out_at(k.grad_loss, i) : 1;
    const LD w_t = counted[i] ? weight(k, t) : 0, hard = (1 - eps) * w_t, soft = eps / C;
    const LD delta = cap_delta(k, x, row);
    for (std::int64_t j = 0; j < k.c; ++j) {
      const std::int64_t off = k.grad.lay.offset + i * k.grad.lay.strides[0] + j * k.grad.lay.strides[1];
      const double got = load(k.grad.lay.dtype, (k.in_place ? k.logits : k.grad).at(off));
      if (!counted[i]) {
        expect("grad_logits", i, j, got, 0, 0, k.grad.lay.dtype);
        continue;
      }
      if (row.regime != RowExact::finite) {
        expect("grad_logits", i, j, got, NAN, 0, k.grad.lay.dtype);
        continue;
      }
      const LD p = row.e[j] / row.l, wj = weight(k, j);
      const LD err_p = (18 + x.L) * x.u * std::max(p, x.pfloor) + 2 * delta * p + k.c * x.tiny;
      LD ht, err_ht;
      if (j == t) {
        LD rest = 0;  // Σ_{j≠t} e_j, summed apart: l − e_t would lose it next to 1
        for (std::int64_t q = 0; q < k.c; ++q)
          if (q != t) rest += row.e[q];
        ht = -(rest / row.l);
        err_ht = ((2 * x.L + 21) * x.u + 2 * delta) * std::fabs(ht) + k.c * x.tiny;
      } else {
        ht = p;
        err_ht = err_p;
      }
      const LD X = W * p - wj, err_X = x.u * std::fabs(X) + W * err_p + p * err_W + x.u * W * p;
      const LD A = hard * ht, B = soft * X, inner = A + B;
      const LD err_inner = 3 * x.u * std::fabs(A) + hard * err_ht + 2 * x.u * std::fabs(B) + soft * err_X +
                           x.u * (std::fabs(A) + std::fabs(B));
      const LD dce = g_ce * inner;
      LD err_d = std::fabs(g_ce) * err_inner + (x.u + scale_err) * std::fabs(dce);
      LD dz = 0;
      if (s > 0) {
        const LD err_lse = x.u * std::fabs(row.lse) + (x.L + 12) * x.u * row.logl + k.c * x.tiny + delta;
        dz = g_z * 2 * s * row.lse * p;
        err_d += std::fabs(g_z * 2 * s) * (std::fabs(row.lse) * err_p + p * err_lse) + (4 * x.u + scale_err) * std::fabs(dz);
      }
      LD d = dce + dz;
      err_d += x.u * (std::fabs(dce) + std::fabs(dz));
      if (cap > 0) {
        const std::int64_t xoff = k.logits.lay.offset + i * k.logits.lay.strides[0] + j * k.logits.lay.strides[1];
        const LD xv = load(ldt, k.logits.orig.data() + xoff * static_cast<std::int64_t>(k.logits.esize()));
        const LD th = std::tanh(xv / cap), f = 1 - th * th;
        const LD err_f = 11 * x.u * th * th + x.u * f;
        err_d = err_d * f + std::fabs(d) * err_f + x.u * std::fabs(d * f);
        d *= f;
      }
      if (std::isinf(g_ce) && std::isfinite(inner)) {  // a mean over a zero weight sum (no flag): ±inf or NaN
        if (std::isfinite(got) && std::fabs(inner) > err_inner * 1.01L)
          violation("grad_logits over a zero weight sum is finite: " + num(got), k);
        ++stats.values;
        continue;
      }
      expect("grad_logits", i, j, got, d, err_d, k.grad.lay.dtype);
    }
  }
  ++stats.valid;
  return 0;
}
