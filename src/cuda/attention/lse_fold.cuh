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
  // The weights of one step (State::MergeWeights' self and other) and whether each side holds any term: the fold so
  // far (self) and the part (other). An empty side is the empty state (LSE −inf), not a side whose weight is 0.
  struct Step {
    float self, other;
    bool self_live, other_live;
  };
  State state = State::empty();

  // Merges `part` into the fold; returns the weights of the accumulator so far (self) and of the part (other).
  __device__ __forceinline__ Step add(const State& part) {
    const auto w = state.merge_weights(part);
    const Step s{w.self, w.other, !state.is_empty(), !part.is_empty()};
    state.merge(part);
    return s;
  }
  // acc·w.self + part·w.other. An empty side is skipped, so whatever its accumulator holds (0, or what a caller left
  // there) cannot make NaN. A side that holds terms is always added, also where its weight underflows to 0: its NaN
  // or inf then reaches the sum (0·NaN = NaN), as the exact e^(L_i − L)·O_i would and as the CPU's merge does (the
  // GPU skipped every zero weight until session 14). NaN weights (a NaN or +inf part) poison.
  // Both products are rounded before the sum (__fmul_rn/__fadd_rn forbid the FMA contraction the compiler would
  // otherwise make of one of them): a fused a·x + fl(b·y) is not fl(b·y + a·x) bitwise, and the merge of two parts
  // must not depend on their order (the H200 run of f32fb18 saw merge(a, b) and merge(b, a) differ in the last bit).
  __device__ __forceinline__ static float combine(float acc, float part, const Step& w) {
    float r = 0.0f;
    if (w.self_live) r = __fmul_rn(acc, w.self);
    if (w.other_live) r = __fadd_rn(r, __fmul_rn(w.other, part));
    return r;
  }
  // The same for a coefficient: how much an earlier part's accumulator weighs after this step.
  __device__ __forceinline__ static float carry(float coef, const Step& w) {
    return w.self != 0.0f ? coef * w.self : 0.0f;
  }
  // The factor that turns the folded accumulator into the output: 1/l; 0 for an empty fold (O = 0 by definition);
  // NaN for a NaN or saturated fold.
  __device__ __forceinline__ float inv_sum() const { return state.normalizer(EmptyRowPolicy::zeros).inv_sum; }
  __device__ __forceinline__ float lse() const { return state.lse(); }
};

// One row's N groups of a block (group i's state at states[i · stride]), folded in group order, then the sink once
// if `has_sink` (its LSE `sink_lse`): writes coef[i], the weight of group i's accumulator in the row's output (its
// share of the total times 1/l), `lse`, and `live` (bit i: group i holds terms, its state is not the empty one).
// `bad` (a sequence whose length was out of range) makes coef and lse NaN. A row whose groups are all empty (no key)
// gets coefficients 0, so O = 0, whatever the sink (a NaN or +inf sink's NaN weights would otherwise reach O); its
// LSE is the sink's (−inf without one).
// The consumer adds group i's accumulator where `live` bit i is set or coef[i] is NaN, and skips it otherwise: only an
// empty group is skipped, not one whose coefficient underflows to 0 (its NaN or inf accumulator then reaches O,
// 0·NaN = NaN, as the CPU's and the split merges' do; until session 15 the decode kernels skipped every coef[i] = 0),
// and a bad row's NaN coefficients (its groups are empty) still poison. A finite O keeps its bits, except a running
// sum of −0 (a product that rounded to −0) to which a live group with coefficient 0 adds +0: it becomes +0 (review F3).
template <int N>
__device__ __forceinline__ void fold_groups(const OnlineSoftmaxState<float>* states, int stride, bool has_sink,
                                            float sink_lse, bool bad, float* coef, float& lse, unsigned& live) {
  static_assert(N <= 32, "one bit a group");
  PartFold fold;
  float c[N] = {};
  unsigned lv = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const auto w = fold.add(states[i * stride]);
#pragma unroll
    for (int p = 0; p < i; ++p) c[p] = PartFold::carry(c[p], w);
    c[i] = w.other;
    lv |= w.other_live ? 1u << i : 0u;
  }
  live = lv;
  const bool no_key = fold.state.is_empty();
  if (has_sink) {
    const auto w = fold.add(OnlineSoftmaxState<float>::from_lse(sink_lse));
#pragma unroll
    for (int p = 0; p < N; ++p) c[p] = PartFold::carry(c[p], w);
  }
  const float inv = fold.inv_sum();
#pragma unroll
  for (int i = 0; i < N; ++i) coef[i] = bad ? detail::nan_<float>() : no_key ? 0.0f : c[i] * inv;
  lse = bad ? detail::nan_<float>() : fold.lse();
}

}  // namespace smk::cuda
