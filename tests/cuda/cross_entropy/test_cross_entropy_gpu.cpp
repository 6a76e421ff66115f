// Cross-entropy's CUDA kernels (src/cuda/cross_entropy/) against the CPU float64 reference
// (smk::cpu::reference, on the logits widened exactly to f64): f32 / f16 / bf16 logits, i32 / i64 targets, every
// option (ignore_index, reductions, label smoothing, z-loss, class weights, soft-capping), the conformance cases of
// issue 5, strided and in-place layouts, rows up to 151936, bad targets (error + NaN), bitwise determinism and
// batch invariance, and 64-bit indexing. Every output is poisoned (0xFF: NaN) before the call.
//
// Gates, from an error analysis of the kernels' f32 arithmetic (u = 2^-24, L = the depth of the row sums,
// max(⌈log2 C⌉, 16 + 2·chunks), 82 for the one-read kernel: see sum_depth(); Λ = L + 9 + 2 ln C as in the softmax gates of docs/semantics.md;
// e_z = (|x|/2 + 3|z|)·u, the soft-cap's rounding, else 0):
//   LSE       e_lse = (|LSE| + Λ)·u + max e_z
//   nll       softplus(d), d = LSE_rest − z_t with |Δd| ≤ e_d = (2|LSE_rest| + |z_t| + Λ)·u + 2·max e_z;
//             |Δnll| ≤ σ(d)·e_d + 2u·nll ≤ min(1, nll)·e_d + 2u·nll (σ(d) ≤ min(1, softplus(d)))
//   smoothing ε/C·u·(W·(|LSE| + |LSE − r| + Λ + 3) + (L + 4)·Σ w_c|z_c − r|)  (W·(LSE − r) − Σ w_c (z_c − r))
//   z-loss    2s·|LSE|·e_lse + 2u·zl;   each loss + u·|loss|; sum / mean: Σ of the rows' gates (/ the mean's
//             denominator) + u·|result|
//   gradient  p_j = exp(z_j − LSE) with relative error ρ_j = e_lse + e_z,j + (L + 6)·u; the target's hard part
//             −Σ_{j≠t} p_j with relative error max ρ; |Δ| ≤ |g|·((1 − ε)w_t·|hard part|·ρ + ε/C·W·p_j·ρ_j)
//             + |2s·g_z·LSE|·p_j·(ρ_j + e_lse/|LSE|) + 6u·|d| (+ the soft-cap factor's u·|d|·(|x/c|·|th|·(1 − th²)
//             + 4th² + 1)) + 2 f32 subnormals; f16 / bf16 outputs add half an ulp of the output type.
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
#include <tuple>
#include <vector>

#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#include "cuda/softmax/gpu_case.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "support/gpu.hpp"

namespace smk::gpu_test {
namespace {

// SMK_CE_TEST_ON_CPU=1: the case-based tests run the CPU float path through the same harness and gates (a check of
// the harness itself on a machine without a GPU; the kernels are not involved).
bool cpu_mode() {
  const char* v = std::getenv("SMK_CE_TEST_ON_CPU");
  return v != nullptr && v[0] == '1';
}
#define SMK_REQUIRE_GPU_OR_CPU_MODE() \
  do {                                \
    if (!cpu_mode()) SMK_REQUIRE_GPU(); \
  } while (0)

// Fused mode: run_gpu's forward + backward become one cross_entropy_forward_backward call (set by the
// CrossEntropyGpuFused tests, which rerun the cases of CrossEntropyGpu through it).
bool g_fused = false;
struct FusedMode {
  FusedMode() { g_fused = true; }
  ~FusedMode() { g_fused = false; }
  FusedMode(const FusedMode&) = delete;
  FusedMode& operator=(const FusedMode&) = delete;
};

// Bytes on the device, or on the host in cpu_mode().
class Buf {
 public:
  explicit Buf(std::vector<unsigned char> bytes) {
    if (cpu_mode()) host_ = std::move(bytes);
    else dev_ = smk::cuda::DeviceBuffer<unsigned char>::from_host(bytes);
  }
  Buf(std::size_t n, unsigned char fill) : Buf(std::vector<unsigned char>(n, fill)) {}
  void* data() { return cpu_mode() ? static_cast<void*>(host_.data()) : static_cast<void*>(dev_.data()); }
  std::vector<unsigned char> to_host() const { return cpu_mode() ? host_ : dev_.to_host(); }
  template <typename T>
  std::vector<T> as() const {
    const auto b = to_host();
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
  }

 private:
  std::vector<unsigned char> host_;
  smk::cuda::DeviceBuffer<unsigned char> dev_;
};
template <typename T>
std::vector<unsigned char> bytes_of(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// ---- a case ----------------------------------------------------------------------------------------------------------

struct CeCase {
  std::string name;
  DType dtype = DType::f32;
  DType tdtype = DType::i64;
  DType grad_dtype = DType::f32;  // the backward's output (logits' dtype, or f32)
  std::int64_t rows = 0, classes = 0;
  std::int64_t row_stride = 0, col_stride = 1, offset = 0;  // row_stride 0: classes·col_stride
  std::vector<double> x;                                      // logical [rows, classes], representable in dtype
  std::vector<std::int64_t> t;
  std::vector<double> weights;  // empty: none
  std::vector<double> grad_loss;  // [rows] for none, [1] otherwise
  CrossEntropyOptions opt;
  bool pass_lse = true;  // the backward gets the forward's LSE
  bool in_place = false;
};

Layout logits_layout(const CeCase& c) {
  Layout l;
  l.dtype = c.dtype;
  l.shape = {c.rows, c.classes};
  l.strides = {c.row_stride ? c.row_stride : c.classes * c.col_stride, c.col_stride};
  l.offset = c.offset;
  return l;
}

struct GpuOut {
  std::vector<double> loss, lse, z, grad;
  std::string error;  // what() of an smk::Error, if one was thrown
};

// `o` threw nothing and its loss, LSE, z-loss and gradient are byte for byte `base`'s.
void same_bits(const GpuOut& o, const GpuOut& base, const std::string& what) {
  ASSERT_TRUE(o.error.empty()) << what << ": " << o.error;
  for (const auto& [got, want, name] : {std::tuple{&o.loss, &base.loss, "loss"}, std::tuple{&o.lse, &base.lse, "lse"},
                                        std::tuple{&o.z, &base.z, "z"}, std::tuple{&o.grad, &base.grad, "grad"}}) {
    ASSERT_EQ(got->size(), want->size()) << what << ", " << name;
    EXPECT_EQ(std::memcmp(got->data(), want->data(), got->size() * sizeof(double)), 0) << what << ", " << name;
  }
}

template <typename T>
smk::cuda::DeviceBuffer<T> upload(const std::vector<T>& v) {
  return smk::cuda::DeviceBuffer<T>::from_host(std::span<const T>(v.data(), v.size()));
}

// Runs the forward (and, when `backward`, the backward) on the GPU with poisoned outputs.
GpuOut run_gpu(const CeCase& c, bool backward) {
  GpuOut r;
  const Device dev = cpu_mode() ? Device::cpu() : Device::cuda(0);
  const Layout xl = logits_layout(c);
  Buf xbuf(pack(xl, c.x, 0x7F));
  const TensorView x = xl.view(xbuf.data(), dev);
  std::vector<unsigned char> tbytes;
  if (c.tdtype == DType::i64) tbytes = bytes_of(c.t);
  else tbytes = bytes_of(std::vector<std::int32_t>(c.t.begin(), c.t.end()));
  Buf tbuf(tbytes);
  const TensorView t = TensorView::contiguous(tbuf.data(), c.tdtype, dev, {c.rows});
  Buf wbuf(bytes_of(std::vector<float>(c.weights.begin(), c.weights.end())));
  CrossEntropyOptions opt = c.opt;
  if (!c.weights.empty()) opt.class_weights = TensorView::contiguous(wbuf.data(), DType::f32, dev, {c.classes});
  const bool per_row = opt.reduction == Reduction::none;
  const std::size_t nloss = per_row ? static_cast<std::size_t>(c.rows) : 1;
  Buf loss(nloss * 4, 0xFF), lse(static_cast<std::size_t>(c.rows) * 4, 0xFF), z(nloss * 4, 0xFF);
  auto shape_of = [&](void* p) {
    return per_row ? TensorView::contiguous(p, DType::f32, dev, {c.rows}) : TensorView::contiguous(p, DType::f32, dev, {});
  };
  if (g_fused && backward) {
    // One call: the forward's outputs and the gradient (poisoned before, in place when the case asks).
    Buf glbuf(bytes_of(std::vector<float>(c.grad_loss.begin(), c.grad_loss.end())));
    Layout gl_layout = xl;
    gl_layout.dtype = c.in_place ? c.dtype : c.grad_dtype;
    Buf gbuf(c.in_place ? 0 : static_cast<std::size_t>(gl_layout.extent()) * dtype_size(c.grad_dtype), 0xFF);
    const TensorView g = c.in_place ? x : gl_layout.view(gbuf.data(), dev);
    // An upstream gradient of exactly 1 for sum / mean goes as "none given" (the default), the rest as a tensor.
    const bool default_gl = !per_row && c.grad_loss.size() == 1 && c.grad_loss[0] == 1.0;
    try {
      cross_entropy_forward_backward(shape_of(loss.data()), g, x, t, opt, default_gl ? TensorView{} : shape_of(glbuf.data()),
                                     TensorView::contiguous(lse.data(), DType::f32, dev, {c.rows}), shape_of(z.data()));
    } catch (const Error& e) {
      r.error = e.what();
    }
    if (!cpu_mode()) SMK_CUDA_CHECK(cudaDeviceSynchronize());
    for (float v : loss.as<float>()) r.loss.push_back(v);
    for (float v : lse.as<float>()) r.lse.push_back(v);
    for (float v : z.as<float>()) r.z.push_back(v);
    r.grad = unpack(gl_layout, c.in_place ? xbuf.to_host() : gbuf.to_host());  // also after an error: NaN rows
    return r;
  }
  try {
    cross_entropy(shape_of(loss.data()), x, t, opt, TensorView::contiguous(lse.data(), DType::f32, dev, {c.rows}),
                  shape_of(z.data()));
  } catch (const Error& e) {
    r.error = e.what();
  }
  if (!cpu_mode()) SMK_CUDA_CHECK(cudaDeviceSynchronize());
  for (float v : loss.as<float>()) r.loss.push_back(v);
  for (float v : lse.as<float>()) r.lse.push_back(v);
  for (float v : z.as<float>()) r.z.push_back(v);
  if (!backward || !r.error.empty()) return r;

  Buf glbuf(bytes_of(std::vector<float>(c.grad_loss.begin(), c.grad_loss.end())));
  const TensorView glv = shape_of(glbuf.data());
  Layout gl_layout = xl;
  gl_layout.dtype = c.in_place ? c.dtype : c.grad_dtype;
  Buf gbuf(c.in_place ? 0 : static_cast<std::size_t>(gl_layout.extent()) * dtype_size(c.grad_dtype), 0xFF);
  const TensorView g = c.in_place ? x : gl_layout.view(gbuf.data(), dev);
  try {
    cross_entropy_backward(g, x, t, glv, opt,
                           c.pass_lse ? TensorView::contiguous(lse.data(), DType::f32, dev, {c.rows}) : TensorView{});
  } catch (const Error& e) {
    r.error = e.what();
  }
  if (!cpu_mode()) SMK_CUDA_CHECK(cudaDeviceSynchronize());
  r.grad = unpack(gl_layout, c.in_place ? xbuf.to_host() : gbuf.to_host());
  return r;
}

// ---- the reference and the gates ----------------------------------------------------------------------------------------

struct Ref {
  std::vector<double> loss, lse, z, grad;
  std::vector<double> loss_tol, z_tol, grad_tol;
};

// The depth of the kernels' sums over a row, in roundings: ⌈log2 C⌉ as for any pairwise sum, but at least the
// kernels' own tree (a vector pairwise, then up to 8 vectors in order, then the block's 8 levels: 13 + 3) plus two
// roundings per chunk state merged in order (chunks of 8192).
// The one-read kernel (fused.cu) sums a warp's terms by the same kind of tree (its registers pairwise, 5 butterfly
// levels: 10) and merges the warps' and the blocks' states (OnlineSoftmaxState::merge) in up to ⌈log2 32⌉ +
// ⌈log2 16⌉ = 9 levels; a level adds at most 8u on the side it rescales ((1 + d) and exp_diff's 5u, the product,
// the sum), so its depth is 10 + 8·9 = 82 roundings, whatever C. The fused call's cases use that (g_fused).
// The row loop (row_loop.cuh, ce11), where the fused call takes it (ce::row_loop_takes): each thread's running sum
// over K = ⌈C / (2048·V)⌉ steps (512 threads × 4 vectors of V = 16 / sizeof(dtype) logits a step): a step's terms by
// a pairwise tree (log2 of 4V: at most 5), the steps' sums added in order (K − 1), up to K − 1 rescales when a step's
// max rises (exp_diff's 5u, the product, the add: 7 each), then (1 + d) and the two combinations (combine_parts,
// 12u each: the warp's lanes, the block's warps): 5 + 8K + 25 roundings.
double row_loop_depth(std::int64_t C, DType dt) {
  const double V = 16.0 / static_cast<double>(dtype_size(dt));
  const double K = std::ceil(static_cast<double>(C) / (2048.0 * V));
  return 8 * K + 30;
}
constexpr double kFusedSumDepth = 10 + 8 * 9;
double sum_depth(const CeCase& c) {
  const std::int64_t C = c.classes;
  const double L = std::ceil(std::log2(std::max<double>(static_cast<double>(C), 1)));
  const double chunks = std::ceil(static_cast<double>(C) / 8192.0);
  const double two_read = std::max(L, 16 + 2 * chunks);
  if (g_fused && !cpu_mode() && smk::cuda::ce::row_loop_takes(C, c.dtype, c.opt))
    return std::max(two_read, row_loop_depth(C, c.dtype));
  return g_fused ? std::max(two_read, kFusedSumDepth) : two_read;
}

double capped(const CeCase& c, double x) { return c.opt.softcap > 0 ? c.opt.softcap * std::tanh(x / c.opt.softcap) : x; }

Ref reference(const CeCase& c, bool backward) {
  Ref ref;
  const Device cpu = Device::cpu();
  const std::int64_t n = c.rows, C = c.classes;
  std::vector<double> x = c.x;
  const TensorView xv = TensorView::contiguous(x.data(), DType::f64, cpu, {n, C});
  std::vector<std::int64_t> t = c.t;
  const TensorView tv = TensorView::contiguous(t.data(), DType::i64, cpu, {n});
  std::vector<double> w = c.weights;
  CrossEntropyOptions opt = c.opt;
  if (!w.empty()) opt.class_weights = TensorView::contiguous(w.data(), DType::f64, cpu, {C});
  const bool per_row = opt.reduction == Reduction::none;
  ref.loss.assign(per_row ? n : 1, 0);
  ref.z.assign(per_row ? n : 1, 0);
  ref.lse.assign(n, 0);
  auto shape_of = [&](double* p) {
    return per_row ? TensorView::contiguous(p, DType::f64, cpu, {n}) : TensorView::contiguous(p, DType::f64, cpu, {});
  };
  cpu::reference::cross_entropy(shape_of(ref.loss.data()), xv, tv, opt,
                                TensorView::contiguous(ref.lse.data(), DType::f64, cpu, {n}), shape_of(ref.z.data()));
  std::vector<double> gl = c.grad_loss;
  if (backward) {
    ref.grad.assign(n * C, 0);
    cpu::reference::cross_entropy_backward(TensorView::contiguous(ref.grad.data(), DType::f64, cpu, {n, C}), xv, tv,
                                           shape_of(gl.data()), opt);
  }

  // The gates.
  const double u = kU, eps = opt.label_smoothing, s = opt.z_loss;
  const double L = sum_depth(c), Lam = L + 9 + 2 * std::log(std::max<double>(C, 1));
  double W = 0, den_ce = 0, den_z = 0;
  for (std::int64_t j = 0; j < C; ++j) W += w.empty() ? 1 : w[j];
  std::vector<double> row_tol(n, 0), row_ztol(n, 0);
  ref.grad_tol.assign(backward ? n * C : 0, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ti = c.t[i];
    const bool ignored = ti == opt.ignore_index;
    if (ignored) continue;
    const double wt = w.empty() ? 1 : w[ti];
    den_ce += wt;
    den_z += 1;
    std::vector<double> zr(C), ez(C);
    double ez_max = 0, rest_max = -kInf;
    for (std::int64_t j = 0; j < C; ++j) {
      const double xv_ = c.x[i * C + j];
      zr[j] = capped(c, xv_);
      ez[j] = opt.softcap > 0 ? (std::fabs(xv_) / 2 + 3 * std::fabs(zr[j])) * u : 0;
      ez_max = std::max(ez_max, ez[j]);
      if (j != ti) rest_max = std::max(rest_max, zr[j]);
    }
    double rest_sum = 0;
    for (std::int64_t j = 0; j < C; ++j)
      if (j != ti && std::isfinite(rest_max)) rest_sum += std::exp(zr[j] - rest_max);
    const double lse_rest = std::isfinite(rest_max) ? rest_max + std::log(rest_sum) : -kInf;
    const double lse = ref.lse[i];
    if (!std::isfinite(lse)) continue;  // non-finite rows are checked for their NaN / inf pattern only
    const double e_lse = (std::fabs(lse) + Lam) * u + ez_max;
    const double zt = zr[ti];
    // LSE − z_t = softplus(LSE_rest − z_t): the difference of the rounded doubles would lose a tiny nll.
    const double dd = lse_rest - zt;
    const double nll = std::isfinite(lse_rest) ? (dd > 0 ? dd + std::log1p(std::exp(-dd)) : std::log1p(std::exp(dd)))
                                               : 0.0;
    const double e_d = (2 * (std::isfinite(lse_rest) ? std::fabs(lse_rest) : 0) + std::fabs(zt) + Lam) * u + 2 * ez_max;
    const double e_nll = std::min(1.0, nll) * e_d + 2 * u * nll;
    double e_ce = (1 - eps) * wt * e_nll;
    double r0 = capped(c, c.x[i * C]);
    if (!std::isfinite(r0)) r0 = 0;
    if (eps > 0) {
      double swz = 0;
      for (std::int64_t j = 0; j < C; ++j) swz += (w.empty() ? 1 : w[j]) * std::fabs(zr[j] - r0);
      e_ce += eps / C * u * (W * (std::fabs(lse) + std::fabs(lse - r0) + Lam + 3) + (L + 4) * swz);
    }
    const double ce = (1 - eps) * wt * nll;  // for the rounding terms only
    const double zl = s * lse * lse;
    row_ztol[i] = 2 * s * std::fabs(lse) * e_lse + 2 * u * zl;
    row_tol[i] = e_ce + 2 * u * std::fabs(ce) + row_ztol[i] + u * std::fabs(ce + zl + e_ce);
  }
  if (per_row) {
    ref.loss_tol = row_tol;
    ref.z_tol = row_ztol;
  } else {
    double tl = 0, tz = 0;
    for (std::int64_t i = 0; i < n; ++i) tl += row_tol[i], tz += row_ztol[i];
    if (opt.reduction == Reduction::mean) {
      tl = (den_ce > 0 ? tl / den_ce : 0) + (den_z > 0 ? tz / den_z : 0);
      tz = den_z > 0 ? tz / den_z : 0;
    }
    ref.loss_tol = {tl + u * std::fabs(ref.loss[0])};
    ref.z_tol = {tz + u * std::fabs(ref.z[0])};
  }
  if (!backward) return ref;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t ti = c.t[i];
    if (ti == opt.ignore_index || !std::isfinite(ref.lse[i])) continue;
    double g_ce, g_z;
    if (per_row) {
      g_ce = g_z = c.grad_loss[i];
    } else if (opt.reduction == Reduction::sum) {
      g_ce = g_z = c.grad_loss[0];
    } else {
      g_ce = den_ce > 0 ? c.grad_loss[0] / den_ce : 0;
      g_z = den_z > 0 ? c.grad_loss[0] / den_z : 0;
    }
    const double lse = ref.lse[i];
    const double wt = w.empty() ? 1 : w[ti];
    double ez_max = 0;
    std::vector<double> p(C), ez(C);
    // The one-read kernel's 16-bit tier (16-bit gradient: fused.cu, ce::grad_exp): e_j = exp2f(fl(fl(z_j − m_w)·
    // log2 e)) without the subtraction's TwoSum, a relative error of at most (2.25·|z_j − m_w| + 4)·u more (the
    // subtraction's and the product's roundings u·|d| each, log2 e's in f32 0.23u·|d|, exp2f's 2 ulp; |z_j − m_w|
    // ≤ M − z_j, m_w ≤ M the warp's and the row's max). l = Σ e_j gains Σ_{j≠t} p_j·(2.25·(M − z_j) + 4)·u
    // relatively (≤ (2.25·ln C + 4)·u), which every p_j takes through 1 / l; the target's entry −R / l takes it twice
    // (R's own share and 1 / l's). Its own e_t is exp_diff's, as before.
    const bool tier16 = g_fused && c.grad_dtype != DType::f32;
    double row_max = -std::numeric_limits<double>::infinity();
    if (tier16)
      for (std::int64_t j = 0; j < C; ++j) row_max = std::max(row_max, capped(c, c.x[i * C + j]));
    for (std::int64_t j = 0; j < C; ++j) {
      const double xv_ = c.x[i * C + j], z = capped(c, xv_);
      ez[j] = opt.softcap > 0 ? (std::fabs(xv_) / 2 + 3 * std::fabs(z)) * u : 0;
      ez_max = std::max(ez_max, ez[j]);
      p[j] = std::exp(z - lse);
    }
    double rest = 0;
    for (std::int64_t j = 0; j < C; ++j)
      if (j != ti) rest += p[j];
    auto tier_of = [&](std::int64_t j) {
      const double z_j = capped(c, c.x[i * C + j]);
      return tier16 && j != ti && std::isfinite(row_max) && std::isfinite(z_j) ? u * (2.25 * (row_max - z_j) + 4)
                                                                                 : 0.0;
    };
    double tier_l = 0;  // relative, on l; R = rest·l carries it absolutely, as rest·(its share of it)
    if (tier16)
      for (std::int64_t j = 0; j < C; ++j) tier_l += p[j] * tier_of(j);
    const double e_lse = (std::fabs(lse) + Lam) * u + ez_max;
    const double zc = std::fabs(2 * s * g_z * lse);
    for (std::int64_t j = 0; j < C; ++j) {
      const double rho = e_lse + ez[j] + (L + 6) * u + tier_of(j) + tier_l;
      const double hard_part = j == ti ? rest * (e_lse + ez_max + (L + 6) * u + tier_l) + tier_l : p[j] * rho;
      const double d = ref.grad[i * C + j];
      double tol = std::fabs(g_ce) * ((1 - eps) * wt * hard_part + eps / C * W * p[j] * rho) +
                   zc * p[j] * (rho + (std::fabs(lse) > 0 ? e_lse / std::fabs(lse) : 0)) + 6 * u * std::fabs(d);
      if (opt.softcap > 0) {
        const double xv_ = c.x[i * C + j], th = std::tanh(xv_ / opt.softcap);
        const double fac = 1 - th * th;
        const double d_nocap = fac > 0 ? std::fabs(d) / fac : 0;
        tol = tol * fac + u * d_nocap * (std::fabs(xv_ / opt.softcap) * std::fabs(th) * fac + 4 * th * th + 1);
      }
      ref.grad_tol[i * C + j] = tol + 2 * std::numeric_limits<float>::denorm_min();
    }
  }
  return ref;
}

bool close(double got, double want, double tol, DType out, std::string* why) {
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
  double slack = tol;
  if (out != DType::f32) slack += 0.5 * ulp_of(out, std::max(std::fabs(got), std::fabs(want)));
  if (std::fabs(got - want) <= slack) return true;
  *why = "error " + sci(std::fabs(got - want)) + " > gate " + sci(slack);
  return false;
}

// Checks one case's forward (and backward) against the reference; returns the number of failures.
int check_case(const CeCase& c, bool backward = true) {
  const GpuOut g = run_gpu(c, backward);
  if (!g.error.empty()) {
    ADD_FAILURE() << c.name << ": unexpected error: " << g.error;
    return 1;
  }
  const Ref r = reference(c, backward);
  int failures = 0;
  auto expect = [&](const char* what, std::size_t i, double got, double want, double tol, DType out) {
    std::string why;
    if (close(got, want, tol, out, &why)) return;
    if (++failures <= 6)
      ADD_FAILURE() << c.name << ": " << what << "[" << i << "]: got " << got << ", want " << want << " (" << why << ")";
  };
  for (std::size_t i = 0; i < r.loss.size(); ++i) expect("loss", i, g.loss[i], r.loss[i], r.loss_tol[i], DType::f32);
  for (std::size_t i = 0; i < r.z.size(); ++i) expect("z_loss", i, g.z[i], r.z[i], r.z_tol[i], DType::f32);
  const double Lam = sum_depth(c) + 9 + 2 * std::log(std::max<double>(c.classes, 1));
  for (std::size_t i = 0; i < r.lse.size(); ++i) {
    double ez = 0;
    for (std::int64_t j = 0; j < c.classes && c.opt.softcap > 0; ++j) {
      const double xv = c.x[i * c.classes + j];
      ez = std::max(ez, (std::fabs(xv) / 2 + 3 * std::fabs(capped(c, xv))) * kU);
    }
    expect("lse", i, g.lse[i], r.lse[i], (std::fabs(r.lse[i]) + Lam) * kU + ez, DType::f32);
  }
  if (backward) {
    const DType out = c.in_place ? c.dtype : c.grad_dtype;
    for (std::size_t i = 0; i < r.grad.size(); ++i) expect("grad", i, g.grad[i], r.grad[i], r.grad_tol[i], out);
  }
  return failures;
}

// ---- case builders ----------------------------------------------------------------------------------------------------

CeCase random_case(const std::string& name, DType dtype, std::int64_t rows, std::int64_t C, std::uint64_t seed,
                   Reduction red = Reduction::none) {
  CeCase c;
  c.name = name;
  c.dtype = dtype;
  c.grad_dtype = dtype;
  c.rows = rows;
  c.classes = C;
  c.x = random_values(dtype, rows * C, 2.0, 1.5, seed);
  std::mt19937_64 rng(seed + 7);
  std::uniform_int_distribution<std::int64_t> pick(0, std::max<std::int64_t>(C - 1, 0));
  for (std::int64_t i = 0; i < rows; ++i) c.t.push_back(pick(rng));
  c.opt.reduction = red;
  std::uniform_real_distribution<double> gd(-2.0, 2.0);
  if (red == Reduction::none)
    for (std::int64_t i = 0; i < rows; ++i) c.grad_loss.push_back(static_cast<float>(gd(rng)));
  else
    c.grad_loss = {0.75};
  return c;
}

std::vector<std::int64_t> lengths() {
  std::vector<std::int64_t> all = {1, 2, 3, 31, 33, 1025, 8191, 8192, 8193, 30001, 40000, 65537, 151936};
  if (small_mode()) all.erase(std::remove_if(all.begin(), all.end(), [](auto n) { return n > 8193; }), all.end());
  return all;
}

// ---- tests ----------------------------------------------------------------------------------------------------------

void EveryDtypeTargetTypeAndLength_body();
TEST(CrossEntropyGpu, EveryDtypeTargetTypeAndLength) { EveryDtypeTargetTypeAndLength_body(); }
TEST(CrossEntropyGpuFused, EveryDtypeTargetTypeAndLength) {
  FusedMode fused;
  EveryDtypeTargetTypeAndLength_body();
}
void EveryDtypeTargetTypeAndLength_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  std::uint64_t seed = 1;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (DType tt : {DType::i32, DType::i64})
      for (std::int64_t C : lengths()) {
        const std::int64_t rows = C > 30000 ? 3 : 5;
        CeCase c = random_case(std::string(dtype_name(dt)) + "/" + dtype_name(tt) + "/C=" + std::to_string(C), dt,
                               rows, C, ++seed);
        c.tdtype = tt;
        check_case(c);
        if (dt != DType::f32) {  // an f32 gradient for 16-bit logits
          c.grad_dtype = DType::f32;
          c.name += "/grad f32";
          check_case(c);
        }
      }
}

void EveryReductionAndUpstream_body();
TEST(CrossEntropyGpu, EveryReductionAndUpstream) { EveryReductionAndUpstream_body(); }
TEST(CrossEntropyGpuFused, EveryReductionAndUpstream) {
  FusedMode fused;
  EveryReductionAndUpstream_body();
}
void EveryReductionAndUpstream_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (Reduction red : {Reduction::none, Reduction::sum, Reduction::mean})
    for (DType dt : {DType::f32, DType::bf16}) {
      CeCase c = random_case("reduction " + std::to_string(static_cast<int>(red)), dt, 37, 1000, 11, red);
      c.grad_loss = red == Reduction::none ? c.grad_loss : std::vector<double>{-1.75};
      check_case(c);
      c.pass_lse = false;  // the backward recomputes the LSE
      c.name += "/no lse";
      check_case(c);
    }
}

void IgnoreIndex_body();
TEST(CrossEntropyGpu, IgnoreIndex) { IgnoreIndex_body(); }
TEST(CrossEntropyGpuFused, IgnoreIndex) {
  FusedMode fused;
  IgnoreIndex_body();
}
void IgnoreIndex_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (std::int64_t ignore : {std::int64_t{-100}, std::int64_t{-7}, std::int64_t{2}})
    for (Reduction red : {Reduction::none, Reduction::mean, Reduction::sum}) {
      CeCase c = random_case("ignore " + std::to_string(ignore), DType::f32, 16, 300, 21, red);
      c.opt.ignore_index = ignore;
      for (std::int64_t i = 0; i < c.rows; i += 3) c.t[i] = ignore;
      if (ignore == 2) c.t[1] = 2;  // a valid class id that is ignored
      check_case(c);
    }
}

void EveryRowIgnored_body();
TEST(CrossEntropyGpu, EveryRowIgnored) { EveryRowIgnored_body(); }
TEST(CrossEntropyGpuFused, EveryRowIgnored) {
  FusedMode fused;
  EveryRowIgnored_body();
}
void EveryRowIgnored_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (bool zero : {false, true}) {
    CeCase c = random_case(zero ? "all ignored, 0" : "all ignored, NaN", DType::f32, 8, 50, 31, Reduction::mean);
    std::fill(c.t.begin(), c.t.end(), -100);
    c.opt.mean_of_nothing_is_zero = zero;
    check_case(c);
    const GpuOut g = run_gpu(c, true);
    if (zero) EXPECT_EQ(g.loss[0], 0.0);
    else EXPECT_TRUE(std::isnan(g.loss[0]));
    for (double v : g.grad) ASSERT_EQ(v, 0.0);
  }
}

void LabelSmoothing_body();
TEST(CrossEntropyGpu, LabelSmoothing) { LabelSmoothing_body(); }
TEST(CrossEntropyGpuFused, LabelSmoothing) {
  FusedMode fused;
  LabelSmoothing_body();
}
void LabelSmoothing_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (float eps : {0.0f, 0.05f, 0.9f, 1.0f})
    for (Reduction red : {Reduction::none, Reduction::mean}) {
      CeCase c = random_case("smoothing " + std::to_string(eps), DType::f32, 9, 20000, 41, red);
      c.opt.label_smoothing = eps;
      check_case(c);
      c.dtype = c.grad_dtype = DType::bf16;
      c.x = random_values(DType::bf16, c.rows * c.classes, 3.0, 20.0, 42);  // offset logits: r must absorb it
      c.name += "/bf16";
      check_case(c);
    }
  CeCase bad = random_case("smoothing 1.5", DType::f32, 2, 10, 43);
  bad.opt.label_smoothing = 1.5f;
  const GpuOut g = run_gpu(bad, false);
  EXPECT_NE(g.error.find("label_smoothing"), std::string::npos) << g.error;
}

void ClassWeightsZLossSoftcap_body();
TEST(CrossEntropyGpu, ClassWeightsZLossSoftcap) { ClassWeightsZLossSoftcap_body(); }
TEST(CrossEntropyGpuFused, ClassWeightsZLossSoftcap) {
  FusedMode fused;
  ClassWeightsZLossSoftcap_body();
}
void ClassWeightsZLossSoftcap_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (Reduction red : {Reduction::none, Reduction::sum, Reduction::mean}) {
    CeCase c = random_case("weights", DType::f32, 12, 9000, 51, red);
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> wd(0.0, 3.0);
    for (std::int64_t j = 0; j < c.classes; ++j) c.weights.push_back(static_cast<float>(wd(rng)));
    check_case(c);
    c.opt.label_smoothing = 0.1f;
    c.name = "weights+smoothing";
    check_case(c);
    c.opt.z_loss = 1e-4f;
    c.name = "weights+smoothing+zloss";
    check_case(c);
    c.opt.softcap = 3.0f;
    c.x = random_values(DType::f32, c.rows * c.classes, 4.0, 0.0, 52);
    c.name = "weights+smoothing+zloss+softcap";
    check_case(c);
  }
  for (float s : {0.0f, 1e-4f, 0.5f}) {
    CeCase c = random_case("z-loss " + std::to_string(s), DType::bf16, 6, 4000, 53, Reduction::mean);
    c.x = random_values(DType::bf16, c.rows * c.classes, 2.0, 30.0, 54);  // LSE far from 0
    c.opt.z_loss = s;
    check_case(c);
  }
  CeCase c = random_case("softcap 30, bf16", DType::bf16, 4, 70000, 55);
  c.x = random_values(DType::bf16, c.rows * c.classes, 20.0, 0.0, 56);
  c.opt.softcap = 30.0f;
  check_case(c);
}

// The article's example: logits [0, −120], target 1: loss exactly 120 and gradient [1, −1].
void ArticleExample_body();
TEST(CrossEntropyGpu, ArticleExample) { ArticleExample_body(); }
TEST(CrossEntropyGpuFused, ArticleExample) {
  FusedMode fused;
  ArticleExample_body();
}
void ArticleExample_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    CeCase c;
    c.name = "article";
    c.dtype = c.grad_dtype = dt;
    c.rows = 1;
    c.classes = 2;
    c.x = {0.0, -120.0};
    c.t = {1};
    c.opt.reduction = Reduction::none;
    c.grad_loss = {1.0};
    const GpuOut g = run_gpu(c, true);
    ASSERT_TRUE(g.error.empty()) << g.error;
    EXPECT_EQ(g.loss[0], 120.0);
    EXPECT_EQ(g.grad[0], 1.0);
    EXPECT_EQ(g.grad[1], -1.0);
  }
}

// One dominant logit, p_t → 1 in bf16: the loss and the target's gradient keep their relative precision (a rounded
// LSE minus z_t, or p_t − 1, would give 0).
void DominantLogitBf16_body();
TEST(CrossEntropyGpu, DominantLogitBf16) { DominantLogitBf16_body(); }
TEST(CrossEntropyGpuFused, DominantLogitBf16) {
  FusedMode fused;
  DominantLogitBf16_body();
}
void DominantLogitBf16_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (DType out : {DType::bf16, DType::f32}) {
    CeCase c;
    c.name = std::string("dominant, grad ") + dtype_name(out);
    c.dtype = DType::bf16;
    c.grad_dtype = out;
    c.rows = 4;
    c.classes = 32000;
    c.x.assign(c.rows * c.classes, 0.0);
    for (std::int64_t i = 0; i < c.rows; ++i) {
      for (std::int64_t j = 0; j < c.classes; ++j) c.x[i * c.classes + j] = round_to(DType::bf16, -30.0 - (j % 7));
      c.t.push_back(17 * (i + 1));
      c.x[i * c.classes + c.t[i]] = 8.0 * static_cast<double>(i);  // margins 30 to 54
    }
    c.opt.reduction = Reduction::none;
    c.grad_loss.assign(c.rows, 1.0);
    check_case(c);
    const GpuOut g = run_gpu(c, true);
    const Ref r = reference(c, true);
    for (std::int64_t i = 0; i < c.rows; ++i) {
      EXPECT_GT(g.loss[i], 0.0) << "row " << i;
      EXPECT_NEAR(g.loss[i] / r.loss[i], 1.0, 1e-5) << "row " << i;
      const double gt = g.grad[i * c.classes + c.t[i]], rt = r.grad[i * c.classes + c.t[i]];
      EXPECT_LT(gt, 0.0) << "row " << i;
      EXPECT_NEAR(gt / rt, 1.0, out == DType::f32 ? 1e-5 : 8e-3) << "row " << i;
    }
  }
}

// The target's entry on either side of p_t = ½ (review F9, session 8). The one-read kernel (fused.cu fused_kernel) and
// the two-read backward (backward.cu target_kernel) form the hard part p_t − 1 as p_t − 1 below ½ and as
// −Σ_{j≠t} p_j (−R / l) from ½ on. Rows built for it: the target logit ln p, E ∈ {1, 8} other logits ln((1 − p) / E)
// and the rest of the row −200 (e^-197 and below are 0 in f32), each rounded to the logits' dtype, for p ∈ {10^-12,
// 0.49, ½, 0.51, 1 − (4/3)·2^-20} (4/3 keeps 1 − p_t off the f32 grid next to 1, on which p̂_t − 1 would be exact);
// the rows' own p_t (float64, from the rounded logits) stays on the side of ½ aimed at, and their LSE is ≈ 0. Each
// entry is checked against float64 (p_t − 1)·g and p_j·g within a gate derived for these rows (u = 2^-24; ε = 5.5u,
// exp_diff's error: expf's 2 ulp ≤ 4u relatively, the TwoSum correction's rounding u, second-order terms):
//  - one-read kernel: every sum before the row's scalars is exact (the others' terms are 1 against their own max, the
//    sums integers, the −200 logits' shares count·0), so R = E·exp_diff(a, M) and e_t = exp_diff(z_t, M), one of the
//    two exactly 1 (the maximum's), E a power of two; l = R + e_t, 1 / l and p_t = e_t·(1 / l) round once each, so
//    p̂_t = p_t·(1 + ρ), |ρ| ≤ (1 − p_t)·ε + 3u. Below ½, p̂_t − 1 rounds once more (half an ulp of a value in
//    (−1, −½]: u / 2): |Δ| ≤ p_t·((1 − p_t)·ε + 3u) + u / 2. From ½, −R·(1 / l) is off by at most p_t·ε + 3u
//    relatively (R's or e_t's exponential weighted by p_t, l, 1 / l, the product): |Δ| ≤ (1 − p_t)·(p_t·ε + 3u).
//    Another entry, 1·(g·(1 / l))·exp_diff(a, M): relatively 2ε + 4u.
//  - two-read backward: p̂_t = exp_diff(z_t, LSE') from the forward's LSE' = LSE + δ (read back, so δ is known; the
//    forward's LSE has its own gate in check_case), relatively r = |e^-δ − 1| + e^-δ·ε; the others' p_j are E equal
//    floats of the same error whose sum (chunk sums, then their sum in order) rounds at most E − 1 times. Below ½:
//    |Δ| ≤ p_t·r + u / 2; from ½: |Δ| ≤ (1 − p_t)·(r + (E − 1)·u). Another entry: relatively r + u.
//  - then g·(p_t − 1) rounds once (u·|g·(p_t − 1)|); a bf16 output adds half its ulp. Within 2^-10 of ½ either branch
//    may be taken (p̂_t is within 10^-6 of p_t), and the gate is the larger of the two.
// In f32 ulps of the entry (one-read, before g's rounding): ≤ 3.4 at p_t = 0.49 (E = 1), ≤ 5.7 at 0.51, 8.5u
// relatively at 1 − (4/3)·2^-20, half an ulp at 10^-12 (the entry correctly rounded). Only the rows next to 1 tell the
// two forms apart: there p̂_t − 1 (the other branch) cancels to an error of up to 2^-25 / 2^-20 = 2^-5 relatively,
// 10^3 to 5·10^4 times the gate in the emulation below (f32 outputs; a bf16 output's half ulp, 2^-9, hides part of
// it). Near ½ either form meets these gates, and at 10^-12 so does −R / l (l = E and E·(1 / E) = 1 exactly): those
// rows pin the entry's accuracy, not the branch. Checked before any device run by emulating both paths' f32
// arithmetic on these rows, every exponential moved within expf's 2 ulps: f32 outputs at most 0.50 of the gate on the
// target entry, 0.59 on the others (0.62 and 0.998 with exponentials 2.5 ulps off); bf16 outputs up to 0.998, their
// half ulp.
struct EitherSide {
  CeCase c;
  std::vector<double> aim;  // the p_t each row was built for
  std::vector<int> others;  // E
};
EitherSide either_side_case(DType dt, DType out, std::int64_t C) {
  EitherSide e;
  CeCase& c = e.c;
  c.name = std::string("target entry either side of 1/2, ") + dtype_name(dt) + " -> " + dtype_name(out) +
           ", C=" + std::to_string(C);
  c.dtype = dt;
  c.grad_dtype = out;
  c.classes = C;
  c.opt.reduction = Reduction::none;
  for (int E : {1, 8}) {
    if (E + 1 > C) continue;
    for (double p : {1e-12, 0.49, 0.5, 0.51, 1 - std::ldexp(4.0 / 3, -20)}) {
      const std::int64_t i = c.rows++;
      const std::int64_t t = (i * 7919 + 5) % C;
      c.x.resize(static_cast<std::size_t>(c.rows * C), round_to(dt, -200.0));
      c.t.push_back(t);
      c.x[i * C + t] = round_to(dt, std::log(p));
      const double a = round_to(dt, std::log((1 - p) / E));
      for (int k = 0; k < E; ++k) {  // spread over the row (other blocks, other chunks), never on the target
        const std::int64_t off = 1 + (k * C / E + C / 2) % (C - 1);
        c.x[i * C + (t + off) % C] = a;
      }
      c.grad_loss.push_back(i % 2 ? -0.75 : 1.0);
      e.aim.push_back(p);
      e.others.push_back(E);
    }
  }
  return e;
}

// A row's float64 max M, Σ_j e^(z_j − M), p_t and 1 − p_t (the latter as Σ_{j≠t} p_j: no cancellation next to 1).
struct TargetProbability {
  double M, s, p, q;
};
TargetProbability target_probability(const double* x, std::int64_t C, std::int64_t t) {
  double M = -kInf;
  for (std::int64_t j = 0; j < C; ++j) M = std::max(M, x[j]);
  double s = 0, rest = 0;
  for (std::int64_t j = 0; j < C; ++j) {
    const double ej = std::exp(x[j] - M);
    s += ej;
    if (j != t) rest += ej;
  }
  return {M, s, std::exp(x[t] - M) / s, rest / s};
}

void TargetEntryEitherSideOfOneHalf_body(bool fused) {
  std::vector<std::int64_t> widths = {2, 8193, 151936};  // one block / one chunk; 2 chunks; 5 wide blocks, 19 chunks
  if (small_mode()) widths.pop_back();
  struct Types {
    DType in, out;
  };
  for (const Types ty :
       {Types{DType::f32, DType::f32}, Types{DType::bf16, DType::bf16}, Types{DType::bf16, DType::f32}})
    for (const std::int64_t C : widths) {
      const EitherSide e = either_side_case(ty.in, ty.out, C);
      const CeCase& c = e.c;
      const std::string mode = fused ? " (one read)" : " (two reads)";
      check_case(c);  // the loss, the LSE and every entry within the general gates
      if (cpu_mode()) continue;  // the CPU path keeps −R / l everywhere: the kernels' gates below are not its
      if (fused) smk::cuda::ce::set_last_fused_launch({});
      const GpuOut g = run_gpu(c, true);
      ASSERT_TRUE(g.error.empty()) << c.name << mode << ": " << g.error;
      if (fused) EXPECT_GE(smk::cuda::ce::last_fused_launch().cluster, 1) << c.name << ": not the one-read kernel";
      const double u = kU, eps = 5.5 * kU, tiny = 2 * static_cast<double>(std::numeric_limits<float>::denorm_min());
      int failures = 0;
      auto expect = [&](std::int64_t i, std::int64_t j, double got, double want, double tol) {
        if (ty.out != DType::f32) tol += 0.5 * ulp_of(ty.out, std::max(std::fabs(got), std::fabs(want)));
        if (std::isfinite(got) && std::fabs(got - want) <= tol) return;
        if (++failures <= 8)
          ADD_FAILURE() << c.name << mode << ", row " << i << " (p_t aimed at " << e.aim[i] << ", E = " << e.others[i]
                        << "), entry " << j << (j == c.t[i] ? " (the target)" : "") << ": got " << got << ", want "
                        << want << ", error " << std::fabs(got - want) << " > gate " << tol;
      };
      for (std::int64_t i = 0; i < c.rows; ++i) {
        const double* x = c.x.data() + i * C;
        const std::int64_t t = c.t[i];
        const auto [M, s, p, q] = target_probability(x, C, t);  // p_t and 1 − p_t, without cancellation
        const double lse = M + std::log(s);
        if (e.aim[i] < 0.5) ASSERT_LT(p, 0.5 - std::ldexp(1.0, -10)) << c.name << ", row " << i;
        if (e.aim[i] > 0.5) ASSERT_GT(p, 0.5 + std::ldexp(1.0, -10)) << c.name << ", row " << i;
        const int E = e.others[i];
        double below, from, rel_other;
        if (fused) {
          below = p * (q * eps + 3 * u) + u / 2;
          from = q * (p * eps + 3 * u);
          rel_other = 2 * eps + 4 * u;
        } else {
          const double delta = std::fabs(g.lse[i] - lse);
          const double r = std::expm1(delta) + std::exp(delta) * eps;
          below = p * r + u / 2;
          from = q * (r + (E - 1) * u);
          rel_other = r + u;
        }
        const double hard = std::fabs(p - 0.5) < std::ldexp(1.0, -10) ? std::max(below, from) : p < 0.5 ? below : from;
        const double gl = c.grad_loss[i];
        for (std::int64_t j = 0; j < C; ++j) {
          const double got = g.grad[i * C + j];
          if (j == t) {
            const double want = -gl * q;  // g·(p_t − 1)
            expect(i, j, got, want, std::fabs(gl) * hard + u * std::fabs(want) + tiny);
          } else {
            const double want = gl * std::exp(x[j] - M) / s;
            expect(i, j, got, want, std::fabs(want) * rel_other + tiny);
          }
        }
      }
      EXPECT_EQ(failures, 0) << c.name << mode;
    }
}
TEST(CrossEntropyGpu, TargetEntryEitherSideOfOneHalf) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  TargetEntryEitherSideOfOneHalf_body(false);
}
TEST(CrossEntropyGpuFused, TargetEntryEitherSideOfOneHalf) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  FusedMode fused;
  TargetEntryEitherSideOfOneHalf_body(true);
}

// The rows of both TargetEntryUnderTheMean tests (review F22's D2: one construction): f32 logits and gradient, the
// mean, upstream gradient 1, C classes; 70 rows, two of them ignored (17 and 50), the others' p_t aimed at 64 values
// from 1e-4 to 0.2 and at 0.6, 0.75, 0.9, 0.99: the target at log p_t, E others (8 every third row, else 1) at
// log((1 − p_t) / E), the rest at −200. *count: the rows not ignored; e.aim / e.others: each row's p_t and E.
EitherSide target_entry_mean_case(const std::string& name, std::int64_t C, int* count) {
  EitherSide e;
  CeCase& c = e.c;
  c.name = name + ", C=" + std::to_string(C);
  c.dtype = DType::f32;
  c.grad_dtype = DType::f32;
  c.classes = C;
  c.opt.reduction = Reduction::mean;
  c.grad_loss = {1.0};
  std::vector<double> ps;
  for (int k = 0; k < 64; ++k) ps.push_back(1e-4 + (0.2 - 1e-4) * k / 63);
  for (double p : {0.6, 0.75, 0.9, 0.99}) ps.push_back(p);
  *count = 0;
  for (std::size_t k = 0; k < ps.size() + 2; ++k) {
    const std::int64_t i = c.rows++;
    const std::int64_t t = (i * 7919 + 5) % C;
    c.x.resize(static_cast<std::size_t>(c.rows * C), -200.0);
    const bool ignored = k == 17 || k == 50;
    const double p = ignored ? 0.25 : ps[k - (k > 17) - (k > 50)];
    const int E = k % 3 == 0 ? 8 : 1;
    c.t.push_back(ignored ? -100 : t);
    c.x[i * C + t] = round_to(DType::f32, std::log(p));
    const double a = round_to(DType::f32, std::log((1 - p) / E));
    for (int m = 0; m < E; ++m) {
      const std::int64_t off = 1 + (m * C / E + C / 2) % (C - 1);
      c.x[i * C + (t + off) % C] = a;
    }
    e.aim.push_back(p);
    e.others.push_back(E);
    *count += !ignored;
  }
  return e;
}

// The target entry under the mean (ce9, session 9): g = g₁ / Σ w_t is not an f32, and the entry g·(p_t − 1) was
// fl(fl(p_t − 1)·fl(g)), three roundings (ce6's comparison with torch: ~2 ulps on f32 rows, torch ~1.6). Since ce9
// the two-read backward's target_kernel forms it in double from its f32 p_t (or Σ_{j≠t} p_j), with g exact, and rounds
// once. The one-read kernel kept the f32 form: every variant of this arithmetic built into it (in double, before or
// after the row's store; in f32 with a Fast2Sum and g's low part) made ptxas spill 68-92 bytes a thread in the f32
// wide kernel, which has none (CUDA 13.0, sm_90a); since ce10 the mean's kernel re-forms its entry in double
// (TargetFix, on by default since session 10's review), tested by CrossEntropyGpuFused.TargetEntryUnderTheMean below
// on these rows (target_entry_mean_case). Rows as TargetEntryEitherSideOfOneHalf's (target ln p, E others
// ln((1 − p) / E), the rest −200),
// p swept over 64 values in [10^-4, 0.2] where p_t's own error (scaled by p_t) is small beside an ulp, and four from ½
// on; two rows ignored; 68 rows counted, so g = 1/68 rounds in f32. Gate, derived as that test's: one-read p̂_t =
// e_t / l with l rounded once, |ρ| ≤ (1 − p_t)·ε + u (ε = 5.5u, exp_diff), so |Δ(p_t − 1)| ≤ p_t·((1 − p_t)·ε + u)
// below ½ and (1 − p_t)·(p_t·ε + u) from ½; two-read as there (r from the LSE read back); then g·that, plus half an
// ulp of the entry for the one rounding, plus 2^-50 relatively for the double arithmetic. The old form misses such a
// gate (the one-read kernel's, p_t = e_t / l) on 23-98 of 400 rows in an f32 emulation (exponentials correctly
// rounded, counts 3 to 1234; at most 2.2 gates) where the new one stays within 0.96 of it. Two-read only: the
// one-read gate and branch were removed after the session's review (F8), as nothing ran them.
TEST(CrossEntropyGpu, TargetEntryUnderTheMean) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  std::vector<std::int64_t> widths = {8193, 32000};
  for (const std::int64_t C : widths) {
    int count = 0;
    EitherSide e = target_entry_mean_case("target entry under the mean", C, &count);
    CeCase& c = e.c;
    ASSERT_EQ(count, 68);
    check_case(c);
    if (cpu_mode()) continue;
    const std::string mode = " (two reads)";
    const GpuOut g = run_gpu(c, true);
    ASSERT_TRUE(g.error.empty()) << c.name << mode << ": " << g.error;
    const double u = kU, eps = 5.5 * kU, gl = 1.0 / count;
    int failures = 0;
    double worst = 0;
    for (std::int64_t i = 0; i < c.rows; ++i) {
      const std::int64_t t = c.t[i];
      if (t < 0) continue;
      const auto [M, s, p, q] = target_probability(c.x.data() + i * C, C, t);
      const int E = e.others[i];
      // r from the LSE read back (the forward's LSE error δ; check_case above gated that LSE against float64).
      const double delta = std::fabs(g.lse[i] - (M + std::log(s)));
      const double r = std::expm1(delta) + std::exp(delta) * eps;
      const double hard = p < 0.5 ? p * r : q * (r + (E - 1) * u);
      if (std::fabs(p - 0.5) < std::ldexp(1.0, -10)) continue;  // not built there
      const double want = -gl * q;
      const double tol = gl * hard + 0.5 * ulp_of(DType::f32, want) + std::ldexp(std::fabs(want), -50);
      const double got = g.grad[i * C + t];
      worst = std::max(worst, std::fabs(got - want) / tol);
      if (!(std::fabs(got - want) <= tol) && ++failures <= 8)
        ADD_FAILURE() << c.name << mode << ", row " << i << " (p_t aimed at " << e.aim[i] << ", E = " << E
                      << "): got " << got << ", want " << want << ", error " << std::fabs(got - want) << " > gate "
                      << tol << " (" << std::fabs(got - want) / ulp_of(DType::f32, want) << " ulps)";
    }
    EXPECT_EQ(failures, 0) << c.name << mode;
    std::printf("%s%s: worst target entry %.3f of its gate\n", c.name.c_str(), mode.c_str(), worst);
  }
}

// The one-read kernel's f32 target entry under the mean (ce10, session 10; TargetFix in common.cuh, on by default
// since the session's review: kFusedTargetFix; FusedTuning::target_fix 1 here, so the gate holds the fix whatever the
// default, and the default launch must give the same bits): the kernel's owner thread leaves R = Σ_{j≠t} e_j and
// e_t, and the mean's kernel forms g·(−R / (R + e_t)) in double with
// g = grad_loss / count unrounded, rounding once. The rows of TargetEntryUnderTheMean: every sum before the row's
// scalars is exact (the others' terms are 1 against their own max, the −200 logits' shares 0 in f32), so R and e_t
// are exact but for one exponential, exp_diff(a, M) or exp_diff(z_t, M) (the other is the max's, exactly 1), off by
// ρ, |ρ| ≤ ε = 5.5u relatively (expf's 2 ulps, the TwoSum's rounding, second order). Then 1 − p̂_t = R / (R + e_t) is
// off by p_t·|ρ| relatively: d log(R / (R + e_t)) = p_t·(ρ_R − ρ_t). The double arithmetic adds ~2^-52; the final
// rounding half an ulp of the entry. Gate: g·(1 − p_t)·p_t·ε + ½ ulp. The f32 form before (p_t − 1 or −R·(1 / l),
// then the f32 scale and the product: three roundings) is ~1.5 ulps: over this gate wherever p_t·ε is small.
TEST(CrossEntropyGpuFused, TargetEntryUnderTheMean) {
  SMK_REQUIRE_GPU();
  FusedMode fused;
  namespace ce = smk::cuda::ce;
  for (const std::int64_t C : {std::int64_t{8193}, std::int64_t{32000}, std::int64_t{151936}}) {
    int count = 0;
    CeCase c = target_entry_mean_case("one-read target entry under the mean", C, &count).c;
    ASSERT_EQ(count, 68);
    ce::FusedTuning fix;  // on whatever kFusedTargetFix says (on by default since the session's review)
    fix.target_fix = 1;
    ce::set_fused_tuning(fix);
    ce::set_last_fused_launch({});
    check_case(c);
    EXPECT_GT(ce::last_fused_launch().cluster, 0) << c.name << ": not the one-read kernel";
    const GpuOut g = run_gpu(c, true);
    ce::set_fused_tuning({});
    ASSERT_TRUE(g.error.empty()) << c.name << ": " << g.error;
    const GpuOut d = run_gpu(c, true);  // the default launch: the fix is on by default (kFusedTargetFix)
    ASSERT_TRUE(d.error.empty()) << c.name << ", default: " << d.error;
    ASSERT_EQ(d.grad.size(), g.grad.size()) << c.name;
    EXPECT_EQ(std::memcmp(d.grad.data(), g.grad.data(), g.grad.size() * sizeof(double)), 0)
        << c.name << ": the default launch's gradient differs from the fix's";
    const double eps = 5.5 * kU, gl = 1.0 / count;
    int failures = 0;
    double worst = 0;
    for (std::int64_t i = 0; i < c.rows; ++i) {
      const std::int64_t t = c.t[i];
      if (t < 0) continue;
      const auto [M, s, p, q] = target_probability(c.x.data() + i * C, C, t);
      (void)M, (void)s;
      const double want = -gl * q;
      const double tol = gl * q * p * eps + 0.5 * ulp_of(DType::f32, want) + std::ldexp(std::fabs(want), -50);
      const double got = g.grad[i * C + t];
      worst = std::max(worst, std::fabs(got - want) / tol);
      if (!(std::fabs(got - want) <= tol) && ++failures <= 8)
        ADD_FAILURE() << c.name << ", row " << i << " (p_t " << p << "): got " << got << ", want " << want
                      << ", error " << std::fabs(got - want) << " > gate " << tol << " ("
                      << std::fabs(got - want) / ulp_of(DType::f32, want) << " ulps)";
    }
    EXPECT_EQ(failures, 0) << c.name;
    std::printf("%s: worst target entry %.3f of its gate\n", c.name.c_str(), worst);
  }
}

// Dependent launches (fused.cu, kFusedPdl; ce9): the dispatcher launches single-block shapes as programmatic
// dependents (target scan -> one-read kernel -> the mean's reduction, griddepcontrol) and clusters plain (review F6,
// session 9; this replaces the tail launch's FusedTailSameBits, removed with the tail). Pinned here, at single-block
// shapes (32000 and 5000 classes: one wide block a row; rows = the resident blocks + 7, a partial last round) and a
// cluster shape (151936 classes: 5 wide blocks a row; 48 rows, more than one round of 22 clusters): the launch
// record's pdl flag under the default tuning (by the rule: on at cluster 1, off on clusters), and the dependent launch
// (FusedTuning::pdl 1) and the default bitwise equal to the plain one (pdl 0) under mean, sum and none, with label
// smoothing, z-loss and class weights on (every term of the exchange). Outputs are poisoned with NaN before every
// call (run_gpu). An ordering bug in the chain (a dependent reading its primary's output early) would show as an
// occasional wrong result that one call rarely catches, so under the mean and the sum the default launch of the
// single-block shapes is repeated kRepeats times against the plain launch's bits; the default is also checked once
// against float64 under the mean (check_case's gates). Under the mean the f32 shapes' target entries are rewritten
// by the mean's kernel, the chain's last dependent (TargetFix, on by default since session 10's review), so the
// chain's order covers those gradient entries too.
TEST(CrossEntropyGpuFused, PdlRuleAndSameBits) {
  SMK_REQUIRE_GPU();
  FusedMode fused;
  namespace ce = smk::cuda::ce;
  struct Shape {
    DType dt;
    std::int64_t C;
    int cluster;  // the dispatcher's wide blocks a row: ⌈C / (1024 × 32)⌉
  };
  std::vector<Shape> shapes = {
      {DType::f32, 32000, 1}, {DType::bf16, 32000, 1}, {DType::f32, 5000, 1}, {DType::bf16, 151936, 5}};
  const int kRepeats = small_mode() ? 10 : 50;
  if (small_mode()) shapes = {{DType::f32, 32000, 1}, {DType::bf16, 151936, 5}};
  for (const Shape& sh : shapes) {
    // The resident blocks of a single-block shape: one call's launch record.
    int rows = 48;
    if (sh.cluster == 1) {
      ce::set_fused_tuning({});
      ce::set_last_fused_launch({});
      (void)run_gpu(random_case("probe", sh.dt, 1, sh.C, 5), true);
      ASSERT_GT(ce::last_fused_launch().resident, 0);
      rows = ce::last_fused_launch().resident + 7;
    }
    for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
      CeCase c = random_case("pdl", sh.dt, rows, sh.C, 307 + sh.C, red);
      c.opt.label_smoothing = 0.1f;
      c.opt.z_loss = 1e-4f;
      c.weights.resize(sh.C);
      for (std::int64_t j = 0; j < sh.C; ++j) c.weights[j] = 0.5 + static_cast<double>((j * 37) % 11) / 8;
      c.name = std::string("dependent launches, ") + dtype_name(sh.dt) + ", C=" + std::to_string(sh.C) + ", " +
               std::to_string(rows) + " rows, " +
               (red == Reduction::mean ? "mean" : red == Reduction::sum ? "sum" : "none");
      auto launch = [&](ce::FusedTuning tuning, bool want_pdl, const std::string& what) {
        tuning.row_loop = 0;  // the one-read kernel's rule (the row loop has its own test: CrossEntropyGpuRowLoop)
        ce::set_fused_tuning(tuning);
        ce::set_last_fused_launch({});
        GpuOut o = run_gpu(c, true);
        const ce::FusedLaunch fl = ce::last_fused_launch();
        EXPECT_EQ(fl.cluster, sh.cluster) << c.name << ", " << what << ": not the one-read kernel's expected shape";
        EXPECT_EQ(fl.pdl, want_pdl) << c.name << ", " << what;
        return o;
      };
      const GpuOut base = launch({0, -1, false, 0, 0}, false, "plain");
      ASSERT_TRUE(base.error.empty()) << c.name << ": " << base.error;
      same_bits(launch({0, -1, false, 0, 1}, true, "dependent"), base, c.name + ", dependent");
      same_bits(launch({}, sh.cluster == 1, "default"), base, c.name + ", default");
      if (red != Reduction::none && sh.cluster == 1)  // the default's dependent chain (clusters launch plain)
        for (int k = 0; k < kRepeats && !HasFailure(); ++k)
          same_bits(launch({}, sh.cluster == 1, "default"), base, c.name + ", default, call " + std::to_string(k));
      ce::set_fused_tuning({});
      if (red == Reduction::mean) check_case(c);  // the default launch against float64
    }
  }
  ce::set_fused_tuning({});
}

void InPlaceStridedAndUnaligned_body();
TEST(CrossEntropyGpu, InPlaceStridedAndUnaligned) { InPlaceStridedAndUnaligned_body(); }
TEST(CrossEntropyGpuFused, InPlaceStridedAndUnaligned) {
  FusedMode fused;
  InPlaceStridedAndUnaligned_body();
}
void InPlaceStridedAndUnaligned_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (DType dt : {DType::f32, DType::bf16}) {
    CeCase c = random_case("in place", dt, 7, 20001, 61, Reduction::mean);
    c.in_place = true;
    check_case(c);
    c.in_place = false;
    c.row_stride = 20001 + 13;
    c.offset = 1;
    c.name = "row stride, unaligned";
    check_case(c);
    c.in_place = true;
    c.name = "row stride, unaligned, in place";
    check_case(c);
    c.col_stride = 3;
    c.row_stride = 0;
    c.offset = 0;
    c.in_place = false;
    c.name = "column stride 3";
    check_case(c);
    c.in_place = true;
    c.name = "column stride 3, in place";
    check_case(c);
  }
}

void NonFiniteRows_body();
TEST(CrossEntropyGpu, NonFiniteRows) { NonFiniteRows_body(); }
TEST(CrossEntropyGpuFused, NonFiniteRows) {
  FusedMode fused;
  NonFiniteRows_body();
}
void NonFiniteRows_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  CeCase c = random_case("non-finite", DType::f32, 4, 100, 71);
  c.x[0 * 100 + 5] = kNaN;                               // a NaN logit: NaN row
  for (int j = 0; j < 100; ++j) c.x[1 * 100 + j] = -kInf;  // every logit −inf: NaN loss and gradient
  c.x[2 * 100 + c.t[2] + (c.t[2] == 0 ? 1 : -1)] = kInf;  // +inf on a non-target: LSE inf, loss inf
  check_case(c);
}

TEST(CrossEntropyGpu, BadTargetsRaiseAndNaN) {
  SMK_REQUIRE_GPU();
  for (std::int64_t bad : {std::int64_t{300}, std::int64_t{-1}, std::int64_t{-101}})
    for (DType tt : {DType::i32, DType::i64}) {
      CeCase c = random_case("bad target", DType::f32, 6, 300, 81);
      c.tdtype = tt;
      c.t[4] = bad;
      c.t[5] = bad;
      const GpuOut f = run_gpu(c, false);
      EXPECT_NE(f.error.find("cross_entropy"), std::string::npos) << f.error;
      EXPECT_NE(f.error.find("'targets'"), std::string::npos) << f.error;
      EXPECT_NE(f.error.find("targets[4] = " + std::to_string(bad)), std::string::npos) << f.error;
      EXPECT_TRUE(std::isnan(f.loss[4]) && std::isnan(f.loss[5]));
      for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isfinite(f.loss[i])) << i;
      // The backward on its own (the forward's error was caught above): the same error, NaN gradient rows.
      CeCase b = c;
      b.pass_lse = false;
      b.opt.reduction = Reduction::mean;
      b.grad_loss = {1.0};
      const Device dev = Device::cuda(0);
      const Layout xl = logits_layout(b);
      auto xbuf = upload(pack(xl, b.x, 0));
      std::vector<std::int64_t> t64 = b.t;
      std::vector<std::int32_t> t32(b.t.begin(), b.t.end());
      smk::cuda::DeviceBuffer<unsigned char> tbuf = tt == DType::i64
          ? upload(std::vector<unsigned char>(reinterpret_cast<unsigned char*>(t64.data()), reinterpret_cast<unsigned char*>(t64.data() + t64.size())))
          : upload(std::vector<unsigned char>(reinterpret_cast<unsigned char*>(t32.data()), reinterpret_cast<unsigned char*>(t32.data() + t32.size())));
      smk::cuda::DeviceBuffer<float> gl(1), grad(b.rows * b.classes);
      const std::vector<float> one = {1.0f};
      gl.copy_from_host(one);
      grad.fill_bytes(0);
      std::string what;
      try {
        cross_entropy_backward(TensorView::contiguous(grad.data(), DType::f32, dev, {b.rows, b.classes}),
                               xl.view(xbuf.data(), dev), TensorView::contiguous(tbuf.data(), tt, dev, {b.rows}),
                               TensorView::contiguous(gl.data(), DType::f32, dev, {}), b.opt);
      } catch (const Error& e) {
        what = e.what();
      }
      EXPECT_NE(what.find("cross_entropy_backward"), std::string::npos) << what;
      EXPECT_NE(what.find("targets[4]"), std::string::npos) << what;
      const auto gh = grad.to_host();
      for (std::int64_t j = 0; j < b.classes; ++j) {
        ASSERT_TRUE(std::isnan(gh[4 * b.classes + j]));
        ASSERT_TRUE(std::isfinite(gh[0 * b.classes + j]));
      }
    }
}

TEST(CrossEntropyGpu, BadClassWeightsRaise) {
  SMK_REQUIRE_GPU();
  CeCase c = random_case("bad weight", DType::f32, 3, 40, 91, Reduction::mean);
  c.weights.assign(40, 1.0);
  c.weights[17] = -0.5;
  const GpuOut g = run_gpu(c, false);
  EXPECT_NE(g.error.find("class_weights"), std::string::npos) << g.error;
  EXPECT_NE(g.error.find("weight[17]"), std::string::npos) << g.error;
}

// Bitwise: a repeat gives the same bytes, and a row's loss, LSE and gradient are the same alone or in a batch.
void DeterministicAndBatchInvariant_body();
TEST(CrossEntropyGpu, DeterministicAndBatchInvariant) { DeterministicAndBatchInvariant_body(); }
TEST(CrossEntropyGpuFused, DeterministicAndBatchInvariant) {
  FusedMode fused;
  DeterministicAndBatchInvariant_body();
}
void DeterministicAndBatchInvariant_body() {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  for (std::int64_t C : {std::int64_t{1000}, std::int64_t{32000}, std::int64_t{151936}}) {
    if (small_mode() && C > 8192) continue;
    CeCase batch = random_case("batch", DType::bf16, 24, C, 101);
    batch.opt.label_smoothing = 0.1f;
    batch.opt.z_loss = 1e-4f;
    const GpuOut a = run_gpu(batch, true), b = run_gpu(batch, true);
    ASSERT_TRUE(a.error.empty()) << a.error;
    EXPECT_EQ(std::memcmp(a.loss.data(), b.loss.data(), a.loss.size() * 8), 0);
    EXPECT_EQ(std::memcmp(a.grad.data(), b.grad.data(), a.grad.size() * 8), 0);
    for (std::int64_t r : {std::int64_t{0}, std::int64_t{13}, std::int64_t{23}}) {
      CeCase one = batch;
      one.rows = 1;
      one.x.assign(batch.x.begin() + r * C, batch.x.begin() + (r + 1) * C);
      one.t = {batch.t[r]};
      one.grad_loss = {batch.grad_loss[r]};
      const GpuOut o = run_gpu(one, true);
      EXPECT_EQ(o.loss[0], a.loss[r]) << "C=" << C << " row " << r;
      EXPECT_EQ(o.lse[0], a.lse[r]) << "C=" << C << " row " << r;
      EXPECT_EQ(std::memcmp(o.grad.data(), a.grad.data() + r * C, C * 8), 0) << "C=" << C << " row " << r;
    }
  }
}

// The fused call's own cases: the upstream gradient left out (1) for every reduction, rows wider than a cluster
// holds (the two-read path), every cluster size a 32000-wide row can take, bad targets (error after every output
// was written, NaN rows).
TEST(CrossEntropyGpuFused, DefaultUpstreamWideRowsAndClusterSizes) {
  SMK_REQUIRE_GPU_OR_CPU_MODE();
  FusedMode fused;
  for (Reduction red : {Reduction::none, Reduction::sum, Reduction::mean}) {
    CeCase c = random_case("default upstream", DType::bf16, 9, 5000, 111, red);
    c.grad_loss.assign(red == Reduction::none ? c.rows : 1, 1.0);
    c.opt.z_loss = 1e-4f;
    check_case(c);
  }
  if (!small_mode()) {
    CeCase wide = random_case("200003 wide: past the one-read kernel", DType::bf16, 3, 200003, 113, Reduction::mean);
    wide.in_place = true;
    check_case(wide);
  }
  if (!cpu_mode()) {
    // Both block kinds (narrow 512 × 24, wide 1024 × 32), cluster sizes of each, and the unstaged loads
    // (tune_cross_entropy's variants).
    struct Shape {
      int threads, cluster;
      bool prefetch;
    };
    for (const Shape sh : {Shape{512, 2, true}, Shape{512, 3, false}, Shape{512, 5, true}, Shape{512, 16, true},
                           Shape{1024, 1, true}, Shape{1024, 1, false}, Shape{1024, 2, true}, Shape{1024, 8, true},
                           Shape{1024, 2, false}, Shape{1024, 5, true}}) {
      smk::cuda::ce::FusedTuning tuning;
      tuning.cluster = sh.cluster;
      tuning.stage = sh.prefetch ? 1 : 0;
      tuning.threads = sh.threads;
      smk::cuda::ce::set_fused_tuning(tuning);
      const std::string name = std::to_string(sh.threads) + " threads, cluster " + std::to_string(sh.cluster) +
                               (sh.prefetch ? "" : ", unstaged");
      CeCase c = random_case(name, DType::f32, 11, small_mode() ? 8193 : 32000, 115 + sh.cluster + sh.threads,
                             Reduction::mean);
      c.opt.label_smoothing = 0.05f;
      c.in_place = sh.cluster == 5 || sh.cluster == 2;
      check_case(c);
      // bf16 with class weights, z-loss and per-row upstream gradients on the same shape.
      CeCase b = random_case(name + ", bf16", DType::bf16, 7, small_mode() ? 4097 : 30001, 117 + sh.cluster,
                             Reduction::none);
      b.weights.resize(b.classes);
      for (std::int64_t j = 0; j < b.classes; ++j) b.weights[j] = 0.5 + static_cast<double>(j % 7) / 4;
      b.opt.z_loss = 1e-4f;
      b.opt.label_smoothing = sh.cluster == 1 ? 0.1f : 0.0f;
      b.in_place = !sh.prefetch;
      check_case(b);
    }
    smk::cuda::ce::set_fused_tuning({});
    // The 151936-wide row through the one-read kernel on both block kinds (13 narrow, 5 wide blocks), the wide ones
    // staged and not: the dispatcher takes 5 wide blocks, staged for 16-bit logits since ce5 (fused.cu stage_rule).
    if (!small_mode()) {
      smk::cuda::ce::FusedTuning wide;
      wide.any_width = true;
      smk::cuda::ce::set_fused_tuning(wide);
      for (int threads : {512, 1024, 1025}) {  // 13 narrow blocks, 5 wide ones staged, 5 wide ones unstaged
        wide.threads = threads == 1025 ? 1024 : threads;
        wide.stage = threads == 1025 ? 0 : 1;
        smk::cuda::ce::set_fused_tuning(wide);
        for (DType dt : {DType::f32, DType::bf16}) {
          CeCase c = random_case(std::string("kernel at 151936, ") + dtype_name(dt) + ", " +
                                     std::to_string(wide.threads) + " threads" + (wide.stage ? ", staged" : ""),
                                 dt, 3, 151936, 131, Reduction::sum);
          c.opt.z_loss = 1e-4f;
          c.in_place = dt == DType::bf16;
          check_case(c);
        }
      }
      // More wide blocks than the row needs (session 8, ce6: 5-block clusters leave 22 of the 132 SMs idle): cluster
      // sizes 6 to 16 through tuning's override, which ce6 timed (tune_cross_entropy --clusters) and the dispatcher
      // did not take (it keeps 5 for these rows), staged by the dispatcher's rule. The launch record is reset before
      // each case, so a launch the GPU refuses (the two-read path then serves) leaves cluster 0, not the last case's.
      for (int cluster : {6, 7, 8, 10, 12, 16}) {
        smk::cuda::ce::FusedTuning more;
        more.any_width = true;
        more.cluster = cluster;
        smk::cuda::ce::set_fused_tuning(more);
        for (DType dt : {DType::f32, DType::bf16}) {
          CeCase c = random_case(std::string("kernel at 151936 on ") + std::to_string(cluster) + " wide blocks, " +
                                     dtype_name(dt),
                                 dt, 3, 151936, 133 + cluster, Reduction::mean);
          c.opt.label_smoothing = cluster == 6 ? 0.05f : 0.0f;
          c.opt.z_loss = 1e-4f;
          c.in_place = dt == DType::bf16;
          smk::cuda::ce::set_last_fused_launch({});
          check_case(c);
          const smk::cuda::ce::FusedLaunch l = smk::cuda::ce::last_fused_launch();
          EXPECT_EQ(l.cluster, cluster) << c.name;
        }
      }
      smk::cuda::ce::set_fused_tuning({});
    }
  }
}

void FusedBadTargets_body();
TEST(CrossEntropyGpuFused, BadTargetsRaiseAndNaN) {
  FusedMode fused;
  FusedBadTargets_body();
}
void FusedBadTargets_body() {
  SMK_REQUIRE_GPU();
  for (bool softcap : {false, true}) {  // the one-read kernel and the two-read path
    CeCase c = random_case("bad target", DType::f32, 6, 300, 81);
    c.opt.softcap = softcap ? 20.0f : 0.0f;
    c.t[4] = 300;
    const GpuOut g = run_gpu(c, true);
    EXPECT_NE(g.error.find("cross_entropy_forward_backward"), std::string::npos) << g.error;
    EXPECT_NE(g.error.find("targets[4] = 300"), std::string::npos) << g.error;
    EXPECT_TRUE(std::isnan(g.loss[4]));
    for (int i : {0, 1, 2, 3, 5}) EXPECT_TRUE(std::isfinite(g.loss[i])) << i;
    ASSERT_EQ(g.grad.size(), static_cast<std::size_t>(6 * 300));
    for (int j = 0; j < 300; ++j) {
      ASSERT_TRUE(std::isnan(g.grad[4 * 300 + j])) << j;
      ASSERT_TRUE(std::isfinite(g.grad[0 * 300 + j])) << j;
    }
  }
}

// ---- the row loop (ce11, src/cuda/cross_entropy/row_loop.cuh) ------------------------------------------------------
// Row-loop mode: the fused call with tuning's row_loop 1, so every case of the bodies above runs the row loop whatever
// its width (soft-capped cases still take the two calls); the gates take its summation depth (row_loop_depth).
struct RowLoopMode {
  FusedMode fused;
  explicit RowLoopMode(int blocks = 0, int hints = -1) {
    smk::cuda::ce::FusedTuning t;
    t.row_loop = 1;
    t.loop_blocks = blocks;
    t.loop_hints = hints;
    smk::cuda::ce::set_fused_tuning(t);
  }
  ~RowLoopMode() { smk::cuda::ce::set_fused_tuning({}); }
  RowLoopMode(const RowLoopMode&) = delete;
  RowLoopMode& operator=(const RowLoopMode&) = delete;
};
// (In cpu_mode the bodies would run the CPU path a third time, after CrossEntropyGpu's and CrossEntropyGpuFused's
// runs of it: skipped.)
#define SMK_ROW_LOOP_TEST(name, body)                                                        \
  TEST(CrossEntropyGpuRowLoop, name) {                                                       \
    if (cpu_mode()) GTEST_SKIP() << "the CPU path runs under CrossEntropyGpu(Fused) already"; \
    RowLoopMode loop;                                                                        \
    body();                                                                                  \
  }
SMK_ROW_LOOP_TEST(EveryDtypeTargetTypeAndLength, EveryDtypeTargetTypeAndLength_body)
SMK_ROW_LOOP_TEST(EveryReductionAndUpstream, EveryReductionAndUpstream_body)
SMK_ROW_LOOP_TEST(IgnoreIndex, IgnoreIndex_body)
SMK_ROW_LOOP_TEST(EveryRowIgnored, EveryRowIgnored_body)
SMK_ROW_LOOP_TEST(LabelSmoothing, LabelSmoothing_body)
SMK_ROW_LOOP_TEST(ClassWeightsZLossSoftcap, ClassWeightsZLossSoftcap_body)
SMK_ROW_LOOP_TEST(ArticleExample, ArticleExample_body)
SMK_ROW_LOOP_TEST(DominantLogitBf16, DominantLogitBf16_body)
SMK_ROW_LOOP_TEST(InPlaceStridedAndUnaligned, InPlaceStridedAndUnaligned_body)
SMK_ROW_LOOP_TEST(NonFiniteRows, NonFiniteRows_body)
SMK_ROW_LOOP_TEST(BadTargetsRaiseAndNaN, FusedBadTargets_body)
SMK_ROW_LOOP_TEST(DeterministicAndBatchInvariant, DeterministicAndBatchInvariant_body)
#undef SMK_ROW_LOOP_TEST

// One call of the row loop under tuning (row_loop 1; `blocks` an SM, 0 the kernel's occupancy; cache hints `hints`,
// −1 on, 0 off; `stage` staged steps, −1 the dispatcher's), its launch record checked: the row loop ran, its resident
// blocks a multiple of `blocks`, its staged steps `want_stage` (−1: not checked). Shared by
// SameBitsAtEveryGridHintAndBatch and StagedSameBits (review D3, session 12).
GpuOut launch_row_loop_case(const CeCase& cc, int blocks, int hints, int stage, int want_stage, const std::string& what) {
  namespace ce = smk::cuda::ce;
  ce::FusedTuning t;
  t.row_loop = 1;
  t.loop_blocks = blocks;
  t.loop_hints = hints;
  t.loop_stage = stage;
  ce::set_fused_tuning(t);
  ce::set_last_fused_launch({});
  GpuOut o = run_gpu(cc, true);
  const ce::FusedLaunch fl = ce::last_fused_launch();
  EXPECT_TRUE(fl.row_loop) << cc.name << ", " << what << ": not the row loop";
  if (blocks > 0 && fl.row_loop) {
    EXPECT_EQ(fl.resident % blocks, 0) << cc.name << ", " << what;
  }
  if (want_stage >= 0) {
    EXPECT_EQ(fl.loop_stage, want_stage) << cc.name << ", " << what;
  }
  ce::set_fused_tuning({});
  return o;
}

// The staged steps a row-loop launch asking for `steps` (of 32 KB: 512 threads × 4 vectors × 16 bytes) gets on device
// 0 (review F1, session 12): all of them where they and the kernel's static shared memory (1552 bytes under CUDA
// 13.0, sm_90a; up to 3 KB allowed here) fit the device's opt-in limit, none where the steps alone exceed it; −1
// (not checked) in between. The H200's 227 KB gives 3 and 6; an A100's 163 KB 3 and none of 6; sm_86 / sm_89's
// 99 KB 3.
int staged_steps_here(int steps) {
  int optin = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const std::int64_t bytes = std::int64_t{steps} * 32768;
  if (bytes + 3072 <= optin) return steps;
  return bytes > optin ? 0 : -1;
}

// The row loop's bits do not depend on its grid (blocks an SM: which block owns a row, how many rows a block walks) nor
// on its cache hints, nor on the batch: a batch of more rows than the grid holds (rows wrap around the blocks) under
// every reduction, with label smoothing, z-loss and class weights on, against the same call at 1 and 2 blocks an SM
// and without hints, and single rows against the batch's. Outputs poisoned before every call (run_gpu). The default
// launch is checked against float64 too (check_case), and its launch record says the row loop ran.
TEST(CrossEntropyGpuRowLoop, SameBitsAtEveryGridHintAndBatch) {
  SMK_REQUIRE_GPU();
  FusedMode fused;
  namespace ce = smk::cuda::ce;
  struct Shape {
    DType dt, grad;
    std::int64_t C, rows;
  };
  // Rows: more than one block an SM holds (132 SMs on the H200), so that at 1 block an SM rows wrap; the narrower
  // shapes more than two blocks an SM hold (264), so that they wrap at the default too.
  std::vector<Shape> shapes = {{DType::bf16, DType::bf16, 151936, 140}, {DType::f32, DType::f32, 100000, 140},
                               {DType::f16, DType::f32, 32000, 300}, {DType::bf16, DType::bf16, 30001, 300}};
  if (small_mode()) shapes = {{DType::bf16, DType::bf16, 8193, 40}, {DType::f32, DType::f32, 4099, 40}};
  for (const Shape& sh : shapes)
    for (Reduction red : {Reduction::mean, Reduction::none}) {
      const std::int64_t rows = sh.rows;
      CeCase c = random_case("row loop", sh.dt, rows, sh.C, 401 + sh.C, red);
      c.grad_dtype = sh.grad;
      c.opt.label_smoothing = 0.1f;
      c.opt.z_loss = 1e-4f;
      c.weights.resize(sh.C);
      for (std::int64_t j = 0; j < sh.C; ++j) c.weights[j] = 0.5 + static_cast<double>((j * 37) % 11) / 8;
      c.name = std::string("row loop, ") + dtype_name(sh.dt) + " (grad " + dtype_name(sh.grad) + "), C=" +
               std::to_string(sh.C) + (red == Reduction::mean ? ", mean" : ", none");
      auto launch = [](int blocks, int hints, const CeCase& cc, const std::string& what) {
        return launch_row_loop_case(cc, blocks, hints, -1, -1, what);
      };
      const GpuOut base = launch(0, -1, c, "default");
      ASSERT_TRUE(base.error.empty()) << c.name << ": " << base.error;
      same_bits(launch(0, -1, c, "again"), base, c.name + ", again");
      same_bits(launch(1, -1, c, "1 block an SM"), base, c.name + ", 1 block an SM");
      same_bits(launch(2, 0, c, "2 blocks an SM, no hints"), base, c.name + ", no hints");
      for (std::int64_t r : {std::int64_t{0}, rows - 1}) {
        CeCase one = c;
        one.rows = 1;
        one.x.assign(c.x.begin() + r * sh.C, c.x.begin() + (r + 1) * sh.C);
        one.t = {c.t[r]};
        one.grad_loss = red == Reduction::none ? std::vector<double>{c.grad_loss[r]} : c.grad_loss;
        const GpuOut o = launch(0, -1, one, "one row");
        ASSERT_TRUE(o.error.empty()) << o.error;
        EXPECT_EQ(o.lse[0], base.lse[r]) << c.name << ", row " << r;
        if (red == Reduction::none) {
          EXPECT_EQ(o.loss[0], base.loss[r]) << c.name << ", row " << r;
          EXPECT_EQ(std::memcmp(o.grad.data(), base.grad.data() + r * sh.C, sh.C * 8), 0) << c.name << ", row " << r;
        }
      }
      {  // (not RowLoopMode: its FusedMode would clear g_fused on leaving, and the next shapes would run the two calls)
        ce::FusedTuning t;
        t.row_loop = 1;
        ce::set_fused_tuning(t);
        check_case(c);
        ce::set_fused_tuning({});
      }
    }
}

// The staged steps a device's opt-in limit allows (fused.cu row_loop_stage_fit; review F1, session 12): steps of 32 KB
// plus the kernel's static shared memory against cudaDevAttrMaxSharedMemoryPerBlockOptin, at the limits of the H200
// (232448 bytes), an A100 (166912), sm_86 / sm_89 (101376) and sm_75 (65536), the kernel's 1552 static bytes (ptxas,
// CUDA 13.0, sm_90a) and on the bound. Host code only: runs without a GPU (and in cpu_mode).
TEST(CrossEntropyGpuRowLoop, StageFitsTheDevice) {
  namespace ce = smk::cuda::ce;
  constexpr int kStatic = 1552;
  // H200: 3 steps (98304 + 1552 bytes) and 6 (196608 + 1552) fit 232448: the shipped default and tuning's maximum.
  EXPECT_EQ(ce::row_loop_stage_fit(3, kStatic, 232448), 3);
  EXPECT_EQ(ce::row_loop_stage_fit(6, kStatic, 232448), 6);
  // A100: 3 fit; 5 (163840 + 1552 = 165392) fit 166912; 6 (198160) do not, so none are staged.
  EXPECT_EQ(ce::row_loop_stage_fit(3, kStatic, 166912), 3);
  EXPECT_EQ(ce::row_loop_stage_fit(5, kStatic, 166912), 5);
  EXPECT_EQ(ce::row_loop_stage_fit(6, kStatic, 166912), 0);
  // sm_86 / sm_89: 3 (99856) fit 101376, 4 (132624) do not.
  EXPECT_EQ(ce::row_loop_stage_fit(3, kStatic, 101376), 3);
  EXPECT_EQ(ce::row_loop_stage_fit(4, kStatic, 101376), 0);
  // sm_75: 1 step (34320) fits 65536; 2 (67088) do not.
  EXPECT_EQ(ce::row_loop_stage_fit(1, kStatic, 65536), 1);
  EXPECT_EQ(ce::row_loop_stage_fit(2, kStatic, 65536), 0);
  // On the bound: 3 steps and 3072 static bytes are exactly 101376; one byte more does not fit.
  EXPECT_EQ(ce::row_loop_stage_fit(3, 3072, 101376), 3);
  EXPECT_EQ(ce::row_loop_stage_fit(3, 3073, 101376), 0);
  // None asked: none.
  EXPECT_EQ(ce::row_loop_stage_fit(0, kStatic, 232448), 0);
}

// The staged row loop (ce12; row_loop.cuh kStaged, FusedTuning::loop_stage): the row's first whole steps kept in
// shared memory and taken from there by pass 2 give the unstaged kernel's bits, since the values, their registers and
// every sum are the same. Checked bitwise against loop_stage 0 (ce11's kernel) at 3 steps (two blocks an SM), 6 steps
// (one block an SM) and the default, under the mean and none, with label smoothing, z-loss and class weights on, rows
// in place too (the stage holds the logits that pass 2 overwrites), and the launch record's staged steps (the
// dispatcher's default too, as the literal 3: review F3 of session 12; none where the device cannot give a block the
// steps asked for: staged_steps_here); the staged launch's single rows against its batch (batch invariance), and
// check_case against float64. The widths give 0, 1, 2 and 9 whole steps (a step is 512 threads × 4 vectors: 16384
// 16-bit logits, 8192 f32), with a ragged last step.
// Rows that are not 16-byte vectors (a row's bytes not a multiple of 16: bf16 30001, f32 16385; or an odd column
// offset, last) take the unstaged kernel (launch record 0) with the same bits.
TEST(CrossEntropyGpuRowLoop, StagedSameBits) {
  SMK_REQUIRE_GPU();
  FusedMode fused;
  namespace ce = smk::cuda::ce;
  struct Shape {
    DType dt, grad;
    std::int64_t C, rows;
    bool in_place;
  };
  std::vector<Shape> shapes = {{DType::bf16, DType::bf16, 151936, 140, true}, {DType::f32, DType::f32, 100000, 140, false},
                               {DType::f16, DType::f32, 40000, 300, false},   {DType::bf16, DType::bf16, 30001, 300, false},
                               {DType::f32, DType::f32, 16385, 300, true},    {DType::bf16, DType::bf16, 8000, 300, false}};
  if (small_mode())
    shapes = {{DType::bf16, DType::bf16, 40000, 12, true}, {DType::f32, DType::f32, 20000, 12, false},
              {DType::f16, DType::f32, 16392, 12, false}, {DType::f16, DType::f16, 16390, 12, false}};
  auto launch = [](int blocks, int stage, const CeCase& cc, int want_stage, const std::string& what) {
    return launch_row_loop_case(cc, blocks, -1, stage, want_stage, what);
  };
  // What this device gives 3 and 6 steps (the H200: all), and the dispatcher's default: 3 steps for every dtype
  // (fused.cu kLoopStage16 = kLoopStageF32 = 3, ce12), written here as a literal so that a changed default fails.
  const int three = staged_steps_here(3), six = staged_steps_here(6);
  for (const Shape& sh : shapes)
    for (Reduction red : {Reduction::mean, Reduction::none}) {
      CeCase c = random_case("staged", sh.dt, sh.rows, sh.C, 907 + sh.C, red);
      c.grad_dtype = sh.grad;
      c.in_place = sh.in_place && sh.grad == sh.dt;
      c.opt.label_smoothing = 0.1f;
      c.opt.z_loss = 1e-4f;
      c.weights.resize(sh.C);
      for (std::int64_t j = 0; j < sh.C; ++j) c.weights[j] = 0.5 + static_cast<double>((j * 37) % 11) / 8;
      c.t[1] = -100;  // an ignored row (ignore_index's default): its gradient row 0 in both kernels
      c.name = std::string("staged, ") + dtype_name(sh.dt) + " (grad " + dtype_name(sh.grad) + "), C=" +
               std::to_string(sh.C) + (red == Reduction::mean ? ", mean" : ", none") + (c.in_place ? ", in place" : "");
      // Staged only where every row is 16-byte vectors (the buffers' bases are aligned): C·sizeof a multiple of 16.
      const bool vec = sh.C * static_cast<std::int64_t>(dtype_size(sh.dt)) % 16 == 0;
      const GpuOut base = launch(0, 0, c, 0, "unstaged");
      ASSERT_TRUE(base.error.empty()) << c.name << ": " << base.error;
      const GpuOut staged = launch(0, 3, c, vec ? three : 0, "3 steps");
      same_bits(staged, base, c.name + ", 3 steps");
      same_bits(launch(1, 6, c, vec ? six : 0, "6 steps"), base, c.name + ", 6 steps, 1 block an SM");
      same_bits(launch(0, -1, c, vec ? three : 0, "default"), base, c.name + ", the default's staging");
      for (std::int64_t r : {std::int64_t{0}, sh.rows - 1}) {
        CeCase one = c;
        one.rows = 1;
        one.x.assign(c.x.begin() + r * sh.C, c.x.begin() + (r + 1) * sh.C);
        one.t = {c.t[r]};
        one.grad_loss = red == Reduction::none ? std::vector<double>{c.grad_loss[r]} : c.grad_loss;
        const GpuOut o = launch(0, 3, one, vec ? three : 0, "one row");
        ASSERT_TRUE(o.error.empty()) << o.error;
        EXPECT_EQ(o.lse[0], staged.lse[r]) << c.name << ", row " << r;
        if (red == Reduction::none) {
          EXPECT_EQ(o.loss[0], staged.loss[r]) << c.name << ", row " << r;
          EXPECT_EQ(std::memcmp(o.grad.data(), staged.grad.data() + r * sh.C, sh.C * 8), 0) << c.name << ", row " << r;
        }
      }
      {
        ce::FusedTuning t;
        t.row_loop = 1;
        t.loop_stage = 3;
        ce::set_fused_tuning(t);
        check_case(c);
        ce::set_fused_tuning({});
      }
    }
  // Not 16-byte vectors (the logits one element off their aligned base): the unstaged kernel, the same bits as the
  // aligned rows' staged call.
  const std::int64_t C = small_mode() ? 40000 : 151936;
  CeCase c = random_case("staged, unaligned", DType::bf16, 6, C, 991, Reduction::none);
  const GpuOut aligned = launch(0, 3, c, three, "aligned");
  c.offset = 1;
  c.row_stride = C + 1;
  same_bits(launch(0, 3, c, 0, "unaligned"), aligned, c.name);
}

// The dispatcher takes the row loop exactly where its rule says so, and the one-read kernel (or the two calls)
// elsewhere. The rule is written here as stated (fused.cu, ce11's run of e711d37), not through the code's own
// row_loop_rule, so a moved bound fails: 16-bit logits from 65537 classes on, every dtype above 163840 (up to 2^28).
// Each width sits on or next to a bound (65536 / 65537 for 16-bit, 163840 / 163841 for f32), plus the and
// 262144 (past the one-read kernel's widest row: the two calls before ce11); the dispatched call is checked against
// float64 at each. Its launch record's staged steps too (review F3, session 12): the default, 3 for every dtype
// (fused.cu loop_stage_steps), written as a literal, where the row loop runs on rows of 16-byte vectors (C·sizeof a
// multiple of 16: the buffers are aligned), else none.
TEST(CrossEntropyGpuRowLoop, DispatcherTakesItByTheRule) {
  SMK_REQUIRE_GPU();
  FusedMode fused;
  namespace ce = smk::cuda::ce;
  ce::set_fused_tuning({});
  const int three = staged_steps_here(3);  // 3 on every sm_80+ device (99 KB of opt-in and up)
  std::vector<std::int64_t> widths = {8192, 32000, 65536, 65537, 100000, 151936, 163840, 163841, 262144};
  if (small_mode()) widths = {65536, 65537, 163840, 163841};
  for (DType dt : {DType::bf16, DType::f32, DType::f16})
    for (std::int64_t C : widths) {
      const bool expected = dtype_size(dt) == 2 ? C >= 65537 : C > 163840;
      CeCase c = random_case(std::string("dispatcher, ") + dtype_name(dt) + ", C=" + std::to_string(C), dt, 3, C,
                             503 + C, Reduction::mean);
      ce::set_last_fused_launch({});
      check_case(c);
      const ce::FusedLaunch fl = ce::last_fused_launch();
      EXPECT_EQ(fl.row_loop, expected) << c.name;
      const int want_stage = expected && C * static_cast<std::int64_t>(dtype_size(dt)) % 16 == 0 ? three : 0;
      if (want_stage >= 0) {
        EXPECT_EQ(fl.loop_stage, want_stage) << c.name << ": staged steps";
      }
    }
}

// More than 2^32 logits (bf16, 8.6 GB): zeros, so every row's loss is log C and the gradient 1/C, 1/C − 1.
TEST(CrossEntropyGpu, SixtyFourBitIndexing) {
  SMK_REQUIRE_GPU();
  if (small_mode()) GTEST_SKIP() << "SMK_GPU_TEST_SMALL: skips the 8.6 GB case";
  const std::int64_t C = 151936, rows = (std::int64_t{1} << 32) / C + 2;
  const Device dev = Device::cuda(0);
  std::size_t free_b = 0, total_b = 0;
  SMK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < static_cast<std::size_t>(rows * C * 2 + (1 << 30))) GTEST_SKIP() << "needs 9 GB of device memory";
  smk::cuda::DeviceBuffer<unsigned char> x(static_cast<std::size_t>(rows * C * 2));
  x.fill_bytes(0);
  std::vector<std::int64_t> t(rows);
  for (std::int64_t i = 0; i < rows; ++i) t[i] = (i * 7919) % C;
  auto tbuf = upload(t);
  smk::cuda::DeviceBuffer<float> loss(rows), lse(rows), gl(rows);
  loss.fill_bytes(0xFF);
  lse.fill_bytes(0xFF);
  const std::vector<float> ones(rows, 1.0f);
  gl.copy_from_host(ones);
  const TensorView xv = TensorView::contiguous(x.data(), DType::bf16, dev, {rows, C});
  const TensorView tv = TensorView::contiguous(tbuf.data(), DType::i64, dev, {rows});
  CrossEntropyOptions opt;
  opt.reduction = Reduction::none;
  cross_entropy(TensorView::contiguous(loss.data(), DType::f32, dev, {rows}), xv, tv, opt,
                TensorView::contiguous(lse.data(), DType::f32, dev, {rows}));
  const auto lh = loss.to_host();
  const double want = std::log(static_cast<double>(C));
  for (std::int64_t i = 0; i < rows; ++i) ASSERT_NEAR(lh[i], want, 40 * kU * want) << "row " << i;
  cross_entropy_backward(xv, xv, tv, TensorView::contiguous(gl.data(), DType::f32, dev, {rows}), opt,
                         TensorView::contiguous(lse.data(), DType::f32, dev, {rows}));
  const std::int64_t last = rows - 1;
  std::vector<bfloat16_t> row(C);
  SMK_CUDA_CHECK(cudaMemcpy(row.data(), x.data() + last * C * 2, C * 2, cudaMemcpyDeviceToHost));
  const double p = 1.0 / static_cast<double>(C);
  for (std::int64_t j = 0; j < C; ++j) {
    const double want_g = j == t[last] ? p - 1 : p;
    ASSERT_NEAR(to_float(row[j]), want_g, ulp_of(DType::bf16, want_g)) << "element " << j;
  }
}

}  // namespace
}  // namespace smk::gpu_test
