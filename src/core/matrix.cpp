#include "softmaxkit/core/matrix.hpp"

#include <string>

#include "softmaxkit/core/error.hpp"

namespace smk {

namespace {
void check_dims(const char* op, std::int64_t rows, std::int64_t cols) {
  if (rows <= 0) throw_invalid_argument(op, "rows", "must be positive, got " + std::to_string(rows));
  if (cols <= 0) throw_invalid_argument(op, "cols", "must be positive, got " + std::to_string(cols));
  if (rows > (std::int64_t{1} << 40) / cols)
    throw_invalid_argument(op, "rows", std::to_string(rows) + " × " + std::to_string(cols) + " elements is too large");
}
}  // namespace

Matrix::Matrix(std::int64_t rows, std::int64_t cols, std::vector<float> values)
    : rows_(rows), cols_(cols), values_(std::move(values)) {}

Matrix::Matrix(std::int64_t rows, std::int64_t cols) : rows_(rows), cols_(cols) {
  check_dims("Matrix", rows, cols);
  values_.assign(static_cast<std::size_t>(rows * cols), 0.0f);
}

Matrix Matrix::from(std::int64_t rows, std::int64_t cols, std::vector<float> values) {
  check_dims("Matrix::from", rows, cols);
  if (static_cast<std::int64_t>(values.size()) != rows * cols)
    throw_invalid_argument("Matrix::from", "values",
                           "has " + std::to_string(values.size()) + " elements, expected " + std::to_string(rows) +
                               " × " + std::to_string(cols) + " = " + std::to_string(rows * cols));
  return Matrix(rows, cols, std::move(values));
}

std::int64_t Matrix::index(std::int64_t row, std::int64_t col) const {
  if (row < 0 || row >= rows_)
    throw_invalid_argument("Matrix", "row", std::to_string(row) + " is outside [0, " + std::to_string(rows_) + ")");
  if (col < 0 || col >= cols_)
    throw_invalid_argument("Matrix", "col", std::to_string(col) + " is outside [0, " + std::to_string(cols_) + ")");
  return row * cols_ + col;
}

float& Matrix::operator()(std::int64_t row, std::int64_t col) { return values_[static_cast<std::size_t>(index(row, col))]; }
float Matrix::operator()(std::int64_t row, std::int64_t col) const {
  return values_[static_cast<std::size_t>(index(row, col))];
}

std::vector<float> Matrix::row(std::int64_t row) const {
  const auto start = values_.begin() + index(row, 0);
  return std::vector<float>(start, start + cols_);
}

}  // namespace smk
