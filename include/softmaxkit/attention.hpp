// softmaxkit: scaled dot-product attention with the FlashAttention recurrence, and the merge of partial results.
//
// For each batch b, query head h (KV head h / (Hq / Hkv): grouped-query attention) and query row i:
//   s_j = scale · q_i · k_j over the keys j visible to i;   O_i = Σ_j softmax(s)_j v_j;   LSE_i = log Σ_j exp(s_j)
// computed block by block with one OnlineSoftmaxState per row (the article's Step 4): scores are used once and
// dropped, the un-normalised output is rescaled when the max grows, and divided once at the end.
//
// Layout (FlashAttention's): q [B, Sq, Hq, D], k and v [B, Sk, Hkv, D], out [B, Sq, Hq, D] in q's dtype, lse
// [B, Hq, Sq] f32 (f64 for f64 tensors on the CPU; natural log); any strides. Hq must be a multiple of Hkv. With variable lengths
// (`cu_seqlens_q` / `cu_seqlens_k` set, int32 [B + 1] cumulative offsets, as flash_attn_varlen_func), q, k, v and out
// are packed [total, H, D] and lse is [Hq, total_q].
//
// Visibility: every key, or with `causal` the keys j ≤ i + (Sk − Sq) — the diagonal aligned bottom-right, as
// FlashAttention does when Sq ≠ Sk. A query row that sees no key gets O = 0 and LSE = −inf. Keys it cannot see are
// never read, so NaN in masked-out or padded K/V never reaches the output.
//
// Sinks (gpt-oss): one learned logit σ_h per query head joins the softmax's denominator only, with no value row:
// O_i = Σ_j exp(s_j) v_j / (exp(σ_h) + Σ_j exp(s_j)). The LSE includes it (so partial states stay mergeable), and a
// row with no visible key gets O = 0, LSE = σ_h, whatever σ_h is (NaN and +inf too: the CPU since session 13, the
// GPU kernels since session 14).
#pragma once

#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"

namespace smk {

struct AttentionOptions {
  float scale = 0.0f;            // softmax scale; 0 means 1/√D
  bool causal = false;
  TensorView cu_seqlens_q{};     // varlen: int32 [B + 1]; both or neither
  TensorView cu_seqlens_k{};
  TensorView sinks{};            // optional f32 [Hq] (f64 for f64 tensors on the CPU)
};

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options = {}, Stream stream = {});

// Merges two partial attention results over disjoint key sets — splits of one KV cache, two GPUs, a cached prefix
// and new tokens — in the online state's algebra: with L = log(e^{L_a} + e^{L_b}),
//   O = e^{L_a − L}·O_a + e^{L_b − L}·O_b.
// An empty part (LSE −inf) is the identity; two empty parts give O = 0, LSE = −inf; NaN in either LSE gives NaN;
// the merge is commutative, and associative up to rounding. A non-empty part's inf or NaN O is never dropped, even
// where its weight e^{L_x − L} underflows to 0 (as attention over the same keys would not drop it): the CPU since
// session 13, the GPU (and attention_decode's merge of its splits) since session 14. Shapes: o_* [..., D] (any rank
// ≥ 1, any strides, the same for all four), lse_* with o's shape minus its last dimension (f32). `out_o` may alias
// `o_a` or `o_b` exactly, and `out_lse` `lse_a` or `lse_b` (accumulating in place).
void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b, Stream stream = {});

// Decode attention (Flash-Decoding): a few new query tokens per sequence against a KV cache of per-sequence length.
//
// q [B, Sq_new, Hq, D] with 1 ≤ Sq_new ≤ 8 (longer queries are prefill: attention_forward); k_cache and v_cache
// [B, S_max, Hkv, D]; seqlens int32 [B] on q's device, 0 ≤ seqlens[b] ≤ S_max: sequence b's keys are rows
// [0, seqlens[b]) of its cache, and rows at or beyond seqlens[b] are never read (NaN or garbage there cannot reach
// the output). out [B, Sq_new, Hq, D] in q's dtype, lse [B, Hq, Sq_new] f32 (f64 for f64 on the CPU), natural log,
// optional (a null view skips it). Any strides on the CPU; the CUDA kernel needs k_cache and v_cache with a
// contiguous head dimension and 16-byte aligned rows (every other stride a multiple of 8 elements).
// Scale, causal masking among the new tokens and sinks as in attention_forward: with `causal`, new token i sees keys
// j < seqlens[b] − Sq_new + i + 1 (the diagonal aligned bottom-right: the new tokens are the cache's last Sq_new
// rows). A row with no visible key gets O = 0 and LSE = −inf (LSE = the sink when one is set).
// dtypes: f16 and bf16 on the GPU, D = 64 or 128 there; f32, f16, bf16, f64 and any D on the CPU.
// On the GPU a length outside [0, S_max] cannot be reported without a synchronisation: that sequence's O and LSE
// become NaN (the CPU throws). The GPU result is bitwise reproducible and batch-invariant: each sequence is split
// into chunks by a rule that depends only on its own length and the device (src/cuda/attention/decode.cu).
// An inf or NaN V row among keys that all score more than about 104 below the row's maximum (their weight underflows
// to 0 in f32) still reaches the output, on the CPU and the GPU alike: 0·NaN and 0·inf give NaN. The GPU skips only
// an empty part (no key) when it folds its warps' or key groups' partial results inside a split (since session 15)
// and its splits (since session 14), never one whose weight underflows.
// Rows whose visible keys all score −inf (possible only with infinite q or k) count as rows with no key on the GPU
// (O = 0 whatever the sink); the CPU gives them O = NaN under a NaN or +inf sink. The same holds for
// attention_forward.
struct AttentionDecodeOptions {
  float scale = 0.0f;   // softmax scale; 0 means 1/√D
  bool causal = false;  // causal among the Sq_new new tokens
  TensorView sinks{};   // optional f32 [Hq] (f64 for f64 tensors on the CPU)
};

void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens,
                      const AttentionDecodeOptions& options = {}, Stream stream = {});

namespace cpu {
// Decode on the CPU: the attention_forward recurrence (below) on each sequence's first seqlens[b] cache rows.
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options = {});
namespace reference {
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options = {});
}  // namespace reference
}  // namespace cpu

namespace cpu {
// The float path (f32 arithmetic; f64 for f64 tensors) and the float64 reference, same arguments.
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options = {});
void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b);
namespace reference {
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options = {});
void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b);
}  // namespace reference
}  // namespace cpu

}  // namespace smk
