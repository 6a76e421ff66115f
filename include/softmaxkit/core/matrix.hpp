// softmaxkit: an owning, row-major host matrix of float: the lesson's Matrix, kept for examples, the demo and
// tests. Ops take TensorViews; view() bridges the two.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softmaxkit/core/tensor.hpp"

namespace smk {

class Matrix {
 public:
  // A rows × cols matrix of zeros. Both dimensions must be positive.
  Matrix(std::int64_t rows, std::int64_t cols);
  // Takes `values` in row-major order; its size must be rows · cols.
  static Matrix from(std::int64_t rows, std::int64_t cols, std::vector<float> values);

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t size() const { return rows_ * cols_; }

  // Bounds-checked element access; an index out of range throws smk::Error naming it.
  float& operator()(std::int64_t row, std::int64_t col);
  float operator()(std::int64_t row, std::int64_t col) const;

  // An independent copy of one row: changing it leaves the matrix unchanged (the lesson's GetRow).
  std::vector<float> row(std::int64_t row) const;

  std::span<const float> values() const { return values_; }
  float* data() { return values_.data(); }
  const float* data() const { return values_.data(); }

  TensorView view() { return TensorView::of(values_.data(), {rows_, cols_}); }
  TensorView view() const { return TensorView::of(values_.data(), {rows_, cols_}); }

  friend bool operator==(const Matrix& a, const Matrix& b) = default;

 private:
  Matrix(std::int64_t rows, std::int64_t cols, std::vector<float> values);
  std::int64_t index(std::int64_t row, std::int64_t col) const;

  std::int64_t rows_;
  std::int64_t cols_;
  std::vector<float> values_;
};

}  // namespace smk
