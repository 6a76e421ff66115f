// Linear cross-entropy on the GPU (src/cuda/cross_entropy/linear.cu) against the CPU float64 reference
// (smk::cpu::reference::linear_cross_entropy on the inputs widened exactly to f64): bf16, f16 and f32 inputs,
// chunks that do not divide N, logits formed in pieces smaller than the chunk (logit_rows), ignore_index rows, bias,
// every cross-entropy option and reduction, padded rows, every row ignored, a bad target (an error, nothing written), and run-to-run determinism. Outputs are poisoned (0xFF:
// NaN) before every call. SMK_LCE_TEST_ON_CPU=1 runs the same cases and gates on the CPU float path (CI checks the
// harness and the gates there; the kernels are not involved).
//
// Gates, derived from the GPU's arithmetic (u = 2^-24; u_o = the inputs' dtype's unit roundoff: 2^-8 bf16, 2^-11
// f16, 2^-24 f32; η_o = half its smallest subnormal; Λ = L + 9 + 2 ln V with L = 16 + 2·⌈V/8192⌉, the cross-entropy
// kernels' sum depth, as in test_cross_entropy_gpu.cpp):
//   X_c        each logit is an f32-accumulated product of d terms plus the bias. Tensor cores may truncate
//              instead of rounding inside their accumulations (up to 2u an addition, not u), so every sum of m
//              terms below is given (4m + 8)·u of its absolute sum rather than the textbook (m + 2)·u:
//              |ΔX_ij| ≤ E_i = max_j ((4d + 8)·u·Σ_k |h_ik w_jk| + 2u·(|b_j| + |x_ij|)); the soft-cap adds
//              e_z = 4u·max_j |x_ij| (tanh's slope ≤ 1 passes ΔX through unchanged).
//   LSE        |ΔLSE_i| ≤ E_i + e_z + (|LSE_i| + Λ)·u.
//   p_ij       relative error ≤ ε_i = 2·(2E_i + 2e_z + (|LSE_i| + Λ + L + 6)·u) (z_j − LSE moves by ≤ 2E_i + ...; the
//              factor 2 covers exp's second-order terms and the CE kernel's own rounding).
//   G_ij       |ΔG_ij| ≤ ε_i·M_ij·(1 + u_o) + (u_o + 8u·(1 + |x_ij|/c))·|G_ij| + η_o, with M_ij the magnitude of the
//              p-dependent parts: |g_ce|·((1−ε)w_t + ε/C·W)·p_ij + |2s·g_z|·(|LSE_i| + 1)·p_ij
//              + [j = t]·|g_ce|·(1−ε)·w_t (the target's −Σ_{j≠t} p_j carries the same relative error).
//   dH         Σ_j ΔG_ij·|w_jk| + (4V + 8)·u·Σ_j |G_ij w_jk| + u_o·|dH_ik| + η_o;
//   dW         Σ_i ΔG_ij·|h_ik| + (4N + 8)·u·Σ_i |G_ij h_ik| + chunks·u_o·(1 + u_o)·Σ_i |G_ij h_ik| + chunks·η_o
//              (dW is rounded to its dtype once per chunk; the CPU float path sums all N rows in f32);
//   db         Σ_i ΔG_ij + (4N + 8)·u·Σ_i |G_ij| + u_o·|db_j| + η_o.
//   loss       per row, 2·[((1−ε)w_t + ε/C·W)·(2E_i + e_z + (5|LSE_i| + 5 max|z| + Λ + 4)·u)
//              + ε/C·(L + 4)·u·Σ_c w_c |z_c − z_0|] + 2·[2s·|LSE_i|·ΔLSE_i + s·ΔLSE_i² + 2u·s·LSE_i²]
//              (+ 2u·|loss_i| for none: the f32 row); sum / mean: the rows' gates
//              (over the mean's denominators) + u·|loss|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cpu/linear_cross_entropy.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "softmaxkit/linear_cross_entropy.hpp"
#include "support/gpu.hpp"

namespace {

using smk::CrossEntropyOptions;
using smk::Device;
using smk::DType;
using smk::LinearCrossEntropyOptions;
using smk::Reduction;
using smk::TensorView;

bool cpu_mode() {
  const char* v = std::getenv("SMK_LCE_TEST_ON_CPU");
  return v != nullptr && v[0] == '1';
}
#define SMK_REQUIRE_GPU_OR_CPU_MODE() \
  do {                                \
    if (!cpu_mode()) SMK_REQUIRE_GPU(); \
  } while (0)

constexpr double kU = 0x1p-24;

// Bytes on the device, or on the host in cpu_mode().
class Buf {
 public:
  explicit Buf(std::vector<unsigned char> bytes) {
    if (cpu_mode()) host_ = std::move(bytes);
    else dev_ = smk::cuda::DeviceBuffer<unsigned char>::from_host(bytes);
  }
  void* data() { return cpu_mode() ? static_cast<void*>(host_.data()) : static_cast<void*>(dev_.data()); }
  std::vector<unsigned char> to_host() const { return cpu_mode() ? host_ : dev_.to_host(); }

 private:
  std::vector<unsigned char> host_;
  smk::cuda::DeviceBuffer<unsigned char> dev_;
};

double round_to(DType t, double x) {
  switch (t) {
    case DType::bf16: return smk::to_float(smk::to_bfloat16(static_cast<float>(x)));
    case DType::f16: return smk::to_float(smk::to_half(static_cast<float>(x)));
    default: return static_cast<float>(x);
  }
}
double unit_roundoff(DType t) { return t == DType::bf16 ? 0x1p-8 : t == DType::f16 ? 0x1p-11 : kU; }
double half_subnormal(DType t) { return t == DType::bf16 ? 0x1p-134 : t == DType::f16 ? 0x1p-25 : 0x1p-150; }

// `count` elements at stride `stride` (padding poisoned) as bytes of `t`.
std::vector<unsigned char> encode(DType t, const std::vector<double>& x, std::int64_t rows, std::int64_t cols,
                                  std::int64_t stride) {
  const std::size_t es = smk::dtype_size(t);
  std::vector<unsigned char> b(static_cast<std::size_t>(std::max<std::int64_t>(rows * stride, 1)) * es, 0xFF);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t k = 0; k < cols; ++k) {
      unsigned char* p = b.data() + static_cast<std::size_t>(i * stride + k) * es;
      const double v = x[i * cols + k];
      if (t == DType::bf16) {
        const auto h = smk::to_bfloat16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
      } else if (t == DType::f16) {
        const auto h = smk::to_half(static_cast<float>(v));
        std::memcpy(p, &h, 2);
      } else {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
      }
    }
  return b;
}
std::vector<double> decode(DType t, const std::vector<unsigned char>& b, std::int64_t rows, std::int64_t cols,
                           std::int64_t stride) {
  const std::size_t es = smk::dtype_size(t);
  std::vector<double> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t k = 0; k < cols; ++k) {
      const unsigned char* p = b.data() + static_cast<std::size_t>(i * stride + k) * es;
      if (t == DType::bf16) {
        smk::bfloat16_t h;
        std::memcpy(&h, p, 2);
        x[i * cols + k] = smk::to_float(h);
      } else if (t == DType::f16) {
        smk::half_t h;
        std::memcpy(&h, p, 2);
        x[i * cols + k] = smk::to_float(h);
      } else {
        float f;
        std::memcpy(&f, p, 4);
        x[i * cols + k] = f;
      }
    }
  return x;
}
template <typename T>
std::vector<unsigned char> raw(const std::vector<T>& v) {
  std::vector<unsigned char> b(std::max<std::size_t>(v.size() * sizeof(T), 1));
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}
std::vector<float> floats(const std::vector<unsigned char>& b, std::size_t n) {
  std::vector<float> v(n);
  if (n) std::memcpy(v.data(), b.data(), n * 4);
  return v;
}

struct Case {
  std::string name;
  DType dtype = DType::bf16;
  DType tdtype = DType::i64;
  std::int64_t n = 0, d = 0, v = 0;
  std::int64_t pad = 0;  // extra elements at the end of each row of H and dH
  std::optional<std::int64_t> chunk;
  bool bias = false, weights = false, want_lse = true, pass_grad_loss = true;
  CrossEntropyOptions ce;
  std::vector<double> grad_loss;  // [n] for none, [1] otherwise
  int ignore_every = 6;           // every k-th row (from row 1) is ignored; 0: none
  unsigned seed = 1;
  std::optional<std::int64_t> logit_rows;
};

struct Inputs {  // values already representable in the dtype
  std::vector<double> h, w, b, cw, gl;
  std::vector<std::int64_t> t;
};
Inputs make_inputs(const Case& c) {
  Inputs in;
  std::mt19937 rng(c.seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_int_distribution<std::int64_t> cls(0, c.v - 1);
  std::uniform_real_distribution<double> ud(0.25, 2.0);
  for (std::int64_t i = 0; i < c.n * c.d; ++i) in.h.push_back(round_to(c.dtype, nd(rng)));
  // Logits of spread ~3: p ranges over several orders of magnitude, and some rows have a dominant class.
  for (std::int64_t i = 0; i < c.v * c.d; ++i) in.w.push_back(round_to(c.dtype, nd(rng) * 3.0 / std::sqrt(double(c.d))));
  if (c.bias)
    for (std::int64_t j = 0; j < c.v; ++j) in.b.push_back(round_to(c.dtype, nd(rng)));
  if (c.weights)
    for (std::int64_t j = 0; j < c.v; ++j) in.cw.push_back(static_cast<float>(ud(rng)));
  for (std::int64_t i = 0; i < c.n; ++i)
    in.t.push_back(c.ignore_every > 0 && i % c.ignore_every == (c.ignore_every > 1 ? 1 : 0) ? c.ce.ignore_index
                                                                                             : cls(rng));
  in.gl = c.grad_loss;
  if (in.gl.empty()) in.gl.assign(c.ce.reduction == Reduction::none ? c.n : 1, 1.0);
  for (double& g : in.gl) g = static_cast<float>(g);
  return in;
}

struct Outputs {
  std::vector<double> loss, lse, dh, dw, db;
  std::string error;
};

// The call on the device (or the CPU float path), every output poisoned first.
Outputs run_device(const Case& c, const Inputs& in) {
  const Device dev = cpu_mode() ? Device::cpu() : Device::cuda(0);
  const bool per_row = c.ce.reduction == Reduction::none;
  const std::int64_t n = c.n, d = c.d, v = c.v, ldh = d + c.pad;
  const std::size_t es = smk::dtype_size(c.dtype);
  Buf h(encode(c.dtype, in.h, n, d, ldh)), w(encode(c.dtype, in.w, v, d, d)), b(encode(c.dtype, in.b, c.bias ? 1 : 0, v, v));
  std::vector<std::int32_t> t32(in.t.begin(), in.t.end());
  Buf t(c.tdtype == DType::i32 ? raw(t32) : raw(in.t));
  std::vector<float> cwf(in.cw.begin(), in.cw.end()), glf(in.gl.begin(), in.gl.end());
  Buf cw(raw(cwf)), gl(raw(glf));
  const std::size_t loss_n = per_row ? n : 1;
  Buf loss(std::vector<unsigned char>(std::max<std::size_t>(loss_n * 4, 1), 0xFF));
  Buf lse(std::vector<unsigned char>(std::max<std::int64_t>(n * 4, 1), 0xFF));
  Buf dh(std::vector<unsigned char>(std::max<std::int64_t>(n * ldh, 1) * es, 0xFF));
  Buf dw(std::vector<unsigned char>(std::max<std::int64_t>(v * d, 1) * es, 0xFF));
  Buf db(std::vector<unsigned char>(std::max<std::int64_t>(v, 1) * es, 0xFF));

  LinearCrossEntropyOptions o;
  o.ce = c.ce;
  o.chunk_rows = c.chunk;
  o.logit_rows = c.logit_rows;
  if (c.weights) o.ce.class_weights = TensorView::contiguous(cw.data(), DType::f32, dev, {v});
  if (c.bias) o.bias = TensorView::contiguous(b.data(), c.dtype, dev, {v});
  const TensorView vh = TensorView::strided(h.data(), c.dtype, dev, {n, d}, {ldh, 1});
  const TensorView vw = TensorView::contiguous(w.data(), c.dtype, dev, {v, d});
  const TensorView vt = TensorView::contiguous(t.data(), c.tdtype, dev, {n});
  const TensorView vloss = per_row ? TensorView::contiguous(loss.data(), DType::f32, dev, {n})
                                   : TensorView::contiguous(loss.data(), DType::f32, dev, {});
  const TensorView vlse = c.want_lse ? TensorView::contiguous(lse.data(), DType::f32, dev, {n}) : TensorView{};
  const TensorView vgl = !c.pass_grad_loss ? TensorView{}
                         : per_row        ? TensorView::contiguous(gl.data(), DType::f32, dev, {n})
                                          : TensorView::contiguous(gl.data(), DType::f32, dev, {});
  const TensorView vdh = TensorView::strided(dh.data(), c.dtype, dev, {n, d}, {ldh, 1});
  const TensorView vdw = TensorView::contiguous(dw.data(), c.dtype, dev, {v, d});
  const TensorView vdb = c.bias ? TensorView::contiguous(db.data(), c.dtype, dev, {v}) : TensorView{};
  Outputs out;
  try {
    smk::linear_cross_entropy(vloss, vlse, vdh, vdw, vdb, vh, vw, vt, vgl, o);
    if (!cpu_mode()) SMK_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const smk::Error& e) {
    out.error = e.what();
  }
  const auto lossf = floats(loss.to_host(), loss_n), lsef = floats(lse.to_host(), n);
  out.loss.assign(lossf.begin(), lossf.end());
  out.lse.assign(lsef.begin(), lsef.end());
  out.dh = decode(c.dtype, dh.to_host(), n, d, ldh);
  out.dw = decode(c.dtype, dw.to_host(), v, d, d);
  if (c.bias) out.db = decode(c.dtype, db.to_host(), 1, v, v);
  return out;
}

// The float64 reference, and the two-step quantities the gates need (logits, p, G).
struct Reference {
  std::vector<double> loss, lse, dh, dw, db;
  std::vector<double> x, g;  // [n, v]
};
Reference run_reference(const Case& c, const Inputs& in) {
  const bool per_row = c.ce.reduction == Reduction::none;
  const std::int64_t n = c.n, d = c.d, v = c.v;
  Reference r;
  r.loss.assign(per_row ? n : 1, 0);
  r.lse.assign(n, 0);
  r.dh.assign(n * d, 0);
  r.dw.assign(v * d, 0);
  r.db.assign(v, 0);
  Inputs x = in;
  LinearCrossEntropyOptions o;
  o.ce = c.ce;
  o.chunk_rows = c.chunk;
  if (c.weights) o.ce.class_weights = TensorView::of(x.cw.data(), {v});
  if (c.bias) o.bias = TensorView::of(x.b.data(), {v});
  smk::cpu::reference::linear_cross_entropy(
      per_row ? TensorView::of(r.loss.data(), {n}) : TensorView::of(r.loss.data(), {}), TensorView::of(r.lse.data(), {n}),
      TensorView::of(r.dh.data(), {n, d}), TensorView::of(r.dw.data(), {v, d}),
      c.bias ? TensorView::of(r.db.data(), {v}) : TensorView{}, TensorView::of(x.h.data(), {n, d}),
      TensorView::of(x.w.data(), {v, d}), TensorView::of(x.t.data(), {n}),
      per_row ? TensorView::of(x.gl.data(), {n}) : TensorView::of(x.gl.data(), {}), o);
  // The logits in long double and G through the CPU reference backward, for the gates.
  r.x.assign(n * v, 0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < v; ++j) {
      long double acc = c.bias ? x.b[j] : 0.0L;
      for (std::int64_t k = 0; k < d; ++k) acc += static_cast<long double>(x.h[i * d + k]) * x.w[j * d + k];
      r.x[i * v + j] = static_cast<double>(acc);
    }
  r.g.assign(n * v, 0);
  smk::cpu::reference::cross_entropy_backward(
      TensorView::of(r.g.data(), {n, v}), TensorView::of(r.x.data(), {n, v}), TensorView::of(x.t.data(), {n}),
      per_row ? TensorView::of(x.gl.data(), {n}) : TensorView::of(x.gl.data(), {}), o.ce);
  return r;
}

struct Gates {
  std::vector<double> loss, lse, dh, dw, db;
};
Gates gates(const Case& c, const Inputs& in, const Reference& r) {
  const std::int64_t n = c.n, d = c.d, v = c.v;
  const bool per_row = c.ce.reduction == Reduction::none;
  const double uo = unit_roundoff(c.dtype), eta = half_subnormal(c.dtype);
  const double L = 16 + 2 * std::ceil(double(v) / 8192), Lam = L + 9 + 2 * std::log(double(v));
  const double eps = c.ce.label_smoothing, s = c.ce.z_loss, cap = c.ce.softcap;
  const auto w = [&](std::int64_t j) { return in.cw.empty() ? 1.0 : in.cw[j]; };
  double W = 0, den_ce = 0, den_z = 0;
  for (std::int64_t j = 0; j < v; ++j) W += w(j);
  for (std::int64_t i = 0; i < n; ++i)
    if (in.t[i] != c.ce.ignore_index) {
      den_ce += w(in.t[i]);
      den_z += 1;
    }
  const std::int64_t chunk = c.chunk ? std::min<std::int64_t>(*c.chunk, std::max<std::int64_t>(n, 1))
                                     : smk::linear_cross_entropy_default_chunk_rows(n, v, c.dtype);
  const double chunks = std::ceil(double(n) / double(chunk));
  const double g_all = per_row ? 0 : in.gl[0];
  const bool mean = c.ce.reduction == Reduction::mean;
  Gates gt;
  gt.dh.assign(n * d, 0);
  gt.dw.assign(v * d, 0);
  gt.db.assign(v, 0);
  gt.lse.assign(n, 0);
  std::vector<double> dG(n * v, 0);  // the bound on |ΔG|
  double loss_ce = 0, loss_z = 0;
  std::vector<double> loss_rows(n, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    double E = 0, xmax = 0, zmax = 0;
    for (std::int64_t j = 0; j < v; ++j) {
      double a = 0;
      for (std::int64_t k = 0; k < d; ++k) a += std::abs(in.h[i * d + k] * in.w[j * d + k]);
      const double xj = r.x[i * v + j];
      E = std::max(E, (4 * d + 8) * kU * a + 2 * kU * ((c.bias ? std::abs(in.b[j]) : 0) + std::abs(xj)));
      xmax = std::max(xmax, std::abs(xj));
      zmax = std::max(zmax, std::abs(cap > 0 ? cap * std::tanh(xj / cap) : xj));
    }
    const double ez = cap > 0 ? 4 * kU * xmax : 0;
    const double lse = r.lse[i];
    const double dlse = E + ez + (std::abs(lse) + Lam) * kU;
    gt.lse[i] = 2 * dlse;
    const std::int64_t t = in.t[i];
    if (t == c.ce.ignore_index) continue;  // G row exactly 0, loss 0
    const double e_i = 2 * (2 * E + 2 * ez + (std::abs(lse) + Lam + L + 6) * kU);
    const double gce = per_row ? in.gl[i] : mean ? g_all / den_ce : g_all;
    const double gz = per_row ? in.gl[i] : mean ? g_all / den_z : g_all;
    const double hard = (1 - eps) * w(t), soft = eps / double(v);
    double smooth_spread = 0;
    const double z0 = cap > 0 ? cap * std::tanh(r.x[i * v] / cap) : r.x[i * v];
    for (std::int64_t j = 0; j < v; ++j) {
      const double xj = r.x[i * v + j];
      const double z = cap > 0 ? cap * std::tanh(xj / cap) : xj;
      smooth_spread += w(j) * std::abs(z - z0);
      const double p = std::exp(z - lse);
      double M = std::abs(gce) * (hard + soft * W) * p + std::abs(2 * s * gz) * (std::abs(lse) + 1) * p;
      if (j == t) M += std::abs(gce) * hard;
      const double G = std::abs(r.g[i * v + j]);
      dG[i * v + j] = e_i * M * (1 + uo) + (uo + 8 * kU * (1 + (cap > 0 ? std::abs(xj) / cap : 0))) * G + eta;
    }
    const double ce_gate = 2 * ((hard + soft * W) * (2 * E + ez + (5 * std::abs(lse) + 5 * zmax + Lam + 4) * kU) +
                                soft * (L + 4) * kU * smooth_spread);
    const double z_gate = 2 * (2 * s * std::abs(lse) * dlse + s * dlse * dlse + 2 * kU * s * lse * lse);
    loss_rows[i] = ce_gate + z_gate + 2 * kU * (per_row ? std::abs(r.loss[i]) : 0);
    loss_ce += ce_gate;
    loss_z += z_gate;
  }
  if (per_row) gt.loss = loss_rows;
  else if (mean) gt.loss = {loss_ce / den_ce + loss_z / den_z + kU * std::abs(r.loss[0])};
  else gt.loss = {loss_ce + loss_z + kU * std::abs(r.loss[0])};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < d; ++k) {
      double err = 0, abs = 0;
      for (std::int64_t j = 0; j < v; ++j) {
        err += dG[i * v + j] * std::abs(in.w[j * d + k]);
        abs += std::abs(r.g[i * v + j] * in.w[j * d + k]);
      }
      gt.dh[i * d + k] = err + (4 * v + 8) * kU * abs + uo * (std::abs(r.dh[i * d + k]) + err) + eta;
    }
  for (std::int64_t j = 0; j < v; ++j) {
    double berr = 0, babs = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      berr += dG[i * v + j];
      babs += std::abs(r.g[i * v + j]);
    }
    gt.db[j] = berr + (4 * n + 8) * kU * babs + uo * (std::abs(r.db[j]) + berr) + eta;
    for (std::int64_t k = 0; k < d; ++k) {
      double err = 0, abs = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        err += dG[i * v + j] * std::abs(in.h[i * d + k]);
        abs += std::abs(r.g[i * v + j] * in.h[i * d + k]);
      }
      gt.dw[j * d + k] = err * (1 + chunks * uo) + (4 * n + 8) * kU * abs + chunks * uo * (1 + uo) * abs + chunks * eta;
    }
  }
  return gt;
}

void expect_within(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& gate,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "] = " << got[i] << ", expected NaN";
      continue;
    }
    if (!(err <= gate[i]) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", reference " << want[i] << ", error " << err
                    << " > gate " << gate[i];
    if (gate[i] > 0) worst = std::max(worst, err / gate[i]);
  }
  std::printf("  %-6s worst error / gate = %.3g\n", what.c_str(), worst);
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  const Inputs in = make_inputs(c);
  const Outputs got = run_device(c, in);
  ASSERT_EQ(got.error, "") << got.error;
  const Reference ref = run_reference(c, in);
  const Gates gt = gates(c, in, ref);
  expect_within(got.loss, ref.loss, gt.loss, "loss");
  if (c.want_lse) expect_within(got.lse, ref.lse, gt.lse, "lse");
  expect_within(got.dh, ref.dh, gt.dh, "dH");
  expect_within(got.dw, ref.dw, gt.dw, "dW");
  if (c.bias) expect_within(got.db, ref.db, gt.db, "db");
}

TEST(LinearCrossEntropyGpu, Bf16MeanBiasIgnoredRowsPaddedChunksNotDividingN) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "bf16 mean", .dtype = DType::bf16, .n = 37, .d = 40, .v = 300, .pad = 8, .chunk = 16, .bias = true};
  check_case(c);
}

TEST(LinearCrossEntropyGpu, Bf16EveryOption) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "bf16 every option", .dtype = DType::bf16, .tdtype = DType::i32, .n = 29, .d = 24, .v = 333,
         .chunk = 8, .bias = true, .weights = true};
  c.ce.label_smoothing = 0.1f;
  c.ce.z_loss = 1e-2f;
  c.ce.softcap = 5.0f;
  c.grad_loss = {0.5};
  check_case(c);
}

TEST(LinearCrossEntropyGpu, F16NoneWithPerRowUpstreamGradient) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "f16 none", .dtype = DType::f16, .n = 19, .d = 32, .v = 200, .chunk = 5};
  c.ce.reduction = Reduction::none;
  c.ce.z_loss = 1e-3f;
  c.ce.ignore_index = -1;
  for (int i = 0; i < 19; ++i) c.grad_loss.push_back(0.25 * (i % 7) - 0.5);
  check_case(c);
}

TEST(LinearCrossEntropyGpu, F32SumLongRowsDefaultChunk) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  // V = 9000: two of the cross-entropy kernels' 8192-wide chunks per row; the default chunk is all 23 rows.
  Case c{.name = "f32 sum", .dtype = DType::f32, .n = 23, .d = 16, .v = 9000, .bias = true};
  c.ce.reduction = Reduction::sum;
  c.grad_loss = {-1.25};
  check_case(c);
}

TEST(LinearCrossEntropyGpu, Bf16WithoutLseOrUpstreamGradient) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "bf16 defaults", .dtype = DType::bf16, .n = 50, .d = 8, .v = 129, .chunk = 7, .want_lse = false,
         .pass_grad_loss = false};  // grad_loss null: 1
  check_case(c);
}

TEST(LinearCrossEntropyGpu, Bf16LogitRowsSmallerThanTheChunk) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  // Chunks of 12 rows of G formed from logits 5 rows at a time (5, 5, 2 per chunk; 37 rows: the last chunk has 1).
  Case c{.name = "bf16 logit_rows", .dtype = DType::bf16, .n = 37, .d = 24, .v = 300, .pad = 4, .chunk = 12,
         .bias = true, .weights = true};
  c.ce.label_smoothing = 0.05f;
  c.ce.z_loss = 1e-3f;
  c.logit_rows = 5;
  check_case(c);
  c.name = "bf16 logit_rows, none";
  c.ce.reduction = Reduction::none;
  for (int i = 0; i < 37; ++i) c.grad_loss.push_back(0.1 * (i % 5) - 0.2);
  check_case(c);
}

TEST(LinearCrossEntropyGpu, EveryRowIgnored) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (bool zero : {false, true}) {
    Case c{.name = "all ignored", .dtype = DType::bf16, .n = 9, .d = 8, .v = 40, .chunk = 4, .bias = true,
           .ignore_every = 1};
    c.ce.mean_of_nothing_is_zero = zero;
    const Inputs in = make_inputs(c);
    const Outputs got = run_device(c, in);
    ASSERT_EQ(got.error, "");
    if (zero) EXPECT_EQ(got.loss[0], 0.0);
    else EXPECT_TRUE(std::isnan(got.loss[0]));
    for (double x : got.dh) EXPECT_EQ(x, 0.0);
    for (double x : got.dw) EXPECT_EQ(x, 0.0);
    for (double x : got.db) EXPECT_EQ(x, 0.0);
  }
}

TEST(LinearCrossEntropyGpu, BadTargetIsAnErrorAndWritesNothing) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "bad target", .dtype = DType::bf16, .n = 10, .d = 8, .v = 40, .chunk = 4};
  Inputs in = make_inputs(c);
  in.t[7] = 40;
  const Outputs got = run_device(c, in);
  EXPECT_NE(got.error.find("'targets'"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("targets[7] = 40"), std::string::npos) << got.error;
  for (double x : got.dw) EXPECT_TRUE(std::isnan(x)) << "dW was written by a rejected call";
  for (double x : got.dh) EXPECT_TRUE(std::isnan(x)) << "dH was written by a rejected call";
  EXPECT_TRUE(std::isnan(got.loss[0]));
}

TEST(LinearCrossEntropyGpu, RunToRunBitwiseIdentical) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  Case c{.name = "repeat", .dtype = DType::bf16, .n = 33, .d = 24, .v = 257, .chunk = 10, .bias = true};
  c.ce.z_loss = 1e-3f;
  const Inputs in = make_inputs(c);
  const Outputs a = run_device(c, in), b = run_device(c, in);
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.dh, b.dh);
  EXPECT_EQ(a.dw, b.dw);
  EXPECT_EQ(a.db, b.db);
}

}  // namespace
