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

}  // namespace smk::cuda
