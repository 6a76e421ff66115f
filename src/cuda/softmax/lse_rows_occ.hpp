// softmaxkit (internal, host side): reg20 (session 20, issue 3, the perf notebook's plan item 2): lse_stream's row
// kernels (lse_stream.cu lse_block_kernel T128, lse_warp_kernel L16; plain form only) built for more threads an SM
// than the library's (__launch_bounds__' minimum blocks, so ptxas' register cap: 1024 threads 64, 1152 56, 1280 48,
// 1536 40, 2048 32), the same code at fewer registers, for tune_reg20's timing. Not dispatched: the library's launches
// (launch_lse_stream_rows) take the kernels as before. In its own header, not kernels.hpp (lse_chunks.hpp's reason).
#pragma once

#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// The threads an SM built for dtype t and configuration c (lanes 16, or lanes 0 with threads 128), the library's first
// (1024: the shipped kernel itself); lse_stream.cu with_row_occ lists them with ptxas' registers and spills.
std::vector<int> lse_stream_row_occ_variants(DType t, LseStreamConfig c);
// Logsumexp or the state of p on c's kernel built for min_threads_per_sm. Launches nothing and returns false where
// that variant is not built, the op writes rows, or p is not the plain form (unit-stride 16-byte aligned rows, no
// temperature nor mask: lse_stream.cu lse_plain_call).
bool launch_lse_stream_rows_occ(const RowProblem& p, LseStreamConfig c, int min_threads_per_sm, cudaStream_t s);
// The built variant's registers, local (spill) bytes a thread, block size and resident blocks an SM on the current
// device (cudaFuncGetAttributes, cudaOccupancyMaxActiveBlocksPerMultiprocessor); false where it is not built.
struct LseRowOccAttrs {
  int regs = 0, local_bytes = 0, block = 0, blocks_per_sm = 0;
};
bool lse_stream_row_occ_attrs(DType t, LseStreamConfig c, int min_threads_per_sm, LseRowOccAttrs& a);

}  // namespace smk::cuda::kernels
