// softmaxkit (internal, host side): split_row.cu's process-wide switches and counter for timing and tests
// (tune_softmax.cpp, test_few_rows_gpu.cpp), defined in split_row.cu. Their own header, not kernels.hpp, which two
// dozen objects include; one declaration for every file that reads them (session 12's review, F15: each file had
// declared them itself). Not synchronised: set a switch before the calls it should steer.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>  // cudaStream_t (split18)

namespace smk::cuda::kernels {

// one12 (session 12): the compact chunk kernel's L2 prefetch distance (split_row.cu l2_ahead: > 0 that many chunks,
// −w w waves of the kernel's resident blocks, 0 none; the library's 132, kSplitChunkL2Ahead).
int& split_row_chunk_l2_ahead();
// one12: the merge kernel's preloading of a thread's states (merge_chunk_states_preloaded; 1 the library's, 0 the
// loop before). The same values either way, as with the prefetch.
int& split_row_merge_preload();
// split15 (session 15): the chunk arithmetic of the compact chunk kernels (plain and staged) and of split_stream's
// f32 log-softmax items: 1 chunk_state's lean form (chunk_states.cuh kLean) on every call those kernels build it for
// (split_stream's softmax and 16-bit items have no lean form), 0 the form before, -1 the library's rule (split_row.cu
// chunk_lean: f32 log ops only); the same state either way.
int& split_row_chunk_lean();
// The compact kernels' launches (chunk_states_plain_kernel, normalize_plain_kernel) by the three-kernel path since the
// process started: 2 a softmax / log-softmax call, 1 a logsumexp.
std::uint64_t split_plain_launch_count();

// tma14 (session 14): the compact chunk kernel with its chunks staged in shared memory by bulk copies, on a persistent
// grid (chunk_tma.cuh chunk_states_tma_kernel; the same bits as chunk_states_plain_kernel). stages: the chunk buffers a
// block keeps, f32 and 16-bit inputs apart: > 0 that many on every call the compact kernels serve (at most
// kChunkTmaMaxStages), 0 never (the kernel before, one block a chunk), -1 the library's rule (split_row.cu
// chunk_tma_rule: kChunkTmaStages on logsumexp / state calls of at least min_chunks chunks, -1 there being
// kChunkTmaMinChunksF32 / kChunkTmaMinChunks16).
// ahead: the kernel's L2 prefetch distance (> 0 chunks; −w w grids past the last chunk a block has staged, idx +
// stages·grid, as split15 corrected it: tma14's −w counted from idx, so −1 fetched a chunk already staged; 0 none).
// max_blocks (tests): caps the grid so that small cases give a block many chunks.
struct ChunkTmaTuning {
  int stages_f32 = -1, stages_16 = -1;
  std::int64_t min_chunks = -1;
  int ahead = 0;
  int max_blocks = 0;
};
ChunkTmaTuning& split_row_chunk_tma();
// split16 (session 16): the compact f32 normalising kernel in whole tiles (split_row.cu normalize_plain_kernel
// kWholeF32: a chunk's 24 values a thread loaded at once, before the dependency wait, as 16-bit chunks are) or in
// 32-byte sub-tiles (the kernel before): 1 whole, 0 sub-tiles, -1 the library's rule (kNormalizeWholeF32). The same
// values and arithmetic either way (the pass is elementwise).
int& split_row_normalize_whole();
// chunk_states_tma_kernel's launches since the process started (tests: that it served).
std::uint64_t split_chunk_tma_launch_count();

struct RowProblem;
// split18 (session 18): 16-bit softmax / log-softmax on split_row's three kernels with the chunk pass on a running
// state a thread (split_row.cu chunk_states_running_kernel at kRunThreads = 64 a chunk: a new summation order; the
// merge and normalising kernels split_row's), whatever the call's size; throws Error(unsupported) for f32 inputs and
// other ops.
void launch_split_running_rows(const RowProblem& p, cudaStream_t s);
// Its chunk kernel's launches since the process started (tests: that it served).
std::uint64_t split_running_launch_count();
// The dispatcher's use of it (softmax_cuda.cpp split_running_takes): -1 the library's rule (automatic path, 16-bit
// inputs and outputs, rows past kSplitRunningMinChunks chunks), 0 never, 1 every 16-bit softmax / log-softmax call on
// split_row, forced ones and f32 outputs included (tests: short rows under the sanitizers, the order's error on f32
// outputs). Read at each call.
int& split_row_running();

// few19 (session 19): split_row's one launch at several chunks a block (split_row.cu cluster_multi_kernel: a cluster of
// ⌈chunks / k⌉ blocks a row, each block's k chunks staged in its shared memory by bulk copies; bitwise the three
// kernels): -1 the library's rule (split_row.cu launch_multi: two chunks a block where the one-chunk kernel does not
// fit one wave and these clusters do; 16-bit softmax / log-softmax and f32 log-softmax), 0 never, k > 0 (≤ 4) k chunks
// a block on every softmax / log-softmax common call it can take (before the one-chunk kernel, whatever the call's
// size). Read at each call.
int& split_row_multi();
// Its launches since the process started (tests: that it served).
std::uint64_t split_multi_launch_count();
// The clusters of `blocks` blocks at `per` chunks a block the current device runs at once (f32, or 16-bit inputs).
int split_row_multi_active_clusters(bool sixteen_bit, int per, int blocks);

}  // namespace smk::cuda::kernels
