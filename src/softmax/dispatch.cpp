// softmaxkit: public entry points of the softmax family. Validate once, then hand the call to the backend that
// owns the tensors' device. The CPU backend is src/cpu/softmax.cpp; the CUDA backend is src/cuda/softmax/.
#include "softmax/args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "cpu/softmax_internal.hpp"
#include "softmaxkit/softmax.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/softmax/softmax_cuda.hpp"
#endif

namespace smk {

namespace {

using detail::BackwardKind;
using detail::SoftmaxKind;

#if !SOFTMAXKIT_HAS_CUDA
[[noreturn]] void no_cuda(const char* op, const TensorView& in) {
  throw_unsupported(op, "tensors are on " + in.device.str() + " but softmaxkit was built without CUDA");
}
#endif

void forward(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& out_sum, const TensorView& in,
             const SoftmaxOptions& options, Stream stream) {
  const detail::SoftmaxProblem problem = kind == SoftmaxKind::state
                                             ? detail::check_softmax_state_args(op, out, out_sum, in, options)
                                             : detail::check_softmax_args(op, kind, out, in, options);
  if (in.device.is_cpu()) return cpu::internal::forward(op, kind, problem, out, out_sum, in, options);
#if SOFTMAXKIT_HAS_CUDA
  cuda::softmax_forward(op, kind, problem, out, out_sum, in, options, stream);
#else
  (void)problem;
  (void)stream;
  no_cuda(op, in);
#endif
}

void backward(const char* op, BackwardKind kind, const TensorView& dx, const TensorView& y, const TensorView& dy,
              const SoftmaxOptions& options, Stream stream) {
  const detail::SoftmaxProblem problem = detail::check_softmax_backward_args(op, dx, y, dy, options);
  if (y.device.is_cpu()) return cpu::internal::backward(op, kind, problem, dx, y, dy, options);
#if SOFTMAXKIT_HAS_CUDA
  cuda::softmax_backward(op, kind, problem, dx, y, dy, options, stream);
#else
  (void)problem;
  (void)stream;
  no_cuda(op, y);
#endif
}

}  // namespace

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  forward("softmax", SoftmaxKind::softmax, out, out, in, options, stream);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  forward("log_softmax", SoftmaxKind::log_softmax, out, out, in, options, stream);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  forward("logsumexp", SoftmaxKind::logsumexp, out, out, in, options, stream);
}
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options, Stream stream) {
  forward("softmax_state", SoftmaxKind::state, out_max, out_sum, in, options, stream);
}
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy, const SoftmaxOptions& options,
                      Stream stream) {
  backward("softmax_backward", BackwardKind::softmax, dx, y, dy, options, stream);
}
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options, Stream stream) {
  backward("log_softmax_backward", BackwardKind::log_softmax, dx, y, dy, options, stream);
}

}  // namespace smk
