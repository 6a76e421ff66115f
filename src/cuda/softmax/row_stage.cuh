// softmaxkit (internal, device code): a block's share of a register-resident row (RowTile), staged in shared memory
// by the Hopper bulk copy (cp.async.bulk, completed on an mbarrier), so the next row's load is in flight while the
// block reduces and writes the current one. Used by block_row.cu's staged kernels (docs/perf-notebook.md, "row
// pipeline").
//
// Layout: RowTile gives thread g of the G threads sharing a row the vectors (k·G + g)·V … + V − 1, k < K. The T
// threads of one block (g = g0 … g0 + T − 1) therefore hold K contiguous segments of T·V elements each; segment k
// lands at stage[k·T·V …], so thread t reads its vector k at stage[(k·T + t)·V] (consecutive threads, consecutive
// 16-byte words: no bank conflicts). A bulk copy moves whole 16-byte words from and to 16-byte aligned addresses, so
// a row is staged only when its base is 16-byte aligned and unit-stride (stageable); each segment is copied up to
// its last full vector below n, and the one partial vector at the row's end, like every other row, is read directly
// from global memory with the same element-to-thread map. The elements a thread ends with are exactly those of
// RowTile::load, so staged and direct rows give bitwise-identical results.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "cuda/softmax/common.cuh"

namespace smk::cuda::kernels {

// Bulk copies exist from sm_90; an sm_80 build (CMAKE_CUDA_ARCHITECTURES "80;90a") compiles the staged kernels'
// fallback: every row loaded directly.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
constexpr bool kHasBulkCopy = true;
#else
constexpr bool kHasBulkCopy = false;
#endif

template <typename In, int E>
struct RowStage {
  using Tile = RowTile<In, E>;
  static constexpr int V = Tile::V;
  static constexpr int K = Tile::K;
  static_assert(V * sizeof(In) == 16, "a staged row moves 16-byte vectors");

  // Shared-memory bytes one block's share of a row takes.
  static constexpr std::size_t bytes(int threads) { return std::size_t{1} * threads * E * sizeof(In); }

  __device__ __forceinline__ static bool stageable(const In* row, std::int64_t step) {
    return kHasBulkCopy && step == 1 && (reinterpret_cast<std::uintptr_t>(row) % 16) == 0;
  }

  __device__ __forceinline__ static void init(std::uint64_t* bar) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    ::cuda::ptx::mbarrier_init(bar, 1);
    // Makes the initialised barrier visible to the bulk copies (the async proxy) before any is issued.
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
#endif
  }

  // Issued by one thread: copies the block's K segments of row[0, n) into `stage`, completing on `bar`. The caller
  // guarantees that no thread still reads `stage` (a block barrier since the last reads).
  __device__ __forceinline__ static void issue(In* stage, std::uint64_t* bar, const In* row, int n, int g0, int T,
                                               int G) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    int len[K];
    std::uint32_t total = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int first = (k * G + g0) * V;
      const int full = n > first ? (n - first) / V : 0;  // whole vectors of this segment below n
      len[k] = (full < T ? full : T) * V;
      total += static_cast<std::uint32_t>(len[k] * sizeof(In));
    }
    (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta, ::cuda::ptx::space_shared, bar,
                                         total);
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (len[k] > 0)
        ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage + k * T * V,
                                 row + (k * G + g0) * V, static_cast<std::uint32_t>(len[k] * sizeof(In)), bar);
#else
    (void)stage, (void)bar, (void)row, (void)n, (void)g0, (void)T, (void)G;
#endif
  }

  // Waits for the copies of the phase `parity` to land.
  __device__ __forceinline__ static void wait(std::uint64_t* bar, std::uint32_t parity) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
    }
#else
    (void)bar, (void)parity;
#endif
  }

  // RowTile::load's result for a staged row: full vectors below n from `stage`, the row's last partial vector from
  // global memory, positions past n as `pad`.
  __device__ __forceinline__ static void load(float (&v)[E], const In* stage, const In* row, int n, int g, int G,
                                              int t, int T, float pad = -detail::inf_<float>()) {
    using Vec = typename Tile::Vec;
    const Vec* s = reinterpret_cast<const Vec*>(stage);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = Tile::index(k, g, G);
      if (i0 + V <= n) {
        const Vec w = s[k * T + t];
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) v[k * V + j] = i0 + j < n ? to_f32(row[i0 + j]) : pad;
      }
    }
  }
};

}  // namespace smk::cuda::kernels
