// C entry points to smk::linear_cross_entropy for scripts/compare_torch_lce.py (and to
// smk::cross_entropy_forward_backward for scripts/vs_torch_ce.py), which loads this shared library
// with ctypes and calls it on torch's own CUDA tensors and stream: one process, the same inputs for ours, torch's
// bf16 pipeline and the float64 reference, without building the Python package on the device (not a test; not
// installed). Tensors are contiguous; targets are int64; dtype: 0 f32, 1 f16, 2 bf16; reduction: 0 none, 1 sum,
// 2 mean; chunk_rows, logit_rows ≤ 0: the defaults. Returns 0, or 1 with smk::Error's message in `err`.
#include <cstdint>
#include <cstring>
#include <exception>

#include "softmaxkit/linear_cross_entropy.hpp"

namespace {
smk::DType dtype_of(int code) { return code == 1 ? smk::DType::f16 : code == 2 ? smk::DType::bf16 : smk::DType::f32; }
}  // namespace

extern "C" int smk_lce(void* loss, void* lse, void* grad_hidden, void* grad_weight, void* grad_bias,
                       const void* hidden, const void* weight, const void* bias, const void* targets, int dtype,
                       std::int64_t n, std::int64_t d, std::int64_t v, std::int64_t chunk_rows, std::int64_t logit_rows, int reduction,
                       void* stream, char* err, int err_len) {
  try {
    const smk::Device dev = smk::Device::cuda(0);
    const smk::DType dt = dtype_of(dtype);
    smk::LinearCrossEntropyOptions o;
    o.ce.reduction = static_cast<smk::Reduction>(reduction);
    if (chunk_rows > 0) o.chunk_rows = chunk_rows;
    if (logit_rows > 0) o.logit_rows = logit_rows;
    if (bias) o.bias = smk::TensorView::contiguous(const_cast<void*>(bias), dt, dev, {v});
    const bool per_row = o.ce.reduction == smk::Reduction::none;
    smk::linear_cross_entropy(
        per_row ? smk::TensorView::contiguous(loss, smk::DType::f32, dev, {n})
                : smk::TensorView::contiguous(loss, smk::DType::f32, dev, {}),
        lse ? smk::TensorView::contiguous(lse, smk::DType::f32, dev, {n}) : smk::TensorView{},
        smk::TensorView::contiguous(grad_hidden, dt, dev, {n, d}), smk::TensorView::contiguous(grad_weight, dt, dev, {v, d}),
        grad_bias ? smk::TensorView::contiguous(grad_bias, dt, dev, {v}) : smk::TensorView{},
        smk::TensorView::contiguous(const_cast<void*>(hidden), dt, dev, {n, d}),
        smk::TensorView::contiguous(const_cast<void*>(weight), dt, dev, {v, d}),
        smk::TensorView::contiguous(const_cast<void*>(targets), smk::DType::i64, dev, {n}), {}, o, smk::Stream{stream});
    return 0;
  } catch (const std::exception& e) {
    if (err && err_len > 0) {
      std::strncpy(err, e.what(), static_cast<std::size_t>(err_len) - 1);
      err[err_len - 1] = 0;
    }
    return 1;
  }
}

// Cross-entropy forward + backward (smk::cross_entropy_forward_backward) for scripts/vs_torch_ce.py: logits [n, c]
// contiguous (dtype as above), int64 targets, reduction none (loss [n]) or mean/sum (loss []), the per-row LSE [n]
// (f32), the gradient of the logits in their dtype (not in place; grad_loss null: 1). Returns 0, or 1 with the error.
extern "C" int smk_ce(void* loss, void* lse, void* grad_logits, const void* logits, const void* targets, int dtype,
                      std::int64_t n, std::int64_t c, int reduction, void* stream, char* err, int err_len) {
  try {
    const smk::Device dev = smk::Device::cuda(0);
    const smk::DType dt = dtype_of(dtype);
    smk::CrossEntropyOptions o;
    o.reduction = static_cast<smk::Reduction>(reduction);
    const bool per_row = o.reduction == smk::Reduction::none;
    smk::cross_entropy_forward_backward(
        per_row ? smk::TensorView::contiguous(loss, smk::DType::f32, dev, {n})
                : smk::TensorView::contiguous(loss, smk::DType::f32, dev, {}),
        smk::TensorView::contiguous(grad_logits, dt, dev, {n, c}),
        smk::TensorView::contiguous(const_cast<void*>(logits), dt, dev, {n, c}),
        smk::TensorView::contiguous(const_cast<void*>(targets), smk::DType::i64, dev, {n}), o, {},
        lse ? smk::TensorView::contiguous(lse, smk::DType::f32, dev, {n}) : smk::TensorView{}, {},
        smk::Stream{stream});
    return 0;
  } catch (const std::exception& e) {
    if (err && err_len > 0) {
      std::strncpy(err, e.what(), static_cast<std::size_t>(err_len) - 1);
      err[err_len - 1] = 0;
    }
    return 1;
  }
}

// The chunk a call without chunk_rows uses (the script reports it and the chunk's memory beside the measurement).
extern "C" std::int64_t smk_lce_default_chunk_rows(std::int64_t n, std::int64_t v, int dtype) {
  return smk::linear_cross_entropy_default_chunk_rows(n, v, dtype_of(dtype));
}
extern "C" std::int64_t smk_lce_default_logit_rows(std::int64_t n, std::int64_t v, int dtype) {
  return smk::linear_cross_entropy_default_logit_rows(n, v, dtype_of(dtype));
}
