// warp_per_row: rows of up to 1024 elements, one row per group of 1–32 lanes (several rows per warp for tiny rows),
// the row in registers (4–32 elements per lane), 16-byte vector loads when the row is aligned, a persistent grid.
//
// Traffic per element: softmax / log-softmax read n and write n: 8 B (f32), 4 B (bf16/f16 → same dtype);
// logsumexp / state read n: 4 B (f32), 2 B (bf16). Floor on the H200 at the measured 4.27 TB/s copy bandwidth:
// 32768×1024 f32 (268 MB moved) 62.9 µs; 262144×128 f32 62.9 µs; 1048576×32 f32 62.9 µs.
// Measured (H200, 2026-11-29, softmaxkit bench, L2 flushed, median; docs/perf-notebook.md "Issue 3 kernels"):
// softmax 32768×1024 f32 74.7 µs (84% of copy), bf16 50.4 µs (62%); 262144×128 f32 75.4 µs (83%), bf16 48.3 µs
// (65%); 1048576×32 f32 78.7 µs (80%), bf16 47.9 µs (66%). The forward is bound by instructions (exp_diff) before
// bytes. Since 2026-11-30 (commit 050be25, docs/perf-notebook.md "log l's terms") log-softmax, logsumexp and the
// state form their terms with log_term_exp and the op class is a template parameter: 32768×1024 f32 softmax 73.8 µs
// (85 %), log-softmax 75.1 (84 %), logsumexp 47.0 (67 % of read); bf16 48.5 / 51.2 / 44.2; 262144×128 bf16
// 46.3 / 49.8 / 42.7; 1048576×32 bf16 47.5 / 48.5 / 40.0. A branch on p.op inside the kernel had cost 1.2–2.1×.
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::kernels {

namespace {

constexpr int kThreads = 256;  // 8 warps: enough independent loads per block without hurting the persistent grid

// Rows a lane group handles at once: short rows (E ≤ 8) are loaded R at a time, so that a warp keeps as many bytes
// in flight as one with a long row (a warp moving 512 B per step cannot cover the memory latency).
template <int E>
constexpr int kRowsAtOnce = E >= 16 ? 1 : 16 / E;

// The dense case, where the kernel prefetches: rows of exactly lanes · E contiguous elements, every row aligned to
// the vector width (a row map of rank ≤ 1 with an aligned base and stride). Every lane's slots are then full vectors
// in every row, so the next step's rows can be loaded as raw vectors (no conversion, no bounds) into registers while
// the current ones are reduced: a warp keeps its next 64 bytes a lane in flight through its arithmetic instead of
// waiting a memory latency at the top of every step. Only where the raw tile takes at most 16 registers (64 bytes a
// lane): f32 at E = 32 would need 32 more and lose occupancy. The element-to-lane map and the arithmetic are the
// general path's, so a row's bits do not depend on which path loaded it (alone or in a batch, aligned or not).
template <typename In, int E>
struct RawTile {
  using Tile = RowTile<In, E>;
  static constexpr int R = kRowsAtOnce<E>;
  static constexpr int K = Tile::K;
  static constexpr int kBytes = Tile::V * int(sizeof(In));  // 8 or 16
  static constexpr int kWords = kBytes / 4;
  static constexpr bool kEnabled = R * E * int(sizeof(In)) <= 64;
  using Word = std::conditional_t<kBytes == 16, uint4, uint2>;
  static_assert(kBytes == 16 || kBytes == 8, "a vector is 8 or 16 bytes");

  __device__ __forceinline__ static bool dense(const RowProblem& p, int lanes) {
    if (!kEnabled || p.n != std::int64_t{lanes} * E || p.step[kX] != 1 || p.map.rank > 1) return false;
    if (reinterpret_cast<std::uintptr_t>(p.x) % kBytes != 0) return false;
    return p.map.rank == 0 || (p.map.stride[kX][0] * std::int64_t{sizeof(In)}) % kBytes == 0;
  }
  __device__ __forceinline__ static std::uint32_t word(const Word& w, int i) {
    if constexpr (kWords == 4) return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w;
    else return i == 0 ? w.x : w.y;
  }
  // Loads the rows of step `base` (those below p.rows) as raw vectors.
  __device__ __forceinline__ static void load(Word (&w)[R][K], const RowProblem& p, std::int64_t base, int groups,
                                              int group, int g, int lanes) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row < p.rows) {
        const Word* q = reinterpret_cast<const Word*>(at<In>(p.x, row_offset(p.map, row, kX))) + g;
#pragma unroll
        for (int k = 0; k < K; ++k) w[r][k] = q[k * lanes];
      }
    }
  }
  // The raw rows as f32 in the general path's layout; rows past p.rows read as −inf.
  __device__ __forceinline__ static void unpack(const Word (&w)[R][K], float (&v)[R][E], const RowProblem& p,
                                                std::int64_t base, int groups, int group) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int q = 0; q < kWords; ++q) {
          const std::uint32_t x = word(w[r][k], q);
          if constexpr (sizeof(In) == 4) {
            v[r][k * Tile::V + q] = __uint_as_float(x);
          } else {
            unpack2(x, static_cast<const In*>(nullptr), v[r][k * Tile::V + 2 * q], v[r][k * Tile::V + 2 * q + 1]);
          }
        }
      if (base + r * groups + group >= p.rows) {  // a branch a row, not a select an element
#pragma unroll
        for (int i = 0; i < E; ++i) v[r][i] = -detail::inf_<float>();
      }
    }
  }
};

// kLog: the op takes log l (log-softmax, logsumexp, the state), not 1/l (softmax). A template parameter, not a
// branch on p.op: the two arithmetics (common.cuh's thread_exp_rest and thread_log_rest) then compile apart, and
// neither pays the other's registers or instructions (measured: docs/perf-notebook.md, "log l's terms").
// Blocks an SM must hold: 3 (4 at E = 16) without the prefetch; with it the raw tile's 16 registers do not fit
// those budgets (ptxas: 24-88 bytes of spill at 80 and 64 registers), so one block fewer.
template <typename In, int E>
constexpr int kMinBlocks = (RawTile<In, E>::kEnabled ? -1 : 0) + (E == 16 ? 4 : 3);

template <typename In, int E, bool kLog>
__global__ void __launch_bounds__(kThreads, kMinBlocks<In, E>) warp_rows_kernel(const RowProblem p, int lanes) {
  using Tile = RowTile<In, E>;
  using Raw = RawTile<In, E>;
  constexpr int R = kRowsAtOnce<E>;
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int groups = 32 / lanes;  // rows per warp and step
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const int n = static_cast<int>(p.n);
  const std::int64_t first = warp * groups * R, step = warps * groups * R;
  const bool dense = Raw::dense(p, lanes);
  typename Raw::Word raw[R][Raw::K];  // dense: the next step's rows, in flight while this step's are reduced
  if (dense) Raw::load(raw, p, first, groups, group, g, lanes);
  for (std::int64_t base = first; base < p.rows; base += step) {
    float v[R][E];
    if (dense) {
      Raw::unpack(raw, v, p, base, groups, group);
      if (base + step < p.rows) Raw::load(raw, p, base + step, groups, group, g, lanes);
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const std::int64_t row = base + r * groups + group;
        if (row < p.rows) {
          Tile::load(v[r], at<In>(p.x, row_offset(p.map, row, kX)), n, p.step[kX], g, lanes);
        } else {
#pragma unroll
          for (int i = 0; i < E; ++i) v[r][i] = -detail::inf_<float>();
        }
      }
    }
    if (p.scale || p.has_mask) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const std::int64_t row = base + r * groups + group;
        if (row < p.rows) Tile::transform(v[r], row_transform(p, RowRef{row, 0}), n, g, lanes);
      }
    }
    // Every lane takes part in the shuffles, idle groups included.
    const bool transformed = p.scale || p.has_mask;
    constexpr bool kExact = !kLog && sizeof(In) == 2;  // softmax of 16-bit scores: exp_diff's TwoSum skipped when exact
    float m[R], rest[R];
    int ties[R];
#pragma unroll
    for (int r = 0; r < R; ++r) m[r] = group_max(tree_max<E>(v[r]), lanes);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      ties[r] = 0;
      const float shift = OnlineSoftmaxState<float>::shift_for(m[r]);
      if constexpr (kLog) {
        rest[r] = group_sum(thread_log_rest(v[r], shift, ties[r]), lanes);
        ties[r] = group_count(ties[r], lanes);
      } else if (kExact) {
        // A uniform branch for a row's lanes: the test's reductions make every lane of the group agree.
        const bool exact = !transformed && exact_differences<In>(group_min(tree_min_abs<E>(v[r]), lanes),
                                                                 group_max(tree_max_abs<E>(v[r]), lanes));
        rest[r] = group_sum(exact ? thread_exp_exact(v[r], shift) : thread_exp_rest(v[r], shift, true, false, ties[r]),
                            lanes);
      } else {
        rest[r] = group_sum(thread_exp_rest(v[r], shift, true, false, ties[r]), lanes);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row >= p.rows) continue;
      const RowRef o{row, 0};
      const auto state = state_from(m[r], ties[r], rest[r], kLog);
      if (!writes_rows(p.op)) {
        if (g == 0) write_row_stats(p, o, state);
        continue;
      }
      finish_rows(v[r], state.normalizer(p.empty_rows), kLog ? Op::log_softmax : Op::softmax);
      with_out_type<In>(p, [&](auto* tag) {
        using Out = std::remove_pointer_t<decltype(tag)>;
        Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)), v[r], n, p.step[kOut], g, lanes);
      });
    }
  }
}

template <typename In, int E>
void launch(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  const auto kernel = p.op == Op::softmax ? warp_rows_kernel<In, E, false> : warp_rows_kernel<In, E, true>;
  const int rows_per_block = (kThreads / 32) * (32 / c.lanes) * kRowsAtOnce<E>;
  const unsigned grid = persistent_grid(kernel, kThreads, 0, (p.rows + rows_per_block - 1) / rows_per_block);
  kernel<<<grid, kThreads, 0, s>>>(p, c.lanes);
  SMK_CUDA_CHECK_LAUNCH("warp_rows_kernel");
}

template <typename In>
void launch_typed(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  switch (c.elems) {
    case 4: return launch<In, 4>(p, c, s);
    case 8: return launch<In, 8>(p, c, s);
    case 16: return launch<In, 16>(p, c, s);
    default: return launch<In, 32>(p, c, s);
  }
}

}  // namespace

void launch_warp_rows(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch_typed<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

}  // namespace smk::cuda::kernels
