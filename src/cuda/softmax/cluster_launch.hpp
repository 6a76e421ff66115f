// softmaxkit (internal, CUDA host code in .cu files): launching a kernel in clusters of blocks along x, and how many
// such clusters the device runs at once, shared by split_row.cu's one-launch kernels and lse_stream.cu's (lse18) one
// launch (lse19b: their three copies of the occupancy query and two of the launch folded here; no kernel changed).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cuda/softmax/launch.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::kernels {

// A launch of `grid` blocks of `threads` in clusters of `cluster` blocks along x; its one attribute lives in `attr`,
// which must outlive the configuration.
inline cudaLaunchConfig_t cluster_config(cudaLaunchAttribute& attr, unsigned grid, int threads, int cluster,
                                         std::size_t smem = 0, cudaStream_t s = nullptr) {
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.gridDim = dim3(grid);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  attr = cudaLaunchAttribute{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

// kKernel may run clusters of more than 8 blocks (the non-portable sizes, an H100/H200 extension): set once a device,
// before its first launch or occupancy query at such a size.
template <auto kKernel>
void allow_large_clusters() {
  static DeviceOnce once;
  once.run([] { SMK_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1)); });
}

// kKernel(args...) on cluster_config's launch (its attributes set by the caller).
template <auto kKernel, typename... Args>
void launch_in_clusters(unsigned grid, int threads, int cluster, std::size_t smem, cudaStream_t s,
                        const Args&... args) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(attr, grid, threads, cluster, smem, s);
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kKernel, args...));
}

// A row of p a cluster of `chunks` blocks of `threads` (the grid capped as capped_grid caps it, whole clusters), the
// kernel taking (p, chunks): split_row's one-chunk-a-block kernels and lse_stream's cluster kernel.
template <auto kKernel>
void launch_row_clusters(const RowProblem& p, std::int64_t chunks, int threads, cudaStream_t s) {
  allow_large_clusters<kKernel>();
  launch_in_clusters<kKernel>(capped_grid(p.rows, static_cast<int>(chunks)), threads, static_cast<int>(chunks), 0, s,
                              p, chunks);
}

// How many clusters of `cluster` blocks of `kernel` (threads, dynamic shared memory smem) the device runs at once; 0
// where the occupancy query refuses the size (a MIG or MPS slice without room for it: not a sticky error, cleared).
inline int query_active_clusters(const void* kernel, int threads, int cluster, std::size_t smem = 0) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = cluster_config(attr, static_cast<unsigned>(cluster), threads, cluster, smem);
  int active = 0;
  if (cudaOccupancyMaxActiveClusters(&active, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    active = 0;
  }
  return std::max(active, 0);
}

// The count cached in *slot (the answer + 1; 0: not asked yet; null: no cache), else query()'s, stored there: an
// acquire load and no CUDA call once asked, as fused.cu and decode_mma.cu keep theirs.
template <typename Query>
int cached_active_clusters(std::atomic<int>* slot, Query&& query) {
  if (slot != nullptr) {
    const int k = slot->load(std::memory_order_acquire);
    if (k != 0) return k - 1;
  }
  const int active = std::max(query(), 0);
  if (slot != nullptr) slot->store(active + 1, std::memory_order_release);
  return active;
}

}  // namespace smk::cuda::kernels
