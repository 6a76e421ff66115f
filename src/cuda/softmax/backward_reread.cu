// The backward passes of block_per_row's rows read twice, holding no row in registers (mid9, session 9):
//   softmax:      dx = y ⊙ (dy − s) / T,        s = Σ dy ⊙ y
//   log-softmax:  dx = (dy − exp(y) · s) / T,   s = Σ dy
// One block of up to 1024 threads a row, two blocks an SM (__launch_bounds__(1024, 2): 32 registers): a loop over the
// row's 16-byte vectors summing the terms, the block's sum, then a second loop that loads y and dy again (from L2:
// the block's row was read a moment before; `ld.global.cs`, their last use) and writes dx. What torch.compile's Triton
// kernel does (Nsight Compute, mid8's run, bf16 8192×32000 log-softmax backward: 32 registers, two 1024-thread blocks
// an SM, DRAM 89 % busy, 361 µs against our dy-shared block's 443), where backward.cu's blocks hold y (and dy) in
// registers across the row's barrier at 64 registers and one block an SM.
//
// Traffic per element: y and dy read once from DRAM (the second read hits L2 while the rows in flight fit it: 2 blocks
// × 132 SMs × a row of y and dy, 34 MB at bf16 32000, 67 MB at f32 32000, over the H200's 50 MB L2), dx written:
// 12 B (f32), 6 B (bf16) — the floor of backward.cu's blocks. Floor at 4.27 TB/s: 8192×32000 f32 737 µs, bf16 368;
// 16384×4096 and 4096×16384 f32 189 µs, bf16 94.
// Registers (ptxas -v, CUDA 13.0, sm_90a; 16-bit rows only are built): 31-32, no spill since mid11 (bf16 spilled
// 12-14 B in the hot loop before: word_elem below); form 7 (mid12) 31-32 without spill for log-softmax backward
// (softmax backward's form 7 spilled 100 B of stores: no longer built, session 12's review F5).
// Measured (mid11, session 11; H200, 2026-11-30, mid11's run of 7d1df6d, tune_softmax --mid11, median µs, the
// dy-shared block → this kernel; docs/bench/mid11-s11-2026-11-30.md): bf16 8192×32000 log-softmax backward 454 →
// 404.5 (91 % of copy; this kernel before the fix 446 / 444: the fix 9 %, f16's speed), softmax backward 414 → 396
// (93 %); 8192×30000 451 → 398 and 411 → 399; 8192×32768 454 → 412 and 442 → 399; 2048×24576 log-softmax 93.4 →
// 87.2, softmax 83.2 → 86.7 (slower); at 16384 and below slower for both ops (4096×16384 log-softmax 102 → 116,
// 16384×4096 103 → 125). The rule since: 16-bit log-softmax backward 24576..32768, softmax backward 28673..32768.
// Before (mid9's run of c16e5c4, tune_softmax --mid9, median µs, the kernel before → this one;
// docs/bench/mid9-s9-2026-11-30.md): slower everywhere but one shape — softmax backward f32 8192×32000 729 → 1145 (the
// rows in flight overflow the L2: both reads reach DRAM), bf16 410 → 478, f32 16384×4096 193 → 206, bf16 102 → 119;
// log-softmax backward f32 8192×32000 743 → 844, bf16 **449 → 442** (the one win, 1.7 %), 16384×4096 bf16 102 → 133.
// backward.cu's blocks were already at 92-101 % of copy on these shapes but bf16 8192×32000. So mid9's rule sent
// only 16-bit log-softmax backward rows of 28673..32768 here (softmax_cuda.cpp backward_reread_takes).
//
// mid12 (session 12; H200, 2026-11-30, mid12's run of 696c98f, tune_softmax --mid12, median of 40 µs; copy 4.23 TB/s
// in the run): log-softmax backward's first loop loads two vectors a step (kRereadPairs, with the evict-last first
// loop and streaming dx: form 7, reread_default_form): bf16 8192×32000 399.8 / 400.4 → 381.6 µs (96.5 % of 4.27 TB/s;
// torch.compile 368.8 in compare-s11), f16 399.8 / 399.2 → 381.9. The count behind it (Nsight Compute, one launch
// each, bf16 8192×32000 log-softmax backward, --clock-control none): DRAM reads 1.05 GB = y and dy once, writes 0.50 GB
// = dx, in every form: the re-read already came wholly from L2 (so the evict-last policy changes nothing: form 1
// 398.6); form 0 keeps one 16-byte vector of dy a thread in flight in the first loop (32 KB an SM, DRAM 81.9 % busy,
// 393.6 µs under the profiler), form 7 two (86.2 %, 373.3 µs). Softmax backward's first loop loads y too: two vectors
// a step there spill (48-100 B at 32 registers) and are slower (form 4 456 µs against 391), so it keeps form 0.
// Not measured (the timing step's 25 s cap ended after 8192×32000: the dx hashes took most of it): 4096×16384,
// 16384×4096, 8192×8192, 2048×24576; the dispatcher's rule (log-softmax backward from 24576) is unchanged.
//
// bwd17 (session 17; docs/bench/bwd17-s17-2026-12-01.md): torch.compile's own form of this idea (Inductor's triton_red
// at 4096-wide rows: 512 threads a row, 4 elements a thread a step — 8-byte loads in 16-bit, 16-byte in f32 — at 4
// blocks an SM and 28-32 registers, the first loop's loads with an L2 evict-last policy, the second's evict-first,
// plain dx stores; backward_inductor_kernel in 80f0911) timed beside the dispatcher's kernels (H200, tune_softmax
// --bwd17b, run of 80f0911's kernels, three alternating rounds, µs): bf16 16384x4096 softmax backward dy-shared
// packed 99.1 → 119.2 (0.832x; two steps in flight 0.824x), log-softmax backward 99.6 → 132.7 (0.750x; 0.808x);
// 4096x16384 0.788x / 0.832x; f32 16384x4096 (register block T256) 0.873x / 0.952x (two steps 0.900x / 0.982x), f32
// 4096x16384 (wide block) 0.642x / 0.837x (528 rows in flight of 128 KB overflow the L2); this kernel in the same run
// (its dispatcher form) 0.80-0.94x at bf16 4096 / 16384. Errors against float64 the same as the blocks' (rows 0..7).
// Slower everywhere; removed. Where Inductor's kernel wins (bwd16's Nsight Compute: 87.3 µs at bf16 16384x4096 where
// this form took 119 here) was not found.
//
// bwd18 (session 18; docs/perf-notebook.md "bwd18", docs/bench/bwd18-s18-2026-12-01.md): Inductor's kernels read
// back from the H200 (Triton's cubins, SASS, Nsight Compute, and launched in tune_softmax beside ours). At 4096 and
// 16384 its autotuning took the whole row in one step: bf16 one 16-byte vector of y and of dy a thread (512 threads;
// 1024 and two vectors at 16384), f32 two 16-byte vectors at 4096, every load issued at once (LDG.E.EL.128 with an L2
// evict-last policy), the block's sum, then the same loads again (LDG.E.EF.128, an L2 evict-first policy) served by
// L1 (L1 hit rate 40 %: the whole second read) and 16-byte stores. bwd17's form read 8 bytes a thread a step, one
// step at a time, with L1::evict_first (its second read went to L2: L1 hit 3-13 %). That form under four load-hint
// sets and one or two steps in flight (backward_inductor_kernel of commit 051f6a3, where this code rode in lse18's
// commit) reached the L1 hits (hints with L1::evict_last: 40 %) but not the speed at bf16: 0.75-0.96x of the
// dispatcher's kernels (two 8-byte steps, 1.6-2.3x Triton's instructions); at f32 16384x4096 / 32768x2048 softmax
// backward one 512-thread block a row under Triton's hints ran 1.017-1.026x of the register block (Triton's own
// 1.020x), f32 16384 0.64-0.67x (a row of y and dy, 128 KB, does not stay in L1). Removed: none of it served every
// layout in one order (dense rows only), which a rule needs before it can take a length.
//
// The sum's order: thread t takes the vectors k·T + t (k = 0, 1, …: RowTile's element map) and adds each vector's
// terms into V running sums, lane j the j-th element of each; tree_sum over the V, then block_sum. A function of n
// (and T, itself a function of n) alone, whatever the layout: an unaligned or strided row loads its elements one by
// one through the same map. Rounding depth: (K − 1) + log2 V + 10 with K = ⌈n / (T·V)⌉ ≤ 8 (f32 at 32768) — at most
// 19 = ⌈log2 32768⌉ + 4, the D of the backward's gate (docs/semantics.md §6; tests/cuda/softmax/gpu_case.hpp).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/softmax/backward_reread.hpp"
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::cuda::kernels {

namespace {

// The forms built (backward_reread.hpp's kReread* levers): 0, the kernel before mid12, and kRereadAll, the latter for
// log-softmax backward with dx in the input's type only (session 12's review F5: softmax backward's kRereadAll was
// dispatched nowhere). The dispatcher's calls take kRereadAll for log-softmax backward where dx is in the input's type;
// softmax backward and a dx in f32 take 0 (the same bits), whatever form is asked for. mid12's run of 696c98f (H200,
// 2026-11-30, tune_softmax --mid12, median of 40 µs, bf16 / f16 8192×32000): log-softmax backward form 0 399.8 / 400.4
// (f16 399.8 / 399.2), evict-last first loop (1) 398.6 (398.3), with streaming dx (3) 400.1 (399.4), two vectors a step
// (4) 384.3 (384.9), all three (7) 381.6 (381.9); softmax backward form 0 391.1 / 429.4 (f16 392.9), forms 1, 3, 4, 7
// 450.7, 435.3, 456.4, 500.3 (they spill 48-100 B under the 32-register cap: y's vectors too in the first loop). Forms
// 1, 3 and 4 were removed after the run.
constexpr int kRereadAll = kRereadEvictLast | kRereadStreamOut | kRereadPairs;
__host__ __device__ constexpr int reread_default_form(bool log) { return log ? kRereadAll : 0; }

// The temperature a row divides by: the scalar, the row's own, or NaN for an invalid per-row one (backward.cu's
// row_temperature, the same rule).
__device__ __forceinline__ float reread_row_temperature(const RowProblem& p, const RowRef& o) {
  if (p.temp == nullptr) return p.temperature;
  const float v = p.temp[o.off(p, kTemp)];
  return (v > 0.0f && v <= 3.402823466e38f) ? v : detail::nan_<float>();
}

// A 16-byte vector of y or dy kept as the four 32-bit words it was loaded as, each element unpacked to f32 at its use
// (mid11, session 11). Before, the vector was copied into an array of eight 16-bit values: the PTX split each word into
// two 16-bit registers right after the load, ptxas hoisted those splits (the PRMTs) ahead of the expf range reductions
// and 16 unpacked values were live in the second loop under the 32-register cap of two 1024-thread blocks an SM: bf16
// spilled 12 B (dx in f32: 14 B) inside the hot loop (STL.S16 after the loads, LDL.LU before the store; session 10,
// lead's section). Here a bf16 element is one 32-bit shift or mask of its word at the use, so only the eight words are
// live. The unpack is exact (a bf16 is the high half of its f32; cvt.f32.f16 is exact): the same values as to_f32,
// so the same outputs bit for bit.
// How a 16-byte vector is loaded: the default policy; ld.global.cs (the data's last use: L2 evict-first); or with the
// L2 policy `pol`, created once a kernel by evict_last_policy (chunk_states.cuh's load_vec creates its policy at every
// load: here that cost the 16-bit kernels spills under the 32-register cap).
constexpr int kLoadPlain = 0;
constexpr int kLoadEvictFirst = 1;
constexpr int kLoadEvictLast = 2;
template <typename In, int kHint>
__device__ __forceinline__ uint4 load_words(const In* row, int i0, std::uint64_t pol) {
  const uint4* q = reinterpret_cast<const uint4*>(row + i0);
  if constexpr (kHint == kLoadPlain) {
    return *q;
  } else if constexpr (kHint == kLoadEvictFirst) {
    return __ldcs(q);
  } else {
    uint4 b;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w)
                 : "l"(q), "l"(pol));
    return b;
  }
}
__device__ __forceinline__ std::uint64_t evict_last_policy() {
  std::uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
template <typename In>
__device__ __forceinline__ float word_elem(const uint4& q, int j) {
  static_assert(sizeof(In) == 2, "16-bit rows only");
  const std::uint32_t w = (j >> 1) == 0 ? q.x : (j >> 1) == 1 ? q.y : (j >> 1) == 2 ? q.z : q.w;
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    return __uint_as_float((j & 1) != 0 ? (w & 0xffff0000u) : (w << 16));
  } else {
    return __half2float(__ushort_as_half(static_cast<unsigned short>((j & 1) != 0 ? (w >> 16) : (w & 0xffffu))));
  }
}

// dx's vector at dx + i0: plain, or streaming (st.global.cs) where kStream; 16 or 32 bytes (dx in f32).
template <bool kStream, typename OutVec>
__device__ __forceinline__ void store_out(OutVec* q, const OutVec& w) {
  if constexpr (!kStream) {
    *q = w;
  } else {
    static_assert(sizeof(OutVec) % 16 == 0, "16-byte parts");
    uint4 b[sizeof(OutVec) / 16];
    memcpy(b, &w, sizeof(w));
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(OutVec) / 16); ++k) __stcs(reinterpret_cast<uint4*>(q) + k, b[k]);
  }
}

// kForm: a sum of backward_reread.hpp's kReread* levers (mid12); every form the same arithmetic in the same order.
template <typename In, typename Out, bool kLog, int kForm>
__global__ void __launch_bounds__(kBackwardRereadThreads, 2) backward_reread_kernel(const RowProblem p) {
  constexpr int V = 16 / static_cast<int>(sizeof(In));
  constexpr int kFirst = (kForm & kRereadEvictLast) != 0 ? kLoadEvictLast : kLoadPlain;
  constexpr bool kStream = (kForm & kRereadStreamOut) != 0;
  struct alignas(V * sizeof(Out)) OutVec {
    Out v[V];
  };
  __shared__ float red[32];
  const std::uint64_t pol = kFirst == kLoadEvictLast ? evict_last_policy() : 0;
  const int T = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(p.n);
  const std::int64_t sy = p.step[kX], sdy = p.step[kDy], sdx = p.step[kOut];
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const RowRef o{row, 0};
    const In* y = at<In>(p.x, o.off(p, kX));
    const In* dy = at<In>(p.dy, o.off(p, kDy));
    Out* dx = at<Out>(p.out, o.off(p, kOut));
    // Whole 16-byte vectors of y and dy (and of dx for the second loop); else every element through load_elems.
    const bool whole = sy == 1 && sdy == 1 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(dy) % 16 == 0;
    const bool whole_out = whole && sdx == 1 && reinterpret_cast<std::uintptr_t>(dx) % sizeof(OutVec) == 0;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.0f;
    int i0 = t * V;
    if (whole) {
      if constexpr ((kForm & kRereadPairs) != 0) {
        // Two vectors a step, both loads issued before either is used; summed in the one-vector loop's order
        // (vector k, then k + T), so the same bits.
#pragma unroll 1
        for (; i0 + T * V + V <= n; i0 += 2 * T * V) {
          const uint4 b0 = load_words<In, kFirst>(dy, i0, pol);
          const uint4 b1 = load_words<In, kFirst>(dy, i0 + T * V, pol);
          if constexpr (kLog) {
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b0, j);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b1, j);
          } else {
            const uint4 a0 = load_words<In, kFirst>(y, i0, pol);
            const uint4 a1 = load_words<In, kFirst>(y, i0 + T * V, pol);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b0, j) * word_elem<In>(a0, j);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b1, j) * word_elem<In>(a1, j);
          }
        }
      }
#pragma unroll 1
      for (; i0 + V <= n; i0 += T * V) {
        const uint4 b = load_words<In, kFirst>(dy, i0, pol);
        if constexpr (kLog) {
#pragma unroll
          for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b, j);
        } else {
          const uint4 a = load_words<In, kFirst>(y, i0, pol);
#pragma unroll
          for (int j = 0; j < V; ++j) acc[j] += word_elem<In>(b, j) * word_elem<In>(a, j);
        }
      }
    }
#pragma unroll 1
    for (; i0 < n; i0 += T * V) {  // a ragged end, or every vector of a row not loaded whole: element by element
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int i = i0 + j;
        const float b = i < n ? to_f32(dy[sdy * i]) : 0.0f;
        if constexpr (kLog) acc[j] += b;
        else acc[j] += b * (i < n ? to_f32(y[sy * i]) : 0.0f);
      }
    }
    const float s = block_sum(tree_sum<V>(acc), red);
    const bool scale = p.scale;
    const float temp = scale ? reread_row_temperature(p, o) : 1.0f;
    auto grad = [&](float yv, float dyv) {
      const float d = kLog ? dyv - expf(yv) * s : yv * (dyv - s);
      return scale ? d / temp : d;
    };
    i0 = t * V;
    if (whole_out) {
#pragma unroll 1
      for (; i0 + V <= n; i0 += T * V) {
        const uint4 a = load_words<In, kLoadEvictFirst>(y, i0, pol);
        const uint4 b = load_words<In, kLoadEvictFirst>(dy, i0, pol);
        OutVec w;
#pragma unroll
        for (int j = 0; j < V; ++j) w.v[j] = from_f32<Out>(grad(word_elem<In>(a, j), word_elem<In>(b, j)));
        store_out<kStream>(reinterpret_cast<OutVec*>(dx + i0), w);
      }
    }
#pragma unroll 1
    for (; i0 < n; i0 += T * V) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int i = i0 + j;
        if (i < n) dx[sdx * i] = from_f32<Out>(grad(to_f32(y[sy * i]), to_f32(dy[sdy * i])));
      }
    }
    __syncthreads();  // red is rewritten by the next row
  }
}

std::atomic<std::uint64_t>& reread_backward_launches() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}
std::atomic<int>& reread_last_form() {
  static std::atomic<int> f{-1};
  return f;
}

template <typename In, typename Out, bool kLog, int kForm>
void launch_reread(const RowProblem& p, cudaStream_t s) {
  const auto kernel = backward_reread_kernel<In, Out, kLog, kForm>;
  // The fewest warps that give every thread at least one vector, up to 1024 threads (a function of n alone: the
  // sum's order with it).
  constexpr std::int64_t V = 16 / sizeof(In);
  const std::int64_t vectors = (p.n + V - 1) / V;
  const int threads = static_cast<int>(std::clamp<std::int64_t>((vectors + 31) / 32 * 32, 32, kBackwardRereadThreads));
  kernel<<<capped_grid(p.rows), threads, 0, s>>>(p);
  SMK_CUDA_CHECK_LAUNCH("backward_reread_kernel");
  reread_backward_launches().fetch_add(1, std::memory_order_relaxed);
  reread_last_form().store(kForm, std::memory_order_relaxed);
}

}  // namespace

void launch_backward_reread_rows(const RowProblem& p, cudaStream_t s) {
  if (p.rows == 0 || p.n == 0) return;
  if (p.n > kBackwardRereadMaxN)
    smk::throw_invalid_argument("softmax backward (re-read rows)", "n", "rows of at most 32768 elements");
  // Built for 16-bit rows only (session 9's review, F17: the f32 instantiations were slower in mid9's run at every
  // shape; their launch is in commit 625272c). Softmax backward, removed by F17 too, is built again since mid11
  // (session 11) to time it without the spill: tune_softmax --mid11.
  const bool log = p.op == Op::log_softmax_backward;
  if ((!log && p.op != Op::softmax_backward) || p.x_dtype == DType::f32)
    smk::throw_unsupported(log ? "log_softmax_backward (re-read rows)" : "softmax_backward (re-read rows)",
                           "built for 16-bit softmax and log-softmax backward only (kernels.hpp "
                           "launch_backward_reread_rows)");
  const int form = backward_reread_tuning().form;
  if (form >= 0 && form != 0 && form != kRereadAll)
    smk::throw_invalid_argument(log ? "log_softmax_backward (re-read rows)" : "softmax_backward (re-read rows)", "form",
                                "a built form, 0 or 7 (backward_reread.cu launch_backward_reread_rows)");
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    if constexpr (sizeof(In) == 2) {
      if (p.out_dtype != DType::f32) {
        // kRereadAll: log-softmax backward, dx in the input's type, only.
        if (!log) return launch_reread<In, In, false, 0>(p, s);
        if ((form < 0 ? reread_default_form(log) : form) == kRereadAll)
          return launch_reread<In, In, true, kRereadAll>(p, s);
        return launch_reread<In, In, true, 0>(p, s);
      }
      if (log) return launch_reread<In, float, true, 0>(p, s);
      launch_reread<In, float, false, 0>(p, s);
    }
  });
}

std::uint64_t backward_reread_launch_count() { return reread_backward_launches().load(std::memory_order_relaxed); }
int backward_reread_last_form() { return reread_last_form().load(std::memory_order_relaxed); }

BackwardRereadTuning& backward_reread_tuning() {
  static BackwardRereadTuning t;
  return t;
}

}  // namespace smk::cuda::kernels
