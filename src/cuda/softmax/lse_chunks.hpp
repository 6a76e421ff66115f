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

// lse18 (session 18): the forms of a call, each the same bits (tested bitwise): kLseFormBlockMerge two launches, the
// chunk kernel and session 17's merge kernel (a 512-thread block a row); kLseFormWarpMerge two launches, rows of ≤ 32
// chunks merged a warp a row; kLseFormCluster one launch (a cluster of the row's chunks, the states merged in block 0)
// where the call's rows have ≤ 16 chunks, run at 128 threads a chunk, are 16-bit and all fit the device at once, else
// kLseFormWarpMerge's two launches. The library's: kLseFormCluster (lse_stream.cu has the times: 1×151936 bf16
// logsumexp 0.74-0.79 of session 17's two launches, 32×128256 0.84-0.88, 1024×65536 0.909, 4096×151936 0.929).
constexpr int kLseFormBlockMerge = 0;
constexpr int kLseFormWarpMerge = 1;
constexpr int kLseFormCluster = 2;
constexpr int kLseChunksForm = kLseFormCluster;
// The form launch_lse_chunk_rows takes: -1 kLseChunksForm, else that form (tests and timing; process-wide).
int& lse_chunks_form_setting();
// Calls served by the one-launch form, and by the warp merge, since the process started (tests: which form served).
std::uint64_t lse_chunks_cluster_launch_count();
std::uint64_t lse_chunks_warp_merge_launch_count();

}  // namespace smk::cuda::kernels
