// softmaxkit (internal, CUDA host code in .cu files): helpers the softmax-family launchers share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/device_attrs.hpp"
#include "cuda/softmax/kernels.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda::kernels {

// Calls f(T*) with a null pointer of the device storage type of a floating dtype (f32, f16, bf16).
template <typename F>
void with_in_type(DType t, F&& f) {
  switch (t) {
    case DType::f16: return f(static_cast<__half*>(nullptr));
    case DType::bf16: return f(static_cast<__nv_bfloat16*>(nullptr));
    default: return f(static_cast<float*>(nullptr));
  }
}

int current_device();

// Runs a per-device setup step (a function attribute) once on each device.
class DeviceOnce {
 public:
  template <typename F>
  void run(F&& f) {
    const int dev = current_device();
    const std::uint64_t bit = std::uint64_t{1} << (dev & 63);
    if (done_.load(std::memory_order_acquire) & bit) return;
    f();
    done_.fetch_or(bit, std::memory_order_acq_rel);
  }

 private:
  std::atomic<std::uint64_t> done_{0};
};

// How many blocks of `kernel` fit on one SM, cached per kernel, device, block size and shared memory (the query
// costs microseconds of host time, more than a small kernel runs).
int cached_blocks_per_sm(const void* kernel, int threads, std::size_t smem,
                         int (*query)(const void*, int, std::size_t));
template <typename Kernel>
int blocks_per_sm(Kernel kernel, int threads, std::size_t smem) {
  return cached_blocks_per_sm(reinterpret_cast<const void*>(kernel), threads, smem,
                              [](const void* k, int t, std::size_t s) {
                                int n = 0;
                                SMK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, t, s));
                                return std::max(n, 1);
                              });
}

// A persistent grid: as many blocks as are resident at once, or fewer when the work needs fewer.
template <typename Kernel>
unsigned persistent_grid(Kernel kernel, int threads, std::size_t smem, std::int64_t blocks_needed) {
  const std::int64_t resident =
      static_cast<std::int64_t>(blocks_per_sm(kernel, threads, smem)) * device_facts().sm_count;
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(resident, blocks_needed)));
}

// Stream-ordered workspace (workspace_alloc) freed on the same stream however the launcher leaves: release() on the
// normal path (checked), the destructor when a launch throws (unchecked: the launch's error is the one reported).
class ScopedWorkspace {
 public:
  ScopedWorkspace(std::size_t bytes, cudaStream_t s) : p_(workspace_alloc(bytes, s)), s_(s) {}
  ~ScopedWorkspace() {
    if (p_ != nullptr) (void)cudaFreeAsync(p_, s_);
  }
  ScopedWorkspace(const ScopedWorkspace&) = delete;
  ScopedWorkspace& operator=(const ScopedWorkspace&) = delete;
  void* get() const { return p_; }
  void release() {
    void* p = p_;
    p_ = nullptr;
    workspace_free(p, s_);
  }

 private:
  void* p_;
  cudaStream_t s_;
};

// A plain grid of one block per item, capped where CUDA caps grid.x (kernels loop over the rest).
inline unsigned capped_grid(std::int64_t blocks, int multiple = 1) {
  const std::int64_t cap = (std::int64_t{0x7fffffff} / multiple) * multiple;
  return static_cast<unsigned>(std::max<std::int64_t>(multiple, std::min(blocks * multiple, cap)));
}

// split_row's common call (few7): whether slot `slot`'s rows (base pointer `base`) are unit-stride with every row's
// first element 16-byte aligned, in a row map of at most one dimension (chunk_states.cuh PlainTile's loads and
// stores, plain_offset's row offsets).
template <typename In>
bool plain_rows(const RowProblem& p, const void* base, int slot) {
  constexpr std::int64_t kVec = 16 / sizeof(In);
  return p.map.rank <= 1 && p.step[slot] == 1 && reinterpret_cast<std::uintptr_t>(base) % 16 == 0 &&
         (p.map.rank == 0 || p.map.stride[slot][0] % kVec == 0);
}

// odd21 (session 21): whether slot `slot`'s rows (base pointer `base`, elements of `es` bytes) are unit-stride with some
// row off the 16-byte boundary: the calls whose loads and stores common.cuh's load_shifted / store_shifted serve.
inline bool rows_off_boundary(const RowProblem& p, const void* base, int slot, std::size_t es) {
  if (p.step[slot] != 1) return false;
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0) return true;
  for (int d = 0; d < p.map.rank; ++d)
    if (p.map.size[d] > 1 && (p.map.stride[slot][d] * static_cast<std::int64_t>(es)) % 16 != 0) return true;
  return false;
}

// The call's choice of kShift instances (block_row.cu, cluster_stage.cu): x's rows off the boundary, or the output's
// where the op writes rows.
inline bool call_off_boundary(const RowProblem& p, std::size_t x_es) {
  return rows_off_boundary(p, p.x, kX, x_es) ||
         (writes_rows(p.op) && rows_off_boundary(p, p.out, kOut, dtype_size(p.out_dtype)));
}

// Programmatic dependent launch (Hopper, PTX griddepcontrol; nothing below sm_90, where the host never asks for it):
// pdl_wait blocks until the grid this one depends on has completed and its memory is visible (at once when the
// launch was plain); pdl_launch_dependents lets the next, dependent grid be scheduled once every block of this one
// has called it or exited. Used by split_row's forward (split_row.cu) and backward (backward.cu) kernel chains.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Launches `kernel` on `grid` blocks of `threads` as a programmatic dependent of the kernel before it on the stream
// (cudaLaunchAttributeProgrammaticStreamSerialization): it may start once every block of that kernel has called
// pdl_launch_dependents, and reads that kernel's results only after pdl_wait. Under stream capture the runtime
// records a programmatic edge. The launch checks its own configuration (no cudaGetLastError after it). `dependent`
// false, split_row_pdl() off or a device below Hopper: a plain launch.
template <typename... Params, typename... Args>
void launch_dependent(bool dependent, void (*kernel)(Params...), unsigned grid, unsigned threads, cudaStream_t s,
                      Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(threads);
  cfg.stream = s;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed =
      dependent && split_row_pdl() && current_device_attrs().cc_major >= 9 ? 1 : 0;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace smk::cuda::kernels
