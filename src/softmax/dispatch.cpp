// softmaxkit: public entry points of the softmax family. Validate once, then hand the call to the backend that
// owns the tensors' device. The CPU backend is src/cpu/softmax.cpp; the CUDA backend is src/cuda/softmax/.
#include "softmax/args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/softmax.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/softmax/softmax_cuda.hpp"
#endif

namespace smk {

namespace {

using detail::SoftmaxKind;

void dispatch(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
              const SoftmaxOptions& options, Stream stream) {
  const detail::SoftmaxProblem problem = detail::check_softmax_args(op, kind, out, in, options);
  if (in.device.is_cpu()) {
    switch (kind) {
      case SoftmaxKind::softmax: return cpu::softmax(out, in, options);
      case SoftmaxKind::log_softmax: return cpu::log_softmax(out, in, options);
      case SoftmaxKind::logsumexp: return cpu::logsumexp(out, in, options);
    }
  }
#if SOFTMAXKIT_HAS_CUDA
  return cuda::softmax_family(op, kind, problem, out, in, options, stream);
#else
  (void)problem;
  (void)stream;
  throw_unsupported(op, "tensors are on " + in.device.str() + " but softmaxkit was built without CUDA");
#endif
}

}  // namespace

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  dispatch("softmax", SoftmaxKind::softmax, out, in, options, stream);
}
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  dispatch("log_softmax", SoftmaxKind::log_softmax, out, in, options, stream);
}
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  dispatch("logsumexp", SoftmaxKind::logsumexp, out, in, options, stream);
}

}  // namespace smk
