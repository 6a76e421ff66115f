// softmaxkit (internal): the softmax family's CUDA kernels as the host sees them — the problem description every
// kernel takes, each path's launch configuration, and the launchers. Host-only header: no device code here, so
// the dispatcher (softmax_cuda.cpp) and the timing harness (tests/cuda/softmax/) include it from plain C++.
//
// A problem is `rows` independent rows of `n` elements. Each tensor reaches a row's first element through the
// row map (the non-reduced dimensions, collapsed where possible) and steps through the row with its own stride.
// Kernels compute in f32 whatever the storage type, and choose their reduction trees from n and the launch
// configuration alone, never from the number of rows or the data's alignment: that is what makes a row's result
// bitwise identical alone or in a batch, and from run to run.
#pragma once

#include <atomic>

#include <cuda_runtime_api.h>

#include <cstdint>

#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/online_state.hpp"

namespace smk::cuda::kernels {

constexpr int kMaxRowDims = 7;

// The tensors of a call, as slots of the row map.
enum Slot : int {
  kX,      // the input (forward) or y (backward)
  kDy,     // dy (backward)
  kOut,    // softmax / log-softmax output, or dx
  kStat0,  // logsumexp output, or the state's m
  kStat1,  // the state's l
  kMask,   // the mask (forward)
  kTemp,   // per-row temperatures
  kSlots,
};

struct RowMap {
  int rank = 0;  // 0: one row
  std::int64_t size[kMaxRowDims] = {};
  std::int64_t stride[kSlots][kMaxRowDims] = {};  // in elements of each tensor
};

enum class Op : int { softmax, log_softmax, logsumexp, state, softmax_backward, log_softmax_backward };

constexpr bool writes_rows(Op op) { return op != Op::logsumexp && op != Op::state; }

struct RowProblem {
  Op op = Op::softmax;
  const void* x = nullptr;    // input, or y
  const void* dy = nullptr;   // backward only
  void* out = nullptr;        // softmax / log-softmax output, or dx
  float* stat0 = nullptr;     // LSE, or m
  float* stat1 = nullptr;     // l
  const void* mask = nullptr;
  const float* temp = nullptr;  // per-row temperatures, or null
  DType x_dtype = DType::f32;   // also dy's
  DType out_dtype = DType::f32;
  DType mask_dtype = DType::f32;
  bool has_mask = false;
  bool scale = false;         // divide by a temperature (scalar or per row)
  float temperature = 1.0f;   // the scalar one
  EmptyRowPolicy empty_rows = EmptyRowPolicy::nan;
  std::int64_t rows = 0, n = 0;
  std::int64_t step[kSlots] = {};  // stride along the reduced dimension (0 for per-row tensors)
  RowMap map;
  // strided_inner only: the non-reduced dimension walked by adjacent threads (excluded from `map`).
  std::int64_t inner = 1;
  std::int64_t inner_stride[kSlots] = {};
};

// ---- paths and their configurations ---------------------------------------------------------------------------

// warp_per_row: `lanes` lanes per row (1..32, a power of two; 32 / lanes rows per warp), `elems` elements per lane
// held in registers (4, 8, 16 or 32). Capacity lanes · elems. `grid`: 0 a persistent grid (the blocks that fit at
// once); k > 0 up to k times that many blocks, each walking fewer rows (short8; softmax_cuda.cpp kWarpGridF32).
struct WarpConfig {
  int elems = 4;
  int lanes = 1;
  int grid = 0;
  // short10: 16-bit rows (elems ≥ 8) held packed as loaded, two elements a register, unpacked at each use
  // (packed16.cuh); bitwise the unpacked kernels. Ignored for f32 and where a kernel has no packed form (forward
  // softmax has none: measured 0.78-0.89×, session 10 review F13).
  bool packed = false;
  // short11: dense rows (packed_rule.hpp row_dense) on warp_rows_dense_kernel (warp_row.cu): one row dimension, unit
  // steps, aligned, outputs in the input dtype, no temperature, no mask, so the lane's addressing is row · stride +
  // 16-byte vectors and the kernel runs at fewer registers (more blocks an SM). Bitwise the general kernel. Where a
  // dense kernel is built for (dtype, E, op class); else ignored. packed, where it applies, comes first.
  bool dense = false;
};
// block_per_row and cluster_row: `threads` per block, `cluster` blocks per row (1 = block_per_row, up to 16),
// kBlockElems elements per thread in registers. Capacity threads · cluster · kBlockElems. 24 is the most that
// fits, with the kernel's other state, in the 64 registers that let two 512-thread blocks share an SM (32 spilled
// 8 registers; ptxas -v, CUDA 13.0, sm_90a).
constexpr int kBlockElems = 24;
constexpr int kBackwardBlockElems = 16;  // backward holds y and dy: 2 × 16
struct BlockConfig {
  int threads = 256;
  int cluster = 1;
  // The row pipeline (block_row.cu, row_stage.cuh): a persistent grid whose blocks stage their next row in shared
  // memory by bulk copy while they reduce and write the current one; log ops exchange one state per block across a
  // cluster instead of a max and then a sum. False: one cluster per row, loaded directly (the earlier kernel).
  // The backward kernels stage y and dy the same way (one cluster barrier a row; no state exchange).
  bool staged = false;
  // The wide block (block_per_row only, cluster 1, never staged): up to kWideBlockThreads threads × kWideBlockElems
  // elements (backward: kBackwardWideBlockElems each of y and dy), compiled for one block an SM, so that a row of up to
  // 32768 elements (backward 16384) stays in one block's registers with no cluster barrier (block_row.cu).
  bool wide = false;
  // The backward's wide block with dy in shared memory (backward.cu, block_per_row only, cluster 1): y in registers
  // (kBackwardWideSharedElems a thread), dy copied by cp.async into the block's shared memory, each thread's share
  // where only it reads it, so a row of up to 32768 fits 64 registers. (Its 16-bit form with `staged`, copying the next
  // row's y and dy while the current one was reduced, was removed in session 11, review F13: no call reached it.)
  bool dy_shared = false;
  // The forward's 16-bit block_per_row with its next rows in flight (block_row.cu block_rows_lane_kernel; cluster 1,
  // neither wide nor staged): each thread copies its own share of the block's rows `lane_stages` (1 to
  // kMaxLaneStages) ahead into shared memory by cp.async, on a persistent grid; bitwise the direct kernel's outputs.
  // 0: the direct kernel. f32 rows too since blk17 (session 17).
  int lane_stages = 0;
  // logsumexp and the state on block_per_row with the next rows' loads in flight in registers (block_row.cu
  // block_rows_ahead_kernel, mid8; cluster 1, not staged, threads ≤ kAheadMaxThreads): `ahead` rows (1 to
  // kMaxAheadRows) of each thread's share loaded before the current row's reductions, on a persistent grid; bitwise the
  // direct kernel's results. 0: the direct kernel. evict_first: those loads as ld.global.cs (L2 evict-first).
  int ahead = 0;
  bool evict_first = false;
};
constexpr int kMaxLaneStages = 3;
constexpr int kMaxAheadRows = 2;
// BlockConfig::ahead = kAheadReread: logsumexp and the state with the row read twice and held in no register across a
// barrier (block_row.cu block_rows_reread_kernel, three 512-thread blocks an SM); rows not aligned, not unit-stride, or
// with a temperature or mask take the direct kernel (the same bits).
constexpr int kAheadReread = -1;
constexpr int kAheadMaxThreads = 512;
// The wide block: 1024 threads, the most a block may have, get 64 registers each at one block an SM, the budget of
// the 512-thread kernel at two; the same kernel templates, instantiated for these element counts and bounds.
constexpr int kWideBlockThreads = 1024;
constexpr int kWideBlockElems = 32;          // 32768 elements a row
constexpr int kBackwardWideBlockElems = 16;  // 16384: y and dy, 2 × 16 (2 × 32 would not fit 64 registers)
constexpr int kBackwardWideSharedElems = 32;  // 32768: y in registers, dy in shared memory (BlockConfig::dy_shared)
// split_row: a row is cut into chunks of kSplitThreads · kBlockElems elements (backward: kBackwardBlockElems); one block reduces one chunk to an
// (m, l) state, one block per row merges the chunk states in chunk order, then a second pass writes the outputs.
constexpr int kSplitThreads = 512;
constexpr std::int64_t kSplitChunk = std::int64_t{kSplitThreads} * kBlockElems;                  // 12288
constexpr std::int64_t kBackwardSplitChunk = std::int64_t{kSplitThreads} * kBackwardBlockElems;  // 8192
// strided_inner: blocks of `width` adjacent rows (threads along the inner dimension) × `depth` threads along the
// reduced one; `cache` keeps the tile (n × width f32) in shared memory between passes.
struct StridedConfig {
  int width = 32;
  int depth = 8;
  bool cache = false;
};
// strided_inner's static shared memory: a float partial sum and a 64-bit tie count per thread of a block of at
// most 512. The cached tile (dynamic shared memory) gets what the opt-in limit leaves.
constexpr int kStridedStaticSmem = (4 + 8) * 512;

// Device facts the launchers need, read once per device.
struct DeviceFacts {
  int sm_count = 0;
  int max_smem_optin = 0;  // bytes a block may opt into
};
const DeviceFacts& device_facts();  // of the current device

// ---- launchers (forward and backward; `op` says which) ----------------------------------------------------------
void launch_warp_rows(const RowProblem& p, WarpConfig c, cudaStream_t s);
// warp_per_row's grid for tests and timing (short8, session 8; process-wide, not thread-safe): grid ≥ 0 replaces
// WarpConfig::grid on every warp_per_row launch, forward and backward; -1 leaves the dispatcher's. Rows are computed
// the same way whatever the grid (one lane group a row, the same tree), so the outputs are bitwise the same.
// max_blocks > 0 caps the grid after that (tests: so that every block walks many row groups even on small inputs,
// where the persistent grid and k · resident would both be `needed`, one row group a warp).
struct WarpRowTuning {
  int grid = -1;
  int max_blocks = 0;
  // short10: ≥ 0 replaces WarpConfig::packed on every warp_per_row launch (0 unpacked, 1 packed where a packed kernel
  // exists; 0 also keeps the 16-bit log ops off the occupancy grid's packed form, short16); -1 leaves the
  // dispatcher's. The same bits either way.
  int packed = -1;
  // short11: ≥ 0 replaces WarpConfig::dense the same way (0 general kernel, 1 dense where built). The same bits.
  int dense = -1;
};
WarpRowTuning& warp_row_tuning();
inline bool warp_packed(WarpConfig c) {
  return warp_row_tuning().packed >= 0 ? warp_row_tuning().packed != 0 : c.packed;
}
inline bool warp_dense(WarpConfig c) {  // short11
  return warp_row_tuning().dense >= 0 ? warp_row_tuning().dense != 0 : c.dense;
}
// The last forward warp_per_row launch (warp_row.cu launch_warp_rows, direct launcher calls included; tests: session
// 10 review, F10): its lanes, elements a lane, and whether it took the packed kernel (the log ops only: softmax has
// none). Atomic: every launch writes it, from whichever host thread calls.
struct WarpRowLast {
  std::atomic<int> lanes{0}, elems{0};
  std::atomic<bool> packed{false};
  std::atomic<bool> dense{false};  // short11: it took warp_rows_dense_kernel
};
WarpRowLast& warp_row_last();
// A warp_per_row launch's blocks: `resident` (persistent_grid's: the blocks that fit, at most `needed`), or with a
// grid of k > 0 up to k · resident, never more than `needed`; then at most max_blocks if the tuning sets it.
inline unsigned warp_grid(unsigned resident, std::int64_t needed, WarpConfig c) {
  const int k = warp_row_tuning().grid >= 0 ? warp_row_tuning().grid : c.grid;
  std::int64_t blocks = k <= 0 ? std::int64_t{resident} : std::int64_t{resident} * k;
  if (blocks > needed) blocks = needed;
  const int cap = warp_row_tuning().max_blocks;
  if (cap > 0 && blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks);
}
void launch_block_rows(const RowProblem& p, BlockConfig c, cudaStream_t s);
// block_rows_ahead_kernel's and block_rows_reread_kernel's launches since the process started (tests: which kernel
// served a call that asked for them; the launcher falls back to the direct kernel, with the same bits, where they
// cannot serve).
std::uint64_t block_ahead_launch_count();
std::uint64_t block_reread_launch_count();
// block_rows_lane_kernel's launches since the process started (blk17: which kernel served an f32 or 16-bit call).
std::uint64_t block_lane_launch_count();
// lse_stream (lse10, session 10; lse_stream.cu): logsumexp and the state read once with a running (m, ties, rest) a
// thread, no row held across a barrier. Two configurations, the dispatcher's (softmax_cuda.cpp lse_stream_config):
// lanes 16 (16 lanes a row in 256-thread blocks), or lanes 0 with threads 128 (one block of 128 a row); the others
// lse10 timed (8 / 32 lanes, 256 / 512 threads) lost and were removed (session 10 review, F3). Its results are a
// function of n and this configuration alone (not bitwise block_per_row's). Throws Error for softmax / log-softmax or
// another configuration.
struct LseStreamConfig {
  int lanes = 0;
  int threads = 128;
};
void launch_lse_stream_rows(const RowProblem& p, LseStreamConfig c, cudaStream_t s);
std::uint64_t lse_stream_launch_count();  // its launches since the process started (tests: that it served a call)
// The configuration of the dispatcher's last lse_stream call (softmax_cuda.cpp; tests: which one the rule chose,
// session 10 review F2; direct launcher calls leave it as it is). Atomic: every dispatched lse_stream call writes it.
struct LseStreamLast {
  std::atomic<int> lanes{-1}, threads{-1};
};
LseStreamLast& lse_stream_last_config();
// Uses a stream-ordered workspace of rows · (chunks + 1) states.
void launch_split_rows(const RowProblem& p, cudaStream_t s);
// split_row's merge and normalising kernels start as programmatic dependents of the kernel before them (true, the
// library's choice) or by plain launches (false). For tests and timing only; process-wide, not thread-safe.
bool& split_row_pdl();
// split_row's one-launch variant (split_row.cu cluster_split_kernel: one cluster per row, bitwise the three kernels'
// outputs) for calls of few enough chunks (true, the library's choice), or always the three kernels (false). For
// tests and timing only; process-wide, not thread-safe.
bool& split_row_cluster();
// The variant's bounds: rows of at most kSplitClusterMaxChunks chunks (a cluster of up to 16 blocks, an H100/H200
// extension), calls of at most kSplitClusterMaxWaves × the clusters of that size the device runs at once
// (split_row_active_clusters; before split6, × the resident blocks of 512 threads: rows · chunks ≤ 264). Measured
// (H200, 2026-11-30, commit ed489dc, test_cuda_few_rows FixedCostTiming, GPU µs a call replayed from a CUDA graph,
// one launch → three kernels): within one wave 1×151936 f32 softmax 8.0 → 9.2, 4×151936 8.1 → 9.7, logsumexp 5.8 →
// 5.7 (and the host's 5 µs a call against 11–14); past it 32×128256 (1.3 waves) f32 softmax 23.5 → 19.5, logsumexp
// 14.0 → 9.7 (bf16 softmax 21.2 → 22.1), 96×151936 (4.7 waves) 74.0 → 56.4: one wave.
constexpr std::int64_t kSplitClusterMaxChunks = 16;
constexpr std::int64_t kSplitClusterMaxWaves = 1;
std::int64_t& split_row_cluster_waves();  // starts at kSplitClusterMaxWaves; changing it is for tests and timing only
// split_row's test hook (split6), for tests and timing only (tests/cuda/softmax/test_few_rows_gpu.cpp). Process-wide,
// not thread-safe. split6 timed four levers as run-time switches (H200, 2026-11-30, run of 7af3a0c, test_cuda_few_rows
// Split6Timing, GPU µs a call replayed from a CUDA graph, all four on → each off in turn, against all off = the kernels
// before split6; docs/bench/split6-s6-2026-11-30.md):
//   1×16777216 f32 softmax 89.1 → push off 89.0, fused merge off 77.5, whole tiles off 83.4, staging off 85.7 (all
//     off 67.8); bf16 66.1 → 66.1, 53.0, 78.1, 64.6 (61.7); logsumexp f32 30.2 → staging off 26.4 (26.4)
//   4096×151936 f32 softmax 2483 → 2484, 2329, 2431, 2288 (2125); bf16 2123 → 2133, 1746, 2365, 1932 (1918);
//     logsumexp f32 879 → staging off 724 (722)
//   32×128256 f32 softmax 26.0 → 26.3, 26.0, 27.0, 23.6 (21.7); bf16 19.6 → 19.7, 19.8, 25.3, 17.3 (21.7)
//   1×151936 f32 softmax 7.40 → 7.44, 7.40, 7.39, 7.39 (7.44): one launch, no lever moves it
// Kept, as code and not as switches (the switches made the f32 chunk and normalising kernels spill, ptxas -v, where
// the kernels before had none): the pushed exchange (split_row.cu cluster_split_kernel; even in time, one cluster
// barrier fewer) and whole tiles in the normalising kernel for 16-bit chunks (normalize_kernel). Removed: the
// normalising kernel merging the chunk states itself (two launches) and the chunk kernel staging its next chunk by
// bulk copy on a persistent grid, both slower wherever they ran (their code is in commit 7af3a0c).
struct SplitRowTuning {
  // Overrides the device's count of resident clusters the one-launch variant and the dispatcher's cluster_row see
  // (-1: the device's answer; 0: as on a GPU or a MIG/MPS slice without room for the cluster).
  int active_clusters = -1;
  // few7 (session 7): split_row's compact kernels for the common call (unit-stride rows with 16-byte-aligned starts,
  // no mask, the output in the input's type, a row map of at most one dimension; split_row.cu common_call): the
  // one-launch kernel (a temperature allowed), the chunk and normalising kernels (no temperature) and the backward's
  // chunk-sum and elementwise kernels (no temperature), each bitwise the generic kernel's outputs. False: the generic
  // kernels serve every call (for tests and timing).
  bool common_call = true;
  // vocab8 (session 8): split_stream (split_row.cu: the three kernels' work in one persistent launch, each row's
  // normalising items ~lag rows after its chunk items, so that its second read comes from L2): -1 the library's rule
  // (f32 log-softmax of at least kSplitStreamMinRows rows), 0 never (the three kernels), 1 wherever it can serve (the
  // common call, softmax and log-softmax, 2 … 32 chunks). stream_lag: rows between a row's chunk items and its
  // normalising items (0: the library's, from kSplitStreamL2Bytes). stream_hints: the normalising reads evict-first
  // and the stores streaming.
  int stream = -1;
  int stream_lag = 0;
  bool stream_hints = true;
  // stream_max_blocks (tests only): caps split_stream's persistent grid (0: no cap), so that each block takes many
  // items (small test cases otherwise get about one item a block). Any grid of at least one block finishes.
  int stream_max_blocks = 0;
  // one11 (session 11): split_row's normalising kernel (the compact one, the common call) with cache hints, bitwise
  // the kernel without: 1 (the library's) its loads evict-first (ld.global.cs, the input's last use) and its stores
  // streaming (st.global.cs), 0 plain loads and stores (the kernel before). Measured (one11's H200 run of ec84571):
  // 1-4 % faster at 1×16777216 and 4×4194304 softmax / log-softmax, within noise at 32×128256 (split_row.cu
  // normalize_plain_kernel has the numbers). The chunk pass's loads L2 evict-last and a persistent chunk kernel loading
  // a chunk ahead were timed in the same run and not kept (docs/perf-notebook.md "one11"; their code is in ec84571).
  int l2_hints = 1;
};
SplitRowTuning& split_row_tuning();
// split_stream's launches since the process started, and its last launch's grid (tests: that it served, capped).
std::uint64_t split_stream_launch_count();
unsigned split_stream_last_grid();
// How many clusters of `blocks` blocks of 512 threads (at most kSplitClusterMaxChunks) the current device runs at once:
// cudaOccupancyMaxActiveClusters of split_row's one-launch kernel, 0 below compute capability 9.0 or where the query
// refuses the size; asked once per device, kernel and size, then served from a cache without a CUDA call. The
// dispatcher reads it for cluster_row too (its direct kernel's blocks are at most 512 threads of at most 64 registers
// and a few hundred bytes of static shared memory: no more than this kernel's), and falls back to split_row where it
// is 0.
int split_row_active_clusters(int blocks);
// row_loop (vocab10, row_loop.cu): split_row's many-row calls in one persistent launch, block b walking rows b, b + G,
// … twice (chunk states as split_row's chunk kernel forms them, merged in its merge kernel's order, then the chunks
// again in reverse, normalised or the gradient formed): bitwise the three kernels' outputs, forward (softmax,
// log-softmax) and backward, the common call only, rows of 2 … kRowLoopMaxChunks chunks (forward 393216, backward
// 262144). Built only where the rule sends calls (row_loop_built_for: bf16 every op, f32 softmax).
// launch_*_row_loop_rows return false, launching nothing, where no kernel is built for the call, the kernels do not
// serve it or the rule (row_loop_rule) does not send it there; the caller then takes the three kernels.
constexpr int kRowLoopMaxChunks = 32;
struct RowLoopTuning {
  int use = -1;           // -1 the rule (row_loop_rule), 0 never, 1 wherever the kernels serve the call
  int blocks_per_sm = 0;  // 0: the kernel's occupancy (2); else that many blocks an SM
  int max_blocks = 0;     // tests only: caps the grid (0: no cap), so that each block walks many rows
  bool hints = true;      // pass 1 L2 evict-last, pass 2 evict-first loads and streaming stores
};
RowLoopTuning& row_loop_tuning();  // for tests and timing only; process-wide, not thread-safe
bool row_loop_built_for(Op op, DType t);  // a row_loop kernel exists for (op, input dtype)
bool row_loop_rule(Op op, DType t, std::int64_t rows, std::int64_t n);
bool launch_row_loop_rows(const RowProblem& p, cudaStream_t s);           // softmax, log-softmax
bool launch_backward_row_loop_rows(const RowProblem& p, cudaStream_t s);  // both backward ops
std::uint64_t row_loop_launch_count();
unsigned row_loop_last_grid();
// grid_row: split_row's chunks and merge (bitwise its results) in one cooperative, grid-resident launch, chunks
// staged in shared memory across the grid barrier (grid_row.cu). Forward only. Workspace: rows · chunks states.
void launch_grid_rows(const RowProblem& p, cudaStream_t s);
// grid_row's levers, for tests and timing only (tests/cuda/softmax/test_grid_row_gpu.cpp); the defaults are the
// library's choice. Process-wide and not thread-safe.
struct GridRowTuning {
  int max_slots = -1;        // cap on the chunks a block stages in shared memory (-1: as many as fit; 0: none)
  bool evict_first = true;   // the staged chunks' reads marked L2 evict-first, keeping the others for their re-read
  bool cooperative = true;   // false: a plain launch, its barrier an atomic counter zeroed by a memset per call
};
GridRowTuning& grid_row_tuning();
void launch_strided_inner(const RowProblem& p, StridedConfig c, cudaStream_t s);
// cluster_stage (cluster_stage.cu, vocab7): a forward row on chip across a cluster of up to 16 blocks, each block's
// slice bulk-copied into shared memory two rows ahead, read once and written once. Returns false, launching nothing,
// where it cannot serve the call (a backward op, a row longer than 16 slices, a device below compute capability 9.0
// or without room for the cluster); the caller then takes another path.
bool launch_cluster_stage_rows(const RowProblem& p, cudaStream_t s);
// For tests and timing only (process-wide, not thread-safe): off makes launch_cluster_stage_rows refuse every call;
// the count of its launches since the process started.
bool& cluster_stage_on();
std::uint64_t cluster_stage_launch_count();
// cluster_stage's lever and what its last launch chose, for tests and timing only (process-wide, not thread-safe):
// max_threads caps the threads a block (0: the launcher's choice, 256 where a row then fits 16 slices (vocab8), else
// the kernel's most, 896 for f32, 1024 for 16-bit; at or above the kernel's most: the kernel's most), so that a row
// takes more, smaller slices (a larger cluster).
struct ClusterStageTuning {
  int max_threads = 0;
  bool pow2_cluster = false;  // round the cluster size up to a power of two (GPCs hold those without a remainder)
  // How a slice reaches shared memory: -1 each thread's own 16-byte vectors by cp.async; 0 one bulk copy
  // (cp.async.bulk) a slice; > 0 bulk copies of that many bytes (a multiple of 16).
  int copy = -1;
  // The dispatcher offers cluster_stage every forward row it can hold (32769 … 524288), whatever the op and dtype,
  // instead of its measured rule (softmax_cuda.cpp cluster_stage_takes): the tests reach every op and dtype this way.
  bool always = false;
  // > 0: at most this many clusters a launch (tests: few clusters walk many rows, so the stages refill at few rows).
  int max_clusters = 0;
};
ClusterStageTuning& cluster_stage_tuning();
// What cluster_stage's last launch chose (timing output only): C, T, clusters resident at once. Atomic: every launch
// writes it, from whichever host thread calls.
struct ClusterStageLast {
  std::atomic<int> cluster{0}, threads{0}, active{0};
};
ClusterStageLast& cluster_stage_last();

void launch_backward_warp_rows(const RowProblem& p, WarpConfig c, cudaStream_t s);
// The warp_per_row configuration of the dispatcher's last backward call (softmax_cuda.cpp softmax_backward; tests:
// which lanes and elements a lane the rule chose: session 9 review, F10; direct launcher calls leave it as it
// is). Atomic: every dispatched backward warp call writes it, from whichever host thread calls.
// packed: whether backward.cu's last warp launch took the packed kernel; unlike the rest, written by every launch,
// direct launcher calls included (session 10 review, F10).
struct WarpBackwardLast {
  std::atomic<int> lanes{0}, elems{0}, grid{-1};
  std::atomic<bool> packed{false};
};
WarpBackwardLast& warp_backward_last();
void launch_backward_block_rows(const RowProblem& p, BlockConfig c, cudaStream_t s);
// The backward passes read twice (backward_reread.cu, mid9; block_per_row's rows): a loop over the row for
// s = Σ dy·y (or Σ dy), then y and dy read again for dx, no row held in registers, kBackwardRereadThreads threads a
// row, two blocks an SM. 16-bit softmax and log-softmax backward rows of up to kBackwardRereadMaxN (softmax backward
// built again by mid11; f32 rows throw Error(unsupported)), any layout, temperature and output type; its launches
// since the process started (tests: which kernel served).
constexpr int kBackwardRereadThreads = 1024;
constexpr std::int64_t kBackwardRereadMaxN = 32768;
void launch_backward_reread_rows(const RowProblem& p, cudaStream_t s);
std::uint64_t backward_reread_launch_count();
void launch_backward_split_rows(const RowProblem& p, cudaStream_t s);
void launch_backward_strided_inner(const RowProblem& p, StridedConfig c, cudaStream_t s);

// Stream-ordered scratch memory from a library-owned pool on the current device (cudaMallocFromPoolAsync), so
// concurrent calls on different streams never share it and graph capture works. Freed on the same stream.
void* workspace_alloc(std::size_t bytes, cudaStream_t s);
void workspace_free(void* p, cudaStream_t s);

}  // namespace smk::cuda::kernels
