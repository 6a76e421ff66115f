#include "cross_entropy/linear_args.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

namespace {

// A matrix operand of the products: rank 2, `dtype`, each row's elements contiguous (cuBLAS's leading dimension is
// the row stride, so rows may be padded but not strided within).
void check_matrix(const char* op, const char* arg, const TensorView& v, DType dtype, const TensorView& ref) {
  check_view(op, arg, v);
  if (v.rank != 2) throw_invalid_argument(op, arg, "must be a matrix, got shape " + v.shape_str());
  check_dtype_in(op, arg, v, {dtype});
  check_same_device(op, arg, v, "hidden", ref);
  if (v.shape[1] > 1 && v.strides[1] != 1)
    throw_invalid_argument(op, arg, "its rows must be contiguous (stride 1 along the last dimension), got strides [" +
                                        std::to_string(v.strides[0]) + ", " + std::to_string(v.strides[1]) + "]");
  if (v.shape[0] > 1 && v.strides[0] < v.shape[1])
    throw_invalid_argument(op, arg, "row stride " + std::to_string(v.strides[0]) + " is less than the row length " +
                                        std::to_string(v.shape[1]));
}

void check_out(const char* op, const char* arg, const TensorView& v, std::initializer_list<const char*> in_names,
               std::initializer_list<const TensorView*> ins) {
  check_writable(op, arg, v);
  auto name = in_names.begin();
  for (const TensorView* in : ins) {
    if (in->data) check_no_overlap(op, arg, v, *name, *in, false);
    ++name;
  }
}

}  // namespace

LinearCrossEntropyProblem check_linear_cross_entropy_args(const char* op, const TensorView& loss,
                                                          const TensorView& lse, const TensorView& grad_hidden,
                                                          const TensorView& grad_weight, const TensorView& grad_bias,
                                                          const TensorView& hidden, const TensorView& weight,
                                                          const TensorView& targets, const TensorView& grad_loss,
                                                          const LinearCrossEntropyOptions& options) {
  // Inputs.
  check_view(op, "hidden", hidden);
  if (hidden.rank != 2) throw_invalid_argument(op, "hidden", "must be [N, d], got shape " + hidden.shape_str());
  check_dtype_in(op, "hidden", hidden, {DType::f32, DType::f16, DType::bf16, DType::f64});
  if (hidden.dtype == DType::f64 && !hidden.device.is_cpu())
    throw_invalid_argument(op, "hidden", "dtype f64 is supported on the CPU only");
  const DType dt = hidden.dtype;
  const DType stat = dt == DType::f64 ? DType::f64 : DType::f32;
  check_matrix(op, "hidden", hidden, dt, hidden);
  const std::int64_t n = hidden.shape[0], d = hidden.shape[1];
  check_view(op, "weight", weight);
  if (weight.rank != 2) throw_invalid_argument(op, "weight", "must be [V, d], got shape " + weight.shape_str());
  if (weight.dtype != dt)
    throw_invalid_argument(op, "weight", "dtype " + std::string(dtype_name(weight.dtype)) + " does not match 'hidden' dtype " +
                                             std::string(dtype_name(dt)));
  check_matrix(op, "weight", weight, dt, hidden);
  const std::int64_t v = weight.shape[0];
  if (weight.shape[1] != d)
    throw_invalid_argument(op, "weight", "shape " + weight.shape_str() + " should be [V, " + std::to_string(d) +
                                             "] (d from 'hidden' " + hidden.shape_str() + ")");
  if (v == 0) throw_invalid_argument(op, "weight", "must have at least one class (V = 0)");
  check_view(op, "targets", targets);
  check_shape(op, "targets", targets, {n});
  check_dtype_in(op, "targets", targets, {DType::i32, DType::i64});
  check_same_device(op, "targets", targets, "hidden", hidden);

  // Options (the cross-entropy's, then the linear layer's).
  const CrossEntropyOptions& o = options.ce;
  if (o.reduction != Reduction::none && o.reduction != Reduction::sum && o.reduction != Reduction::mean)
    throw_invalid_argument(op, "options.ce.reduction", "is not a known Reduction");
  if (!(o.label_smoothing >= 0.0f && o.label_smoothing <= 1.0f))
    throw_invalid_argument(op, "options.ce.label_smoothing",
                           "must be in [0, 1], got " + std::to_string(o.label_smoothing));
  if (!(o.z_loss >= 0.0f && std::isfinite(o.z_loss)))
    throw_invalid_argument(op, "options.ce.z_loss", "must be finite and >= 0, got " + std::to_string(o.z_loss));
  if (!(o.softcap >= 0.0f && std::isfinite(o.softcap)))
    throw_invalid_argument(op, "options.ce.softcap",
                           "must be finite and >= 0 (0 disables), got " + std::to_string(o.softcap));
  if (o.class_weights.data) {
    check_view(op, "options.ce.class_weights", o.class_weights);
    check_shape(op, "options.ce.class_weights", o.class_weights, {v});
    check_dtype_in(op, "options.ce.class_weights", o.class_weights, {stat});
    check_same_device(op, "options.ce.class_weights", o.class_weights, "hidden", hidden);
  }
  if (options.chunk_rows && *options.chunk_rows <= 0)
    throw_invalid_argument(op, "options.chunk_rows",
                           "must be > 0 (or not given, for the default), got " + std::to_string(*options.chunk_rows));
  if (options.logit_rows && *options.logit_rows <= 0)
    throw_invalid_argument(op, "options.logit_rows",
                           "must be > 0 (or not given: the chunk when chunk_rows is given, else the default "
                           "split), got " + std::to_string(*options.logit_rows));
  const bool has_bias = options.bias.data != nullptr;
  if (has_bias) {
    check_view(op, "options.bias", options.bias);
    check_shape(op, "options.bias", options.bias, {v});
    check_dtype_in(op, "options.bias", options.bias, {dt});
    check_same_device(op, "options.bias", options.bias, "hidden", hidden);
  }

  // Outputs.
  const bool per_row = o.reduction == Reduction::none;
  check_view(op, "loss", loss);
  if (per_row) check_shape(op, "loss", loss, {n});
  else check_shape(op, "loss", loss, {});
  check_dtype_in(op, "loss", loss, {stat});
  check_same_device(op, "loss", loss, "hidden", hidden);
  if (lse.data) {
    check_view(op, "lse", lse);
    check_shape(op, "lse", lse, {n});
    check_dtype_in(op, "lse", lse, {stat});
    check_same_device(op, "lse", lse, "hidden", hidden);
  }
  if (grad_loss.data) {
    check_view(op, "grad_loss", grad_loss);
    if (per_row) check_shape(op, "grad_loss", grad_loss, {n});
    else check_shape(op, "grad_loss", grad_loss, {});
    check_dtype_in(op, "grad_loss", grad_loss, {stat});
    check_same_device(op, "grad_loss", grad_loss, "hidden", hidden);
  }
  check_matrix(op, "grad_hidden", grad_hidden, dt, hidden);
  check_shape(op, "grad_hidden", grad_hidden, {n, d});
  check_matrix(op, "grad_weight", grad_weight, dt, hidden);
  check_shape(op, "grad_weight", grad_weight, {v, d});
  if (has_bias) {
    if (!grad_bias.data && v > 0) throw_invalid_argument(op, "grad_bias", "is required when options.bias is given");
    check_view(op, "grad_bias", grad_bias);
    check_shape(op, "grad_bias", grad_bias, {v});
    check_dtype_in(op, "grad_bias", grad_bias, {dt});
    check_same_device(op, "grad_bias", grad_bias, "hidden", hidden);
  } else if (grad_bias.data) {
    throw_invalid_argument(op, "grad_bias", "is given but options.bias is not (there is no bias to differentiate)");
  }

  // No output may overlap an input or another output.
  const TensorView none{};
  const TensorView& cw = o.class_weights;
  const TensorView& b = options.bias;
  check_out(op, "loss", loss, {"hidden", "weight", "targets", "grad_loss", "options.bias", "options.ce.class_weights"},
            {&hidden, &weight, &targets, &grad_loss, &b, &cw});
  if (lse.data) {
    check_out(op, "lse", lse, {"hidden", "weight", "targets", "grad_loss", "options.bias", "options.ce.class_weights",
                               "loss"},
              {&hidden, &weight, &targets, &grad_loss, &b, &cw, &loss});
  }
  const TensorView& l2 = lse.data ? lse : none;
  check_out(op, "grad_hidden", grad_hidden,
            {"hidden", "weight", "targets", "grad_loss", "options.bias", "options.ce.class_weights", "loss", "lse"},
            {&hidden, &weight, &targets, &grad_loss, &b, &cw, &loss, &l2});
  check_out(op, "grad_weight", grad_weight,
            {"hidden", "weight", "targets", "grad_loss", "options.bias", "options.ce.class_weights", "loss", "lse",
             "grad_hidden"},
            {&hidden, &weight, &targets, &grad_loss, &b, &cw, &loss, &l2, &grad_hidden});
  if (grad_bias.data) {
    check_out(op, "grad_bias", grad_bias,
              {"hidden", "weight", "targets", "grad_loss", "options.bias", "options.ce.class_weights", "loss", "lse",
               "grad_hidden", "grad_weight"},
              {&hidden, &weight, &targets, &grad_loss, &b, &cw, &loss, &l2, &grad_hidden, &grad_weight});
  }
  const std::int64_t chunk = options.chunk_rows ? std::min<std::int64_t>(*options.chunk_rows, std::max<std::int64_t>(n, 1))
                                                : linear_cross_entropy_default_chunk_rows(n, v, dt);
  const std::int64_t logit_rows = options.logit_rows ? std::min(*options.logit_rows, chunk)
                                 : options.chunk_rows ? chunk
                                                      : linear_cross_entropy_default_logit_rows(n, v, dt);
  return {n, d, v, chunk, logit_rows};
}

}  // namespace smk::detail
