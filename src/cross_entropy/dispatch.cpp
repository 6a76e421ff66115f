// softmaxkit: public cross-entropy entry points. Validate once (which also checks that every tensor is on the
// logits' device), then run on that device: src/cpu/cross_entropy.cpp or src/cuda/cross_entropy/.
#include <vector>

#include "cross_entropy/args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "cpu/cross_entropy_internal.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/cross_entropy/cross_entropy_cuda.hpp"
#endif

namespace smk {

void cross_entropy(const TensorView& loss, const TensorView& logits, const TensorView& targets,
                   const CrossEntropyOptions& options, const TensorView& lse, const TensorView& z_loss,
                   Stream stream) {
  const detail::CrossEntropyProblem p =
      detail::check_cross_entropy_args("cross_entropy", loss, logits, targets, options, lse, z_loss);
  if (logits.device.is_cpu())
    return cpu::internal::cross_entropy("cross_entropy", loss, logits, targets, options, lse, z_loss);
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
  if (logits.device.is_cpu())
    return cpu::internal::cross_entropy_backward("cross_entropy_backward", grad_logits, logits, targets, grad_loss,
                                                 options, lse);
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

void cross_entropy_forward_backward(const TensorView& loss, const TensorView& grad_logits, const TensorView& logits,
                                    const TensorView& targets, const CrossEntropyOptions& options,
                                    const TensorView& grad_loss, const TensorView& lse, const TensorView& z_loss,
                                    Stream stream) {
  const char* op = "cross_entropy_forward_backward";
  const detail::CrossEntropyProblem p = detail::check_cross_entropy_forward_backward_args(
      op, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss);
  if (logits.device.is_cpu()) {
    // The CPU composes its forward and backward (the backward recomputes the LSE; in place works, as the forward
    // has read the logits before the backward overwrites them). A missing upstream gradient is a tensor of ones.
    cpu::internal::cross_entropy(op, loss, logits, targets, options, lse, z_loss);
    const bool per_row = options.reduction == Reduction::none;
    const std::size_t n_gl = per_row ? static_cast<std::size_t>(p.rows) : 1;
    std::vector<double> ones64;
    std::vector<float> ones32;
    TensorView gl = grad_loss;
    if (!grad_loss.data) {
      void* data = nullptr;
      DType dt = DType::f32;
      if (logits.dtype == DType::f64) {
        ones64.assign(n_gl, 1.0);
        data = ones64.data();
        dt = DType::f64;
      } else {
        ones32.assign(n_gl, 1.0f);
        data = ones32.data();
      }
      gl = per_row ? TensorView::contiguous(data, dt, Device::cpu(), {p.rows})
                   : TensorView::contiguous(data, dt, Device::cpu(), {});
    }
    return cpu::internal::cross_entropy_backward(op, grad_logits, logits, targets, gl, options, lse);
  }
#if SOFTMAXKIT_HAS_CUDA
  cuda::cross_entropy_forward_backward(op, p, loss, grad_logits, logits, targets, options, grad_loss, lse, z_loss,
                                       stream);
#else
  (void)p;
  (void)stream;
  throw_unsupported(op, "tensors are on " + logits.device.str() + " but softmaxkit was built without CUDA");
#endif
}

}  // namespace smk
