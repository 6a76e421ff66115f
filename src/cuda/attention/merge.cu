// softmaxkit: merge_attention_states on the GPU — (O_a, LSE_a) ⊕ (O_b, LSE_b) in the online state's algebra.
//
// Traffic per row of D elements: read 2·D·s + 8 bytes, write D·s + 4 (s = 2 for bf16/f16, 4 for f32); 3 bytes of
// the element type per output element, so the floor at the H200's 4.27 TB/s copy bandwidth is 3·N·D·s / 4.27e12 s.
// One warp per row: the row's offsets and its two weights are computed once per warp, each lane then streams
// elements lane, lane + 32, ... Not yet measured on the H200 for speed (see docs/perf-notebook.md).
// Session 6 (dec5): the f32 conversions now come from decode_common.cuh (one copy for the decode kernels and this
// one); the kernel is unchanged.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/decode_common.cuh"
#include "cuda/attention/lse_fold.cuh"
#include "cuda/device_guard.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

constexpr int kMaxRank = TensorView::kMaxRank;

// Shapes and strides of the six views, passed by value to the kernel.
struct MergeArgs {
  void* out_o;
  float* out_lse;
  const void* o_a;
  const float* lse_a;
  const void* o_b;
  const float* lse_b;
  int lead_rank;                   // o's rank − 1: the dimensions that index rows
  std::int64_t shape[kMaxRank];    // o's leading shape
  std::int64_t so[3][kMaxRank];    // strides of out_o, o_a, o_b (leading dims)
  std::int64_t sl[3][kMaxRank];    // strides of out_lse, lse_a, lse_b
  std::int64_t so_last[3];         // last-dim strides of out_o, o_a, o_b
  std::int64_t rows, d;
};

// to_f32, from_f32: decode_common.cuh.

template <typename T>
__global__ void merge_kernel(MergeArgs a) {
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x % 32;
  for (std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32; row < a.rows;
       row += warps) {
    std::int64_t off_o[3] = {0, 0, 0}, off_l[3] = {0, 0, 0};
    std::int64_t r = row;
    for (int dim = a.lead_rank - 1; dim >= 0; --dim) {
      const std::int64_t i = r % a.shape[dim];
      r /= a.shape[dim];
      for (int t = 0; t < 3; ++t) {
        off_o[t] += i * a.so[t][dim];
        off_l[t] += i * a.sl[t][dim];
      }
    }
    // Read both LSEs before any write: out may alias an input exactly. The parts fold in the order a, b through
    // lse_fold.cuh, the fold attention_decode runs over its splits.
    PartFold fold;
    const auto wa = fold.add(OnlineSoftmaxState<float>::from_lse(a.lse_a[off_l[1]]));
    const auto wb = fold.add(OnlineSoftmaxState<float>::from_lse(a.lse_b[off_l[2]]));
    const float inv = fold.inv_sum();  // 1/l; 0 when both parts are empty (O = 0); NaN for a NaN or +inf part
    const T* oa = static_cast<const T*>(a.o_a) + off_o[1];
    const T* ob = static_cast<const T*>(a.o_b) + off_o[2];
    T* oo = static_cast<T*>(a.out_o) + off_o[0];
    for (std::int64_t x = lane; x < a.d; x += 32) {
      // An empty side (LSE −inf) is skipped, so whatever its O holds cannot make NaN; a side with terms is added even
      // where its weight underflows to 0 (its NaN or inf O stays in, as on the CPU).
      const float acc = PartFold::combine(0.0f, to_f32(oa[x * a.so_last[1]]), wa);
      oo[x * a.so_last[0]] = from_f32<T>(PartFold::combine(acc, to_f32(ob[x * a.so_last[2]]), wb) * inv);
    }
    __syncwarp();  // every lane has read this row's LSEs before lane 0 may overwrite an aliased one
    if (lane == 0) a.out_lse[off_l[0]] = fold.lse();
  }
}

}  // namespace

void merge_attention_states(std::int64_t rows, const TensorView& out_o, const TensorView& out_lse,
                            const TensorView& o_a, const TensorView& lse_a, const TensorView& o_b,
                            const TensorView& lse_b, Stream stream) {
  if (rows == 0) return;
  MergeArgs a{};
  a.out_o = out_o.data;
  a.out_lse = static_cast<float*>(out_lse.data);
  a.o_a = o_a.data;
  a.lse_a = static_cast<const float*>(lse_a.data);
  a.o_b = o_b.data;
  a.lse_b = static_cast<const float*>(lse_b.data);
  a.lead_rank = o_a.rank - 1;
  const TensorView* os[3] = {&out_o, &o_a, &o_b};
  const TensorView* ls[3] = {&out_lse, &lse_a, &lse_b};
  for (int dim = 0; dim < a.lead_rank; ++dim) {
    a.shape[dim] = o_a.shape[dim];
    for (int t = 0; t < 3; ++t) {
      a.so[t][dim] = os[t]->strides[dim];
      a.sl[t][dim] = ls[t]->strides[dim];
    }
  }
  for (int t = 0; t < 3; ++t) a.so_last[t] = os[t]->strides[o_a.rank - 1];
  a.rows = rows;
  a.d = o_a.shape[o_a.rank - 1];
  DeviceGuard guard(o_a.device.index);
  constexpr int kThreads = 256;  // 8 rows per block
  const std::int64_t blocks = (rows + kThreads / 32 - 1) / (kThreads / 32);
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 64 ? blocks : 65535 * 64);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  switch (o_a.dtype) {
    case DType::f32: merge_kernel<float><<<grid, kThreads, 0, s>>>(a); break;
    case DType::f16: merge_kernel<__half><<<grid, kThreads, 0, s>>>(a); break;
    case DType::bf16: merge_kernel<__nv_bfloat16><<<grid, kThreads, 0, s>>>(a); break;
    default: break;  // validation admits only these three on a GPU
  }
  SMK_CUDA_CHECK_LAUNCH("merge_kernel");
}

}  // namespace smk::cuda
