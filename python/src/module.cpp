// softmaxkit._C: the nanobind extension under the Python package. It is deliberately thin: it turns any array that
// exports DLPack (or the buffer protocol) into an smk::TensorView without copying, calls the C++ library, and
// turns smk::Error into Python exceptions. Output allocation, framework detection and stream choice live in
// python/softmaxkit/_arrays.py; every argument check and all arithmetic live in the library.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "softmaxkit/softmaxkit.hpp"

namespace nb = nanobind;

namespace {

// The Python classes smk::Error becomes, one per ErrorCode, handed over by softmaxkit/__init__.py (they are defined
// in Python so that they can inherit from ValueError, NotImplementedError and RuntimeError). Never released: the
// translator may run until the interpreter exits.
PyObject* g_error_types[4] = {PyExc_ValueError, PyExc_NotImplementedError, PyExc_RuntimeError, PyExc_RuntimeError};

int error_index(smk::ErrorCode code) {
  switch (code) {
    case smk::ErrorCode::invalid_argument: return 0;
    case smk::ErrorCode::unsupported: return 1;
    case smk::ErrorCode::cuda_error: return 2;
    case smk::ErrorCode::internal: return 3;
  }
  return 3;
}

[[noreturn]] void throw_invalid(const std::string& op, const std::string& arg, const std::string& what) {
  smk::throw_invalid_argument(op.c_str(), arg.c_str(), what);
}

// DLPack's (code, bits) pair as a softmaxkit dtype. `bf16_bits` reinterprets a 16-bit unsigned array as bfloat16:
// NumPy has no bfloat16 of its own and exports ml_dtypes' bfloat16 through neither DLPack nor the buffer protocol,
// so the Python layer hands such arrays over as their uint16 bit patterns.
smk::DType to_dtype(const std::string& op, const std::string& arg, nb::dlpack::dtype dt, bool bf16_bits) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(dt.code);
  if (dt.lanes == 1) {
    if (bf16_bits && code == Code::UInt && dt.bits == 16) return smk::DType::bf16;
    if (code == Code::Float && dt.bits == 32) return smk::DType::f32;
    if (code == Code::Float && dt.bits == 16) return smk::DType::f16;
    if (code == Code::Float && dt.bits == 64) return smk::DType::f64;
    if (code == Code::Bfloat && dt.bits == 16) return smk::DType::bf16;
    if (code == Code::Bool && dt.bits == 8) return smk::DType::b8;
    if (code == Code::Int && dt.bits == 32) return smk::DType::i32;
    if (code == Code::Int && dt.bits == 64) return smk::DType::i64;
  }
  throw_invalid(op, arg, "DLPack dtype (code " + std::to_string(dt.code) + ", " + std::to_string(dt.bits) +
                             " bits, " + std::to_string(dt.lanes) +
                             " lanes) is not one softmaxkit reads (float32, float16, bfloat16, float64, bool, int32, "
                             "int64)");
}

smk::Device to_device(const std::string& op, const std::string& arg, int type, int id) {
  switch (type) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:  // pinned host memory: ordinary memory to the CPU backend
      return smk::Device::cpu();
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value:
      return smk::Device::cuda(id);
    default:
      throw_invalid(op, arg, "DLPack device type " + std::to_string(type) +
                                 " is not supported (softmaxkit runs on the CPU and on CUDA devices)");
  }
}

// One array argument, converted once: the TensorView the library sees, and the ndarray that keeps the caller's
// memory alive while the view is in use. Exposed to Python as softmaxkit._C.View (its fields make the zero-copy
// property testable: data_ptr is the caller's own pointer).
struct View {
  // The caller's DLPack reference, held (and released) by nanobind: one of the two, as the argument requires.
  nb::ndarray<nb::ro> read_only;
  nb::ndarray<> writable_array;
  smk::TensorView view;

  View(nb::handle obj, const std::string& op, const std::string& arg, bool writable, bool bf16_bits) {
    // No implicit conversion: a copy would silently break zero-copy (and writes into an output would be lost).
    if (writable) {
      nb::ndarray<> a;
      if (!nb::try_cast(obj, a, /*convert=*/false))
        throw_invalid(op, arg, "is not a writable array: pass a NumPy, torch, CuPy or other DLPack array that is "
                               "not read-only (" + std::string(nb::type_name(obj.type()).c_str()) + " given)");
      fill(op, arg, a, bf16_bits);
      writable_array = std::move(a);
    } else {
      nb::ndarray<nb::ro> a;
      if (!nb::try_cast(obj, a, /*convert=*/false))
        throw_invalid(op, arg, "is not an array: pass an object that exports DLPack (__dlpack__) or the buffer "
                               "protocol, such as a NumPy, torch, CuPy or JAX array (" +
                                   std::string(nb::type_name(obj.type()).c_str()) + " given)");
      fill(op, arg, a, bf16_bits);
      read_only = std::move(a);
    }
  }

  template <typename Array>
  void fill(const std::string& op, const std::string& arg, const Array& a, bool bf16_bits) {
    if (a.ndim() > static_cast<std::size_t>(smk::TensorView::kMaxRank))
      throw_invalid(op, arg, "rank " + std::to_string(a.ndim()) + " exceeds softmaxkit's maximum of " +
                                 std::to_string(smk::TensorView::kMaxRank));
    view.data = const_cast<void*>(static_cast<const void*>(a.data()));  // DLPack's byte_offset already applied
    view.dtype = to_dtype(op, arg, a.dtype(), bf16_bits);
    view.device = to_device(op, arg, a.device_type(), a.device_id());
    view.rank = static_cast<int>(a.ndim());
    for (int d = 0; d < view.rank; ++d) {
      view.shape[d] = static_cast<std::int64_t>(a.shape(d));
      view.strides[d] = a.stride(d);  // DLPack strides are in elements, as TensorView's
    }
  }

  std::uintptr_t data_ptr() const { return reinterpret_cast<std::uintptr_t>(view.data); }
  std::string dtype() const { return smk::dtype_name(view.dtype); }
  std::tuple<std::string, int> device() const {
    return {view.device.is_cpu() ? "cpu" : "cuda", view.device.index};
  }
  nb::tuple shape() const {
    nb::list l;
    for (int d = 0; d < view.rank; ++d) l.append(view.shape[d]);
    return nb::tuple(l);
  }
  nb::tuple strides() const {
    nb::list l;
    for (int d = 0; d < view.rank; ++d) l.append(view.strides[d]);
    return nb::tuple(l);
  }
};

smk::SoftmaxOptions options(int dim, bool zeros, float temperature, const std::optional<const View*>& per_row,
                            const std::optional<const View*>& mask) {
  smk::SoftmaxOptions o;
  o.dim = dim;
  o.empty_rows = zeros ? smk::EmptyRowPolicy::zeros : smk::EmptyRowPolicy::nan;
  o.temperature = temperature;
  if (per_row && *per_row) o.temperature_per_row = (*per_row)->view;
  if (mask && *mask) o.mask = (*mask)->view;
  return o;
}

smk::Stream stream_of(std::uintptr_t handle) { return smk::Stream{reinterpret_cast<void*>(handle)}; }

using Forward = void (*)(const smk::TensorView&, const smk::TensorView&, const smk::SoftmaxOptions&, smk::Stream);
using Backward = void (*)(const smk::TensorView&, const smk::TensorView&, const smk::TensorView&,
                          const smk::SoftmaxOptions&, smk::Stream);

// The views are plain structs copied out before the GIL is released; the View objects (and the caller's arrays
// they keep alive) stay referenced by the Python caller for the whole call.
template <Forward F>
void forward(const View& out, const View& in, int dim, bool zeros, float temperature,
             std::optional<const View*> per_row, std::optional<const View*> mask, std::uintptr_t stream) {
  const smk::SoftmaxOptions o = options(dim, zeros, temperature, per_row, mask);
  const smk::TensorView vo = out.view, vi = in.view;
  nb::gil_scoped_release release;
  F(vo, vi, o, stream_of(stream));
}

template <Backward F>
void backward(const View& dx, const View& y, const View& dy, int dim, float temperature,
              std::optional<const View*> per_row, std::uintptr_t stream) {
  const smk::SoftmaxOptions o = options(dim, false, temperature, per_row, std::nullopt);
  const smk::TensorView vdx = dx.view, vy = y.view, vdy = dy.view;
  nb::gil_scoped_release release;
  F(vdx, vy, vdy, o, stream_of(stream));
}

void state(const View& out_max, const View& out_sum, const View& in, int dim, float temperature,
           std::optional<const View*> per_row, std::optional<const View*> mask, std::uintptr_t stream) {
  const smk::SoftmaxOptions o = options(dim, false, temperature, per_row, mask);
  const smk::TensorView vm = out_max.view, vs = out_sum.view, vi = in.view;
  nb::gil_scoped_release release;
  smk::softmax_state(vm, vs, vi, o, stream_of(stream));
}

smk::CrossEntropyOptions ce_options(std::int64_t ignore_index, int reduction, bool mean_of_nothing_is_zero,
                                    float label_smoothing, float z_loss, float softcap,
                                    const std::optional<const View*>& weights) {
  smk::CrossEntropyOptions o;
  o.ignore_index = ignore_index;
  o.reduction = static_cast<smk::Reduction>(reduction);  // an unknown value is rejected by the library
  o.mean_of_nothing_is_zero = mean_of_nothing_is_zero;
  o.label_smoothing = label_smoothing;
  o.z_loss = z_loss;
  o.softcap = softcap;
  if (weights && *weights) o.class_weights = (*weights)->view;
  return o;
}

smk::TensorView optional_view(const std::optional<const View*>& v) {
  return v && *v ? (*v)->view : smk::TensorView{};
}

void cross_entropy(const View& loss, const View& logits, const View& targets, std::int64_t ignore_index,
                   int reduction, bool mean_of_nothing_is_zero, float label_smoothing, float z_loss, float softcap,
                   std::optional<const View*> weights, std::optional<const View*> lse,
                   std::optional<const View*> z, std::uintptr_t stream) {
  const smk::CrossEntropyOptions o =
      ce_options(ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing, z_loss, softcap, weights);
  const smk::TensorView vl = loss.view, vx = logits.view, vt = targets.view, vlse = optional_view(lse),
                        vz = optional_view(z);
  nb::gil_scoped_release release;
  smk::cross_entropy(vl, vx, vt, o, vlse, vz, stream_of(stream));
}

void cross_entropy_backward(const View& grad_logits, const View& logits, const View& targets, const View& grad_loss,
                            std::int64_t ignore_index, int reduction, bool mean_of_nothing_is_zero,
                            float label_smoothing, float z_loss, float softcap, std::optional<const View*> weights,
                            std::optional<const View*> lse, std::uintptr_t stream) {
  const smk::CrossEntropyOptions o =
      ce_options(ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing, z_loss, softcap, weights);
  const smk::TensorView vg = grad_logits.view, vx = logits.view, vt = targets.view, vgl = grad_loss.view,
                        vlse = optional_view(lse);
  nb::gil_scoped_release release;
  smk::cross_entropy_backward(vg, vx, vt, vgl, o, vlse, stream_of(stream));
}

// Forward + backward in one call (include/softmaxkit/cross_entropy.hpp): grad_loss None is 1.
void cross_entropy_forward_backward(const View& loss, const View& grad_logits, const View& logits,
                                    const View& targets, std::optional<const View*> grad_loss,
                                    std::int64_t ignore_index, int reduction, bool mean_of_nothing_is_zero,
                                    float label_smoothing, float z_loss, float softcap,
                                    std::optional<const View*> weights, std::optional<const View*> lse,
                                    std::optional<const View*> z, std::uintptr_t stream) {
  const smk::CrossEntropyOptions o =
      ce_options(ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing, z_loss, softcap, weights);
  const smk::TensorView vl = loss.view, vg = grad_logits.view, vx = logits.view, vt = targets.view,
                        vgl = optional_view(grad_loss), vlse = optional_view(lse), vz = optional_view(z);
  nb::gil_scoped_release release;
  smk::cross_entropy_forward_backward(vl, vg, vx, vt, o, vgl, vlse, vz, stream_of(stream));
}

// Linear cross-entropy (include/softmaxkit/linear_cross_entropy.hpp): absent optional views are null (grad_loss:
// 1); chunk_rows, logit_rows None: the library's defaults.
void linear_cross_entropy(const View& loss, std::optional<const View*> lse, const View& grad_hidden,
                          const View& grad_weight, std::optional<const View*> grad_bias, const View& hidden,
                          const View& weight, const View& targets, std::optional<const View*> grad_loss,
                          std::optional<const View*> bias, std::optional<std::int64_t> chunk_rows,
                          std::optional<std::int64_t> logit_rows,
                          std::int64_t ignore_index, int reduction, bool mean_of_nothing_is_zero, float label_smoothing,
                          float z_loss, float softcap, std::optional<const View*> weights, std::uintptr_t stream) {
  smk::LinearCrossEntropyOptions o;
  o.ce = ce_options(ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing, z_loss, softcap, weights);
  o.bias = optional_view(bias);
  o.chunk_rows = chunk_rows;
  o.logit_rows = logit_rows;
  const smk::TensorView vl = loss.view, vlse = optional_view(lse), vdh = grad_hidden.view, vdw = grad_weight.view,
                        vdb = optional_view(grad_bias), vh = hidden.view, vw = weight.view, vt = targets.view,
                        vgl = optional_view(grad_loss);
  nb::gil_scoped_release release;
  smk::linear_cross_entropy(vl, vlse, vdh, vdw, vdb, vh, vw, vt, vgl, o, stream_of(stream));
}

// Attention (include/softmaxkit/attention.hpp): a scale of 0 means 1/sqrt(D); absent optional views are null.
smk::TensorView view_or_null(const std::optional<const View*>& v) { return v && *v ? (*v)->view : smk::TensorView{}; }

void attention(const View& out, const View& lse, const View& q, const View& k, const View& v, float scale,
               bool causal, std::optional<const View*> sinks, std::optional<const View*> cu_seqlens_q,
               std::optional<const View*> cu_seqlens_k, std::uintptr_t stream) {
  smk::AttentionOptions o;
  o.scale = scale;
  o.causal = causal;
  o.sinks = view_or_null(sinks);
  o.cu_seqlens_q = view_or_null(cu_seqlens_q);
  o.cu_seqlens_k = view_or_null(cu_seqlens_k);
  const smk::TensorView vo = out.view, vl = lse.view, vq = q.view, vk = k.view, vv = v.view;
  nb::gil_scoped_release release;
  smk::attention_forward(vo, vl, vq, vk, vv, o, stream_of(stream));
}

void attention_decode(const View& out, const View& lse, const View& q, const View& k_cache, const View& v_cache,
                      const View& seqlens, float scale, bool causal, std::optional<const View*> sinks,
                      std::uintptr_t stream) {
  smk::AttentionDecodeOptions o;
  o.scale = scale;
  o.causal = causal;
  o.sinks = view_or_null(sinks);
  const smk::TensorView vo = out.view, vl = lse.view, vq = q.view, vk = k_cache.view, vv = v_cache.view,
                        vs = seqlens.view;
  nb::gil_scoped_release release;
  smk::attention_decode(vo, vl, vq, vk, vv, vs, o, stream_of(stream));
}

void merge_states(const View& out_o, const View& out_lse, const View& o_a, const View& lse_a, const View& o_b,
                  const View& lse_b, std::uintptr_t stream) {
  const smk::TensorView v[6] = {out_o.view, out_lse.view, o_a.view, lse_a.view, o_b.view, lse_b.view};
  nb::gil_scoped_release release;
  smk::merge_attention_states(v[0], v[1], v[2], v[3], v[4], v[5], stream_of(stream));
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "softmaxkit's compiled core (internal): use the functions of the softmaxkit package instead.";
  m.attr("__version__") = SOFTMAXKIT_VERSION;
  m.attr("max_rank") = smk::TensorView::kMaxRank;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const smk::Error& e) {
      PyErr_SetString(g_error_types[error_index(e.code())], e.what());
    }
  });
  m.def(
      "_set_error_types",
      [](nb::handle invalid, nb::handle unsupported, nb::handle cuda, nb::handle internal) {
        const nb::handle types[4] = {invalid, unsupported, cuda, internal};
        for (int i = 0; i < 4; ++i) g_error_types[i] = types[i].inc_ref().ptr();
      },
      "Installs the Python exception classes for invalid_argument, unsupported, cuda_error and internal.");

  nb::class_<View>(m, "View",
                   "An array argument as the library sees it: pointer, dtype, device, shape and strides in elements, "
                   "taken from the caller's array without copying.")
      .def(nb::init<nb::handle, const std::string&, const std::string&, bool, bool>(), nb::arg("array"),
           nb::arg("op"), nb::arg("arg"), nb::arg("writable") = false, nb::arg("bf16_bits") = false)
      .def_prop_ro("data_ptr", &View::data_ptr)
      .def_prop_ro("dtype", &View::dtype)
      .def_prop_ro("device", &View::device)
      .def_prop_ro("shape", &View::shape)
      .def_prop_ro("strides", &View::strides);

  m.def("softmax", &forward<&smk::softmax>, nb::arg("out"), nb::arg("in"), nb::arg("dim"), nb::arg("zeros"),
        nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("mask").none(), nb::arg("stream"));
  m.def("log_softmax", &forward<&smk::log_softmax>, nb::arg("out"), nb::arg("in"), nb::arg("dim"), nb::arg("zeros"),
        nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("mask").none(), nb::arg("stream"));
  m.def("logsumexp", &forward<&smk::logsumexp>, nb::arg("out"), nb::arg("in"), nb::arg("dim"), nb::arg("zeros"),
        nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("mask").none(), nb::arg("stream"));
  m.def("softmax_state", &state, nb::arg("out_max"), nb::arg("out_sum"), nb::arg("in"), nb::arg("dim"),
        nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("mask").none(), nb::arg("stream"));
  m.def("softmax_backward", &backward<&smk::softmax_backward>, nb::arg("dx"), nb::arg("y"), nb::arg("dy"),
        nb::arg("dim"), nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("stream"));
  m.def("log_softmax_backward", &backward<&smk::log_softmax_backward>, nb::arg("dx"), nb::arg("y"), nb::arg("dy"),
        nb::arg("dim"), nb::arg("temperature"), nb::arg("temperature_per_row").none(), nb::arg("stream"));

  m.def("cross_entropy", &cross_entropy, nb::arg("loss"), nb::arg("logits"), nb::arg("targets"),
        nb::arg("ignore_index"), nb::arg("reduction"), nb::arg("mean_of_nothing_is_zero"), nb::arg("label_smoothing"),
        nb::arg("z_loss"), nb::arg("softcap"), nb::arg("class_weights").none(), nb::arg("lse").none(),
        nb::arg("z_loss_out").none(), nb::arg("stream"));
  m.def("cross_entropy_backward", &cross_entropy_backward, nb::arg("grad_logits"), nb::arg("logits"),
        nb::arg("targets"), nb::arg("grad_loss"), nb::arg("ignore_index"), nb::arg("reduction"),
        nb::arg("mean_of_nothing_is_zero"), nb::arg("label_smoothing"), nb::arg("z_loss"), nb::arg("softcap"),
        nb::arg("class_weights").none(), nb::arg("lse").none(), nb::arg("stream"));

  m.def("cross_entropy_forward_backward", &cross_entropy_forward_backward, nb::arg("loss"), nb::arg("grad_logits"),
        nb::arg("logits"), nb::arg("targets"), nb::arg("grad_loss").none(), nb::arg("ignore_index"),
        nb::arg("reduction"), nb::arg("mean_of_nothing_is_zero"), nb::arg("label_smoothing"), nb::arg("z_loss"),
        nb::arg("softcap"), nb::arg("class_weights").none(), nb::arg("lse").none(), nb::arg("z_loss_out").none(),
        nb::arg("stream"));

  m.def("linear_cross_entropy", &linear_cross_entropy, nb::arg("loss"), nb::arg("lse").none(),
        nb::arg("grad_hidden"), nb::arg("grad_weight"), nb::arg("grad_bias").none(), nb::arg("hidden"),
        nb::arg("weight"), nb::arg("targets"), nb::arg("grad_loss").none(), nb::arg("bias").none(),
        nb::arg("chunk_rows").none(), nb::arg("logit_rows").none(), nb::arg("ignore_index"), nb::arg("reduction"),
        nb::arg("mean_of_nothing_is_zero"), nb::arg("label_smoothing"), nb::arg("z_loss"), nb::arg("softcap"),
        nb::arg("class_weights").none(), nb::arg("stream"));

  m.def("attention_forward", &attention, nb::arg("out"), nb::arg("lse"), nb::arg("q"), nb::arg("k"), nb::arg("v"),
        nb::arg("scale"), nb::arg("causal"), nb::arg("sinks").none(), nb::arg("cu_seqlens_q").none(),
        nb::arg("cu_seqlens_k").none(), nb::arg("stream"));
  m.def("attention_decode", &attention_decode, nb::arg("out"), nb::arg("lse"), nb::arg("q"), nb::arg("k_cache"),
        nb::arg("v_cache"), nb::arg("seqlens"), nb::arg("scale"), nb::arg("causal"), nb::arg("sinks").none(),
        nb::arg("stream"));
  m.def("merge_attention_states", &merge_states, nb::arg("out_o"), nb::arg("out_lse"), nb::arg("o_a"),
        nb::arg("lse_a"), nb::arg("o_b"), nb::arg("lse_b"), nb::arg("stream"));

  m.def("cuda_built", &smk::cuda_built, "True when the extension was compiled with softmaxkit's CUDA backend.");
  m.def("cuda_device_count", &smk::cuda_device_count, "Usable CUDA devices (0 in a CPU-only build).");
  m.def("cuda_unavailable_reason", &smk::cuda_unavailable_reason,
        "Why cuda_device_count() is 0, in one line; empty when a device is available.");
}
