#include "softmax/args.hpp"

#include <cmath>
#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

namespace {

// `v` has in's shape with `dim` removed, or kept with size 1 (logsumexp's output, the per-row temperature).
bool has_reduced_shape(const TensorView& v, const TensorView& in, int dim) {
  if (v.rank == in.rank) {
    if (v.shape[dim] != 1) return false;
    for (int d = 0; d < in.rank; ++d)
      if (d != dim && v.shape[d] != in.shape[d]) return false;
    return true;
  }
  if (v.rank != in.rank - 1) return false;
  for (int d = 0, o = 0; d < in.rank; ++d)
    if (d != dim && v.shape[o++] != in.shape[d]) return false;
  return true;
}

std::string reduced_shape_rule(const TensorView& in, int dim) {
  return "must be 'in' shape " + in.shape_str() + " without dimension " + std::to_string(dim) +
         " (or with it of size 1)";
}

// Two views the op reads (or one it writes and one it reads) must not share memory.
void check_disjoint(const char* op, const char* arg, const TensorView& a, const char* other_arg, const TensorView& b) {
  if (!(a.device == b.device)) return;
  if (overlap(a, b) != Overlap::none)
    throw_invalid_argument(op, arg, std::string("overlaps '") + other_arg + "'; they must not share memory");
}

// The input dtype and dim, and the options every op shares: temperature (scalar or per row) and, for the forward
// ops, the mask. Returns the normalised dim.
int check_common(const char* op, const char* in_arg, const TensorView& in, const SoftmaxOptions& options,
                 bool forward) {
  check_view(op, in_arg, in);
  if (in.rank < 1) throw_invalid_argument(op, in_arg, "must have at least one dimension");
  const int dim = normalize_dim(op, "options.dim", options.dim, in.rank);
  check_dtype_in(op, in_arg, in, {DType::f32, DType::f16, DType::bf16, DType::f64});
  if (in.dtype == DType::f64 && !in.device.is_cpu())
    throw_invalid_argument(op, in_arg, "dtype f64 is supported on the CPU only");
  if (forward && options.empty_rows != EmptyRowPolicy::nan && options.empty_rows != EmptyRowPolicy::zeros)
    throw_invalid_argument(op, "options.empty_rows", "is not a known EmptyRowPolicy");

  if (!(options.temperature > 0.0f) || !std::isfinite(options.temperature))
    throw_invalid_argument(op, "options.temperature",
                           "is " + std::to_string(options.temperature) + "; a temperature must be > 0 and finite");
  const TensorView& t = options.temperature_per_row;
  if (is_set(t)) {
    check_view(op, "options.temperature_per_row", t);
    check_same_device(op, "options.temperature_per_row", t, in_arg, in);
    check_dtype_in(op, "options.temperature_per_row", t, {DType::f32});
    if (!has_reduced_shape(t, in, dim))
      throw_invalid_argument(op, "options.temperature_per_row",
                             "shape " + t.shape_str() + " " + reduced_shape_rule(in, dim));
    if (options.temperature != 1.0f)
      throw_invalid_argument(op, "options.temperature",
                             "is " + std::to_string(options.temperature) +
                                 " while options.temperature_per_row is set; give one or the other");
  }

  const TensorView& m = options.mask;
  if (forward && is_set(m)) {
    check_view(op, "options.mask", m);
    check_same_device(op, "options.mask", m, in_arg, in);
    if (in.dtype == DType::f32) check_dtype_in(op, "options.mask", m, {DType::f32, DType::b8});
    else check_dtype_in(op, "options.mask", m, {DType::f32, in.dtype, DType::b8});
    bool ok = m.rank == in.rank;
    for (int d = 0; ok && d < in.rank; ++d) ok = m.shape[d] == in.shape[d] || m.shape[d] == 1;
    if (!ok)
      throw_invalid_argument(op, "options.mask",
                             "shape " + m.shape_str() + " does not broadcast to 'in' shape " + in.shape_str() +
                                 " (same rank; each size equal to in's or 1)");
  }
  return dim;
}

SoftmaxProblem check_forward(const char* op, SoftmaxKind kind, const char* out_arg, const TensorView& out,
                             const TensorView& in, const SoftmaxOptions& options) {
  const int dim = check_common(op, "in", in, options, /*forward=*/true);
  check_view(op, out_arg, out);
  check_same_device(op, out_arg, out, "in", in);
  const bool wide = in.dtype == DType::f64;
  if (kind == SoftmaxKind::logsumexp || kind == SoftmaxKind::state) {
    if (!has_reduced_shape(out, in, dim))
      throw_invalid_argument(op, out_arg, "shape " + out.shape_str() + " " + reduced_shape_rule(in, dim));
    if (wide) check_dtype_in(op, out_arg, out, {DType::f64});
    else check_dtype_in(op, out_arg, out, {DType::f32});
  } else {
    check_same_shape(op, out_arg, out, "in", in);
    if (wide || in.dtype == DType::f32) check_dtype_in(op, out_arg, out, {in.dtype});
    else check_dtype_in(op, out_arg, out, {in.dtype, DType::f32});
  }
  check_writable(op, out_arg, out);
  // Softmax reads a whole row before writing it, so an exact alias is safe; the LSE output never matches in's shape.
  check_no_overlap(op, out_arg, out, "in", in, /*in_place_ok=*/kind == SoftmaxKind::softmax ||
                                                              kind == SoftmaxKind::log_softmax);
  if (is_set(options.mask)) check_disjoint(op, out_arg, out, "options.mask", options.mask);
  if (is_set(options.temperature_per_row))
    check_disjoint(op, out_arg, out, "options.temperature_per_row", options.temperature_per_row);
  return {dim, rows_excluding(in, dim), in.shape[dim]};
}

}  // namespace

SoftmaxProblem check_softmax_args(const char* op, SoftmaxKind kind, const TensorView& out, const TensorView& in,
                                  const SoftmaxOptions& options) {
  return check_forward(op, kind, "out", out, in, options);
}

SoftmaxProblem check_softmax_state_args(const char* op, const TensorView& out_max, const TensorView& out_sum,
                                        const TensorView& in, const SoftmaxOptions& options) {
  check_view(op, "out_sum", out_sum);
  const SoftmaxProblem p = check_forward(op, SoftmaxKind::state, "out_max", out_max, in, options);
  check_same_device(op, "out_sum", out_sum, "in", in);
  if (!has_reduced_shape(out_sum, in, p.dim))
    throw_invalid_argument(op, "out_sum", "shape " + out_sum.shape_str() + " " + reduced_shape_rule(in, p.dim));
  check_dtype_in(op, "out_sum", out_sum, {out_max.dtype});
  check_writable(op, "out_sum", out_sum);
  check_no_overlap(op, "out_sum", out_sum, "in", in, /*in_place_ok=*/false);
  check_disjoint(op, "out_sum", out_sum, "out_max", out_max);
  if (is_set(options.mask)) check_disjoint(op, "out_sum", out_sum, "options.mask", options.mask);
  if (is_set(options.temperature_per_row))
    check_disjoint(op, "out_sum", out_sum, "options.temperature_per_row", options.temperature_per_row);
  return p;
}

SoftmaxProblem check_softmax_backward_args(const char* op, const TensorView& dx, const TensorView& y,
                                           const TensorView& dy, const SoftmaxOptions& options) {
  const int dim = check_common(op, "y", y, options, /*forward=*/false);
  check_view(op, "dy", dy);
  check_view(op, "dx", dx);
  check_same_device(op, "dy", dy, "y", y);
  check_same_device(op, "dx", dx, "y", y);
  check_same_shape(op, "dy", dy, "y", y);
  check_same_shape(op, "dx", dx, "y", y);
  check_dtype_in(op, "dy", dy, {y.dtype});
  if (y.dtype == DType::f64 || y.dtype == DType::f32) check_dtype_in(op, "dx", dx, {y.dtype});
  else check_dtype_in(op, "dx", dx, {y.dtype, DType::f32});
  check_writable(op, "dx", dx);
  // Every backend reads a row's y and dy before writing its dx, so dx may be either input exactly.
  check_no_overlap(op, "dx", dx, "y", y, /*in_place_ok=*/true);
  check_no_overlap(op, "dx", dx, "dy", dy, /*in_place_ok=*/true);
  if (is_set(options.temperature_per_row))
    check_disjoint(op, "dx", dx, "options.temperature_per_row", options.temperature_per_row);
  return {dim, rows_excluding(y, dim), y.shape[dim]};
}

}  // namespace smk::detail
