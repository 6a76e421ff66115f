#include "conformance/harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/device.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include <cuda_runtime_api.h>

#include "softmaxkit/cuda/runtime.hpp"
#endif

namespace smk::conformance {

namespace {

// Padding after the last addressed element: a kernel that reads a vector past its row's end reads NaN here.
constexpr std::int64_t kTailPadding = 16;

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * std::max<std::int64_t>(shape[d + 1], 1);
  return s;
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto v : shape) n *= v;
  return n;
}

// Element offset (from the buffer start) of logical row-major index `linear` of a layout.
std::int64_t offset_of(const ViewLayout& v, std::int64_t linear) {
  std::int64_t off = v.offset;
  for (int d = static_cast<int>(v.shape.size()) - 1; d >= 0; --d) {
    const std::int64_t size = v.shape[d];
    off += (linear % size) * v.strides[d];
    linear /= size;
  }
  return off;
}

// Logical row-major index of element i of row `row` of a tensor of `shape` reduced over `dim`.
std::int64_t linear_index(const std::vector<std::int64_t>& shape, int dim, std::int64_t row, std::int64_t i) {
  // Split `row` into the outer part (dims before `dim`) and the inner part (dims after it).
  std::int64_t inner = 1;
  for (std::size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::int64_t outer_index = row / inner, inner_index = row % inner;
  return (outer_index * shape[dim] + i) * inner + inner_index;
}

void call_op(const Backend& b, Op op, const TensorView& out, const TensorView& in, const SoftmaxOptions& o) {
  switch (b.kind) {
    case BackendKind::cpu_reference:
      if (op == Op::softmax) return cpu::reference::softmax(out, in, o);
      if (op == Op::log_softmax) return cpu::reference::log_softmax(out, in, o);
      return cpu::reference::logsumexp(out, in, o);
    case BackendKind::cpu_float:
      if (op == Op::softmax) return cpu::softmax(out, in, o);
      if (op == Op::log_softmax) return cpu::log_softmax(out, in, o);
      return cpu::logsumexp(out, in, o);
    case BackendKind::cpu_dispatch:
    case BackendKind::gpu:
      if (op == Op::softmax) return smk::softmax(out, in, o);
      if (op == Op::log_softmax) return smk::log_softmax(out, in, o);
      return smk::logsumexp(out, in, o);
  }
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}
std::string fmt(long double v) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  return s.str();
}

// Bytes outside the output view are untouched; the input is unchanged (unless it is the output).
template <typename Fail>
void check_untouched(const Problem& p, const RunResult& r, unsigned char poison, Fail&& fail) {
  {
    const std::vector<unsigned char>& buf = p.in_place ? r.in_bytes : r.out_bytes;
    std::vector<bool> addressed(buf.size(), false);
    const auto size = static_cast<std::int64_t>(dtype_size(p.out.dtype));
    for (std::int64_t i = 0; i < numel(p.out.shape); ++i) {
      const std::int64_t off = offset_of(p.out, i) * size;
      for (std::int64_t k = 0; k < size; ++k) addressed[off + k] = true;
    }
    for (std::size_t k = 0; k < buf.size(); ++k) {
      const unsigned char expected = p.in_place ? p.in_bytes[k] : poison;
      if (!addressed[k] && buf[k] != expected) {
        fail("byte " + std::to_string(k) + " outside the output view was written");
        break;
      }
    }
    if (!p.in_place && r.in_bytes != p.in_bytes) fail("the input buffer was modified");
  }

}

}  // namespace

TensorView make_view(const ViewLayout& v, unsigned char* base, bool null_data, Device device) {
  TensorView t;
  t.data = null_data ? nullptr : base + v.offset * static_cast<std::int64_t>(dtype_size(v.dtype));
  t.dtype = v.dtype;
  t.device = device;
  t.rank = static_cast<int>(v.shape.size());
  for (int d = 0; d < t.rank; ++d) {
    t.shape[d] = v.shape[d];
    t.strides[d] = v.strides[d];
  }
  return t;
}

std::int64_t extent(const ViewLayout& v) {
  if (numel(v.shape) == 0) return v.offset;
  std::int64_t last = v.offset;
  for (std::size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * std::max<std::int64_t>(v.strides[d], 0);
  return last + 1;
}

std::string dims(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

const char* op_name(Op op) {
  switch (op) {
    case Op::softmax: return "softmax";
    case Op::log_softmax: return "log_softmax";
    case Op::logsumexp: return "logsumexp";
  }
  return "?";
}

Spec spec(std::string name, DType dtype, std::vector<std::int64_t> shape, std::vector<double> values) {
  Spec s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.out_dtype = dtype;
  s.shape = std::move(shape);
  s.values = std::move(values);
  return s;
}

Problem make_problem(const Spec& s, Op op) {
  Problem p;
  p.name = s.name;
  p.op = op;
  const int rank = static_cast<int>(s.shape.size());
  p.dim = s.dim < 0 ? s.dim + rank : s.dim;
  p.options = s.options;
  p.options.dim = p.dim;
  p.null_data = s.null_data;
  p.in = {s.dtype, s.shape, s.in_strides.empty() ? contiguous_strides(s.shape) : s.in_strides, s.in_offset};
  if (static_cast<std::int64_t>(s.values.size()) != numel(s.shape))
    throw std::logic_error("spec '" + s.name + "': values do not match the shape");

  const auto in_size = static_cast<std::int64_t>(dtype_size(s.dtype));
  p.in_bytes.assign(static_cast<std::size_t>((extent(p.in) + kTailPadding) * in_size), 0xFF);  // NaN padding
  for (std::int64_t i = 0; i < numel(s.shape); ++i)
    store(s.dtype, p.in_bytes.data() + offset_of(p.in, i) * in_size, s.values[i]);

  if (op == Op::logsumexp) {
    std::vector<std::int64_t> shape;
    for (int d = 0; d < rank; ++d)
      if (d != p.dim) shape.push_back(s.shape[d]);
    const DType lse_dtype = s.dtype == DType::f64 ? DType::f64 : DType::f32;
    p.out = {lse_dtype, shape, contiguous_strides(shape), s.out_offset};
  } else if (s.in_place) {
    p.in_place = true;
    p.out = p.in;
  } else {
    p.out = {s.out_dtype, s.shape, s.out_strides.empty() ? contiguous_strides(s.shape) : s.out_strides, s.out_offset};
  }
  if (!s.mask_shape.empty()) {
    p.has_mask = true;
    p.mask = {s.mask_dtype, s.mask_shape, contiguous_strides(s.mask_shape), 0};
    const auto msize = static_cast<std::int64_t>(dtype_size(s.mask_dtype));
    p.mask_bytes.assign(static_cast<std::size_t>(numel(s.mask_shape) * msize), 0);
    for (std::int64_t i = 0; i < numel(s.mask_shape); ++i) {
      if (s.mask_dtype == DType::b8) p.mask_bytes[i] = s.mask_values[i] != 0;
      else store(s.mask_dtype, p.mask_bytes.data() + i * msize, s.mask_values[i]);
    }
  }
  if (!s.temperatures.empty()) {
    p.has_temperatures = true;
    std::vector<std::int64_t> shape;
    for (int d = 0; d < rank; ++d)
      if (d != p.dim) shape.push_back(s.shape[d]);
    p.temps = {DType::f32, shape, contiguous_strides(shape), 0};
    p.temp_bytes.resize(s.temperatures.size() * 4);
    std::memcpy(p.temp_bytes.data(), s.temperatures.data(), p.temp_bytes.size());
  }
  if (!p.in_place)
    p.out_buffer_bytes = static_cast<std::size_t>((extent(p.out) + kTailPadding) * static_cast<std::int64_t>(dtype_size(p.out.dtype)));
  return p;
}

std::vector<Backend> cpu_backends() {
  return {{"cpu_reference", BackendKind::cpu_reference},
          {"cpu_float", BackendKind::cpu_float},
          {"cpu_dispatch", BackendKind::cpu_dispatch}};
}

std::vector<Backend> gpu_backends() {
  std::vector<Backend> out;
#if SOFTMAXKIT_HAS_CUDA
  for (cuda::SoftmaxPath path : cuda::softmax_paths()) {
    Backend b{std::string("gpu_") + cuda::to_string(path), BackendKind::gpu, path};
    // The lesson's kernels keep one running sum per row (src/cuda/lesson/): their gate uses that depth.
    if (path == cuda::SoftmaxPath::lesson_row_per_thread) b.sum_model = SumModel::sequential;
    out.push_back(b);
  }
#endif
  return out;
}

std::string backend_unavailable_reason(const Backend& b) {
  if (!b.is_gpu()) return {};
  if (cuda_device_count() == 0) return "no GPU: " + cuda_unavailable_reason();
  return {};
}

RunResult run(const Backend& b, const Problem& p, unsigned char poison) {
  RunResult r;
  r.in_bytes = p.in_bytes;
  r.out_bytes.assign(p.out_buffer_bytes, poison);
  SoftmaxOptions options = p.options;
  if (!b.is_gpu()) {
    std::vector<unsigned char> mask = p.mask_bytes, temps = p.temp_bytes;
    if (p.has_mask) options.mask = make_view(p.mask, mask.data(), false, Device::cpu());
    if (p.has_temperatures) options.temperature_per_row = make_view(p.temps, temps.data(), false, Device::cpu());
    const TensorView in = make_view(p.in, r.in_bytes.data(), p.null_data, Device::cpu());
    const TensorView out = p.in_place ? in : make_view(p.out, r.out_bytes.data(), p.null_data, Device::cpu());
    call_op(b, p.op, out, in, options);
    return r;
  }
#if SOFTMAXKIT_HAS_CUDA
  using Buffer = cuda::DeviceBuffer<unsigned char>;
  Buffer din = Buffer::from_host(r.in_bytes);
  Buffer dout = Buffer::from_host(r.out_bytes);
  Buffer dmask = Buffer::from_host(p.mask_bytes), dtemps = Buffer::from_host(p.temp_bytes);
  if (p.has_mask) options.mask = make_view(p.mask, dmask.data(), false, Device::cuda(0));
  if (p.has_temperatures) options.temperature_per_row = make_view(p.temps, dtemps.data(), false, Device::cuda(0));
  const TensorView in = make_view(p.in, din.data(), p.null_data, Device::cuda(0));
  const TensorView out = p.in_place ? in : make_view(p.out, dout.data(), p.null_data, Device::cuda(0));
  try {
    cuda::ScopedSoftmaxPath force(b.path);
    call_op(b, p.op, out, in, options);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    r.applicable = false;
    r.reason = e.what();
    return r;
  }
  SMK_CUDA_CHECK(cudaDeviceSynchronize());  // surfaces a fault of the kernel itself, naming this call
  r.in_bytes = din.to_host();
  r.out_bytes = dout.to_host();
  return r;
#else
  throw std::logic_error("GPU backend in a CPU-only build");
#endif
}

std::int64_t row_count(const Problem& p) {
  std::int64_t rows = 1;
  for (std::size_t d = 0; d < p.in.shape.size(); ++d)
    if (static_cast<int>(d) != p.dim) rows *= p.in.shape[d];
  return rows;
}

std::vector<double> row_values(const Problem& p, std::int64_t row) {
  const std::int64_t n = p.in.shape[p.dim];
  const auto size = static_cast<std::int64_t>(dtype_size(p.in.dtype));
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    x[i] = load(p.in.dtype, p.in_bytes.data() + offset_of(p.in, linear_index(p.in.shape, p.dim, row, i)) * size);
  return x;
}

std::vector<long double> row_scores(const Problem& p, std::int64_t row, int* roundings, bool f32_compute) {
  const std::vector<double> x = row_values(p, row);
  std::vector<long double> z(x.begin(), x.end());
  int k = 0;
  long double t = p.options.temperature;
  if (p.has_temperatures) {
    float tf;
    std::memcpy(&tf, p.temp_bytes.data() + row * 4, 4);
    t = tf;
  }
  // In f32 arithmetic a scaled or masked score beyond the f32 range rounds to ±inf (fl32(x / T), fl32(x + mask)).
  const auto overflow = [&](long double& v) {
    if (f32_compute && std::isfinite(v) && std::fabs(v) >= max_finite(DType::f32) + ulp_of(DType::f32, max_finite(DType::f32)) / 2)
      v = std::copysign(INFINITY, v);
  };
  if (t != 1 || p.has_temperatures) {
    ++k;
    for (auto& v : z) {
      v /= t;
      overflow(v);
    }
  }
  if (p.has_mask) {
    // The mask element of (row, i): the logical index with every broadcast (size-1) dimension at 0.
    const std::int64_t n = p.in.shape[p.dim];
    const auto msize = static_cast<std::int64_t>(dtype_size(p.mask.dtype));
    if (p.mask.dtype != DType::b8) ++k;
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t linear = linear_index(p.in.shape, p.dim, row, i), moff = 0, mstride = 1;
      for (int d = static_cast<int>(p.in.shape.size()) - 1; d >= 0; --d) {
        const std::int64_t idx = linear % p.in.shape[d];
        linear /= p.in.shape[d];
        if (p.mask.shape[d] != 1) moff += idx * mstride;
        mstride *= p.mask.shape[d];
      }
      if (p.mask.dtype == DType::b8) {
        if (p.mask_bytes[moff] == 0) z[i] = -INFINITY;
      } else {
        z[i] += load(p.mask.dtype, p.mask_bytes.data() + moff * msize);
        overflow(z[i]);
      }
    }
  }
  if (roundings) *roundings = k;
  return z;
}

std::vector<double> row_output(const Problem& p, const RunResult& r, std::int64_t row) {
  const auto size = static_cast<std::int64_t>(dtype_size(p.out.dtype));
  const unsigned char* base = p.in_place ? r.in_bytes.data() : r.out_bytes.data();
  if (p.op == Op::logsumexp) return {load(p.out.dtype, base + offset_of(p.out, row) * size)};
  const std::int64_t n = p.in.shape[p.dim];
  std::vector<double> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = load(p.out.dtype, base + offset_of(p.out, linear_index(p.in.shape, p.dim, row, i)) * size);
  return y;
}

Verdict check_same_outputs(const Problem& p, const RunResult& first, const RunResult& second, unsigned char poison) {
  Verdict v;
  auto fail = [&](const std::string& m) {
    ++v.failures;
    if (v.messages.size() < 8) v.messages.push_back(m);
  };
  check_untouched(p, second, poison, fail);
  for (std::int64_t row = 0; row < row_count(p); ++row) {
    const auto a = row_output(p, first, row), b = row_output(p, second, row);
    v.elements += static_cast<std::int64_t>(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
        fail("row " + std::to_string(row) + " position " + std::to_string(i) + ": " + fmt(b[i]) + " with poison 0x" +
             std::to_string(poison) + " but " + fmt(a[i]) + " in the first run (unwritten, or not deterministic)");
        break;
      }
  }
  return v;
}

std::string Verdict::summary() const {
  std::ostringstream s;
  s << failures << " of " << elements << " outputs break the contract";
  for (const auto& m : messages) s << "\n  " << m;
  return s.str();
}

Verdict check(const Problem& p, const RunResult& r, const Backend& b, unsigned char poison) {
  Verdict v;
  auto fail = [&](const std::string& m) {
    ++v.failures;
    if (v.messages.size() < 8) v.messages.push_back(m);
  };

  check_untouched(p, r, poison, fail);

  // 2. Every row against the oracle.
  const std::int64_t n = p.in.shape[p.dim];
  const std::int64_t rows = row_count(p);
  const bool wide = p.out.dtype == DType::f32 || p.out.dtype == DType::f64;
  const bool in16 = p.in.dtype == DType::bf16 || p.in.dtype == DType::f16;  // numerics.hpp kLogTermProductU
  for (std::int64_t row = 0; row < rows; ++row) {
    int roundings = 0;
    const bool f32_compute = b.kind != BackendKind::cpu_reference && p.in.dtype != DType::f64;
    const std::vector<long double> x = row_scores(p, row, &roundings, f32_compute);
    const ExactRow e = exact_row(x.data(), n);
    const std::vector<double> y = row_output(p, r, row);
    // Rounding the scaled / masked scores moves each score by u·|z|: the gates grow by that (docs/semantics.md §6).
    long double zmax = 0;
    if (roundings > 0)
      for (long double v : x)
        if (std::isfinite(v)) zmax = std::max(zmax, std::fabs(v));
    const double score_u = roundings * kU;
    const std::string where = "row " + std::to_string(row) + " (" + regime_name(e.regime) + ")";

    if (p.op == Op::logsumexp) {
      ++v.elements;
      const double got = y[0];
      if (e.regime == Regime::finite) {
        const double gate = lse_gate(n, b.sum_model, e.lse, in16) + score_u * static_cast<double>(zmax);
        double err = static_cast<double>(std::fabs(got - e.lse));
        // An exact result beyond the output type's range rounds to ±inf, and that is then the only right answer.
        if (!std::isfinite(round_to(p.out.dtype, e.lse))) err = got == static_cast<double>(round_to(p.out.dtype, e.lse)) ? 0 : INFINITY;
        v.worst_gate_fraction = std::max(v.worst_gate_fraction, std::isfinite(err) ? err / gate : INFINITY);
        if (!(err <= gate))
          fail(where + ": logsumexp " + fmt(got) + ", exact " + fmt(e.lse) + ", error " + fmt(err) + " > gate " + fmt(gate));
      } else {
        const bool ok = e.regime == Regime::nan ? std::isnan(got) : got == static_cast<double>(e.lse);
        if (!ok) fail(where + ": logsumexp " + fmt(got) + ", expected " + fmt(e.lse));
      }
      continue;
    }

    if (n == 0) continue;  // nothing to write; step 1 checked that nothing was
    v.elements += n;
    if (e.regime != Regime::finite) {
      const bool zeros = e.regime == Regime::empty && p.options.empty_rows == EmptyRowPolicy::zeros;
      for (std::int64_t i = 0; i < n; ++i) {
        const bool ok = zeros ? y[i] == 0 : std::isnan(y[i]);
        if (!ok) {
          fail(where + " position " + std::to_string(i) + ": got " + fmt(y[i]) + ", expected " + (zeros ? "0" : "NaN"));
          break;
        }
      }
      continue;
    }

    long double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::string at = where + " position " + std::to_string(i) + " (score " + fmt(x[i]) + ")";
      if (x[i] == -INFINITY) {  // a removed position: exactly 0, or exactly −inf
        const double want = p.op == Op::softmax ? 0.0 : -INFINITY;
        if (y[i] != want) fail(at + ": got " + fmt(y[i]) + ", expected exactly " + fmt(want));
        continue;
      }
      const long double exact = p.op == Op::softmax ? e.softmax(x[i]) : e.log_softmax(x[i]);
      double gate;  // the f32 computation's absolute error bound at this element
      if (p.op == Op::softmax) {
        // Moving every score by at most Δ scales each probability by a factor in [e^−2Δ, e^2Δ] (exactly, not only
        // to first order: for scores beyond ~1/u their differences are lost in f32 and no bound remains).
        const double delta = score_u * static_cast<double>(zmax);
        // A 16-bit output's terms may be plain expf(fl(x − m)) (numerics.hpp softmax_gate_16bit).
        const double g = wide ? softmax_gate(n, b.sum_model) : softmax_gate_16bit(n, b.sum_model, exact);
        const double rel = roundings > 0 ? g + (1 + g) * std::expm1(2 * delta) : g;
        gate = rel * static_cast<double>(std::max<long double>(exact, kSoftmaxRelativeFloor));
        sum += y[i];
      } else {
        gate = log_softmax_gate(n, b.sum_model, exact, in16) + score_u * static_cast<double>(std::fabs(x[i]) + zmax);
      }
      double err = static_cast<double>(std::fabs(y[i] - exact));
      // Beyond the output type's range: ±inf exactly — unless the f32 computation's own bound reaches back into the
      // range (scores beyond ~1/u lose their differences in f32: the fuzzer found two scores near 2.3e18, 130981
      // apart, whose f16 log-softmax is −0.69 in f32 where the exact one, −130981, lies beyond f16's range), and
      // then a finite output is held to that bound.
      if (!std::isfinite(round_to(p.out.dtype, exact)) && y[i] != static_cast<double>(round_to(p.out.dtype, exact)))
        err = std::isfinite(y[i]) && err <= gate ? err : INFINITY;
      else if (!std::isfinite(round_to(p.out.dtype, exact)))
        err = 0;
      bool ok;
      if (wide) {
        ok = err <= gate;
        v.worst_gate_fraction = std::max(v.worst_gate_fraction, std::isfinite(err) ? err / gate : INFINITY);
      } else {
        // 16-bit output: within 1 ulp of the correctly rounded result — or, where the f32 computation's own
        // bound is wider than half an ulp of the output (log-softmax near 0), within that bound plus the rounding.
        const long double rounded = round_to(p.out.dtype, exact);
        const double half_ulp = static_cast<double>(ulp_of(p.out.dtype, exact) / 2);
        ok = (!std::isnan(y[i]) && ulp_distance(p.out.dtype, y[i], static_cast<double>(rounded)) <= 1) ||
             err <= gate + half_ulp;
        const double ulps = std::isnan(y[i]) ? INFINITY : static_cast<double>(ulp_distance(p.out.dtype, y[i], static_cast<double>(rounded)));
        v.worst_gate_fraction = std::max(v.worst_gate_fraction, std::min(ulps, std::isfinite(err) ? err / (gate + half_ulp) : INFINITY));
      }
      if (!ok)
        fail(at + ": got " + fmt(y[i]) + ", exact " + fmt(exact) + ", error " + fmt(err) + " beyond the gate (" +
             fmt(gate) + (wide ? ")" : " + half an ulp, or 1 ulp)"));
    }
    if (p.op == Op::softmax) {
      // Σp: the sum-gate of the f32 computation, plus each output's rounding to a 16-bit type.
      const double out_rounding = wide ? (p.out.dtype == DType::f32 ? kU : 0) : std::ldexp(1.0, -significand_bits(p.out.dtype));
      const double gate = wide ? sum_gate(n, b.sum_model) : sum_gate_16bit(n, b.sum_model) + out_rounding;
      const double err = static_cast<double>(std::fabs(sum - 1));
      if (!(err <= gate)) fail(where + ": sum of probabilities " + fmt(sum) + ", off 1 by " + fmt(err) + " > " + fmt(gate));
    }
  }
  return v;
}

}  // namespace smk::conformance
