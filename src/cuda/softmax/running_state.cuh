// softmaxkit (internal, device code): a thread's running (m, ties, rest) over its share of a row or chunk, and the
// state of a group or block from those shares. One copy for lse_stream.cu (lse10's row kernels, lse17's chunk kernels,
// lse18's cluster kernel, lse19's lean bf16 arithmetic) and split_row.cu's running chunk pass (split18,
// chunk_states_running_kernel), which had copied these pieces line for line (fold19, session 19; session 18's review,
// F6). Moved here unchanged: every kernel of lse_stream.cu.o and split_row.cu.o compiles to the SASS it had before the
// move (cuobjdump -sass, CUDA 13.0, sm_90a; docs/perf-notebook.md "session 19 — fold19").
// The map, steps, trees and merges are lse_stream.cu's (its opening comment has the order, the error bound and the
// measurements); a caller chooses the vectors a step (kUnroll), the index type of the thread's loop (int or int64: the
// same values, each caller's SASS as it had it) and the step's terms (a push callback: lse_push for logsumexp and the
// log ops; split_row.cu run_push for softmax's terms by the output type).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/softmax/common.cuh"

namespace smk::cuda::kernels {

template <typename In>
struct alignas(16) LseVec {
  static constexpr int V = 16 / int(sizeof(In));
  In v[V];
};

// A thread's running share of a row: m its max so far, ties the count of its scores equal to m, rest Σ exp(x − m) over
// its scores below m (OnlineSoftmaxState::from_max_ties_and_rest's three numbers). split_row's softmax counts no ties:
// its rest holds every term, the max's 1 included.
struct RunningLse {
  float m;
  int ties;
  float rest;
};

// The log ops' term by the input type's tier: log_term_exp16 for 16-bit inputs, log_term_exp_ftz for f32.
template <typename In>
__device__ __forceinline__ float lse_term(float x, float shift) {
  if constexpr (sizeof(In) == 2) return log_term_exp16(x, shift);
  else return log_term_exp_ftz(x, shift);
}

// The chunk's max cm rose above the running max (or either is NaN): move m there, rescaling the thread's mass once.
// Regimes as OnlineSoftmaxState::push decides them: NaN sticks, +inf saturates (the state then ignores ties and
// rest), an empty thread (m = −inf) starts from nothing.
__device__ __forceinline__ void lse_rise(RunningLse& s, float cm) {
  if (cm != cm || s.m != s.m) {
    s.m = detail::nan_<float>();
  } else if (s.m == -detail::inf_<float>() || cm == detail::inf_<float>()) {
    s.m = cm;
    s.ties = 0;
    s.rest = 0.0f;
  } else {  // finite m < cm ≤ finite
    s.rest = (static_cast<float>(s.ties) + s.rest) * exp_diff(s.m, cm);
    s.ties = 0;
    s.m = cm;
  }
}

// One step of C scores into the running state, the log ops' terms (lse_term) with the ties counted.
template <typename In, int C, bool kLean = false>
__device__ __forceinline__ void lse_push(RunningLse& s, const float (&x)[C]) {
  const float cm = tree_max<C>(x);
  if (!(cm <= s.m)) lse_rise(s, cm);
  // For an empty thread (m = −inf: every score so far, this chunk's too, −inf) shift 0 makes every term exp(−inf) = 0
  // and no tie (x = −inf ≠ 0); for m = +inf the +inf scores count as ties and the rest's terms are 0 (the saturated
  // state ignores both); for m = NaN the state is NaN whatever these hold.
  const float shift = OnlineSoftmaxState<float>::shift_for(s.m);
  float r[C];
  int ties = 0;
  if constexpr (kLean) {  // lse19: the same count (integers: any order), as SEL a score and IADD3 a pair
    int tv[C];
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const bool tie = x[i] == shift;
      r[i] = tie ? 0.0f : lse_term<In>(x[i], shift);
      tv[i] = tie ? 1 : 0;
    }
    static_assert(C % 2 == 0, "pairs");
#pragma unroll
    for (int i = 0; i < C; i += 2) ties = ties + tv[i] + tv[i + 1];
  } else {
#pragma unroll
    for (int i = 0; i < C; ++i) {
      const bool tie = x[i] == shift;
      r[i] = tie ? 0.0f : lse_term<In>(x[i], shift);
      ties += tie ? 1 : 0;
    }
  }
  s.ties += ties;
  s.rest += tree_sum<C>(r);
}

// lse19: a vector's scores as f32, into x[0, V). kLean with bf16: from the 32-bit words, the low score by a shift and
// the high one by a mask (exact, as __bfloat162float: the same values, NaN payloads included).
template <typename In, bool kLean>
__device__ __forceinline__ void widen(const LseVec<In>& w, float* x) {
  constexpr int V = LseVec<In>::V;
  if constexpr (kLean && std::is_same_v<In, __nv_bfloat16>) {
    unsigned u[V / 2];
    memcpy(u, w.v, sizeof u);
#pragma unroll
    for (int j = 0; j < V / 2; ++j) {
      x[2 * j] = __uint_as_float(u[j] << 16);
      x[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = to_f32(w.v[j]);
  }
}

// Thread g of the G that share a row (or a chunk of one): its running state over it. kUnroll vectors a step, all
// loaded before any is used (RowTile's element map: vector k·G + g is thread g's k-th); positions past n read as −inf
// (nothing to a max or a sum); each step's C = kUnroll·V scores go to push(s, x). kGeneral: any row (unaligned or
// strided loads element by element, a temperature or mask applied); else the host has checked that every row is
// unit-stride and 16-byte aligned with no transform, and only a row's last vector may be partial. Both take the same
// elements in the same steps: the same bits.
// first (lse17): the position of row[0] in its row, for the transform's mask index (0 for a whole row).
// kLean (lse19): widen's lean bf16 widening (the same values). I: the loop's index type, n's (lse_stream.cu
// std::int64_t, split_row.cu int: a chunk's length), kept as each file had it.
template <typename In, int G, bool kGeneral, bool kLean, int kUnroll, typename I, typename Push>
__device__ __forceinline__ RunningLse running_thread(const In* row, I n, std::int64_t step, int g,
                                                     const RowTransform& t, std::int64_t first, Push&& push) {
  constexpr int V = LseVec<In>::V, C = kUnroll * V;
  RunningLse s{-detail::inf_<float>(), 0, 0.0f};
  const auto shift = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(row) % 16);
  const bool vec = !kGeneral || (step == 1 && shift == 0);
  // odd21 (session 21): a unit-stride 16-bit row off the 16-byte boundary assembles its vectors from aligned blocks
  // (common.cuh load_shifted: the same values), where the block after a vector ends by the row's end (f32 keeps its
  // element loads: common.cuh kShiftDefault).
  const bool shifted = kGeneral && kShiftDefault<In> && step == 1 && shift != 0;
  const I lag = static_cast<I>(shift / sizeof(In));
  const auto* blocks = reinterpret_cast<const LseVec<In>*>(reinterpret_cast<const char*>(row) - shift);
  const I nv = (n + V - 1) / V;
  const auto* pv = reinterpret_cast<const LseVec<In>*>(row);
  for (I k0 = g; k0 < nv; k0 += I{kUnroll} * G) {
    float x[C];
    if (vec && (k0 + I{kUnroll - 1} * G + 1) * V <= n) {  // the common case: kUnroll whole vectors
      LseVec<In> w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) w[u] = pv[k0 + I{u} * G];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) widen<In, kLean>(w[u], x + u * V);
    } else if (shifted && (k0 + I{kUnroll - 1} * G + 2) * V - lag <= n) {
      LseVec<In> w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) w[u] = load_shifted<LseVec<In>, In>(blocks, k0 + I{u} * G, shift);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) widen<In, kLean>(w[u], x + u * V);
    } else {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const I i0 = (k0 + I{u} * G) * V;
        if (vec && i0 + V <= n) {
          const LseVec<In> w = pv[k0 + I{u} * G];
          widen<In, kLean>(w, x + u * V);
        } else if (shifted && i0 + 2 * V - lag <= n) {
          const LseVec<In> w = load_shifted<LseVec<In>, In>(blocks, k0 + I{u} * G, shift);
          widen<In, kLean>(w, x + u * V);
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) x[u * V + j] = i0 + j < n ? to_f32(row[(i0 + j) * step]) : -detail::inf_<float>();
        }
      }
    }
    if (kGeneral && t.active()) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const I i0 = (k0 + I{u} * G) * V;
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (i0 + j < n) x[u * V + j] = t.apply(x[u * V + j], first + i0 + j);
      }
    }
    push(s, x);
  }
  return s;
}

// The state of `width` lanes' running shares (an aligned group of a warp; every lane of it returns it): the group's
// max, each lane's mass rescaled to it once (exp_diff), the rests summed and the ties counted in fixed trees. Where the
// max is not finite the state is decided by it alone (from_max_ties_and_rest), whatever the sums hold.
__device__ __forceinline__ OnlineSoftmaxState<float> lse_group(const RunningLse& s, int width) {
  const float M = group_max(s.m, width);
  float rest = s.rest;
  int ties = s.ties;
  if (s.m != M && M > -detail::inf_<float>() && M < detail::inf_<float>()) {
    rest = s.m == -detail::inf_<float>() ? 0.0f : (static_cast<float>(ties) + rest) * exp_diff(s.m, M);
    ties = 0;
  }
  rest = group_sum(rest, width);
  ties = group_count(ties, width);
  return OnlineSoftmaxState<float>::from_max_ties_and_rest(M, ties, rest);
}

// A block's state from its threads' running shares, the end of lse_block_kernel's row and of the chunk kernels' chunk
// (lse_chunks_kernel, lse_chunks_cluster_kernel, split_row.cu chunk_states_running_kernel; one helper since lse18,
// session 17's review F8): lse_group over each warp, the kWarps warps' states through `slots` (one barrier; the callers
// double-buffer the slots by parity), merged in warp 0 by group_merge over kWidth lanes (lse_block_kernel 32, the chunk
// kernels kWarps: lanes past the warps hold the empty state, merge's identity), and handed to `write` on thread 0.
// Called by every thread. SASS (cuobjdump, CUDA 13.0 sm_90a): when lse18 folded it, lse_chunks_kernel's 12 kernels
// compiled as they had with the code inline; lse_block_kernel's 6 differed only in how −inf / −1 are materialised
// (MOV / IMAD.MOV / HFMA2.MMA) and in the order of three moves in the divergent-warp fallback (a form returning the
// state to every warp, session 17's reverted fold, moved the store too).
template <int kWarps, int kWidth, typename F>
__device__ __forceinline__ void lse_block_state(const RunningLse& s, float2 (&slots)[kWarps], F&& write) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const auto ws = lse_group(s, 32);
  if (lane == 0) slots[warp] = make_float2(ws.m, ws.d);
  __syncthreads();
  if (warp == 0) {
    auto st = OnlineSoftmaxState<float>::empty();
    if (lane < kWarps) st = OnlineSoftmaxState<float>::from_fields(slots[lane].x, slots[lane].y);
    st = group_merge(st, kWidth);
    if (lane == 0) write(st);
  }
}

}  // namespace smk::cuda::kernels
