// softmaxkit (internal, device code): what the two decode split kernels share — the CUDA-core kernel of decode.cu
// and the tensor-core kernel of decode_mma.cu: their argument block, the causal window of a row, the f32 conversions
// (cuda/convert.cuh, included here for them and merge.cu), the programmatic launch's wait, and the launcher of the
// tensor-core kernel (decode.cu's host code chooses between them and runs the one merge kernel after either).
// Both write the same partials ([B, Hq, Sq, grid_splits] rows of normalised f32 O and LSE without the sink), so the
// merge kernel and the split rule (decode_split.hpp) serve both.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/convert.cuh"

namespace smk::cuda {

struct DecodeArgs {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;  // null: not wanted
  const std::int32_t* seqlens;
  const float* sinks;  // null: none
  std::int64_t qs[4], os[4], ls[3];  // strides (elements) of q, out, lse
  std::int64_t ks[3], vs[3];         // strides of the caches' dims 0..2 (the head dimension is contiguous)
  std::int64_t seqlen_stride, sink_stride;
  std::int64_t s_max;
  int sq, hq, group, rows, row_chunks;
  int max_splits;   // the split rule's cap on this device (decode_split.hpp)
  int min_chunk;    // the split rule's shortest chunk: kDecodeMinChunk unless DecodeConfig::min_chunk says otherwise
  int grid_splits;  // the grid's extent: the partials' row pitch
  float scale;
  float scale_log2;  // |scale|·log2(e), rounded once from double (the tensor-core kernel; q is negated for scale < 0)
  bool causal;
  float* part_o;    // [B, Hq, Sq, grid_splits, D] f32, normalised; null when no sequence can have two splits
  float* part_lse;  // [B, Hq, Sq, grid_splits]
  // The tensor-core kernel's atomic merge (DecodeMerge::fused): [B, Hkv, row_chunks] arrival counts, zero at the
  // launch; the last split block of each (sequence, KV head, row chunk) to arrive folds the splits and sets its count
  // back to zero, so a buffer kept for the next call on the same stream needs no memset (decode.cu: counter_buffer;
  // else they are in the call's workspace, zeroed by a memset). Null: the merge kernel does, or the cluster merge
  // (which needs no partials in global memory and no counter: part_o is null too).
  int* counters;
  // Launched as a programmatic dependent of the kernel before it (DecodeConfig::pdl): wait for it before any load.
  bool pdl;
};

// Keys a row sees: all of [0, len), or with causal the first len − Sq + tok + 1 (bottom-right diagonal).
__device__ __forceinline__ int visible_end(const DecodeArgs& a, int len, int tok) {
  if (!a.causal) return len;
  const int e = len - a.sq + tok + 1;
  return e < 0 ? 0 : (e > len ? len : e);
}

// Programmatic dependent launch (sm_90+, PTX griddepcontrol): a grid launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it on the stream drains; this
// waits until that kernel has completed and its writes are visible. Every global load of the split kernel (seqlens, q,
// the caches, the sinks) comes after it: any of them may be the previous kernel's output. The kernel runs it only
// when launched so (DecodeArgs::pdl).
__device__ __forceinline__ void decode_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Query rows per block of the tensor-core kernel: the N = 8 of the m16n8k16 product O^T = V^T·P^T.
inline constexpr int kDecodeMmaRows = 8;

// Shared memory a spread launch asks for, used or not: more than half a multiprocessor's (228 KB on the H200, less 1 KB
// reserved per block), so one block holds an SM. Why: a cluster's blocks are placed within one GPC, as densely as
// their resources allow; the kernel's own 64 KB let three share an SM, so 8 clusters of 16 (the single-sequence rows
// at 8 KV heads) sat on ~45 of 132 SMs — round 3 measured clusters of 16 at 169.1 against 144.0 µs for the fused merge
// at (1, 131072). One block an SM spreads each cluster over 16 SMs of its GPC (where the device runs that many at once:
// decode_mma_active_clusters). Measured (H200, run of e84495d): the device runs 7 such clusters at once (21 packed):
// fewer than the 8 the single-sequence rows need, so the dispatcher does not spread (kDecodeSpreadCluster).
inline constexpr std::size_t kDecodeSpreadSmem = 116 * 1024;

// decode_mma.cu: the tensor-core split kernel for 16-bit T (bf16 when `bf16`), head dimension d (64 or 128),
// `stages` ring stages per warp (2 or 3). Grid as decode.cu's: (grid_splits · row_chunks, Hkv, B). cluster > 0: the
// splits of each (sequence, KV head, row chunk) run as one thread-block cluster of `cluster` = grid_splits blocks and
// merge through distributed shared memory (only where decode_mma_active_clusters says the device runs that size).
// spread: one block an SM (kDecodeSpreadSmem). device: the current device (the kernel's attributes are set once per
// device, each to what its launches ask: the spread bytes only once a spread launch or query needs them). pdl: a
// programmatic dependent launch (only where the device is sm_90+; decode_pdl_wait in the kernel). tma (session 10):
// K and V tiles by the tensor memory accelerator (2 stages, sm_90+, where the driver encodes the caches' tensor maps:
// `batch` sequences, `hkv` KV heads), else by cp.async; returns whether the TMA kernel was launched.
bool launch_decode_mma(const DecodeArgs& a, bool bf16, int d, int stages, dim3 grid, int cluster, bool spread,
                       int device, bool pdl, cudaStream_t s, bool tma, std::int64_t batch, std::int64_t hkv);
// How many clusters of that size (and spread) the device runs at once: 0 where it runs none, has no clusters, or
// (spread) cannot give one block kDecodeSpreadSmem bytes of shared memory (sm_86/89 allow 99 KB a block).
int decode_mma_active_clusters(int device, bool bf16, int d, int stages, int cluster, bool spread);

}  // namespace smk::cuda
