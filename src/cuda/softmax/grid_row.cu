// grid_row: few long rows (decode batches of a vocabulary, one enormous row) in ONE launch. split_row (split_row.cu)
// takes three launches and reads every element twice from DRAM; at 1×151936 it is latency-bound (16.9 µs for 0.6
// MB) and at 1×16M it moves 1.83 TB/s. This kernel keeps split_row's chunks (kSplitChunk elements, reduced by
// chunk_states.cuh's chunk_state) and its merge (merge_chunk_states), so its results are bitwise split_row's, and
// runs them in one persistent, grid-resident kernel:
//   1. the rows' chunks, in order, are dealt out evenly to the grid's blocks (block b takes chunks ⌊b·C/G⌋ up to
//      ⌊(b+1)·C/G⌋ of all C = rows × chunks-per-row, so a block may span a row boundary). A block first copies up
//      to `slots` of its chunks into shared memory (cp.async, in flight while it works), reduces the chunks that
//      do not fit straight from global memory, then the staged ones from shared memory, and publishes each
//      chunk's state;
//   2. one grid-wide barrier (cooperative launch: cudaLaunchCooperativeKernel refuses a grid that is not wholly
//      resident, where a hand-made barrier over an atomic counter would hang; it needs no counter to reset, so no
//      memset before each call, and compute-sanitizer's synccheck understands it);
//   3. each block merges the chunk states of each row it touches (every block in the same fixed order, so all get
//      the same row state) and writes its chunks' outputs: the ones not on chip re-read in the reverse of their
//      first read (the most recent still in L2), then the staged ones from shared memory. logsumexp and the state
//      stop after the barrier: the block that holds a row's first chunk writes the row's outputs.
// Nothing depends on the grid size but the work's distribution: a chunk's state and the merge order are functions
// of n alone, so a row's result is the same alone, in a batch, on any GPU and under split_row.
//
// Traffic per element: softmax / log-softmax read once from DRAM and write once (8 B f32, 4 B bf16) for the chunks
// held on chip; the rest is read twice, the second time mostly from L2. On chip: 2 blocks × 512 threads per SM,
// each with `slots` chunks of shared memory (2 × 48 KB f32, 4 × 24 KB bf16): 25.9 MB over 132 SMs, whatever the
// dtype. logsumexp / state read once (4 B / 2 B).
// Floor on the H200 at 4.27 TB/s (copy) / ~4.5 (read): 1×151936 f32 1.2 MB moved, 0.28 µs (latency-bound:
// a launch, one DRAM round trip, a grid barrier, the stores); 32×128256 f32 32.8 MB, 7.7 µs; 1×16777216 f32
// 134 MB, 31.4 µs (bf16 15.7 µs).
// Measured (H200, 2026-11-30, commit 219cea4, `softmaxkit bench`, L2 flushed; docs/bench/fewrows-2026-11-30.md):
// slower than split_row on 29 of 30 rows, equal on one — softmax f32 1×151936 18.4 µs (split_row 17.2), 32×128256
// 34.5 (30.4), 1×16777216 92.1 = 1.46 TB/s (73.4 = 1.83 TB/s); bf16 21.4 (18.5), 35.4 (30.4), 86.0 (69.8);
// logsumexp within 0–2 µs of split_row's. Staging off, the evict-first hint off, and a plain launch with a counter
// barrier instead of the cooperative one moved it by −4.3 to +4.6 µs, never to split_row's times (test_grid_row
// LeversTiming), and a 1×32 row takes 17.5 µs against split_row's 13.5: a fixed cost that no lever here moved. So
// the dispatcher does not choose it (kGridRowMaxBytes = 0); it stays a forced path, tested, for the next attempt.
// few7 (session 7): 16-bit softmax's chunk terms by its output type, as split_row's (chunk_state<kLog, Out>), so the
// two stay bitwise one another's; not re-timed (IssueLengthsFewRows, grid_row bitwise split_row, passed on the H200).
#include <cooperative_groups.h>

#include <algorithm>
#include <type_traits>

#include "cuda/softmax/chunk_states.cuh"
#include "cuda/softmax/launch.hpp"

namespace smk::cuda::kernels {

namespace {

namespace cg = cooperative_groups;
using State = ChunkState;

// cp.async of 16 bytes, global to shared, bypassing L1, with an L2 cache policy (createpolicy). The "memory"
// clobbers keep the compiler from moving this thread's later shared-memory reads of the same bytes above the wait.
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem, std::uint64_t policy) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "l"(policy)
               : "memory");
}
// An L2 policy: evict-first (the line is not wanted again: it now lives in shared memory) or the normal one.
__device__ __forceinline__ std::uint64_t l2_policy(bool evict_first) {
  std::uint64_t p;
  if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Starts copying chunk `c` of a row (input at `x`, stride `step`) into `stash`, laid out as the chunk is in a
// unit-stride row, so that RowTile<In, kBlockElems>::load from `stash` gives the values it gives from global memory.
// Each thread copies exactly the elements RowTile assigns to it, so it later reads only what it copied itself
// (after copy_async_wait_all, no barrier needed). Full aligned vectors go by cp.async; the rest (a strided or
// unaligned row, a chunk's ragged end) element by element.
template <typename In>
__device__ __forceinline__ void stage_chunk(In* stash, const In* x, std::int64_t step, int len, std::uint64_t policy) {
  using Tile = RowTile<In, kBlockElems>;
  constexpr int V = Tile::V;
  const bool vec = step == 1 && (reinterpret_cast<std::uintptr_t>(x) % 16) == 0 && V * sizeof(In) == 16;
  const int g = threadIdx.x;
#pragma unroll
  for (int k = 0; k < Tile::K; ++k) {
    const int i0 = Tile::index(k, g, kSplitThreads);
    if (vec && i0 + V <= len) {
      copy16_async(stash + i0, x + i0, policy);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < len) stash[i0 + j] = x[static_cast<std::int64_t>(i0 + j) * step];
    }
  }
}

// The barrier of a plain launch (GridRowTuning::cooperative off, to time what the cooperative launch costs): every
// block counts itself in once and waits for the rest. Safe only while every block is resident, which a plain launch
// does not promise (another stream's kernel may hold SMs): the library's default is the cooperative launch.
__device__ __forceinline__ void counter_barrier(unsigned* counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(counter, 1u);
    unsigned seen;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < gridDim.x);
  }
  __syncthreads();
}

// Out: the type softmax's outputs are stored as, for the terms of its chunk states (chunk_states.cuh chunk_state, as
// split_row's kernels take them: a 16-bit Out sums the 16-bit-output tier's terms); float for the log ops.
template <typename In, typename Out, bool kLog>
__global__ void __launch_bounds__(kSplitThreads, 2) grid_rows_kernel(const RowProblem p, std::int64_t chunks,
                                                                  State* states, int slots, bool evict_first,
                                                                  unsigned* counter) {
  using Tile = RowTile<In, kBlockElems>;
  extern __shared__ __align__(16) unsigned char stash_bytes[];
  In* const stash = reinterpret_cast<In*>(stash_bytes);
  __shared__ ChunkScratch scratch;
  __shared__ float red_m[32], red_d[32];

  const std::int64_t total = p.rows * chunks;
  const std::int64_t c_begin = blockIdx.x * total / gridDim.x, c_end = (blockIdx.x + 1) * total / gridDim.x;
  const int staged = static_cast<int>(std::min<std::int64_t>(slots, c_end - c_begin));
  auto x_of = [&](std::int64_t c) {  // chunk c's first input element in global memory
    const std::int64_t row = c / chunks;
    return at<In>(p.x, RowRef{row, 0}.off(p, kX)) + chunk_first(c - row * chunks) * p.step[kX];
  };
  auto len_of = [&](std::int64_t c) { return chunk_len(p.n, c % chunks); };

  // 1. Stage the first `staged` chunks (their copies fly while the others are reduced), reduce the rest straight
  //    from global memory in order, then the staged ones.
  if (staged > 0) {
    const std::uint64_t policy = l2_policy(evict_first);
    for (int i = 0; i < staged; ++i)
      stage_chunk<In>(stash + std::int64_t{i} * kSplitChunk, x_of(c_begin + i), p.step[kX], len_of(c_begin + i),
                      policy);
  }
  auto reduce = [&](std::int64_t c, const In* x, std::int64_t step) {
    const std::int64_t row = c / chunks;
    const RowRef o{row, 0};
    const int len = len_of(c);
    float v[kBlockElems];
    Tile::load(v, x, len, step, threadIdx.x, kSplitThreads);
    Tile::transform(v, row_transform(p, o), len, threadIdx.x, kSplitThreads, chunk_first(c - row * chunks));
    const State st = chunk_state<kLog, Out>(v, scratch);
    if (threadIdx.x == 0) states[c] = st;
  };
  for (std::int64_t c = c_begin + staged; c < c_end; ++c) reduce(c, x_of(c), p.step[kX]);
  copy_async_wait_all();
  for (int i = 0; i < staged; ++i) reduce(c_begin + i, stash + std::int64_t{i} * kSplitChunk, 1);

  // 2. Every chunk state is published (grid.sync orders the memory operations around it).
  if (counter == nullptr) cg::this_grid().sync();
  else counter_barrier(counter);

  // 3. Row outputs: the block holding a row's first chunk writes them.
  if (!writes_rows(p.op)) {
    for (std::int64_t row = (c_begin + chunks - 1) / chunks; row * chunks < c_end; ++row) {
      const State s = merge_chunk_states(states + row * chunks, chunks, red_m, red_d);
      if (threadIdx.x == 0) write_row_stats(p, RowRef{row, 0}, s);
    }
    return;
  }
  // Softmax / log-softmax: this block's chunks, last first (the unstaged ones were read last, so the latest of them
  // are the likeliest still in L2), each row's state merged when the walk enters the row.
  std::int64_t row = -1;
  RowNormalizer<float> norm{};
  for (std::int64_t c = c_end - 1; c >= c_begin; --c) {
    if (c / chunks != row) {
      row = c / chunks;
      norm = merge_chunk_states(states + row * chunks, chunks, red_m, red_d).normalizer(p.empty_rows);
    }
    const RowRef o{row, 0};
    const std::int64_t i = c - c_begin;
    const bool on_chip = i < staged;
    normalize_chunk<In>(p, o, norm, row_transform(p, o), on_chip ? stash + i * kSplitChunk : x_of(c),
                        on_chip ? 1 : p.step[kX], chunk_first(c - row * chunks), len_of(c));
  }
}

// Chunks of shared memory per block: as many as let two blocks share an SM (the occupancy that the 64-register
// launch bound gives), within the per-block opt-in limit.
template <typename In>
int stash_slots(const void* kernel) {
  int dev = current_device(), per_sm = 0, reserved = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  cudaFuncAttributes attr{};
  SMK_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  const std::int64_t chunk_bytes = kSplitChunk * static_cast<std::int64_t>(sizeof(In));
  const std::int64_t per_block =
      std::min<std::int64_t>(per_sm / 2 - reserved, device_facts().max_smem_optin) - attr.sharedSizeBytes;
  return static_cast<int>(std::max<std::int64_t>(0, per_block / chunk_bytes));
}

template <typename In, typename Out, bool kLog>
void launch(const RowProblem& p, cudaStream_t s) {
  const auto kernel = grid_rows_kernel<In, Out, kLog>;
  // Slots per device: the shared-memory opt-in is a function attribute, set once per device to the most we use.
  static int slots_of[64] = {};
  static DeviceOnce optin;
  optin.run([&] {
    const int slots = stash_slots<In>(reinterpret_cast<const void*>(kernel));
    SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(slots * kSplitChunk * sizeof(In))));
    slots_of[current_device() & 63] = slots;
  });
  // logsumexp and the state never read a chunk twice: no staging.
  const GridRowTuning& tune = grid_row_tuning();
  int slots = writes_rows(p.op) ? slots_of[current_device() & 63] : 0;
  if (tune.max_slots >= 0) slots = std::min(slots, tune.max_slots);
  const std::size_t smem = static_cast<std::size_t>(slots) * kSplitChunk * sizeof(In);
  const std::int64_t chunks = (p.n + kSplitChunk - 1) / kSplitChunk;
  const std::int64_t total = p.rows * chunks;
  // Every block must be resident: the grid is what fits at once (cudaLaunchCooperativeKernel checks it).
  const unsigned grid = persistent_grid(kernel, kSplitThreads, smem, total);
  // The chunk states, then (plain launch only) the barrier's counter.
  const std::size_t states_bytes = sizeof(State) * static_cast<std::size_t>(total);
  ScopedWorkspace ws(states_bytes + 64, s);  // freed even if a launch below throws
  auto* states = static_cast<State*>(ws.get());
  unsigned* counter = nullptr;
  if (!tune.cooperative) {
    counter = reinterpret_cast<unsigned*>(reinterpret_cast<unsigned char*>(states) + (states_bytes + 15) / 16 * 16);
    SMK_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned), s));
  }
  RowProblem arg = p;
  std::int64_t chunks_arg = chunks;
  int slots_arg = slots;
  bool evict_arg = tune.evict_first;
  void* args[] = {&arg, &chunks_arg, &states, &slots_arg, &evict_arg, &counter};
  if (tune.cooperative) {
    SMK_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(grid),
                                               dim3(kSplitThreads), args, smem, s));
  } else {
    SMK_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(kSplitThreads), args,
                                    smem, s));
  }
  SMK_CUDA_CHECK_LAUNCH("grid_rows_kernel");
  ws.release();
}

}  // namespace

GridRowTuning& grid_row_tuning() {
  static GridRowTuning t;
  return t;
}

void launch_grid_rows(const RowProblem& p, cudaStream_t s) {
  if (p.rows == 0) return;
  if (p.n == 0) return launch_split_rows(p, s);  // no chunk to deal out; split_row writes the empty rows' outputs
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    if (p.op != Op::softmax) launch<In, float, true>(p, s);
    else if (!std::is_same_v<In, float> && p.out_dtype != DType::f32) launch<In, In, false>(p, s);
    else launch<In, float, false>(p, s);
  });
}

}  // namespace smk::cuda::kernels
