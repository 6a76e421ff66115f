// softmaxkit (internal, host side): reg21 (session 20, issue 3): f32's plain-form rows of at most 4096 on lse_stream's
// T128 configuration run lse_block_kernel built for 1536 threads an SM (40 registers) instead of 1024 (lse_stream.cu
// kLseF32T128WideOccMaxN has the measurement); its tuning switch and launch count, for tests and timing
// (test_lse_stream_gpu.cpp; 85cae7c's tune_reg20.cpp timed it, with an attributes query removed since). In its own
// header, not kernels.hpp (lse_chunks.hpp's reason).
#pragma once

#include <cstdint>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// launch_lse_stream_rows' choice for f32's plain form at T128 and n ≤ 4096: the 1536 kernel (true, the library's
// choice) or always the 1024 one (false; the same bits). For tests and timing only; process-wide, not thread-safe.
bool& lse_stream_wide_occ();
// The 1536 kernel's launches since the process started (tests: that it served a call).
std::uint64_t lse_stream_wide_occ_launch_count();

}  // namespace smk::cuda::kernels
