// softmaxkit (internal, device code): split_row's compact chunk kernel (split_row.cu chunk_states_plain_kernel) on a
// persistent grid whose blocks reduce chunk i from shared memory while their next chunks land there by the Hopper bulk
// copy (tma14, session 14; docs/perf-notebook.md "tma14").
//
// Why: one12's Nsight Compute of chunk_states_plain_kernel (1×16777216, one block a chunk, two 512-thread blocks an
// SM): DRAM 37-58 %, SM issue 53-55 %; each block loads its chunk (48 KB f32 / 24 KB bf16), then reduces it through
// two block barriers with nothing in flight, and the two blocks of an SM start together, so they load together and
// reduce together. one11's persistent kernel that loaded its next chunk into registers fell to one block an SM (the
// registers) and lost everywhere. Here the next chunks wait in shared memory, not registers: each block keeps
// `stages` buffers of one chunk (f32 48 KB, 16-bit 24 KB), so at two stages an SM holds two blocks (f32 2 × 96 KB of
// its 228 KB; the registers, 64 a thread at 2 × 512 threads, are the other bound), each with one chunk landing while
// it reduces another.
//
// Traffic: as chunk_states_plain_kernel's, each input element read once from DRAM (4 B f32, 2 B 16-bit), a state (8 B)
// written a chunk; the smem round trip adds no DRAM bytes. Floor at 1×16777216 (the H200's 4.27 TB/s copy rate taken as
// the read ceiling): f32 67.1 MB 15.7 µs, bf16 33.6 MB 7.9 µs; the kernel before ran 25.4 / 19.4 µs alone (one12).
//
// Same bits as chunk_states_plain_kernel: a chunk's elements reach the same registers with the same values (thread g's
// vector k is element (k·512 + g)·V of the chunk, PlainTile's map; a bulk copy moves the chunk's whole 16-byte vectors
// and the last chunk's partial vector, if any, is read from global memory as PlainTile::load reads it), then the same
// chunk_state<kLog, Out>, written to states[idx] for the same idx. The merge and the normalising kernels are
// unchanged. Only the common call (16-byte-aligned unit-stride rows) comes here, which is what a bulk copy needs.
//
// Pipeline (one block): thread 0 initialises one mbarrier a stage and issues the block's first `stages` chunks (the
// block's chunks are idx = blockIdx.x + j·gridDim.x, j = 0, 1, …; chunk j lands in stage j % stages and completes phase
// j / stages of its barrier). For each chunk every thread waits for its stage's phase, reads its vectors into
// registers, and runs chunk_state (its after_max hook), whose first block barrier (the block max) comes after every thread's reads;
// behind it thread 0 refills that stage with chunk j + stages, then the block sums; thread 0 writes the state. So no
// copy writes a stage while a thread still reads it, and no thread waits for a phase more than one ahead of the last
// one it saw complete (ptx.cuh mbar_wait's rule).
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::kernels {

// The most stages a block may keep (the kernel's mbarrier array; f32 4 × 48 KB = 192 KB, under the H200's 227 KB a
// block).
constexpr int kChunkTmaMaxStages = 4;
// The kernel's static shared memory, bounded (split15, session 14's review F8: was an unnamed `+ 1024` in the launcher's
// check against the device's opt-in limit): ChunkScratch and the stages' mbarriers, 416 bytes, under a 1 KB margin.
constexpr std::size_t kChunkTmaStaticSmem = 1024;

static_assert(sizeof(ChunkScratch) + kChunkTmaMaxStages * sizeof(std::uint64_t) <= kChunkTmaStaticSmem,
              "chunk_states_tma_kernel's static shared memory past its bound");

// Shared-memory bytes of one stage: one chunk of the input type.
template <typename In>
constexpr std::size_t chunk_tma_stage_bytes() {
  return static_cast<std::size_t>(kSplitChunk) * sizeof(In);
}

// Issued by one thread: the whole 16-byte vectors of chunk `idx` (row idx / chunks, chunk idx % chunks) into `stage`,
// completing on `bar` (one arrival with its bytes; a chunk shorter than one vector arrives with 0 bytes, so the phase
// still completes). idx past the call's chunks issues nothing: no thread waits for that phase.
template <typename In>
__device__ __forceinline__ void chunk_tma_issue(In* stage, std::uint64_t* bar, const RowProblem& p, std::int64_t idx,
                                                std::int64_t chunks, std::int64_t total, bool narrow) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (idx >= total) return;
  std::int64_t row, c;
  split_chunk_index(idx, chunks, narrow, row, c);
  const In* x = at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c);
  const std::uint32_t bytes = static_cast<std::uint32_t>(chunk_len(p.n, c)) * sizeof(In) / 16u * 16u;
  (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                               ::cuda::ptx::space_shared, bar, bytes);
  if (bytes > 0)
    ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage, x, bytes, bar);
#else
  (void)stage, (void)bar, (void)p, (void)idx, (void)chunks, (void)total, (void)narrow;
#endif
}

// The chunk kernel with its chunks staged by bulk copies. `stages` (1 … kChunkTmaMaxStages) buffers of
// chunk_tma_stage_bytes<In>() in the dynamic shared memory; a persistent grid (any grid of ≥ 1 block is correct).
// ahead: as chunk_states_plain_kernel's L2 prefetch (0 none): chunk idx + ahead. The launcher counts a distance of
// −w (ChunkTmaTuning::ahead) in grids past the last chunk this iteration stages, idx + stages·grid (split15, session
// 14's review F5: tma14 prefetched idx + w·grid, which at w = 1 with ≥ 2 stages is a chunk a bulk copy already
// fetches).
// kLean: chunk_state's lean arithmetic (split15; the same state).
template <typename In, typename Out, bool kLog, bool kLean = false>
__global__ void __launch_bounds__(kSplitThreads, 2)
    chunk_states_tma_kernel(const RowProblem p, std::int64_t chunks, ChunkState* states, int stages,
                            std::int64_t ahead) {
  extern __shared__ __align__(128) unsigned char chunk_tma_smem[];
  __shared__ ChunkScratch scratch;
  __shared__ std::uint64_t bar[kChunkTmaMaxStages];
  In* const stage0 = reinterpret_cast<In*>(chunk_tma_smem);
  pdl_launch_dependents();  // as chunk_states_plain_kernel
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) ::cuda::ptx::mbarrier_init(&bar[s], 1);
    // The initialised barriers visible to the bulk copies (the async proxy) before any is issued.
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
    for (int s = 0; s < stages; ++s)
      chunk_tma_issue<In>(stage0 + s * kSplitChunk, &bar[s], p, blockIdx.x + std::int64_t{s} * gridDim.x, chunks,
                          total, narrow);
  }
  __syncthreads();  // the barriers initialised before any thread waits on them
  int s = 0;
  std::uint32_t parity = 0;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    std::int64_t row, c;
    split_chunk_index(idx, chunks, narrow, row, c);
    const In* x = at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c);
    In* const stage = stage0 + s * kSplitChunk;
    while (!::cuda::ptx::mbarrier_try_wait_parity(&bar[s], parity)) {
    }
    float v[kBlockElems];
    PlainTile<In>::load_staged(v, stage, x, chunk_len(p.n, c));
    if (ahead > 0 && threadIdx.x == 0) prefetch_chunk_l2<In>(p, idx + ahead, chunks, narrow);
    // The stage refilled with this block's chunk `stages` on once the block max is known: behind the block barrier
    // that follows every thread's reads of the stage (chunk_state's after_max), so that copy overlaps this chunk's sum.
    const ChunkState st = chunk_state<kLog, Out, kLean>(v, scratch, [&] {
      if (threadIdx.x == 0)
        chunk_tma_issue<In>(stage, &bar[s], p, idx + std::int64_t{stages} * gridDim.x, chunks, total, narrow);
    });
    if (threadIdx.x == 0) states[idx] = st;
    if (++s == stages) {
      s = 0;
      parity ^= 1u;
    }
  }
#else
  (void)stage0, (void)scratch, (void)bar, (void)states, (void)stages, (void)ahead, (void)narrow, (void)total;
#endif
}

}  // namespace smk::cuda::kernels
