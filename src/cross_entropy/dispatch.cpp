// softmaxkit: public cross-entropy entry points. Validate once (which also checks that every tensor is on the
// logits' device), then run on that device: src/cpu/cross_entropy.cpp or src/cuda/cross_entropy/.
#include "cross_entropy/args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#endif

namespace smk {

void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss,
                   Stream stream) {
  const detail::CrossEntropyProblem p =
      detail::check_cross_entropy_args("cross_entropy", loss, logits, targets, options, lse, z_loss);
  if (logits.device.is_cpu()) return cpu::cross_entropy(loss, logits, targets, options, lse, z_loss);
#if SOFTMAXKIT_HAS_CUDA
  cuda::cross_entropy_forward("cross_entropy", p, loss, logits, targets, options, lse, z_loss, stream);
#else
  (void)p;
  (void)stream;
  throw_unsupported("cross_entropy", "tensors are on " + logits.device.str() + " but softmaxkit was built without CUDA");
#endif
}

void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options, const TensorView& lse,
                            Stream stream) {
  const detail::CrossEntropyProblem p = detail::check_cross_entropy_backward_args(
      "cross_entropy_backward", grad_logits, logits, targets, grad_loss, options, lse);
  if (logits.device.is_cpu()) return cpu::cross_entropy_backward(grad_logits, logits, targets, grad_loss, options, lse);
#if SOFTMAXKIT_HAS_CUDA
  cuda::cross_entropy_backward("cross_entropy_backward", p, grad_logits, logits, targets, grad_loss, options, lse,
                               stream);
#else
  (void)p;
  (void)stream;
  throw_unsupported("cross_entropy_backward",
                    "tensors are on " + logits.device.str() + " but softmaxkit was built without CUDA");
#endif
}

}  // namespace smk
