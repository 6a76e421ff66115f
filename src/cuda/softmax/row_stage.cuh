// softmaxkit (internal, device code): a block's share of a register-resident row (RowTile), staged in shared memory
// by the Hopper bulk copy (cp.async.bulk, completed on an mbarrier), so the next row's load is in flight while the
// block reduces and writes the current one. Used by the staged kernels of block_row.cu and backward.cu
// (docs/perf-notebook.md, "row pipeline": where they pay and where they do not).
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
#include <cuda_pipeline.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

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

  // What one block copies of every row: the segments' offsets in the row and their lengths, which depend on n and
  // the launch configuration alone. Kept in shared memory, written once, and read through a volatile pointer when a
  // copy is issued, so the compiler cannot hoist them into registers held across the loop over rows (at 64 registers
  // a thread that spills the row's elements).
  struct Plan {
    int first[K];              // element offset of segment k in the row
    std::uint32_t bytes[K];    // bytes of segment k: its whole vectors below n
    std::uint32_t total;       // all of them (one tensor)
  };
  __device__ __forceinline__ static void plan(Plan* pl, int n, int g0, int T, int G) {
    std::uint32_t total = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int first = (k * G + g0) * V;
      const int full = n > first ? (n - first) / V : 0;  // whole vectors of this segment below n
      pl->first[k] = first;
      pl->bytes[k] = static_cast<std::uint32_t>((full < T ? full : T) * V * sizeof(In));
      total += pl->bytes[k];
    }
    pl->total = total;
  }

  // Issued by one thread: copies the block's K segments of `count` tensors' rows (row[c], into stage[c], each of
  // T·E elements) completing on `bar`. The caller guarantees that no thread still reads the stages (a block barrier
  // since the last reads).
  template <int kCount>
  __device__ __forceinline__ static void issue(In* const (&stage)[kCount], std::uint64_t* bar,
                                               const In* const (&row)[kCount], const Plan* plan_, int T) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    const volatile Plan* pl = plan_;
    (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                                 ::cuda::ptx::space_shared, bar, kCount * pl->total);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const std::uint32_t bytes = pl->bytes[k];
      const int first = pl->first[k];
      if (bytes > 0) {
#pragma unroll
        for (int c = 0; c < kCount; ++c)
          ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage[c] + k * T * V,
                                     row[c] + first, bytes, bar);
      }
    }
#else
    (void)stage, (void)bar, (void)row, (void)plan_, (void)T;
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

// The opening of a staged loop over rows, shared by block_row.cu's forward and backward.cu's (kCount tensors a row: x,
// or y and dy): thread 0 finds the next row's sources where registers are free, before the current row's loads, and
// leaves them here in shared memory (all null when there is no next row or it cannot be staged); after the block
// barrier that ends every read of the stage, where the current row's elements are live, it issues their copies,
// reading the sources back through volatile so that the compiler holds no register for them across the row.
template <typename In, int E, int kCount>
struct NextRow {
  const In* src[kCount];
  // rows: the next row's sources, or all null (no next row, or one that cannot be staged).
  __device__ __forceinline__ void leave(const In* const (&rows)[kCount]) {
#pragma unroll
    for (int i = 0; i < kCount; ++i) src[i] = rows[i];
  }
  __device__ __forceinline__ void issue(In* const (&stage)[kCount], std::uint64_t* bar,
                                        const typename RowStage<In, E>::Plan* plan, int T) const {
    const In* const volatile* s = src;
    const In* rows[kCount];
#pragma unroll
    for (int i = 0; i < kCount; ++i) rows[i] = s[i];
    if (rows[0] != nullptr) RowStage<In, E>::template issue<kCount>(stage, bar, rows, plan, T);
  }
};

// A thread's own share of a row (RowTile's element-to-thread map) kept in shared memory: vector k of the thread
// `slot` among `slots` at s[k·slots + slot], so a warp's accesses are consecutive 16-byte words, and only that thread
// ever reads or writes its vectors: its own cp.async wait orders them, no barrier. fetch starts the copy of row[0, n)
// (stride `step`): whole aligned vectors (RowTile's V, 16 bytes but for short 16-bit rows) by cp.async (no register
// held while in flight), the rest (a partial last
// vector, unaligned or strided rows) through registers; positions past n hold `pad`. The caller commits and waits
// (__pipeline_commit, __pipeline_wait_prior). Refilling slots the thread has just read (the backward's prefetching
// kernel refills y's slots right after reading them into registers) relies on the read being issued first and the
// copy writing shared memory only when its global data returns, a warp's shared-memory requests being processed in
// order; not a documented guarantee of the PTX memory model, which orders cp.async's writes only at the wait. Where
// that matters, refill only after the values read were used.
template <typename In, int E>
struct LaneStage {
  using Tile = RowTile<In, E>;
  using Vec = typename Tile::Vec;
  static constexpr int V = Tile::V, K = Tile::K;
  static_assert(sizeof(Vec) == 4 || sizeof(Vec) == 8 || sizeof(Vec) == 16, "cp.async moves 4, 8 or 16 bytes");
  static constexpr std::size_t bytes_per_thread = std::size_t{K} * sizeof(Vec);

  __device__ __forceinline__ static void fetch(Vec* s, const In* row, int n, std::int64_t step, int g, int G,
                                               int slot, int slots, float pad) {
    const bool vec = step == 1 && (reinterpret_cast<std::uintptr_t>(row) % sizeof(Vec)) == 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i0 = Tile::index(k, g, G);
      if (vec && i0 + V <= n) {
        __pipeline_memcpy_async(&s[k * slots + slot], row + i0, sizeof(Vec));
      } else {
        Vec w;
#pragma unroll
        for (int j = 0; j < V; ++j)
          w.v[j] = i0 + j < n ? row[static_cast<std::int64_t>(i0 + j) * step] : from_f32<In>(pad);
        s[k * slots + slot] = w;
      }
    }
  }
  // Vector k of the thread's share as f32.
  __device__ __forceinline__ static void read_vec(float (&v)[V], const Vec* s, int k, int slot, int slots) {
    const Vec w = s[k * slots + slot];
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = to_f32(w.v[j]);
  }
  // The thread's whole share as f32 (RowTile::load's v).
  __device__ __forceinline__ static void read(float (&v)[E], const Vec* s, int slot, int slots) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Vec w = s[k * slots + slot];
#pragma unroll
      for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
    }
  }
};

// An occupancy answer for (kernel, current device, block size, cluster size), asked once through `query` (a callable
// returning int, run on a miss, outside the lock) and cached: the query costs microseconds of host time, a call's
// whole fixed cost a few. Each caller's query type has its own cache.
template <typename Query>
int cached_occupancy(const void* kernel, int threads, int cluster, Query&& query) {
  struct Key {
    const void* kernel;
    int device, threads, cluster;
    bool operator<(const Key& o) const {
      return std::tie(kernel, device, threads, cluster) < std::tie(o.kernel, o.device, o.threads, o.cluster);
    }
  };
  static std::mutex mu;
  static std::map<Key, int> cache;
  const Key key{kernel, current_device(), threads, cluster};
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const int n = query();
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = n;
  return n;
}

// Clusters (or blocks, for a cluster of 1) of a staged kernel resident at once: the persistent grid's size.
inline int resident_clusters(const void* kernel, const cudaLaunchConfig_t& base, int cluster) {
  return cached_occupancy(kernel, static_cast<int>(base.blockDim.x), cluster, [&] {
    int n = 0;
    if (cluster == 1) {
      SMK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, static_cast<int>(base.blockDim.x),
                                                                   base.dynamicSmemBytes));
      n *= device_facts().sm_count;
    } else {
      cudaLaunchConfig_t cfg = base;
      cfg.gridDim = dim3(static_cast<unsigned>(cluster));
      SMK_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg));
    }
    return std::max(n, 1);
  });
}

}  // namespace smk::cuda::kernels
