// softmaxkit (internal, host side): split_row.cu's process-wide switches and counter for timing and tests
// (tune_softmax.cpp, test_few_rows_gpu.cpp), defined in split_row.cu. Their own header, not kernels.hpp, which two
// dozen objects include; one declaration for every file that reads them (session 12's review, F15: each file had
// declared them itself). Not synchronised: set a switch before the calls it should steer.
#pragma once

#include <cstdint>

namespace smk::cuda::kernels {

// one12 (session 12): the compact chunk kernel's L2 prefetch distance (split_row.cu l2_ahead: > 0 that many chunks,
// −w w waves of the kernel's resident blocks, 0 none; the library's 132, kSplitChunkL2Ahead).
int& split_row_chunk_l2_ahead();
// one12: the merge kernel's preloading of a thread's states (merge_chunk_states_preloaded; 1 the library's, 0 the
// loop before). The same values either way, as with the prefetch.
int& split_row_merge_preload();
// The compact kernels' launches (chunk_states_plain_kernel, normalize_plain_kernel) by the three-kernel path since the
// process started: 2 a softmax / log-softmax call, 1 a logsumexp.
std::uint64_t split_plain_launch_count();

}  // namespace smk::cuda::kernels
