// softmaxkit: linear cross-entropy — the loss of a classifier layer and its gradients, without the N×V logits.
//
// For hidden states H [N, d], the classifier W [V, d] and an optional bias b [V], the logits are X = H·Wᵀ + b and
// the loss is cross_entropy(X, targets) with every cross-entropy option (cross_entropy.hpp: ignore_index,
// reductions, label smoothing, z-loss, class weights, soft-capping). One call returns the loss, the per-row LSE and
// the gradients of `grad_loss · loss`:
//   G  = ∂loss/∂X · grad_loss           (cross_entropy_backward's formula)
//   dH = G·W,   dW = Gᵀ·H,   db = Σ_rows G
// The forward and backward are one call because G needs only X and the LSE, and X is never kept: the upstream
// gradient must be known up front (pass null `grad_loss` for 1, the usual case of a scalar loss; an autograd
// wrapper scales dH, dW, db by its own upstream gradient afterwards).
//
// How (docs/perf-notebook.md, "linear cross-entropy"): the rows are taken in chunks of `chunk_rows`. For each chunk
// c: X_c = H_c·Wᵀ (+ b) as an f32 matrix (f32 accumulation, one rounding to f32, so the loss and gradient come from
// logits more accurate than a 16-bit logits tensor), the cross-entropy forward on X_c, G_c formed in f32 and
// rounded once to the inputs' dtype, dH_c = G_c·W written once, and dW += G_cᵀ·H_c (f32 accumulation inside each
// product; the running dW is held in dW's dtype, so it is rounded once per chunk: N / chunk_rows roundings),
// db += column sums of G_c (in f32, rounded once at the end). The mean's denominators are counted from the targets
// before the first chunk. Extra memory on the GPU: chunk_rows · V · sizeof(dtype) + logit_rows · V · 4 bytes plus
// O(N + V).
// The GPU products go through cuBLAS (one handle per device and host thread, cached), f32 compute, never TF32.
// Accuracy against float64 (H200, N = 8192, d = 4096, V = 151936, bf16, docs/bench/lce-vs-torch-2026-11-30.md):
// the loss ~1000× and dH ~1.5× more accurate than torch's bf16 matmul + F.cross_entropy; dW more accurate max-wise
// but less accurate norm-wise at every split that fits 10 % of torch's memory (its per-chunk bf16 roundings of the
// running dW): 3.05e-3 at the default 1024 / 256, 2.91e-3 at 1536 / 128 (8.9 % of torch's memory), 2.72e-3 at 2048 /
// 128 (11 %), against torch's 2.51e-3; chunks of 4096 rows (2 roundings, 30 % of torch's memory) reach 2.29e-3.
//
// Shapes and dtypes: hidden [N, d] and weight [V, d] of one dtype (f32, f16, bf16; f64 on the CPU), each row's
// elements contiguous (stride 1 along d; rows may be padded); targets [N] (i32 or i64); bias [V] of that dtype or
// none; grad_hidden [N, d] and grad_weight [V, d] of that dtype (rows contiguous as above); grad_bias [V] of that
// dtype, required exactly when a bias is given. loss: [N] for reduction none, [] otherwise; lse [N] (optional:
// null data = not wanted); grad_loss of the loss's shape (optional: null data = 1); all f32 (f64 for f64 inputs).
// Bad input throws smk::Error naming the argument before anything is written; on the GPU the targets and class
// weights are checked by a kernel, then the call waits for that check (one small copy back) before any product.
// The call is otherwise asynchronous on `stream` (it does not wait for the products).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"
#include "softmaxkit/cross_entropy.hpp"

namespace smk {

struct LinearCrossEntropyOptions {
  CrossEntropyOptions ce{};      // every cross-entropy option; class_weights are [V]
  TensorView bias{};             // optional [V], the inputs' dtype
  std::optional<std::int64_t> chunk_rows{};  // rows per chunk, > 0; none: linear_cross_entropy_default_chunk_rows
  // GPU: rows of f32 logits formed at once inside a chunk (> 0; values above the chunk are the chunk; none: the
  // chunk when chunk_rows is given, else linear_cross_entropy_default_logit_rows). Smaller than chunk_rows, it keeps
  // the dH and dW products at chunk_rows rows (fewer roundings of dW, wider products) for less logits memory:
  // chunk_rows·V·sizeof(dtype) + logit_rows·V·4 bytes. The CPU path, and every result in exact arithmetic, do not
  // depend on it.
  std::optional<std::int64_t> logit_rows{};
};

// The extra memory a chunk may take when chunk_rows is not given: 512 MiB of f32 logits and dtype gradient, so the
// issue's N = 8192, V = 151936 in bf16 takes chunks of 1024 rows of gradient formed from 256 rows of logits at a time
// (467 MB), under 10 % of the 6.2 GB that torch's matmul + F.cross_entropy holds at once.
constexpr std::size_t kLinearCrossEntropyChunkBytes = std::size_t{512} << 20;

// The default split of that budget (session 8, ce6): chunk_rows c is the largest power of two whose gradient rows and
// max(c / 4, 1) rows of f32 logits fit kLinearCrossEntropyChunkBytes (c·V·(sizeof(dtype) + 1) bytes from c = 4 on), at
// most `rows`;
// logit_rows is c / 4 (at least 1), at most the chunk. Measured on the H200 (docs/perf-notebook.md, session 8, ce6;
// times ÷ torch's, dW norm-wise error against torch's 2.51e-3): N = 8192, d = 4096, V = 151936 bf16: 1024 / 256
// 1.114× torch, dW 3.05e-3 (the earlier default, chunks of 512: 1.133×, 3.28e-3; 1280 / 128 1.22×, 1536 / 128
// 1.27×, smaller logit pieces cost more than the wider products save); 4096 × 2048 × 32000: 4096 / 1024 (one chunk)
// 1.233×, dW 3.81e-3 against torch's 4.59e-3 (the earlier 2688: 1.313×, 4.15e-3).
std::int64_t linear_cross_entropy_default_chunk_rows(std::int64_t rows, std::int64_t vocab, DType dtype);
std::int64_t linear_cross_entropy_default_logit_rows(std::int64_t rows, std::int64_t vocab, DType dtype);

void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss = {},
                          const LinearCrossEntropyOptions& options = {}, Stream stream = {});

}  // namespace smk
