// softmaxkit CPU backend: the lesson's matrix product, one dot product per output element.
#include <cstdint>
#include <type_traits>

#include "matmul/args.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/matmul.hpp"

namespace smk::cpu {

namespace {

template <typename Acc, typename T>
void product(const smk::detail::MatmulProblem& p, T* out, std::int64_t so0, std::int64_t so1, const T* a,
             std::int64_t sa0, std::int64_t sa1, const T* b, std::int64_t sb0, std::int64_t sb1) {
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      Acc sum = 0;
      for (std::int64_t t = 0; t < p.k; ++t)
        sum += static_cast<Acc>(a[i * sa0 + t * sa1]) * static_cast<Acc>(b[t * sb0 + j * sb1]);
      out[i * so0 + j * so1] = static_cast<T>(sum);
    }
}

template <bool kReference>
void run(const char* op, const TensorView& out, const TensorView& a, const TensorView& b, bool vector) {
  const auto p = smk::detail::check_matmul_args(op, out, a, b, vector);
  if (!a.device.is_cpu()) throw_invalid_argument(op, "a", "is on " + a.device.str() + ", expected cpu");
  const std::int64_t sb1 = vector ? 0 : b.strides[1];
  const std::int64_t so1 = vector ? 0 : out.strides[1];
  if (a.dtype == DType::f64) {
    product<double>(p, static_cast<double*>(out.data), out.strides[0], so1, static_cast<const double*>(a.data),
                    a.strides[0], a.strides[1], static_cast<const double*>(b.data), b.strides[0], sb1);
  } else {
    using Acc = std::conditional_t<kReference, double, float>;
    product<Acc>(p, static_cast<float*>(out.data), out.strides[0], so1, static_cast<const float*>(a.data),
                 a.strides[0], a.strides[1], static_cast<const float*>(b.data), b.strides[0], sb1);
  }
}

}  // namespace

void matmul(const TensorView& out, const TensorView& a, const TensorView& b) { run<false>("cpu::matmul", out, a, b, false); }
void matvec(const TensorView& out, const TensorView& a, const TensorView& x) { run<false>("cpu::matvec", out, a, x, true); }
namespace reference {
void matmul(const TensorView& out, const TensorView& a, const TensorView& b) {
  run<true>("cpu::reference::matmul", out, a, b, false);
}
void matvec(const TensorView& out, const TensorView& a, const TensorView& x) {
  run<true>("cpu::reference::matvec", out, a, x, true);
}
}  // namespace reference

}  // namespace smk::cpu
