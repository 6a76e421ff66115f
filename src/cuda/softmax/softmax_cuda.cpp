// softmaxkit CUDA backend, softmax family: kernel selection.
//
// Today the only kernels are the lesson's row-per-thread ones (src/cuda/lesson/lesson.cu): f32, contiguous rows,
// reduction over the last dimension. Every other request is refused with a clear message rather than computed
// wrongly. The bandwidth-limit kernels (warp-, block-, cluster- and split-row) are tracked in the issue "Softmax,
// log-softmax, logsumexp and their backward passes on the GPU" and land here.
#include "cuda/softmax/softmax_cuda.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/device_guard.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmax/path.hpp"
#include "softmaxkit/cuda/lesson.hpp"

namespace smk::cuda {

void softmax_forward(const char* op, detail::SoftmaxKind kind, const detail::SoftmaxProblem& p, const TensorView& out,
                     const TensorView&, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  const SoftmaxPath forced = forced_softmax_path();
  if (forced != SoftmaxPath::automatic && forced != SoftmaxPath::lesson_row_per_thread)
    throw_unsupported(op, std::string("kernel path '") + to_string(forced) + "' is not built in this version");
  const bool last_dim = p.dim == in.rank - 1;
  if (in.dtype != DType::f32 || out.dtype != DType::f32 || !last_dim || !in.is_contiguous() || !out.is_contiguous() ||
      kind == detail::SoftmaxKind::state || options.temperature != 1.0f || detail::is_set(options.mask) ||
      detail::is_set(options.temperature_per_row))
    throw_unsupported(op, "the CUDA kernels in this version take contiguous f32 tensors reduced over the last "
                          "dimension; run other layouts and dtypes on the CPU");
  if (p.rows == 0) return;
  DeviceGuard guard(in.device.index);
  auto* y = static_cast<float*>(out.data);
  const auto* x = static_cast<const float*>(in.data);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  switch (kind) {
    case detail::SoftmaxKind::softmax: return lesson::softmax_rows_shifted(y, x, p.rows, p.n, s, options.empty_rows);
    case detail::SoftmaxKind::log_softmax: return lesson::log_softmax_rows(y, x, p.rows, p.n, s, options.empty_rows);
    case detail::SoftmaxKind::logsumexp: return lesson::logsumexp_rows(y, x, p.rows, p.n, s);
    case detail::SoftmaxKind::state: break;
  }
}

void softmax_backward(const char* op, detail::BackwardKind, const detail::SoftmaxProblem&, const TensorView&,
                      const TensorView&, const TensorView&, const SoftmaxOptions&, Stream) {
  throw_unsupported(op, "the CUDA backward kernels are not built in this version; run it on the CPU");
}

}  // namespace smk::cuda
