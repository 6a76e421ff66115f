// cluster_stage: vocabulary-size rows (issue 3: 32769 … 262144 and up to 16 slices) read once and written once. A
// thread-block cluster of C blocks (one an SM: the stages take most of its shared memory) owns one row at a time;
// block b holds slice b of the row (S = T·kStageElems contiguous elements, the last one partial), bulk-copied
// (cp.async.bulk, completing on an mbarrier) into one of two shared-memory stages while the block works on the row
// before it. A block reads its slice from the stage into registers (kStageElems a thread, RowTile's map within the
// slice), frees the stage at its first block barrier (thread 0 then issues the copy of the row two ahead into it),
// forms the slice's state (m, d) with the same reductions as split_row's chunks (chunk_states.cuh chunk_state: max,
// then Σ out_exp for softmax or the count of ties and Σ log_term_exp_ftz for the log ops), hands it to every block of
// the cluster through distributed shared memory (one cluster barrier a row), and each block's warp 0 merges the C
// states with OnlineSoftmaxState::merge over a butterfly whose shape C alone fixes: the row's state, and its outputs,
// are bitwise the same alone or in any batch and from run to run. Outputs (softmax recomputes out_exp(z − M)·(1/l)
// as split_row's normalising pass does; log-softmax (z − M) − log l) are stored from registers straight to global
// memory, in the output's dtype (the input's or f32), so the stage is free as soon as it is read.
//
// Traffic per element: read x once and write y once: 8 B (f32), 4 B (bf16 / f16), 6 B (16-bit in, f32 out);
// logsumexp and the state read only: 4 B / 2 B. Floor on the H200 at the measured copy ceiling of 4.27 TB/s
// (ANCHORS.md): 4096×151936 f32 softmax (4.98 GB) 1166 µs, bf16 583 µs; logsumexp f32 (2.49 GB) at the read
// ceiling ≈ 4.4 TB/s ≈ 566 µs.
// Measured (H200, 2026-11-30, vocab7's run of bb5aa68, test_cuda_cluster_stage Timing, GPU µs a call; the bench of the
// same run within 3 %; docs/bench/vocab7-s7-2026-11-30.md): 4096×151936 bf16 softmax 1369 (1.82 TB/s, 43 % of the
// 4.25 TB/s copy; floor 583), log-softmax 1259; f32 softmax 2472 (2.01 TB/s, 47 %; floor 1166), log-softmax 2253;
// 1024×262144 bf16 softmax 547; 8192×65536 bf16 933; 4096×40000 bf16 353, f32 535. Far from the floor: the
// kernel runs a row a block at a time, its ~4–5 µs a row of barriers (three block, one cluster) and reductions not
// overlapped with anything but the next rows' copies (logsumexp, which stores nothing, still took ~5.5 µs a row an SM:
// 1426 µs f32, 965 bf16 at 4096×151936 against split_row's 693 / 682). How the slices arrive made no difference
// (each thread's cp.async, one bulk copy a slice, or 16 KB pieces: within 4 % everywhere). Clusters that do not divide
// a GPC leave SMs idle (C = 6: 17 clusters, 102 SMs; C = 10: 7 clusters, 70 SMs); powers of two helped f32
// (4096×151936 C = 8: 2220) without reaching split_row. Smaller slices, so that two or three blocks share an SM and
// one's barriers hide behind another's work, helped where they fit (f32 8192×65536 C = 8 × 256 threads: 1609 against
// 2051 at C = 3 and the old path's 1790; bf16 4096×40000 C = 4 × 320: 305 against 353), not where the cluster then
// spread too thin (bf16 8192×65536 C = 4 × 512: 990 against 933): timed only, not yet the launcher's rule (the tests
// ran the default shapes).
// The dispatcher takes it where it was faster (softmax_cuda.cpp cluster_stage_takes): softmax and log-softmax of
// 32769 … 65536, 16-bit and (since vocab8) f32. (The lead's integrated run, 5e29a34, narrowed the 16-bit bound from
// 262144: a single row pays a fixed cost here, 13.8 µs at bf16 1×151936 against split_row's 8.6, 10.2 against 5.4 in
// a graph, and split_row was as fast at many rows for softmax: 4096×151936 1295 against 1416.)
// vocab8 (session 8, run of ebc8547, H200, 2026-11-30; test_cuda_cluster_stage OneRowTiming, GPU µs a call from a
// CUDA graph): that fixed cost is the slowest block's own work, not the launch, the prologue or the occupancy query
// (cached): one bf16 row of 65536 took 9.84 µs on 2 blocks of 1024 threads, 6.72 on 4 × 512, 6.09 on 7 × 320, 5.38 on
// 8 × 256 (split_row's one launch: 4.59); f32 1×40000 9.92 → 6.68 (4.55). So slices are now 256 threads (8192
// elements) wherever a row fits 16 of them (n ≤ 131072, kStageSliceThreads), which many rows gain from too (bf16
// 4096×40000 softmax 348 → 307, f32 8192×65536 2035 → 1624, 5-10 % faster than cluster_row there), and f32 rows up
// to 65536 take this kernel. Above 131072 the slices stay as before (no 16 slices of 256 threads hold the row), and
// 16-bit rows above 65536 stay on split_row: at 320 threads (15 slices) one bf16 row of 151936 still took 6.4 µs
// against split_row's 4.95.
//
// Covered: every forward op (softmax, log-softmax, logsumexp, the state), f32 / f16 / bf16 in, the input dtype or f32
// out, temperature (scalar or per row), masks, any row pitch. A row is staged when its first element is 16-byte
// aligned and the row is unit-stride; other rows (odd lengths make every other row unaligned, strided rows) are read
// directly from global memory by the same element-to-thread map, so they give bitwise the staged result (only where
// the data comes from differs). A row's last partial 16-byte vector is always read from global memory.
// Not covered (the dispatcher keeps them on split_row / cluster_row): the backward passes, rows longer than 16 slices
// (f32 > 16·896·32 = 458752, 16-bit > 524288), devices below compute capability 9.0 or without room for the cluster;
// and, by the measured rule, f32 rows above 40000, 16-bit rows above 65536, logsumexp and the state.
#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/device_attrs.hpp"
#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/row_stage.cuh"

namespace smk::cuda::kernels {

namespace {

namespace cg = cooperative_groups;

// Elements a thread holds in registers: 32, as the wide block (1024 × 32 at 64 registers, block_row.cu).
constexpr int kStageElems = 32;
constexpr int kClusterStageMaxCluster = 16;  // non-portable cluster size, H100/H200
constexpr int kStageMaxThreads = 1024;
constexpr int kStageCount = 2;  // stages: the row being read and the one after it in flight (two rows of lead)

template <typename In, bool kShift = false>
using StageTile = RowTile<In, kStageElems, kShift>;

// odd21 (session 21): the kShift instances (launched only for calls whose rows are off the 16-byte boundary, launch.hpp
// rows_off_boundary; 16-bit only, common.cuh kShiftDefault) stage such a row too, where the others read it directly,
// one row at a time with no copy ahead (bf16 8192×50257 softmax 1293.5 µs after odd21's shifted loads, 0.54× torch
// eager; the same rows aligned would take ~500): each thread copies by cp.async the aligned 16-byte blocks of its own
// vectors' positions, counted from the block that holds the slice's first element (block b: the slice's elements
// b·V − lag … (b + 1)·V − lag − 1), thread 0 one block more (the one after the slice's last vector), every block that
// ends by the row's end; after its own copies land and one block barrier (a vector's second block is its neighbour's
// copy), a thread assembles its vectors from two staged blocks (common.cuh load_shifted), its others (a block past the
// row's end) element by element from global memory. The same elements in the same registers: the same bits.
template <typename In, bool kShift>
constexpr int kStagePad = kShift ? 16 / int(sizeof(In)) : 0;  // elements a stage holds past its slice: one block
static_assert(kStagePad<__nv_bfloat16, true> == StageTile<__nv_bfloat16, true>::V, "the pad is one staged block");

// Shared memory besides the stages.
struct StageShared {
  alignas(8) std::uint64_t bar[kStageCount];
  int staged[kStageCount];  // whether the row of stage s was bulk-copied (else read directly)
  float2 parts[2][kClusterStageMaxCluster];  // by row parity: block r's state at [.][r], written by block r
  float2 row_state[2];  // by row parity: the merged row state (rewritten two rows later, many barriers on)
  ChunkScratch scratch;
};

std::atomic<std::uint64_t>& stage_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

// The copy of the block's slice of `row` into `stage` (its whole 16-byte vectors), by every thread of the block, in one
// of three ways (`copy`, a launch parameter; cluster_stage_tuning().copy): kCopyLanes, each thread copies its own
// vectors by cp.async (16 bytes each, thousands of requests in flight an SM; it reads back only what it copied, so
// no barrier orders the stage) and commits one group a row, whether it copied anything or not, so that a thread's
// groups count rows; 0, thread 0 issues one bulk copy (cp.async.bulk) of the whole slice, completing on `bar`; > 0,
// thread 0 issues bulk copies of `copy` bytes each (the copy engine then works on several requests at once).
// Thread 0 records in `staged` whether the row was copied (16-byte aligned, unit-stride) or is to be read directly.
// The caller guarantees that no thread still reads the stage (a block barrier since the last reads; in kCopyLanes,
// the thread's own reads of its vectors, already used).
constexpr int kCopyLanes = -1;

template <typename In, bool kShift>
__device__ __forceinline__ void issue_slice(const RowProblem& p, std::int64_t row, std::int64_t slice0, int S,
                                            In* stage, std::uint64_t* bar, int* staged, int copy) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  using Tile = StageTile<In, kShift>;
  constexpr int V = Tile::V, K = Tile::K;
  const int tid = static_cast<int>(threadIdx.x), T = static_cast<int>(blockDim.x);
  const bool exists = row < p.rows;
  const In* xr = exists ? at<In>(p.x, RowRef{row, 0}.off(p, kX)) : nullptr;
  const bool ok = exists && p.step[kX] == 1 && (reinterpret_cast<std::uintptr_t>(xr) % 16) == 0;
  const std::int64_t left = p.n - slice0;
  const int len = static_cast<int>(left < 0 ? 0 : (left < S ? left : S));
  // odd21: 2, a row off the boundary staged as aligned blocks (kShift instances, kCopyLanes only).
  const bool shifted = kShift && copy == kCopyLanes && exists && !ok && p.step[kX] == 1;
  if (tid == 0) *staged = ok ? 1 : shifted ? 2 : 0;
  if (copy == kCopyLanes) {
    if (ok) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i0 = Tile::index(k, tid, T);
        if (i0 + V <= len) __pipeline_memcpy_async(stage + i0, xr + slice0 + i0, 16);
      }
    } else if (shifted) {
      const In* xs = xr + slice0;
      const auto lag = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(xs) % 16 / sizeof(In));
      const In* base = xs - lag;  // 16-byte aligned: the block holding the slice's first element
#pragma unroll
      for (int k = 0; k <= K; ++k) {  // k = K: thread 0's block S / V, the one after the slice's last vector
        if (k == K && tid != 0) break;
        const int b = k * T + tid;
        if (std::int64_t{b + 1} * V - lag <= left) __pipeline_memcpy_async(stage + b * V, base + b * V, 16);
      }
    }
    __pipeline_commit();
    return;
  }
  if (!ok || tid != 0) return;
  const auto bytes = static_cast<std::uint32_t>((len / V) * V * sizeof(In));
  (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                               ::cuda::ptx::space_shared, bar, bytes);
  const std::uint32_t piece = copy > 0 ? static_cast<std::uint32_t>(copy) : bytes;
  for (std::uint32_t off = 0; off < bytes; off += piece) {
    const std::uint32_t b = bytes - off < piece ? bytes - off : piece;
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage + off / sizeof(In),
                               xr + slice0 + off / sizeof(In), b, bar);
  }
#else
  (void)p, (void)row, (void)slice0, (void)S, (void)stage, (void)bar, (void)staged, (void)copy;
#endif
}

// A kShift instance's slice off the boundary from its stage (issue_slice's blocks): vector i0 from blocks i0 / V and
// i0 / V + 1 where the second was copied (it ends by the row's end: left elements from the slice's first), else element
// by element from global memory.
template <typename In>
__device__ __forceinline__ void load_stage_shifted(float (&v)[kStageElems], const In* stage, const In* xs, int len,
                                                   std::int64_t left, int tid, int T) {
  using Tile = StageTile<In, true>;
  using Vec = typename Tile::Vec;
  constexpr int V = Tile::V, K = Tile::K;
  const auto shift = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(xs) % 16);
  const auto lag = static_cast<std::int64_t>(shift / sizeof(In));
  const Vec* blocks = reinterpret_cast<const Vec*>(stage);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i0 = Tile::index(k, tid, T);
    if (i0 + V <= len && i0 + 2 * V - lag <= left) {
      const Vec w = load_shifted<Vec, In>(blocks, i0 / V, shift);
#pragma unroll
      for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[k * V + j] = i0 + j < len ? to_f32(xs[i0 + j]) : -detail::inf_<float>();
    }
  }
}

template <typename In, typename Out, bool kLog, bool kShift = false>
__global__ void __launch_bounds__(kStageMaxThreads, 1) cluster_stage_kernel(const RowProblem p, int C, int copy) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  using Tile = StageTile<In, kShift>;
  constexpr int E = kStageElems;
  extern __shared__ __align__(16) unsigned char stage_bytes[];
  __shared__ StageShared sh;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int T = static_cast<int>(blockDim.x), tid = static_cast<int>(threadIdx.x);
  const int S = T * E;  // slice capacity
  const std::int64_t slice0 = std::int64_t{rank} * S;
  const std::int64_t left = p.n - slice0;
  const int len = static_cast<int>(left < 0 ? 0 : (left < S ? left : S));
  In* const stage[kStageCount] = {reinterpret_cast<In*>(stage_bytes),
                                  reinterpret_cast<In*>(stage_bytes) + S + kStagePad<In, kShift>};
  const std::int64_t first = blockIdx.x / C, stride = gridDim.x / C;

  if (tid == 0)
    for (int b = 0; b < kStageCount; ++b) RowStage<In, E>::init(&sh.bar[b]);
  __syncthreads();  // the barriers initialised before a bulk copy completes on them
  for (int b = 0; b < kStageCount; ++b)
    issue_slice<In, kShift>(p, first + b * stride, slice0, S, stage[b], &sh.bar[b], &sh.staged[b], copy);
  // Every block of the cluster has started (and initialised its slots) before any writes into its shared memory.
  cluster.sync();

  std::uint32_t phase = 0;  // bit s: the parity of stage s's next completion
  int it = 0;
  for (std::int64_t row = first; row < p.rows; row += stride, ++it) {
    const int s = it & 1;
    const RowRef o{row, 0};
    const In* xs = at<In>(p.x, o.off(p, kX)) + slice0 * p.step[kX];
    float v[E];
    if (kShift ? sh.staged[s] == 1 : sh.staged[s] != 0) {  // 1: staged aligned (2: kShift's blocks, below)
      if (copy == kCopyLanes) {
        __pipeline_wait_prior(kStageCount - 1);  // this thread's copies of this row (the next row's may be pending)
      } else {
        RowStage<In, E>::wait(&sh.bar[s], (phase >> s) & 1u);
        phase ^= 1u << s;
      }
      RowStage<In, E>::load(v, stage[s], xs, len, tid, T, tid, T);  // the slice's last partial vector from global
    } else if (kShift && sh.staged[s] == 2) {
      __pipeline_wait_prior(kStageCount - 1);  // this thread's blocks of this row
      __syncthreads();                         // and its neighbours'
      if constexpr (kShift) load_stage_shifted<In>(v, stage[s], xs, len, p.n - slice0, tid, T);
    } else {
      if (copy == kCopyLanes) __pipeline_wait_prior(kStageCount - 1);  // keeps the count of groups in step
      Tile::load(v, xs, len, p.step[kX], tid, T);
    }
    const RowTransform tf = row_transform(p, o);
    Tile::transform(v, tf, len, tid, T, slice0);

    // The slice's state: the same operations as split_row's chunk_state (chunk_states.cuh), over this block.
    const float m = block_max(tree_max<E>(v), sh.scratch.max);
    // Every thread has read stage s (block_max's barrier): refill it with the row two ahead.
    issue_slice<In, kShift>(p, row + kStageCount * stride, slice0, S, stage[s], &sh.bar[s], &sh.staged[s], copy);
    int ties = 0;
    const float shift = ChunkState::shift_for(m);
    float rest;
    if constexpr (kLog) {
      rest = block_sum(thread_log_rest(v, shift, ties), sh.scratch.sum);
      ties = block_count(ties, sh.scratch.ties);
    } else {
      rest = block_sum(thread_exp_rest<Out>(v, shift, false, false, ties), sh.scratch.sum);
    }
    const ChunkState mine = state_from(m, ties, rest, kLog);

    // The exchange: block `rank`'s state into slot [row parity][rank] of every block of the cluster. A slot is
    // rewritten two rows later, after the next row's cluster barrier, which no block passes before every thread of
    // the cluster has read this row's slots.
    if (tid < C) *cluster.map_shared_rank(&sh.parts[s][rank], tid) = make_float2(mine.m, mine.d);
    auto arrived = cluster.barrier_arrive();  // release: the slots written above
    cluster.barrier_wait(std::move(arrived));  // acquire: every block's slot
    // The row's state: warp 0 merges the C states by OnlineSoftmaxState::merge over an xor butterfly of width
    // pow2 ≥ C (lane b holds block b's state, the lanes past C the empty state, merge's identity; a fixed tree given
    // C, which n and the dtype fix, and merge is commutative bitwise, so every lane ends with the same state), then
    // hands it to the block through shared memory: one barrier, where every thread merging the C states itself cost
    // C merges (≈ 25 instructions each) a thread a row.
    if (tid < 32) {
      int width = 1;
      while (width < C) width *= 2;
      ChunkState part = ChunkState::empty();
      if (tid < C) part = ChunkState::from_fields(sh.parts[s][tid].x, sh.parts[s][tid].y);
      part = group_merge(part, width);
      if (tid == 0) sh.row_state[s] = make_float2(part.m, part.d);
    }
    __syncthreads();
    const ChunkState st = ChunkState::from_fields(sh.row_state[s].x, sh.row_state[s].y);

    if (!writes_rows(p.op)) {
      if (rank == 0 && tid == 0) write_row_stats(p, o, st);
      continue;
    }
    const RowNormalizer<float> norm = st.normalizer(p.empty_rows);
    with_out<Out, In>(p, [&](auto* tag) {
      using O = std::remove_pointer_t<decltype(tag)>;
      normalize_values<O>(v, norm, p.op);
      Tile::template store<O>(at<O>(p.out, o.off(p, kOut)) + slice0 * p.step[kOut], v, len, p.step[kOut], tid, T);
    });
  }
  // No block may leave while another can still write to its shared memory: every remote write of the last row came
  // before its cluster barrier, which every block has waited on. Nothing else to do.
#else
  (void)p, (void)C, (void)copy;
#endif
}

// A cluster configuration: C blocks of T threads, each slice T·kStageElems elements.
struct StageConfig {
  int cluster = 0;  // 0: the row does not fit 16 slices
  int threads = 0;
};

template <typename In>
constexpr int stage_max_threads() {
  // Two stages of T·32 elements and the static part within the 227 KB a block may opt into (H100/H200): f32 896
  // threads (2 × 112 KB), 16-bit 1024 (the most a block has; 2 × 64 KB).
  constexpr int by_smem = static_cast<int>((227 * 1024 - 1024) / (kStageCount * kStageElems * sizeof(In))) / 32 * 32;
  return by_smem < kStageMaxThreads ? by_smem : kStageMaxThreads;
}

// vocab8 (session 8): blocks of at most kStageSliceThreads threads (slices of 8192 elements) where a row then fits 16
// slices (n ≤ kStageSliceMaxN), so that a row spreads over more SMs (a single row's fixed cost is its slowest block's
// work) and 2-4 blocks share an SM at many rows (one's barriers behind another's work). Measured (H200, 2026-11-30,
// vocab8's run of ebc8547, test_cuda_cluster_stage OneRowTiming, GPU µs a call from a CUDA graph, own slice size →
// 256 threads; the old path (split_row's one launch / cluster_row) in brackets): one row bf16 1×65536 softmax 9.84 →
// 5.38 (4.59), log-softmax 9.28 → 5.21 (4.88), 1×40000 7.32 → 5.49 (4.32); f32 1×65536 11.03 → 6.67 (4.94), 1×40000
// 9.92 → 6.68 (4.55); 32×65536 bf16 11.18 → 8.36 (7.77), f32 13.07 → 11.88 (10.05); many rows bf16 8192×65536
// softmax 929 → 923, log-softmax 876 → 852, 4096×40000 348 → 307, 330 → 284; f32 8192×65536 2035 → 1624 (cluster_row
// 1796), log-softmax 1751 → 1636 (1728), 4096×40000 532 → 522, log-softmax 458 → 476 (the one loss). 320 and 512
// threads were slower than 256 on all but three of these (f32 8192×65536 log-softmax 1607, bf16 4096×40000 302 / 280).
constexpr int kStageSliceThreads = 256;
constexpr std::int64_t kStageSliceMaxN = std::int64_t{kClusterStageMaxCluster} * kStageSliceThreads * kStageElems;

template <typename In>
StageConfig stage_config(std::int64_t n) {
  const int tuned = cluster_stage_tuning().max_threads;
  const int own = n <= kStageSliceMaxN ? kStageSliceThreads : stage_max_threads<In>();
  // A tuned cap: below the kernel's most, that cap; at or above it, the kernel's most (the slice size before vocab8).
  const int max_threads = tuned >= stage_max_threads<In>() ? stage_max_threads<In>() : tuned >= 32 ? tuned / 32 * 32 : own;
  const std::int64_t cap = std::int64_t{max_threads} * kStageElems;
  StageConfig c;
  std::int64_t cl = std::max<std::int64_t>(1, (n + cap - 1) / cap);
  if (cluster_stage_tuning().pow2_cluster)
    for (std::int64_t q = 1;; q *= 2)
      if (q >= cl) {
        cl = q;
        break;
      }
  if (cl > kClusterStageMaxCluster) return c;
  const std::int64_t per = (n + cl - 1) / cl;
  c.cluster = static_cast<int>(cl);
  c.threads = static_cast<int>(std::max<std::int64_t>(32, ((per + kStageElems - 1) / kStageElems + 31) / 32 * 32));
  return c;
}

template <typename In, bool kShift = false>
std::size_t stage_smem(int threads) {
  return std::size_t{kStageCount} * (std::size_t{1} * threads * kStageElems + kStagePad<In, kShift>) * sizeof(In);
}

// Clusters of `kernel` resident at once (cudaOccupancyMaxActiveClusters), cached per kernel, device, block size and
// cluster size; 0 where the device runs none (then the dispatcher keeps the old path).
int stage_active_clusters(const void* kernel, const cudaLaunchConfig_t& base) {
  const int cluster = static_cast<int>(base.attrs[0].val.clusterDim.x);
  return cached_occupancy(kernel, static_cast<int>(base.blockDim.x), cluster, [&] {
    int n = 0;
    // The kernel's body exists only in code compiled for sm_90 or later (an sm_80 build's is empty): none else runs it.
    // ptxVersion, not only binaryVersion: a newer GPU may run this build's compute_80 PTX compiled on the fly, whose
    // binary version is the GPU's but whose body is the empty one.
    cudaFuncAttributes fa{};
    const bool built90 =
        cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && fa.binaryVersion >= 90 && fa.ptxVersion >= 90;
    if (!built90) (void)cudaGetLastError();
    cudaLaunchConfig_t cfg = base;
    cfg.gridDim = dim3(base.attrs[0].val.clusterDim.x);
    if (!built90 || cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: this size is refused here, the old path serves
      n = 0;
    }
    return std::max(n, 0);
  });
}

template <typename In>
bool launch(const RowProblem& p, cudaStream_t s) {
  const StageConfig c = stage_config<In>(p.n);
  if (c.cluster == 0) return false;
  // A device whose blocks may not opt into the stages' shared memory (the kernel's shapes assume Hopper's 227 KB)
  // keeps the old paths: asking for more would fail the attribute call below.
  if (stage_smem<In>(stage_max_threads<In>()) + sizeof(StageShared) >
      static_cast<std::size_t>(device_facts().max_smem_optin))
    return false;
  constexpr bool k16 = sizeof(In) == 2;
  constexpr bool kSh = kShiftDefault<In>;  // odd21: the kShift instances, 16-bit only
  constexpr auto softmax_kernel = cluster_stage_kernel<In, float, false>;
  constexpr auto softmax_out_kernel = cluster_stage_kernel<In, std::conditional_t<k16, In, float>, false>;
  // The log ops' output type is chosen at run time (it changes only the store); softmax's at compile time (the
  // 16-bit tier's plain exponential, common.cuh out_exp).
  constexpr auto log_kernel = cluster_stage_kernel<In, void, true>;
  constexpr auto softmax_shift_kernel = cluster_stage_kernel<In, float, false, kSh>;
  constexpr auto softmax_out_shift_kernel = cluster_stage_kernel<In, std::conditional_t<k16, In, float>, false, kSh>;
  constexpr auto log_shift_kernel = cluster_stage_kernel<In, void, true, kSh>;
  const bool shift = kSh && call_off_boundary(p, sizeof(In));
  const auto kernel = p.op != Op::softmax           ? (shift ? log_shift_kernel : log_kernel)
                      : p.out_dtype == DType::f32 ? (shift ? softmax_shift_kernel : softmax_kernel)
                                                  : (shift ? softmax_out_shift_kernel : softmax_out_kernel);
  static DeviceOnce attributes;  // per In: every instantiation at once
  attributes.run([&] {
    const auto set = [](auto k, std::size_t smem) {
      SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      SMK_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    };
    for (const auto k : {softmax_kernel, softmax_out_kernel, log_kernel}) set(k, stage_smem<In>(stage_max_threads<In>()));
    for (const auto k : {softmax_shift_kernel, softmax_out_shift_kernel, log_shift_kernel})
      set(k, stage_smem<In, kSh>(stage_max_threads<In>()));
  });
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(static_cast<unsigned>(c.threads));
  cfg.dynamicSmemBytes = shift ? stage_smem<In, kSh>(c.threads) : stage_smem<In>(c.threads);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(c.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const int active = stage_active_clusters(reinterpret_cast<const void*>(kernel), cfg);
  if (active <= 0) return false;
  const ClusterStageTuning& t = cluster_stage_tuning();
  // Fewer clusters only make each walk more rows: a row's bits do not depend on which cluster computes it.
  const std::int64_t clusters =
      std::min<std::int64_t>({p.rows, active, t.max_clusters > 0 ? t.max_clusters : std::int64_t{active}});
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * c.cluster));
  const int copy = t.copy > 0 ? std::max(16, t.copy / 16 * 16) : t.copy;  // bulk pieces: whole 16-byte units
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p, c.cluster, copy));
  ClusterStageLast& last = cluster_stage_last();
  last.cluster.store(c.cluster, std::memory_order_relaxed);
  last.threads.store(c.threads, std::memory_order_relaxed);
  last.active.store(active, std::memory_order_relaxed);
  stage_launches().fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

std::uint64_t cluster_stage_launch_count() { return stage_launches().load(std::memory_order_relaxed); }

ClusterStageTuning& cluster_stage_tuning() {
  static ClusterStageTuning t;
  return t;
}

ClusterStageLast& cluster_stage_last() {
  static ClusterStageLast last;
  return last;
}

bool& cluster_stage_on() {
  static bool on = true;
  return on;
}

bool launch_cluster_stage_rows(const RowProblem& p, cudaStream_t s) {
  if (!cluster_stage_on() || p.rows == 0 || p.n <= 0) return false;
  if (writes_rows(p.op) && p.op != Op::softmax && p.op != Op::log_softmax) return false;  // the backward passes
  if (current_device_attrs().cc_major < 9) return false;
  bool ran = false;
  with_in_type(p.x_dtype, [&](auto* tag) { ran = launch<std::remove_pointer_t<decltype(tag)>>(p, s); });
  return ran;
}

}  // namespace smk::cuda::kernels
