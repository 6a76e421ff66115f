// softmaxkit: the public linear cross-entropy entry point. Validate once, then run on the inputs' device:
// src/cpu/linear_cross_entropy.cpp or src/cuda/cross_entropy/linear.cu.
#include <algorithm>

#include "cross_entropy/linear_args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/linear_cross_entropy.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/cross_entropy/linear_cuda.hpp"
#endif

namespace smk {

namespace {
// The largest power of two c with c rows of the dtype's gradient and max(c / 4, 1) rows of f32 logits within the
// budget: c·V·(sizeof(dtype) + 1) bytes from c = 4 on (linear_cross_entropy.hpp, the measurement behind the
// quarter), c·V·sizeof(dtype) + V·4 below, where the logits still take a whole row (review F12, session 8: sized by
// c·V·(sizeof + 1) alone, c = 2 could go 2V bytes over). The floor is c = 1: a vocabulary whose one row of each,
// V·(sizeof(dtype) + 4) bytes, exceeds the budget (V above 2^29 / 8 = 67 M in f32) still takes one row at a time.
constexpr std::int64_t kLogitShare = 4;  // chunk_rows / logit_rows
// Bytes a class takes in a split of c rows: c·sizeof(dtype) of gradient and max(c / 4, 1)·4 of f32 logits.
std::int64_t split_bytes_per_class(std::int64_t c, std::int64_t esize) {
  return c * esize + std::max<std::int64_t>(c / kLogitShare, 1) * 4;
}
std::int64_t split_chunk(std::int64_t vocab, DType dtype) {
  // V·b ≤ budget ⟺ b ≤ ⌊budget / V⌋ for integers, so nothing is multiplied by V (no overflow at any vocabulary).
  const std::int64_t per_class =
      static_cast<std::int64_t>(kLinearCrossEntropyChunkBytes) / std::max<std::int64_t>(vocab, 1);
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(dtype));
  std::int64_t c = 1;
  while (split_bytes_per_class(c * 2, esize) <= per_class) c *= 2;
  return c;
}
}  // namespace

std::int64_t linear_cross_entropy_default_chunk_rows(std::int64_t rows, std::int64_t vocab, DType dtype) {
  return std::min(split_chunk(vocab, dtype), std::max<std::int64_t>(rows, 1));
}

std::int64_t linear_cross_entropy_default_logit_rows(std::int64_t rows, std::int64_t vocab, DType dtype) {
  const std::int64_t x = std::max<std::int64_t>(split_chunk(vocab, dtype) / kLogitShare, 1);
  return std::min(x, linear_cross_entropy_default_chunk_rows(rows, vocab, dtype));
}

void linear_cross_entropy(const TensorView& loss, const TensorView& lse, const TensorView& grad_hidden,
                          const TensorView& grad_weight, const TensorView& grad_bias, const TensorView& hidden,
                          const TensorView& weight, const TensorView& targets, const TensorView& grad_loss,
                          const LinearCrossEntropyOptions& options, Stream stream) {
  const detail::LinearCrossEntropyProblem p = detail::check_linear_cross_entropy_args(
      "linear_cross_entropy", loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight, targets, grad_loss,
      options);
  if (hidden.device.is_cpu()) {
    (void)stream;
    return cpu::linear_cross_entropy(loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight, targets,
                                     grad_loss, options);
  }
#if SOFTMAXKIT_HAS_CUDA
  cuda::linear_cross_entropy("linear_cross_entropy", p, loss, lse, grad_hidden, grad_weight, grad_bias, hidden, weight,
                             targets, grad_loss, options, stream);
#else
  (void)p;
  throw_unsupported("linear_cross_entropy",
                    "tensors are on " + hidden.device.str() + " but softmaxkit was built without CUDA");
#endif
}

}  // namespace smk
