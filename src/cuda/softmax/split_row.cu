// split_row: rows longer than kClusterAutoMaxN (softmax_cuda.cpp) in inputs too large for grid_row (grid_row.cu,
// which runs these same chunks and merge in one launch and gives bitwise the same outputs), or any row when forced.
// The chunk reduction, the merge and the normalisation are chunk_states.cuh's, shared with grid_row. Three kernels
// (or one, below):
//   1. chunk_states: the row is cut into chunks of kSplitChunk (12288) elements; one block reduces one chunk to its
//      online state (m, d) — the block max, then the count of scores equal to it and the block sum of the others'
//      exp(z − m);
//   2. merge_states: one block of 512 threads per row merges its chunk states with OnlineSoftmaxState::merge in a
//      fixed order (strided per thread, then a butterfly; 1024 threads before 2026-11-30), and writes the row state
//      (or, for logsumexp / state, the outputs);
//   3. normalize: re-reads each chunk and writes the outputs through the row's RowNormalizer. It walks the chunks
//      in the reverse of kernel 1's order, so the chunks kernel 1 read last are read again while still in L2.
// Kernels 2 and 3 start as programmatic dependent launches (griddepcontrol): their blocks are scheduled while the
// kernel before them runs and wait for its results, so a launch's latency overlaps the previous kernel.
// A call whose chunks all fit the device at once (rows · chunks ≤ kSplitClusterMaxWaves × the resident blocks, rows of
// at most kSplitClusterMaxChunks = 16 chunks, i.e. n ≤ 196608) takes one launch instead (cluster_split_kernel): a
// cluster per row, block r reducing chunk r as kernel 1 does, the chunk states exchanged through distributed shared
// memory and merged in kernel 2's order, each chunk normalised from the registers that loaded it (read once, 8 B /
// 4 B an element). Every output is bitwise the three kernels' (tested), so the choice by the call's size keeps a
// row's result the same alone or in a batch.
// The chunking depends on n only, so a row's result is the same alone or in a batch.
// split6 (2026-11-30; docs/perf-notebook.md "split6"): the one-launch kernel pushes each block's chunk state into every
// block's shared memory and merges after one cluster barrier a row (was: two, and remote reads between them); it
// serves only where the device runs its cluster size (split_row_active_clusters: not below Hopper nor on a slice
// without room), the bound counted in clusters; 16-bit chunks are normalised from whole tiles (normalize_kernel).
// Nsight Compute on the kernels before (split6's first run, binary of cfb2d2f, caches flushed): cluster_split_kernel
// at 1×32 f32 13.1 µs, 1×151936 14.1 µs, each block ~23 k cycles for ~1.4–1.8 k instructions a warp at 12–16 cycles
// each, 46–56 % of them waiting on instruction fetch (its code is 128 KB): the fixed cost is the block's instruction
// stream, not the data; at 1×16777216 f32 the chunk kernel 25.6 µs (DRAM 57 %, the SM idle of loads while it
// reduces), the merge kernel 6.8 µs (one block, all fixed cost), the normalising kernel 37.9 µs (long-scoreboard
// stalls 59 %: 16 KB a block in flight). Measured after (split6's run of 7af3a0c, GPU µs a call from a graph, the
// levers as run-time switches; kernels.hpp SplitRowTuning has the table): the pushed exchange and 32-bit quotients
// moved the one-launch kernel by nothing measurable (1×151936 f32 softmax 7.40 against 7.44; bench, L2 flushed, 11.7
// against 12.1 µs, bf16 11.4 against 11.8 with tier16's 16-bit tier in); whole tiles won for 16-bit chunks (bf16
// 1×16777216 softmax 78.1 → 66.1) and lost for f32. This file's final form (switches removed) was not run on the
// device. Targets still missed: 1×151936 ≤ 8 µs (11.4–11.7 flushed), 32×128256 ≤ 8 (21.7 f32 graph), 1×16M ≥ 3 TB/s
// (1.9 f32).
// few7 (session 7): compact kernels for the common call (unit-stride 16-byte-aligned rows, no mask, the output in
// the input's type; the one-launch kernel also with a temperature): cluster_split_plain_kernel, chunk_states_plain_
// kernel and normalize_plain_kernel, bitwise the generic kernels (tested), chosen per call by common_call. Counted
// (cuobjdump -sass, CUDA 13.0, sm_90a; 16 bytes an instruction): the one-launch kernel 125–127 KB → 18–28 KB (f32
// softmax 8184 → 1840 instructions), the chunk kernel 54–56 KB → 11–13 KB, the normalising kernel 51 / 81 KB (f32 /
// 16-bit) → 6–14 KB; the generic one-launch kernel, now one output type an instance, 97–101 KB. merge_pushed_states
// runs one butterfly instead of three (the other two merge empty states: merge's identity, the same bits). 16-bit
// softmax's chunk terms by its output type (chunk_state<kLog, Out>). No spills (ptxas, LOCAL:0).
// Measured (H200, 2026-11-30, few7's run of c98a4c7, softmaxkit bench --path split_row, L2 flushed, old = d4e6cbd;
// docs/bench/few7-s7-2026-11-30.md), µs old → new: 1×151936 f32 softmax 11.47 → 10.32 (graph 7.80 → 6.69),
// log-softmax 9.79 → 8.82, logsumexp 9.28 → 8.58; bf16 11.07 → 8.56, 11.06 → 9.02, 8.91 → 7.82; 1×32 f32 softmax
// 10.05 → 8.48 (graph 6.76 → 5.17); 32×128256 f32 softmax 28.00 → 26.22, bf16 22.40 → 19.55; 1×16777216 f32 softmax
// 70.66 → 68.22 (1.97 TB/s), bf16 51.57 → 44.93 (1.49 TB/s). In one binary (graph µs) compact → generic: 1×151936
// bf16 softmax 4.97 / 6.31, f32 6.30 / 6.50; 32×128256 f32 17.37 / 19.43. Targets still missed: ≤ 8 µs (7.8–10.3
// at 1×151936, 15–26 at 32×128256), 1×16M ≥ 3 TB/s.
//
// vocab8 (session 8): split_stream_kernel (below) does the three kernels' work in one persistent launch, a row's
// normalising items ~lag rows after its chunk items, so the second read comes from L2: 8 B an element from DRAM
// (f32) instead of 12. It serves f32 log-softmax calls of ≥ 256 rows (kSplitStreamMinRows; bitwise the three kernels:
// test_few_rows_gpu StreamBitwiseTheThreeKernels and StreamDefaultRuleAtItsShapes, whose full-size cases first ran
// in the lead's integrated run of session 8): 4096×151936 1902 → 1714 µs (vocab8's run of ebc8547, GPU µs after the
// bench's flush; torch.compile took 1805 in session 7's comparison), 1024×262144 818 → 742 (at lag 12; the rule's 14
// was not timed). Elsewhere it was slower or even (f32 softmax 2016 → 2015,
// bf16 1.2-1.5× slower): its items are bound by their own latency and instructions, not DRAM (Nsight Compute below,
// at split_stream).
// vocab9 (session 9): split_stream_pipe_kernel, split_stream's items pipelined (the next item's chunk copied into
// shared memory by cp.async while the current one reduces, the ticket one item ahead; off by default; removed after
// the session's review, F14: its code is in dbdada1). Bitwise the three kernels (StreamBitwiseTheThreeKernels, small
// mode, one or two items a block; memcheck 0 errors, racecheck 0 hazards), but slower than the best path on every
// shape timed (vocab9's run of dbdada1, H200, 2026-11-30, GPU µs after the bench's flush, best lag of 16-48): 4096×151936 f32 softmax 2061 (three kernels 2005), log-softmax 1871
// (unpipelined split_stream 1705), bf16 softmax 1432 (three kernels 1280; unpipelined 1677), log-softmax 1368 (1327;
// 1614); 1024×262144 f32 901 / 858 (860 / 738), bf16 611 / 586 (541 / 562). Every block holds two tickets, so ~2 ×
// the grid's items are claimed at once and a row's normalising items wait unless the lag covers that window (lag 16:
// 2441-2512 µs at f32 4096×151936), while a lag past ~24 f32 rows of 151936 overflows the L2 the re-read needs (40:
// 2022, 48: 2109): the two bounds meet for f32; bf16 rows, half the bytes, gain over the unpipelined kernel but not
// over the three kernels. The dispatcher's rule is unchanged (f32 log-softmax of ≥ 256 rows on the unpipelined kernel).
// vocab10 (session 10): launch() hands a call to row_loop.cu first where its rule takes it (bf16 softmax / log-softmax
// and f32 softmax of ≥ 256 rows: one persistent launch, each block walking whole rows twice, bitwise these kernels);
// 4096×151936 f32 softmax 2014 → 1806 µs, bf16 1287 → 1045, bf16 log-softmax 1349 → 1022 (row_loop.cu has the table).
// one11 (session 11): the compact normalising kernel's loads evict-first and stores streaming
// (SplitRowTuning::l2_hints, on by default; bitwise the kernel without). H200, 2026-11-30, one11's run of ec84571
// (tune_softmax --one11, µs, the kernel before → with the hints): 1×16777216 f32 softmax 72.1 → 70.5 (1.90 TB/s),
// bf16 48.0 → 46.6 (1.44 TB/s); 4×4194304 f32 70.8 → 69.4, bf16 47.1 → 45.3; 32×128256 f32 28.7 → 28.3. Timed in the
// same run and removed (code in ec84571): the chunk pass's loads L2 evict-last (mixed, ±3-5 %) and a persistent
// chunk kernel issuing its next chunk's loads before reducing the current one (one block an SM: slower everywhere,
// 1×16M f32 softmax 83.6, 4096×151936 f32 logsumexp 702 → 993). 1×16M is still ~1.9 / 1.4 TB/s (target 3): the
// chunk pass reads at 1.94 (f32) / 1.05 (bf16) TB/s.
// one12 (session 12): the compact chunk kernel prefetches into L2 (one bulk prefetch a block, after its own loads)
// the chunk 132 indices on (kSplitChunkL2Ahead): half a wave of the kernel's 264 resident blocks (two an SM on the
// H200's 132 SMs; the block that takes this block's place, one wave on, is 264 on: timed too, below), and the merge
// kernel loads a thread's states before merging them (merge_chunk_states_preloaded); same values and order, same
// bits. H200, 2026-11-30, one12's run of f219827 (tune_softmax --one12, µs, the kernels before timed first / last →
// 132 chunks ahead): 1×16777216 f32 softmax 68.96 / 68.29 → 65.63 (2.05 TB/s), log-softmax 65.70 / 65.95 → 64.13,
// logsumexp 32.29 / 32.26 → 31.39 (preloading alone 31.26); bf16 softmax 48.64 / 44.16 → 46.69, logsumexp 29.57 /
// 29.70 → 29.15 (preloading alone 28.80); 4×4194304 f32 softmax 67.97 / 67.58 → 65.15; 4096×151936 f32 logsumexp
// 700.6 / 701.0 → 674.9 (3.69 TB/s of read); the pair as shipped was not timed together. Nsight Compute (one launch,
// caches flushed), of the one-wave setting (264 ahead), not the shipped 132: the chunk kernel's L2 hit rate
// 1 → 29-31 % but its time only 25.4 → 24.8 µs (f32) / 19.4 → 19.1 (bf16), SM throughput 53-55 %, DRAM 37-58 %: it
// is bound neither by DRAM nor by issue but by each block's chain of loads, then reductions and barriers, in lockstep
// across a wave (chunk_states_plain_kernel has the count). 3 TB/s at 1×16M (f32 softmax ≤ 44.7 µs, bf16 ≤ 22.4) is
// not reached.
// tma14 (session 14): the chunk pass on a persistent grid whose blocks reduce one chunk from shared memory while the
// next lands there by bulk copy (chunk_tma.cuh chunk_states_tma_kernel; bitwise the plain kernel), served by a rule on
// logsumexp / state calls of many chunks (chunk_tma_rule, kChunkTmaMinChunksF32 / 16: 4096×151936 logsumexp f32
// −3.2 %, bf16 −6.1 %). At 1×16M it is slower (f32) or even (bf16): Nsight Compute shows the chunk kernel there
// bound by its instructions (~26.6 a thread an element f32, 64-66 % of the issue slots), not by its loads, so one12's
// "lockstep" reading was not the bound; 1×16M stays on the plain kernel and 3 TB/s is still not reached.
// split15 (session 15): the chunk kernels' element loop at fewer instructions (chunk_states.cuh kLean: the log ops'
// tie test only in warps holding the max), the same bits, on by default for f32 log ops (kChunkLeanF32Log has the count
// and the times: f32 logsumexp 4096×151936 on the TMA kernel ~660 → ~604 µs, 4.12 TB/s of read, 96 % of copy; 1×16M
// −2-3 %); f32 softmax even and 16-bit data-dependent, so off. 1×16M stays ~2.0 TB/s f32 / 1.5 bf16 (3 asked).
// split16 (session 16): the compact f32 normalising kernel in whole tiles, its loads issued before the dependency
// wait (kNormalizeWholeF32: 2.5-5 % faster at 1×16M, 4×4M, 32×128256, 64×151936; the pass alone 36.1 → 33.7 µs at
// 1×16M f32 softmax, 93 % of copy). The one-launch kernel with chunk_state's lean f32 arithmetic was timed even
// (1×151936 softmax / log-softmax / logsumexp 0.982 / 0.972 / 1.000 lean / before, each round's range straddling 1)
// and removed (its code in 3c3e2d0). That kernel's time is a fixed cost, not the row: one chunk (1×12288, a cluster of
// one block) took 9.70 µs for logsumexp where 13 chunks (1×151936) took 10.37, 16 (1×196608) 10.56 (event-timed a
// launch, inputs in L2).
// split17 (session 17): on the long rows (524288 … 2M, 32-128 rows: the three kernels) two ways to bring the
// normalising pass's second read from L2 were timed beside the three kernels (H200, 2026-12-01, tune_softmax --split17,
// medians of 15, 3 rounds of reversed order, the ratio a round; every variant the same bits; docs/bench/split17-s17-
// 2026-12-01.md) and removed: split_stream on rows past 32 chunks (a whole-block merge; code in 966460c) 1.04-1.26×
// slower at f32 softmax, 1.28-1.38× at bf16, 0.938× only at f32 log-softmax 128×524288; split_pipe, the three kernels'
// work by row groups of 8-24 MB in a chain of dependent launches (launch k: group k's chunks, group k − 1's
// normalisation; code in cf010a0) 0.998-1.051× at f32 (16 MB), 1.14-1.27× at bf16, groups of 8 MB 1.17-1.25×.
// Nsight Compute of the three kernels (application replay, caches as the previous kernel left them) at f32 softmax
// 32×2097152: chunk pass 82.4 µs (268.5 MB read, 3.26 TB/s, 26.6 lane-instructions an element at 69 % issue-active:
// bound by its instructions), merge 6.0 µs (one block a row, all latency), normalising pass 128.9 µs (231.2 MB read:
// 14 % of its reads from L2; 472 MB moved at 3.66 TB/s, 86 % of copy); bf16: 64.4 / 5.7 / 68.2 µs, 27 % from L2,
// 20.3 + 19.4 lane-instructions an element. split_stream's kernel there read 331 MB (77 % of the second read from L2)
// but kept DRAM 47 % busy at 62.4 lane-instructions an element: the bytes saved are lost to its items' latency. For
// split_pipe at f32, 8 MB groups (16 more launches) took 38-44 µs more than 16 MB: ~2.5 µs a launch; at bf16 the
// group size hardly moved it (1.14-1.21× at both), a loss per item that was not profiled.
// fold17 (session 17): merge_states_kernel folded into the compact chunk kernel (each block publishes its chunk state,
// fences and adds to its row's arrival count, zeroed by a memset in the stream; the block that adds the row's last
// state merges the row with this kernel's own code, the same bits; code and test in 3fb3636) was slower on every shape
// timed (H200, 2026-12-01, tune_softmax --fold17, 3 alternating rounds, ratio folded / merge kernel a round; docs/bench/
// fold17-s17-2026-12-01.md): bf16 softmax 32×128256 22.7 → 24.2 µs (1.069), 1×16777216 44.3 → 47.7 (1.079), 32×2097152
// 139.6 → 153.1 (1.097), 4096×151936 forced 1274 → 1451 (1.138); f32 1.032-1.073; f32 logsumexp 1024×65536 85.2 →
// 103.4 (1.215). Read, not profiled: the publish (a fence, an L2 atomic round trip and a barrier before the block may
// retire) lengthens every chunk block's life, 0.7-0.9 µs a wave of 264 blocks at 4096×151936 (202 waves), more than
// the one merge launch it saves a call.
// split18 (session 18): 16-bit softmax / log-softmax to the same type, rows past 32 chunks, take the three kernels with
// the chunk pass on a running state a thread (chunk_states_running_kernel, below; a new summation order; bf16 0.82-0.91×
// at 32×2097152 / 128×524288 / 1×16777216, the outputs byte for byte the tree's on every call timed); f32 even, not built.
// few19 (session 19): calls whose rows do not fit one wave of one-chunk-a-block clusters but fit one wave at two chunks
// a block (32×128256: 32 rows of 11 chunks against 16 resident clusters of 11) take one launch at two chunks a block,
// staged in shared memory (cluster_multi_kernel, launch_multi's rule: 16-bit softmax / log-softmax and f32
// log-softmax; the same bits): bf16 32×128256 softmax 18.30 → 16.2-17.0 µs, log-softmax 17.7 → 16.1-16.8, f32
// log-softmax 20.9 → 19.3-19.9 (bench-flushed event time); ≤ 8 µs is still missed: the kernel is bound by the
// instructions of the SMs holding two of its blocks (launch_multi has the count).
// Traffic per element: softmax / log-softmax read the input twice and write once: 12 B (f32), 6 B (bf16), against
// the floor of 8 B / 4 B; a bf16 row of 16M (32 MB) is re-read from the 50 MB L2. logsumexp / state read once.
// Floor on the H200 at 4.27 TB/s: 1×16777216 f32 (134 MB moved) 31.4 µs; bf16 15.7 µs.
// Measured (H200, 2026-11-29, docs/perf-notebook.md "Issue 3 kernels"): softmax 4096×151936 f32 2121 µs (55% of
// copy; logsumexp 810 µs, 70% of read), bf16 2071 µs (28%); 1×16777216 f32 73.0 µs (1.84 TB/s), bf16 70.8 µs;
// 1×151936 f32 16.6 µs, 32×128256 f32 30.1 µs (three launches: latency-bound). 2026-11-30 (commit 050be25, log l's
// terms from log_term_exp): 4096×151936 f32 log-softmax 2078 µs, logsumexp 825 µs (71 % of read), bf16 1762 / 846.
// Measured (H200, 2026-11-30, commits 556bc00 and ed489dc, softmaxkit bench, L2 flushed, beside the binary before them;
// docs/bench/fixcost-2026-11-30.md): 1×151936 f32 softmax 17.2 → 12.2 µs (one launch; host time a call 15.7 → 4.3 µs,
// GPU alone in a CUDA graph 8.3 µs), log-softmax 16.8 → 11.5, logsumexp 11.6 → 10.0, bf16 18.6 → 12.4; 32×128256 (three
// kernels, dependent launches) f32 softmax 30.3 → 28.3, logsumexp 18.5 → 17.6; 1×16777216 f32 softmax 73.8 → 71.4
// (1.88 TB/s), bf16 71.9 → 68.7; 4096×151936 f32 softmax 2092 (56 % of copy), logsumexp 800 (73 % of read).
// tier16 (H200, 2026-11-30, run of 77c64e6, old → new µs): the normalising pass of 16-bit softmax by the 16-bit-output
// tier (chunk_states.cuh normalize_values<Out>) and the log ops' chunk terms by log_term_exp_ftz: 4096×151936 softmax
// bf16 1992 → 1812, f16 1974 → 1787 (f32 2077 → 2071, unchanged); logsumexp f32 798 → 717 (78 % of read), bf16 804 →
// 722, f16 800 → 725; log-softmax f32 2042 → 1955, bf16 1698 → 1589. Forced on cluster_row instead: slower on all 9
// (bf16 softmax 2271, logsumexp 1368; f32 2711, 1479), so kClusterAutoMaxN stays.
#include "cuda/device_attrs.hpp"
#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/cluster_launch.hpp"  // lse19b: the cluster launch and occupancy query, shared
#include "cuda/softmax/chunk_tma.cuh"  // tma14: the chunk kernel with its chunks staged by bulk copies
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/running_state.cuh"  // fold19: the running state (split18), shared with lse_stream.cu
#include "cuda/softmax/split_row_tuning.hpp"  // the switches read here (one12) and split_plain_launch_count
#include "softmaxkit/core/error.hpp"           // split18: launch_split_running_rows' argument checks

#include <cooperative_groups.h>

#include <atomic>
#include <cstring>
#include <utility>

namespace smk::cuda::kernels {

namespace {

using State = ChunkState;

// The cluster barrier in its two halves (PTX barrier.cluster; sm_90, where alone the host launches clusters): arrive
// (relaxed: orders nothing; release: this thread's earlier memory operations, remote stores into another block's
// shared memory included, become visible to every thread that waits after it), then wait (acquire).
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_arrive_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// The row state from the chunk states a cluster's blocks pushed into this block's `slots` (slot r: chunk r), computed
// by every warp alone with no block barrier, bitwise merge_thread_states' result in merge_states_kernel (thread t
// merging chunk t): lane r < chunks merges chunk r into the empty state as thread r does, and the butterfly over the
// warp gives warp 0's state there. The merge kernel then runs a second butterfly over the warps' states, in which
// warps 1..15 (no chunk of a row of ≤ 32 chunks) bring the butterfly of empty states: the empty state again, since
// it is merge's identity (online_state.hpp: merging an empty side copies the other's fields), so that butterfly
// returns warp 0's state bit for bit (a NaN state is nan_()'s NaN already: each lane's state above came out of
// merge at least once). Until few7 (session 7) this function ran both butterflies; they were ten of the
// one-launch kernel's fifteen merges, each a branchy ~60 instructions of the instruction stream the kernel's time is.
__device__ __forceinline__ State merge_pushed_states(const float2* slots, std::int64_t chunks) {
  const int lane = threadIdx.x % 32;
  State mine = State::empty();
  if (lane < chunks) mine.merge(State::from_fields(slots[lane].x, slots[lane].y));
  return group_merge(mine, 32);
}

// kLog: the op takes log l (warp_row.cu says why a template parameter). Out: the type softmax's outputs are stored as
// (chunk_state: a 16-bit Out sums the 16-bit-output tier's terms); float for the log ops, whose terms do not depend
// on it.
template <typename In, typename Out, bool kLog>
__global__ void __launch_bounds__(kSplitThreads, 2) chunk_states_kernel(const RowProblem p, std::int64_t chunks,
                                                                     State* states) {
  using Tile = RowTile<In, kBlockElems>;
  __shared__ ChunkScratch scratch;
  // The merge kernel may be scheduled as soon as every block of this one has started: its blocks then wait in
  // pdl_wait for this grid's completion (and its memory), so the launch's latency overlaps
  // this kernel instead of following it.
  pdl_launch_dependents();
  const std::int64_t total = p.rows * chunks;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    const std::int64_t row = idx / chunks, c = idx - row * chunks;
    const RowRef o{row, 0};
    const std::int64_t first = chunk_first(c);
    const int len = chunk_len(p.n, c);
    float v[kBlockElems];
    Tile::load(v, at<In>(p.x, o.off(p, kX)) + first * p.step[kX], len, p.step[kX], threadIdx.x, kSplitThreads);
    Tile::transform(v, row_transform(p, o), len, threadIdx.x, kSplitThreads, first);
    const State st = chunk_state<kLog, Out>(v, scratch);  // chunk_states.cuh: the same arithmetic as grid_row's
    if (threadIdx.x == 0) states[idx] = st;
  }
}

// merge_chunk_states with each thread's states loaded before it merges any (one12): thread t's chunks t, t + 512, …
// (at most kMergePreload of them) read into registers by independent loads, then merged in the same order from the
// empty state, so the same state bit for bit; merge_chunk_states' loop issues each load after the previous merge,
// one L2 round trip each (1×16777216: 1366 chunks, three a thread).
constexpr int kMergePreload = 4;
__device__ __forceinline__ State merge_chunk_states_preloaded(const State* states, std::int64_t chunks, float* red_m,
                                                              float* red_d) {
  const float* f = reinterpret_cast<const float*>(states);
  float m[kMergePreload], d[kMergePreload];
#pragma unroll
  for (int k = 0; k < kMergePreload; ++k) {
    const std::int64_t c = threadIdx.x + std::int64_t{k} * kSplitThreads;
    if (c < chunks) {
      m[k] = __ldcg(f + 2 * c);
      d[k] = __ldcg(f + 2 * c + 1);
    }
  }
  State s = State::empty();
#pragma unroll
  for (int k = 0; k < kMergePreload; ++k)
    if (threadIdx.x + std::int64_t{k} * kSplitThreads < chunks) s.merge(State::from_fields(m[k], d[k]));
  return merge_thread_states(s, red_m, red_d);
}

// preload (one12, split_row_merge_preload()): 1 (the library's), rows of at most kMergePreload · 512 chunks merge by
// merge_chunk_states_preloaded (the same bits); 0 merge_chunk_states everywhere (the kernel before). one12's H200 run
// of f219827 (µs, before first / last → preloading): 1×16777216 logsumexp f32 32.29 / 32.26 → 31.26, bf16 29.57 /
// 29.70 → 28.80; Nsight Compute, the merge kernel alone (one block, caches flushed) f32 6.59 → 5.44, bf16 5.44 → 4.45;
// elsewhere within the before's spread (a row of ≤ 512 chunks gives a thread one state: nothing to overlap).
__global__ void __launch_bounds__(kSplitThreads) merge_states_kernel(const RowProblem p, std::int64_t chunks,
                                                                     const State* states, State* row_states,
                                                                     int preload) {
  __shared__ float red_m[32], red_d[32];
  // Launched dependent on chunk_states_kernel (programmatic dependent launch): wait for its states, then let the
  // normalising kernel be scheduled. A no-op when launched plainly.
  pdl_wait();
  pdl_launch_dependents();
  const bool pre = preload != 0 && chunks <= std::int64_t{kMergePreload} * kSplitThreads;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const State t = pre ? merge_chunk_states_preloaded(states + row * chunks, chunks, red_m, red_d)
                        : merge_chunk_states(states + row * chunks, chunks, red_m, red_d);  // grid_row merges alike
    if (threadIdx.x == 0) {
      if (writes_rows(p.op)) row_states[row] = t;
      else write_row_stats(p, RowRef{row, 0}, t);
    }
  }
}

// 16-bit chunks (kWholeTile): a chunk is loaded as one tile of kBlockElems a thread, all its loads in flight at once
// (24 KB a block), before the dependency wait (the input is never written by the kernels before this one), and
// normalised as cluster_split_kernel does; f32 chunks walk normalize_chunk's 32-byte sub-tiles (as before split6).
// Either way each output is normalize_values of the same value and row state: the same bits. Measured (split6's run of
// 7af3a0c, as a run-time lever beside two others since removed; kernels.hpp): bf16 1×16777216 softmax 78.1 → 66.1 µs,
// 4096×151936 2365 → 2123, 32×128256 25.3 → 19.6; f32 1×16M 83.4 → 89.1, 4096×151936 2431 → 2483 (slower: kept off).
// A compile-time choice, not a run-time one: the run-time branch made the f32 kernel spill (144 bytes, ptxas -v) where
// this one has none.
template <typename In>
__global__ void __launch_bounds__(kSplitThreads, 2) normalize_kernel(const RowProblem p, std::int64_t chunks,
                                                                     const State* row_states) {
  constexpr bool kWholeTile = sizeof(In) == 2;
  if constexpr (!kWholeTile) pdl_wait();  // the row states of merge_states_kernel (programmatic dependent launch)
  const std::int64_t total = p.rows * chunks;
  for (std::int64_t k = blockIdx.x; k < total; k += gridDim.x) {
    const std::int64_t idx = total - 1 - k;
    const std::int64_t row = idx / chunks, c = idx - row * chunks;
    const RowRef o{row, 0};
    const std::int64_t first = chunk_first(c);
    if constexpr (kWholeTile) {
      using Tile = RowTile<In, kBlockElems>;
      const int len = chunk_len(p.n, c);
      float v[kBlockElems];
      Tile::load(v, at<In>(p.x, o.off(p, kX)) + first * p.step[kX], len, p.step[kX], threadIdx.x, kSplitThreads);
      Tile::transform(v, row_transform(p, o), len, threadIdx.x, kSplitThreads, first);
      pdl_wait();  // the row states (at once after the first chunk)
      const RowNormalizer<float> norm = row_states[row].normalizer(p.empty_rows);
      with_out_type<In>(p, [&](auto* tag) {
        using Out = std::remove_pointer_t<decltype(tag)>;
        normalize_values<Out>(v, norm, p.op);
        Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)) + first * p.step[kOut], v, len, p.step[kOut],
                                  threadIdx.x, kSplitThreads);
      });
    } else {
      normalize_chunk<In>(p, o, row_states[row].normalizer(p.empty_rows), row_transform(p, o),
                          at<In>(p.x, o.off(p, kX)) + first * p.step[kX], p.step[kX], first, chunk_len(p.n, c));
    }
  }
}

// The three kernels' first and last for the common call (chunk_states.cuh PlainTile; launch() says when): the same
// values in the same registers and the same arithmetic as chunk_states_kernel and normalize_kernel, so the same bits,
// at a fraction of the code (few7: the generic kernels are 51–81 KB of SASS, these 11–20 KB; the one-launch kernel's
// time was its instruction stream, and these run the decode batches past one wave, e.g. 32×128256).
// ahead (one12, split_row_chunk_l2_ahead()): > 0, each block, once its own loads are issued, prefetches into L2
// the chunk `ahead` indices on (chunk_states.cuh prefetch_chunk_l2; the library's 132, kSplitChunkL2Ahead: the chunk
// a block of the next wave reads, half a wave on); 0 none (the kernel before). The same loads and arithmetic either
// way. Counted (one12, cuobjdump -sass of f219827, sm_90a; Nsight Compute of its H200 run at 1×16777216 softmax):
// 64 registers, two blocks an SM (warps active 46-47 % of the SM's 64), one block a chunk: 1366 blocks, 5.2 waves of
// 264. A thread's loads: 6 (f32) / 3 (bf16) 16-byte vectors in flight, 48 KB / 24 KB a block, then a max tree, a
// barrier, the terms and a sum tree, a barrier, nothing in flight; static SASS 880 instructions (f32 softmax) / 760
// (bf16), the ragged last chunk's path included. Chunk kernel alone, caches flushed: f32 25.4 µs (DRAM
// 57 %, SM 53 %), bf16 19.4 µs (DRAM 37 %, SM 53 %): neither the DRAM nor the issue slots are full — the two halves
// of a block's life (loads, then reductions with barriers) run in lockstep across the wave, and prefetching the next
// wave's chunk into L2 (hit rate 29-31 %) shortens only the first half.
// split15 (session 15): whether chunk_states_plain_kernel, chunk_states_tma_kernel and split_stream_kernel (its f32
// log-softmax) take chunk_state's lean arithmetic (chunk_states.cuh kLean; the same state bit for bit), by the input
// type and op, where split_row_chunk_lean() is the library's -1: f32 log ops (log-softmax, logsumexp, the state) yes
// (kChunkLeanF32Log); f32 softmax (kChunkLeanF32Softmax) and 16-bit inputs (kChunkLean16) no.
// Counted (cuobjdump -sass of split_row.cu.o, CUDA 13.0, sm_90a; a thread's 24 elements of a chunk, from the block max
// to the sum's butterfly): the log ops' terms 13.25 instructions an element before (tie compare, zeroed result,
// predicated term, the count's select and add) → 9.0 in the warps without a tie (log_term_exp_ftz's 8 and the tree's
// add); f32 softmax 17.25 → 16.0 (exp_diff's FSETP.NAN and predicated FFMA → one FFMA). Nsight Compute, the chunk
// kernel alone at 1×16777216 (split15's run, one launch each, uniform scores): f32 logsumexp 12.13 M → 10.35 M warp
// instructions (23.1 → 19.7 a thread an element), 22.85 → 21.18 µs; f32 softmax 13.90 M → 13.44 M, 25.09 → 23.52 µs;
// bf16 logsumexp 12.93 M → 12.99 M, 21.60 → 21.50 µs (the lean path not taken: those scores have 64 distinct bf16
// values, so most warps hold a tie of the max). Timed (H200, 2026-12-01, split15's runs, tune_softmax --split15 and
// --split15b, µs, medians of 21 (9 at 4096 rows) over rotated inputs, three alternating rounds, before → lean, every
// pair the same bits): f32 logsumexp 4096×151936 (TMA kernel) 655.5-666.3 → 600.9-607.2 (4.12 TB/s, 96 % of copy;
// 3·N(0,1) scores 663.5-664.9 → 610.0-611.5), 1×16777216 31.0-32.0 → 30.4-31.0 (N: 33.2-33.4 → 32.0-32.3),
// 4×4194304 31.4-32.4 → 31.3-31.9 (N: 32.8-33.6 → 31.7-32.1); f32 log-softmax 4096×151936 (split_stream, N) 1764-1822
// → 1728-1781, 4×4194304 65.7-66.9 → 65.0-65.9, 1×16777216 64.2-65.0 → 63.1-65.2 (even), 32×128256 even (noise
// ±1 µs). Not shipped: f32 softmax, even end to end (1×16777216 65.7-67.1 → 65.5-66.1, 4×4194304 67.6-68.1 → 67.1-67.4,
// 32×128256 27.7-28.0 → 27.8-28.1); 16-bit log ops, faster on 3·N(0,1) scores (bf16 logsumexp 4096×151936 663-666 →
// 592-602, 1×16777216 32.3-32.5 → 30.5-30.8, log-softmax 45.3-45.9 → 43.9-44.2) but even or slower on the uniform
// scores whose max ties in most warps (logsumexp 4096×151936 648-650 → 668-670). 1×151936 takes the one-launch kernel
// (neither form).
constexpr bool kChunkLeanF32Log = true;
constexpr bool kChunkLeanF32Softmax = false;
constexpr bool kChunkLean16 = false;
template <typename In>
bool chunk_lean(Op op) {
  const int setting = split_row_chunk_lean();
  if (setting >= 0) return setting != 0;
  if (!std::is_same_v<In, float>) return kChunkLean16;
  return op == Op::softmax ? kChunkLeanF32Softmax : kChunkLeanF32Log;
}

// kLean (split15, session 15; split_row_chunk_lean()): chunk_state's lean arithmetic, the same state bit for bit
// (chunk_states.cuh says why; the count and the timing are at kChunkLeanF32Log above).
template <typename In, typename Out, bool kLog, bool kLean = false>
__global__ void __launch_bounds__(kSplitThreads, 2) chunk_states_plain_kernel(const RowProblem p, std::int64_t chunks,
                                                                           State* states, std::int64_t ahead) {
  __shared__ ChunkScratch scratch;
  pdl_launch_dependents();  // as chunk_states_kernel
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    std::int64_t row, c;
    split_chunk_index(idx, chunks, narrow, row, c);
    float v[kBlockElems];
    PlainTile<In>::load(v, at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c), chunk_len(p.n, c));
    if (ahead > 0 && threadIdx.x == 0) prefetch_chunk_l2<In>(p, idx + ahead, chunks, narrow);
    const State st = chunk_state<kLog, Out, kLean>(v, scratch);
    if (threadIdx.x == 0) states[idx] = st;
  }
}

// kLogSoftmax: the op (softmax otherwise). 16-bit chunks from whole tiles loaded before the dependency wait, f32
// chunks by sub-tiles after it, as normalize_kernel, or (kWholeF32, the default since split16) as whole tiles too.
// kStream (one11, session 11; SplitRowTuning::l2_hints, on by default): loads evict-first (ld.global.cs: the input's
// last use) and stores streaming (st.global.cs: nothing here reads the outputs back), so that neither pushes out of L2
// the chunks still to be re-read (the walk is in reverse: the chunks the chunk kernel read last come first); the same
// values and arithmetic, so the same bits (test_few_rows NormalizeHintsBitwiseTheKernelsBefore). false: the kernel
// before. Measured (one11's H200 run of ec84571, tune_softmax --one11, µs, median of 31 after rotating 512 MB of
// inputs; the kernels before timed first and last → with the hints): 1×16777216 f32 softmax 72.10 / 72.16 → 70.53,
// log-softmax 68.96 / 68.80 → 67.87, bf16 softmax 48.38 / 47.58 → 46.62, log-softmax 46.91 / 47.33 → 45.76; 4×4194304
// f32 70.91 / 70.66 → 69.41, 67.68 / 67.68 → 66.46, bf16 47.26 / 46.85 → 45.31, 46.66 / 46.43 → 45.25; 32×128256 f32
// 28.51 / 28.83 → 28.29, 26.62 / 27.20 → 26.27, bf16 24.61 / 23.42 → 23.78, 22.75 / 23.14 → 23.20 (the one not
// faster: within the default's own spread). 1–4 % where the input passes the L2; the issue's 3 TB/s is not reached.
// kWholeF32 (split16, session 16; split_row_normalize_whole()): f32 chunks as whole tiles too, by default since split16
// (kNormalizeWholeF32 has the measurement: 2.5-5 % faster); the same values and arithmetic, so the same bits.
template <typename In, bool kLogSoftmax, bool kStream = false, bool kWholeF32 = false>
__global__ void __launch_bounds__(kSplitThreads, 2) normalize_plain_kernel(const RowProblem p, std::int64_t chunks,
                                                                        const State* row_states) {
  constexpr bool kWholeTile = sizeof(In) == 2 || kWholeF32;
  constexpr Op op = kLogSoftmax ? Op::log_softmax : Op::softmax;
  if constexpr (!kWholeTile) pdl_wait();
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  for (std::int64_t k = blockIdx.x; k < total; k += gridDim.x) {
    const std::int64_t idx = total - 1 - k;
    std::int64_t row, c;
    split_chunk_index(idx, chunks, narrow, row, c);
    const In* x = at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c);
    In* out = at<In>(p.out, plain_offset(p, row, kOut)) + chunk_first(c);
    const int len = chunk_len(p.n, c);
    if constexpr (kWholeTile) {
      float v[kBlockElems];
      PlainTile<In>::template load<kStream ? kLoadEvictFirst : kLoadPlain>(v, x, len);
      pdl_wait();
      normalize_values<In>(v, row_states[row].normalizer(p.empty_rows), op);
      PlainTile<In>::template store<In>(out, v, len, kStream);
    } else {
      normalize_plain_chunk<In, kStream>(out, row_states[row].normalizer(p.empty_rows), op, x, len);
    }
  }
}

// ---- split_stream (vocab8, session 8): the three kernels' work in one launch, ordered so the second read hits L2 ----
// The three kernels read every chunk twice, the second time after the whole input has gone through: at 4096×151936
// (2.5 GB f32) all but the last ~50 MB of it come back from DRAM (3n of traffic where the floor is 2n). Here one
// persistent grid takes work items from an atomic ticket in one fixed order: the chunk items of rows 0 … lag − 1,
// then, row after row, the chunk items of row r + lag followed by the normalising items of row r. A row's second
// read comes ~lag rows after its first (lag · 3 · the row's bytes of traffic between them: f32 151936, lag 16 ≈ 29 MB),
// so it is served from L2, and the normalising reads are marked evict-first (ld.global.cs, last use) and the stores
// streaming (st.global.cs) so that they do not push out the chunks still to be re-read.
// Same bits as the three kernels: a chunk item is chunk_states_plain_kernel's body; the block that adds a row's last
// chunk state (an atomic count a row) merges the row's states as merge_states_kernel does for ≤ 32 chunks (lane r
// merges chunk r into the empty state, then one butterfly: merge_pushed_states' order, bitwise the merge kernel's),
// writes the row state and marks the row ready; a normalising item loads its chunk, waits for the mark and applies
// normalize_values<In> elementwise, as normalize_plain_kernel. No deadlock: an item waits only on chunk items of
// earlier tickets, which blocks already running hold, and chunk items never wait.
// The common call only (unit-stride, 16-byte-aligned rows, no mask, no temperature, the output in the input's type),
// softmax and log-softmax, rows of 2 … kSplitStreamMaxChunks chunks.
constexpr std::int64_t kSplitStreamMaxChunks = 32;  // the merge: one chunk state a lane of one warp
// The rule, from vocab8's run of ebc8547 (H200, 2026-11-30, test_cuda_few_rows StreamTiming, GPU µs a call after the
// bench's flush, the three kernels → split_stream at lag 8 / 12 / 16 / 24 / 32):
//   f32 log-softmax  4096×151936 1902 → 2016 / 1851 / 1760 / 1714 / 1742; 1024×262144 818 → 774 / 742 / 743 / 837 / 856;
//                    256×151936 131 → 138 / 127 / 122 / 118 / 118; 64×151936 40.5 → 44.1 / 41.3 / 40.1 / 37.7 / 37.5
//                    (graph 34.4 → 35.5 at lag 24); 32×128256 23.2 → 26.4 … 22.5 (graph 15.8 → 17.6)
//   f32 softmax      4096×151936 2016 → 2317 / 2131 / 2044 / 2015 / 2037; 1024×262144 865 → 889 / 864 / 866 / 912 / 924
//   bf16 softmax     4096×151936 1290 → 1900 … 1686; log-softmax 1332 → 1886 … 1625; 1024×262144 546 → 715-726
// Nsight Compute (same run, 4096×151936 f32 softmax): the three kernels' chunk kernel 735 µs at 3.39 TB/s (DRAM 70 %),
// the normalising kernel 1256 µs at 3.95 TB/s (82 %); split_stream 2041 µs at 2.43 TB/s (DRAM 50 %, L2 hit rate 61 %
// against 50 %): the second read does come from L2, but the kernel then waits on its own items (two 512-thread blocks
// an SM, each item a load, barriers, a store, nothing in flight across them; issue-active 59 %), so it gains only
// where an item's arithmetic is lightest (f32 log-softmax), and 16-bit items, bound by instructions already (the bf16
// chunk kernel: 2.17 TB/s, SM 68 %), lose 1.2-1.5×. So: f32 log-softmax of at least kSplitStreamMinRows rows (256 the
// fewest that gained; 64 and 32 lost); a lag whose traffic between a row's two reads (3 row-sizes a row: chunk read,
// re-read, write) stays within kSplitStreamL2Bytes (151936: lag 24, 262144: 14 — the best lags timed: 24; 12-16).
// vocab9's run of dbdada1 (2026-11-30, same test, the three kernels → the unpipelined kernel at the library's lag):
// f32 log-softmax 4096×151936 1892 → 1705, 1024×262144 814 → 738, 256×151936 129 → 118 (run of 37d39f3); f32 softmax
// 2005 → 2006, 860 → 861; bf16 softmax 1280 → 1677, log-softmax 1327 → 1614: the rule stands.
constexpr std::int64_t kSplitStreamMinRows = 256;
constexpr std::int64_t kSplitStreamL2Bytes = std::int64_t{43} << 20;
constexpr std::int64_t kSplitStreamMaxLag = 32;

__device__ __forceinline__ unsigned load_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A chunk's elements (PlainTile<In>'s map and values; pad −inf past n), the full vectors read evict-first when `last`.
template <typename In>
__device__ __forceinline__ void stream_load(float (&v)[kBlockElems], const In* row, int n, bool last) {
  using Tile = PlainTile<In>;
  using Vec = typename Tile::Vec;
  constexpr int V = Tile::V, K = Tile::K;
  const int g = threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i0 = RowTile<In, kBlockElems>::index(k, g, kSplitThreads);
    if (i0 + V <= n) {
      Vec w;
      if (last) {
        const uint4 b = __ldcs(reinterpret_cast<const uint4*>(row + i0));
        memcpy(&w, &b, sizeof(w));
      } else {
        w = *reinterpret_cast<const Vec*>(row + i0);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) v[k * V + j] = to_f32(w.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v[k * V + j] = i0 + j < n ? to_f32(row[i0 + j]) : -detail::inf_<float>();
    }
  }
}

// Item t of 2 · rows · chunks: whether it normalises, its row and chunk (the order in the comment above).
__device__ __forceinline__ void stream_item(std::int64_t t, std::int64_t rows, std::int64_t chunks, std::int64_t lead,
                                            bool& norm, std::int64_t& row, std::int64_t& c) {
  const std::int64_t head = lead * chunks, mid = (rows - lead) * 2 * chunks;
  if (t < head) {
    norm = false;
    row = t / chunks;
    c = t - row * chunks;
  } else if (t < head + mid) {
    const std::int64_t u = t - head, k = u / (2 * chunks), w = u - k * 2 * chunks;
    norm = w >= chunks;
    row = norm ? k : lead + k;
    c = norm ? w - chunks : w;
  } else {
    const std::int64_t u = t - head - mid, k = u / chunks;
    norm = true;
    row = rows - lead + k;
    c = u - k * chunks;
  }
}

// sync: [0, 2) the 64-bit ticket, then one count a row (chunk states added; chunks + 1 once the row state is written),
// zeroed by the launcher before every launch.
// kLean (split15): chunk_state's lean arithmetic for the chunk items (the same state; instantiated for f32 log-softmax,
// the rule's call, only).
template <typename In, bool kLogSoftmax, bool kLean = false>
__global__ void __launch_bounds__(kSplitThreads, 2) split_stream_kernel(const RowProblem p, std::int64_t chunks,
                                                                     std::int64_t lag, int hints, State* states,
                                                                     State* row_states, unsigned* sync) {
  using Out = std::conditional_t<kLogSoftmax, float, In>;  // chunk_states_plain_kernel's chunk terms
  constexpr Op op = kLogSoftmax ? Op::log_softmax : Op::softmax;
  __shared__ ChunkScratch scratch;
  __shared__ std::int64_t item;
  auto* ticket = reinterpret_cast<unsigned long long*>(sync);
  unsigned* count = sync + 2;
  const std::int64_t rows = p.rows, total = 2 * rows * chunks, lead = lag < rows ? lag : rows;
  const unsigned ready = static_cast<unsigned>(chunks) + 1;
  for (;;) {
    if (threadIdx.x == 0) item = static_cast<std::int64_t>(atomicAdd(ticket, 1ull));
    __syncthreads();
    const std::int64_t t = item;
    __syncthreads();  // every thread has read `item` before thread 0 takes the next ticket
    if (t >= total) return;
    bool norm;
    std::int64_t row, c;
    stream_item(t, rows, chunks, lead, norm, row, c);
    const In* x = at<In>(p.x, plain_offset(p, row, kX)) + chunk_first(c);
    const int len = chunk_len(p.n, c);
    float v[kBlockElems];
    if (!norm) {
      stream_load<In>(v, x, len, false);
      const State st = chunk_state<kLogSoftmax, Out, kLean>(v, scratch);
      if (threadIdx.x < 32) {
        unsigned last = 0;
        if (threadIdx.x == 0) {
          states[row * chunks + c] = st;
          __threadfence();  // the state before the count that publishes it
          last = atomicAdd(&count[row], 1u) == static_cast<unsigned>(chunks) - 1 ? 1u : 0u;
        }
        last = __shfl_sync(0xffffffffu, last, 0);
        if (last) {  // every other chunk state of the row is written: merge them (warp 0)
          // Lane 0 observed the count; its fence and the warp barrier order that observation before every lane's
          // loads of the other blocks' states (__shfl_sync alone orders no memory; review of session 8, F1).
          __threadfence();
          __syncwarp();
          const float* f = reinterpret_cast<const float*>(states + row * chunks);
          const int lane = static_cast<int>(threadIdx.x);
          State mine = State::empty();
          if (lane < chunks) mine.merge(State::from_fields(__ldcg(f + 2 * lane), __ldcg(f + 2 * lane + 1)));
          mine = group_merge(mine, 32);
          if (lane == 0) {
            row_states[row] = mine;
            __threadfence();  // the row state before the mark
            atomicAdd(&count[row], 1u);
          }
        }
      }
    } else {
      stream_load<In>(v, x, len, hints != 0);  // before the wait: the loads overlap it
      if (threadIdx.x == 0) {
        while (load_acquire_gpu(&count[row]) < ready) __nanosleep(64);
        __threadfence();
      }
      __syncthreads();
      const float* f = reinterpret_cast<const float*>(row_states + row);
      const State rs = State::from_fields(__ldcg(f), __ldcg(f + 1));
      normalize_values<In>(v, rs.normalizer(p.empty_rows), op);
      PlainTile<In>::template store<In>(at<In>(p.out, plain_offset(p, row, kOut)) + chunk_first(c), v, len,
                                        hints != 0);
    }
  }
}

// The one-launch variant (split_row_cluster): one cluster per row, block r of the cluster reducing chunk r exactly
// as chunk_states_kernel does, the cluster's chunk states exchanged through distributed shared memory and merged by
// merge_pushed_states in merge_states_kernel's order (thread t takes chunk t), then each block normalises its chunk
// from the registers it loaded it into (read once). Each output element is normalize_values of the same value and
// the same row state as normalize_kernel's, so the outputs are bitwise the three-kernel path's. A row of `chunks`
// ≤ kSplitClusterMaxChunks chunks; the grid is a whole number of clusters, each walking rows first, first + stride.
// Out: the output type, at compile time (before few7 a run-time switch inlined both stores in every instance).
// kPlain: the common call (chunk_states.cuh PlainTile: unit stride, aligned, no mask, no temperature, Out = In, a
// row map of at most one dimension) with `op` a constant of its kernel; else the generic row map, strides, masks
// and temperatures, `op` = p.op. Both give the same bits (the same values in the same registers, the same
// arithmetic), so which one serves a call never changes a result.
// kScale (kPlain only): the call divides by a temperature (a scalar or per row; no mask), as RowTransform::apply does
// it: x / T, IEEE, on the row's elements only.
template <typename In, typename Out, bool kLog, bool kPlain, bool kScale = false>
__device__ __forceinline__ void cluster_split_rows(const RowProblem& p, std::int64_t chunks, Op op) {
  using Tile = RowTile<In, kBlockElems>;
  namespace cg = cooperative_groups;
  __shared__ ChunkScratch scratch;
  // The chunk states the cluster's blocks wrote here, slot r from block r, double-buffered by row parity: a block
  // rewrites a parity's slots two rows later, after the next row's barrier, which every block reaches only after
  // reading them.
  __shared__ float2 slots[2][kSplitClusterMaxChunks];
  const cg::cluster_group cluster = cg::this_cluster();
  const auto c = static_cast<std::int64_t>(cluster.block_rank());
  // 32-bit quotients (chunks ≤ 16, grids below 2^31): a 64-bit division is a called subroutine (__cuda_sm20_div_s64
  // in the SASS), and this kernel's time is its instruction stream (Nsight Compute, split6).
  const auto per = static_cast<unsigned>(chunks);
  const std::int64_t first_row = blockIdx.x / per, stride = gridDim.x / per;
  const std::int64_t first = chunk_first(c);
  const int len = chunk_len(p.n, c);
  // A block may write into another's shared memory only once that block runs: this arrive, matched by the wait
  // before the first push, says so, and costs nothing by then (the chunk's load and reduction lie between).
  cluster_arrive_relaxed();
  bool started = false;
  int parity = 0;
  for (std::int64_t row = first_row; row < p.rows; row += stride) {
    const RowRef o{row, 0};
    float v[kBlockElems];
    if constexpr (kPlain) {
      PlainTile<In>::load(v, at<In>(p.x, plain_offset(p, row, kX)) + first, len);
      if constexpr (kScale) {
        float t = p.temperature;
        if (p.temp != nullptr) {  // as row_transform: NaN for an invalid per-row temperature
          const float r = p.temp[plain_offset(p, row, kTemp)];
          t = (r > 0.0f && r <= 3.402823466e38f) ? r : detail::nan_<float>();
        }
#pragma unroll
        for (int k = 0; k < PlainTile<In>::K; ++k) {
          const int i0 = RowTile<In, kBlockElems>::index(k, threadIdx.x, kSplitThreads);
#pragma unroll
          for (int j = 0; j < PlainTile<In>::V; ++j)
            if (i0 + j < len) v[k * PlainTile<In>::V + j] = v[k * PlainTile<In>::V + j] / t;
        }
      }
    } else {
      Tile::load(v, at<In>(p.x, o.off(p, kX)) + first * p.step[kX], len, p.step[kX], threadIdx.x, kSplitThreads);
      Tile::transform(v, row_transform(p, o), len, threadIdx.x, kSplitThreads, first);
    }
    const State st = chunk_state<kLog, Out>(v, scratch);
    // One cluster barrier a row: thread r stores this block's state into block r's slot c, the barrier (release, then
    // acquire) publishes the stores, and each warp merges its own block's slots (merge_pushed_states). No block reads
    // another's shared memory after the barrier, so none waits for the others before it exits. (Before split6: one
    // barrier, remote reads of each block's state, a second barrier; even in time, 7.40 against 7.44 µs at 1×151936.)
    if (!started) cluster_wait();
    started = true;
    if (threadIdx.x < chunks)
      *cluster.map_shared_rank(&slots[parity][c], static_cast<unsigned>(threadIdx.x)) = make_float2(st.m, st.d);
    cluster_arrive_release();
    cluster_wait();
    const State t = merge_pushed_states(slots[parity], chunks);
    parity ^= 1;
    if (!writes_rows(op)) {
      if (c == 0 && threadIdx.x == 0) {
        if constexpr (kPlain) {
          if (p.op == Op::logsumexp) {  // `op` of the statistics kernel is logsumexp for both
            p.stat0[plain_offset(p, row, kStat0)] = t.lse();
          } else {
            p.stat0[plain_offset(p, row, kStat0)] = t.m;
            p.stat1[plain_offset(p, row, kStat1)] = t.l();
          }
        } else {
          write_row_stats(p, o, t);
        }
      }
      continue;
    }
    normalize_values<Out>(v, t.normalizer(p.empty_rows), op);
    if constexpr (kPlain)
      PlainTile<In>::template store<Out>(at<Out>(p.out, plain_offset(p, row, kOut)) + first, v, len);
    else
      Tile::template store<Out>(at<Out>(p.out, o.off(p, kOut)) + first * p.step[kOut], v, len, p.step[kOut],
                                threadIdx.x, kSplitThreads);
  }
  if (!started) cluster_wait();  // a cluster with no row: the opening arrive's wait
}

// Any call: the generic loads (strides, unaligned rows, masks, temperatures), op = p.op (kLog: log-softmax, logsumexp
// or the state). Out: the output type (float, or In for 16-bit inputs); for logsumexp and the state, which write no
// row, In.
template <typename In, typename Out, bool kLog>
__global__ void __launch_bounds__(kSplitThreads, 2) cluster_split_kernel(const RowProblem p, std::int64_t chunks) {
  cluster_split_rows<In, Out, kLog, false>(p, chunks, p.op);
}

// The common call (chunk_states.cuh PlainTile), one kernel per op: kOp 0 softmax, 1 log-softmax, 2 logsumexp or the
// state (p.op tells which of the two when the statistics are written: `op` is logsumexp for both, a constant).
// kScale: with a temperature (decode sampling's usual call), still no mask.
template <typename In, int kOp, bool kScale>
__global__ void __launch_bounds__(kSplitThreads, 2) cluster_split_plain_kernel(const RowProblem p,
                                                                           std::int64_t chunks) {
  if constexpr (kOp == 0) cluster_split_rows<In, In, false, true, kScale>(p, chunks, Op::softmax);
  else if constexpr (kOp == 1) cluster_split_rows<In, In, true, true, kScale>(p, chunks, Op::log_softmax);
  else cluster_split_rows<In, In, true, true, kScale>(p, chunks, Op::logsumexp);
}
static_assert(kSplitClusterMaxChunks <= 32, "merge_pushed_states gives each chunk state a lane of every warp");

// How many clusters of `blocks` blocks of cluster_split_kernel<In, In, kLog> the current device runs at once (0 below
// compute capability 9.0, or where the occupancy query refuses the size: a MIG or MPS slice without room for it).
// Asked once per device and size, then read from a cache (an acquire load, no lock, no CUDA call), as fused.cu and
// decode_mma.cu keep theirs. Every one-launch kernel has the same launch bounds (512 threads, two blocks an SM, so at
// most 64 registers) and the same static shared memory, so this count serves them all.
template <typename In, bool kLog>
int active_clusters(int blocks) {
  if (blocks < 1 || blocks > kSplitClusterMaxChunks) return 0;
  const int dev = current_device();
  static std::atomic<int> known[kMaxDevices][kSplitClusterMaxChunks + 1];  // cluster_launch.hpp's cache
  return cached_active_clusters(dev >= 0 && dev < kMaxDevices ? &known[dev][blocks] : nullptr, [&] {
    if (current_device_attrs().cc_major < 9) return 0;
    constexpr auto kKernel = cluster_split_kernel<In, In, kLog>;
    allow_large_clusters<kKernel>();
    // 0 where the size is refused: the three kernels serve.
    return query_active_clusters(reinterpret_cast<const void*>(kKernel), kSplitThreads, blocks);
  });
}

template <typename In, bool kLog>
int active_clusters_tuned(int blocks) {
  // The query runs (once, cached) even when a test forces the answer: it is what sets the kernel's non-portable
  // cluster-size attribute, without which a forced launch of 9–16 blocks would fail.
  const int queried = active_clusters<In, kLog>(blocks);
  const int forced = split_row_tuning().active_clusters;
  return forced >= 0 ? forced : queried;
}

// Launches one of the one-launch kernels: a cluster of `chunks` blocks per row. Each kernel gets the non-portable
// cluster-size attribute (9–16 blocks) once per device before its first launch; only called where clusters run.
template <auto kKernel>
void launch_clusters(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  launch_row_clusters<kKernel>(p, chunks, kSplitThreads, s);
}

// The common call of cluster_split_plain_kernel (chunk_states.cuh PlainTile): unit-stride rows whose first elements
// (input, and output where rows are written) are 16-byte aligned, at most one row dimension, no mask, no temperature,
// the output in the input's type.
// `scaled` true: a temperature is allowed (the one-launch kernel's kScale); false: not (the three kernels' plain ones).
template <typename In>
bool common_call(const RowProblem& p, bool scaled = false) {
  if (p.has_mask || (!scaled && (p.scale || p.temp != nullptr)) || !plain_rows<In>(p, p.x, kX)) return false;
  return !writes_rows(p.op) || (p.out_dtype == p.x_dtype && plain_rows<In>(p, p.out, kOut));
}

// ---- few19 (session 19, issue 3): the one-launch kernel with several chunks a block ------------------------------
// cluster_multi_kernel: split_row's one launch for calls whose rows do not fit one wave of one-chunk-a-block clusters
// (32×128256: 11 chunks a row, 352 blocks of 512 threads against the H200's 264 resident, so the three kernels served
// it: a chunk pass of 1.33 waves, the merge, a normalising pass of 1.33 waves re-reading x from L2, three launches).
// Here a row takes a cluster of B = ⌈chunks / per⌉ blocks; block r owns chunks r, r + B, r + 2B, … (at most `per`),
// each staged whole in its shared memory by one bulk copy (issued by thread 0 at the start, all in flight at once, one
// mbarrier a chunk; the chunk_tma.cuh pattern). For each owned chunk every thread reads its vectors from the stage
// (PlainTile::load_staged: PlainTile's map and values, the ragged vector from global memory) and the block reduces them
// with chunk_state, exactly as cluster_split_plain_kernel's block reduces its one chunk; thread q < B pushes the state
// into block q's slot of that chunk (distributed shared memory); one cluster barrier; every warp merges the row's
// slots with merge_pushed_states (the merge kernel's order); each owned chunk is read again from the stage, normalised
// and stored. So every output is normalize_values of the same value and row state as the three kernels' and the
// one-chunk-a-block kernel's: the same bits (tested: test_few_rows OneLaunchMultiBitwiseTheThreeKernels).
// Traffic: 4 B (f32) / 2 B (16-bit) read and the same written an element, once each (the floor, 8 / 4 B); the stage
// is shared memory (f32 48 KB a chunk, 16-bit 24 KB), so per = 2 keeps two blocks an SM (f32 96 KB each of 227 KB).
// Roofline at the H200's 4.27 TB/s copy: bf16 32×128256 16.4 MB → 3.8 µs, f32 32.8 MB → 7.7 µs; the launch and one
// block's dependent chain (split16: ~9.7 µs event-timed for a one-chunk row) come on top.
// One row a cluster (no row loop): the rule sends only calls whose clusters all fit one wave; a forced call of more
// rows runs in waves the hardware schedules (still correct: each cluster is independent).
constexpr int kSplitMultiMaxPer = 4;               // chunks a block at most (f32 4 × 48 KB = 192 KB of the 227 KB)
constexpr std::int64_t kSplitMultiMaxChunks = 32;  // merge_pushed_states: one chunk state a lane of one warp
constexpr std::size_t kSplitMultiStaticSmem = 1024;  // ChunkScratch, 32 slots and the mbarriers (< 700 B)

template <typename In>
constexpr std::size_t multi_stage_bytes() {
  return static_cast<std::size_t>(kSplitChunk) * sizeof(In);
}

// kOp: 0 softmax, 1 log-softmax (as cluster_split_plain_kernel's). logsumexp and the state had an instance too in
// few19's run (d38b383: f32 32×128256 logsumexp 1.068-1.114× the three kernels' time), removed.
template <typename In, int kOp>
__global__ void __launch_bounds__(kSplitThreads, 2) cluster_multi_kernel(const RowProblem p, std::int64_t chunks) {
  extern __shared__ __align__(128) unsigned char multi_smem[];
  __shared__ ChunkScratch scratch;
  __shared__ float2 slots[kSplitMultiMaxChunks];
  __shared__ std::uint64_t bar[kSplitMultiMaxPer];
  static_assert(sizeof(ChunkScratch) + sizeof(slots) + sizeof(bar) <= kSplitMultiStaticSmem, "static smem bound");
  constexpr bool kLog = kOp != 0;
  static_assert(kOp == 0 || kOp == 1, "softmax or log-softmax");
  constexpr Op op = kOp == 0 ? Op::softmax : Op::log_softmax;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  In* const stage0 = reinterpret_cast<In*>(multi_smem);
  const cg::cluster_group cluster = cg::this_cluster();
  const auto blocks = static_cast<int>(cluster.num_blocks());
  const auto r = static_cast<int>(cluster.block_rank());
  const std::int64_t row = blockIdx.x / static_cast<unsigned>(blocks);
  const int chunks32 = static_cast<int>(chunks);
  const int mine = (chunks32 - r + blocks - 1) / blocks;  // chunks r, r + B, … below chunks: ≥ 1 (B ≤ chunks)
  const In* const x = at<In>(p.x, plain_offset(p, row, kX));
  // As cluster_split_rows: the arrive says this block runs, the wait before the first push matches it.
  cluster_arrive_relaxed();
  if (threadIdx.x == 0) {
    for (int j = 0; j < mine; ++j) ::cuda::ptx::mbarrier_init(&bar[j], 1);
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
    for (int j = 0; j < mine; ++j) {
      const int c = r + j * blocks;
      const std::uint32_t bytes = static_cast<std::uint32_t>(chunk_len(p.n, c)) * sizeof(In) / 16u * 16u;
      (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                                   ::cuda::ptx::space_shared, &bar[j], bytes);
      if (bytes > 0)
        ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage0 + j * kSplitChunk,
                                   x + chunk_first(c), bytes, &bar[j]);
    }
  }
  __syncthreads();  // the barriers initialised before any thread waits on them
  for (int j = 0; j < mine; ++j) {
    const int c = r + j * blocks;
    while (!::cuda::ptx::mbarrier_try_wait_parity(&bar[j], 0u)) {
    }
    float v[kBlockElems];
    PlainTile<In>::load_staged(v, stage0 + j * kSplitChunk, x + chunk_first(c), chunk_len(p.n, c));
    const State st = chunk_state<kLog, In>(v, scratch);  // cluster_split_plain_kernel's arithmetic
    if (j == 0) cluster_wait();
    if (threadIdx.x < static_cast<unsigned>(blocks))
      *cluster.map_shared_rank(&slots[c], static_cast<unsigned>(threadIdx.x)) = make_float2(st.m, st.d);
  }
  // Every push before the barrier; no remote access after it, so a block may exit without waiting for the others.
  cluster_arrive_release();
  cluster_wait();
  const State t = merge_pushed_states(slots, chunks);
  const RowNormalizer<float> norm = t.normalizer(p.empty_rows);
  In* const y = at<In>(p.out, plain_offset(p, row, kOut));
  for (int j = 0; j < mine; ++j) {
    const int c = r + j * blocks;
    const int len = chunk_len(p.n, c);
    float v[kBlockElems];
    PlainTile<In>::load_staged(v, stage0 + j * kSplitChunk, x + chunk_first(c), len);
    normalize_values<In>(v, norm, op);
    PlainTile<In>::template store<In>(y + chunk_first(c), v, len);
  }
#else
  (void)p, (void)chunks, (void)scratch, (void)slots, (void)bar, (void)kLog, (void)op;
#endif
}

// The kernel's attributes (clusters past 8 blocks, the stages' dynamic shared memory), once a device, before its first
// launch or occupancy query.
template <auto kKernel, typename In>
void multi_attributes() {
  allow_large_clusters<kKernel>();
  static DeviceOnce stages;
  stages.run([] {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSplitMultiMaxPer * multi_stage_bytes<In>())));
  });
}

// How many clusters of `blocks` blocks at `per` chunks a block the device runs at once (0 where it runs none; cached
// a device, size and per, as active_clusters). One count serves both ops' kernels (the same launch bounds, static
// shared memory within kSplitMultiStaticSmem and the same dynamic stages); asked of the softmax kernel.
template <typename In>
int multi_active_clusters(int per, int blocks) {
  if (blocks < 1 || blocks > kSplitClusterMaxChunks || per < 1 || per > kSplitMultiMaxPer) return 0;
  if (current_device_attrs().cc_major < 9) return 0;
  if (static_cast<std::size_t>(device_facts().max_smem_optin) <
      kSplitMultiMaxPer * multi_stage_bytes<In>() + kSplitMultiStaticSmem)
    return 0;
  const int dev = current_device();
  static std::atomic<int> known[kMaxDevices][kSplitMultiMaxPer + 1][kSplitClusterMaxChunks + 1];
  return cached_active_clusters(dev >= 0 && dev < kMaxDevices ? &known[dev][per][blocks] : nullptr, [&] {
    constexpr auto kKernel = cluster_multi_kernel<In, 0>;
    multi_attributes<kKernel, In>();
    return query_active_clusters(reinterpret_cast<const void*>(kKernel), kSplitThreads, blocks,
                                 static_cast<std::size_t>(per) * multi_stage_bytes<In>());
  });
}

std::atomic<std::uint64_t>& multi_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

template <auto kKernel, typename In>
void launch_multi_kernel(const RowProblem& p, std::int64_t chunks, int per, int blocks, cudaStream_t s) {
  multi_attributes<kKernel, In>();
  launch_in_clusters<kKernel>(static_cast<unsigned>(p.rows * blocks), kSplitThreads, blocks,
                              static_cast<std::size_t>(per) * multi_stage_bytes<In>(), s, p, chunks);
  multi_launches().fetch_add(1, std::memory_order_relaxed);
}

// Whether the multi-chunk one launch serves the call (split_row_multi(): -1 the rule, 0 never, k > 0 k chunks a block
// on every softmax / log-softmax call it can take, whatever its size: tests and timing); launches it if so. It takes
// softmax and log-softmax, the common call without a temperature (common_call<In>(p)), rows of 2 … kSplitMultiMaxChunks chunks in
// clusters of at most kSplitClusterMaxChunks blocks, where the device runs such clusters (the count honours
// SplitRowTuning::active_clusters: 0 there keeps the three kernels).
// The rule (called only where the one-chunk-a-block kernel did not take the call: its clusters do not fit one wave):
// the ops and input types multi_rule_takes names, rows of at most kSplitMultiRuleMaxChunks chunks, kSplitMultiRulePer
// chunks a block, every cluster of the call resident at once (rows ≤ multi_active_clusters). Larger calls keep the
// three kernels. Every choice gives the three kernels' bits, so the rule keeps a row's result whatever the row count.
// Measured (H200, 2026-12-02, few19's run of d38b383, tune_softmax --few19: launch_split_rows with the bench's 256-MB
// L2 flush before each launch, CUDA events, medians of 31, 5 alternating rounds at 32 rows (3 elsewhere); µs, the
// forms before few19 (three kernels here, timed in three places of each round: 18.30 / 18.30 / 18.34 at bf16 softmax)
// → this kernel at k = 2 (timed twice a round, as "rule" and "k2"); every output byte for byte the three kernels'):
//   32×128256 bf16 softmax 18.30 → 16.99 / 16.22 (0.927 / 0.886), log-softmax 17.73 → 16.77 / 16.06 (0.946 / 0.905),
//             f16 softmax 18.24 → 16.96 / 16.13 (0.928 / 0.884), f32 log-softmax 20.93 → 19.33 / 19.90 (0.924 /
//             0.951); not taken: f32 softmax 23.20 → 23.39 / 24.06 (1.008 / 1.037), f32 logsumexp 15.10 → 16.13 /
//             16.86 (1.068 / 1.114);
//   k = 3 slower everywhere (32×128256 bf16 softmax 20.90, 1.142; f32 1.345), k = 4 even or slower for f32 (32×128256
//   f32 softmax 23.17, 64×128256 f32 softmax 41.82 against 34.66) and within the timing's noise for 16-bit at 64×128256
//   (bf16 softmax 26.08 → 24.93 / 25.60, log-softmax 25.15 → 24.13 / 23.65: 0.94-0.98), so the rule stays at k = 2;
//   rows past 16 chunks (1×262144 / 8×262144 bf16 softmax 10.50 → 10.88, 13.82 → 14.56) keep the three kernels;
//   16×128256, 8×151936 and 1×151936 keep the one-chunk-a-block kernel (k = 2 there 1.06-1.41× that kernel's first
//   timing a round).
// The timing's own spread: one configuration timed in two places of a round differed by up to 10 % on the shortest
// calls (1×151936 bf16 softmax, the one-chunk kernel: 8.32 first in each round, 7.49 last) and by 4.7 % here (16.99 /
// 16.22), always the same way round to round: only ratios that hold in both places are taken.
// Nsight Compute (same run, one launch, caches flushed) at 32×128256 softmax: this kernel 14.30 µs bf16 / 20.06 f32
// (192 blocks of 512 threads in clusters of 6, 52 % issue-active, 5.33 M / 7.58 M warp instructions, DRAM 12 / 17 %);
// the three kernels 8.38 + 5.28 + 8.10 µs bf16, 10.08 + 5.95 + 10.82 f32 (with dependent launches they overlap);
// the one-chunk kernel over two waves 15.26 / 23.65. Read from those counts, not profiled further: its bound is the
// instructions of the busiest SMs (41.5 lane-instructions an element bf16, 59.1 f32: ~950 / ~1350 a warp a chunk;
// 192 blocks on 132 SMs put two blocks, four chunks, on at least 60 SMs, against the even 352 / 132 = 2.67 chunks an
// SM; the placement was not measured), at 52 % issue-active.
constexpr std::int64_t kSplitMultiRuleMaxChunks = kSplitClusterMaxChunks;
constexpr int kSplitMultiRulePer = 2;
constexpr bool kSplitMulti16 = true;              // bf16 / f16 softmax and log-softmax: 0.884-0.946
constexpr bool kSplitMultiF32LogSoftmax = true;   // 0.924 / 0.951
constexpr bool kSplitMultiF32Softmax = false;     // 1.008 / 1.037
// logsumexp and the state: never by the rule (f32 32×128256 1.068 / 1.114; 16-bit ones go to lse_stream's chunk kernel)
template <typename In>
bool multi_rule_takes(Op op) {
  if (op != Op::softmax && op != Op::log_softmax) return false;
  if (!std::is_same_v<In, float>) return kSplitMulti16;
  return op == Op::softmax ? kSplitMultiF32Softmax : kSplitMultiF32LogSoftmax;
}
template <typename In>
bool launch_multi(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  const int setting = split_row_multi();
  if (setting == 0 || (p.op != Op::softmax && p.op != Op::log_softmax) || chunks < 2 || chunks > kSplitMultiMaxChunks ||
      !split_row_tuning().common_call || !common_call<In>(p) || p.rows > 0x7fffffff / kSplitClusterMaxChunks)
    return false;
  const int forced_active = split_row_tuning().active_clusters;
  auto fits = [&](int per, int& blocks) {
    blocks = static_cast<int>((chunks + per - 1) / per);
    if (blocks > kSplitClusterMaxChunks) return std::int64_t{0};
    const std::int64_t active = multi_active_clusters<In>(per, blocks);  // also sets the attributes
    return forced_active >= 0 ? std::min<std::int64_t>(forced_active, active) : active;
  };
  int per = 0, blocks = 0;
  if (setting > 0) {
    if (setting > kSplitMultiMaxPer || fits(setting, blocks) == 0) return false;
    per = setting;
  } else {
    if (chunks > kSplitMultiRuleMaxChunks || !multi_rule_takes<In>(p.op)) return false;
    if (p.rows > fits(kSplitMultiRulePer, blocks)) return false;
    per = kSplitMultiRulePer;
  }
  if (p.op == Op::softmax) launch_multi_kernel<cluster_multi_kernel<In, 0>, In>(p, chunks, per, blocks, s);
  else launch_multi_kernel<cluster_multi_kernel<In, 1>, In>(p, chunks, per, blocks, s);
  return true;
}

// The one-launch variant serves a call when its rows have 1..kSplitClusterMaxChunks chunks and all of its clusters
// are resident at once (rows ≤ kSplitClusterMaxWaves × the clusters of that size the device runs at once); larger
// calls, and devices that run no such cluster, take the three kernels (the same bits), whose second read comes mostly
// from L2 and whose grid overlaps rows. The common call takes the compact kernel of its op, any other the generic
// kernel of its output type.
template <typename In>
bool launch_cluster(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  if (!split_row_cluster() || chunks < 1 || chunks > kSplitClusterMaxChunks) return false;
  const bool log = p.op != Op::softmax;
  const std::int64_t resident = log ? active_clusters_tuned<In, true>(static_cast<int>(chunks))
                                    : active_clusters_tuned<In, false>(static_cast<int>(chunks));
  if (resident == 0 || p.rows > split_row_cluster_waves() * resident) return false;
  if (split_row_tuning().common_call && common_call<In>(p, true)) {
    if (p.scale) {
      if (p.op == Op::softmax) launch_clusters<cluster_split_plain_kernel<In, 0, true>>(p, chunks, s);
      else if (p.op == Op::log_softmax) launch_clusters<cluster_split_plain_kernel<In, 1, true>>(p, chunks, s);
      else launch_clusters<cluster_split_plain_kernel<In, 2, true>>(p, chunks, s);
    } else {
      if (p.op == Op::softmax) launch_clusters<cluster_split_plain_kernel<In, 0, false>>(p, chunks, s);
      else if (p.op == Op::log_softmax) launch_clusters<cluster_split_plain_kernel<In, 1, false>>(p, chunks, s);
      else launch_clusters<cluster_split_plain_kernel<In, 2, false>>(p, chunks, s);
    }
    return true;
  }
  const bool out_f32 = !std::is_same_v<In, float> && writes_rows(p.op) && p.out_dtype == DType::f32;
  if (out_f32) {
    if (log) launch_clusters<cluster_split_kernel<In, float, true>>(p, chunks, s);
    else launch_clusters<cluster_split_kernel<In, float, false>>(p, chunks, s);
  } else {
    if (log) launch_clusters<cluster_split_kernel<In, In, true>>(p, chunks, s);
    else launch_clusters<cluster_split_kernel<In, In, false>>(p, chunks, s);
  }
  return true;
}

std::atomic<std::uint64_t>& stream_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}
// The three kernels' compact launches (chunk_states_plain_kernel, normalize_plain_kernel), counted for the tests.
std::atomic<std::uint64_t>& plain_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}
std::atomic<unsigned>& stream_last_grid() {
  static std::atomic<unsigned> grid{0};
  return grid;
}

// Whether split_stream serves a call the one-launch kernel did not take (SplitRowTuning::stream: -1 the rule below,
// 0 never, 1 wherever it can).
template <typename In>
bool stream_call(const RowProblem& p, std::int64_t chunks) {
  const SplitRowTuning& t = split_row_tuning();
  if (t.stream == 0 || !t.common_call || (p.op != Op::softmax && p.op != Op::log_softmax)) return false;
  if (chunks < 2 || chunks > kSplitStreamMaxChunks || !common_call<In>(p)) return false;
  return t.stream == 1 || (std::is_same_v<In, float> && p.op == Op::log_softmax && p.rows >= kSplitStreamMinRows);
}

template <typename In>
void launch_stream(const RowProblem& p, std::int64_t chunks, cudaStream_t s) {
  const std::int64_t total = p.rows * chunks;
  const std::size_t sync_bytes = (8 + 4 * static_cast<std::size_t>(p.rows) + 15) / 16 * 16;
  ScopedWorkspace ws(sync_bytes + sizeof(State) * static_cast<std::size_t>(total + p.rows), s);
  auto* sync = static_cast<unsigned*>(ws.get());
  auto* states = reinterpret_cast<State*>(static_cast<unsigned char*>(ws.get()) + sync_bytes);
  SMK_CUDA_CHECK(cudaMemsetAsync(sync, 0, sync_bytes, s));
  const SplitRowTuning& t = split_row_tuning();
  const std::int64_t by_bytes = kSplitStreamL2Bytes / (3 * p.n * static_cast<std::int64_t>(sizeof(In)));
  const std::int64_t lag = t.stream_lag > 0 ? t.stream_lag : std::clamp<std::int64_t>(by_bytes, 1, kSplitStreamMaxLag);
  auto kernel = p.op == Op::softmax ? split_stream_kernel<In, false> : split_stream_kernel<In, true>;
  if constexpr (std::is_same_v<In, float>) {  // split15: f32 log-softmax's chunk items lean where chunk_lean says
    if (p.op != Op::softmax && chunk_lean<In>(p.op)) kernel = split_stream_kernel<In, true, true>;
  }
  // Any grid of at least one block finishes (a block takes its next ticket only once its item is done, and the
  // smallest unfinished ticket never waits on a larger one), so stream_max_blocks may cap it for the tests.
  unsigned grid = persistent_grid(kernel, kSplitThreads, 0, 2 * total);
  if (t.stream_max_blocks > 0) grid = std::min(grid, static_cast<unsigned>(t.stream_max_blocks));
  kernel<<<grid, kSplitThreads, 0, s>>>(p, chunks, lag, t.stream_hints ? 1 : 0, states, states + total, sync);
  SMK_CUDA_CHECK_LAUNCH("split_stream_kernel");
  stream_last_grid().store(grid, std::memory_order_relaxed);
  stream_launches().fetch_add(1, std::memory_order_relaxed);
  ws.release();
}

// The prefetch distance of the compact chunk kernel (one12: split_row_chunk_l2_ahead(), below): `setting` > 0 that
// many chunks, −w w waves of the kernel's resident blocks (the grid is one block a chunk, launched in index order, so
// the block `resident` indices on is the one of the next wave that takes this block's place), 0 none. A distance past
// the call's chunks prefetches nothing, so it is returned as 0.
// kSplitChunkL2Ahead, the library's: 132 chunks (one a SM on the H200, half a wave of the kernel's 264 resident
// blocks). one12's H200 run of f219827 (tune_softmax --one12, µs, median of 21 after rotating 512 MB of inputs,
// "before" timed first / last → 132 chunks; one wave (264) / two waves (528) beside it): 1×16777216 f32 softmax
// 68.96 / 68.29 → 65.63 (1w 67.84, 2w 73.06), log-softmax 65.70 / 65.95 → 64.13, logsumexp 32.29 / 32.26 → 31.39
// (1w 32.83, 2w 35.04); bf16 softmax 48.64 / 44.16 → 46.69, log-softmax 43.84 / 43.81 → 42.72; 4×4194304 f32 softmax
// 67.97 / 67.58 → 65.15, logsumexp 31.46 / 31.20 → 30.14; bf16 softmax 44.16 / 43.84 → 42.59; 4096×151936 logsumexp
// f32 700.6 / 701.0 → 674.9 (1w 673.1, 2w 721.7), bf16 698.4 / 706.4 → 691.7; 32×128256 within the before's spread
// (f32 softmax 26.85 / 26.27 → 26.24, bf16 20.96 / 20.83 → 20.96). Two waves lose for f32 everywhere (the prefetched
// lines wait in L2 longer than the blocks take to reach them, and 12.6 MB a wave more of DRAM queue). Nsight Compute
// (same run, one launch, caches flushed, one wave ahead): the f32 chunk kernel's L2 hit rate 1.2 → 29 %, but its time
// 25.4 → 24.8 µs and bf16's 19.4 → 19.1: the kernel is not bound by DRAM latency alone (chunk_states_plain_kernel).
constexpr int kSplitChunkL2Ahead = 132;

template <typename Kernel>
std::int64_t l2_ahead(Kernel kernel, int setting, std::int64_t total) {
  std::int64_t d = setting;
  if (setting < 0)
    d = -std::int64_t{setting} * persistent_grid(kernel, kSplitThreads, 0, std::int64_t{1} << 40);
  return d < total ? d : 0;
}

std::atomic<std::uint64_t>& chunk_tma_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

// tma14 (session 14): the library's rule for chunk_states_tma_kernel (chunk_tma.cuh): kChunkTmaStages stages on the
// calls that read their rows once (logsumexp, the state: no normalising pass) with at least kChunkTmaMinChunksF32 (f32)
// / kChunkTmaMinChunks16 (16-bit) chunks (rows × chunks a row); chunk_states_plain_kernel elsewhere. The same bits
// either way, so the choice by the call's size keeps batch invariance. tma14's H200 runs (tune_softmax --tma14 and
// --tma14b, µs, medians of 21 (9 at 1024-2048 rows, 5 at 4096) over rotated inputs, two alternating rounds, the plain
// kernel → 2 stages; docs/bench/tma14-s14-2026-11-30.md has every variant): logsumexp ×151936 at 128 / 512 / 1024 /
// 2048 / 4096 rows (1664 / 6656 / 13312 / 26624 / 53248 chunks): f32 33.5 → 35.2 (slower), 94.7 → 94.9 (even),
// 176.9 → 174.4, 342.7 → 332.9, 673.2 → 651.7 (3.82 TB/s, −3.2 %); bf16 33.3 → 31.5, 96.4 → 91.7, 181.1 → 171.3,
// 352.2 → 330.9, 691.6 → 649.8 (−5.4 to −6.1 % from 1664 chunks on). Slower or even below: 1×16777216 (1366 chunks)
// f32 softmax 65.8-66.1 → 68.4-69.3, logsumexp 30.8 → 32.6-33.4, bf16 softmax 42.5-43.4 → 42.6-43.2 (even),
// logsumexp 30.0-30.2 → 29.9-30.2 (even); 32×128256 (352) f32 softmax 26.2-26.7 → 27.8-27.9, bf16 logsumexp 15.9-16.0
// → 16.6-16.7. So f32 from 13312 chunks and 16-bit from 1664, the smallest counts timed faster (f16: bf16's code, not
// timed). Softmax and log-softmax keep the plain kernel: timed only at 1366 and 352 chunks (slower or even), and at
// many rows most of them take row_loop.cu or split_stream. 3 and 4 stages: f32 one block an SM, 796 µs at 4096×151936
// (slower); bf16 as 2. Nsight Compute at 1×16M softmax (same run): the two f32 kernels issue ~13.9 M warp
// instructions at 64-66 % issue-active, the TMA kernel 25.3 µs against 24.1 (bf16 20.1 against 19.0): at that size
// the chunk pass is bound by its instructions, not by loads waiting, and a persistent grid leaves a ragged last round
// (1366 = 5.17 × 264 blocks); over many rounds the overlap pays. Since lse17 (session 17) the dispatcher sends 16-bit
// logsumexp / state rows past 32768 to lse_stream's chunk kernel, so the 16-bit branch serves forced split_row calls
// only (ScopedSoftmaxPath; the grid_row and bitwise tests), where it keeps split_row's bits.
constexpr int kChunkTmaStages = 2;
constexpr std::int64_t kChunkTmaMinChunksF32 = 13312;
constexpr std::int64_t kChunkTmaMinChunks16 = 1664;

// chunk_states_tma_kernel on a persistent grid (the blocks its stages' shared memory and its registers let an SM hold,
// at most one a chunk, capped by ChunkTmaTuning::max_blocks). The dynamic shared-memory limit is raised once per device
// to kChunkTmaMaxStages stages (f32: 192 KB; Hopper's opt-in limit is 227 KB; launch_chunk_tma asks for sm_90+).
template <typename In, typename Out, bool kLog, bool kLean>
void launch_chunk_tma_kernel(const RowProblem& p, std::int64_t chunks, State* states, int stages, std::int64_t total,
                             cudaStream_t s) {
  constexpr auto kernel = chunk_states_tma_kernel<In, Out, kLog, kLean>;
  static DeviceOnce attributes;
  attributes.run([] {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kChunkTmaMaxStages * chunk_tma_stage_bytes<In>())));
  });
  const ChunkTmaTuning& t = split_row_chunk_tma();
  const std::size_t smem = static_cast<std::size_t>(stages) * chunk_tma_stage_bytes<In>();
  unsigned grid = persistent_grid(kernel, kSplitThreads, smem, total);
  if (t.max_blocks > 0) grid = std::min(grid, static_cast<unsigned>(t.max_blocks));
  // −w: w grids past the chunk this iteration's refill stages (idx + stages·grid; chunk_tma.cuh, review F5).
  std::int64_t ahead = t.ahead < 0 ? (stages - std::int64_t{t.ahead}) * grid : t.ahead;
  if (ahead >= total) ahead = 0;
  kernel<<<grid, kSplitThreads, smem, s>>>(p, chunks, states, stages, ahead);
}

// The stages chunk_states_tma_kernel runs a call of `total` chunks at (0: chunk_states_plain_kernel), by
// ChunkTmaTuning (split_row_tuning.hpp): its stages where set, else the library's rule (kChunkTmaMinChunksF32 / 16).
template <typename In>
int chunk_tma_rule(const RowProblem& p, std::int64_t total) {
  const ChunkTmaTuning& t = split_row_chunk_tma();
  const int stages = std::is_same_v<In, float> ? t.stages_f32 : t.stages_16;
  if (stages >= 0) return stages;
  std::int64_t min = std::is_same_v<In, float> ? kChunkTmaMinChunksF32 : kChunkTmaMinChunks16;
  if (t.min_chunks >= 0) min = t.min_chunks;
  return !writes_rows(p.op) && total >= min ? kChunkTmaStages : 0;
}

// Whether chunk_states_tma_kernel serves the common call's chunk pass (chunk_tma_rule's stages > 0, on sm_90+, where
// bulk copies and the shared memory exist); launches it if so.
template <typename In>
bool launch_chunk_tma(const RowProblem& p, std::int64_t chunks, State* states, std::int64_t total, cudaStream_t s) {
  const int stages = chunk_tma_rule<In>(p, total);
  if (stages < 1 || stages > kChunkTmaMaxStages || current_device_attrs().cc_major < 9) return false;
  // The attribute set below (kChunkTmaMaxStages stages and the static scratch) must fit the device's opt-in limit.
  if (static_cast<std::size_t>(device_facts().max_smem_optin) <
      kChunkTmaMaxStages * chunk_tma_stage_bytes<In>() + kChunkTmaStaticSmem)
    return false;
  const bool lean = chunk_lean<In>(p.op);
  if (p.op != Op::softmax) {
    if (lean) launch_chunk_tma_kernel<In, float, true, true>(p, chunks, states, stages, total, s);
    else launch_chunk_tma_kernel<In, float, true, false>(p, chunks, states, stages, total, s);
  } else if (lean && kLeanDiffers<false, In>) {
    launch_chunk_tma_kernel<In, In, false, kLeanDiffers<false, In>>(p, chunks, states, stages, total, s);
  } else {
    launch_chunk_tma_kernel<In, In, false, false>(p, chunks, states, stages, total, s);
  }
  chunk_tma_launches().fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---- split18 (session 18, issue 3): the chunk pass of softmax / log-softmax on a running state a thread -------------
// The three kernels' chunk pass (chunk_states_plain_kernel: the block max, a barrier, every element's term against it,
// the block sum and count) ran at 26.6 lane-instructions an element for f32 softmax and 20.3 for bf16 at 69 / 67 %
// issue (split17's Nsight Compute at 32×2097152): bound by its instructions. Here each chunk (split_row's chunking,
// chunk_first / chunk_len) is reduced by one block of kRunThreads (64) threads that each keep a running (m, ties,
// rest) over their share, as lse_stream.cu's lse_thread does (lse17 took bf16 logsumexp from 27.9 to 14.9 an element
// so): kRunUnroll 16-byte vectors loaded at once, their max; where it rises above the running max the thread's mass
// rescales once, (ties + rest)·exp_diff(m, m'); the step's terms against the running max summed in a tree and added.
// No block max before the terms, one barrier a chunk. Then the warp's lanes merge (lse_group), the block's warps in
// warp 0 (group_merge; lse_block_state), and the chunk state goes where chunk_states_plain_kernel writes it: the merge
// kernel and the normalising kernel are split_row's, unchanged. fold19 (session 19): the running state, the thread's
// loop and the merges are running_state.cuh's, shared with lse_stream.cu (they were copies; the SASS unchanged).
// Terms: the op's and output type's tier as chunk_state takes them, but for 16-bit log ops: softmax f32 outputs
// (the general form only) exp_diff, 16-bit outputs out_exp's plain expf; log ops log_term_exp_ftz
// (f32 inputs) and log_term_exp16 (16-bit inputs, the tier of every other 16-bit log-softmax path and of lse17's
// chunk kernel, whose chunk states this kernel's 16-bit log-softmax reproduces bit for bit at the same thread count:
// the same map, steps, terms, ties and trees). Softmax counts no ties: its rest holds every term (the max's 1
// included), d = rest − 1 (from_max_ties_and_rest with no ties), the plain sum's state as chunk_state builds it.
// Counted before the run (per element, SASS not yet read): f32 softmax a quarter of a load, FMNMX, exp_diff_unguarded
// ~15 (TwoSum 6, expf 8, the FFMA), the tree's FADD: ~17.5 + the step's rise test and shift (~4 a 16) and the chunk's
// tail (lse_group, the barrier, the block merge: ~250 a thread over 96 elements at T128, ~2.6): ~20.5 against 26.6;
// bf16 softmax cvt + FMNMX + expf's 9 + FADD ~12 + ~2.5 + ~2.6 ≈ 17 against 20.3; log ops f32 ~14 + 5 ≈ 19 against
// ~20 (lean), bf16 log_term_exp16 3 + the tie test 3 + cvt, max, add ≈ 9 + 5 ≈ 14 against ~20.
// Traffic: as the chunk pass it replaces (each element read once: 4 B f32, 2 B 16-bit; 8 B a chunk written).
// Order and error: a new summation order for the rows it serves (softmax_cuda.cpp split_running_takes: every row count
// of a length past 32 chunks on the automatic path, where no other kernel of split_row's bits serves; forced
// split_row keeps chunk_state's tree); first-order depth of a chunk as lse_stream's D_stream (docs/semantics.md §6):
// log2 C + 8K + 12 at T64 (one merge level of two warps), C = 32 16-bit terms a step, K = 6 steps a thread: 65, against
// chunk_state's tree of ⌈log2 12288⌉ + 4 = 18. Measured against float64: tests/cuda/softmax/test_few_rows_gpu.cpp
// RunningChunksAgainstTheReferenceAndTheOrderBefore (docs/semantics.md §6 has the numbers).
// Measured (H200, 2026-12-01, split18's run of f69ff89; docs/bench/split18-s18-2026-12-01.md). Nsight Compute at
// 32×2097152 softmax, the chunk pass alone, chunk_states_plain_kernel → this kernel at T128: bf16 63.8 → 43.7 µs,
// 20.3 → 15.7 lane-instructions an element (counted ~17), issue 67 → 79 %, DRAM 44 → 64 %; f32 79.8 → 75.9 µs, 26.6 →
// 23.0 (counted ~20.5), issue 71 → 65 %, DRAM 71 → 77 %; at T64 (the run of cff3015) bf16 41.9 µs, 14.7 an element,
// issue 79 %, DRAM 67 %. End to end (tune_softmax --split18, µs, HEAD's kernels →
// T64, the ratio a round, median of 3): bf16 softmax 32×2097152 137.9 → 120.6 (0.872), 128×524288 141.8 → 123.3
// (0.877), 1×16777216 43.2 → 39.7 (0.918); log-softmax 143.0 → 115.5 (0.806), 144.4 → 117.6 (0.819), 42.6 → 36.7
// (0.862); bf16 outputs byte for byte HEAD's but 4 of 67108864 (3·N(0, 1) scores). f32 even or slower (T64
// 0.984-1.020, T128 0.991-1.049; the softmax error against float64 5.7 u where the tree's is 3.8 u): not built for f32
// (its code in f69ff89). So the dispatcher sends 16-bit calls with 16-bit outputs past 32 chunks here
// (softmax_cuda.cpp split_running_takes); 32×128256 (11 chunks: the tree's kernels serve its length) was 0.961-1.04.
constexpr int kRunUnroll = 4;  // 16-byte vectors a thread loads at once (lse_stream's kUnroll): 64 B in flight
// kRunThreads: the threads a chunk. split18's run (H200, tune_softmax --split18, bf16, ratio to HEAD's kernels a round,
// median of 3): T64 0.872 / 0.877 / 0.918 softmax and 0.806 / 0.819 / 0.862 log-softmax at 32×2097152 / 128×524288 /
// 1×16777216, T128 0.876 / 0.884 / 0.940 and 0.820 / 0.816 / 0.884: T64 (more steps a thread, fewer tails an element,
// as lse17 found for logsumexp) on every shape of the rule's range but one (even).
constexpr int kRunThreads = 64;

// One step of C values (running_state.cuh running_thread's push): lse_push for the log ops (the tier by the input
// type), else softmax's terms by the output type (out_exp), no ties counted.
template <typename In, typename Out, bool kLog, int C>
__device__ __forceinline__ void run_push(RunningLse& s, const float (&x)[C]) {
  if constexpr (kLog) {
    lse_push<In, C>(s, x);
  } else {
    const float cm = tree_max<C>(x);
    if (!(cm <= s.m)) lse_rise(s, cm);
    const float shift = ChunkState::shift_for(s.m);
    float r[C];
#pragma unroll
    for (int i = 0; i < C; ++i) r[i] = out_exp<Out>(x[i], shift);
    s.rest += tree_sum<C>(r);
  }
}

// One block of kThreads a chunk (a grid-stride loop over the call's chunks, split_row's index order); the chunk state
// to states[idx], as chunk_states_plain_kernel writes it. Thread g of a chunk: running_thread at kRunUnroll vectors a
// step, int indices (row: the chunk's first element; first its position in the row, for the mask index). kGeneral:
// strided or unaligned chunks element by element, a temperature or mask applied; else unit-stride 16-byte-aligned
// chunks, no transform. The same elements in the same steps either way: the same bits. The warps' states are
// double-buffered by parity as lse_stream.cu's lse_chunks_kernel does (lse_block_state): one barrier a chunk. At most
// 64 registers (1024 threads an SM).
template <typename In, typename Out, bool kLog, int kThreads, bool kGeneral>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    chunk_states_running_kernel(const RowProblem p, std::int64_t chunks, State* states) {
  constexpr int kWarps = kThreads / 32;
  constexpr int C = kRunUnroll * LseVec<In>::V;
  __shared__ float2 warp_state[2][kWarps];
  pdl_launch_dependents();  // as chunk_states_kernel: the merge kernel waits in pdl_wait
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t total = p.rows * chunks;
  const bool narrow = total <= 0xffffffffll;
  int parity = 0;
  for (std::int64_t idx = blockIdx.x; idx < total; idx += gridDim.x, parity ^= 1) {
    std::int64_t row, c;
    split_chunk_index(idx, chunks, narrow, row, c);
    const RowRef o{row, 0};
    const std::int64_t first = chunk_first(c);
    const In* x = kGeneral ? at<In>(p.x, o.off(p, kX)) + first * p.step[kX]
                           : at<In>(p.x, plain_offset(p, row, kX)) + first;
    const RunningLse s = running_thread<In, kThreads, kGeneral, false, kRunUnroll>(
        x, chunk_len(p.n, c), kGeneral ? p.step[kX] : 1, t, row_transform(p, o), first,
        [](RunningLse& r, const float (&v)[C]) { run_push<In, Out, kLog, C>(r, v); });
    lse_block_state<kWarps, kWarps>(s, warp_state[parity], [&](const State& st) { states[idx] = st; });
  }
}

std::atomic<std::uint64_t>& running_launches() {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

// The running chunk pass of a 16-bit softmax / log-softmax call at kRunThreads a chunk: the plain form for the common
// call (common_call: the compact kernels' call), else the general one; Out as chunk_states_kernel's.
template <typename In>
void launch_running_chunks(const RowProblem& p, std::int64_t chunks, State* states, bool plain, cudaStream_t s) {
  static_assert(sizeof(In) == 2, "the running chunk pass is built for 16-bit inputs (f32: not faster, split18)");
  const std::int64_t total = p.rows * chunks;
  const bool out16 = p.out_dtype != DType::f32;
  auto kernel = chunk_states_running_kernel<In, float, true, kRunThreads, true>;
  if (p.op != Op::softmax) {
    if (plain) kernel = chunk_states_running_kernel<In, float, true, kRunThreads, false>;
  } else if (plain) {
    kernel = chunk_states_running_kernel<In, In, false, kRunThreads, false>;
  } else {
    kernel = out16 ? chunk_states_running_kernel<In, In, false, kRunThreads, true>
                   : chunk_states_running_kernel<In, float, false, kRunThreads, true>;
  }
  kernel<<<capped_grid(total), kRunThreads, 0, s>>>(p, chunks, states);
  SMK_CUDA_CHECK_LAUNCH("chunk_states_running_kernel");
  running_launches().fetch_add(1, std::memory_order_relaxed);
}

// split16 (session 16): whether the compact f32 normalising kernel loads a chunk as one whole tile (kWholeF32) where
// split_row_normalize_whole() is the library's -1. split6 had timed whole f32 tiles slower (1×16777216 softmax 89.1
// against 83.4 µs) as a run-time branch that made the kernel spill 144 bytes; the compile-time form (64 registers
// softmax, 60 log-softmax, no spill: cuobjdump --dump-resource-usage, CUDA 13.0 sm_90a) had never run for f32. A
// thread's 6 loads (48 KB a block) are in flight at once, issued before the dependency wait, where the sub-tiles kept
// 2 (16 KB) and issued them after it. Measured (H200, 2026-12-01, split16's run of 3c3e2d0's kernels, tune_softmax
// --split16, µs, medians of 21 over rotated inputs, three alternating rounds, sub-tiles → whole; the ratio a round,
// median (min-max)): 1×16777216 softmax 65.98 → 64.54, 0.975 (0.969-0.979), log-softmax 64.86 → 62.66, 0.969
// (0.966-0.969); 4×4194304 68.00 → 65.57, 0.971 (0.963-0.974), 64.35 → 62.02, 0.964 (0.963-0.967); 32×128256 26.78 →
// 25.79, 0.955 (0.929-0.972), 26.02 → 24.96, 0.959 (0.954-0.959); 64×151936 43.17 → 41.89, 0.963 (0.953-0.976), 42.59 →
// 40.19, 0.948 (0.944-0.951); every pair the same bits. Nsight Compute, the normalising kernel alone at 1×16777216 f32
// softmax: 36.06 → 33.70 µs, DRAM 63.9 → 67.4 % of peak (67.1 MB read, 42-44 MB written before the kernel ended),
// long-scoreboard stalls 10.6 → 8.3 an issue: 2n at the 4.27 TB/s copy would be 31.4 µs, so the pass now runs at 93 %
// of copy (87 % before).
constexpr bool kNormalizeWholeF32 = true;
bool normalize_whole() {
  const int setting = split_row_normalize_whole();
  return setting >= 0 ? setting != 0 : kNormalizeWholeF32;
}

// running (split18): false split_row's kernels (the one-launch kernel, row_loop, split_stream or the three kernels, by
// their rules: chunk_state's order); true the three kernels with the chunk pass on a running state a thread
// (launch_running_chunks: a new order, 16-bit inputs only; the merge and the normalising kernels unchanged).
template <typename In>
void launch(const RowProblem& p, cudaStream_t s, bool running = false) {
  const std::int64_t chunks = (p.n + kSplitChunk - 1) / kSplitChunk;
  if (!running) {
    // few19: the one launch at several chunks a block, forced (split_row_multi() > 0) before the one-chunk-a-block
    // kernel, by its rule (one wave) where that kernel does not fit.
    const bool forced_multi = split_row_multi() > 0;
    if (forced_multi && split_row_cluster() && launch_multi<In>(p, chunks, s)) return;
    if (launch_cluster<In>(p, chunks, s)) return;
    if (!forced_multi && split_row_cluster() && launch_multi<In>(p, chunks, s)) return;
    if (launch_row_loop_rows(p, s)) return;  // vocab10: row_loop.cu, the same bits in one launch where its rule says
    if (stream_call<In>(p, chunks)) return launch_stream<In>(p, chunks, s);
  }
  const std::int64_t total = p.rows * chunks;
  const std::size_t bytes = sizeof(State) * static_cast<std::size_t>(total + p.rows);
  ScopedWorkspace ws(bytes, s);  // freed even if a launch below throws
  auto* states = static_cast<State*>(ws.get());
  State* row_states = states + total;
  // The common call (common_call) takes the compact chunk and normalising kernels, bitwise the generic ones.
  const SplitRowTuning& tn = split_row_tuning();
  const bool plain = tn.common_call && common_call<In>(p);
  // one11: the normalising kernel's cache hints (SplitRowTuning::l2_hints), on the compact kernels only.
  const bool stream_out = plain && tn.l2_hints >= 1;
  if (total > 0) {
    // Softmax's terms by its output type (chunk_state): 16-bit outputs take the 16-bit-output tier's.
    const bool out16 = !std::is_same_v<In, float> && p.out_dtype != DType::f32;
    if (running) {
      if constexpr (sizeof(In) == 2) launch_running_chunks<In>(p, chunks, states, plain, s);
    } else if (plain && launch_chunk_tma<In>(p, chunks, states, total, s)) {  // tma14: the same bits, staged by bulk copies
      plain_launches().fetch_add(1, std::memory_order_relaxed);
    } else if (plain) {
      // split15: the lean chunk arithmetic where chunk_lean says (the same state either way).
      const bool lean = chunk_lean<In>(p.op);
      constexpr bool kSoftmaxLean = kLeanDiffers<false, In>;  // 16-bit softmax: the lean code is the same code
      const auto kernel = p.op != Op::softmax ? (lean ? chunk_states_plain_kernel<In, float, true, true>
                                                      : chunk_states_plain_kernel<In, float, true>)
                                              : (lean ? chunk_states_plain_kernel<In, In, false, kSoftmaxLean>
                                                      : chunk_states_plain_kernel<In, In, false>);
      kernel<<<capped_grid(total), kSplitThreads, 0, s>>>(p, chunks, states,
                                                          l2_ahead(kernel, split_row_chunk_l2_ahead(), total));
      plain_launches().fetch_add(1, std::memory_order_relaxed);
    } else {
      const auto kernel = p.op != Op::softmax ? chunk_states_kernel<In, float, true>
                                              : (out16 ? chunk_states_kernel<In, In, false>
                                                       : chunk_states_kernel<In, float, false>);
      kernel<<<capped_grid(total), kSplitThreads, 0, s>>>(p, chunks, states);
    }
    SMK_CUDA_CHECK_LAUNCH("chunk_states_kernel");
  }
  launch_dependent(total > 0, merge_states_kernel, capped_grid(p.rows), kSplitThreads, s, p, chunks,
                   static_cast<const State*>(states), row_states, split_row_merge_preload());
  if (writes_rows(p.op) && total > 0) {
    if (plain) {
      auto kernel = p.op == Op::softmax ? (stream_out ? normalize_plain_kernel<In, false, true>
                                                      : normalize_plain_kernel<In, false>)
                                        : (stream_out ? normalize_plain_kernel<In, true, true>
                                                      : normalize_plain_kernel<In, true>);
      if constexpr (std::is_same_v<In, float>) {  // split16: f32 chunks in whole tiles where normalize_whole says
        if (normalize_whole())
          kernel = p.op == Op::softmax ? (stream_out ? normalize_plain_kernel<In, false, true, true>
                                                     : normalize_plain_kernel<In, false, false, true>)
                                       : (stream_out ? normalize_plain_kernel<In, true, true, true>
                                                     : normalize_plain_kernel<In, true, false, true>);
      }
      launch_dependent(true, kernel, capped_grid(total), kSplitThreads, s, p, chunks,
                       static_cast<const State*>(row_states));
      plain_launches().fetch_add(1, std::memory_order_relaxed);
    } else {
      launch_dependent(true, normalize_kernel<In>, capped_grid(total), kSplitThreads, s, p, chunks,
                       static_cast<const State*>(row_states));
    }
  }
  ws.release();
}

}  // namespace

// one12 (session 12): the compact chunk kernel's L2 prefetch distance (l2_ahead above: > 0 that many chunks, −w w
// waves of the kernel's resident blocks, 0 none; the library's kSplitChunkL2Ahead) and the merge kernel's preloading
// (merge_chunk_states_preloaded; 1 the library's, 0 the loop before); the same values either way. For timing and
// tests, process-wide, not thread-safe; declared in split_row_tuning.hpp (read by tune_softmax.cpp and
// test_few_rows_gpu.cpp), not in kernels.hpp, which two dozen objects include. (The normalising kernel prefetching
// alike was timed in the same run and not kept: 1×16777216 f32 softmax 68.67 against 68.96 / 68.29, bf16 log-softmax
// 44.64 against 43.84 / 43.81; its code is in f219827.)
int& split_row_chunk_l2_ahead() {
  static int ahead = kSplitChunkL2Ahead;
  return ahead;
}
int& split_row_merge_preload() {
  static int on = 1;
  return on;
}
// split15 (session 15): the chunk kernels' lean arithmetic (split_row_tuning.hpp; -1 the library's rule, chunk_lean).
int& split_row_chunk_lean() {
  static int setting = -1;
  return setting;
}

bool& split_row_pdl() {
  static bool on = true;
  return on;
}
bool& split_row_cluster() {
  static bool on = true;
  return on;
}
std::int64_t& split_row_cluster_waves() {
  static std::int64_t waves = kSplitClusterMaxWaves;
  return waves;
}
SplitRowTuning& split_row_tuning() {
  static SplitRowTuning t;
  return t;
}
int split_row_active_clusters(int blocks) { return active_clusters_tuned<float, false>(blocks); }
std::uint64_t split_stream_launch_count() { return stream_launches().load(std::memory_order_relaxed); }
unsigned split_stream_last_grid() { return stream_last_grid().load(std::memory_order_relaxed); }
// Declared in split_row_tuning.hpp (read by test_few_rows_gpu.cpp), not in kernels.hpp: the compact kernels'
// launches by the three-kernel path since the process started (2 a softmax / log-softmax call, 1 a logsumexp).
std::uint64_t split_plain_launch_count() { return plain_launches().load(std::memory_order_relaxed); }
// tma14 (split_row_tuning.hpp): chunk_states_tma_kernel's settings (-1: the library's rule, chunk_tma_rule) and its
// launches.
ChunkTmaTuning& split_row_chunk_tma() {
  static ChunkTmaTuning t;
  return t;
}
std::uint64_t split_chunk_tma_launch_count() { return chunk_tma_launches().load(std::memory_order_relaxed); }
// split16 (split_row_tuning.hpp): the f32 normalising kernel's whole tiles (-1: the library's rule, normalize_whole).
int& split_row_normalize_whole() {
  static int setting = -1;
  return setting;
}

void launch_split_rows(const RowProblem& p, cudaStream_t s) {
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch<std::remove_pointer_t<decltype(tag)>>(p, s); });
}

// split18 (split_row_tuning.hpp): the three kernels with the running chunk pass (16-bit softmax / log-softmax only).
void launch_split_running_rows(const RowProblem& p, cudaStream_t s) {
  if (p.op != Op::softmax && p.op != Op::log_softmax)
    smk::throw_unsupported("logsumexp (split_row running chunks)",
                           "the running chunk pass serves softmax and log-softmax only");
  if (p.x_dtype == DType::f32)
    smk::throw_unsupported("softmax (split_row running chunks)",
                           "the running chunk pass is built for f16 / bf16 inputs (f32: not faster, split18)");
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch<std::remove_pointer_t<decltype(tag)>>(p, s, true); });
}
std::uint64_t split_running_launch_count() { return running_launches().load(std::memory_order_relaxed); }
// few19 (split_row_tuning.hpp): the one launch at several chunks a block (-1 the rule, 0 never, k k chunks a block).
int& split_row_multi() {
  static int setting = -1;
  return setting;
}
std::uint64_t split_multi_launch_count() { return multi_launches().load(std::memory_order_relaxed); }
int split_row_multi_active_clusters(bool sixteen_bit, int per, int blocks) {
  return sixteen_bit ? multi_active_clusters<__nv_bfloat16>(per, blocks) : multi_active_clusters<float>(per, blocks);
}
int& split_row_running() {
  static int setting = -1;
  return setting;
}

}  // namespace smk::cuda::kernels
