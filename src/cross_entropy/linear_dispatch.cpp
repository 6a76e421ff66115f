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

std::int64_t linear_cross_entropy_default_chunk_rows(std::int64_t rows, std::int64_t vocab, DType dtype) {
  const std::int64_t per_row = std::max<std::int64_t>(vocab, 1) * (4 + static_cast<std::int64_t>(dtype_size(dtype)));
  std::int64_t c = static_cast<std::int64_t>(kLinearCrossEntropyChunkBytes) / per_row;
  if (c >= 128) c = c / 128 * 128;
  return std::clamp<std::int64_t>(c, 1, std::max<std::int64_t>(rows, 1));
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
