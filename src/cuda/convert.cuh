// softmaxkit (internal, device code): f32 to and from the storage types, one copy for every kernel family (softmax,
// cross-entropy, decode, merge_attention_states). Stores round to nearest even, as the CPU's to_half / to_bfloat16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace smk::cuda {

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

}  // namespace smk::cuda
