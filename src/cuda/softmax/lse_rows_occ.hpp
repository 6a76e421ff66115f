// softmaxkit (internal, host side): reg21 (session 20, issue 3): f32's plain-form rows of at most 4096 on lse_stream's
// T128 configuration run lse_block_kernel built for 1536 threads an SM (40 registers) instead of 1024 (lse_stream.cu
// kLseF32T128WideOccMaxN has the measurement); its tuning switch, launch count and attributes, for tests and timing
// (test_lse_stream_gpu.cpp; 85cae7c's tune_reg20.cpp timed it). In its own header, not kernels.hpp (lse_chunks.hpp's
// reason).
#pragma once

#include <cstdint>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// launch_lse_stream_rows' choice for f32's plain form at T128 and n ≤ 4096: the 1536 kernel (true, the library's
// choice) or always the 1024 one (false; the same bits). For tests and timing only; process-wide, not thread-safe.
bool& lse_stream_wide_occ();
// The 1536 kernel's launches since the process started (tests: that it served a call).
std::uint64_t lse_stream_wide_occ_launch_count();
// The f32 plain-form T128 kernel at 1536 (wide) or 1024 threads an SM: registers, local (spill) bytes a thread, block
// size and resident blocks an SM on the current device (cudaFuncGetAttributes,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor), and the longest row the 1536 kernel takes.
struct LseRowOccAttrs {
  int regs = 0, local_bytes = 0, block = 0, blocks_per_sm = 0;
  std::int64_t max_n = 0;
};
LseRowOccAttrs lse_stream_f32_t128_attrs(bool wide);

}  // namespace smk::cuda::kernels
