// softmaxkit (internal): the rows of a reduction over one dimension, as every backend walks them.
//
// A softmax-family call touches several tensors that share in's row index space: the input and output, the mask
// (broadcast: a size-1 dimension has stride 0), the per-row temperature and the per-row outputs (logsumexp, the
// state), which lack the reduced dimension. RowDims lists the non-reduced dimensions once, each with every
// tensor's stride, and merges neighbours where every tensor allows it, so a contiguous batch is a single
// dimension and a row's offsets cost one multiplication.
#pragma once

#include <array>
#include <cstdint>

#include "softmaxkit/core/tensor.hpp"

namespace smk::detail {

using DimStrides = std::array<std::int64_t, TensorView::kMaxRank>;

// The strides of `v` indexed by in's dimensions. `v` has in's rank (a dimension of size 1 where in's is larger
// broadcasts: stride 0) or in's rank without `dim` (its stride over `dim` is 0). An unset view gives all zeros.
inline DimStrides strides_over(const TensorView& v, const TensorView& in, int dim) {
  DimStrides s{};
  if (v.rank == in.rank) {
    for (int d = 0; d < in.rank; ++d) s[d] = v.shape[d] == 1 ? 0 : v.strides[d];
  } else if (v.rank == in.rank - 1) {
    for (int d = 0, o = 0; d < in.rank; ++d) {
      if (d == dim) continue;
      s[d] = v.shape[o] == 1 ? 0 : v.strides[o];
      ++o;
    }
  }
  return s;
}

template <int kViews>
struct RowDims {
  int rank = 0;  // 0: a single row
  std::int64_t size[TensorView::kMaxRank] = {};
  std::int64_t stride[kViews][TensorView::kMaxRank] = {};
};

// The dimensions of `in` other than `dim` and `other` (-1 for none), outermost first, with the given per-view
// strides; size-1 dimensions dropped and neighbours merged when every view is contiguous across them.
template <int kViews>
RowDims<kViews> row_dims(const TensorView& in, int dim, int other, const std::array<DimStrides, kViews>& views) {
  RowDims<kViews> r;
  for (int d = 0; d < in.rank; ++d) {
    if (d == dim || d == other || in.shape[d] == 1) continue;
    bool merge = r.rank > 0;
    for (int v = 0; merge && v < kViews; ++v) merge = r.stride[v][r.rank - 1] == views[v][d] * in.shape[d];
    if (merge) {
      r.size[r.rank - 1] *= in.shape[d];
      for (int v = 0; v < kViews; ++v) r.stride[v][r.rank - 1] = views[v][d];
    } else {
      r.size[r.rank] = in.shape[d];
      for (int v = 0; v < kViews; ++v) r.stride[v][r.rank] = views[v][d];
      ++r.rank;
    }
  }
  return r;
}

// Calls f(const std::int64_t* offsets) for every row, in row-major order of the non-reduced index; offsets[v] is
// view v's element offset of the row's first element.
template <int kViews, typename F>
void for_each_row(const RowDims<kViews>& r, F&& f) {
  for (int d = 0; d < r.rank; ++d)
    if (r.size[d] == 0) return;
  std::int64_t index[TensorView::kMaxRank] = {};
  std::int64_t off[kViews] = {};
  for (;;) {
    f(static_cast<const std::int64_t*>(off));
    int d = r.rank - 1;
    for (; d >= 0; --d) {  // odometer step
      if (++index[d] < r.size[d]) {
        for (int v = 0; v < kViews; ++v) off[v] += r.stride[v][d];
        break;
      }
      for (int v = 0; v < kViews; ++v) off[v] -= r.stride[v][d] * (r.size[d] - 1);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace smk::detail
