// softmaxkit (internal, device code): what the cross-entropy kernels share — the call's arguments as one struct
// passed by value, target and weight loads, the error flags, and the chunking of a row.
//
// A row of C logits is cut into chunks of kChunk elements, one block per (row, chunk), kElems per thread held in
// registers (RowTile of the softmax kernels, cuda/softmax/common.cuh). The chunking depends on C alone, and every
// sum is a fixed tree (a thread's registers pairwise, then the block butterfly, then the chunks in order), so a
// row's loss, LSE and gradient are bitwise the same alone or in any batch, run after run. Compute is f32 for every
// storage type; the cross-row sums of the reductions are in double, in a fixed order (one block, no atomics).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/softmax/common.cuh"
#include "cuda/softmax/kernels.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::ce {

using State = OnlineSoftmaxState<float>;

// 256 threads × 32 elements: a chunk of 8192 logits (32 KB of f32) in registers, four blocks per SM. Rows of the
// issue's vocabularies take 4 (32000) or 19 (151936) chunks, so even a handful of rows spreads over the GPU.
constexpr int kThreads = 256;
constexpr int kElems = 32;
constexpr std::int64_t kChunk = std::int64_t{kThreads} * kElems;  // 8192
// Blocks per SM the chunk kernels are compiled for (≤ 64 registers a thread): enough loads in flight to cover
// memory latency while other blocks reduce.
constexpr int kMinBlocks = 4;
// The single-block kernels (the target and weight scan, the reduction over rows).
constexpr int kScanThreads = 1024;
// The per-row kernels (merging a row's chunk results): one thread per row.
constexpr int kRowThreads = 256;

// The call, as the kernels see it. Strides are in elements.
struct Args {
  const void* x = nullptr;
  std::int64_t rows = 0, classes = 0, row_stride = 0, col_stride = 0, chunks = 0;
  const void* targets = nullptr;
  bool targets_i64 = false;
  std::int64_t t_stride = 0;
  std::int64_t ignore = -100;
  const float* weights = nullptr;  // null: every weight is 1
  std::int64_t w_stride = 0;
  float eps = 0, s = 0, cap = 0;
  Reduction reduction = Reduction::mean;
  bool nothing_is_zero = false;
};

// What the kernels found wrong: the smallest bad row / class, or ~0 (the memset's 0xFF bytes) when none.
struct Flags {
  unsigned long long bad_row;
  unsigned long long bad_weight;
};
constexpr unsigned long long kNone = ~0ull;

// Row-independent quantities from the scan of targets and weights.
struct Totals {
  double weight_total;  // Σ_c w_c (C without weights)
  double den_ce;        // Σ w_t over the rows not ignored (the mean's cross-entropy denominator)
  double den_z;         // the number of rows not ignored (the z-loss denominator)
};

__device__ __forceinline__ std::int64_t target_of(const Args& a, std::int64_t row) {
  const std::int64_t o = row * a.t_stride;
  return a.targets_i64 ? static_cast<const std::int64_t*>(a.targets)[o]
                       : static_cast<const std::int32_t*>(a.targets)[o];
}
__device__ __forceinline__ float weight_of(const Args& a, std::int64_t c) {
  return a.weights ? a.weights[c * a.w_stride] : 1.0f;
}

enum class RowKind { valid, ignored, bad };
__device__ __forceinline__ RowKind row_kind(const Args& a, std::int64_t t) {
  if (t == a.ignore) return RowKind::ignored;
  return t >= 0 && t < a.classes ? RowKind::valid : RowKind::bad;
}

template <typename In>
__device__ __forceinline__ const In* row_ptr(const Args& a, std::int64_t row) {
  return static_cast<const In*>(a.x) + row * a.row_stride;
}

// Soft-capping, z = c·tanh(x / c), the same expression as the CPU; `th` receives tanh(x / c) for the gradient.
__device__ __forceinline__ float softcap(float x, float cap, float& th) {
  th = tanhf(x / cap);
  return cap * th;
}
__device__ __forceinline__ float capped(const Args& a, float x) {
  float th;
  return a.cap > 0 ? softcap(x, a.cap, th) : x;
}

// exp(x − shift) for the forward's sums of exponentials: exp2f of (x − shift)·log2 e, three instructions where
// exp_diff (TwoSum + expf) takes about fifteen, which made the forward compute-bound (bf16 ran no faster than f32 on
// the H200, 2026-11-29). Each term is off by at most (|x − shift| + 3)·u relatively (the two roundings, exp2f's
// 2 ulp); in a sum l = Σ e^(−d_j) that averages to u·Σ d_j e^(−d_j) / l + 3u ≤ (1 + ln C)·u + 3u, inside the LSE's
// (|LSE| + L + 9 + 2 ln C)·u gate. The two-call backward's gradient, whose every element is an output, keeps
// exp_diff; the one-read kernel's 16-bit gradient takes this (grad_exp below).
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float exp_shifted(float x, float shift) { return exp2f((x - shift) * kLog2e); }

// The 16-bit tier (the lead's decision of session 6; docs/semantics.md §12): where the gradient is stored in f16 /
// bf16, the one-read kernel (fused.cu) forms its exponentials e_j = exp(z_j − m_w) without exp_diff's TwoSum of the
// subtraction. Session 6 took softmax's kernels::out_exp<Out> (expf(fl(z_j − m_w)), 9 SASS an element, ≤ u·(M − z_j)
// relative); since session 7 grad_exp below (exp_shifted, 6). The target's entry −R / l is still formed in f32 (e_t by
// exp_diff) before rounding. f32 gradients keep exp_diff.

// The one-read kernel's terms e_j = exp(z_j − m_w), from which a row's gradient and its l are formed: exp_diff for an
// f32 gradient; for a 16-bit one, exp_shifted (ce5, session 7: FADD, FMUL and exp2f's MUFU.EX2 with its subnormal
// scaling, 6 SASS instructions an element where expf(fl(z − m)) took 9 and exp_diff 15; CUDA 13.0, sm_90a). Error
// on a term, relative: the subtraction's rounding u·|d| (d = z_j − m_w), the product's u·|d·log2 e| in the exponent
// (u·|d| on the term), log2 e's rounding in f32 (0.23u·|d|) and exp2f's 2 ulp (4u): ≤ (2.25·|d| + 4)·u with
// |d| ≤ M − z_j. For p_j ≥ 1e-30 (|d| ≤ 69.1) that is ≤ 160u ≈ 2^-16.7, 2^-7.7 of a bf16 half-ulp and 2^-4.7 of an
// f16 one: it can move a 16-bit output only where its exact value lies that close to a rounding boundary. In l the
// terms' errors average with the weights p_j to ≤ (2.25·ln C + 4)·u (docs/semantics.md §12). exp2f keeps subnormal
// terms (no flush), −inf → 0 and NaN → NaN.
template <typename Out>
__device__ __forceinline__ float grad_exp(float x, float shift) {
  if constexpr (kernels::kPlainExp<Out>) return exp_shifted(x, shift);
  else return exp_diff(x, shift);
}

// The forward's per-row outputs, written by the two-call forward (forward.cu) and the one-read kernel (fused.cu).
// Null pointers are outputs not asked for.
struct RowOut {
  float* loss = nullptr;  // per row (none) or null
  std::int64_t loss_stride = 0;
  float* z = nullptr;
  std::int64_t z_stride = 0;
  float* lse = nullptr;
  std::int64_t lse_stride = 0;
  float* ce_rows = nullptr;  // sum / mean: each row's cross-entropy and z-loss, for the reduction
  float* zl_rows = nullptr;

  __device__ __forceinline__ void write(std::int64_t row, float row_lse, float ce, float zl) const {
    if (lse) lse[row * lse_stride] = row_lse;
    if (loss) loss[row * loss_stride] = ce + zl;
    if (z) z[row * z_stride] = zl;
    if (ce_rows) {
      ce_rows[row] = ce;
      zl_rows[row] = zl;
    }
  }
};

// The mean's target entry of an f32 gradient, formed after the one-read kernel by the mean's kernel (ce10, session 10;
// fused.cu, forward.cu reduce_kernel): the one-read kernel's owner thread leaves its row's R = Σ_{j≠t} e_j, e_t (both
// against the row's max), the rest of the entry (label smoothing's and the z-loss's terms, in f32 as before) and
// (1 − ε)·w_t; the mean's kernel forms g·(1 − ε)·w_t·(−R / (R + e_t)) + rest in double with g = grad_loss / Σ w_t
// unrounded and rounds once. In the kernel the same entry took three f32 roundings (p_t − 1 or −R·(1 / l), the mean's
// scale g, the product), and every precise form there spilled (ce9: 68–92 bytes a thread in the f32 wide kernel).
struct alignas(16) TargetParts {
  float R, et, rest, hard;
};
struct TargetFix {
  const TargetParts* parts = nullptr;  // null: nothing to do
  float* grad = nullptr;
  std::int64_t row_stride = 0, col_stride = 0;
  const float* grad_loss = nullptr;  // the scalar upstream gradient (null: 1)
};

// The scaling of one row's gradient by the upstream gradient: per row (none) or the scalar over the mean's
// denominators, as the CPU forms it (in double, then rounded).
__device__ __forceinline__ double safe_div(double num, double den, bool nothing_is_zero) {
  return den == 0 && nothing_is_zero ? 0.0 : num / den;
}

// The one-read kernel's (fused.cu) and the row loop's (row_loop.cuh) arguments beyond Args: the gradient, the upstream
// gradient, the per-row outputs.
struct FusedArgs {
  void* grad = nullptr;
  std::int64_t g_row_stride = 0, g_col_stride = 0;
  const float* grad_loss = nullptr;  // null: 1
  std::int64_t gl_stride = 0;
  RowOut out;  // the forward's per-row outputs
  bool prefetch = false;  // every row 16-byte aligned with unit stride: bulk-copy the next rows into shared memory
  TargetParts* target_parts = nullptr;  // f32 gradient under the mean: each row's TargetParts (common.cuh), else null
  // The row loop (row_loop.cuh): the logits' / the gradient's rows 16-byte aligned with unit stride (16-byte vectors),
  // else element by element through the same map.
  bool loop_vec_in = false, loop_vec_out = false;
};

// One row's partial result as a block hands it to the others: the state of its logits other than the target,
// label smoothing's partial Σ w_c (z_c − r), and the target logit (−inf in every block but the one holding it).
struct alignas(16) RowPart {
  float m, d, smooth, zt;
};

// The combined state of one state per lane (empty beyond the parts): the max by an xor butterfly (exact in any order),
// then each lane's share l_i = (1 + d_i)·exp(m_i − M) summed by an xor butterfly. ≈ 45 instructions a thread where the
// xor tree of OnlineSoftmaxState::merge took ≈ 350 (five levels, each a merge with its regime branches and an
// exp_diff; SASS, CUDA 13.0, sm_90a): every thread of the block runs it once a row, so at 32 logits a thread it cost
// ≈ 11 instructions a logit (ce4's count). The regimes fall out of the arithmetic: an empty lane adds 0·0; a +inf or
// NaN max decides the state in from_max_and_sum, whatever the sum. Error on l: (1 + d_i) and the product u each,
// exp_diff 5u, the butterfly's 5 levels: ≤ 12u, against ≤ 8u a level (40u) for the merge tree.
__device__ __forceinline__ State combine_parts(const State s) {
  const float M = kernels::group_max(s.m, 32);
  const float share = (1.0f + s.d) * exp_diff(s.m, State::shift_for(M));
  return State::from_max_and_sum(M, kernels::group_sum(share, 32));
}

// ---- A row's scalars, shared by the one-read kernel (fused.cu) and the row loop (row_loop.cuh): one home per formula.
// The row-invariant scales of the upstream gradient under sum / mean (the CPU's formula, in double); 1 under none.
__device__ __forceinline__ void reduction_scales(const Args& a, const float* grad_loss, const Totals* totals,
                                                 float& g_ce_all, float& g_z_all) {
  g_ce_all = g_z_all = 1;
  if (a.reduction != Reduction::none) {
    const double g1 = grad_loss ? static_cast<double>(grad_loss[0]) : 1.0;
    if (a.reduction == Reduction::sum) {
      g_ce_all = g_z_all = static_cast<float>(g1);
    } else {
      g_ce_all = static_cast<float>(safe_div(g1, totals->den_ce, a.nothing_is_zero));
      g_z_all = static_cast<float>(safe_div(g1, totals->den_z, a.nothing_is_zero));
    }
  }
}

// The row from the state `rs` of its logits other than the target and the target logit zt: M = max(the others' max,
// z_t), R = Σ_{j≠t} exp(z_j − M) = (1 + d)·exp(m − M), e_t, l = R + e_t, the LSE and 1 / l (NaN for a row whose max
// is not finite). An ignored or bad row (valid false) is the state of every logit.
struct RowScalars {
  float M, shift, R, et, l, lse, inv;
};
__device__ __forceinline__ RowScalars row_scalars(const State& rs, float zt, bool valid) {
  RowScalars r;
  r.M = valid ? kernels::max_nan(rs.m, zt) : rs.m;
  r.shift = State::shift_for(r.M);
  r.R = (1.0f + rs.d) * exp_diff(rs.m, r.shift);  // 0 for an empty rest (1 + d = 0, exp(−inf) = 0)
  r.et = valid ? exp_diff(zt, r.shift) : 0.0f;
  r.l = valid ? r.R + r.et : r.R;
  const State st = valid ? State::from_max_and_sum(r.M, r.l) : rs;
  r.lse = st.lse();
  r.inv = st.normalizer().inv_sum;
  return r;
}

// The row's loss and z-loss, written by one thread: log1p(R) when the target holds the max (exact as p_t → 1), else
// (M − z_t) + log l; label smoothing's (ε/C)·(W·(LSE − r) − Σ w_c (z_c − r)) with r the row's first logit (`r0`) and
// `rsm` that sum; NaN for a bad target (the host throws; never a silent 0).
__device__ __forceinline__ void row_loss(const Args& a, const Totals* totals, const RowOut& out, std::int64_t row,
                                         RowKind kind, const RowScalars& r, float zt, float hard, float soft,
                                         bool smoothing, float r0, float rsm) {
  float ce = 0, zl = 0;
  if (kind == RowKind::bad) {
    ce = detail::nan_<float>();
  } else if (kind == RowKind::valid) {
    float nll;
    if (isfinite(r.M) && isfinite(zt)) nll = zt == r.M ? log1pf(r.R) : (r.M - zt) + logf(r.l);
    else nll = r.lse - zt;  // inf − inf = NaN, as on the CPU
    ce = hard * nll;
    if (smoothing) {
      const double smd = totals->weight_total * (static_cast<double>(r.lse) - r0) - static_cast<double>(rsm);
      ce += soft * static_cast<float>(smd);
    }
    if (a.s > 0) zl = a.s * r.lse * r.lse;
  }
  out.write(row, r.lse, ce, zl);
}

// ∂loss/∂z_j = g·((1 − ε)w_t·p_j + ε/C·(W·p_j − w_j)) + zc·p_j = e_j·A + B·w_j for j ≠ t (e_j = exp(z_j − M));
// zc = 2s·g_z·LSE. A is NaN for a row whose max is not finite.
struct GradCoeffs {
  float A, B, zc;
};
__device__ __forceinline__ GradCoeffs grad_coeffs(const Args& a, const RowScalars& r, float g_ce, float g_z,
                                                  float hard, float soft, float W) {
  GradCoeffs c;
  c.zc = a.s > 0 ? g_z * 2 * a.s * r.lse : 0.0f;
  c.A = (g_ce * hard + g_ce * soft * W + c.zc) * r.inv;
  c.B = -g_ce * soft;
  return c;
}

// The target's entry, formed in f32 before rounding: g·((1 − ε)w_t·(p_t − 1) + ε/C·(W·p_t − w_t)) + zc·p_t. From
// p_t ≥ ½ on, p_t − 1 is −R / l (R = l − e_t): it keeps its digits as p_t → 1, where p_t − 1 cancels. Below ½,
// p_t − 1 itself: p_t's error is scaled by p_t < ½ and the subtraction rounds once, where −R·(1 / l) carried three
// roundings (l, 1 / l, the product). ce6's comparison with torch (scripts/vs_torch_ce.py, H200 run of b2405b6) had
// −R / l at 1.8 ulps on f32 rows of random logits (torch's exp(log p_t) − 1: 0.5), the gradient 1.5–1.7× torch's
// error norm-wise there (the target entries dominate the norm). `parts` (an f32 gradient under the mean, else null):
// the row's TargetParts, from which the mean's kernel re-forms the entry in double (TargetFix).
__device__ __forceinline__ float target_entry(const RowScalars& r, const GradCoeffs& c, float g_ce, float hard,
                                              float soft, float W, float wt, TargetParts* parts, std::int64_t row) {
  const float pt = r.et * r.inv;
  const float pm1 = pt < 0.5f ? pt - 1.0f : -r.R * r.inv;
  if (parts) parts[row] = TargetParts{r.R, r.et, g_ce * soft * (W * pt - wt) + c.zc * pt, hard};
  return g_ce * (hard * pm1 + soft * (W * pt - wt)) + c.zc * pt;
}

}  // namespace smk::cuda::ce

// Host side of the launchers, shared by forward.cu and backward.cu.
namespace smk::cuda::ce {

// One stream-ordered workspace carved into aligned pieces, 256 bytes apart.
struct WorkspaceLayout {
  std::size_t bytes = 0;
  std::size_t add(std::size_t n) {
    const std::size_t at = bytes;
    bytes += (n + 255) / 256 * 256;
    return at;
  }
};

Args make_args(const TensorView& logits, const TensorView& targets, const CrossEntropyOptions& o);
// The forward's outputs: the caller's per-row loss and z-loss (reduction none) or the reduction's per-row staging
// (`ce_rows`, `zl_rows` in the workspace), and the LSE when asked for.
inline RowOut make_row_out(Reduction reduction, const TensorView& loss, const TensorView& z_loss,
                           const TensorView& lse, float* ce_rows, float* zl_rows) {
  RowOut o;
  if (reduction == Reduction::none) {
    o.loss = static_cast<float*>(loss.data);
    o.loss_stride = loss.strides[0];
    o.z = static_cast<float*>(z_loss.data);
    o.z_stride = z_loss.data ? z_loss.strides[0] : 0;
  } else {
    o.ce_rows = ce_rows;
    o.zl_rows = zl_rows;
  }
  o.lse = static_cast<float*>(lse.data);
  o.lse_stride = lse.data ? lse.strides[0] : 0;
  return o;
}
// One block: validates the class weights, sums them, and scans the targets (first bad row, the mean's
// denominators). Writes `totals` and raises `flags`.
void launch_scan(const Args& a, Totals* totals, Flags* flags, cudaStream_t s);
// The per-(row, chunk) online states and, for the forward, the label-smoothing partial sums.
void launch_stats(const Args& a, DType x_dtype, bool exclude_target, bool skip_ignored, State* states,
                  float* smooth, cudaStream_t s);
// Per-row LSE only (the backward pass when the forward's LSE is not given), into `lse` (contiguous).
void launch_lse(const Args& a, const State* states, float* lse, cudaStream_t s);

// The call's error report: copies the flags (at the start of `workspace`) back, frees the workspace, waits for the
// stream, and throws smk::Error naming `op` and the argument at fault.
void finish(const char* op, const Args& a, void* workspace, cudaStream_t s);

// One cross-entropy call's workspace: the Flags first (finish() reads them there), the Totals next, then the pieces
// the call adds with add() before alloc(). run() clears the flags, scans targets and weights, runs the call's
// kernels (`body`), and reports through finish(); the workspace is freed on every path. A body that returns false
// launched nothing that needs reporting (the caller takes another route): run() then frees and returns false.
class CallWorkspace {
 public:
  CallWorkspace() : flags_at_(layout_.add(sizeof(Flags))), totals_at_(layout_.add(sizeof(Totals))) {}
  std::size_t add(std::size_t n) { return layout_.add(n); }
  void alloc(cudaStream_t s) { base_ = static_cast<unsigned char*>(kernels::workspace_alloc(layout_.bytes, s)); }
  template <typename T>
  T* at(std::size_t off) const {
    return reinterpret_cast<T*>(base_ + off);
  }
  Flags* flags() const { return at<Flags>(flags_at_); }
  Totals* totals() const { return at<Totals>(totals_at_); }

  template <typename Body>
  bool run(const char* op, const Args& a, cudaStream_t s, Body&& body) {
    bool launched = false;
    try {
      SMK_CUDA_CHECK(cudaMemsetAsync(flags(), 0xFF, sizeof(Flags), s));
      launch_scan(a, totals(), flags(), s);
      launched = body();
    } catch (...) {
      kernels::workspace_free(base_, s);
      throw;
    }
    if (!launched) {
      kernels::workspace_free(base_, s);
      return false;
    }
    finish(op, a, base_, s);
    return true;
  }

 private:
  WorkspaceLayout layout_;
  std::size_t flags_at_, totals_at_;
  unsigned char* base_ = nullptr;
};

}  // namespace smk::cuda::ce
