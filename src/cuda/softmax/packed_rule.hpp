// softmaxkit (internal, host side; short10, session 10): which warp_per_row problems the packed 16-bit kernels
// (packed16.cuh, WarpConfig::packed) serve. Plain C++, so that the dispatcher (softmax_cuda.cpp) can ask it too.
#pragma once

#include <cstdint>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// 16-bit rows that are dense for `lanes` lanes of `elems` elements (n = lanes · elems, so every lane's 16-byte vectors
// are whole), one row dimension, unit steps, 16-byte aligned base pointers and row strides, outputs in the input
// dtype, no temperature and no mask. The row's offset is then row · stride and every access a 16-byte vector: the
// registers a lane spends on anything but its row stay few (the general addressing, scalar tails and run-time output
// type took ~40 of them: ptxas, packed kernels at 6 blocks an SM spilled at E = 8). Anything else takes the unpacked
// kernels (the same bits).
inline bool packed_dense(const RowProblem& p, int lanes, int elems) {
  auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const bool bwd = p.op == Op::softmax_backward || p.op == Op::log_softmax_backward;
  if (dtype_size(p.x_dtype) != 2 || elems < 8 || p.n != std::int64_t{lanes} * elems || p.map.rank != 1) return false;
  if (p.scale || p.has_mask || p.step[kX] != 1 || !aligned(p.x) || p.map.stride[kX][0] % 8 != 0) return false;
  if (bwd && (p.step[kDy] != 1 || !aligned(p.dy) || p.map.stride[kDy][0] % 8 != 0)) return false;
  if (writes_rows(p.op) &&
      (p.out_dtype != p.x_dtype || p.step[kOut] != 1 || !aligned(p.out) || p.map.stride[kOut][0] % 8 != 0))
    return false;
  return true;
}

// short11 (session 11): the forward problems warp_rows_dense_kernel (warp_row.cu, WarpConfig::dense) serves: rows
// dense for `lanes` lanes of `elems` elements with whole 16-byte vectors a lane (f32 E ≥ 4, 16-bit E ≥ 8), one row
// dimension, unit steps, 16-byte aligned base pointers and row strides, outputs in the input dtype, no temperature and
// no mask: packed_dense's conditions for any input dtype, forward ops only.
inline bool row_dense(const RowProblem& p, int lanes, int elems) {
  auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const auto size = static_cast<std::int64_t>(dtype_size(p.x_dtype));
  if (p.op == Op::softmax_backward || p.op == Op::log_softmax_backward) return false;
  if (elems * size % 16 != 0 || p.n != std::int64_t{lanes} * elems || p.map.rank != 1) return false;
  if (p.scale || p.has_mask || p.step[kX] != 1 || !aligned(p.x) || p.map.stride[kX][0] * size % 16 != 0) return false;
  if (writes_rows(p.op) &&
      (p.out_dtype != p.x_dtype || p.step[kOut] != 1 || !aligned(p.out) || p.map.stride[kOut][0] * size % 16 != 0))
    return false;
  return true;
}

}  // namespace smk::cuda::kernels
