// libFuzzer target: drives the attention API of include/softmaxkit/attention.hpp on host memory — every overload of
// attention_forward, attention_decode and merge_attention_states (smk::, smk::cpu::, smk::cpu::reference::) — with
// random bounded calls, and holds each to the header's contract:
//   - q [B, Sq, Hq, D], k / v [B, Sk, Hkv, D] (or packed [total, H, D] with cu_seqlens), random strides and offsets,
//     GQA, f32 / f16 / bf16 / f64, D small or 64 / 128, default / custom (negative too) scale, causal with Sq ≠ Sk
//     (bottom-right diagonal), sinks (±inf, NaN, huge), decode with per-sequence lengths 0, 1, S_max or between,
//     NaN planted in K / V rows a query may not see (past a decode length, the causal future, trailing packed rows,
//     stride padding), optional LSE; merges of random (O, LSE) pairs with −inf, +inf and NaN LSEs, in place too;
//   - a valid call returns, its O and LSE match a long-double oracle written from the header's formulas within the
//     gates derived below, a second run over differently poisoned outputs gives the same bits (nothing left
//     unwritten, no nondeterminism), merge(a, b) and merge(b, a) give the same bits (the header: commutative), and
//     nothing outside the outputs is written;
//   - a call made invalid on purpose (one defect) throws smk::Error(invalid_argument) whose message is
//     "<op>: argument '<arg>': ..." for the op called and the argument at fault, and writes nothing.
// A violation prints the case and aborts, so libFuzzer keeps the input (keep it in tests/fuzz/corpus_attention/).
//
// Where the header and docs/semantics.md are silent, this target holds the library to what PyTorch does:
//   - a +inf score or sink (no NaN) is the saturated regime of semantics §2: O = NaN, LSE = +inf (torch's softmax
//     over [scores, sink] is NaN); merge with a +inf LSE likewise gives O = NaN, LSE = +inf;
//   - a visible key whose V holds inf or NaN makes that column of O non-finite even when its weight is 0 or
//     underflows (torch's P·V multiplies 0 by it); in a merge, a non-empty side's non-finite O reaches the result
//     even when its weight underflows (exact arithmetic: e^(L_a − L)·NaN = NaN); only an empty side (LSE −inf) is
//     skipped, as the header says;
//   - a row with no visible key gets O = 0 and LSE = the sink whatever the sink holds (the header's words), a NaN
//     or +inf sink included (torch's P·V over no keys is 0);
//   - out and lse may not overlap the sinks, cu_seqlens or seqlens: rejected naming out (semantics §4);
//   - a bad value of cu_seqlens or seqlens, found by the CPU backend, may name cpu::<op> in a public call's message.
// Packed q rows past cu_seqlens_q[B] (no sequence) are not generated: their output is unspecified.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "conformance/harness.hpp"
#include "conformance/numerics.hpp"
#include "reader.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/error.hpp"

using namespace smk;
using smk::conformance::load;
using smk::conformance::store;

namespace {

using smk::conformance::dims;
using smk::fuzz::Reader;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");
using LD = long double;

double value(Reader& r) {
  static const double palette[] = {0,     -0.0,   1,    -1,   kInf, -kInf,  kNaN, 1e10,  -1e10, 1e-10, 88.7, -103.9,
                                   65504, -65504, 1000, -999, 1e7,  133120, 1e38, -1e38, 1e-40, 3.5,   -40,  0.25};
  switch (r.below(16)) {
    case 0:
      return palette[r.below(sizeof palette / sizeof palette[0])];
    case 1:
      return static_cast<double>(r.f32());  // any float bit pattern
    default:
      return (static_cast<double>(r.below(2001)) - 1000) / 300;  // ordinary values in [-3.3, 3.3]
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Tensors: a layout over its own byte buffer. Inputs are padded with 0xFF bytes (NaN in every float type), outputs
// poisoned; `orig` keeps the bytes before the call.
struct Tensor {
  const char* name = "";
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset = 0;
  std::vector<unsigned char> buf, orig;
  bool null_data = false;

  std::int64_t numel() const {
    std::int64_t k = 1;
    for (auto s : shape) k *= s;
    return k;
  }
  std::int64_t size() const { return static_cast<std::int64_t>(dtype_size(dtype)); }
  std::int64_t extent() const {  // one past the highest element offset (strides ≥ 0)
    std::int64_t last = offset;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) return offset;
      last += (shape[d] - 1) * std::max<std::int64_t>(strides[d], 0);
    }
    return last + 1;
  }
  std::int64_t at(std::initializer_list<std::int64_t> idx) const {
    std::int64_t o = offset;
    int d = 0;
    for (auto i : idx) o += i * strides[d++];
    return o;
  }
  double get(std::int64_t off) const { return load(dtype, buf.data() + off * size()); }
  void set(std::int64_t off, double v) { store(dtype, buf.data() + off * size(), v); }
  void allocate(unsigned char fill) { buf.assign(static_cast<std::size_t>((extent() + 3) * size()), fill); }
  TensorView view() {
    TensorView t;
    t.data = null_data ? nullptr : buf.data() + offset * size();
    t.dtype = dtype;
    t.rank = static_cast<int>(shape.size());
    for (int d = 0; d < t.rank; ++d) {
      t.shape[d] = shape[d];
      t.strides[d] = strides[d];
    }
    return t;
  }
  // Byte mask of the elements inside the view.
  std::vector<bool> inside() const {
    std::vector<bool> in(buf.size(), false);
    const std::int64_t n = numel();
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t o = offset, rest = i;
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        o += (rest % shape[d]) * strides[d];
        rest /= shape[d];
      }
      for (std::int64_t b = 0; b < size(); ++b) in[static_cast<std::size_t>(o * size() + b)] = true;
    }
    return in;
  }
};

// A non-overlapping layout of `shape`: usually row-major, sometimes dimensions in a random order; random padding.
std::vector<std::int64_t> random_strides(Reader& r, const std::vector<std::int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int> order(rank);
  for (int d = 0; d < rank; ++d) order[d] = rank - 1 - d;
  if (r.chance(4))
    for (int d = rank - 1; d > 0; --d) std::swap(order[d], order[r.below(d + 1)]);
  std::vector<std::int64_t> strides(rank);
  std::int64_t step = 1 + (r.chance(6) ? r.below(3) : 0);
  for (int k = 0; k < rank; ++k) {
    strides[order[k]] = step;
    step = step * std::max<std::int64_t>(shape[order[k]], 1) + (r.chance(5) ? r.below(4) : 0);
  }
  return strides;
}

Tensor make(Reader& r, const char* name, DType dt, std::vector<std::int64_t> shape, bool contiguous = false) {
  Tensor t;
  t.name = name;
  t.dtype = dt;
  t.shape = std::move(shape);
  if (contiguous) {
    t.strides.assign(t.shape.size(), 1);
    for (int d = static_cast<int>(t.shape.size()) - 2; d >= 0; --d)
      t.strides[d] = t.strides[d + 1] * std::max<std::int64_t>(t.shape[d + 1], 1);
  } else {
    t.strides = random_strides(r, t.shape);
    t.offset = r.chance(3) ? r.below(3) : 0;
  }
  return t;
}

// Fills every element of an input view (padding stays NaN) with fuzzer values.
void fill(Reader& r, Tensor& t) {
  const std::int64_t n = t.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t o = t.offset, rest = i;
    for (int d = static_cast<int>(t.shape.size()) - 1; d >= 0; --d) {
      o += (rest % t.shape[d]) * t.strides[d];
      rest /= t.shape[d];
    }
    t.set(o, value(r));
  }
}

DType stat_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// Unit roundoff, smallest subnormal and largest finite value of a float type.
struct Fmt {
  LD u, tiny, max;
};
Fmt fmt(DType t) {
  switch (t) {
    case DType::f64:
      return {std::ldexp(1.0L, -53), std::ldexp(1.0L, -1074), std::numeric_limits<double>::max()};
    case DType::f16:
      return {std::ldexp(1.0L, -11), std::ldexp(1.0L, -24), 65504.0L};
    case DType::bf16:
      return {std::ldexp(1.0L, -8), std::ldexp(1.0L, -133), 3.3895313892515355e38L};
    default:
      return {std::ldexp(1.0L, -24), std::ldexp(1.0L, -149), std::numeric_limits<float>::max()};
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reporting.
std::string g_case;  // a description of the call, printed with a violation
[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "CONTRACT VIOLATION: %s\n  %s\n", what.c_str(), g_case.c_str());
  std::abort();
}
std::string describe(const Tensor& t) {
  return std::string(t.name) + " " + dtype_name(t.dtype) + " " + dims(t.shape) + " strides " + dims(t.strides) +
         " offset " + std::to_string(t.offset);
}
std::string num(LD x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17Lg", x);
  return b;
}

struct Stats {
  long valid = 0, rejected = 0, rows = 0, merged = 0, valid_op[3] = {0, 0, 0};
  ~Stats() {
    if (std::getenv("SMK_FUZZ_STATS"))
      std::fprintf(stderr,
                   "fuzz_attention: %ld valid calls (%ld attention rows, %ld merged rows checked), %ld invalid "
                   "calls rejected; valid forward / decode / merge %ld / %ld / %ld\n",
                   valid, rows, merged, rejected, valid_op[0], valid_op[1], valid_op[2]);
  }
} stats;

// ---------------------------------------------------------------------------------------------------------------
// The attention oracle: one query row, its visible keys (exact stored values), in long double, from the header:
//   s_j = scale·q·k_j;  O = Σ_j e^(s_j) v_j / (e^σ + Σ_j e^(s_j));  LSE = log(e^σ + Σ_j e^(s_j)).
// Products of two f32 (or 16-bit) values are exact in long double's 64-bit significand; f64 products are not, but
// the oracle's 2^-64 is 2^-11 of the f64 path's unit roundoff, below every gate.
//
// Gates (first order, the algorithm of src/cpu/attention.cpp in its compute type Acc with unit roundoff u and
// smallest subnormal τ; docs/semantics.md §6 has the ingredients, its attention sections give no CPU bound):
//   score: q·k summed in sequence over D (D roundings with the products), the scale rounded to Acc (1/√D) and the
//     product scale·dot (2 more): Δ_j ≤ (D + 2)·u·|scale|·Σ_x|q_x k_jx| + (D + 2)·τ·max(1, |scale|).
//   §6: moving every score by at most Δ moves each p_j by a factor within e^(±2Δ), the LSE by at most Δ.
//   the softmax and P·V: exp_diff (α = 5u), the block weight w.other (5u + a product) and pj (1), the product with
//     v (1), the sequential sum of at most n terms into acc (n), each later block's (and the sink's) rescale
//     acc *= w.self (exp_diff and a product: 7, say 8, a block), l = 1 + d ((α + D_tree + 2)u with D_tree ≤ 12 for
//     a block of 256, plus a merge of 8u a block), 1/l and the product (2):
//     |Ô_x − O_x| ≤ (e^(2Δ) − 1 + (40 + n + 16·(blocks + 1))·u)·Σ_j p_j|v_jx| + (n + 8)²·τ·(1 + max_j|v_jx|)
//     (τ: each rounding of a subnormal weight, scaled by |v|, or of a subnormal product, absolute),
//     plus the store's rounding when out's type is coarser than Acc (u_out·|O| + its smallest subnormal).
//   LSE: §6's logsumexp bound (|LSE| + L + 10 + 3 ln n)·u with L = ⌈log2 n⌉ (n counting the sink), plus 8u a block
//     merge and Δ, plus the f32 store's rounding from a double Acc.
// Rows where Acc could overflow on finite data (|scale|·Σ|q k| or n·max|v| within a factor 4 of Acc's largest value)
// have no bound (semantics §6: only the regimes survive) and are checked for determinism only.
struct Ctx {
  DType out_dtype, lse_dtype, acc;  // acc: f32 or f64, the compute type of the path
  LD scale;                         // exact: the float option, or 1/√D
  std::int64_t d;
};

struct RowIn {
  std::vector<LD> q, k, v;  // q [D], k and v [n][D], exact
  std::int64_t n = 0;
  bool has_sink = false;
  LD sink = 0;
};

bool same_bits_or_both_nan(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Equal values (−0 == +0: the sum 0 + 1·(−0) is +0), or both NaN.
bool equal_or_both_nan(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void check_row(const Ctx& c, const RowIn& in, const std::vector<double>& o, bool has_lse, double lse,
               const std::string& where) {
  const Fmt A = fmt(c.acc), O = fmt(c.out_dtype), Ls = fmt(c.lse_dtype);
  const std::int64_t n = in.n, D = c.d;
  const LD as = std::fabs(c.scale);
  std::vector<LD> s(n);
  bool any_nan = in.has_sink && std::isnan(in.sink), any_pos_inf = in.has_sink && in.sink == INFINITY;
  bool all_neg_inf = !in.has_sink || in.sink == -INFINITY, risk = false;
  LD delta = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    LD dot = 0, fin = 0;
    for (std::int64_t x = 0; x < D; ++x) {
      const LD p = in.q[x] * in.k[j * D + x];
      dot += p;
      if (std::isfinite(p)) fin += std::fabs(p);
    }
    s[j] = c.scale * dot;
    if (fin > A.max / 4 || as * fin > A.max / 4) risk = true;
    delta = std::max(delta, (D + 2) * A.u * as * fin + (D + 2) * A.tiny * std::max<LD>(1, as));
    if (std::isnan(s[j]))
      any_nan = true;
    else if (s[j] == INFINITY)
      any_pos_inf = true;
    if (s[j] != -INFINITY) all_neg_inf = false;
  }
  const auto fail = [&](const std::string& what) { violation(where + ": " + what); };
  const auto expect_all_nan = [&](const char* regime) {
    for (std::int64_t x = 0; x < D; ++x)
      if (!std::isnan(o[x]))
        fail(std::string(regime) + ": O[" + std::to_string(x) + "] = " + num(o[x]) + ", expected NaN");
  };
  if (n == 0) {  // no visible key: the header's O = 0, LSE = −inf or the sink
    for (std::int64_t x = 0; x < D; ++x)
      if (o[x] != 0) fail("no visible key: O[" + std::to_string(x) + "] = " + num(o[x]) + ", expected 0");
    const double want = in.has_sink ? static_cast<double>(in.sink) : -kInf;
    if (has_lse && !equal_or_both_nan(lse, want))  // by value: a sink of −0 gives LSE −0 + log1p(0) = +0
      fail("no visible key: LSE = " + num(lse) + ", expected " + num(want) + " (the sink, or -inf)");
    return;
  }
  if (risk) return;  // only the regimes survive an overflow in Acc; too loose to check here
  if (any_nan) {
    expect_all_nan("NaN score or sink");
    if (has_lse && !std::isnan(lse)) fail("NaN score or sink: LSE = " + num(lse) + ", expected NaN");
    return;
  }
  if (any_pos_inf) {
    expect_all_nan("+inf score or sink (saturated)");
    if (has_lse && lse != kInf) fail("saturated: LSE = " + num(lse) + ", expected +inf");
    return;
  }
  // Columns where a visible V value is not finite: its term is formed (0·inf = NaN), so O is not finite there.
  std::vector<bool> bad_col(D, false);
  std::vector<LD> vmax(D, 0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t x = 0; x < D; ++x) {
      const LD vv = in.v[j * D + x];
      if (!std::isfinite(vv))
        bad_col[x] = true;
      else
        vmax[x] = std::max(vmax[x], std::fabs(vv));
    }
  for (std::int64_t x = 0; x < D; ++x) {
    if (bad_col[x] && std::isfinite(o[x]))
      fail("O[" + std::to_string(x) + "] = " + num(o[x]) +
           " is finite although a visible V value in its column is not");
    if (!bad_col[x] && n * vmax[x] > A.max / 4) return;  // the un-normalised sum may overflow in Acc
  }
  if (all_neg_inf) {  // every score −inf (inf in q or k), no sink mass: the empty state
    for (std::int64_t x = 0; x < D; ++x)
      if (!bad_col[x] && o[x] != 0)
        fail("every score -inf: O[" + std::to_string(x) + "] = " + num(o[x]) + ", expected 0");
    const double want = in.has_sink ? static_cast<double>(in.sink) : -kInf;
    if (has_lse && lse != want) fail("every score -inf: LSE = " + num(lse) + ", expected " + num(want));
    return;
  }
  // The finite regime.
  LD m = in.has_sink ? in.sink : -INFINITY;
  for (std::int64_t j = 0; j < n; ++j) m = std::max(m, s[j]);
  std::vector<LD> e(n);
  LD l = in.has_sink ? std::exp(in.sink - m) : 0;
  for (std::int64_t j = 0; j < n; ++j) l += (e[j] = std::exp(s[j] - m));
  const LD want_lse = m + std::log(l);
  const std::int64_t blocks = (n + 255) / 256;
  const LD c_pv = 40 + n + 16 * (blocks + 1);
  const bool round_o = O.u > A.u, round_l = Ls.u > A.u;
  for (std::int64_t x = 0; x < D; ++x) {
    if (bad_col[x]) continue;
    LD want = 0, pabs = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      want += e[j] / l * in.v[j * D + x];
      pabs += e[j] / l * std::fabs(in.v[j * D + x]);
    }
    // (pabs = 0: every visible V in this column is 0, whatever the scores; inf · 0 would make the gate NaN)
    LD gate = pabs == 0 ? 0 : (std::expm1(2 * delta) + c_pv * A.u) * pabs;
    gate += (n + 8) * (n + 8) * A.tiny * (1 + vmax[x]);
    if (round_o) gate += O.u * (std::fabs(want) + gate) + O.tiny;
    const LD got = o[x];
    if (std::isinf(got) && std::fabs(want) + gate >= O.max && (got > 0) == (want > 0)) continue;  // rounds past max
    if (!(std::fabs(got - want) <= gate))
      fail("O[" + std::to_string(x) + "] = " + num(got) + ", expected " + num(want) + " within " + num(gate) +
           " (scores moved by up to " + num(delta) + ")");
  }
  if (has_lse) {
    const LD L = std::ceil(std::log2(static_cast<LD>(n + in.has_sink)));
    LD gate = delta +
              (std::fabs(want_lse) + L + 10 + 3 * std::log(static_cast<LD>(n + in.has_sink)) + 8 * (blocks + 1)) * A.u +
              (n + 8) * A.tiny;
    if (round_l) gate += Ls.u * (std::fabs(want_lse) + gate);
    const bool past_max = std::isinf(lse) && std::fabs(want_lse) + gate >= Ls.max && (lse > 0) == (want_lse > 0);
    if (!past_max && !(std::fabs(lse - want_lse) <= gate))
      fail("LSE = " + num(lse) + ", expected " + num(want_lse) + " within " + num(gate));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running a call: poisons the outputs, restores the inputs, calls, and checks what an accepted or rejected call
// may have written.
struct Call {
  std::vector<Tensor*> inputs, outputs;
  std::string op;
  const char* arg = nullptr;  // the argument a defect makes invalid; null for a valid call
  std::function<void()> fn;

  // Returns true when the call was accepted (and must have been).
  bool run(unsigned char poison) {
    for (Tensor* t : outputs) t->buf.assign(t->buf.size(), poison);
    for (Tensor* t : inputs) t->buf = t->orig;
    try {
      fn();
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (!arg) violation("a valid call threw: " + msg);
      if (e.code() != ErrorCode::invalid_argument) violation("wrong error code for an invalid call: " + msg);
      const std::string want = op + ": argument '" + arg + "'";
      if (msg.rfind(want, 0) != 0) violation("the message does not begin with \"" + want + "\": " + msg);
      for (Tensor* t : inputs)
        if (t->buf != t->orig) violation(std::string("a rejected call wrote into input ") + t->name + ": " + msg);
      for (Tensor* t : outputs)
        for (unsigned char b : t->buf)
          if (b != poison) violation(std::string("a rejected call wrote its output ") + t->name + ": " + msg);
      ++stats.rejected;
      return false;
    } catch (const std::exception& e) {
      violation(std::string("a non-smk exception escaped: ") + e.what());
    }
    if (arg) violation(std::string("an invalid call was accepted (expected an error naming '") + arg + "')");
    for (Tensor* t : inputs)
      if (t->buf != t->orig) violation(std::string("a valid call wrote into input ") + t->name);
    for (Tensor* t : outputs) {
      const auto in = t->inside();
      for (std::size_t i = 0; i < t->buf.size(); ++i)
        if (!in[i] && t->buf[i] != poison)
          violation(std::string("a valid call wrote outside output ") + t->name + " (byte " + std::to_string(i) + ")");
    }
    return true;
  }
  // A valid call twice over two poisons: the same bits, so every output element was written, deterministically.
  void run_twice() {
    run(0xFF);
    std::vector<std::vector<unsigned char>> first;
    for (Tensor* t : outputs) first.push_back(t->buf);
    run(0x55);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const auto in = outputs[k]->inside();
      for (std::size_t i = 0; i < first[k].size(); ++i)
        if (in[i] && first[k][i] != outputs[k]->buf[i])
          violation(std::string("output ") + outputs[k]->name +
                    " differs between two runs over different poisons "
                    "(an element left unwritten, or nondeterminism), byte " +
                    std::to_string(i));
    }
  }
};

void finalize_input(Tensor& t) { t.orig = t.buf; }

// Which overload: the public entry, the CPU float path, the float64 reference.
enum class Path { pub, cpu, ref };
std::string op_name(Path p, const char* base) {
  return p == Path::pub ? base
                        : (p == Path::cpu ? std::string("cpu::") + base : std::string("cpu::reference::") + base);
}
DType acc_of(Path p, DType q) { return p == Path::ref || q == DType::f64 ? DType::f64 : DType::f32; }

float pick_scale(Reader& r) {
  const float s[] = {0.0f, 0.0f, 0.0f, 1.0f, 0.5f, -0.3f, 2.0f, 1e-3f, 30.0f, -1.0f, 0.125f, 1e20f, -0.0f};
  return s[r.below(sizeof s / sizeof s[0])];
}
double pick_sink(Reader& r) {
  const double s[] = {0, -1, 2, 5, -30, kInf, -kInf, kNaN, 1e30, -1e30, 88, 100, 1e-3};
  return r.chance(2) ? s[r.below(sizeof s / sizeof s[0])] : value(r);
}
const float kBadScales[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};

// Shrinks sequence lengths until B·Hq·D·Sq·Sk (the work, and the oracle's) stays small: each input well under 10 ms
// under ASan.
constexpr std::int64_t kMaxWork = 1 << 15;
constexpr std::int64_t kMaxElements = 4096;  // of any one tensor, counting an empty dimension as 1

}  // namespace

// The three ops, each building its case from the reader.
namespace {

std::vector<std::int32_t> offsets_of(const std::vector<std::int64_t>& lens) {
  std::vector<std::int32_t> cu(1, 0);
  for (auto n : lens) cu.push_back(cu.back() + static_cast<std::int32_t>(n));
  return cu;
}

Tensor make_i32(Reader& r, const char* name, const std::vector<std::int32_t>& vals) {
  Tensor t;
  t.name = name;
  t.dtype = DType::i32;
  t.shape = {static_cast<std::int64_t>(vals.size())};
  t.strides = {r.chance(4) ? 2 : 1};
  t.offset = r.below(2);
  t.allocate(0xAB);
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const std::int32_t v = vals[i];
    std::memcpy(t.buf.data() + (t.offset + static_cast<std::int64_t>(i) * t.strides[0]) * 4, &v, 4);
  }
  return t;
}

// Defects for attention_forward / attention_decode.
enum class AttnDefect {
  none,
  q_rank,
  gqa,
  k_dtype,
  v_shape,
  head_dim,
  out_shape,
  out_dtype,
  lse_shape,
  lse_dtype,
  neg_stride,
  null_q,
  out_self_overlap,
  out_overlaps_input,
  lse_overlaps_out,
  bad_scale,
  sinks_shape,
  sinks_dtype,
  batch,
  q_dtype,
  // forward, varlen only
  cu_missing,
  cu_dtype,
  cu_nonmonotone,
  cu_first,
  cu_range,
  cu_shape,
  // decode only
  seqlen_over,
  seqlen_negative,
  seqlens_dtype,
  seqlens_shape,
  new_tokens,
  // an option's view (sinks, cu_seqlens, seqlens) inside out's bytes: semantics §4
  out_overlaps_option,
  count
};

void fuzz_attention(Reader& r, bool decode) {
  const Path path = static_cast<Path>(r.below(3));
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  const DType dt = dtypes[r.below(4)];
  const bool varlen = !decode && r.below(4) == 3;
  std::int64_t B = r.below(10) == 9 ? 0 : 1 + r.below(3);
  const std::int64_t hkv = 1 + r.below(3), hq = hkv * (1 + r.below(3));
  std::int64_t D = r.below(8) == 7 ? (r.chance(2) ? 64 : 128) : 1 + r.below(r.chance(3) ? 24 : 8);
  std::int64_t sq = decode ? 1 + r.below(8) : (r.below(8) == 7 ? 0 : 1 + r.below(r.chance(4) ? 40 : 9));
  std::int64_t sk = r.below(8) == 7 ? 0 : 1 + r.below(r.chance(4) ? 300 : 9);
  std::vector<std::int64_t> qlens, klens;  // varlen: per sequence
  if (varlen) {
    for (std::int64_t b = 0; b < B; ++b) {
      qlens.push_back(r.below(6) == 5 ? 0 : 1 + r.below(sq + 1));
      klens.push_back(r.below(6) == 5 ? 0 : 1 + r.below(sk + 1));
    }
  }
  // Caps (an empty dimension counted as 1): the work of the call and the size of each tensor.
  const auto work = [&] {
    std::int64_t tq = 0, tk = 0, w = 0;
    if (varlen) {
      for (std::size_t b = 0; b < qlens.size(); ++b) {
        w += std::max<std::int64_t>(qlens[b], 1) * std::max<std::int64_t>(klens[b], 1);
        tq += qlens[b];
        tk += klens[b];
      }
      return std::max(w * hq * D, std::max(tq, tk) * hq * D);
    }
    return std::max<std::int64_t>(B, 1) * hq * D * std::max<std::int64_t>(sq, 1) * std::max<std::int64_t>(sk, 1);
  };
  while (work() > kMaxWork || std::max<std::int64_t>(B, 1) * hq * D * std::max(sq, sk) > kMaxElements) {
    if (D > 8)
      D = 8;
    else if (sk > 1 && sk >= sq)
      sk /= 2;
    else if (sq > 1 && !decode)
      sq /= 2;
    else if (sk > 1)
      sk /= 2;
    else
      break;
    for (auto& x : klens) x = std::min(x, sk);
    for (auto& x : qlens) x = std::min(x, std::max<std::int64_t>(sq, 1));
  }
  const bool causal = r.chance(2);
  const float scale = pick_scale(r);
  const bool with_sinks = r.chance(3);
  const bool with_lse = r.below(5) != 4;

  AttnDefect defect = r.below(4) == 3 ? static_cast<AttnDefect>(1 + r.below(static_cast<int>(AttnDefect::count) - 1))
                                      : AttnDefect::none;
  const char* arg = nullptr;
  const char* kname = decode ? "k_cache" : "k";
  const char* vname = decode ? "v_cache" : "v";

  // Shapes.
  std::int64_t total_q = 0, total_k = 0, pad_k = 0;
  if (varlen) {
    for (auto x : qlens) total_q += x;
    for (auto x : klens) total_k += x;
    pad_k = r.chance(3) ? r.below(3) : 0;  // trailing key rows no sequence owns: never read
  }
  std::vector<std::int64_t> qshape =
      varlen ? std::vector<std::int64_t>{total_q, hq, D} : std::vector<std::int64_t>{B, sq, hq, D};
  std::vector<std::int64_t> kshape =
      varlen ? std::vector<std::int64_t>{total_k + pad_k, hkv, D} : std::vector<std::int64_t>{B, sk, hkv, D};
  std::vector<std::int64_t> lshape =
      varlen ? std::vector<std::int64_t>{hq, total_q} : std::vector<std::int64_t>{B, hq, sq};
  Tensor q = make(r, "q", dt, qshape), k = make(r, kname, dt, kshape), v = make(r, vname, dt, kshape);
  Tensor out = make(r, "out", dt, qshape), lse = make(r, "lse", stat_dtype(dt), lshape);
  Tensor sinks = make(r, "options.sinks", stat_dtype(dt), {hq});
  std::vector<std::int64_t> seqlen_vals(decode ? B : 0);
  for (auto& n : seqlen_vals) {
    const std::uint32_t c = r.below(4);
    n = c == 0 ? 0 : (c == 1 ? std::min<std::int64_t>(1, sk) : (c == 2 ? sk : r.below(sk + 1)));
  }
  // Which argument is defective, and how (shapes and dtypes before allocation).
  bool q_dtype_bad = false;
  switch (defect) {
    case AttnDefect::q_rank:
      q.shape.push_back(1);
      q.strides.push_back(1);
      arg = "q";
      break;
    case AttnDefect::gqa:
      // Hq a multiple of Hkv no more: one more KV head than divides.
      k.shape[varlen ? 1 : 2] = hq + 1;
      v.shape = k.shape;
      k.strides = random_strides(r, k.shape);
      v.strides = random_strides(r, v.shape);
      arg = kname;
      break;
    case AttnDefect::k_dtype:
      k.dtype = dt == DType::f32 ? DType::f16 : DType::f32;
      arg = kname;
      break;
    case AttnDefect::v_shape:
      v.shape.back() += 1;
      v.strides = random_strides(r, v.shape);
      arg = vname;
      break;
    case AttnDefect::head_dim:
      k.shape.back() += 1;
      v.shape.back() += 1;
      k.strides = random_strides(r, k.shape);
      v.strides = random_strides(r, v.shape);
      arg = kname;
      break;
    case AttnDefect::out_shape:
      out.shape[0] += 1;
      out.strides = random_strides(r, out.shape);
      arg = "out";
      break;
    case AttnDefect::out_dtype:
      out.dtype = dt == DType::f64 ? DType::f32 : DType::f64;
      arg = "out";
      break;
    case AttnDefect::lse_shape:
      if (!with_lse) break;
      lse.shape.back() += 1;
      lse.strides = random_strides(r, lse.shape);
      arg = "lse";
      break;
    case AttnDefect::lse_dtype:
      if (!with_lse) break;
      lse.dtype = dt == DType::f64 ? DType::f32 : DType::f16;
      arg = "lse";
      break;
    case AttnDefect::neg_stride: {
      Tensor* ts[] = {&q, &k, &v};
      Tensor* t = ts[r.below(3)];
      t->strides[r.below(static_cast<std::uint32_t>(t->shape.size()))] = -1;
      arg = t->name;
      break;
    }
    case AttnDefect::null_q:
      if (q.numel() == 0) break;
      q.null_data = true;
      arg = "q";
      break;
    case AttnDefect::out_self_overlap:
      if (out.numel() == 0) break;
      for (std::size_t d = 0; d < out.shape.size(); ++d)
        if (out.shape[d] > 1) {
          out.strides[d] = 0;
          arg = "out";
          break;
        }
      break;
    case AttnDefect::out_overlaps_input:
    case AttnDefect::lse_overlaps_out:
      break;  // after allocation
    case AttnDefect::bad_scale:
      break;
    case AttnDefect::sinks_shape:
      if (!with_sinks) break;
      sinks.shape[0] += 1;
      arg = "options.sinks";
      break;
    case AttnDefect::sinks_dtype:
      if (!with_sinks) break;
      sinks.dtype = dt == DType::f64 ? DType::f32 : DType::f64;
      arg = "options.sinks";
      break;
    case AttnDefect::batch:
      if (varlen) break;
      k.shape[0] += 1;
      v.shape[0] += 1;
      k.strides = random_strides(r, k.shape);
      v.strides = random_strides(r, v.shape);
      arg = kname;
      break;
    case AttnDefect::q_dtype:
      q_dtype_bad = true;
      arg = "q";
      break;
    case AttnDefect::new_tokens:
      if (!decode) break;
      q.shape[1] = r.chance(2) ? 0 : 9 + r.below(3);
      out.shape = q.shape;
      if (with_lse) lse.shape[2] = q.shape[1];
      q.strides = random_strides(r, q.shape);
      out.strides = random_strides(r, out.shape);
      lse.strides = random_strides(r, lse.shape);
      arg = "q";
      break;
    default:
      break;
  }
  if (q_dtype_bad) {  // i32 for every tensor that follows q's dtype, so q is the first argument at fault
    for (Tensor* t : {&q, &k, &v, &out}) t->dtype = DType::i32;
  }
  for (Tensor* t : {&q, &k, &v, &sinks}) {
    t->allocate(0xFF);
    if (!q_dtype_bad && t->dtype != DType::i32) {
      bool neg = false;
      for (auto s : t->strides) neg = neg || s < 0;
      if (!neg) fill(r, *t);
    }
  }
  if (with_sinks && r.chance(2))  // the interesting sink values more often than the ordinary ones
    for (std::int64_t h = 0; h < sinks.shape[0] && sinks.dtype != DType::i32; ++h)
      sinks.set(sinks.at({h}), pick_sink(r));
  out.allocate(0);
  lse.allocate(0);

  // NaN planted where no row may look: decode rows past a length, or one key row in the causal future.
  std::vector<std::int32_t> seqlens32(seqlen_vals.begin(), seqlen_vals.end());
  if (decode && !q_dtype_bad && defect != AttnDefect::neg_stride && r.chance(2)) {
    for (std::int64_t b = 0; b < B && b < k.shape[0]; ++b)
      for (std::int64_t j = seqlen_vals[b]; j < k.shape[1]; ++j)
        for (std::int64_t h = 0; h < k.shape[2]; ++h)
          for (std::int64_t x = 0; x < k.shape[3]; ++x) {
            k.set(k.at({b, j, h, x}), kNaN);
            v.set(v.at({b, j, h, x}), r.chance(2) ? kNaN : kInf);
          }
  }
  if (!decode && !varlen && causal && sk > 1 && k.shape.size() == 4 && !q_dtype_bad &&
      defect != AttnDefect::neg_stride && r.chance(2)) {  // a key row in the causal future of the rows before it
    const std::int64_t j = 1 + r.below(static_cast<std::uint32_t>(std::min<std::int64_t>(sk, k.shape[1]) - 1));
    for (std::int64_t b = 0; b < k.shape[0]; ++b)
      for (std::int64_t h = 0; h < k.shape[2]; ++h)
        for (std::int64_t x = 0; x < k.shape[3]; ++x) {
          k.set(k.at({b, j, h, x}), kNaN);
          v.set(v.at({b, j, h, x}), r.chance(2) ? kNaN : -kInf);
        }
  }
  if (varlen && !q_dtype_bad && defect != AttnDefect::neg_stride)
    for (std::int64_t j = total_k; j < k.shape[0]; ++j)
      for (std::int64_t h = 0; h < k.shape[1]; ++h)
        for (std::int64_t x = 0; x < k.shape[2]; ++x) {
          k.set(k.at({j, h, x}), kNaN);
          v.set(v.at({j, h, x}), kNaN);
        }

  // Varlen offsets and decode lengths, and their defects.
  std::vector<std::int32_t> cuq = offsets_of(qlens), cuk = offsets_of(klens);
  bool cu_k_missing = false, cu_q_missing = false, cu_i64 = false;
  switch (defect) {
    case AttnDefect::cu_missing:
      if (!varlen) break;
      (r.chance(2) ? cu_q_missing : cu_k_missing) = true;
      arg = cu_q_missing ? "options.cu_seqlens_q" : "options.cu_seqlens_k";
      // the set one is the other: the message names the one that is missing
      break;
    case AttnDefect::cu_dtype:
      if (!varlen) break;
      cu_i64 = true;
      arg = "options.cu_seqlens_q";
      break;
    case AttnDefect::cu_nonmonotone:
      if (!varlen || B < 2 || cuk[1] == 0) break;
      cuk[2] = cuk[1] - 1;  // decreases
      arg = "options.cu_seqlens_k";
      break;
    case AttnDefect::cu_first:
      cuq[0] = 1;
      arg = varlen ? "options.cu_seqlens_q" : nullptr;
      break;
    case AttnDefect::cu_range:
      if (!varlen || B < 1) break;
      cuk[B] = static_cast<std::int32_t>(k.shape[0] + 1 + r.below(1000));
      arg = "options.cu_seqlens_k";
      break;
    case AttnDefect::cu_shape:
      if (!varlen) break;
      cuk.push_back(cuk.back());
      arg = "options.cu_seqlens_k";
      break;
    case AttnDefect::seqlen_over:
      if (!decode || B == 0) break;
      seqlens32[r.below(static_cast<std::uint32_t>(B))] = static_cast<std::int32_t>(sk + 1 + r.below(5));
      arg = "seqlens";
      break;
    case AttnDefect::seqlen_negative:
      if (!decode || B == 0) break;
      seqlens32[r.below(static_cast<std::uint32_t>(B))] = -1 - static_cast<std::int32_t>(r.below(3));
      arg = "seqlens";
      break;
    case AttnDefect::seqlens_shape:
      if (!decode) break;
      seqlens32.push_back(0);
      arg = "seqlens";
      break;
    case AttnDefect::seqlens_dtype:
      if (!decode) break;
      arg = "seqlens";
      break;
    default:
      break;
  }
  Tensor cu_q = make_i32(r, "options.cu_seqlens_q", cuq), cu_k = make_i32(r, "options.cu_seqlens_k", cuk);
  Tensor seqlens = make_i32(r, "seqlens", seqlens32);
  if (cu_i64) cu_q.dtype = DType::i64, cu_q.shape[0] = (cu_q.shape[0] + 1) / 2, cu_q.strides[0] = 1;
  if (defect == AttnDefect::seqlens_dtype && decode) seqlens.dtype = DType::f32;

  AttentionOptions fo;
  AttentionDecodeOptions dopt;
  fo.scale = dopt.scale = scale;
  fo.causal = dopt.causal = causal;
  if (defect == AttnDefect::bad_scale) {
    fo.scale = dopt.scale = kBadScales[r.below(3)];
    arg = "options.scale";
  }
  TensorView sinks_view = with_sinks ? sinks.view() : TensorView{};
  fo.sinks = dopt.sinks = sinks_view;
  if (varlen) {
    if (!cu_q_missing) fo.cu_seqlens_q = cu_q.view();
    if (!cu_k_missing) fo.cu_seqlens_k = cu_k.view();
  }
  // An empty tensor may have null data (check_view accepts it): no path may form an offset from its pointer. (Not
  // lse: a null lse is no lse.)
  for (Tensor* t : {&q, &k, &v, &out})
    if (t->numel() == 0 && r.chance(2)) t->null_data = true;
  TensorView ov = out.view(), lv = with_lse ? lse.view() : TensorView{};
  if (defect == AttnDefect::out_overlaps_input && out.numel() > 0) {
    // out over q's or k's bytes, one element on: a partial overlap when the input spans two elements or more.
    Tensor* in = r.chance(2) ? &k : &q;
    if (in->extent() - in->offset >= 2 && !q_dtype_bad) {  // out starts inside the input's span
      ov.data = in->buf.data() + (in->offset + 1) * in->size();
      // only valid if out's extent fits in the input's buffer; otherwise keep the defect out
      if ((out.extent() - out.offset + in->offset + 1) * out.size() <= static_cast<std::int64_t>(in->buf.size()))
        arg = "out";
      else
        ov = out.view();
    }
  }
  if (defect == AttnDefect::lse_overlaps_out && with_lse && lse.numel() > 0 && out.numel() > 0 &&
      lse.size() <= out.size() &&
      (lse.extent() - lse.offset + 1) * lse.size() <= static_cast<std::int64_t>(out.buf.size())) {
    lv.data = out.buf.data() + out.offset * out.size();  // over out's first elements: a partial overlap
    arg = "lse";
  }
  TensorView seqlens_view = seqlens.view();
  if (defect == AttnDefect::out_overlaps_option && out.numel() > 0 && !q_dtype_bad) {
    // Reads an input from bytes the call writes: rejected, naming out (semantics §4: any overlap of an output with
    // an input other than an exact in-place alias).
    unsigned char* at = out.buf.data() + out.offset * out.size();
    const std::int64_t room = static_cast<std::int64_t>(out.buf.size()) - out.offset * out.size();
    const std::uint32_t which = r.below(3);
    if (which == 0 && with_sinks && sinks.numel() * sinks.size() <= room && sinks.strides[0] == 1) {
      fo.sinks.data = dopt.sinks.data = at;
      arg = "out";
    } else if (which == 1 && varlen && cu_q.shape[0] * 4 <= room && cu_q.strides[0] == 1) {
      fo.cu_seqlens_q.data = at;
      arg = "out";
    } else if (which == 2 && decode && seqlens.shape[0] * 4 <= room && seqlens.strides[0] == 1) {
      seqlens_view.data = at;
      arg = "out";
    }
  }
  if (!arg) defect = AttnDefect::none;

  const std::string op = op_name(path, decode ? "attention_decode" : "attention_forward");
  g_case = op + " " + describe(q) + "; " + describe(k) + "; " + describe(v) + "; " + describe(out) +
           (with_lse ? "; " + describe(lse) : std::string("; no lse")) + "; causal " + std::to_string(causal) +
           " scale " + num(fo.scale) + (with_sinks ? " sinks" : "") + (varlen ? " varlen" : "") + " defect " +
           std::to_string(static_cast<int>(defect));

  for (Tensor* t : {&q, &k, &v, &sinks, &cu_q, &cu_k, &seqlens}) finalize_input(*t);
  Call call;
  call.inputs = {&q, &k, &v, &sinks, &cu_q, &cu_k, &seqlens};
  call.outputs = {&out};
  if (with_lse) call.outputs.push_back(&lse);
  call.op = op;
  call.arg = arg;
  const TensorView qv = q.view(), kv = k.view(), vv = v.view(), sv = seqlens_view;
  call.fn = [&] {
    if (decode) {
      if (path == Path::pub)
        attention_decode(ov, lv, qv, kv, vv, sv, dopt);
      else if (path == Path::cpu)
        cpu::attention_decode(ov, lv, qv, kv, vv, sv, dopt);
      else
        cpu::reference::attention_decode(ov, lv, qv, kv, vv, sv, dopt);
    } else {
      if (path == Path::pub)
        attention_forward(ov, lv, qv, kv, vv, fo);
      else if (path == Path::cpu)
        cpu::attention_forward(ov, lv, qv, kv, vv, fo);
      else
        cpu::reference::attention_forward(ov, lv, qv, kv, vv, fo);
    }
  };
  if (arg) {
    call.run(0x55);
    return;
  }
  call.run_twice();  // the second run's outputs (over poison 0x55) are checked below

  // The oracle, row by row.
  Ctx c{dt, stat_dtype(dt), acc_of(path, dt),
        scale != 0 ? static_cast<LD>(scale) : 1.0L / std::sqrt(static_cast<LD>(D)), D};
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t q0 = varlen ? cuq[b] : 0, k0 = varlen ? cuk[b] : 0;
    const std::int64_t nq = varlen ? qlens[b] : sq;
    const std::int64_t nk = decode ? seqlen_vals[b] : (varlen ? klens[b] : sk);
    for (std::int64_t h = 0; h < hq; ++h) {
      const std::int64_t hk = h / (hq / hkv);
      for (std::int64_t i = 0; i < nq; ++i) {
        const std::int64_t visible = causal ? std::max<std::int64_t>(0, std::min(nk, i + (nk - nq) + 1)) : nk;
        RowIn in;
        in.n = visible;
        in.q.resize(D);
        in.k.resize(visible * D);
        in.v.resize(visible * D);
        std::vector<double> o(D);
        for (std::int64_t x = 0; x < D; ++x) {
          in.q[x] = varlen ? q.get(q.at({q0 + i, h, x})) : q.get(q.at({b, i, h, x}));
          o[x] = varlen ? out.get(out.at({q0 + i, h, x})) : out.get(out.at({b, i, h, x}));
          for (std::int64_t j = 0; j < visible; ++j) {
            in.k[j * D + x] = varlen ? k.get(k.at({k0 + j, hk, x})) : k.get(k.at({b, j, hk, x}));
            in.v[j * D + x] = varlen ? v.get(v.at({k0 + j, hk, x})) : v.get(v.at({b, j, hk, x}));
          }
        }
        if (with_sinks) {
          in.has_sink = true;
          in.sink = sinks.get(sinks.at({h}));
        }
        const double l = with_lse ? (varlen ? lse.get(lse.at({h, q0 + i})) : lse.get(lse.at({b, h, i}))) : 0;
        check_row(c, in, o, with_lse, l,
                  "row b=" + std::to_string(b) + " h=" + std::to_string(h) + " i=" + std::to_string(i) + " (" +
                      std::to_string(visible) + " visible keys)");
        ++stats.rows;
      }
    }
  }
  ++stats.valid;
  ++stats.valid_op[decode ? 1 : 0];
}

// ---------------------------------------------------------------------------------------------------------------
// merge_attention_states against the header's two-state formula in long double: L = log(e^La + e^Lb),
// O = e^(La − L)·O_a + e^(Lb − L)·O_b. An empty part (LSE −inf) is the identity (weight 1 and l = 1: the other
// part's LSE and O come back by value: −0 may come back +0); two empty parts give O = 0, LSE = −inf; NaN in either
// LSE gives NaN; a +inf LSE (saturated, semantics §2) gives O = NaN and LSE = +inf.
// Gates for two finite parts (Acc's u and τ; O_a, O_b and the LSEs exact): the weights e^(L − M) by exp_diff (5u
// each), the two products and the sum (3), l = 1 + d (a product and an add, 2, and exp_diff's 5 inside d), 1/l and
// the product (2):
//   |Ô − O| ≤ 20u·(w_a|O_a| + w_b|O_b|) + 4τ·(2 + |O_a| + |O_b|)   (τ: a weight, or a product, below Acc's
//   normal range),
// plus the store's rounding when O's type is coarser than Acc. LSE = M + log1p(d): d's 6u weighted by d/l ≤ 1/2,
// log1p's 2u·ln 2 and the final add: |L̂ − L| ≤ (|L| + 10)·u, plus the f32 store's rounding from a double Acc.
// Parts whose |O_a| + |O_b| is within a factor 2 of Acc's largest value may overflow the sum and are not checked.
enum class MergeDefect {
  none,
  o_b_shape,
  out_o_shape,
  lse_a_shape,
  lse_b_shape,
  out_lse_shape,
  out_lse_dtype,
  o_a_dtype,
  out_o_dtype,
  out_o_partial,
  out_o_self_overlap,
  neg_stride,
  o_a_rank0,
  out_lse_overlaps_out_o,
  count
};

double pick_lse(Reader& r) {
  switch (r.below(16)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return -kInf;
    case 4:
      return kNaN;
    case 5:
      return kInf;
    case 6: {
      const double big[] = {1e30, -1e30, 88.7, -103.9, 1e-30, 745, -745, 3e38};
      return big[r.below(8)];
    }
    case 7:
      return static_cast<double>(r.f32());
    default:
      return (static_cast<double>(r.below(4001)) - 2000) / 40;  // [-50, 50]: weights from 1 to e^-100
  }
}

void fuzz_merge(Reader& r) {
  const Path path = static_cast<Path>(r.below(3));
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  const DType dt = dtypes[r.below(4)];
  const int rank = 1 + static_cast<int>(r.below(4));
  std::vector<std::int64_t> shape(rank);
  std::int64_t cap = 1;
  for (int d = 0; d < rank; ++d) {
    if (d == rank - 1)
      shape[d] = r.below(8) == 7 ? (r.chance(2) ? 64 : 128) : (r.below(12) == 11 ? 0 : 1 + r.below(9));
    else
      shape[d] = r.below(10) == 9 ? 0 : 1 + r.below(r.below(4) == 3 ? 40 : 5);
    if (cap * std::max<std::int64_t>(shape[d], 1) > kMaxElements) shape[d] = 1;
    cap *= std::max<std::int64_t>(shape[d], 1);
  }
  const std::vector<std::int64_t> lshape(shape.begin(), shape.end() - 1);
  const DType st = stat_dtype(dt);
  Tensor oa = make(r, "o_a", dt, shape), ob = make(r, "o_b", dt, shape), la = make(r, "lse_a", st, lshape),
         lb = make(r, "lse_b", st, lshape), oo = make(r, "out_o", dt, shape), lo = make(r, "out_lse", st, lshape);
  MergeDefect defect = r.below(4) == 3 ? static_cast<MergeDefect>(1 + r.below(static_cast<int>(MergeDefect::count) - 1))
                                       : MergeDefect::none;
  const char* arg = nullptr;
  const auto reshape = [&](Tensor& t, std::vector<std::int64_t> s) {
    t.shape = std::move(s);
    t.strides = random_strides(r, t.shape);
  };
  auto plus_one = [](std::vector<std::int64_t> s) {
    if (s.empty())
      s.push_back(2);
    else
      s.back() += 1;
    return s;
  };
  switch (defect) {
    case MergeDefect::o_b_shape:
      reshape(ob, plus_one(shape));
      arg = "o_b";
      break;
    case MergeDefect::out_o_shape:
      reshape(oo, plus_one(shape));
      arg = "out_o";
      break;
    case MergeDefect::lse_a_shape:
      reshape(la, plus_one(lshape));
      arg = "lse_a";
      break;
    case MergeDefect::lse_b_shape:
      reshape(lb, plus_one(lshape));
      arg = "lse_b";
      break;
    case MergeDefect::out_lse_shape:
      reshape(lo, plus_one(lshape));
      arg = "out_lse";
      break;
    case MergeDefect::out_lse_dtype:
      lo.dtype = dt == DType::f64 ? DType::f32 : DType::f16;
      arg = "out_lse";
      break;
    case MergeDefect::o_a_dtype:
      oa.dtype = DType::i32;
      arg = "o_a";
      break;
    case MergeDefect::out_o_dtype:
      oo.dtype = dt == DType::f64 ? DType::f32 : DType::f64;
      arg = "out_o";
      break;
    case MergeDefect::out_o_self_overlap:
      if (oo.numel() == 0) break;
      for (std::size_t d = 0; d < oo.shape.size(); ++d)
        if (oo.shape[d] > 1) {
          oo.strides[d] = 0;
          arg = "out_o";
          break;
        }
      break;
    case MergeDefect::neg_stride: {
      Tensor* ts[] = {&oa, &la, &ob, &lb};
      Tensor* t = ts[r.below(4)];
      if (t->shape.empty()) break;
      t->strides[r.below(static_cast<std::uint32_t>(t->shape.size()))] = -1;
      arg = t->name;
      break;
    }
    case MergeDefect::o_a_rank0:
      oa.shape.clear();
      oa.strides.clear();
      arg = "o_a";
      break;
    default:
      break;
  }
  for (Tensor* t : {&oa, &ob, &la, &lb}) {
    t->allocate(0xFF);
    bool neg = false;
    for (auto s : t->strides) neg = neg || s < 0;
    if (neg || t->dtype == DType::i32) continue;
    if (t == &la || t == &lb) {
      const std::int64_t n = t->numel();
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t o = t->offset, rest = i;
        for (int d = static_cast<int>(t->shape.size()) - 1; d >= 0; --d) {
          o += (rest % t->shape[d]) * t->strides[d];
          rest /= t->shape[d];
        }
        t->set(o, pick_lse(r));
      }
    } else {
      fill(r, *t);
    }
  }
  oo.allocate(0);
  lo.allocate(0);
  // In place: out_o over o_a or o_b exactly, out_lse over lse_a or lse_b (valid calls only).
  const std::uint32_t alias_o = defect == MergeDefect::none && r.chance(4) ? 1 + r.below(2) : 0;
  const std::uint32_t alias_l = defect == MergeDefect::none && r.chance(4) ? 1 + r.below(2) : 0;
  Tensor* in_o = alias_o == 1 ? &oa : (alias_o == 2 ? &ob : nullptr);
  Tensor* in_l = alias_l == 1 ? &la : (alias_l == 2 ? &lb : nullptr);
  for (Tensor* t : {&oa, &ob, &la, &lb, &oo, &lo})  // empty tensors with null data, as above
    if (t->numel() == 0 && r.chance(2)) t->null_data = true;
  TensorView oov = in_o ? in_o->view() : oo.view(), lov = in_l ? in_l->view() : lo.view();
  if (defect == MergeDefect::out_o_partial && oa.extent() - oa.offset >= 2 && oa.dtype == dt) {
    oov = oa.view();
    oov.data = static_cast<unsigned char*>(oov.data) + oa.size();  // one element on: a partial overlap
    Tensor probe = oa;
    probe.offset += 1;
    if (probe.extent() * oa.size() <= static_cast<std::int64_t>(oa.buf.size()))
      arg = "out_o";
    else
      oov = oo.view();
  }
  if (defect == MergeDefect::out_lse_overlaps_out_o && lo.numel() > 0 && oo.numel() > 0 &&
      (lo.extent() - lo.offset) * lo.size() <= static_cast<std::int64_t>(oo.buf.size()) - oo.offset * oo.size()) {
    lov.data = oo.buf.data() + oo.offset * oo.size();
    lov.dtype = lo.dtype;
    arg = "out_o";  // check_merge_args tests out_o against out_lse (and names out_o)
  }
  if (!arg) defect = MergeDefect::none;
  const std::string op = op_name(path, "merge_attention_states");
  g_case = op + " " + describe(oa) + "; " + describe(la) + "; " + describe(ob) + "; " + describe(lb) + "; " +
           describe(oo) + "; " + describe(lo) + " in place " + std::to_string(alias_o) + "/" + std::to_string(alias_l) +
           " defect " + std::to_string(static_cast<int>(defect));
  for (Tensor* t : {&oa, &ob, &la, &lb}) finalize_input(*t);

  const auto call_merge = [&](const TensorView& o_out, const TensorView& l_out, const TensorView& a,
                              const TensorView& al, const TensorView& b, const TensorView& bl) {
    if (path == Path::pub)
      merge_attention_states(o_out, l_out, a, al, b, bl);
    else if (path == Path::cpu)
      cpu::merge_attention_states(o_out, l_out, a, al, b, bl);
    else
      cpu::reference::merge_attention_states(o_out, l_out, a, al, b, bl);
  };
  const TensorView av = oa.view(), alv = la.view(), bv = ob.view(), blv = lb.view();
  Call call;
  call.op = op;
  call.arg = arg;
  call.fn = [&] { call_merge(oov, lov, av, alv, bv, blv); };
  if (arg || (!in_o && !in_l)) {
    call.inputs = {&oa, &ob, &la, &lb};
    call.outputs = {&oo, &lo};
    if (arg) {
      call.run(0x55);
      return;
    }
    call.run_twice();
  } else {
    // In place: the aliased inputs are outputs here; the others must stay as they were. Their bytes outside the
    // view must too.
    for (Tensor* t : {&oa, &ob, &la, &lb})
      if (t != in_o && t != in_l) call.inputs.push_back(t);
    if (!in_o) call.outputs.push_back(&oo);
    if (!in_l) call.outputs.push_back(&lo);
    call.run(0x55);
    for (Tensor* t : {in_o, in_l}) {
      if (!t) continue;
      const auto in = t->inside();
      for (std::size_t i = 0; i < t->buf.size(); ++i)
        if (!in[i] && t->buf[i] != t->orig[i]) violation(std::string("an in-place merge wrote outside ") + t->name);
    }
  }
  const Tensor& ro = in_o ? *in_o : oo;  // results
  const Tensor& rl = in_l ? *in_l : lo;
  // Commutativity: merge(b, a) into fresh outputs gives the same bits (NaN payloads aside).
  Tensor co = oo, cl = lo;
  co.buf.assign(co.buf.size(), 0x55);
  cl.buf.assign(cl.buf.size(), 0x55);
  {
    Tensor a0 = oa, b0 = ob, la0 = la, lb0 = lb;  // pristine inputs
    a0.buf = oa.orig, b0.buf = ob.orig, la0.buf = la.orig, lb0.buf = lb.orig;
    call_merge(co.view(), cl.view(), b0.view(), lb0.view(), a0.view(), la0.view());
  }

  const Fmt A = fmt(acc_of(path, dt)), O = fmt(dt), Ls = fmt(st);
  const bool round_o = O.u > A.u, round_l = Ls.u > A.u;
  const std::int64_t D = shape.back(), rows = la.numel();
  const auto orig = [](const Tensor& t, std::int64_t off) { return load(t.dtype, t.orig.data() + off * t.size()); };
  for (std::int64_t row = 0; row < rows; ++row) {
    std::vector<std::int64_t> idx(rank - 1);
    std::int64_t rest = row;
    for (int d = rank - 2; d >= 0; --d) {
      idx[d] = rest % lshape[d];
      rest /= lshape[d];
    }
    const auto off = [&](const Tensor& t, std::int64_t x) {
      std::int64_t o = t.offset;
      for (int d = 0; d < rank - 1; ++d) o += idx[d] * t.strides[d];
      if (x >= 0) o += x * t.strides[rank - 1];
      return o;
    };
    const LD La = orig(la, off(la, -1)), Lb = orig(lb, off(lb, -1));
    const double got_l = rl.get(off(rl, -1)), com_l = cl.get(off(cl, -1));
    const std::string where = "merged row " + std::to_string(row) + " (LSEs " + num(La) + ", " + num(Lb) + ")";
    const auto fail = [&](const std::string& what) { violation(where + ": " + what); };
    if (!same_bits_or_both_nan(got_l, com_l)) fail("merge(a, b) and merge(b, a) differ in LSE");
    for (std::int64_t x = 0; x < D; ++x)
      if (!same_bits_or_both_nan(ro.get(off(ro, x)), co.get(off(co, x))))
        fail("merge(a, b) and merge(b, a) differ in O[" + std::to_string(x) + "]");
    ++stats.merged;
    if (std::isnan(La) || std::isnan(Lb) || La == INFINITY || Lb == INFINITY) {
      const bool nan = std::isnan(La) || std::isnan(Lb);
      if (nan ? !std::isnan(got_l) : got_l != kInf)
        fail("LSE = " + num(got_l) + ", expected " + (nan ? "NaN" : "+inf"));
      for (std::int64_t x = 0; x < D; ++x)
        if (!std::isnan(ro.get(off(ro, x)))) fail("O[" + std::to_string(x) + "] is not NaN");
      continue;
    }
    if (La == -INFINITY && Lb == -INFINITY) {
      if (got_l != -kInf) fail("two empty parts: LSE = " + num(got_l) + ", expected -inf");
      for (std::int64_t x = 0; x < D; ++x)
        if (ro.get(off(ro, x)) != 0) fail("two empty parts: O[" + std::to_string(x) + "] is not 0");
      continue;
    }
    if (La == -INFINITY || Lb == -INFINITY) {  // the identity, by value (−0 may come back +0)
      const Tensor& keep_o = La == -INFINITY ? ob : oa;
      const LD keep_l = La == -INFINITY ? Lb : La;
      if (!equal_or_both_nan(got_l, static_cast<double>(keep_l)))
        fail("an empty part is not the identity: LSE = " + num(got_l) + ", expected " + num(keep_l));
      for (std::int64_t x = 0; x < D; ++x)
        if (!equal_or_both_nan(ro.get(off(ro, x)), orig(keep_o, off(keep_o, x))))
          fail("an empty part is not the identity: O[" + std::to_string(x) + "] = " + num(ro.get(off(ro, x))) +
               ", expected " + num(orig(keep_o, off(keep_o, x))));
      continue;
    }
    const LD M = std::max(La, Lb);
    // Weights relative to M (e^(La − L) would lose them where M + log l rounds to M, |M| > 2^64 or so).
    const LD ea = std::exp(La - M), eb = std::exp(Lb - M);
    const LD L = M + std::log(ea + eb);
    const LD wa = ea / (ea + eb), wb = eb / (ea + eb);
    LD gate_l = (std::fabs(L) + 10) * A.u;
    if (round_l) gate_l += Ls.u * (std::fabs(L) + gate_l);
    const bool past_max = std::isinf(got_l) && std::fabs(L) + gate_l >= Ls.max && (got_l > 0) == (L > 0);
    if (!past_max && !(std::fabs(got_l - L) <= gate_l))
      fail("LSE = " + num(got_l) + ", expected " + num(L) + " within " + num(gate_l));
    for (std::int64_t x = 0; x < D; ++x) {
      const LD va = orig(oa, off(oa, x)), vb = orig(ob, off(ob, x));
      const double got = ro.get(off(ro, x));
      if (!std::isfinite(va) || !std::isfinite(vb)) {  // a non-empty part's inf or NaN is never dropped
        if (std::isfinite(got))
          fail("O[" + std::to_string(x) + "] = " + num(got) + " is finite although a part's O there is " +
               num(std::isfinite(va) ? vb : va));
        continue;
      }
      if (std::fabs(va) + std::fabs(vb) > A.max / 2) continue;  // the weighted sum may overflow in Acc
      const LD want = wa * va + wb * vb;
      LD gate = 20 * A.u * (wa * std::fabs(va) + wb * std::fabs(vb)) +
                4 * A.tiny * (2 + std::fabs(va) + std::fabs(vb));
      if (round_o) gate += O.u * (std::fabs(want) + gate) + O.tiny;
      if (std::isinf(got) && std::fabs(want) + gate >= O.max && (got > 0) == (want > 0)) continue;
      if (!(std::fabs(got - want) <= gate))
        fail("O[" + std::to_string(x) + "] = " + num(got) + ", expected " + num(want) + " within " + num(gate));
    }
  }
  ++stats.valid;
  ++stats.valid_op[2];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  const std::uint32_t which = r.below(3);
  if (which == 0)
    fuzz_attention(r, false);
  else if (which == 1)
    fuzz_attention(r, true);
  else
    fuzz_merge(r);
  return 0;
}
