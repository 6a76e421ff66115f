// softmaxkit: the host side of the attention kernels' TMA copies (prefill_wgmma.cu, decode_mma.cu): the driver's
// tensor-map encoder and one map over a [B, S, H, D] view. Host code only; nothing here runs on the device.
#pragma once

#include <cuda_runtime.h>
#include <cudaTypedefs.h>  // CUtensorMap and the encoder's type (header only: no libcuda link)

#include <cstdint>

namespace smk::cuda {

// The driver's tensor-map encoder, reached through the runtime (cudaGetDriverEntryPointByVersion: nothing links
// libcuda); null on a driver without it (older than CUDA 12.0), and every caller then takes its cp.async path.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      f = nullptr;
      (void)cudaGetLastError();  // not left for the next launch check to report
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// One tensor map over a 16-bit [B, S, H, D] view (element strides stride_b, stride_s, stride_h; D contiguous) with
// boxes of 64 columns × 1 head × `rows` rows × 1 batch entry, 128-byte swizzle, zeros outside the view. False where
// there is no encoder or the driver refuses the view (a stride of 0, a base off the 16-byte grid, a stride that is
// not a multiple of 16 bytes, ...): the caller then takes its cp.async path, which reads any such view.
inline bool encode_bshd(CUtensorMap* map, const void* base, bool bf16, std::int64_t batch, std::int64_t seq,
                        std::int64_t heads, int d, std::int64_t stride_b, std::int64_t stride_s, std::int64_t stride_h,
                        int rows) {
  if (tensor_map_encoder() == nullptr) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(seq), static_cast<cuuint64_t>(batch)};
  // Byte strides of dims 1..3; an extent-1 dimension may have any stride in the view, which TMA would refuse
  // unless it is a multiple of 16: its stride is never used, so the packed one stands in.
  constexpr std::int64_t es = 2;
  const std::int64_t sh = heads > 1 ? stride_h * es : d * es;
  const std::int64_t ss = seq > 1 ? stride_s * es : sh * heads;
  const std::int64_t sb = batch > 1 ? stride_b * es : ss * seq;
  if (sh <= 0 || ss <= 0 || sb <= 0) return false;
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(sh), static_cast<cuuint64_t>(ss),
                                 static_cast<cuuint64_t>(sb)};
  const cuuint32_t box[4] = {64, 1, static_cast<cuuint32_t>(rows), 1};
  const cuuint32_t elem[4] = {1, 1, 1, 1};
  const CUresult r = tensor_map_encoder()(
      map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, const_cast<void*>(base), dims,
      strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

}  // namespace smk::cuda
