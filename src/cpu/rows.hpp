// softmaxkit (internal, CPU): walking the rows of a reduction over one dimension of a strided tensor.
#pragma once

#include <cstdint>

#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/tensor.hpp"

namespace smk::cpu::detail {

// Calls f(offset_in, offset_out) for every row of `in` along `dim`: offsets in elements of the row's first element
// in `in` and of the matching position in `out`. `out` has in's shape, in's shape with `dim` of size 1, or in's
// shape with `dim` removed.
template <typename F>
void for_each_row(const TensorView& in, const TensorView& out, int dim, F&& f) {
  std::int64_t size[TensorView::kMaxRank];
  std::int64_t stride_in[TensorView::kMaxRank];
  std::int64_t stride_out[TensorView::kMaxRank];
  int k = 0;
  const bool out_drops_dim = out.rank == in.rank - 1;
  for (int d = 0; d < in.rank; ++d) {
    if (d == dim) continue;
    size[k] = in.shape[d];
    stride_in[k] = in.strides[d];
    stride_out[k] = out.strides[out_drops_dim && d > dim ? d - 1 : d];
    ++k;
  }
  for (int i = 0; i < k; ++i)
    if (size[i] == 0) return;
  std::int64_t index[TensorView::kMaxRank] = {};
  std::int64_t off_in = 0, off_out = 0;
  for (;;) {
    f(off_in, off_out);
    int i = k - 1;
    for (; i >= 0; --i) {  // odometer step over the non-reduced dimensions
      if (++index[i] < size[i]) {
        off_in += stride_in[i];
        off_out += stride_out[i];
        break;
      }
      off_in -= stride_in[i] * (size[i] - 1);
      off_out -= stride_out[i] * (size[i] - 1);
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

// Element conversions: every load widens to the compute type, every store rounds once to the storage type.
template <typename Acc>
inline Acc load(const float* p) { return static_cast<Acc>(*p); }
template <typename Acc>
inline Acc load(const double* p) { return static_cast<Acc>(*p); }
template <typename Acc>
inline Acc load(const half_t* p) { return static_cast<Acc>(to_float(*p)); }
template <typename Acc>
inline Acc load(const bfloat16_t* p) { return static_cast<Acc>(to_float(*p)); }

template <typename Acc>
inline void store(float* p, Acc v) { *p = static_cast<float>(v); }
template <typename Acc>
inline void store(double* p, Acc v) { *p = static_cast<double>(v); }
template <typename Acc>
inline void store(half_t* p, Acc v) { *p = to_half(v); }
template <typename Acc>
inline void store(bfloat16_t* p, Acc v) { *p = to_bfloat16(v); }

// Calls f(T*) with `data` cast to the storage type of a floating `dtype` (callers validated it is one).
template <typename F>
void with_type(DType dtype, void* data, F&& f) {
  switch (dtype) {
    case DType::f32: return f(static_cast<float*>(data));
    case DType::f64: return f(static_cast<double*>(data));
    case DType::f16: return f(static_cast<half_t*>(data));
    case DType::bf16: return f(static_cast<bfloat16_t*>(data));
    default: return;
  }
}

// Pairwise (cascade) summation: error at most (⌈log2 n⌉ + 3)·u relative for non-negative terms, against n·u for a
// running sum. Blocks of 8 are summed in sequence, then halves combine recursively.
template <typename T>
T pairwise_sum(const T* x, std::int64_t n) {
  if (n <= 8) {
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += x[i];
    return s;
  }
  const std::int64_t half = n / 2;
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

}  // namespace smk::cpu::detail
