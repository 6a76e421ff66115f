// softmaxkit (internal, device code): folding partial attention results in the online state's algebra, in a fixed
// order. A part is an OnlineSoftmaxState — a split's LSE through from_lse (its output already normalised), or a raw
// (m, l) state with its un-normalised accumulator — and the fold carries an output accumulator along with it:
//   w = fold.add(part);   acc = combine(acc, part_acc, w);   ...   out = acc · fold.inv_sum()
// Used by the decode kernels (src/cuda/attention/decode.cu) for the key groups of one block and for the splits of
// one sequence. merge_attention_states (merge.cu) is this fold over two parts.
#pragma once

#include "softmaxkit/core/online_state.hpp"

namespace smk::cuda {

struct PartFold {
  using State = OnlineSoftmaxState<float>;
  using Weights = State::MergeWeights;
  State state = State::empty();

  // Merges `part` into the fold; returns the weights of the accumulator so far (self) and of the part (other).
  __device__ __forceinline__ Weights add(const State& part) {
    const Weights w = state.merge_weights(part);
    state.merge(part);
    return w;
  }
  // acc·w.self + part·w.other. A side whose weight is exactly 0 (an empty part, or an empty fold so far) is skipped,
  // so whatever its accumulator holds cannot make NaN; NaN weights (a NaN or +inf part) are not 0 and poison.
  // Both products are rounded before the sum (__fmul_rn/__fadd_rn forbid the FMA contraction the compiler would
  // otherwise make of one of them): a fused a·x + fl(b·y) is not fl(b·y + a·x) bitwise, and the merge of two parts
  // must not depend on their order (the H200 run of f32fb18 saw merge(a, b) and merge(b, a) differ in the last bit).
  __device__ __forceinline__ static float combine(float acc, float part, const Weights& w) {
    float r = 0.0f;
    if (w.self != 0.0f) r = __fmul_rn(acc, w.self);
    if (w.other != 0.0f) r = __fadd_rn(r, __fmul_rn(w.other, part));
    return r;
  }
  // The same for a coefficient: how much an earlier part's accumulator weighs after this step.
  __device__ __forceinline__ static float carry(float coef, const Weights& w) {
    return w.self != 0.0f ? coef * w.self : 0.0f;
  }
  // The factor that turns the folded accumulator into the output: 1/l; 0 for an empty fold (O = 0 by definition);
  // NaN for a NaN or saturated fold.
  __device__ __forceinline__ float inv_sum() const { return state.normalizer(EmptyRowPolicy::zeros).inv_sum; }
  __device__ __forceinline__ float lse() const { return state.lse(); }
};

// One row's N groups of a block (group i's state at states[i · stride]), folded in group order, then the sink once
// if `has_sink` (its LSE `sink_lse`): writes coef[i], the weight of group i's accumulator in the row's output (its
// share of the total times 1/l), and `lse`. `bad` (a sequence whose length was out of range) makes both NaN.
template <int N>
__device__ __forceinline__ void fold_groups(const OnlineSoftmaxState<float>* states, int stride, bool has_sink,
                                            float sink_lse, bool bad, float* coef, float& lse) {
  PartFold fold;
  float c[N] = {};
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const auto w = fold.add(states[i * stride]);
#pragma unroll
    for (int p = 0; p < i; ++p) c[p] = PartFold::carry(c[p], w);
    c[i] = w.other;
  }
  if (has_sink) {
    const auto w = fold.add(OnlineSoftmaxState<float>::from_lse(sink_lse));
#pragma unroll
    for (int p = 0; p < N; ++p) c[p] = PartFold::carry(c[p], w);
  }
  const float inv = fold.inv_sum();
#pragma unroll
  for (int i = 0; i < N; ++i) coef[i] = bad ? detail::nan_<float>() : c[i] * inv;
  lse = bad ? detail::nan_<float>() : fold.lse();
}

}  // namespace smk::cuda
