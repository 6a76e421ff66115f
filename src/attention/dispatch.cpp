// softmaxkit: public attention entry points. Validate once, then run on the tensors' device.
#include "attention/args.hpp"
#include "cpu/attention_internal.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/attention/attention_cuda.hpp"
#endif

namespace smk {

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options, Stream stream) {
  const auto p = detail::check_attention_args("attention_forward", out, lse, q, k, v, options);
  if (q.device.is_cpu()) return cpu::internal::attention_forward("attention_forward", out, lse, q, k, v, options);
#if SOFTMAXKIT_HAS_CUDA
  cuda::attention_forward(out, lse, q, k, v, options, p.varlen, p.batch, p.sq, p.sk, p.scale, {}, stream);
#else
  (void)p;
  (void)stream;
  throw_unsupported("attention_forward", "tensors are on " + q.device.str() + " but softmaxkit was built without CUDA");
#endif
}

void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      Stream stream) {
  const auto p = detail::check_decode_args("attention_decode", out, lse, q, k_cache, v_cache, seqlens, options);
  if (q.device.is_cpu())
    return cpu::internal::attention_decode("attention_decode", out, lse, q, k_cache, v_cache, seqlens, options);
#if SOFTMAXKIT_HAS_CUDA
  cuda::attention_decode(out, lse, q, k_cache, v_cache, seqlens, options, p, stream);
#else
  (void)p;
  (void)stream;
  throw_unsupported("attention_decode", "tensors are on " + q.device.str() + " but softmaxkit was built without CUDA");
#endif
}

void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b, Stream stream) {
  const std::int64_t rows = detail::check_merge_args("merge_attention_states", out_o, out_lse, o_a, lse_a, o_b, lse_b);
  if (o_a.device.is_cpu()) return cpu::merge_attention_states(out_o, out_lse, o_a, lse_a, o_b, lse_b);
#if SOFTMAXKIT_HAS_CUDA
  cuda::merge_attention_states(rows, out_o, out_lse, o_a, lse_a, o_b, lse_b, stream);
#else
  (void)rows;
  (void)stream;
  throw_unsupported("merge_attention_states", "tensors are on " + o_a.device.str() +
                                                  " but softmaxkit was built without CUDA");
#endif
}

}  // namespace smk
