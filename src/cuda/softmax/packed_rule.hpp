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
// One test for all of them (rows_dense): rows dense for `lanes` lanes of `elems` elements with whole 16-byte vectors a
// lane, one row dimension, unit steps, 16-byte aligned base pointers and row strides for x, dy (backward ops) and the
// output (ops that write rows, in x's dtype), no temperature and no mask. packed_dense, row_dense and warp_backward.hpp's
// backward_dense_f32 narrow it by dtype and op.
inline bool rows_dense(const RowProblem& p, int lanes, int elems) {
  auto dense_slot = [&](int slot, const void* base) {
    const auto size = static_cast<std::int64_t>(dtype_size(p.x_dtype));
    return p.step[slot] == 1 && reinterpret_cast<std::uintptr_t>(base) % 16 == 0 &&
           p.map.stride[slot][0] * size % 16 == 0;
  };
  const bool bwd = p.op == Op::softmax_backward || p.op == Op::log_softmax_backward;
  if (elems * static_cast<std::int64_t>(dtype_size(p.x_dtype)) % 16 != 0) return false;
  if (p.n != std::int64_t{lanes} * elems || p.map.rank != 1 || p.scale || p.has_mask) return false;
  if (!dense_slot(kX, p.x) || (bwd && !dense_slot(kDy, p.dy))) return false;
  return !writes_rows(p.op) || (p.out_dtype == p.x_dtype && dense_slot(kOut, p.out));
}

// The packed 16-bit kernels (short10), forward and backward.
inline bool packed_dense(const RowProblem& p, int lanes, int elems) {
  return dtype_size(p.x_dtype) == 2 && rows_dense(p, lanes, elems);
}

// warp_rows_dense_kernel (short11): forward ops only.
inline bool row_dense(const RowProblem& p, int lanes, int elems) {
  return p.op != Op::softmax_backward && p.op != Op::log_softmax_backward && rows_dense(p, lanes, elems);
}

}  // namespace smk::cuda::kernels
