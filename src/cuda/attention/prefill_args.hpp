// softmaxkit (internal): the arguments both prefill kernels take (src/cuda/attention/prefill.cu, mma.sync, and
// prefill_wgmma.cu, wgmma), filled once by attention_forward in prefill.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace smk::cuda {

struct PrefillArgs {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;            // null: not wanted
  const float* sinks;    // null: none
  std::int64_t sinks_stride;
  const int* cu_q;       // varlen cumulative offsets (device), or null
  const int* cu_k;
  // Element strides of (batch, sequence, head); the head dimension is contiguous. Varlen: batch strides are 0 and
  // rows are addressed from the sequence's cumulative offset.
  std::int64_t q_b, q_s, q_h, k_b, k_s, k_h, v_b, v_s, v_h, o_b, o_s, o_h;
  std::int64_t lse_b, lse_h, lse_s;
  std::int64_t sq, sk;   // per-sequence lengths (not varlen)
  int group;             // Hq / Hkv
  int causal;
  float scale_log2;      // softmax scale · log2(e), finite (attention_forward checks)
  int fold;              // 1: p = 2^(s·scale_log2 − m) as one FFMA, the max on raw scores (needs scale_log2 > 0)
  int o_smem;            // 1: O through shared memory, 16-byte stores (mma.sync kernel only)
  int skip_rescale;      // 1: skip O's rescale when no row maximum of the 16-row tile moved
};

// The wgmma kernel (prefill_wgmma.cu) for head dimension d (64 or 128), `warps` 4 or 8 (one or two consumer
// warpgroups of 64 query rows) or 9 (two, and a producer warpgroup: TMA only) and key tiles of block_n (64 or 128), f16
// (bf16 = false) or bf16; false if that combination is not built. Needs an sm_90a build and a compute-capability
// 9.0 device (prefill_wgmma_available).
// tma: Q, K and V by the tensor memory accelerator (not for varlen: false then) instead of every thread's cp.async.
bool prefill_wgmma_launch(bool bf16, int d, int warps, int block_n, bool tma, const PrefillArgs& a,
                          std::int64_t batch, std::int64_t hq, std::int64_t max_sq, cudaStream_t stream);
// True when this build holds the sm_90a code of the wgmma kernel and `device` is compute capability 9.0.
bool prefill_wgmma_available(int device);

}  // namespace smk::cuda
