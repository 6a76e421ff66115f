// softmaxkit (internal, host side): lse19's switches for lse_stream.cu's row kernels (lse_block_kernel, lse_warp_kernel),
// in a header of their own (read by lse_stream.cu, tune_softmax.cpp and test_lse_stream_gpu.cpp only), as
// split_row_tuning.hpp. Every form gives the default form's bits (the same elements in the same chunks, the same
// pushes and merges): what changes is how the loads are issued and how many instructions an element costs.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace smk::cuda::kernels {

// Form bits (lse19, session 19, issue 3), for the plain form (aligned unit-stride rows, no transform) of f32 and bf16
// inputs; the general form and f16 keep form 0.
//   kLseFormPipe: the next chunk's kUnroll vectors loaded before the current chunk is pushed, across rows too (a
//     block's next row's first chunk is in flight during this row's tail and merge); at 768 threads an SM (80
//     registers) where the default form runs 1024 at 64.
//   kLseFormNc: the vector loads as ld.global.nc.L1::no_allocate.L2::256B.
//   kLseFormLean: bf16 scores widened from their 32-bit words by a shift and a mask (2 lane-instructions a pair where
//     __bfloat162float's high half takes a PRMT and an IMAD.U32), and a chunk's ties counted by SEL and IADD3 pairs.
constexpr int kLseFormPipe = 1;
constexpr int kLseFormNc = 2;
constexpr int kLseFormLean = 4;

struct LseStreamTuning {
  int form = 0;           // an OR of the bits above; 0 the library's kernels
  int blocks_per_sm = 0;  // 0: a block a row (group) as the library launches; > 0: a grid of that many an SM at most;
                          // < 0: at most −blocks_per_sm blocks in all (tests: every block walks many rows)
};
// Process-wide, not thread-safe: set it before the calls (tune_softmax --lse19, the lse19 tests).
LseStreamTuning& lse_stream_tuning();

// The read probe (lse19): `bytes` (a multiple of 16, 16-byte aligned) of x read by ld.global.nc 16-byte vectors, four
// a thread in flight, on `blocks_per_sm` blocks of 256 an SM; the words XOR-folded into a value written only if it
// equals a constant (so the loads stay). What a read-only pass with next to no arithmetic reaches at this size and with
// this launch: the ceiling the kernels above are measured against. bytes = 0 times the launch alone.
void launch_read_probe(const void* x, std::int64_t bytes, unsigned* sink, int blocks_per_sm, cudaStream_t s);

}  // namespace smk::cuda::kernels
