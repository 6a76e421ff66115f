// softmaxkit (internal, host side): lse17's launcher (lse_stream.cu lse_chunks_kernel), in its own header rather than
// kernels.hpp, which two dozen objects include (split_row_tuning.hpp's reason): read by softmax_cuda.cpp,
// tune_softmax.cpp and test_lse_stream_gpu.cpp.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/softmax/kernels.hpp"

namespace smk::cuda::kernels {

// lse17 (session 17): logsumexp and the state of rows cut into split_row's chunks (kSplitChunk elements), each chunk
// reduced by one block of `threads` (64 or 128) with lse_stream's running (m, ties, rest) a thread, the chunk states
// merged per row in split_row's merge order (chunk_states.cuh merge_chunk_states). Its results are a function of n and
// `threads` alone, not split_row's bits. Uses a stream-ordered workspace of rows · chunks states. Throws Error for
// softmax / log-softmax or another thread count.
void launch_lse_chunk_rows(const RowProblem& p, int threads, cudaStream_t s);
// Its calls since the process started (tests: that it served a call).
std::uint64_t lse_chunks_launch_count();
// The threads a chunk the dispatcher gives it (softmax_cuda.cpp): 0 the library's kLseChunkThreads, 64 or 128 that
// many (tests: both built forms through the public API). Process-wide, not thread-safe: set it before the calls.
int& lse_chunk_threads_setting();

}  // namespace smk::cuda::kernels
