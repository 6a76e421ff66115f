// softmaxkit: the CPU backend of the softmax family, in two paths with one signature.
//
// - smk::cpu::*            the float path, the default CPU implementation: f32 arithmetic for f32/f16/bf16
//                          inputs (f64 for f64), pairwise summation, each output rounded once. Scores are
//                          scaled (x / T, a correctly rounded division) and masked (+ mask) in that arithmetic.
// - smk::cpu::reference::* the oracle every backend is judged against: the same algorithm in double, each output
//                          rounded once from double to the output dtype.
//
// Arguments and shapes are exactly those of smk::softmax & co. (softmaxkit/softmax.hpp); the tensors must be on
// the CPU. Per-row temperatures are checked here (> 0 and finite) before anything is written.
#pragma once

#include "softmaxkit/softmax.hpp"

namespace smk::cpu {

void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options = {});
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                      const SoftmaxOptions& options = {});
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options = {});

// The textbook formula exp(x) / Σ exp(x) with no max shift. It overflows to NaN for scores above 88.72 (f32)
// and underflows to 0/0 below about −103. Kept only to demonstrate that failure (the demo, the tests).
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});

namespace reference {
void softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void log_softmax(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void logsumexp(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
void softmax_state(const TensorView& out_max, const TensorView& out_sum, const TensorView& in,
                   const SoftmaxOptions& options = {});
void softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                      const SoftmaxOptions& options = {});
void log_softmax_backward(const TensorView& dx, const TensorView& y, const TensorView& dy,
                          const SoftmaxOptions& options = {});
void softmax_naive_unshifted(const TensorView& out, const TensorView& in, const SoftmaxOptions& options = {});
}  // namespace reference

}  // namespace smk::cpu
