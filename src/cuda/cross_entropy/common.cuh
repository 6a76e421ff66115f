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
