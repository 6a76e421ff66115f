#include "cross_entropy/args.hpp"

#include <cmath>
#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

namespace {

DType stat_dtype(const TensorView& logits) { return logits.dtype == DType::f64 ? DType::f64 : DType::f32; }

// Logits, targets and options: everything but the outputs.
CrossEntropyProblem check_inputs(const char* op, const TensorView& logits, const TensorView& targets,
                                 const CrossEntropyOptions& o) {
  check_view(op, "logits", logits);
  check_view(op, "targets", targets);
  if (logits.rank != 2) throw_invalid_argument(op, "logits", "must be [N, C], got shape " + logits.shape_str());
  check_dtype_in(op, "logits", logits, {DType::f32, DType::f16, DType::bf16, DType::f64});
  if (logits.dtype == DType::f64 && !logits.device.is_cpu())
    throw_invalid_argument(op, "logits", "dtype f64 is supported on the CPU only");
  const std::int64_t n = logits.shape[0], c = logits.shape[1];
  check_shape(op, "targets", targets, {n});
  check_dtype_in(op, "targets", targets, {DType::i32, DType::i64});
  check_same_device(op, "targets", targets, "logits", logits);
  if (o.reduction != Reduction::none && o.reduction != Reduction::sum && o.reduction != Reduction::mean)
    throw_invalid_argument(op, "options.reduction", "is not a known Reduction");
  if (!(o.label_smoothing >= 0.0f && o.label_smoothing <= 1.0f))
    throw_invalid_argument(op, "options.label_smoothing",
                           "must be in [0, 1], got " + std::to_string(o.label_smoothing));
  if (!(o.z_loss >= 0.0f && std::isfinite(o.z_loss)))
    throw_invalid_argument(op, "options.z_loss", "must be finite and >= 0, got " + std::to_string(o.z_loss));
  if (!(o.softcap >= 0.0f && std::isfinite(o.softcap)))
    throw_invalid_argument(op, "options.softcap", "must be finite and >= 0 (0 disables), got " +
                                                      std::to_string(o.softcap));
  if (o.class_weights.data != nullptr) {
    check_view(op, "options.class_weights", o.class_weights);
    check_shape(op, "options.class_weights", o.class_weights, {c});
    check_dtype_in(op, "options.class_weights", o.class_weights, {stat_dtype(logits)});
    check_same_device(op, "options.class_weights", o.class_weights, "logits", logits);
  }
  return {n, c};
}

void check_output(const char* op, const char* arg, const TensorView& v, const TensorView& logits,
                  const TensorView& targets, bool per_row, std::int64_t n) {
  check_view(op, arg, v);
  if (per_row) check_shape(op, arg, v, {n});
  else check_shape(op, arg, v, {});
  check_dtype_in(op, arg, v, {stat_dtype(logits)});
  check_same_device(op, arg, v, "logits", logits);
  check_writable(op, arg, v);
  check_no_overlap(op, arg, v, "logits", logits, false);
  check_no_overlap(op, arg, v, "targets", targets, false);
}

}  // namespace

CrossEntropyProblem check_cross_entropy_args(const char* op, const TensorView& loss, const TensorView& logits,
                                             const TensorView& targets, const CrossEntropyOptions& options,
                                             const TensorView& lse, const TensorView& z_loss) {
  const CrossEntropyProblem p = check_inputs(op, logits, targets, options);
  const bool per_row = options.reduction == Reduction::none;
  check_output(op, "loss", loss, logits, targets, per_row, p.rows);
  if (lse.data) {
    check_output(op, "lse", lse, logits, targets, true, p.rows);
    check_no_overlap(op, "lse", lse, "loss", loss, false);
  }
  if (z_loss.data) {
    check_output(op, "z_loss", z_loss, logits, targets, per_row, p.rows);
    check_no_overlap(op, "z_loss", z_loss, "loss", loss, false);
    if (lse.data) check_no_overlap(op, "z_loss", z_loss, "lse", lse, false);
  }
  return p;
}

namespace {

void check_grad_loss(const char* op, const TensorView& grad_loss, const TensorView& logits,
                     const CrossEntropyOptions& options, const CrossEntropyProblem& p) {
  check_view(op, "grad_loss", grad_loss);
  if (options.reduction == Reduction::none) check_shape(op, "grad_loss", grad_loss, {p.rows});
  else check_shape(op, "grad_loss", grad_loss, {});
  check_dtype_in(op, "grad_loss", grad_loss, {stat_dtype(logits)});
  check_same_device(op, "grad_loss", grad_loss, "logits", logits);
}

void check_grad_logits(const char* op, const TensorView& grad_logits, const TensorView& logits,
                       const TensorView& targets, const CrossEntropyProblem& p) {
  check_view(op, "grad_logits", grad_logits);
  check_shape(op, "grad_logits", grad_logits, {p.rows, p.classes});
  if (logits.dtype == DType::f64 || logits.dtype == DType::f32) check_dtype_in(op, "grad_logits", grad_logits, {logits.dtype});
  else check_dtype_in(op, "grad_logits", grad_logits, {logits.dtype, DType::f32});
  check_same_device(op, "grad_logits", grad_logits, "logits", logits);
  check_writable(op, "grad_logits", grad_logits);
  // In place over the logits is the point of the fused backward: each row is read whole before it is written.
  check_no_overlap(op, "grad_logits", grad_logits, "logits", logits, true);
  check_no_overlap(op, "grad_logits", grad_logits, "targets", targets, false);
}

}  // namespace

CrossEntropyProblem check_cross_entropy_forward_backward_args(const char* op, const TensorView& loss,
                                                              const TensorView& grad_logits, const TensorView& logits,
                                                              const TensorView& targets,
                                                              const CrossEntropyOptions& options,
                                                              const TensorView& grad_loss, const TensorView& lse,
                                                              const TensorView& z_loss) {
  const CrossEntropyProblem p = check_cross_entropy_args(op, loss, logits, targets, options, lse, z_loss);
  if (grad_loss.data) check_grad_loss(op, grad_loss, logits, options, p);
  check_grad_logits(op, grad_logits, logits, targets, p);
  check_no_overlap(op, "grad_logits", grad_logits, "loss", loss, false);
  if (grad_loss.data) {
    check_no_overlap(op, "grad_logits", grad_logits, "grad_loss", grad_loss, false);
    check_no_overlap(op, "loss", loss, "grad_loss", grad_loss, false);
    if (lse.data) check_no_overlap(op, "lse", lse, "grad_loss", grad_loss, false);
    if (z_loss.data) check_no_overlap(op, "z_loss", z_loss, "grad_loss", grad_loss, false);
  }
  if (lse.data) check_no_overlap(op, "grad_logits", grad_logits, "lse", lse, false);
  if (z_loss.data) check_no_overlap(op, "grad_logits", grad_logits, "z_loss", z_loss, false);
  return p;
}

CrossEntropyProblem check_cross_entropy_backward_args(const char* op, const TensorView& grad_logits,
                                                      const TensorView& logits, const TensorView& targets,
                                                      const TensorView& grad_loss, const CrossEntropyOptions& options,
                                                      const TensorView& lse) {
  const CrossEntropyProblem p = check_inputs(op, logits, targets, options);
  check_grad_loss(op, grad_loss, logits, options, p);
  if (lse.data) {
    check_view(op, "lse", lse);
    check_shape(op, "lse", lse, {p.rows});
    check_dtype_in(op, "lse", lse, {stat_dtype(logits)});
    check_same_device(op, "lse", lse, "logits", logits);
  }
  check_grad_logits(op, grad_logits, logits, targets, p);
  check_no_overlap(op, "grad_logits", grad_logits, "grad_loss", grad_loss, false);
  if (lse.data) check_no_overlap(op, "grad_logits", grad_logits, "lse", lse, false);
  return p;
}

}  // namespace smk::detail
