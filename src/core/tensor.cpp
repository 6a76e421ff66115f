#include "softmaxkit/core/tensor.hpp"

#include "softmaxkit/core/error.hpp"

namespace smk {

std::string Device::str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index); }

TensorView TensorView::contiguous(void* data, DType dtype, Device device, std::initializer_list<std::int64_t> shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    throw_invalid_argument("TensorView::contiguous", "shape", "rank " + std::to_string(shape.size()) +
                                                                   " exceeds the maximum of " + std::to_string(kMaxRank));
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.rank = static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t s : shape) v.shape[d++] = s;
  std::int64_t stride = 1;
  for (d = v.rank - 1; d >= 0; --d) {
    v.strides[d] = stride;
    // Validation rejects negative sizes and overflowing extents later, with a clear message; here we only avoid
    // signed overflow by saturating.
    if (__builtin_mul_overflow(stride, v.shape[d] > 0 ? v.shape[d] : 1, &stride)) stride = INT64_MAX;
  }
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, Device device, std::initializer_list<std::int64_t> shape,
                               std::initializer_list<std::int64_t> strides) {
  if (shape.size() != strides.size())
    throw_invalid_argument("TensorView::strided", "strides",
                           "has " + std::to_string(strides.size()) + " entries for a shape of rank " +
                               std::to_string(shape.size()));
  TensorView v = contiguous(data, dtype, device, shape);
  int d = 0;
  for (std::int64_t s : strides) v.strides[d++] = s;
  return v;
}

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (int d = 0; d < rank; ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[d]);
  }
  return s + "]";
}

}  // namespace smk
