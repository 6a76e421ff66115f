// softmaxkit: public matmul / matvec. Validate once, then run on the tensors' device.
#include "matmul/args.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/matmul.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "cuda/device_guard.hpp"
#include "softmaxkit/cuda/lesson.hpp"
#endif

namespace smk {

namespace {

void dispatch(const char* op, const TensorView& out, const TensorView& a, const TensorView& b, bool vector,
              Stream stream) {
  const auto p = detail::check_matmul_args(op, out, a, b, vector);
  if (a.device.is_cpu()) {
    if (vector) cpu::matvec(out, a, b);
    else cpu::matmul(out, a, b);
    return;
  }
#if SOFTMAXKIT_HAS_CUDA
  // The lesson kernel reads contiguous row-major operands; x as a k × 1 column is contiguous too.
  if (!a.is_contiguous() || !b.is_contiguous() || !out.is_contiguous())
    throw_unsupported(op, "the CUDA kernel takes contiguous tensors only");
  cuda::DeviceGuard guard(a.device.index);
  cuda::lesson::matmul(static_cast<float*>(out.data), static_cast<const float*>(a.data),
                       static_cast<const float*>(b.data), p.m, p.k, p.n, static_cast<cudaStream_t>(stream.handle));
#else
  (void)p;
  (void)stream;
  throw_unsupported(op, "tensors are on " + a.device.str() + " but softmaxkit was built without CUDA");
#endif
}

}  // namespace

void matmul(const TensorView& out, const TensorView& a, const TensorView& b, Stream stream) {
  dispatch("matmul", out, a, b, false, stream);
}
void matvec(const TensorView& out, const TensorView& a, const TensorView& x, Stream stream) {
  dispatch("matvec", out, a, x, true, stream);
}

}  // namespace smk
