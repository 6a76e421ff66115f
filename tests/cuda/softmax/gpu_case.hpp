// Test support for the softmax family on the GPU: a case (shape, dim, dtypes, layouts, options), run on the
// device with its output poisoned first, and checked element by element against the CPU float64 reference
// (smk::cpu::reference on the inputs widened exactly to f64) with the accuracy gates of docs/semantics.md §6
// (L = ⌈log2 n⌉, D = L + 4 roundings in the row sum, u = 2^-24; the excess state adds up to 2 roundings to l and 1
// to log l):
//   f32 softmax       relative (18 + L)·u for p ≥ 1e-30, absolute (18 + L)·u·1e-30 below
//   f32 log-softmax   absolute (2|y| + L + 10 + 3 ln n)·u
//   f32 logsumexp     absolute (|LSE| + L + 10 + 3 ln n)·u;  the state: m bit for bit, l relative (L + 11 + ln n)·u
//                     (log l's terms: the subtraction's u·ln n; from 16-bit inputs also the product's 1.25u·ln n,
//                     numerics.hpp kLogTermProductU: 4.25 ln n and 2.25 ln n)
//   backward          u·(|y|·((D + 1)·Σ|dy·y| + |dy| + |s|) + 2|dx|) and u·(e^y·(D·Σ|dy| + 6|S|) + |dx|), + 2u·|dx|
//                     when T ≠ 1, + the f32 subnormal spacing
//   f16 / bf16        within 1 ulp of the correctly rounded reference (or the f32 bound plus half an ulp; 16-bit
//                     softmax's f32 bound gains (ln(1/p) + ln n)·u for its plain exponential, common.cuh out_exp)
// plus, with a temperature that does not divide exactly, the rounding of x / T (docs/semantics.md).
// The first proposal, (6 + log2 n)·u etc., is the design target the contract explains; not a gate here.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "conformance/numerics.hpp"
#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/split_row_tuning.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/cuda/softmax_path.hpp"
#include "softmaxkit/softmax.hpp"

namespace smk::gpu_test {

constexpr double kU = 5.9604644775390625e-8;  // 2^-24
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Op { softmax, log_softmax, logsumexp, state, softmax_backward, log_softmax_backward };
inline const char* op_name(Op op) {
  switch (op) {
    case Op::softmax: return "softmax";
    case Op::log_softmax: return "log_softmax";
    case Op::logsumexp: return "logsumexp";
    case Op::state: return "state";
    case Op::softmax_backward: return "softmax_backward";
    case Op::log_softmax_backward: return "log_softmax_backward";
  }
  return "?";
}
inline bool is_backward(Op op) { return op == Op::softmax_backward || op == Op::log_softmax_backward; }
inline bool is_row_op(Op op) { return op == Op::logsumexp || op == Op::state; }

// ---- storage --------------------------------------------------------------------------------------------------------

inline void encode(DType t, unsigned char* p, double v) {
  switch (t) {
    case DType::f32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::f64: std::memcpy(p, &v, 8); return;
    case DType::f16: { const half_t h = to_half(v); std::memcpy(p, &h, 2); return; }
    case DType::bf16: { const bfloat16_t b = to_bfloat16(v); std::memcpy(p, &b, 2); return; }
    case DType::b8: *p = v != 0 ? 1 : 0; return;
    default: return;
  }
}
inline double decode(DType t, const unsigned char* p) {
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::f16: { half_t h; std::memcpy(&h, p, 2); return to_float(h); }
    case DType::bf16: { bfloat16_t b; std::memcpy(&b, p, 2); return to_float(b); }
    case DType::b8: return *p ? 1 : 0;
    default: return 0;
  }
}
// Values exactly representable in `t` (so the reference sees exactly what the GPU reads).
inline double round_to(DType t, double v) {
  unsigned char b[8];
  encode(t, b, v);
  return decode(t, b);
}

// A strided tensor in a host byte buffer: logical row-major values <-> storage.
struct Layout {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements
  std::int64_t offset = 0;            // elements before the first one (unaligned bases)
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  std::int64_t extent() const {  // elements the buffer needs
    std::int64_t e = offset + 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) return offset;
      e += (shape[d] - 1) * strides[d];
    }
    return e;
  }
  std::int64_t storage_index(std::int64_t linear) const {
    std::int64_t off = offset;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      off += (linear % shape[d]) * strides[d];
      linear /= shape[d];
    }
    return off;
  }
  TensorView view(void* base, Device dev) const {
    TensorView v;
    v.data = static_cast<unsigned char*>(base) + offset * static_cast<std::int64_t>(dtype_size(dtype));
    v.dtype = dtype;
    v.device = dev;
    v.rank = static_cast<int>(shape.size());
    for (int d = 0; d < v.rank; ++d) {
      v.shape[d] = shape[d];
      v.strides[d] = strides[d];
    }
    return v;
  }
};
inline std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size());
  std::int64_t st = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    s[d] = st;
    st *= std::max<std::int64_t>(shape[d], 1);
  }
  return s;
}
inline Layout contiguous(DType t, std::vector<std::int64_t> shape, std::int64_t offset = 0) {
  Layout l;
  l.dtype = t;
  l.strides = contiguous_strides(shape);
  l.shape = std::move(shape);
  l.offset = offset;
  return l;
}

inline std::vector<unsigned char> pack(const Layout& l, const std::vector<double>& values, unsigned char fill) {
  const auto size = static_cast<std::int64_t>(dtype_size(l.dtype));
  std::vector<unsigned char> bytes(static_cast<std::size_t>(std::max<std::int64_t>(l.extent(), 1) * size), fill);
  for (std::int64_t i = 0; i < l.numel(); ++i) encode(l.dtype, bytes.data() + l.storage_index(i) * size, values[i]);
  return bytes;
}
inline std::vector<double> unpack(const Layout& l, const std::vector<unsigned char>& bytes) {
  const auto size = static_cast<std::int64_t>(dtype_size(l.dtype));
  std::vector<double> v(static_cast<std::size_t>(l.numel()));
  for (std::int64_t i = 0; i < l.numel(); ++i) v[i] = decode(l.dtype, bytes.data() + l.storage_index(i) * size);
  return v;
}

// ---- a case -----------------------------------------------------------------------------------------------------------

struct Case {
  std::string name;
  Op op = Op::softmax;
  int dim = -1;
  Layout in;                  // x, or y for the backward passes
  Layout out;                 // softmax-shaped output (unused for logsumexp / state: they are contiguous f32)
  std::vector<double> x;      // logical values of `in` (already representable in its dtype)
  std::vector<double> dy;     // backward: the upstream gradient (same layout and dtype as `in`)
  SoftmaxOptions options;     // mask / temperature_per_row views are filled in by run()
  std::vector<double> row_temperature;  // per-row temperatures (reduced shape, contiguous f32) when non-empty
  Layout mask;                          // mask layout when mask_values is non-empty
  std::vector<double> mask_values;
  bool in_place = false;
  bool exact_scaling = true;  // the temperature divides exactly (a power of two); else the gate widens
};

struct Result {
  bool ran = false;  // false: the forced path refused (Error(unsupported)); `reason` says why
  std::string reason;
  std::vector<double> out;          // logical values of the softmax-shaped output, or the per-row output
  std::vector<double> out2;         // the state's l
  std::vector<unsigned char> raw;   // the whole output buffer, poison included (for bitwise comparisons)
  bool stray_write = false;         // a byte outside the output's elements changed
};

inline std::vector<std::int64_t> reduced_shape(const std::vector<std::int64_t>& shape, int dim) {
  std::vector<std::int64_t> r;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != dim) r.push_back(shape[d]);
  return r;
}
inline int norm_dim(const Case& c) { return c.dim < 0 ? c.dim + static_cast<int>(c.in.shape.size()) : c.dim; }

// Runs the case on cuda:0 under `path`; the output buffer is filled with `poison` bytes first.
inline Result run_gpu(const Case& c, cuda::SoftmaxPath path, unsigned char poison = 0xFF) {
  using Buf = cuda::DeviceBuffer<unsigned char>;
  const Device dev = Device::cuda(0);
  Result r;
  const int dim = norm_dim(c);
  const Layout row_layout = contiguous(DType::f32, reduced_shape(c.in.shape, dim));
  // In place, the output is the input (forward) or dy (backward), which has in's layout.
  const Layout& out_layout = is_row_op(c.op) ? row_layout : (c.in_place ? c.in : c.out);
  Buf din = Buf::from_host(pack(c.in, c.x, 0x00));
  Buf ddy = is_backward(c.op) ? Buf::from_host(pack(c.in, c.dy, 0x00)) : Buf();
  const std::vector<unsigned char> poisoned = pack(out_layout, std::vector<double>(out_layout.numel(), 0), poison);
  std::vector<unsigned char> all_poison(poisoned.size(), poison);
  Buf dout = Buf::from_host(all_poison);
  Buf dout2 = Buf::from_host(all_poison);
  Buf dtemp, dmask;
  SoftmaxOptions opt = c.options;
  opt.dim = c.dim;
  if (!c.row_temperature.empty()) {
    dtemp = Buf::from_host(pack(row_layout, c.row_temperature, 0));
    opt.temperature_per_row = row_layout.view(dtemp.data(), dev);
  }
  if (!c.mask_values.empty()) {
    dmask = Buf::from_host(pack(c.mask, c.mask_values, 0));
    opt.mask = c.mask.view(dmask.data(), dev);
  }
  const TensorView in = c.in.view(din.data(), dev);
  try {
    cuda::ScopedSoftmaxPath force(path);
    switch (c.op) {
      case Op::softmax:
        softmax(c.in_place ? in : out_layout.view(dout.data(), dev), in, opt);
        break;
      case Op::log_softmax:
        log_softmax(c.in_place ? in : out_layout.view(dout.data(), dev), in, opt);
        break;
      case Op::logsumexp: logsumexp(out_layout.view(dout.data(), dev), in, opt); break;
      case Op::state:
        softmax_state(out_layout.view(dout.data(), dev), out_layout.view(dout2.data(), dev), in, opt);
        break;
      case Op::softmax_backward:
      case Op::log_softmax_backward: {
        const TensorView dyv = c.in.view(ddy.data(), dev);
        const TensorView dx = c.in_place ? dyv : out_layout.view(dout.data(), dev);
        if (c.op == Op::softmax_backward) softmax_backward(dx, in, dyv, opt);
        else log_softmax_backward(dx, in, dyv, opt);
        break;
      }
    }
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    r.reason = e.what();
    return r;
  }
  SMK_CUDA_CHECK(cudaDeviceSynchronize());
  r.ran = true;
  if (c.in_place) {
    r.raw = c.op == Op::softmax || c.op == Op::log_softmax ? din.to_host() : ddy.to_host();
    r.out = unpack(out_layout, r.raw);
    return r;
  }
  r.raw = dout.to_host();
  r.out = unpack(out_layout, r.raw);
  if (c.op == Op::state) r.out2 = unpack(out_layout, dout2.to_host());
  // Bytes outside the output's elements must still hold the poison.
  std::vector<unsigned char> mark(r.raw.size(), 0);
  const auto size = static_cast<std::int64_t>(dtype_size(out_layout.dtype));
  for (std::int64_t i = 0; i < out_layout.numel(); ++i)
    std::memset(mark.data() + out_layout.storage_index(i) * size, 1, static_cast<std::size_t>(size));
  for (std::size_t b = 0; b < r.raw.size(); ++b)
    if (!mark[b] && r.raw[b] != poison) r.stray_write = true;
  return r;
}

// c (a backward case, no per-row temperature or mask) through the automatic path with dx written over y, an exact
// alias the public calls allow (src/softmax/args.cpp); run_gpu's in_place writes dx over dy. The result is y's buffer
// after the call.
inline Result run_over_y(const Case& c) {
  using Buf = cuda::DeviceBuffer<unsigned char>;
  EXPECT_TRUE(c.row_temperature.empty() && c.mask_values.empty()) << c.name;
  const Device dev = Device::cuda(0);
  Buf yb = Buf::from_host(pack(c.in, c.x, 0x00));
  Buf dyb = Buf::from_host(pack(c.in, c.dy, 0x00));
  const TensorView y = c.in.view(yb.data(), dev), dy = c.in.view(dyb.data(), dev);
  SoftmaxOptions opt = c.options;
  opt.dim = c.dim;
  {
    cuda::ScopedSoftmaxPath force(cuda::SoftmaxPath::automatic);
    if (c.op == Op::softmax_backward) softmax_backward(y, y, dy, opt);
    else log_softmax_backward(y, y, dy, opt);
  }
  SMK_CUDA_CHECK(cudaDeviceSynchronize());
  Result r;
  r.ran = true;
  r.raw = yb.to_host();
  r.out = unpack(c.in, r.raw);
  return r;
}

// The float64 reference of the case: the CPU reference on the logical values widened to f64, temperature and mask
// included (per-row temperatures that are invalid are left out: the GPU's documented answer is a NaN row).
struct Reference {
  std::vector<double> out, out2;
};
inline Reference reference(const Case& c) {
  const int dim = norm_dim(c);
  const auto shape = c.in.shape;
  const Layout f64 = contiguous(DType::f64, shape);
  const Layout row64 = contiguous(DType::f64, reduced_shape(shape, dim));
  Reference ref;
  std::vector<double> x = c.x;
  SoftmaxOptions opt = c.options;
  opt.dim = c.dim;
  std::vector<float> temps;
  if (!c.row_temperature.empty()) {
    for (double t : c.row_temperature) temps.push_back(t > 0 && std::isfinite(t) ? static_cast<float>(t) : 1.0f);
    Layout rowf = contiguous(DType::f32, reduced_shape(shape, dim));
    opt.temperature_per_row = rowf.view(temps.data(), Device::cpu());
  }
  std::vector<unsigned char> mask_bytes;
  if (!c.mask_values.empty()) {
    Layout m = c.mask;
    if (m.dtype != DType::b8) m.dtype = DType::f64;
    m.offset = 0;
    mask_bytes = pack(m, c.mask_values, 0);
    opt.mask = m.view(mask_bytes.data(), Device::cpu());
  }
  const TensorView in = f64.view(x.data(), Device::cpu());
  if (is_row_op(c.op)) {
    ref.out.resize(static_cast<std::size_t>(row64.numel()));
    ref.out2.resize(ref.out.size());
    const TensorView o = row64.view(ref.out.data(), Device::cpu());
    if (c.op == Op::logsumexp) cpu::reference::logsumexp(o, in, opt);
    else cpu::reference::softmax_state(o, row64.view(ref.out2.data(), Device::cpu()), in, opt);
  } else {
    ref.out.resize(static_cast<std::size_t>(f64.numel()));
    const TensorView o = f64.view(ref.out.data(), Device::cpu());
    std::vector<double> dy = c.dy;
    switch (c.op) {
      case Op::softmax: cpu::reference::softmax(o, in, opt); break;
      case Op::log_softmax: cpu::reference::log_softmax(o, in, opt); break;
      case Op::softmax_backward: cpu::reference::softmax_backward(o, in, f64.view(dy.data(), Device::cpu()), opt); break;
      case Op::log_softmax_backward:
        cpu::reference::log_softmax_backward(o, in, f64.view(dy.data(), Device::cpu()), opt);
        break;
      default: break;
    }
  }
  // Rows with an invalid per-row temperature: NaN on the GPU, by contract (softmax.hpp).
  if (!c.row_temperature.empty()) {
    const std::int64_t n = shape[dim];
    for (std::size_t r = 0; r < c.row_temperature.size(); ++r) {
      const double t = c.row_temperature[r];
      if (t > 0 && std::isfinite(t)) continue;
      if (is_row_op(c.op)) {
        ref.out[r] = kNaN;
        if (!ref.out2.empty()) ref.out2[r] = kNaN;
      } else {
        // row r of the reduced index: walk its elements
        for (std::int64_t i = 0; i < f64.numel(); ++i) {
          std::int64_t lin = i, rr = 0, mul = 1, pos = 0;
          for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
            const std::int64_t idx = lin % shape[d];
            lin /= shape[d];
            if (d == dim) pos = idx;
            else {
              rr += idx * mul;
              mul *= shape[d];
            }
          }
          (void)pos;
          if (rr == static_cast<std::int64_t>(r)) ref.out[i] = n > 0 ? kNaN : ref.out[i];
        }
      }
    }
  }
  return ref;
}

inline std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

inline double ulp_of(DType t, double v) {
  const double a = std::fabs(v);
  const int e = a > 0 ? std::ilogb(a) : -1000;
  switch (t) {
    case DType::f16: return std::ldexp(1.0, std::max(e, -14) - 10);
    case DType::bf16: return std::ldexp(1.0, std::max(e, -126) - 7);
    default: return std::ldexp(1.0, std::max(e, -126) - 23);
  }
}

// The per-element gate (docs/semantics.md §6). `slack` is the temperature's rounding term, in units of u.
struct Gate {
  Op op;
  DType out;
  std::int64_t n;
  bool in16 = false;  // 16-bit scores: log l's terms pay the product's rounding too (numerics.hpp kLogTermProductU)
  int L() const {
    int l = 0;
    while ((std::int64_t{1} << l) < n) ++l;
    return l;
  }
  double D() const { return n > 1 ? L() + 4.0 : 0.0; }
  // (exp 5 + log l's terms' subtraction (and, from 16-bit scores, product), averaged: log_term_u() ln n + the sum D
  // + a tie's rounding 1 + log1p 2 ln n)
  double ln_n() const { return std::log(static_cast<double>(std::max<std::int64_t>(n, 1))); }
  double log_term_u() const { return conformance::log_term_u(in16); }
  double log_sum_u() const { return 6 + D() + (2 + log_term_u()) * ln_n(); }
  double f32_tol(double want, double slack, double backward_bound) const {
    switch (op) {
      case Op::softmax: {  // docs/semantics.md §6; a 16-bit output's plain exponential adds (ln(1/p) + ln n)·u
        const double plain = out == DType::f32 ? 0 : -std::log(std::max(want, 1e-30)) + ln_n();
        return (18 + L() + plain + 4 * slack) * kU * std::max(want, 1e-30);
      }
      case Op::log_softmax: return (2 * std::fabs(want) + log_sum_u() + slack) * kU;
      case Op::logsumexp:
      case Op::state: return (std::fabs(want) + log_sum_u() + slack) * kU;  // state: applied to m + log l
      default: return backward_bound;
    }
  }
  bool ok(double got, double want, double slack, double backward_bound, std::string* why) const {
    if (std::isnan(want)) {
      if (std::isnan(got)) return true;
      *why = "expected NaN";
      return false;
    }
    if (std::isinf(want)) {
      if (got == want) return true;
      *why = "expected " + sci(want);
      return false;
    }
    if (!std::isfinite(got)) {
      *why = "non-finite result";
      return false;
    }
    const double err = std::fabs(got - want);
    const double tol = f32_tol(want, slack, backward_bound);
    if (out != DType::f32 && !is_row_op(op)) {
      const double rounded = round_to(out, want);
      if (std::fabs(got - rounded) <= ulp_of(out, rounded)) return true;
      if (err <= tol + 0.5 * ulp_of(out, want)) return true;
      *why = "more than 1 ulp from the correctly rounded " + sci(rounded);
      return false;
    }
    if (err <= tol) return true;
    *why = "error " + sci(err) + " > gate " + sci(tol);
    return false;
  }
};

// Checks a GPU result against the reference; returns the number of failures (reports the first few).
inline int check(const Case& c, const Result& r, const Reference& ref) {
  int failures = 0;
  auto fail = [&](std::int64_t i, double got, double want, const std::string& why) {
    if (++failures <= 5)
      ADD_FAILURE() << c.name << " [" << op_name(c.op) << "]: element " << i << ": got " << got << ", want " << want
                    << " (" << why << ")";
  };
  if (r.stray_write) ADD_FAILURE() << c.name << ": wrote outside the output's elements", ++failures;
  const int dim = norm_dim(c);
  const std::int64_t n = c.in.shape[dim];
  const DType out_dtype = is_row_op(c.op) ? DType::f32 : (c.in_place ? c.in.dtype : c.out.dtype);
  const Gate gate{c.op, out_dtype, n, c.in.dtype == DType::bf16 || c.in.dtype == DType::f16};
  const auto& shape = c.in.shape;
  // Row index of each element, and per-row quantities for the gates.
  std::int64_t rows = 1;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != dim) rows *= shape[d];
  std::vector<double> row_max(static_cast<std::size_t>(rows), -kInf), sum_abs(rows, 0), s_val(rows, 0);
  auto row_of = [&](std::int64_t i, std::int64_t* pos) {
    std::int64_t lin = i, rr = 0, mul = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      const std::int64_t idx = lin % shape[d];
      lin /= shape[d];
      if (d == dim) *pos = idx;
      else {
        rr += idx * mul;
        mul *= shape[d];
      }
    }
    return rr;
  };
  const double T = c.options.temperature;
  auto temp_of = [&](std::int64_t row) { return c.row_temperature.empty() ? T : c.row_temperature[row]; };
  for (std::int64_t i = 0; i < c.in.numel(); ++i) {
    std::int64_t pos = 0;
    const std::int64_t rr = row_of(i, &pos);
    const double z = c.x[i] / temp_of(rr);
    if (std::isfinite(z)) row_max[rr] = std::max(row_max[rr], std::fabs(z));
    if (is_backward(c.op)) {
      const double term = c.op == Op::softmax_backward ? c.dy[i] * c.x[i] : c.dy[i];
      sum_abs[rr] += std::fabs(term);
      s_val[rr] += term;
    }
  }
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(ref.out.size()); ++i) {
    std::string why;
    if (is_row_op(c.op)) {
      // The rounding of x / T moves the LSE by up to max|z|·u (the per-row index is the reduced index).
      const double slack = c.exact_scaling ? 0 : std::max(0.0, row_max[i]);
      if (c.op == Op::state) {
        const double m = r.out[i], l = r.out2[i];
        if (std::isnan(ref.out[i])) {
          if (!(std::isnan(m) && std::isnan(l))) fail(i, m, ref.out[i], "expected a NaN state");
          continue;
        }
        if (m != static_cast<double>(static_cast<float>(ref.out[i])) && c.exact_scaling && c.mask_values.empty())
          fail(i, m, ref.out[i], "m is not the exact max");
        const double want_lse = ref.out[i] == -kInf ? -kInf : ref.out[i] + std::log(ref.out2[i]);
        const double got_lse = m == -kInf ? -kInf : (m == kInf ? kInf : m + std::log(l));
        if (ref.out[i] == -kInf && !(l == 0)) fail(i, l, 0, "empty state must have l = 0");
        if (std::isfinite(ref.out[i]) && c.exact_scaling &&
            std::fabs(l - ref.out2[i]) > (gate.L() + 11 + gate.log_term_u() * gate.ln_n()) * kU * ref.out2[i])
          fail(i, l, ref.out2[i], "l beyond (L + 11 + log_term_u ln n)u");
        if (!gate.ok(got_lse, want_lse, slack, 0, &why)) fail(i, got_lse, want_lse, why);
      } else if (!gate.ok(r.out[i], ref.out[i], slack, 0, &why)) {
        fail(i, r.out[i], ref.out[i], why);
      }
      continue;
    }
    std::int64_t pos = 0;
    const std::int64_t rr = row_of(i, &pos);
    double slack = 0;
    if (!c.exact_scaling && (c.op == Op::softmax || c.op == Op::log_softmax)) {
      const double z = std::fabs(c.x[i] / temp_of(rr));
      slack = c.op == Op::softmax ? std::max(0.0, row_max[rr])  // 4u·max|z| relative, applied by the gate
                                  : (std::isfinite(z) ? z : 0) + std::max(0.0, row_max[rr]);
    }
    double bwd = 0;
    if (is_backward(c.op)) {
      const double t = temp_of(rr);
      const double y = c.x[i], g = c.dy[i], s = s_val[rr], dx = std::fabs(ref.out[i]);
      if (c.op == Op::softmax_backward)
        bwd = kU * (std::fabs(y) * ((gate.D() + 1) * sum_abs[rr] + std::fabs(g) + std::fabs(s)) / t + 2 * dx);
      else
        bwd = kU * (std::exp(y) * (gate.D() * sum_abs[rr] + 6 * std::fabs(s)) / t + dx);
      if (t != 1) bwd += 2 * kU * dx;
      bwd += 2 * std::numeric_limits<float>::denorm_min();  // a subnormal result's spacing
    }
    if (!gate.ok(r.out[i], ref.out[i], slack, bwd, &why)) fail(i, r.out[i], ref.out[i], why);
  }
  return failures;
}

// Random scores representable in `t`: normal(mean, sigma).
inline std::vector<double> random_values(DType t, std::int64_t count, double sigma, double mean, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sigma);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = round_to(t, d(rng));
  return v;
}

// A contiguous rows × n forward case of random scores: spread wide enough that probabilities span many decades,
// shifted off zero (test_softmax_gpu's plain cases use the same spread and add the backward's inputs).
inline Case random_case(const std::string& name, Op op, DType in, DType out, std::int64_t rows, std::int64_t n,
                        std::uint64_t seed) {
  Case c;
  c.name = name;
  c.op = op;
  c.in = contiguous(in, {rows, n});
  c.out = contiguous(out, {rows, n});
  c.x = random_values(in, rows * n, n % 2 ? 4.0 : 12.0, 37.0, seed);
  return c;
}

// A backward case: y a softmax (or log-softmax) of random scores computed in float64 and rounded to y's dtype, as a
// forward pass gives it; dy ~ N(0, 1) in that dtype (seed + 1).
inline Case backward_case(const std::string& name, Op op, DType in, DType out, std::int64_t rows, std::int64_t n,
                          std::uint64_t seed) {
  Case c = random_case(name, op, in, out, rows, n, seed);
  std::vector<double> y(c.x.size());
  const Layout f64 = contiguous(DType::f64, {rows, n});
  if (op == Op::softmax_backward)
    cpu::reference::softmax(f64.view(y.data(), Device::cpu()), f64.view(c.x.data(), Device::cpu()));
  else
    cpu::reference::log_softmax(f64.view(y.data(), Device::cpu()), f64.view(c.x.data(), Device::cpu()));
  for (auto& v : y) v = round_to(in, v);
  c.x = y;
  c.dy = random_values(in, rows * n, 1.0, 0.0, seed + 1);
  return c;
}

// The options and special rows the long-row paths' tests share (cluster_stage, split_row's one launch): a
// temperature, per-row temperatures, a boolean mask emptying row 1 under both empty-row policies, non-finite rows
// (+inf, NaN, all −inf); `rows` (3) rows of n, seeds taken from `seed` in that order.
inline std::vector<Case> option_cases(Op op, std::int64_t rows, std::int64_t n, std::uint64_t& seed) {
  std::vector<Case> cases;
  Case t = random_case("temperature", op, DType::f32, DType::f32, rows, n, ++seed);
  t.options.temperature = 0.5f;
  cases.push_back(t);
  Case r = random_case("row_temperatures", op, DType::f32, DType::f32, rows, n, ++seed);
  r.row_temperature = {0.25, 1.0, 3.0};
  r.exact_scaling = false;
  cases.push_back(r);
  for (EmptyRowPolicy policy : {EmptyRowPolicy::nan, EmptyRowPolicy::zeros}) {
    Case m = random_case("bool_mask_row1_empty", op, DType::bf16, is_row_op(op) ? DType::f32 : DType::bf16, rows, n,
                         ++seed);
    m.mask = contiguous(DType::b8, {rows, n});
    m.mask_values.assign(static_cast<std::size_t>(rows * n), 1.0);
    for (std::int64_t i = 0; i < n; ++i) m.mask_values[static_cast<std::size_t>(n + i)] = 0.0;  // row 1 masked
    for (std::int64_t i = 0; i < n; i += 3) m.mask_values[static_cast<std::size_t>(i)] = 0.0;
    m.options.empty_rows = policy;
    cases.push_back(m);
  }
  Case f = random_case("non_finite", op, DType::f32, DType::f32, rows, n, ++seed);
  f.x[17] = kInf;                               // row 0: +inf
  f.x[static_cast<std::size_t>(n + 5)] = kNaN;  // row 1: NaN
  for (std::int64_t i = 0; i < n; ++i) f.x[static_cast<std::size_t>(2 * n + i)] = -kInf;  // row 2: all −inf
  cases.push_back(f);
  return cases;
}

// A launcher's problem for `rows` contiguous rows of n elements at x (unit stride; row r at x + r·n elements), the
// statistics in stat[0, rows) (stat0: the LSE, or m) and stat[rows, 2·rows) (stat1: l), and, where `out` is given,
// softmax-shaped outputs laid out as x: what the block / lse_stream tests hand the kernels directly.
inline cuda::kernels::RowProblem contiguous_rows(cuda::kernels::Op op, const void* x, DType x_dtype, void* out,
                                                 DType out_dtype, float* stat, std::int64_t rows, std::int64_t n) {
  namespace k = cuda::kernels;
  k::RowProblem p;
  p.op = op;
  p.x = x;
  p.out = out;
  p.stat0 = stat;
  p.stat1 = stat + rows;
  p.x_dtype = x_dtype;
  p.out_dtype = out_dtype;
  p.rows = rows;
  p.n = n;
  p.map.rank = 1;
  p.map.size[0] = rows;
  p.map.stride[k::kX][0] = n;
  p.map.stride[k::kStat0][0] = 1;
  p.map.stride[k::kStat1][0] = 1;
  p.step[k::kX] = 1;
  if (out != nullptr) {
    p.map.stride[k::kOut][0] = n;
    p.step[k::kOut] = 1;
  }
  return p;
}

// Two decoded outputs are the same: equal, or both NaN.
inline bool same_bits(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Two results of one case agree element for element: the outputs and, for the state, the row sums.
inline void expect_same_bits(const Result& a, const Result& b, const std::string& what) {
  ASSERT_EQ(a.out.size(), b.out.size()) << what;
  ASSERT_EQ(a.out2.size(), b.out2.size()) << what;
  for (std::size_t i = 0; i < a.out.size(); ++i)
    ASSERT_TRUE(same_bits(a.out[i], b.out[i])) << what << ": element " << i << ": " << a.out[i] << " vs " << b.out[i];
  for (std::size_t i = 0; i < a.out2.size(); ++i)
    ASSERT_TRUE(same_bits(a.out2[i], b.out2[i])) << what << ": l of row " << i << ": " << a.out2[i] << " vs "
                                                 << b.out2[i];
}

// split_row's and the row loop's process-wide tunings and switches (cuda/softmax/kernels.hpp, split_row_tuning.hpp:
// the L2 prefetch distance, the merge's preloading, the TMA chunk kernel's settings), restored when the scope ends: for
// the tests that change any of them.
struct SplitRowTuningGuard {
  cuda::kernels::SplitRowTuning split = cuda::kernels::split_row_tuning();
  cuda::kernels::RowLoopTuning loop = cuda::kernels::row_loop_tuning();
  int l2_ahead = cuda::kernels::split_row_chunk_l2_ahead(), merge_preload = cuda::kernels::split_row_merge_preload();
  cuda::kernels::ChunkTmaTuning tma = cuda::kernels::split_row_chunk_tma();
  ~SplitRowTuningGuard() {
    cuda::kernels::split_row_tuning() = split;
    cuda::kernels::row_loop_tuning() = loop;
    cuda::kernels::split_row_chunk_l2_ahead() = l2_ahead;
    cuda::kernels::split_row_merge_preload() = merge_preload;
    cuda::kernels::split_row_chunk_tma() = tma;
  }
};

// One case through a forced path, checked against the float64 reference and for stray writes past the outputs; the
// result returned for further comparison (bitwise checks between kernels). test_few_rows and test_row_loop share it.
inline Result run_checked(const Case& c, cuda::SoftmaxPath path) {
  SCOPED_TRACE("case " + c.name + ", op " + op_name(c.op) + ", path " + cuda::to_string(path));
  const Result r = run_gpu(c, path);
  EXPECT_TRUE(r.ran) << r.reason;
  if (r.ran) {
    EXPECT_EQ(check(c, r, reference(c)), 0);
    EXPECT_FALSE(r.stray_write);
  }
  return r;
}

}  // namespace smk::gpu_test
