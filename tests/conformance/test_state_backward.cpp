// Conformance of softmax_state and the backward passes on every backend (the fixture of fixture.hpp: CPU reference,
// CPU float path, public dispatch, every forced GPU path). Exact values are computed in long double from the
// stored inputs; the gates are derived in docs/semantics.md §6.
//   softmax_state: the regime's (m, l) exactly for empty / saturated / NaN rows; for a finite row m is the largest
//     score bit for bit and l = Σ exp(x − m) within (exp_diff + sum) = (5 + D)u relative.
//   softmax_backward, dx = y ⊙ (dy − s), s = Σ dy ⊙ y:
//     |dx̂ − dx| ≤ u·(|y|·((D + 1)·Σ|dy ⊙ y| + |dy| + |s|) + 2|dx|)    (either evaluation order)
//   log_softmax_backward, dx = dy − exp(y)·S, S = Σ dy:
//     |dx̂ − dx| ≤ u·(exp(y)·(D·Σ|dy| + (E + 2)·|S|) + |dx|)           (E: exp's 4u)
//   and 2u·|dx| more for a temperature T ≠ 1 (the 1/T scaling); 16-bit outputs within 1 ulp of the correctly
//   rounded exact value, or that bound plus half an ulp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "conformance/fixture.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#if SOFTMAXKIT_HAS_CUDA
#include "softmaxkit/cuda/runtime.hpp"
#endif

namespace smk::conformance {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A contiguous-or-strided 2-D tensor in its own host buffer (padding NaN for inputs, poison for outputs).
struct Tensor2 {
  DType dtype = DType::f32;
  std::int64_t rows = 0, n = 0, row_stride = 0, offset = 0;
  std::vector<unsigned char> bytes;
  std::int64_t elem(std::int64_t r, std::int64_t i) const { return offset + r * row_stride + i; }
  double get(std::int64_t r, std::int64_t i) const {
    return load(dtype, bytes.data() + elem(r, i) * static_cast<std::int64_t>(dtype_size(dtype)));
  }
};
Tensor2 make_tensor(DType t, std::int64_t rows, std::int64_t n, std::int64_t pad, std::int64_t offset,
                    const std::vector<double>& values, unsigned char fill) {
  Tensor2 x{t, rows, n, n + pad, offset, {}};
  const std::int64_t elems = offset + std::max<std::int64_t>(rows, 1) * (n + pad) + 8;
  x.bytes.assign(static_cast<std::size_t>(elems * static_cast<std::int64_t>(dtype_size(t))), fill);
  for (std::int64_t r = 0; r < rows && !values.empty(); ++r)
    for (std::int64_t i = 0; i < n; ++i)
      store(t, x.bytes.data() + x.elem(r, i) * static_cast<std::int64_t>(dtype_size(t)), values[r * n + i]);
  return x;
}
// A 1-D per-row output (softmax_state's m and l).
Tensor2 make_vector(std::int64_t rows, unsigned char poison) {
  Tensor2 v{DType::f32, 1, rows, rows, 0, {}};
  v.bytes.assign(static_cast<std::size_t>((rows + 8) * 4), poison);
  return v;
}
TensorView view2(const Tensor2& x, unsigned char* base, Device dev) {
  TensorView v;
  v.data = base + x.offset * static_cast<std::int64_t>(dtype_size(x.dtype));
  v.dtype = x.dtype;
  v.device = dev;
  v.rank = 2;
  v.shape[0] = x.rows;
  v.shape[1] = x.n;
  v.strides[0] = x.row_stride;
  v.strides[1] = 1;
  return v;
}
TensorView view1(const Tensor2& x, unsigned char* base, Device dev) {
  TensorView v = TensorView::contiguous(base, x.dtype, dev, {x.n});
  return v;
}

// Runs `call` on `b` over the given buffers (inputs first, then outputs); `as_vector[k]` makes buffer k a 1-D
// view. Buffers are copied back (so a changed input shows). Returns false when a forced GPU path refused.
bool run_on(const Backend& b, std::vector<Tensor2*> bufs, const std::vector<bool>& as_vector,
            const std::function<void(const std::vector<TensorView>&)>& call, std::string* reason) {
  std::vector<TensorView> views;
  if (!b.is_gpu()) {
    for (std::size_t k = 0; k < bufs.size(); ++k)
      views.push_back(as_vector[k] ? view1(*bufs[k], bufs[k]->bytes.data(), Device::cpu())
                                   : view2(*bufs[k], bufs[k]->bytes.data(), Device::cpu()));
    call(views);
    return true;
  }
#if SOFTMAXKIT_HAS_CUDA
  std::vector<cuda::DeviceBuffer<unsigned char>> dev;
  for (std::size_t k = 0; k < bufs.size(); ++k) {
    dev.push_back(cuda::DeviceBuffer<unsigned char>::from_host(bufs[k]->bytes));
    views.push_back(as_vector[k] ? view1(*bufs[k], dev.back().data(), Device::cuda(0))
                                 : view2(*bufs[k], dev.back().data(), Device::cuda(0)));
  }
  try {
    cuda::ScopedSoftmaxPath force(b.path);
    call(views);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    *reason = e.what();
    return false;
  }
  for (std::size_t k = 0; k < bufs.size(); ++k) bufs[k]->bytes = dev[k].to_host();
  return true;
#else
  (void)reason;
  return false;
#endif
}

bool within(DType out, double got, long double exact, double gate) {
  if (!std::isfinite(round_to(out, exact))) return got == static_cast<double>(round_to(out, exact));
  const double err = static_cast<double>(std::fabs(got - exact));
  if (out == DType::f32 || out == DType::f64) return err <= gate;
  return (!std::isnan(got) && ulp_distance(out, got, static_cast<double>(round_to(out, exact))) <= 1) ||
         err <= gate + static_cast<double>(ulp_of(out, exact) / 2);
}

std::vector<double> normal_values(std::int64_t count, double sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0, sigma);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

// softmax_state: (m, l) per row in every regime.
TEST_P(Conformance, SoftmaxState) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (std::int64_t n : {0, 1, 7, 1000, 5000, 70000}) {
      const std::int64_t rows = 7;
      std::vector<double> x = normal_values(rows * n, 4, 171 + n);
      if (n > 0) {
        for (std::int64_t i = 0; i < n; ++i) x[1 * n + i] = -kInf;  // empty
        x[2 * n + n / 2] = kInf;                                     // saturated
        x[3 * n + n - 1] = kNaN;                                     // NaN
        x[4 * n] = kInf;                                             // NaN wins over +inf
        x[4 * n + n - 1] = kNaN;
        for (std::int64_t i = 0; i < n; i += 2) x[5 * n + i] = -kInf;  // partly masked
      }
      Tensor2 in = make_tensor(t, rows, n, 3, 1, x, 0xFF);
      const std::vector<unsigned char> in_before = in.bytes;
      Tensor2 m = make_vector(rows, 0x55), l = make_vector(rows, 0x55);
      std::string reason;
      const bool ran = run_on(GetParam(), {&in, &m, &l}, {false, true, true},
                              [&](const std::vector<TensorView>& v) {
                                if (GetParam().kind == BackendKind::cpu_reference) cpu::reference::softmax_state(v[1], v[2], v[0]);
                                else if (GetParam().kind == BackendKind::cpu_float) cpu::softmax_state(v[1], v[2], v[0]);
                                else smk::softmax_state(v[1], v[2], v[0]);
                              },
                              &reason);
      const std::string what = std::string("state ") + dtype_name(t) + " n=" + std::to_string(n);
      if (!ran) {
        note_not_applicable(what, reason);
        continue;
      }
      ++applicable_;
      EXPECT_EQ(in.bytes, in_before) << what << ": input written";
      for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<double> row(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) row[i] = in.get(r, i);
        const ExactRow e = exact_row(row.data(), n);
        const double gm = m.get(0, r), gl = l.get(0, r);
        SCOPED_TRACE(what + " row " + std::to_string(r) + " (" + regime_name(e.regime) + ")");
        switch (e.regime) {
          case Regime::empty: EXPECT_TRUE(gm == -kInf && gl == 0) << gm << " " << gl; break;
          case Regime::saturated: EXPECT_TRUE(gm == kInf && gl == kInf) << gm << " " << gl; break;
          case Regime::nan: EXPECT_TRUE(std::isnan(gm) && std::isnan(gl)) << gm << " " << gl; break;
          case Regime::finite: {
            EXPECT_EQ(gm, static_cast<double>(e.max));
            const bool in16 = t == DType::bf16 || t == DType::f16;  // numerics.hpp kLogTermProductU
            const double gate = state_sum_error(n, GetParam().sum_model, in16) * static_cast<double>(e.sum);
            EXPECT_LE(std::fabs(gl - static_cast<double>(e.sum)), gate) << "l " << gl << " exact " << static_cast<double>(e.sum);
          }
        }
      }
      for (std::size_t k = static_cast<std::size_t>(rows) * 4; k < m.bytes.size(); ++k)
        ASSERT_TRUE(m.bytes[k] == 0x55 && l.bytes[k] == 0x55) << what << ": written past the outputs";
    }
  finish();
}

// The backward passes against the exact gradient of the stored y and dy, several layouts, 16-bit and f32 outputs,
// in place over dy, and a temperature.
TEST_P(Conformance, BackwardPasses) {
  double worst = 0;  // the largest error / gate over the f32 outputs: printed, to show how tight the gate is
  for (bool log_form : {false, true})
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (std::int64_t n : {1, 7, 33, 1000, 5000, 70000})
        for (int variant = 0; variant < 4; ++variant) {
          // variant 0: contiguous; 1: padded rows and offsets; 2: dx in place over dy; 3: f32 dx (16-bit inputs) or
          // temperature 2 (f32 inputs).
          if (variant == 3 && t == DType::f32 && n > 1000) continue;
          const std::int64_t rows = n >= 5000 ? 3 : 6;
          // y: the forward output of random logits (rounded to t, as a real forward would store it).
          std::vector<double> logits = normal_values(rows * n, 3, 181 + n), y(rows * n), dy = normal_values(rows * n, 1, 182 + n);
          for (std::int64_t r = 0; r < rows; ++r) {
            const ExactRow e = exact_row(&logits[r * n], n);
            for (std::int64_t i = 0; i < n; ++i)
              y[r * n + i] = static_cast<double>(log_form ? e.log_softmax(logits[r * n + i]) : e.softmax(logits[r * n + i]));
          }
          const std::int64_t pad = variant == 1 ? 5 : 0, off = variant == 1 ? 3 : 0;
          const DType out_t = variant == 3 && t != DType::f32 ? DType::f32 : t;
          const float temperature = variant == 3 && t == DType::f32 ? 2.0f : 1.0f;
          Tensor2 ty = make_tensor(t, rows, n, pad, off, y, 0xFF);
          Tensor2 tdy = make_tensor(t, rows, n, pad, off + 1, dy, 0xFF);
          Tensor2 tdx = make_tensor(out_t, rows, n, pad, off, {}, 0x55);
          const bool in_place = variant == 2;
          const std::vector<unsigned char> y_before = ty.bytes, dy_before = tdy.bytes;
          std::string reason;
          SoftmaxOptions o;
          o.temperature = temperature;
          const Backend& b = GetParam();
          auto call = [&](const std::vector<TensorView>& v) {
            const TensorView& dx = in_place ? v[1] : v[2];
            if (log_form) {
              if (b.kind == BackendKind::cpu_reference) cpu::reference::log_softmax_backward(dx, v[0], v[1], o);
              else if (b.kind == BackendKind::cpu_float) cpu::log_softmax_backward(dx, v[0], v[1], o);
              else smk::log_softmax_backward(dx, v[0], v[1], o);
            } else {
              if (b.kind == BackendKind::cpu_reference) cpu::reference::softmax_backward(dx, v[0], v[1], o);
              else if (b.kind == BackendKind::cpu_float) cpu::softmax_backward(dx, v[0], v[1], o);
              else smk::softmax_backward(dx, v[0], v[1], o);
            }
          };
          const std::string what = std::string(log_form ? "log_softmax_backward " : "softmax_backward ") +
                                   dtype_name(t) + "->" + dtype_name(out_t) + " n=" + std::to_string(n) + " variant " +
                                   std::to_string(variant);
          // The exact gradient needs dy before an in-place call overwrites it.
          const Tensor2 dy_in = tdy;
          const bool ran = run_on(b, {&ty, &tdy, &tdx}, {false, false, false}, call, &reason);
          if (!ran) {
            note_not_applicable(what, reason);
            continue;
          }
          ++applicable_;
          EXPECT_EQ(ty.bytes, y_before) << what << ": y written";
          if (!in_place) EXPECT_EQ(tdy.bytes, dy_before) << what << ": dy written";
          const Tensor2& out = in_place ? tdy : tdx;
          const double D = summation_depth(n, b.sum_model);
          std::int64_t failures = 0;
          std::string first;
          for (std::int64_t r = 0; r < rows; ++r) {
            long double s = 0, a = 0, sum_dy = 0, abs_dy = 0;
            for (std::int64_t i = 0; i < n; ++i) {
              const long double yi = ty.get(r, i), di = dy_in.get(r, i);
              s += di * yi;
              a += std::fabs(di * yi);
              sum_dy += di;
              abs_dy += std::fabs(di);
            }
            for (std::int64_t i = 0; i < n; ++i) {
              const long double yi = ty.get(r, i), di = dy_in.get(r, i);
              long double exact, gate;
              if (log_form) {
                exact = di - std::exp(yi) * sum_dy;
                gate = std::exp(yi) * (D * abs_dy + (kExpErrorU + 2) * std::fabs(sum_dy)) + std::fabs(exact);
              } else {
                exact = yi * (di - s);
                gate = std::fabs(yi) * ((D + 1) * a + std::fabs(di) + std::fabs(s)) + 2 * std::fabs(exact);
              }
              exact /= temperature;
              gate = gate / temperature + (temperature != 1 ? 2 * std::fabs(exact) : 0);
              const double got = out.get(r, i);
              if (out.dtype == DType::f32 && gate > 0)
                worst = std::max(worst, static_cast<double>(std::fabs(got - exact) / (gate * kU)));
              if (!within(out.dtype, got, exact, static_cast<double>(gate * kU)) && failures++ == 0)
                first = "row " + std::to_string(r) + " position " + std::to_string(i) + ": got " + std::to_string(got) +
                        ", exact " + std::to_string(static_cast<double>(exact)) + ", gate " + std::to_string(static_cast<double>(gate * kU));
            }
          }
          EXPECT_EQ(failures, 0) << what << ": " << first;
        }
  std::cout << "[ worst    ] f32 backward error / gate on " << GetParam().name << ": " << worst << "\n";
  finish();
}

}  // namespace smk::conformance
