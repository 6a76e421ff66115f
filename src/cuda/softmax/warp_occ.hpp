// softmaxkit (internal, host side; short14, session 14; 16-bit softmax: short15, session 15; the 16-bit log ops:
// short16, session 16): warp_per_row's dense forward rows at torch.compile's occupancy (warp_row.cu
// warp_rows_occ_kernel: blocks of 64 threads, one row group a warp; f32 24 blocks an SM at 16 elements a lane, 16 at
// 32; 16-bit softmax 20 at 32; the 16-bit log ops on warp_rows_packed_kernel at those blocks and grid, 24 at 32),
// beside the general kernel whose outputs it reproduces bit for bit. Its own header, not kernels.hpp: fifteen .cu
// files include that one.
#pragma once

#include <atomic>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// Tests and timing (process-wide, not thread-safe): blocks ≥ 0 replaces the dispatcher's choice (softmax_cuda.cpp
// warp_occ_rule) on every dispatched forward warp_per_row call: 0 the kernels before, > 0 the occupancy kernel at that
// many blocks an SM where it is built. -1 leaves the dispatcher's.
struct WarpOccTuning {
  int blocks = -1;
};
WarpOccTuning& warp_occ_tuning();
inline int warp_occ_blocks(int rule_blocks) {
  return warp_occ_tuning().blocks >= 0 ? warp_occ_tuning().blocks : rule_blocks;
}

// The last forward warp_per_row launch's occupancy kernel: its blocks an SM, 0 where another kernel served it.
struct WarpOccLast {
  std::atomic<int> blocks{0};
};
WarpOccLast& warp_occ_last();

// Whether the occupancy kernel is built for input dtype t, `blocks` blocks an SM and E = elems for the op (warp_row.cu
// occ_built: f32 E16 at 24, f32 E32 softmax at 16; short15: 16-bit E32 softmax at 20; short16: 16-bit E32 log ops at
// 24).
bool warp_occ_built(DType t, int elems, int blocks, Op op);

// Launches p on the occupancy kernel at `blocks` blocks an SM where it is built and p's rows are dense for c
// (packed_rule.hpp row_dense: outputs in the input dtype; 16-bit softmax also on two lanes or more, where
// warp_rows_kernel takes the tier's terms); returns false, launching nothing, where not (the caller then
// takes launch_warp_rows: the same bits). WarpRowTuning's grid and max_blocks apply as in launch_warp_rows (tests).
bool launch_warp_rows_occ(const RowProblem& p, WarpConfig c, int blocks, cudaStream_t s);

}  // namespace smk::cuda::kernels
