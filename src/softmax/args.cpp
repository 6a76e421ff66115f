#include "softmax/args.hpp"

#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

SoftmaxProblem check_softmax_args(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                                  const SoftmaxOptions& options) {
  check_view(op, "in", in);
  check_view(op, "out", out);
  if (in.rank < 1) throw_invalid_argument(op, "in", "must have at least one dimension");
  const int dim = normalize_dim(op, "options.dim", options.dim, in.rank);
  if (options.empty_rows != EmptyRowPolicy::nan && options.empty_rows != EmptyRowPolicy::zeros)
    throw_invalid_argument(op, "options.empty_rows", "is not a known EmptyRowPolicy");
  check_same_device(op, "out", out, "in", in);
  check_dtype_in(op, "in", in, {DType::f32, DType::f16, DType::bf16, DType::f64});

  const bool wide = in.dtype == DType::f64;
  if (wide && !in.device.is_cpu())
    throw_invalid_argument(op, "in", "dtype f64 is supported on the CPU only");
  if (kind == SoftmaxKind::logsumexp) {
    // out: in's shape with `dim` removed, or kept with size 1.
    bool ok = false;
    if (out.rank == in.rank) {
      ok = out.shape[dim] == 1;
      for (int d = 0; ok && d < in.rank; ++d) ok = d == dim || out.shape[d] == in.shape[d];
    } else if (out.rank == in.rank - 1) {
      ok = true;
      for (int d = 0, o = 0; ok && d < in.rank; ++d)
        if (d != dim) ok = out.shape[o++] == in.shape[d];
    }
    if (!ok)
      throw_invalid_argument(op, "out", "shape " + out.shape_str() + " must be 'in' shape " + in.shape_str() +
                                            " without dimension " + std::to_string(dim) + " (or with it of size 1)");
    if (wide) check_dtype_in(op, "out", out, {DType::f64});
    else check_dtype_in(op, "out", out, {DType::f32});
  } else {
    check_same_shape(op, "out", out, "in", in);
    if (wide || in.dtype == DType::f32) check_dtype_in(op, "out", out, {in.dtype});
    else check_dtype_in(op, "out", out, {in.dtype, DType::f32});
  }
  check_writable(op, "out", out);
  // Softmax reads a whole row before writing it, so an exact alias is safe; the LSE output never matches in's shape.
  check_no_overlap(op, "out", out, "in", in, /*in_place_ok=*/kind != SoftmaxKind::logsumexp);
  return {dim, rows_excluding(in, dim), in.shape[dim]};
}

}  // namespace smk::detail
