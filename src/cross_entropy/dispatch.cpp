// softmaxkit: public cross-entropy entry points. Validate once, then run on the tensors' device.
#include "cross_entropy/args.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"

namespace smk {

void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss, Stream) {
  detail::check_cross_entropy_args("cross_entropy", loss, logits, targets, options, lse, z_loss);
  if (!logits.device.is_cpu())
    throw_unsupported("cross_entropy", "has no CUDA kernel in this version; run it on the CPU");
  cpu::cross_entropy(loss, logits, targets, options, lse, z_loss);
}

void cross_entropy_backward(const TensorView& grad_logits, const TensorView& logits, const TensorView& targets,
                            const TensorView& grad_loss, const CrossEntropyOptions& options, const TensorView& lse,
                            Stream) {
  detail::check_cross_entropy_backward_args("cross_entropy_backward", grad_logits, logits, targets, grad_loss,
                                            options, lse);
  if (!logits.device.is_cpu())
    throw_unsupported("cross_entropy_backward", "has no CUDA kernel in this version; run it on the CPU");
  cpu::cross_entropy_backward(grad_logits, logits, targets, grad_loss, options, lse);
}

}  // namespace smk
