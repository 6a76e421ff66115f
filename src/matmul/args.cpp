#include "matmul/args.hpp"

#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

MatmulProblem check_matmul_args(const char* op, const TensorView& out, const TensorView& a, const TensorView& b,
                                bool b_is_vector) {
  const char* b_name = b_is_vector ? "x" : "b";
  check_view(op, "a", a);
  check_view(op, b_name, b);
  check_view(op, "out", out);
  if (a.rank != 2) throw_invalid_argument(op, "a", "must be a matrix (rank 2), got shape " + a.shape_str());
  const int want_b = b_is_vector ? 1 : 2;
  if (b.rank != want_b)
    throw_invalid_argument(op, b_name, "must have rank " + std::to_string(want_b) + ", got shape " + b.shape_str());
  if (b.shape[0] != a.shape[1])
    throw_invalid_argument(op, b_name, "shape " + b.shape_str() + " does not fit 'a' shape " + a.shape_str() +
                                           ": its first dimension must be " + std::to_string(a.shape[1]));
  const std::int64_t n = b_is_vector ? 1 : b.shape[1];
  const bool out_ok = b_is_vector ? (out.rank == 1 && out.shape[0] == a.shape[0])
                                  : (out.rank == 2 && out.shape[0] == a.shape[0] && out.shape[1] == n);
  if (!out_ok)
    throw_invalid_argument(op, "out", "shape " + out.shape_str() + " is not the product's shape [" +
                                          std::to_string(a.shape[0]) + (b_is_vector ? "" : ", " + std::to_string(n)) +
                                          "]");
  check_same_device(op, b_name, b, "a", a);
  check_same_device(op, "out", out, "a", a);
  if (a.device.is_cpu()) check_dtype_in(op, "a", a, {DType::f32, DType::f64});
  else check_dtype_in(op, "a", a, {DType::f32});
  check_dtype_in(op, b_name, b, {a.dtype});
  check_dtype_in(op, "out", out, {a.dtype});
  check_writable(op, "out", out);
  check_no_overlap(op, "out", out, "a", a, false);
  check_no_overlap(op, "out", out, b_name, b, false);
  return {a.shape[0], a.shape[1], n};
}

}  // namespace smk::detail
