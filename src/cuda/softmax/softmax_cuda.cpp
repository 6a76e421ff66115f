// softmaxkit CUDA backend, softmax family: kernel selection.
//
// The dispatcher picks the path from the layout, the op, the dtype and the row length n alone — never from the
// number of rows — so a row's result is bitwise the same alone or in a batch (each path's reduction tree is a
// function of n and the dtype). Within a path, a kernel may be chosen by the size of the call only where the kernels
// give the same bits (split_row's one-launch kernel, three kernels, split_stream or row_loop; the warp grid;
// block_per_row's rows-ahead and re-read kernels), each pair held to that by a bitwise test:
//   the reduced dimension not unit-stride in the input   strided_inner
//   n ≤ kWarpMaxN (1024)                                 warp_per_row (64 bytes a lane; the backward's f32 rows of
//                                                        17..256 and 16-bit rows to 64 on 32, short8 / short9,
//                                                        16-bit rows of 65..128 on 16, pack14)
//   n ≤ kBlockMaxN (12288; backward 8192)                block_per_row (512 threads × 24 elements at most; backward 16;
//                                                        16-bit forward lane-staged from 2048 (softmax; log-softmax
//                                                        since blk17) / 7168 (logsumexp, state), mid16, on by
//                                                        default since fwd16's run, session 7; f32 softmax /
//                                                        log-softmax of 7168..11264 one row ahead, blk17)
//   n ≤ kWideAutoMaxN (32768; backward 16384)            block_per_row, the wide block (1024 × 32; backward 1024 × 16;
//                                                        forward staged above 16384 for 16-bit rows and the log ops)
//   backward, n ≤ 32768                                  block_per_row with dy in shared memory (y's 32 a thread in
//                                                        registers): 16-bit rows from 2048, f32 from 16385 (dense
//                                                        16-bit rows to 16384 with y held packed, pack14)
//   16-bit log-softmax backward, n of 24576 … 32768;     backward_reread (read twice, no row in registers; mid9;
//   16-bit softmax backward, n of 28673 … 32768          rule from mid11's run, session 11)
//   forward softmax / log-softmax, n of 32769 … 65536    cluster_stage (vocab7: the row across a cluster in shared
//   (16-bit and f32 since vocab8; f32 softmax to 45055,  memory, read once; where the device runs its cluster)
//   split_row from 45056, next20)
//   n ≤ kClusterAutoMaxN (65536)                         cluster_row (not logsumexp nor the state: split_row, or
//                                                        lse_stream's chunk kernel for 16-bit rows, lse17)
//   longer, the whole input < kGridRowMaxBytes (0: off)  grid_row (bitwise split_row's results, one launch)
//   longer                                               split_row (one launch, a cluster per row, where the whole
//                                                        call fits the device at once; f32 log-softmax of ≥ 256 rows
//                                                        split_stream, vocab8; bf16 forward and backward and f32
//                                                        softmax of ≥ 256 rows row_loop, vocab10; else three
//                                                        kernels: the same bits; 16-bit softmax / log-softmax to
//                                                        the same type past 32 chunks (n > 393216, automatic only):
//                                                        the three kernels with the running chunk pass, split18,
//                                                        its own order, split_running_takes)
// logsumexp / the state, rows of 1024 and of 2048 (f32) lse_stream (lse10: each element read once into a running
//   / 1024 (16-bit) … 32768 (automatic only)            state a thread; 16 lanes a row at 1024 and 16-bit rows to
//                                                        6144, next20; softmax_cuda.cpp lse_stream_config)
// logsumexp / the state, 16-bit rows past 32768         lse_stream's chunk kernel (lse17: split_row's chunks, 128
//   (automatic only)                                    threads a chunk on a running state, split_row's merge)
// ScopedSoftmaxPath may force any path; a forced path that cannot serve a call throws Error(unsupported).
#include "cuda/softmax/softmax_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "cuda/device_attrs.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/backward_reread.hpp"
#include "cuda/softmax/kernels.hpp"
#include "cuda/softmax/lse_chunks.hpp"  // lse17
#include "cuda/softmax/packed_rule.hpp"
#include "cuda/softmax/split_row_tuning.hpp"  // split18: launch_split_running_rows, split_row_running
#include "cuda/softmax/warp_backward.hpp"
#include "cuda/softmax/warp_occ.hpp"
#include "softmax/layout.hpp"
#include "softmax/path.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/cuda/lesson.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace kernels {

int current_device() { return current_device_ordinal(); }

WarpBackwardLast& warp_backward_last() {
  static WarpBackwardLast last;
  return last;
}

// From the per-device cache (cuda/device_attrs.hpp): no lock and no CUDA call after a device's first use.
const DeviceFacts& device_facts() {
  static std::array<DeviceFacts, kMaxDevices> facts{};
  static std::array<std::atomic<bool>, kMaxDevices> ready{};
  static std::mutex mu;
  const DeviceAttrs& a = current_device_attrs();
  DeviceFacts& f = facts[a.ordinal];
  if (ready[a.ordinal].load(std::memory_order_acquire)) return f;
  std::lock_guard<std::mutex> lock(mu);
  // Checked again under the lock: another thread may have filled the entry meanwhile, and a thread reading it
  // lock-free after its acquire load must never see it rewritten.
  if (ready[a.ordinal].load(std::memory_order_relaxed)) return f;
  f.sm_count = a.sm_count;
  f.max_smem_optin = a.max_smem_optin;
  ready[a.ordinal].store(true, std::memory_order_release);
  return f;
}

int cached_blocks_per_sm(const void* kernel, int threads, std::size_t smem,
                         int (*query)(const void*, int, std::size_t)) {
  struct Key {
    const void* kernel;
    int device, threads;
    std::size_t smem;
    bool operator<(const Key& o) const {
      return std::tie(kernel, device, threads, smem) < std::tie(o.kernel, o.device, o.threads, o.smem);
    }
  };
  static std::mutex mu;
  static std::map<Key, int> cache;
  const Key key{kernel, current_device(), threads, smem};
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const int n = query(kernel, threads, smem);
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = n;
  return n;
}

namespace {
// The pool of each device, created on its first use; later calls read it without a lock (an acquire load).
cudaMemPool_t workspace_pool() {
  static std::array<std::atomic<cudaMemPool_t>, kMaxDevices> ready{};
  static std::array<cudaMemPool_t, kMaxDevices> pools{};
  static std::mutex mu;
  const int dev = current_device();
  if (dev >= kMaxDevices) throw_unsupported("softmax", "CUDA device ordinals above 63 are not supported");
  if (cudaMemPool_t p = ready[dev].load(std::memory_order_acquire)) return p;
  std::lock_guard<std::mutex> lock(mu);
  if (pools[dev] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    SMK_CUDA_CHECK(cudaMemPoolCreate(&pools[dev], &props));
    // Keep what was freed (a few MB at most: one state per 12288 elements) instead of returning it to the driver at
    // every synchronisation, so the next call's allocation is a pool hit.
    std::uint64_t keep = std::uint64_t{64} << 20;
    SMK_CUDA_CHECK(cudaMemPoolSetAttribute(pools[dev], cudaMemPoolAttrReleaseThreshold, &keep));
    ready[dev].store(pools[dev], std::memory_order_release);
  }
  return pools[dev];
}
}  // namespace

void* workspace_alloc(std::size_t bytes, cudaStream_t s) {
  void* p = nullptr;
  SMK_CUDA_CHECK(cudaMallocFromPoolAsync(&p, std::max<std::size_t>(bytes, 256), workspace_pool(), s));
  return p;
}
void workspace_free(void* p, cudaStream_t s) { SMK_CUDA_CHECK(cudaFreeAsync(p, s)); }

}  // namespace kernels

namespace {

using detail::BackwardKind;
using detail::SoftmaxKind;
using detail::SoftmaxProblem;
using kernels::RowProblem;

// ---- thresholds between paths ------------------------------------------------------------------------------------
// Capacities of the register-resident paths (a forced path's rows must fit in it).
constexpr std::int64_t kWarpMaxN = 32 * 32;                                        // 32 lanes × 32 elements
constexpr std::int64_t kBlockMaxThreads = 512;
constexpr std::int64_t kBlockMaxN = kBlockMaxThreads * kernels::kBlockElems;       // 12288
constexpr std::int64_t kMaxCluster = 16;                                            // non-portable, H100/H200
constexpr std::int64_t kClusterMaxN = kMaxCluster * kBlockMaxN;                     // 196608
constexpr std::int64_t kBackwardBlockMaxN = kBlockMaxThreads * kernels::kBackwardBlockElems;  // 8192
constexpr std::int64_t kBackwardClusterMaxN = kMaxCluster * kBackwardBlockMaxN;               // 131072
// The wide block (BlockConfig::wide): block_per_row's rows above kBlockMaxN (backward kBackwardBlockMaxN), one block
// of up to 1024 threads an SM, no cluster barrier.
constexpr std::int64_t kWideBlockMaxN = std::int64_t{kernels::kWideBlockThreads} * kernels::kWideBlockElems;  // 32768
constexpr std::int64_t kBackwardWideBlockMaxN =
    std::int64_t{kernels::kWideBlockThreads} * kernels::kBackwardWideBlockElems;  // 16384
// Up to these row lengths the dispatcher takes the wide block rather than cluster_row: its whole capacity, since it
// was faster at every length measured. H200, 2026-11-30, commit 2feaa39, softmaxkit bench --path auto, the cluster
// dispatcher (old) → the wide block, µs (docs/bench/wideblock-2026-11-30.md):
//   softmax      f32  4096×16384 229 → 142, 2048×24576 177 → 125, 8192×32000 848 → 583; bf16 172 → 100, 135 → 99,
//                626 → 555
//   log-softmax  f32  210 → 145, 164 → 132, 807 → 622; bf16 170 → 103, 136 → 106, 591 → 563
//   logsumexp    f32  154 → 88, 123 → 88, 540 → 360; bf16 141 → 82, 113 → 82, 511 → 419 (split_row 412 f32, 426 bf16)
//   backward     softmax_backward 4096×16384 f32 221 → 193, bf16 181 → 137 (rows above 16384 stay on cluster_row)
// The state runs logsumexp's kernel (not timed apart); log-softmax backward runs softmax backward's (not timed).
constexpr std::int64_t kWideAutoMaxN = kWideBlockMaxN;                  // softmax, log-softmax
constexpr std::int64_t kWideAutoMaxNReadOnly = kWideBlockMaxN;          // logsumexp, state
constexpr std::int64_t kBackwardWideAutoMaxN = kBackwardWideBlockMaxN;  // both backward passes
// The backward's block with dy in shared memory (BlockConfig::dy_shared; until session 11 long 16-bit rows also
// prefetched the next row): y in registers, 32 a thread, so one block of up to 1024 threads holds up to 32768. The
// dispatcher takes it up to kBackwardWideSharedAutoMaxN, its capacity, instead of cluster_row: faster on every row
// timed above 16384 (bw16's runs of e7a1abd and d4f4d06, µs softmax backward, cluster_row → dy-shared): 8192×32000 f32
// 897 → 731, bf16 749 → 416 (prefetching); 2048×24576 f32 162 → 148, bf16 129 → 82. Below 16385, see
// kBackwardSharedFromN16.
constexpr std::int64_t kBackwardWideSharedMaxN =
    std::int64_t{kernels::kWideBlockThreads} * kernels::kBackwardWideSharedElems;  // 32768
constexpr std::int64_t kBackwardWideSharedAutoMaxN = kBackwardWideSharedMaxN;
// block_per_row's backward takes the dy-shared block from these row lengths (16-bit, f32), below them the 512-thread
// block of 16 + 16 a thread (staged for 16-bit rows) and the 1024-thread wide one. (16-bit rows from 28673 prefetched
// the next row there until session 11; mid11 gave those rows to backward_reread, and the prefetching form was removed
// after review F13.) H200, 2026-11-30, bw16's run of d4f4d06, tune_softmax --bw16b, y and dy distinct buffers, µs
// old → dy-shared (softmax backward; log-softmax backward alike; docs/perf-notebook.md "bw16"):
//   bf16  8192×32000 cluster_row 749 → 520 (prefetching 416); 8192×12288 wide16 232 → 149; 4096×16384 139 → 103;
//         16384×4096 512-thread staged 108 → 102; 65536×2048 202 → 192; 32768×1025 143 (unstaged 131) → 146: slower
//   f32   8192×32000 cluster_row 897 → 731; 4096×16384 wide16 195.3 → 195.7, 8192×12288 284 → 287, 16384×4096 194 →
//         194, 65536×2048 380 → 379: even below 16385, so f32 keeps the old kernels there
//   prefetching, bf16: 2048×24576 82 → 90 (slower; bw16's run of e7a1abd), 4096×16384 101 → 118 (slower), 8192×32000
//   520 → 416: it pays only where a block is alone on its SM with a full 1024 threads; the threshold lies between
//   24576 and 32000, taken half-way (two points: provisional).
constexpr std::int64_t kBackwardSharedFromN16 = 2048;
constexpr std::int64_t kBackwardSharedFromNF32 = kBackwardWideAutoMaxN + 1;  // 16385
// mid9 (session 9): the backward read twice, holding no row in registers (backward_reread.cu: 1024 threads, two blocks
// an SM, 32 registers, y and dy re-read from L2), as torch.compile's Triton kernel does. Predicted bf16 8192×32000
// log-softmax backward 443 → ~370 µs; measured (H200, 2026-11-30, mid9's run of c16e5c4, tune_softmax --mid9, inputs
// rotated, median µs, the kernel before (timed twice) → re-read; docs/bench/mid9-s9-2026-11-30.md):
//   softmax bwd      f32  8192×32000 728.9 / 729.2 → 1144.6; 16384×4096 193.0 / 192.7 → 205.6; 4096×16384 193.7 /
//                         193.0 → 204.6; 8192×8192 191.8 / 192.0 → 204.8; 2048×24576 148.7 / 149.3 → 209.4
//                    bf16 409.8 / 411.1 → 478.0; 102.5 / 101.1 → 119.5; 100.9 / 101.3 → 118.8; 100.7 / 100.2 → 125.8;
//                         82.9 / 83.1 → 94.8
//   log-softmax bwd  f32  743.2 / 746.0 → 844.4; 192.7 / 193.0 → 229.8; 193.2 / 193.8 → 206.0; 192.4 / 192.7 → 211.4;
//                         151.8 / 151.4 → 159.8
//                    bf16 449.5 / 448.9 → 441.8; 101.7 / 101.9 → 132.7; 102.8 / 102.7 → 126.0; 101.7 / 102.3 → 142.6;
//                         94.0 / 93.7 → 97.3
// It wins only at 16-bit log-softmax backward 8192×32000 (1.7 %; the old kernel's two timings 0.13 % apart), where the
// old one prefetched (from 28673): so 16-bit log-softmax backward rows from there take it, the bound between 24576
// (lost) and 32000 (won); dx in f32 not timed (the same kernel). Re-timed in session 10 (review F4;
// tune_softmax --lse10-f4, H200, 8192 rows, two samples each, old → re-read, µs): 28673 bf16 1405 → 1133, f16 1393 →
// 1107 (odd: no vectors for either); 30000 bf16 442 → 436, f16 443 → 394; 32000 bf16 448 → 440, f16 446 → 399; 32768
// bf16 449 → 451 (even), f16 450 → 409. The rule stands (docs/perf-notebook.md, session 10's lead section).
// mid11 (session 11): the bf16 kernel's spill removed (each element unpacked from its 32-bit word at its use: 12 B of
// spill in the hot loop → 0; the same bits, compared by hash on the H200), and 16-bit softmax backward built on it
// again. H200, 2026-11-30, mid11's run of 7d1df6d, tune_softmax --mid11, inputs rotated, median of 30, µs, the
// dispatcher's dy-shared block (timed first and last) → the re-read kernel (docs/bench/mid11-s11-2026-11-30.md):
//   log-softmax bwd  bf16 8192×32000 453.9 / 454.1 → 404.5 (the re-read kernel before the fix: 446.2, 444.2);
//                    8192×30000 450.4 / 451.3 → 397.7 (before: 440.5, 439.2); 8192×32768 453.7 / 454.4 → 412.1;
//                    2048×24576 93.7 / 93.1 → 87.2; 4096×16384 102.5 / 102.1 → 116.5; 8192×8192 102.9 / 101.6 →
//                    133.9; 16384×4096 102.8 / 102.9 → 124.6; f16 alike (32000 449.1 / 449.0 → 402.7, 24576 93.4 /
//                    93.7 → 87.3, 16384 103.4 / 102.6 → 116.2)
//   softmax bwd      bf16 8192×32000 413.6 / 414.9 → 396.1; 30000 413.7 / 408.8 → 399.3; 32768 441.9 / 443.1 →
//                    399.4; 2048×24576 83.4 / 83.0 → 86.7 (slower); 16384 and below slower (4096×16384 100.7 / 100.6
//                    → 106.2); f16 32000 412.1 / 410.7 → 391.8, 30000 411.2 / 409.1 → 395.8, 24576 82.9 / 82.5 →
//                    84.7 (slower)
// The f16 numbers above are timings of non-finite arithmetic: tune --mid11's inputs in [16, 24) overflow f16, so
// every f16 dx was ±inf / NaN (docs/perf-notebook.md "mid11"). The rule rests on bf16's numbers.
// So 16-bit log-softmax backward takes it from 24576 (the shortest row timed where it won; 16384 lost, 16385..24575
// not timed), 16-bit softmax backward from 28673, where the dy-shared block had prefetched (between 24576, lost, and
// 30000, won). That left the prefetch with no automatic call; it was removed (review F13).
// backward_reread.hpp's override (tests) sends every 16-bit softmax or log-softmax backward row of 4097..32768 to it.
// mid12 (session 12): the kernel's log-softmax backward loads two vectors a step (backward_reread.cu form 7, the same
// bits): bf16 8192×32000 399.8 → 381.6 µs (H200, mid12's run of 696c98f); the bounds below were not re-timed with it.
constexpr std::int64_t kBackwardRereadFromN = 4097;
constexpr std::int64_t kBackwardRereadToN = kernels::kBackwardRereadMaxN;  // 32768
constexpr std::int64_t kBackwardRereadFromN16Log = 24576;
constexpr std::int64_t kBackwardRereadFromN16Softmax = 28673;
bool backward_reread_takes(DType t, kernels::Op op, std::int64_t n) {
  if (n < kBackwardRereadFromN || n > kBackwardRereadToN) return false;
  if (t == DType::f32) return false;  // built for 16-bit rows only
  const int force = kernels::backward_reread_tuning().force;
  if (force >= 0) return force == 1;
  return n >= (op == kernels::Op::log_softmax_backward ? kBackwardRereadFromN16Log : kBackwardRereadFromN16Softmax);
}
// Above this row length the dispatcher takes split_row rather than cluster_row. Measured on the H200
// (tune_softmax, 2026-11-29, docs/perf-notebook.md): at n = 32000 (8192 rows) cluster_row moved 2.58 TB/s and
// split_row 2.04; at n = 151936 (4096 rows) cluster_row 1.89 and split_row 2.36 (f32; bf16 alike). The crossover
// lies between; 65536 until a finer sweep places it.
constexpr std::int64_t kClusterAutoMaxN = 65536;
// logsumexp and the state (no row written) take cluster_row only up to this row length, split_row above it: never,
// since the wide block holds them up to 32768 and split_row beat cluster_row on every longer row timed. H200,
// 2026-11-30, commit 2feaa39, logsumexp µs cluster_row → split_row: 2048×65536 f32 315 → 203, bf16 302 → 206;
// 4096×40000 f32 393 → 273, bf16 371 → 278; also below 32768, 8192×32000 f32 540 → 412, bf16 510 → 426 (there the
// wide block: 360, 419). These ops read the row once on either path; most likely the cluster's per-row barriers cost
// more than split_row's merge launch (not profiled).
constexpr std::int64_t kClusterAutoMaxNReadOnly = kWideAutoMaxNReadOnly;
// Threads per block the cluster configuration aims at: blocks of 192 threads (five per SM at 64 registers) beat
// blocks of 352–512 holding the same row (n = 16384: 2.53 vs 2.53 TB/s f32, 1.53 vs 1.41 bf16; n = 32000: 2.58 vs
// 2.29 f32 at 8 vs 4 blocks per row). Longer rows take up to 16 blocks of up to 512 threads.
constexpr std::int64_t kClusterTargetThreads = 192;
// Bytes a warp_per_row lane aims to hold: 64 (16 f32 or 32 bf16 elements). Measured: 262144×128 f32 E16·L8 3.31
// TB/s against E4·L32 1.94; bf16 E32·L4 2.66 against 0.85; 1048576×32 f32 E16·L2 3.39, bf16 E32·L1 2.73.
constexpr int kWarpLaneBytes = 64;
// (Checked again, H200, 2026-11-30, bw16's run of e7a1abd, tune_softmax --bw16, µs: 262144×128 bf16 softmax E32 L4
// 47.8, E16 L8 53.0, E8 L16 80.9; f32 E16 L8 80.5, E32 L4 82.4; 1048576×32 bf16 E32 L1 48.2, E16 L2 50.2; f32 E16 L2
// 77.9, E8 L4 78.3, E32 L1 165.5; 65536×512 bf16 E32 L16 49.5, E16 L32 56.1: the choice above is the fastest or
// within 2.5 % of it for softmax. A warp kernel staging its next rows in shared memory by cp.async was timed and
// dropped: docs/perf-notebook.md "bw16".)
// Above kClusterAutoMaxN, inputs of fewer than this many bytes (all rows together) would take grid_row, one
// grid-resident launch that stages its chunks in shared memory, instead of split_row's three launches. The two
// compute bitwise the same outputs (chunk_states.cuh), so the rule may look at the number of rows without breaking
// batch invariance. 0: off. Measured (H200, 2026-11-30, commit 219cea4, docs/perf-notebook.md "Issue 3: few long
// rows in one launch"): grid_row was slower than split_row on 29 of 30 rows timed (equal on one), e.g. softmax f32
// 1×151936 18.4 vs 17.2 µs, 32×128256 34.5 vs 30.4, 1×16777216 92.1 vs 73.4; bf16 alike; so split_row keeps every
// long row.
constexpr std::int64_t kGridRowMaxBytes = 0;
// cluster_stage (vocab7, session 7; cluster_stage.cu): forward rows on chip across a cluster, each block's slice copied
// into shared memory two rows ahead, read once and written once. Under the automatic choice it takes softmax and
// log-softmax rows of kClusterStageMinN … kClusterStageMaxN16 elements with 16-bit inputs, and up to
// kClusterStageMaxNF32 with f32 inputs, from cluster_row and split_row, where the device runs its cluster (else they
// keep the old paths: a property of the device, the op, the dtype and n, never of the rows). Measured (H200,
// 2026-11-30, vocab7's run of bb5aa68, test_cuda_cluster_stage Timing, GPU µs a call, old path → cluster_stage; the
// bench in the same run alike; docs/bench/vocab7-s7-2026-11-30.md):
//   bf16 softmax      4096×151936 2603 → 1369, 1024×262144 1036 → 547, 8192×65536 1476 → 933, 4096×40000 428 → 353
//   bf16 log-softmax  4096×151936 2803 → 1259, 1024×262144 1131 → 508, 8192×65536 1179 → 880, 4096×40000 375 → 333
//   f32 softmax       4096×40000 557 → 535, but 8192×65536 1790 → 2051, 4096×151936 2018 → 2472, 1024×262144 874 → 1469
//   f32 log-softmax   4096×40000 528 → 460, but 8192×65536 1720 → 1771, 4096×151936 1884 → 2253, 1024×262144 811 → 1222
//   logsumexp         slower on every shape but bf16 8192×65536 (653 → 649): f32 4096×151936 693 → 1426, bf16 682 → 965
// So f32 rows stay on the old paths above 40000 (the crossover lies between 40000 and 65536: 40000 until a finer sweep
// places it), 16-bit rows up to 262144 (the longest timed; the kernel holds
// 524288; the integrated run below moved it to 65536), and logsumexp and the state never.
// The old paths there are this tree's split_row / cluster_row as built for that run, split_row with few7's compact
// kernels before c98a4c7 (then 1.3–2× slow): session 6's split_row took 1508 / 1383 µs on bf16 4096×151936 softmax /
// log-softmax (b866f3f), still slower than cluster_stage's 1369 / 1259.
// The lead's integrated run (H200, 2026-11-30, 5e29a34, `softmaxkit bench --path auto` = cluster_stage beside
// `--path split_row` with few7's final kernels, µs) re-decided the 16-bit bound: split_row is now faster for softmax at
// 151936 and 262144 at every row count, and cluster_stage carries a fixed cost that few rows pay (a graph replay of one
// row: 10.2 µs against split_row's 5.4):
//   bf16 softmax      1×151936 13.8 vs 8.6, 32×128256 24.3 vs 20.1, 4096×151936 1416 vs 1295, 1024×262144 562 vs 548,
//                     4096×40000 352 vs 400
//   bf16 log-softmax  1×151936 13.4 vs 8.5, 32×128256 23.2 vs 19.5, 4096×151936 1310 vs 1352, 1024×262144 523 vs 573,
//                     4096×40000 341 vs 415
//   f32 softmax       4096×40000 534 (cluster_row 551, split_row 598), 1×40000 13.9 (cluster_row 8.2, split_row 9.9)
// Batch invariance keeps one path per length, so 16-bit rows above 65536 go back to split_row (log-softmax gives up
// 3–9 % at many rows to keep few rows 1.6× faster); 32769..65536 stay on cluster_stage, which beat cluster_row 1.2× at
// 4096×40000 but costs a single row ~5 µs more (f32 1×40000): its fixed cost is the next thing to cut.
// vocab8 (session 8): that fixed cost was the slowest block's work (a row on 2-3 blocks of 640-1024 threads); with
// slices of 256 threads (cluster_stage.cu kStageSliceThreads) a row spreads over 5-8 blocks. Run of ebc8547 (H200,
// 2026-11-30, OneRowTiming, GPU µs a call from a CUDA graph, old path = cluster_row / split_row → cluster_stage at 256
// threads): f32 8192×65536 softmax 1796 → 1624, log-softmax 1728 → 1636; 32×65536 10.05 → 11.88, 9.85 → 10.66;
// 1×65536 4.94 → 6.67, 5.76 → 5.92; so f32 rows up to 65536 take it now (kClusterStageMaxNF32 40000 → 65536: 5-10 %
// faster at many rows for ≤ 1.9 µs more on a few rows: +35 % at one row of 65536, +18 % at 32 rows; 40001..65536 was
// not timed between). 16-bit rows above 65536 stay on split_row: no slice of 256 threads fits them in 16 blocks,
// and at 320 threads (C = 15) one bf16 row of
// 151936 still costs 6.4 / 6.2 µs (softmax / log-softmax) against split_row's 4.95 / 4.71, and vocab7 timed 16 × 320
// at 4096×151936 1607 µs against 1369 at its own size.
// next20 (session 20; H200, 2026-12-02, tune_softmax --next20-f32-65536 on the tree of cf74f41, 240 MB memset before
// each timed launch, median of 3 rounds; docs/perf-notebook.md's session-20 section): f32 softmax (not log-softmax)
// rows from kSplitRowF32SoftmaxFromN take split_row instead (the dispatcher's path for f32 rows past 65536), ratio
// split_row / cluster_stage at 1 / 32 / 1024 / 8192 rows:
//   45056 0.912 / 0.981 / 0.812 / 0.796   49152 0.827 / 1.062 / 0.750 / 0.799   57344 0.987 / 0.944 / 0.827 / 0.791
//   65536 0.958 / 0.904 / 0.875 / 0.887   but 40001 0.810 / 1.199 / 1.128 / 1.118, 32769 0.987 / 0.990 / 1.065 / 1.033
// (40002 … 45055 not timed: they keep cluster_stage, the nearer timed length's choice being unknown). f32 log-softmax
// was mixed at every length (0.84-1.22×; 8192 rows 0.99-1.20×) and keeps cluster_stage to kClusterStageMaxNF32.
// cluster_row, the path below both, was 0.90-1.09× of cluster_stage for softmax there. The order changes to
// split_row's at those lengths at every row count (its error is the one published for longer rows; the run measured
// 3.9 u at 8192×65536 on each path).
constexpr std::int64_t kClusterStageMinN = kWideAutoMaxN + 1;  // 32769
constexpr std::int64_t kClusterStageMaxN16 = 65536;
constexpr std::int64_t kClusterStageMaxNF32 = 65536;
constexpr std::int64_t kSplitRowF32SoftmaxFromN = 45056;
// f32 softmax rows that leave cluster_stage for split_row (next20); the rest of the band keeps the paths above.
bool split_row_f32_softmax_takes(kernels::Op op, DType t, std::int64_t n) {
  return op == kernels::Op::softmax && t == DType::f32 && n >= kSplitRowF32SoftmaxFromN && n <= kClusterStageMaxNF32;
}
constexpr bool kClusterStageReadOnly = false;  // logsumexp and the state: split_row
// ClusterStageTuning::always (tests and timing): every forward row of kClusterStageMinN … kClusterStageAlwaysMaxN that
// the kernel can hold (16 slices: 16-bit 524288, f32 458752; it refuses longer ones), whatever the op and dtype. Was
// 2 · kClusterStageMaxN16, which the narrowing of 8963ddc cut to 131072: the tests' 151936 and 262147 then left the
// kernel (vocab8).
constexpr std::int64_t kClusterStageAlwaysMaxN = 524288;
bool cluster_stage_takes(kernels::Op op, DType t, std::int64_t n) {
  if (n < kClusterStageMinN) return false;
  if (kernels::cluster_stage_tuning().always) return n <= kClusterStageAlwaysMaxN;
  if (!kernels::writes_rows(op) && !kClusterStageReadOnly) return false;
  if (split_row_f32_softmax_takes(op, t, n)) return false;
  return n <= (t == DType::f32 ? kClusterStageMaxNF32 : kClusterStageMaxN16);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
int pow2_ceil(std::int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}
int round_up32(std::int64_t v) { return static_cast<int>(std::max<std::int64_t>(32, ceil_div(v, 32) * 32)); }

// Two exceptions to kWarpLaneBytes, by op (session 7, fwd16's run of a7b007d: H200, 2026-11-30, tune_softmax --fwd16,
// rotated inputs, median µs, E = elements a lane, L = lanes a row):
// - f32 logsumexp and the state (no row written back) from kWarpReadOnlyWideFromNF32: 128 bytes a lane (E32), one
//   block fewer an SM (3 of 256 threads) but twice a lane's loads in flight, which a read-only row uses:
//   524288×64 E32 L2 45.3 against E16 L4 47.6, 262144×128 43.6 / 49.5, 131072×256 43.4 / 51.2, 65536×512 43.5 / 50.3;
//   1048576×32 53.2 against E16 L2 47.3 (a row a lane). The bench (L2 flushed, old → new µs): 262144×128 47.3 → 46.2
//   and 47.7 → 46.0 (two runs), 131072×256 49.8 → 45.8 and 49.9 → 46.0, 65536×512 48.7 → 45.4 and 48.5 → 46.7; but
//   524288×64, tried in the second run (dd0d523), 46.4 → 48.1: so from 128, where every measurement agrees. (f32
//   softmax and log-softmax: within 2 % either way in the sweep, and bw16's run had E16 ahead at 128: unchanged.)
// - 16-bit log-softmax for n ≤ kWarpLogSoftmax16NarrowMaxN: 32 bytes a lane, so a row of 17..32 takes two lanes (E16
//   L2), not one (E32 L1): 1048576×32 bf16 log-softmax E16 L2 49.2 against E32 L1 55.4 (with log_term_exp16's terms;
//   softmax 53.0 / 51.1 and logsumexp 40.1 / 32.5 stay faster at a row a lane). Rows of ≤ 16 keep one lane either way.
//   The bench (dd0d523, old → new µs): bf16 46.5 → 45.5, f16 45.8 → 44.7; with the cheaper terms on one lane (a7b007d)
//   bf16 had gone 47.5 → 50.7.
constexpr std::int64_t kWarpReadOnlyWideFromNF32 = 128;
constexpr int kWarpLaneBytesReadOnlyF32 = 128;
constexpr std::int64_t kWarpLogSoftmax16NarrowMaxN = 32;
constexpr int kWarpLaneBytesLogSoftmax16Narrow = 32;
// short8 (session 8; H200, 2026-11-30, tune_softmax --short8 on the tree of c47a42b, rotated inputs, median µs, each
// default timed twice; docs/bench/short8-s8-2026-11-30.md):
// - 16-bit backward rows of 17..kWarpBackward16NarrowMaxN take two lanes (E16 L2, 32 bytes a lane of y and of dy:
//   80 registers, three blocks an SM) rather than one (E32 L1: 128 registers, two blocks): bf16 1048576×32 softmax
//   backward 65.3 / 64.4 → 62.3 / 62.1, log-softmax backward 66.2 / 66.1 → 63.6 / 63.5 (1.04-1.05×). Rows of ≤ 16
//   keep E16 L1 (one lane holds them).
// - f32 rows written back (softmax, log-softmax, both backward passes) on a grid of up to kWarpGridF32 times the
//   resident blocks instead of the persistent grid (WarpConfig::grid): softmax 262144×128 (E16 L8) 83.2 / 83.2 →
//   73.9, 1048576×32 (E16 L2) 81.8 / 81.8 → 75.8, 32768×1024 (E32 L32) 81.5 / 81.7 → 73.8; log-softmax 84.4 / 84.4
//   → 74.0, 81.6 / 81.2 → 75.6, 81.2 / 80.6 → 73.8; softmax backward 111.3 / 111.4 → 103.5, 117.8 / 116.9 → 113.7,
//   110.3 / 110.3 → 101.9; log-softmax backward 112.7 / 111.7 → 103.8, 116.4 / 116.5 → 112.9, 111.3 / 111.6 → 102.1
//   (1.03-1.14×). 16-bit rows lost with it (bf16 softmax 262144×128 44.8 → 46.5, 1048576×32 51.1 → 52.3, 32768×1024
//   45.6 → 47.4; logsumexp 0.93-0.96×; backward 0.95-1.01×) and keep the persistent grid; f32 logsumexp and the state
//   (not timed with it) too. Nsight Compute on the persistent f32 kernels: docs/bench/short8-s8-2026-11-30.md. The
//   grid changes which block walks a row, never how a row is computed: the same bits (test_warp_row_gpu).
// (Also timed there and not taken, every one bitwise the default: cache hints on the loads (L1 no-allocate, L2
// evict-first) 1.02-1.05× at f32 E16 L8 / E32 L32 but 0.88× at E16 L2 and 0.83× in bf16 at E32 L1, with streaming
// stores 0.89-1.00×; two rows a lane group at once at f32 E16 0.85-1.02× (spilling 24-48 bytes); the backward's y and
// dy loaded together before conversion 0.76-0.85× in bf16, 0.93-1.03× in f32; 16-bit backward under three or four
// blocks' registers 0.57-0.91× (spilling). Their code is in commit 14ca731.)
// short9 (session 9; H200, 2026-11-30, tune_softmax --short9 on the tree of c16e5c4, rotated inputs, median of 40,
// µs, the default timed three times; docs/bench/short9-s9-2026-11-30.md):
// - f32 backward rows of 17..kWarpBackwardF32NarrowMaxN take 32 bytes a lane (E8, twice the lanes: 64 registers, no
//   spill, four blocks an SM) rather than 64 (E16: 80 registers, three), on the grid of 8: softmax backward 1048576×32
//   112.2-112.6 → 101.8 (1.10×), 524288×64 103.8-104.0 → 101.5, 262144×128 103.4-103.9 → 101.6, 131072×256
//   103.1-103.2 → 101.1 (1.02×); log-softmax backward 111.4-111.8 → 102.3, 103.5-104.0 → 101.5, 103.5-103.8 → 101.8,
//   103.2-103.7 → 101.4. (512 has no E8 configuration: 64 lanes; E4 lost, 0.89-1.01×.) Rows of ≤ 16 keep one lane.
// - 16-bit backward rows of 17..kWarpBackward16NarrowMaxN (was 32) take two lanes or more at 32 bytes a lane: bf16
//   524288×64 softmax backward E32 L2 64.8-65.5 → E16 L4 64.1, log-softmax backward 67.1-68.0 → 65.4. At 128 even
//   (63.1-63.4 → 63.2, 65.6-66.0 → 65.0), at 256 and 512 slower (0.95-0.97×): those keep 64 bytes.
// - Not taken (every one bitwise the default where its lanes were the same; test_warp_row's variant tests, c16e5c4):
//   the warp kernel under a tighter __launch_bounds__ (f32 E16 at 4-6 blocks an SM: 64-40 registers, 32-160 bytes
//   spilled, 0.52-0.92×; f32 E32 at 3: 0.68×), 16-bit y and dy held packed in registers (ptxas kept the converted
//   values: 120 registers at E32 instead of 128, spilling under any tighter bound; 0.52-0.98×), the 16-bit rows on
//   the grid of 8 (0.95-1.00×) and at E8 (0.84-0.92×). block_per_row's kernel on blocks of 64 threads was faster at
//   32768×1024 (f32 102.0-102.8 → 100.4 / 100.5, bf16 61.1-61.3 → 59.4, 63.9-64.9 → 63.5) unstaged; the dispatcher
//   would stage 16-bit rows there, which was not timed: rows of 1024 stay on the warp kernel.
constexpr std::int64_t kWarpBackward16NarrowMaxN = 64;
constexpr int kWarpLaneBytesBackward16Narrow = 32;
// pack14 (session 14): 16-bit backward rows of 65..128 at 16 bytes a lane (E8; the measurements at
// kWarpGridPacked16BackwardE16 below).
constexpr std::int64_t kWarpBackward16E8MinN = 65;
constexpr std::int64_t kWarpBackward16E8MaxN = 128;
constexpr int kWarpLaneBytesBackward16E8 = 16;
constexpr std::int64_t kWarpBackwardF32NarrowMinN = 17;
constexpr std::int64_t kWarpBackwardF32NarrowMaxN = 256;
constexpr int kWarpLaneBytesBackwardF32Narrow = 32;
constexpr int kWarpGridF32 = 8;
// short10 (session 10; H200, 2026-11-30, tune_softmax --short10 on the tree of 809a984, rotated inputs, median of 30,
// µs, the default timed first and last; docs/bench/short10-s10-2026-11-30.md): 16-bit rows of kWarpPacked16MinN ..
// kWarpPacked16MaxN held packed (WarpConfig::packed, packed16.cuh; dense rows only, packed_rule.hpp: anything else
// the unpacked kernels, the same bits) where it ran faster, bf16 (f16 alike):
// - both backward ops at every length timed, E32 62 registers (4 blocks an SM) against 128 (2): softmax backward
//   262144×128 64.22 / 63.58 → 58.14, 131072×256 59.62 / 60.67 → 56.61, 65536×512 59.30 / 60.06 → 55.71, 524288×64
//   (E16 L4, 40 registers, 6 blocks) 61.86 / 62.82 → 59.04; log-softmax backward 66.11 / 66.02 → 60.54, 63.10 / 62.46
//   → 58.98, 63.42 / 62.88 → 60.16, 65.22 / 64.99 → 61.73. Rows of 32 (the one length both packed, n ≥ 32, and
//   dense for 4 lanes of 8, n = 32) on 4 lanes of 8 (16-byte loads of y and of dy, 8 rows a warp, 36 registers):
//   1048576×32 softmax backward 61.95 / 62.08 → 56.26 (E16 L2 packed 58.98; E8 L4 unpacked 69.38), log-softmax
//   backward 64.00 / 64.00 → 56.77.
// - logsumexp at every length timed: 1048576×32 31.78 / 31.49 → 29.63, 524288×64 32.61 / 32.61 → 30.46, 262144×128
//   34.78 / 34.53 → 32.70, 131072×256 34.02 / 34.11 → 32.32, 65536×512 34.85 / 34.75 → 33.25.
// - log-softmax at 32, 128, 256, 512: 47.04 / 48.19 → 43.52, 45.02 / 44.93 → 44.19, 44.42 / 44.38 → 43.46, 45.02 /
//   44.93 → 42.34; not at 64 (43.78 / 43.74 → 45.31; f16 44.51 / 45.06 → 46.21): rows of
//   kWarpLogSoftmax16PackedSkipMinN..kWarpLogSoftmax16PackedSkipMaxN stay unpacked.
// - not softmax (its term computed again at the store: 0.78-0.89× at every length), nor the state (not timed).
constexpr std::int64_t kWarpPacked16MinN = 32;
constexpr std::int64_t kWarpPacked16MaxN = 512;
constexpr std::int64_t kWarpLogSoftmax16PackedSkipMinN = 33;
constexpr std::int64_t kWarpLogSoftmax16PackedSkipMaxN = 64;
// sbwd11 (session 11; H200, 2026-11-30 17:16 UTC, tune_softmax --sbwd11 on the binaries of 90f1614, rotated inputs,
// median of 50, µs, the default timed first and last; docs/bench/sbwd11-s11-2026-11-30.md): both 16-bit backward ops
// packed to kWarpBackwardPacked16MaxN (E32 L32 at 1024: 62 registers, 4 blocks an SM, against 128 and 2): 32768×1024
// softmax backward bf16 60.19 / 59.90 → 55.81, f16 60.13 / 60.19 → 55.97; log-softmax backward bf16 64.32 / 64.74 →
// 59.17, f16 62.72 / 62.85 → 57.98; on the grid of 8 (kWarpGridPacked16Backward, below) 53.76, 54.14, 54.88, 55.20.
constexpr std::int64_t kWarpBackwardPacked16MaxN = 1024;
constexpr std::int64_t kWarpLogSoftmax16PackedMaxN = 1024;  // short11 (below)
bool warp_packed_rule(std::int64_t n, DType t, kernels::Op op) {
  using kernels::Op;
  const bool backward = op == Op::softmax_backward || op == Op::log_softmax_backward;
  if (t != DType::f32 && backward && n > kWarpPacked16MaxN && n <= kWarpBackwardPacked16MaxN) return true;
  if (t != DType::f32 && op == Op::log_softmax && n > kWarpPacked16MaxN && n <= kWarpLogSoftmax16PackedMaxN)
    return true;  // short11
  if (t == DType::f32 || n < kWarpPacked16MinN || n > kWarpPacked16MaxN) return false;
  if (op == Op::log_softmax) return n < kWarpLogSoftmax16PackedSkipMinN || n > kWarpLogSoftmax16PackedSkipMaxN;
  return op == Op::logsumexp || op == Op::softmax_backward || op == Op::log_softmax_backward;
}
// short11 (session 11; H200, 2026-11-30, tune_softmax --short11 on the tree of 542e967, rotated inputs, median of 30,
// µs, the default timed first and last; docs/bench/short11-s11-2026-11-30.md):
// - 16-bit softmax of kWarpDense16MinN..kWarpMaxN (rows of 1024: E32 L32) on warp_rows_dense_kernel (WarpConfig::dense;
//   64 registers, 4 blocks an SM against 80 and 3; dense rows only, packed_rule.hpp row_dense, else the general kernel,
//   the same bits): bf16 44.48 / 45.31 → 43.65, f16 44.51 / 43.71 → 43.14. At 512 and 128 within the default's spread
//   or slower (f16 128: 44.03 / 43.30 → 45.06): not taken. The f32 forms lost or tied everywhere (1048576×32 softmax
//   74.43 / 73.60 → 82.69, 32768×1024 log-softmax 72.90 / 73.44 → 81.41, logsumexp 262144×128 43.04 / 44.06 → 51.07)
//   and are not built (warp_row.cu).
// - 16-bit log-softmax at kWarpLogSoftmax16PackedMaxN (1024) held packed (was up to kWarpPacked16MaxN): bf16 45.95 /
//   45.34 → 43.62, f16 44.64 / 44.86 → 43.36. (Logsumexp at 1024 stays on lse_stream: 29.57 / 29.25 against the packed
//   warp kernel's 33.44. block_per_row on blocks of 64 or 128 threads at 1024: 1.2-3.4× slower in every op.)
// Since short15 (session 15) the occupancy kernel takes these rows first (kWarpOccSoftmaxMinN16 below, the same
// bits): this rule is reached only with that kernel held off (tests, tuning).
constexpr std::int64_t kWarpDense16MinN = 1024;
// short12 (session 12; H200, 2026-11-30 19:14 UTC, tune_softmax --short12 on the binaries of a9b96ce, rotated inputs,
// median of 40, µs, the default timed first and last; docs/bench/short12-s12-2026-11-30.md): 16-bit softmax rows of
// 17..kWarpSoftmax16NarrowMaxN take two lanes of 16 elements (32 bytes a lane, as log-softmax's narrow lanes), not one
// lane of 32, with the 16-bit tier's terms (warp_row.cu plain_exp_pays, E16 since short12) and, where the rows are
// dense (n = 32), warp_rows_dense_kernel at E16 (40 registers, 6 blocks an SM): 1048576×32 bf16 50.21 / 49.95 → 42.08,
// f16 49.76 / 49.73 → 41.73 (the general kernel at E16: 45.95, 44.70). Rows of 17..31 were not timed (the general
// kernel at E16, as the non-dense 32). E16 dense at 128 tied (bf16 41.95 against 41.98 / 41.73) and at 512 lost
// (44.70 against 42.88 / 43.17): rows over 32 keep 64 bytes a lane. A bf16 / f16 softmax with f32 outputs takes two
// lanes too (the general kernel, exp_diff: 64 registers against 80), not timed. The bits of 16-bit softmax at 17..32
// change (the tier's terms, another tree), within the gates (test_cuda_softmax, test_cuda_warp_row in that run).
constexpr std::int64_t kWarpSoftmax16NarrowMaxN = 32;
// The dense rule's lower bound for those rows (17: the first row two lanes of 16 share). At n <= 16 a row is one
// lane, where plain_exp_pays and so the dense kernel refuse anyway (warp_row.cu): the bound changes no dispatch.
constexpr std::int64_t kWarpSoftmax16NarrowMinN = 17;
bool warp_dense_rule(std::int64_t n, DType t, kernels::Op op) {
  if (t != DType::f32 && op == kernels::Op::softmax && n >= kWarpSoftmax16NarrowMinN && n <= kWarpSoftmax16NarrowMaxN)
    return true;  // short12
  return t != DType::f32 && op == kernels::Op::softmax && n >= kWarpDense16MinN && n <= kWarpMaxN;
}
// short14 (session 14; H200, 2026-12-01 00:24 UTC, tune_softmax --short14 on the binaries of 6ea8c47, 2^25 elements,
// median of 30 µs, two rounds each, the dispatcher's kernel → the occupancy kernel; docs/bench/short14-s14-2026-11-30.md):
// f32 forward rows dense for warp_config's lanes and elements on warp_rows_occ_kernel (warp_row.cu, warp_occ.hpp:
// blocks of 64 threads, one row group a warp, at the blocks an SM returned here; 0: the kernels before). Bitwise the
// general kernel at the same lanes and elements (test_warp_row_gpu OccKernelBitwiseF32), so the rule looks at the op,
// the dtype and n and changes no lanes or elements:
// - softmax of kWarpOccSoftmaxMinNF32..kWarpMaxN: E16 at kWarpOccBlocksE16 (to 512), E32 at kWarpOccBlocksE32 (1024):
//   262144×128 71.68 / 71.20 → 70.69 / 70.27, 131072×256 71.26 / 70.98 → 70.24 / 70.11, 65536×512 71.52 / 71.10 →
//   69.60 / 70.21, 32768×1024 71.81 / 71.39 → 70.91 / 70.69 (1.01-1.02×). At 64 within the default's spread (71.97 /
//   74.24 → 71.23 / 72.13), at 32 slower (73.31 / 73.31 → 82.59 / 77.06): those keep the general kernel.
// - logsumexp of kWarpOccMinNF32..kWarpOccLogsumexpMaxNF32 (16 elements a lane; from 128 the dispatcher's 32 are
//   faster than the occupancy kernel's 16: 41.4 → 45.0): 1048576×32 45.57 / 44.99 → 44.29 / 44.26, 524288×64 45.18 /
//   45.50 → 44.42 / 44.26 (1.02-1.03×).
// - log-softmax tied at 64 … 512 (e.g. 71.17 / 70.88 → 71.01 / 71.10 at 512) and slower at 32 (72.48 / 73.15 → 77.57 /
//   78.75); the state was not timed: both keep the general kernel.
// Rows of 17..31 (and any row not n = lanes · E) are not dense and keep the general kernel (the launcher refuses them).
// short15 (session 15; H200, 2026-12-01 02:32 UTC, tune_softmax --short15 on the binaries of 4db3464, 2^25 elements,
// median of 30 µs, two rounds each, the dispatcher's kernel → the occupancy kernel at kWarpOccBlocks16E32 = 20; the
// outputs byte for byte the same; docs/bench/short15-s15-2026-12-01.md):
// - 16-bit softmax of kWarpOccSoftmaxMinN16..kWarpMaxN (E32, dense rows; the tier's terms): bf16 262144×128 (general
//   kernel) 42.34 / 42.05 → 39.01 / 39.26, 65536×512 43.04 / 43.74 → 40.38 / 39.68, 32768×1024 (dense kernel) 41.82 /
//   41.79 → 39.74 / 39.62; f16 262144×128 42.46 / 41.92 → 39.74 / 40.16, 32768×1024 43.42 / 42.53 → 40.06 / 40.64
//   (1.04-1.10×). Rows of 256 (the same kernel at 8 lanes, between 128 and 512) were not timed.
//   short18 (session 18; H200, 2026-12-01, docs/perf-notebook.md "short18"): bf16 rows of 64 (E32 L2; the general
//   kernel before: 80 registers, 3 blocks of 256 an SM, persistent) on it too, from kWarpOccSoftmaxMinNBf16. tune_softmax
//   --short18 (17:56 UTC, binaries of 067de27's library, rotated inputs, median of 30 µs, three alternating rounds,
//   outputs byte for byte the same): 1048576×64 77.66 / 77.25 / 77.73 → 75.62 / 75.90 / 74.75, 524288×64 43.55 / 43.42
//   / 43.62 → 42.18 / 42.27 / 42.37. softmaxkit bench (18:03 UTC, L2 flushed, median, 067de27's binary and this rule's
//   in turn, three rounds): 1048576×64 75.74 / 75.76 / 75.94 → 73.41 / 73.38 / 73.41, 524288×64 41.82 / 41.76 / 41.94 →
//   39.94 / 39.89 / 40.00 (1.03-1.05×). f16 rows of 64 on it in the same bench: 1048576×64 75.23 / 75.26 / 75.26 →
//   76.26 / 76.19 / 76.35 (slower; not profiled: short15's ptxas has the f16 instance spill 16 B, bf16's 4), 524288×64
//   41.98 / 41.57 / 41.70 → 41.25 / 41.55 / 41.18: f16 keeps kWarpOccSoftmaxMinN16.
// - 16-bit log-softmax on it (16 blocks, 44 B spilled) 0.90-0.93× of the packed kernel, f32 rows of 32 with two row
//   groups a warp 0.92-0.96×: not taken (their code is in 4db3464).
constexpr std::int64_t kWarpOccSoftmaxMinN16 = 128;
constexpr std::int64_t kWarpOccSoftmaxMinNBf16 = 64;  // short18
constexpr int kWarpOccBlocks16E32 = 20;
constexpr std::int64_t kWarpOccMinNF32 = 17;
constexpr std::int64_t kWarpOccSoftmaxMinNF32 = 128;
constexpr std::int64_t kWarpOccLogsumexpMaxNF32 = 64;
constexpr int kWarpOccBlocksE16 = 24;
constexpr int kWarpOccBlocksE32 = 16;
// short16 (session 16; H200, 2026-12-01 05:01 UTC, tune_softmax --short16 on the binaries of 3374352, 2^25 elements,
// median of 30 µs, three rounds each, the dispatcher's kernel → the occupancy form at kWarpOccBlocks16Log; the outputs
// byte for byte the same; docs/bench/short16-s16-2026-12-01.md): the 16-bit log ops dense for E32 on
// warp_rows_packed_kernel at the occupancy kernel's blocks of 64 threads and grid (warp_row.cu occ_built; the row held
// packed; the same bits as the persistent packed and the general kernels), 24 blocks an SM:
// - log-softmax of kWarpOccLogSoftmaxMinN16..kWarpMaxN: bf16 524288×64 (the unpacked kernel before) 44.61 / 45.31 /
//   44.86 → 42.75 / 43.01 / 43.20, 262144×128 44.61 / 44.13 / 44.16 → 41.02 / 41.09 / 40.96, 131072×256 42.94 / 42.91
//   / 42.98 → 39.87 / 40.29 / 40.67, 65536×512 42.62 / 43.17 / 42.40 → 40.22 / 40.77 / 40.51, 32768×1024 42.59 / 43.33
//   / 43.49 → 41.25 / 41.09 / 40.64 (1.03-1.09×); f16 262144×128 43.01 / 43.20 / 42.85 → 40.83 / 40.64 / 40.99,
//   32768×1024 43.04 / 42.56 / 44.29 → 40.99 / 40.54 / 40.74 (1.04-1.09×). At 32 (E16 L2) the occupancy form lost
//   (bf16 44.32 / 44.22 / 44.19 → 46.59-47.04 at 24 blocks, 45.76-45.86 at 32): rows of 32 keep the persistent kernel.
// - logsumexp of kWarpOccLogsumexpMinN16..kWarpOccLogsumexpMaxN16 (bf16): 1048576×32 (one lane) 30.91 / 29.63 / 29.66
//   → 29.38 / 29.22 / 29.54, 524288×64 32.10 / 31.97 / 32.26 → 31.39 / 31.26 / 31.39, 262144×128 31.01 / 30.75 / 30.91
//   → 29.82 / 29.66 / 29.76, 131072×256 32.74 / 32.58 / 32.03 → 31.17 / 30.91 / 30.94, 65536×512 34.56 / 34.46 / 34.75
//   → 32.45 / 32.45 / 31.55 (1.00-1.10×). At 1024 the automatic choice takes lse_stream (not timed here).
// - the state was not timed: it keeps the kernels before.
constexpr std::int64_t kWarpOccLogSoftmaxMinN16 = 64;
constexpr std::int64_t kWarpOccLogsumexpMinN16 = 32;
constexpr std::int64_t kWarpOccLogsumexpMaxN16 = 512;
constexpr int kWarpOccBlocks16Log = 24;
// The blocks an SM follow the elements a lane warp_config chose (session 14 review F7: not restated from n here).
int warp_occ_rule(std::int64_t n, DType t, kernels::Op op, int elems) {
  using kernels::Op;
  if (t != DType::f32 && elems == 32 &&  // short16
      ((op == Op::log_softmax && n >= kWarpOccLogSoftmaxMinN16 && n <= kWarpMaxN) ||
       (op == Op::logsumexp && n >= kWarpOccLogsumexpMinN16 && n <= kWarpOccLogsumexpMaxN16)))
    return kWarpOccBlocks16Log;
  if (t != DType::f32) {  // short15, short18
    const std::int64_t min_n = t == DType::bf16 ? kWarpOccSoftmaxMinNBf16 : kWarpOccSoftmaxMinN16;
    return op == Op::softmax && elems == 32 && n >= min_n && n <= kWarpMaxN ? kWarpOccBlocks16E32 : 0;
  }
  const int blocks = elems == 16 ? kWarpOccBlocksE16 : elems == 32 ? kWarpOccBlocksE32 : 0;
  if (op == Op::softmax && n >= kWarpOccSoftmaxMinNF32 && n <= kWarpMaxN) return blocks;
  if (op == Op::logsumexp && n >= kWarpOccMinNF32 && n <= kWarpOccLogsumexpMaxNF32) return blocks;
  return 0;
}
kernels::WarpConfig warp_config(std::int64_t n, DType t, kernels::Op op = kernels::Op::softmax) {
  kernels::WarpConfig c;
  const bool backward = op == kernels::Op::softmax_backward || op == kernels::Op::log_softmax_backward;
  const bool wide_lane = t == DType::f32 && !kernels::writes_rows(op) && n >= kWarpReadOnlyWideFromNF32;
  const bool narrow_lane = (t != DType::f32 && ((op == kernels::Op::log_softmax && n <= kWarpLogSoftmax16NarrowMaxN) ||
                                                (op == kernels::Op::softmax && n <= kWarpSoftmax16NarrowMaxN) ||
                                                (backward && n <= kWarpBackward16NarrowMaxN))) ||
                           (t == DType::f32 && backward && n >= kWarpBackwardF32NarrowMinN &&
                            n <= kWarpBackwardF32NarrowMaxN);
  static_assert(kWarpLaneBytesBackward16Narrow == kWarpLaneBytesLogSoftmax16Narrow &&
                kWarpLaneBytesBackwardF32Narrow == kWarpLaneBytesLogSoftmax16Narrow);
  const bool e8_lane = t != DType::f32 && backward && n >= kWarpBackward16E8MinN && n <= kWarpBackward16E8MaxN;
  const int lane_bytes = wide_lane     ? kWarpLaneBytesReadOnlyF32
                         : e8_lane     ? kWarpLaneBytesBackward16E8
                         : narrow_lane ? kWarpLaneBytesLogSoftmax16Narrow
                                       : kWarpLaneBytes;
  const std::int64_t target = lane_bytes / static_cast<std::int64_t>(dtype_size(t));
  c.lanes = std::clamp(pow2_ceil(ceil_div(n, target)), 1, 32);
  c.elems = std::clamp(pow2_ceil(ceil_div(n, c.lanes)), 4, 32);
  c.grid = t == DType::f32 && kernels::writes_rows(op) ? kWarpGridF32 : 0;
  c.packed = warp_packed_rule(n, t, op);
  c.dense = warp_dense_rule(n, t, op);  // short11
  return c;
}
// The backward's configuration for the call: warp_config's, but 16-bit rows of 32 that are dense for 4 lanes of 8
// elements take those, packed (short10, above); unpacked there they lost (E8 L4 69.38 against E16 L2's 61.95), so rows
// the packed kernel cannot serve keep warp_config's lanes (E16 L2). So a row of 32 takes L4 E8 or L2 E16 by its layout
// (packed_dense needs one row dimension: a row alone, an odd pitch, a batch that does not merge take L2 E16), and batch
// invariance rests on a tree identity: with RowTile's interleave ((k·G + g)·V) and group_sum's butterfly from width/2
// down, L2 E16's lane 0 holds 16-byte vectors 0 and 2 (its tree_sum<16> is v0 + v2, the shuffle adds v1 + v3), and
// L4 E8's xor-2 step forms v0 + v2 and its xor-1 step adds v1 + v3: s is the same expression and dx elementwise, so
// the same bits (test_softmax_gpu BatchInvariance, n = 32 backward, bf16 and f16). A change to either tree's order or
// to the tile map breaks it.
// sbwd11 (session 11; the run above, µs, default first / last → variant; f32 on the grid of 8):
// - 16-bit rows the packed kernel serves at 32 elements a lane (dense rows of 128..1024) on a grid of up to
//   kWarpGridPacked16Backward times the resident blocks, not the persistent grid: bf16 softmax backward 262144×128
//   56.45 / 56.13 → 54.62, 65536×512 56.26 / 56.13 → 54.56, 32768×1024 (packed) 55.81 → 53.76; log-softmax backward
//   58.08 / 57.92 → 55.39, 57.57 / 57.47 → 54.72, 59.17 → 54.88; f16 alike (56.35 / 56.61 → 54.56, 56.80 / 55.94 →
//   54.62, 55.97 → 54.14; 59.01 / 59.36 → 55.17, 57.38 / 57.89 → 55.01, 57.98 → 55.20). (256, the same kernel, was not
//   timed.) A grid of 4 was as fast or slower. Rows of 32 on E8 L4: softmax backward 1.01-1.04× on the grid of 8
//   (bf16 55.49 / 55.97 → 53.79), log-softmax backward even (56.74 / 56.74 → 56.70): left persistent (the lanes test,
//   test_warp_row_gpu.cpp BackwardLanesAtTheRuleBounds, holds one grid for both ops there) (sbwd12: below).
// - f32 rows dense for their lanes on backward_warp_dense_kernel (warp_backward.hpp; bitwise backward_warp_kernel):
//   512 (E16 L32) at kWarpBackwardDenseBlocksE16 blocks an SM (64 registers against 80: 4 blocks, not 3): softmax
//   backward 101.54 / 101.82 → 99.36, log-softmax backward 101.79 / 101.95 → 99.49; 1024 (E32 L32) at
//   kWarpBackwardDenseBlocksE32 (128 registers, no spill against 16 B) on a grid of kWarpGridF32Dense1024: 100.70 /
//   100.70 → 99.17, 100.96 / 100.83 → 99.30 (on the grid of 8: 100.16, 99.87). Rows of 32 and 128 (E8) were even
//   on it (101.50 / 101.09 → 100.99 at 6 blocks, 99.94 / 99.68 → 99.74), 8 blocks slower: they keep the general
//   kernel (sbwd12: below). Not taken: evict-first loads (L1 no-allocate, L2 evict-first) 0.87-0.95×, with
//   streaming stores 0.98-1.02×; the persistent grid 0.94-0.95×; block_per_row's 64-thread block at 1024 f32 99.10 /
//   99.39 (other bits), 16-bit 58.78 / 64.32 (slower than packed).
constexpr int kWarpGridPacked16Backward = 8;
constexpr int kWarpBackwardDenseBlocksE16 = 4;
constexpr int kWarpBackwardDenseBlocksE32 = 2;
constexpr int kWarpGridF32Dense1024 = 16;
// sbwd12 (session 12; H200, 2026-11-30 19:11 UTC, tune_softmax --sbwd12 on the binaries of 775cf6d + 69c6ce5's
// backward files, rotated inputs, median of 80, µs, the default timed first and last; copy 4.26 TB/s in the same
// process; docs/bench/sbwd12-s12-2026-11-30.md):
// - 16-bit rows of 32 dense for 4 lanes of 8 (packed E8 L4) on the packed kernel at 8 blocks an SM (backward.cu
//   kWarpBackwardPackedMinBlocks: 32 registers, against 36 and 6 blocks) on a grid of kWarpGridPacked16BackwardE8 times
//   the resident blocks: bf16 softmax backward 54.78 / 54.82 → 53.22, log-softmax backward 55.04 / 54.91 → 53.02; f16
//   54.62 / 54.53 → 52.74, 55.26 / 55.30 → 53.09 (1.03-1.04×). The grid of 8 alone (6 blocks) 53.79 / 54.62 (bf16),
//   16 blocks' grid 53.34 / 56.74; 8 blocks on the persistent grid 54.94 / 55.46; 2 or 4 row groups a lane group at
//   once (50 / 64 registers) 53.25-56.42 / 54.62-57.63; streaming stores 54.66 / 54.88: none faster in both ops.
// - f32 rows of 32..256 dense for E8 (lanes 4..32) on the dense kernel at kWarpBackwardDenseBlocksE8 blocks an SM (44
//   registers against 64) with streaming stores (backward.cu dense_kernel<8>) on a grid of kWarpGridF32DenseE8:
//   1048576×32 softmax backward 99.55 / 99.81 → 98.69, log-softmax backward 99.62 / 99.36 → 98.75; 262144×128 99.30 /
//   99.26 → 98.43, 99.42 / 99.52 → 98.69 (1.007-1.010×; the default's own spread 0.04-0.26 %). On the grid of 8 the
//   dense E8 kernel was even with plain stores (99.68, 99.94, 99.10, 99.52) and 0.994-1.000× with streaming ones. 64 and 256
//   (the same kernel at 8 and 32 lanes) were not timed. E16 (512) and E32 (1024) with streaming stores, and the 16-bit
//   packed E32 rows (128..1024) with streaming stores or on a grid of 16, were 0.99-1.01× of their defaults: unchanged.
constexpr int kWarpGridPacked16BackwardE8 = 8;
constexpr int kWarpBackwardDenseBlocksE8 = 4;
constexpr int kWarpGridF32DenseE8 = 16;
// pack14 (session 14; H200, 2026-12-01 00:07 UTC, tune_softmax --pack14 on the kernels of 600c491, median of 3
// alternating rounds of 40, µs, the dispatcher's configuration timed first and last in each round → variant; copy
// 4.27 TB/s; docs/bench/pack14-s14-2026-11-30.md):
// - 16-bit rows of 64 dense for 4 lanes of 16 (packed E16 L4, 6 blocks an SM) on a grid of kWarpGridPacked16BackwardE16
//   times the resident blocks, not the persistent grid: bf16 524288×64 softmax backward 57.60 / 57.60 → 53.22,
//   log-softmax backward 59.04 / 58.82 → 53.54; f16 57.92 / 57.98 → 52.93, 59.04 / 59.17 → 53.82 (1.08-1.10×). The
//   E16 build at 8 blocks an SM (32 registers, 24 B spilled) ran 59.9-61.3 on either grid: removed (600c491 has it).
// - 16-bit backward rows of kWarpBackward16E8MinN..kWarpBackward16E8MaxN at 16 bytes a lane (E8: 128 on 16 lanes), so
//   dense rows of 128 take the packed E8 kernel (8 blocks an SM, 32 registers, no spill) on the grid of 8
//   (kWarpGridPacked16BackwardE8) instead of E32 L4 (62 registers, 4 blocks): bf16 262144×128 softmax backward 53.70 /
//   53.92 → 52.80, log-softmax backward 54.66 / 54.46 → 53.15; f16 53.76 / 53.86 → 52.61, 54.56 / 54.53 → 53.63
//   (1.017-1.028×). E16 L8 (6 blocks) was 53.31-54.14 (1.005-1.014×), at 8 blocks 59.4-60.6. Rows of 65..127 are not
//   dense and take the unpacked kernel at the same lanes and elements (the same tree, so the same bits as the packed
//   rows of their length): at 262144×100 E32 L4 ran 174-180 µs and E16 L8 130-135 (1.33×); E8 L16 there is the
//   follow-up's (backward.cu's opening comment and the notebook's pack14 section: 1.51-1.55×). The sum's tree at 65..128 changes (E8 L16's butterfly over 16 lanes), within the gates.
constexpr int kWarpGridPacked16BackwardE16 = 8;
kernels::WarpConfig warp_backward_config(const kernels::RowProblem& rp, DType t) {
  kernels::WarpConfig c = warp_config(rp.n, t, rp.op);
  if (c.packed && rp.n == 4 * 8 && kernels::packed_dense(rp, 4, 8)) {
    c.lanes = 4;
    c.elems = 8;
  }
  if (c.packed && c.elems == 32 && kernels::packed_dense(rp, c.lanes, c.elems)) c.grid = kWarpGridPacked16Backward;
  if (c.packed && c.elems == 8 && kernels::packed_dense(rp, c.lanes, c.elems)) c.grid = kWarpGridPacked16BackwardE8;
  if (c.packed && c.elems == 16 && kernels::packed_dense(rp, c.lanes, c.elems)) c.grid = kWarpGridPacked16BackwardE16;
  return c;
}
// sbwd11: the f32 dense kernel the call takes (blocks 0: the general kernel), by n alone; the launcher falls back to
// the general kernel (the same bits) where the rows are not dense for the configuration. Sets the grid for it.
kernels::WarpBackwardDense warp_backward_dense(const kernels::RowProblem& rp, DType t, kernels::WarpConfig& c) {
  kernels::WarpBackwardDense d;
  if (t != DType::f32 || !kernels::backward_dense_f32(rp, c.lanes, c.elems)) return d;
  if (c.elems == 8 && c.lanes >= 4) {  // sbwd12: rows of 32..256
    d.blocks = kWarpBackwardDenseBlocksE8;
    c.grid = kWarpGridF32DenseE8;
  }
  if (c.elems == 16 && c.lanes == 32) d.blocks = kWarpBackwardDenseBlocksE16;
  if (c.elems == 32 && c.lanes == 32) {
    d.blocks = kWarpBackwardDenseBlocksE32;
    c.grid = kWarpGridF32Dense1024;
  }
  return d;
}
kernels::BlockConfig block_config(std::int64_t n, int elems) {
  return {std::min<int>(kBlockMaxThreads, round_up32(ceil_div(n, elems))), 1};
}
// block_per_row's configuration: the 512-thread block where the row fits it (`narrow_max`), else the wide block.
kernels::BlockConfig block_row_config(std::int64_t n, int elems, std::int64_t narrow_max, int wide_elems) {
  if (n <= narrow_max) return block_config(n, elems);
  kernels::BlockConfig c;
  c.threads = std::min<int>(kernels::kWideBlockThreads, round_up32(ceil_div(n, wide_elems)));
  c.wide = true;
  return c;
}
kernels::BlockConfig cluster_config(std::int64_t n, int elems) {
  const auto cluster = static_cast<int>(
      std::clamp<std::int64_t>(ceil_div(n, kClusterTargetThreads * elems), 2, kMaxCluster));
  return {std::min<int>(kBlockMaxThreads, round_up32(ceil_div(n, std::int64_t{cluster} * elems))), cluster};
}
// The row pipeline (BlockConfig::staged: the next row bulk-copied into shared memory during the current one, and
// for log-softmax, logsumexp and the state one cluster exchange of block states instead of the max and then the
// sum) runs where it measured faster: the log ops on cluster_row. H200, 2026-11-30, tune_softmax --rowpipe, direct →
// staged µs (docs/perf-notebook.md "row pipeline"): log-softmax 8192×32000 bf16 654 → 575, 2048×65536 f32 516 → 442,
// bf16 477 → 338; logsumexp 8192×32000 f32 573 → 540, bf16 549 → 485, 2048×65536 f32 457 → 310, bf16 442 → 282;
// 4096×16384 1.03-1.12× (f32 log-softmax 8192×32000 811 against 804: even). Softmax keeps its two exchanges and
// measured slower staged in f32 (8192×32000 855 → 930, 16384×4096 144 → 168) and even in bf16 on clusters; the log ops
// on block_per_row too (16384×4096 logsumexp f32 103 → 115). The state runs logsumexp's kernel (not timed). Nsight
// Compute (same run) puts the staged f32 softmax's loss in memory-barrier stalls (6.6 of 18.7 cycles between
// issues), most likely the release semantics of the cluster barrier's arrive, which waits for the previous row's
// stores; the direct kernel gives each cluster one row and never waits so.
bool row_pipeline_pays(kernels::Op op, const kernels::BlockConfig& c) {
  return c.cluster > 1 && op != kernels::Op::softmax;
}
// The backward passes' row pipeline (backward.cu) paid only for 16-bit rows on block_per_row: 16384×4096 bf16 softmax
// backward 117 → 107 µs (88 % of copy), f32 192 → 246; on clusters it was even or slower in both dtypes (same run).
bool backward_row_pipeline_pays(DType t, const kernels::BlockConfig& c) { return c.cluster == 1 && t != DType::f32; }
// The forward's wide block staged (its next row bulk-copied into shared memory while it reduces and writes the
// current one) where a block is alone on its SM (above 512 threads: n > kWideStagedFromN), so nothing else overlaps
// its loads: 16-bit rows, and f32 log-softmax / logsumexp / the state. H200, 2026-11-30, bw16's run of e7a1abd,
// tune_softmax --bw16, the wide block direct → staged µs (docs/perf-notebook.md "bw16"):
//   8192×32000  bf16 softmax 576 → 390, log-softmax 563 → 402, logsumexp 411 → 304 (f16 alike);
//               f32 softmax 586 → 596 (slower), log-softmax 623 → 577, logsumexp 359 → 324
//   2048×24576  bf16 99 → 90, 104 → 89, 80 → 70 (f16 alike); f32 125 → 125, 133 → 121, 86 → 79
//   4096×16384 (512 threads, two blocks an SM) slower staged in every case: bf16 softmax 99.8 → 104.4, f32 144 → 161.
constexpr std::int64_t kWideStagedFromN = 16385;
bool wide_row_pipeline_pays(DType t, kernels::Op op, std::int64_t n) {
  return n >= kWideStagedFromN && (t != DType::f32 || op != kernels::Op::softmax);
}
// 16-bit rows on the 512-thread block_per_row (n ≤ kBlockMaxN) run lane-staged (BlockConfig::lane_stages: each
// thread's share of the block's next row copied into shared memory by cp.async while the current row is reduced and
// written; bitwise the direct kernel's outputs, so the choice may look at lengths and alignment freely) where it
// measured faster. Why (mid16, docs/perf-notebook.md): the direct kernel has 48 B of loads a thread in flight in
// 16-bit (f32: 96) and only until its first reduction; at n = 2048..8192 that is at most ~32-40 KB an SM, where the
// H200 wants ~33-65 KB all the time. H200, 2026-11-30, mid16's run of c21f565, tune_softmax --mid16 (~2^26 elements,
// rotated inputs, median µs), direct → 1 row ahead (2 and 3 ahead: within 2 % of 1, no better), bf16 (f16 alike):
//   softmax      1025 (T64, rows mostly unaligned) 190.7 → 225.1 (slower); 1024 (T64) 135.5 → 134.7 (2 ahead);
//                2048 115.7 → 98.4; 3000 121.8 → 88.2; 4096 124.1 → 98.7; 6144 90.9 → 78.5; 8192 136.7 → 93.3;
//                12288 101.0 → 81.8
//   log-softmax  2048 120.5 → 122.7 (slower); 3000 128.9 → 107.9; 4096 128.5 → 121.8; 6144 98.9 → 96.2; 8192 136.5 →
//                111.9; 12288 107.4 → 99.5
//   logsumexp    2048 92.6 → 95.4 (slower); 3000 90.2 → 83.3; 4096 93.9 → 95.7 (slower); 6144 74.2 → 77.3 (slower);
//                8192 107.8 → 87.8; 12288 82.7 → 77.3
// So softmax from 2048 (1025..2047 not measured aligned: direct), log-softmax from half-way between 2048 and 3000 (from
// 2048 since blk17: kLaneLogSoftmaxFromN16 below),
// logsumexp and the state (logsumexp's kernel, not timed) from half-way between 6144 and 8192: the thresholds lie
// between two measured lengths (provisional). Rows that are not all 16-byte aligned (a row's vectors then go through
// registers synchronously; 1025's loss) keep the direct kernel. The dispatcher's A/B at 2 rows ahead (softmaxkit bench,
// same run, old → new µs, bf16): 16384×4096 softmax 122.6 → 94.9, log-softmax 127.5 → 119.4, logsumexp 98.1 → 94.3;
// 8192×8192 136.8 → 93.6, 136.9 → 112.0, 111.0 → 87.2 (docs/bench/mid16-s6-2026-11-30.md).
// logsumexp and the state (no row written) on block_per_row: read twice, the row held in no register across a
// barrier (BlockConfig::ahead = kAheadReread, mid8, block_row.cu block_rows_reread_kernel: three 512-thread blocks an
// SM at 40 registers), or with the next row's loads in flight in registers (ahead 1: block_rows_ahead_kernel); each
// bitwise the direct kernel's results, so the rule may look at the block's size and the rows' alignment freely (a row
// the re-read kernel cannot take, unaligned or with a temperature or mask, goes where lane_stages sends it). H200,
// 2026-11-30, mid8's run of 4f17e5c, tune_softmax --mid8 (about 2^26 elements, inputs rotated, median µs; direct,
// lane-staged, re-read, one row ahead; docs/bench/mid8-s8-2026-11-30.md):
//   bf16  65536×1025 124.5 / 152.3 / 124.6 / 151.6; 32768×2048 86.1 / 82.6 / 71.2 / 100.5; 16384×4096 86.9 / 81.7 /
//         72.1 / 100.8; 8192×8192 101.7 / 76.2 / 72.1 / 134.5; 5461×12288 75.1 / 65.3 / 68.6 / 70.6; 4096×16384 (the
//         wide block, T512) 67.2 / — / 63.8 / 62.4 (evict-first 61.8: within the spread, not taken)
//   f32   (no lane-staged kernel) 65536×1025 131.7 / 132.1 / 145.8; 32768×2048 92.7 / 95.7 / 105.8; 16384×4096
//         94.6 / 96.0 / 110.2; 8192×8192 105.1 / 92.8 / 146.2; 5461×12288 84.2 / 92.0 / 114.7; 4096×16384 85.7 /
//         111.8 / 107.7
// (At 1025 no row is 16-byte aligned: the re-read column there timed its fallback, the direct kernel.)
// So 16-bit rows re-read from half-way between 1025 and 2048 to half-way between 8192 and 12288, lane-staged from there
// to 12288 (kLaneReadOnlyFromN16's rule), one row ahead on the wide block to 16384; f32 rows re-read only around 8192
// (the direct kernel's slow point: 2 blocks of 352 threads an SM), half-way to the measured lengths either side. Each
// bound lies between two measured lengths (provisional); f16 and the state were not timed (the same kernels as bf16
// and logsumexp). The same run: the kernels' bitwise tests (test_cuda_block_row) passed and memcheck found 0 errors.
// Why f32 loses elsewhere (Nsight Compute, mid8's run of 6c36e33, 4096×16384): the direct kernel's
// DRAM is 69 % busy with issue slots 68 % busy, at 27.5 lane-instructions an element against torch.compile's 18
// (Triton: 40 registers, 3 blocks an SM, DRAM 90 %); one row ahead drops to one block an SM (106 registers: issue 49 %,
// DRAM 53 %), and the re-read kernel spills 24 B at 40 registers in f32 E = 32 and re-executes the loads.
constexpr std::int64_t kRereadFromN16 = 1537;
constexpr std::int64_t kRereadMaxN16 = 10240;
constexpr std::int64_t kAheadFromN16 = kBlockMaxN + 1;  // the wide block, up to kAheadMaxThreads threads (16384)
constexpr std::int64_t kRereadFromNF32 = 6145;
constexpr std::int64_t kRereadMaxNF32 = 10240;
// mid9 (session 9): the f32 wide block's rows (12289..16384 at ≤ 512 threads) re-read in four parts with the ftz terms
// (kAheadReread4: 40 registers, no spill, three blocks an SM; any layout) were predicted at 4096×16384 logsumexp
// 85.7 → ~66 µs and measured slower (H200, 2026-11-30, mid9's run of c16e5c4, tune_softmax --mid9, median µs: direct
// 85.6 / 85.3, mid8's re-read 111.9, four parts 101.4; the state 84.7 / 84.4, 110.9, 100.2): not dispatched; the rows
// stay on the direct wide block. The same run: 8192×8192 direct 102.8 / 102.9, re-read 92.0 (the rule's, kept);
// 16384×4096 92.6 / 92.9 against 95.5; 5461×12288 84.1 / 84.8 against 92.6.
constexpr bool kAheadEvictFirst = false;
int block_ahead_rows(DType t, const RowProblem& p, const kernels::BlockConfig& c) {
  if (kernels::writes_rows(p.op) || c.cluster != 1 || c.staged || c.threads > kernels::kAheadMaxThreads) return 0;
  if (t == DType::f32) return p.n >= kRereadFromNF32 && p.n <= kRereadMaxNF32 ? kernels::kAheadReread : 0;
  if (p.n >= kRereadFromN16 && p.n <= kRereadMaxN16) return kernels::kAheadReread;
  return p.n >= kAheadFromN16 ? 1 : 0;
}
constexpr std::int64_t kLaneSoftmaxFromN16 = 2048;
// blk17 (session 17) re-timed 16-bit log-softmax at 2048 after fwd16's cheaper 16-bit terms (H200, 2026-12-01,
// tune_softmax --blk17, bf16, direct → lane1 µs, 3 rounds): 32768×2048 118.3 → 107.4, 0.911 (0.904-0.914); 26214×2560
// 125.1 → 109.3, 0.874 (mid16's 120.5 → 122.7 at 2048 predates fwd16); same bits. So from 2048, as softmax (f16: the
// same kernels, not timed).
constexpr std::int64_t kLaneLogSoftmaxFromN16 = 2048;
constexpr std::int64_t kLaneReadOnlyFromN16 = 7168;
constexpr int kBlockLaneStages16 = 1;
// Every row of x starts on a 16-byte boundary and is unit-stride (RowTile's vectors, so LaneStage copies them all by
// cp.async).
bool rows_vector_aligned(const RowProblem& p, DType t) {
  const auto es = static_cast<std::int64_t>(dtype_size(t));
  if (p.step[kernels::kX] != 1 || reinterpret_cast<std::uintptr_t>(p.x) % 16 != 0) return false;
  for (int d = 0; d < p.map.rank; ++d)
    if (p.map.size[d] > 1 && (p.map.stride[kernels::kX][d] * es) % 16 != 0) return false;
  return true;
}
// On by default since session 7 (fwd16): LaneStagedBlockRowsBitwiseTheDirectKernel ran to the end on the H200 with
// shapes of more rows than any persistent grid holds (2048·SMs/threads + 7 rows of 2048, 8191 and 12288: every block
// walks several rows and prefetches), bitwise the direct kernel at 1-3 rows ahead, and clean under memcheck
// (docs/perf-notebook.md, session 7, fwd16). (Session 6 had left it off: that walk had run only as timings.)
// false sends every row back to the direct kernel; the test and tune_softmax --mid16 reach either through
// BlockConfig::lane_stages.
constexpr bool kBlockLaneStagedByDefault = true;
// blk17 (session 17): f32 softmax / log-softmax of kLaneFromNF32..kLaneMaxNF32 on the same kernel, one row ahead (the
// direct kernel's bits: test_cuda_block_row LaneStagedF32BitwiseTheDirectKernel). Why: the direct kernel's 96 B a
// thread are in flight only until its first reduction, and at 8192 (352 threads, two blocks an SM: 22 warps) that was
// the sweep's slow point (session 16: 77 % of copy). H200, 2026-12-01, blk17's run, tune_softmax --blk17 (2^26 f32
// elements, rotated inputs, median of 15, 3 alternating rounds; lane1 / direct a round, median (min-max); µs; same bits
// everywhere; docs/bench/blk17-s17-2026-12-01.md):
//   softmax      2048 144.9 → 166.3, 1.146 (1.130-1.155); 4096 145.3 → 160.1, 1.108; 6144 144.2 → 159.8, 1.101;
//                8192 163.8 → 151.0, 0.924 (0.911-0.935); 10240 156.9 → 153.6, 0.976 (0.971-0.981); 12288 148.7 →
//                151.8, 1.021 (1.018-1.029)
//   log-softmax  2048 1.190; 4096 1.129; 6144 1.137; 8192 162.1 → 149.8, 0.924 (0.924-0.934); 10240 154.8 → 152.4,
//                0.983 (0.979-1.000); 12288 1.079 (1.048-1.080)
// (two rows ahead: 0.943-0.949 at 8192, 1.00-1.16 elsewhere). Nsight Compute at 8192×8192 softmax, direct → lane1: 161.3
// → 147.7 µs, DRAM 66.8 → 72.3 % busy, issue 43.9 → 53.7 %, long-scoreboard stalls 4.05 → 0.82 an issue, barrier 1.22
// → 1.66, 33.6 → 35.4 lane-instructions an element. So the bounds lie half-way between measured lengths (7168: 6144 ↔
// 8192; 11264: 10240 ↔ 12288). Logsumexp and the state stay where they were (lse_stream, the re-read kernel).
constexpr std::int64_t kLaneFromNF32 = 7168;
constexpr std::int64_t kLaneMaxNF32 = 11264;
constexpr int kBlockLaneStagesF32 = 1;
int block_lane_stages(DType t, const RowProblem& p, const kernels::BlockConfig& c) {
  if (!kBlockLaneStagedByDefault) return 0;
  if (c.wide || c.cluster != 1 || !rows_vector_aligned(p, t)) return 0;
  if (t == DType::f32)
    return kernels::writes_rows(p.op) && p.n >= kLaneFromNF32 && p.n <= kLaneMaxNF32 ? kBlockLaneStagesF32 : 0;
  const std::int64_t from = p.op == kernels::Op::softmax       ? kLaneSoftmaxFromN16
                            : p.op == kernels::Op::log_softmax ? kLaneLogSoftmaxFromN16
                                                               : kLaneReadOnlyFromN16;
  return p.n >= from ? kBlockLaneStages16 : 0;
}
kernels::StridedConfig strided_config(std::int64_t n, std::int64_t inner, bool cache_ok) {
  // depth (threads along the reduced dimension) from n alone: it fixes the summation tree.
  kernels::StridedConfig c;
  c.depth = 1;
  while (c.depth < 16 && c.depth * 64 <= n) c.depth *= 2;
  c.width = std::min(pow2_ceil(std::max<std::int64_t>(inner, 1)), 512 / c.depth);
  c.width = std::min(c.width, 32 * 16 / c.depth);
  const std::int64_t tile_bytes = static_cast<std::int64_t>(sizeof(float)) * n * c.width;
  c.cache = cache_ok && tile_bytes <= kernels::device_facts().max_smem_optin - kernels::kStridedStaticSmem;
  return c;
}

bool is_float_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// The row map and per-tensor steps of a call. `views` holds each slot's view (unset ones are default views).
RowProblem make_problem(const TensorView& in, int dim, int inner_dim,
                        const std::array<const TensorView*, kernels::kSlots>& views) {
  RowProblem p;
  std::array<detail::DimStrides, kernels::kSlots> strides{};
  for (int s = 0; s < kernels::kSlots; ++s)
    if (views[s] != nullptr) strides[s] = detail::strides_over(*views[s], in, dim);
  const auto rows = detail::row_dims<kernels::kSlots>(in, dim, inner_dim, strides);
  p.map.rank = rows.rank;
  for (int d = 0; d < rows.rank; ++d) {
    p.map.size[d] = rows.size[d];
    for (int s = 0; s < kernels::kSlots; ++s) p.map.stride[s][d] = rows.stride[s][d];
  }
  for (int s = 0; s < kernels::kSlots; ++s) {
    p.step[s] = strides[s][dim];
    p.inner_stride[s] = inner_dim >= 0 ? strides[s][inner_dim] : 0;
  }
  p.n = in.shape[dim];
  p.inner = inner_dim >= 0 ? in.shape[inner_dim] : 1;
  p.rows = 1;
  for (int d = 0; d < in.rank; ++d)
    if (d != dim && d != inner_dim) p.rows *= in.shape[d];
  return p;
}

// The non-reduced dimension adjacent threads of strided_inner walk: the one with the smallest input stride.
int pick_inner_dim(const TensorView& in, int dim) {
  int best = -1;
  for (int d = 0; d < in.rank; ++d) {
    if (d == dim || in.shape[d] <= 1) continue;
    if (best < 0 || in.strides[d] < in.strides[best]) best = d;
  }
  return best;
}

[[noreturn]] void refuse(const char* op, SoftmaxPath path, const std::string& why) {
  throw_unsupported(op, std::string("kernel path '") + to_string(path) + "' cannot serve this call: " + why);
}

void check_capacity(const char* op, SoftmaxPath path, std::int64_t n, std::int64_t capacity) {
  if (n > capacity)
    refuse(op, path, "rows of " + std::to_string(n) + " elements exceed its capacity of " + std::to_string(capacity));
}

// lse10 (session 10): logsumexp and the state take lse_stream.cu's kernels (each element read once into a running
// (m, ties, rest) a thread, no max pass, no row in registers across a barrier) where its run showed them faster: rows
// of exactly kLseStreamWarpN (and, since next20, 16-bit rows of kLseStreamWarpN … kLseStreamWarpMaxN16) on
// kLseStreamLanes lanes a row, and rows of kLseStreamBlockFromN (f32) /
// kLseStreamBlockFromN16 (16-bit) … kLseStreamMaxN on one block of kLseStreamThreads a row. The configuration is a
// function of n and the dtype alone (the results' tree with it). H200, 2026-11-30, lse10's run of fc6036d, tune_softmax
// --lse10, median µs, logsumexp (the state alike), the dispatcher's kernel before (timed first and last) → lse_stream
// L16 / L32 or T128 / T256 / T512:
//   32768×1024   f32 43.0 / 42.9 → L16 41.2, L32 43.6;    bf16 35.7 / 35.6 → L16 29.4, L32 32.3 (T128 93 / 141)
//   65536×2048   f32 175.0 / 173.9 → T128 170.2, T256 353; bf16 130.7 / 130.2 (re-read) → T128 255.2 (slower: kept)
//   16384×4096   f32 93.8 / 94.1 → T128 77.5, T256 100.5;  bf16 71.2 / 70.8 → T128 57.2, T256 137
//   8192×8192    f32 93.3 / 93.0 → T128 72.7, T256 81.8;   bf16 71.9 / 72.2 → T128 49.1, T256 59.1
//   4096×16384   f32 85.8 / 88.4 → T128 73.5, T256 75.8;   bf16 64.2 / 64.5 → T128 45.8; f16 64.3 / 61.8 → 43.7
//   2048×24576   f32 80.6 / 80.9 → T128 56.4;              bf16 63.2 / 63.8 → T128 35.4
//   8192×32000   f32 327.8 / 328.0 → T128 243.3 (4.31 TB/s), T256 251.9; bf16 261.0 / 259.3 → T128 145.3
// T512 was slower than T128 everywhere (e.g. 16384×4096 f32 208). Fewer than 4 vectors a thread lose to the per-row
// merge (bf16 2048 on T128: 2 a thread). Lengths between those timed follow the nearest timed ones: 1025..2047 (f32)
// keep the kernels before, as do rows under 1024 (not timed).
// next20 (session 20; H200, 2026-12-02, tune_softmax --next20-l16 on the tree of cf74f41, 240 MB memset before each
// timed launch, median of 3 rounds, µs; docs/perf-notebook.md's session-20 section): 16-bit rows of 1025 …
// kLseStreamWarpMaxN16 take L16 too (T128 before from 4096; 1025..4095 the block / warp kernels before). bf16
// logsumexp, the kernel before → L16:
//   16384×2048 40.9 → 28.0, 4096×2048 15.1 → 11.5, 64×2048 5.9 → 8.5, 1×2048 5.6 → 6.9
//   16384×3072 51.0 → 37.7, 4096×3072 18.0 → 15.5, 64×3072 5.9 → 10.4, 1×3072 5.6 → 8.3
//   16384×4096 55.0 → 46.5, 4096×4096 19.4 → 18.4, 64×4096 5.6 → 12.1, 1×4096 5.4 → 9.7   (T128 before)
//   16384×6144 99.7 → 62.8, 4096×6144 32.5 → 24.7, 64×6144 7.5 → 15.5, 1×6144 7.3 → 12.7   (T128 before)
//   16384×8192 87.7 → 78.9, but 4096×8192 30.6 → 31.0 and 4096×12288 39.0 → 41.3, 4096×16384 47.2 → 50.6: T128 kept
// f16 and the state alike (0.63-0.95× at 4096 and 16384 rows). A new order for these lengths at every row count
// (batch invariance: the rule reads n and the dtype alone), so calls of a few rows pay for it: 1-64 rows of 2048 …
// 6144 take 1.2-2.2× the time they took (+1.3 … +8 µs), for 0.63-0.95× at thousands of rows. Its error, measured in
// the same run against float64 (3 …16384 rows): logsumexp ≤ 0.74 u, the state's l ≤ 3.1 u, as T128's and the
// kernels' before on the same rows (docs/semantics.md §6 has D_stream for it). f32 keeps T128 from 2048: L16 there
// was 0.92-0.99× at 16384 rows but 1.02-1.05× at 4096 rows of 4096-16384 and 1.7-4.3× at 1-64 rows (2048 … 16384).
constexpr std::int64_t kLseStreamWarpN = 1024;
constexpr std::int64_t kLseStreamWarpMaxN16 = 6144;
constexpr int kLseStreamLanes = 16;
constexpr std::int64_t kLseStreamBlockFromN = 2048;
constexpr std::int64_t kLseStreamBlockFromN16 = kLseStreamWarpMaxN16 + 1;
constexpr std::int64_t kLseStreamMaxN = 32768;
constexpr int kLseStreamThreads = 128;
bool lse_stream_config(DType t, std::int64_t n, kernels::LseStreamConfig& c) {
  if (n == kLseStreamWarpN || (t != DType::f32 && n > kLseStreamWarpN && n <= kLseStreamWarpMaxN16)) {
    c.lanes = kLseStreamLanes;
    return true;
  }
  if (n < (t == DType::f32 ? kLseStreamBlockFromN : kLseStreamBlockFromN16) || n > kLseStreamMaxN) return false;
  c.lanes = 0;
  c.threads = kLseStreamThreads;
  return true;
}

// lse17 (session 17): logsumexp and the state of rows past kLseStreamMaxN on lse_stream.cu's chunk kernel
// (lse_chunks_kernel: split_row's chunks, each reduced by one block of kLseChunkThreads16 with lse_stream's running
// state, then split_row's merge order), every row count of such a length alike (never split_row's one-launch cluster
// kernel nor grid_row: batch invariance); 16-bit inputs only (kLseChunks16), f32 stays on split_row (kLseChunksF32).
// lse18 (session 18): the launcher picks among forms of the same bits by the call's size (lse_chunks.hpp
// kLseChunksForm: one launch, a cluster a row, where the rows have ≤ 16 chunks and all fit the device at once; else the
// chunk kernel and a warp a row's merge for rows of ≤ 32 chunks, the block merge beyond): bf16 logsumexp 1×151936
// 0.74-0.79 of session 17's two launches, 32×128256 0.84-0.88, 1024×65536 0.909, 4096×151936 0.929 (lse_stream.cu).
// Measured (H200, 2026-12-01, lse17's run, tune_softmax --lse17, logsumexp µs, medians of 9-41 over rotated inputs, 3
// alternating rounds, ratio to split_row a round: median (min-max); docs/bench/lse17-s17-2026-12-01.md), split_row →
// T64 / T128: bf16 1024×65536 92.6 → 52.4 / 53.0, 0.564 (0.563-0.566) / 0.572; 4096×151936 647.9 → 341.8 / 370.4,
// 0.528 (0.527-0.528) / 0.572 (3.64 TB/s at T64); 32×2097152 75.0 → 46.0 / 47.7, 0.611 / 0.636; 512×131072 82.0 → 48.5
// / 50.1, 0.591 / 0.610; 1×16777216 28.5 → 21.8 / 21.7, 0.765 / 0.760; 3·N(0,1) scores 1024×65536 0.570 / 0.582,
// 4096×151936 0.539 / 0.587; but 32×128256 15.4 → 15.6 / 13.8, 1.008 (0.998-1.017) / 0.879, and 1×151936 (split_row's
// one-launch cluster kernel, which cannot give this order's bits) 8.5 → 12.6 / 11.1, 1.461 / 1.266: slower. T128 takes
// the 16-bit rows (session 17's review, F1; lse17 had chosen T64): T64 is 4-8 % faster on the shapes of ≥ 64 MB, but
// on issue 3's four bf16 logsumexp shapes this rule takes T128 is the faster on three (1×151936 11.1 against 12.6,
// 32×128256 13.8 against 15.6, 1×16M even, 4096×151936 370 against 342: the product of T64 / T128 over the four 1.18,
// a geometric mean of 1.04), nearer the few-row latency targets, and one order a length must serve 1×151936 and
// 4096×151936 alike; session 17's integrated compare at T128 (tree of 9c81885, docs/bench/compare-s17-2026-12-01.md):
// 1×151936 11.6 µs, 32×128256 14.0, 4096×151936 385.8, 1×16777216 25.2 (split_row in session 16's: 8.2, 15.7, 652.1,
// 29.3). f16 is
// bf16's code but for the loads, not timed. f32 (T128 the better): 0.928 at 1024×65536, 0.970 at 4096×151936, 0.956
// at 32×2097152, but 1.388 at 1×151936 (fold17's run: 1.365, 32×128256 1.043, 1×16M 1.099): off. fold17 (session 17,
// 3fb3636) folded the merge into the chunk pass's last block a row, the same bits: slower (1.00-1.62×), removed.
constexpr bool kLseChunks16 = true;
constexpr bool kLseChunksF32 = false;
constexpr int kLseChunkThreads16 = 128;
constexpr int kLseChunkThreadsF32 = 128;  // the form f32 would take (kLseChunksF32 off)
bool lse_chunks_takes(DType t, std::int64_t n) {
  return n > kLseStreamMaxN && (t == DType::f32 ? kLseChunksF32 : kLseChunks16);
}

// split18 (session 18): 16-bit softmax / log-softmax (f16 / bf16 in, the same type out) of rows past
// kSplitRunningMinChunks chunks on split_row's three kernels with the chunk pass on a running state a thread
// (split_row.cu chunk_states_running_kernel, 64 threads a chunk; a new summation order, docs/semantics.md §6), every row
// count of such a length alike on the automatic path. kSplitRunningMinChunks: 32, the most chunks split_row's kernels of
// other orders take (row_loop kRowLoopMaxChunks, split_stream's 32, the one-launch kernel's 16): past it every row
// count of a length already ran the three kernels, so a row's result stays the same alone or in a batch. Forced
// split_row keeps chunk_state's tree (kernels::split_row_running() = 1 sends forced calls too, for the tests).
// Measured (H200, 2026-12-01, split18's run of f69ff89, tune_softmax --split18, µs, medians of 15-21 over rotated
// inputs, 3 alternating rounds, HEAD's kernels → running T64, ratio a round: median; docs/bench/split18-s18-2026-12-01.md):
// bf16 softmax 32×2097152 137.9 → 120.6 (0.872), 128×524288 141.8 → 123.3 (0.877), 1×16777216 43.2 → 39.7 (0.918);
// log-softmax 143.0 → 115.5 (0.806), 144.4 → 117.6 (0.819), 42.6 → 36.7 (0.862); bf16 outputs byte for byte HEAD's but
// 4 of 67108864 on 3·N(0, 1) scores (0 on the uniform ones). Not taken: f32 inputs (0.984-1.020 at T64, 0.991-1.049
// at T128, and its softmax error against float64 5.7 u where the tree's was 3.8: the chunk kernel 79.8 → 75.9 µs at
// 32×2097152, end to end even), and 16-bit inputs to f32 outputs (where the order's error shows: softmax 5.9 u against
// 2.8 on the test's rows; kept on the tree). f16 (session 19, lead19's run of 2193d3f, tune_softmax --split18 with
// SMK_SPLIT18_DTYPE=f16, the same method): softmax 32×2097152 0.879, 128×524288 0.871, 1×16777216 0.908; log-softmax
// 0.820 / 0.817 / 0.858; every f16 output byte for byte the tree's at those shapes (review18 F10).
constexpr std::int64_t kSplitRunningMinChunks = 32;
constexpr bool kSplitRunning16 = true;
bool split_running_takes(SoftmaxPath path, DType t, DType out, kernels::Op op, std::int64_t n) {
  if ((op != kernels::Op::softmax && op != kernels::Op::log_softmax) || t == DType::f32) return false;
  const int setting = kernels::split_row_running();
  if (setting == 0) return false;
  if (setting == 1) return path == SoftmaxPath::split_row;
  return kSplitRunning16 && out == t && forced_softmax_path() == SoftmaxPath::automatic &&
         (path == SoftmaxPath::split_row || path == SoftmaxPath::grid_row) &&
         n > kSplitRunningMinChunks * kernels::kSplitChunk;
}

// Whether the current device runs cluster_row's cluster for rows of n (split_row_active_clusters: none below compute
// capability 9.0, nor where a MIG or MPS slice has no room for it; then split_row serves those rows instead).
bool clusters_run(std::int64_t n, bool backward) {
  const int cluster = cluster_config(n, backward ? kernels::kBackwardBlockElems : kernels::kBlockElems).cluster;
  return kernels::split_row_active_clusters(cluster) > 0;
}

// The path for a call: the forced one (checked) or the dispatcher's choice.
// `read_only`: logsumexp or the state (no row written), which may route differently (batch invariance holds: the
// rule looks at the op, n, the dtype and the layout, never the number of rows).
SoftmaxPath choose_path(const char* op, const TensorView& in, int dim, std::int64_t n, bool backward,
                        bool read_only = false) {
  const bool unit_step = in.strides[dim] == 1 || n <= 1;
  const std::int64_t block_max = backward ? kBackwardWideSharedMaxN : kWideBlockMaxN;
  const std::int64_t block_auto =
      backward ? kBackwardWideSharedAutoMaxN : (read_only ? kWideAutoMaxNReadOnly : kWideAutoMaxN);
  const std::int64_t cluster_max = backward ? kBackwardClusterMaxN : kClusterMaxN;
  const std::int64_t cluster_auto =
      std::min(cluster_max, !backward && read_only ? kClusterAutoMaxNReadOnly : kClusterAutoMaxN);
  const SoftmaxPath forced = forced_softmax_path();
  switch (forced) {
    case SoftmaxPath::automatic:
      if (!unit_step) return SoftmaxPath::strided_inner;
      if (n <= kWarpMaxN) return SoftmaxPath::warp_per_row;
      if (n <= std::max(block_auto, backward ? kBackwardBlockMaxN : kBlockMaxN)) return SoftmaxPath::block_per_row;
      // cluster_row where the device runs its clusters (not below Hopper, nor on a slice without room for them);
      // else split_row, which falls back to its three kernels there (a property of the device, never of the rows).
      if (n <= cluster_auto && clusters_run(n, backward)) return SoftmaxPath::cluster_row;
      if (!backward && in.numel() * static_cast<std::int64_t>(dtype_size(in.dtype)) < kGridRowMaxBytes)
        return SoftmaxPath::grid_row;
      return SoftmaxPath::split_row;
    case SoftmaxPath::warp_per_row: check_capacity(op, forced, n, kWarpMaxN); return forced;
    case SoftmaxPath::block_per_row: check_capacity(op, forced, n, block_max); return forced;
    case SoftmaxPath::cluster_row:
      check_capacity(op, forced, n, cluster_max);
      if (!clusters_run(n, backward))
        refuse(op, forced, "this device does not run its thread-block clusters (compute capability 9.0 or newer, "
                           "with room for the cluster, is needed)");
      return forced;
    case SoftmaxPath::grid_row:
      if (backward) refuse(op, forced, "it has forward kernels only (the backward passes take split_row)");
      return forced;
    case SoftmaxPath::split_row:
    case SoftmaxPath::strided_inner:
    case SoftmaxPath::lesson_row_per_thread: return forced;
  }
  refuse(op, forced, "unknown path");
}

void run_lesson(const char* op, SoftmaxKind kind, const SoftmaxProblem& p, const TensorView& out, const TensorView& in,
                const SoftmaxOptions& options, cudaStream_t s) {
  const bool plain = in.dtype == DType::f32 && out.dtype == DType::f32 && p.dim == in.rank - 1 &&
                     in.is_contiguous() && out.is_contiguous() && options.temperature == 1.0f &&
                     !detail::is_set(options.mask) && !detail::is_set(options.temperature_per_row);
  if (!plain || kind == SoftmaxKind::state)
    refuse(op, SoftmaxPath::lesson_row_per_thread,
           "the lesson's kernels take contiguous f32 tensors reduced over the last dimension, with no temperature, "
           "mask or state output");
  auto* y = static_cast<float*>(out.data);
  const auto* x = static_cast<const float*>(in.data);
  switch (kind) {
    case SoftmaxKind::softmax: return lesson::softmax_rows_shifted(y, x, p.rows, p.n, s, options.empty_rows);
    case SoftmaxKind::log_softmax: return lesson::log_softmax_rows(y, x, p.rows, p.n, s, options.empty_rows);
    case SoftmaxKind::logsumexp: return lesson::logsumexp_rows(y, x, p.rows, p.n, s);
    case SoftmaxKind::state: break;
  }
}

void set_temperature(RowProblem& rp, const SoftmaxOptions& options) {
  rp.temperature = options.temperature;
  rp.temp = detail::is_set(options.temperature_per_row) ? static_cast<const float*>(options.temperature_per_row.data)
                                                        : nullptr;
  rp.scale = rp.temp != nullptr || options.temperature != 1.0f;
}

}  // namespace

void softmax_forward(const char* op, SoftmaxKind kind, const SoftmaxProblem& p, const TensorView& out,
                     const TensorView& out_sum, const TensorView& in, const SoftmaxOptions& options, Stream stream) {
  if (!is_float_type(in.dtype)) throw_unsupported(op, "the CUDA backend takes f32, f16 and bf16 tensors");
  const bool row_out = kind == SoftmaxKind::logsumexp || kind == SoftmaxKind::state;
  DeviceGuard guard(in.device.index);  // before the path: the dispatcher asks the tensor's device about clusters
  SoftmaxPath path = choose_path(op, in, p.dim, p.n, /*backward=*/false, row_out);
  if (p.rows == 0 || (p.n == 0 && !row_out)) return;
  const auto s = static_cast<cudaStream_t>(stream.handle);
  if (path == SoftmaxPath::lesson_row_per_thread) return run_lesson(op, kind, p, out, in, options, s);

  const bool has_mask = detail::is_set(options.mask);
  std::array<const TensorView*, kernels::kSlots> views{};
  views[kernels::kX] = &in;
  if (row_out) {
    views[kernels::kStat0] = &out;
    if (kind == SoftmaxKind::state) views[kernels::kStat1] = &out_sum;
  } else {
    views[kernels::kOut] = &out;
  }
  if (has_mask) views[kernels::kMask] = &options.mask;
  if (detail::is_set(options.temperature_per_row)) views[kernels::kTemp] = &options.temperature_per_row;
  const int inner_dim = path == SoftmaxPath::strided_inner ? pick_inner_dim(in, p.dim) : -1;
  RowProblem rp = make_problem(in, p.dim, inner_dim, views);
  switch (kind) {
    case SoftmaxKind::softmax: rp.op = kernels::Op::softmax; break;
    case SoftmaxKind::log_softmax: rp.op = kernels::Op::log_softmax; break;
    case SoftmaxKind::logsumexp: rp.op = kernels::Op::logsumexp; break;
    case SoftmaxKind::state: rp.op = kernels::Op::state; break;
  }
  rp.x = in.data;
  if (row_out) {
    rp.stat0 = static_cast<float*>(out.data);
    rp.stat1 = kind == SoftmaxKind::state ? static_cast<float*>(out_sum.data) : nullptr;
  } else {
    rp.out = out.data;
    rp.out_dtype = out.dtype;
  }
  rp.x_dtype = in.dtype;
  rp.has_mask = has_mask;
  rp.mask = has_mask ? options.mask.data : nullptr;
  rp.mask_dtype = has_mask ? options.mask.dtype : DType::f32;
  rp.empty_rows = options.empty_rows;
  set_temperature(rp, options);

  if ((path == SoftmaxPath::split_row || path == SoftmaxPath::cluster_row) &&
      forced_softmax_path() == SoftmaxPath::automatic && cluster_stage_takes(rp.op, in.dtype, p.n) &&
      kernels::launch_cluster_stage_rows(rp, s))
    return;
  if (path == SoftmaxPath::cluster_row && forced_softmax_path() == SoftmaxPath::automatic &&
      split_row_f32_softmax_takes(rp.op, in.dtype, p.n))
    path = SoftmaxPath::split_row;  // next20
  // lse10: logsumexp and the state read once with a running state a thread (lse_stream.cu) where its rule takes them.
  if (row_out && forced_softmax_path() == SoftmaxPath::automatic &&
      (path == SoftmaxPath::warp_per_row || path == SoftmaxPath::block_per_row)) {
    kernels::LseStreamConfig lc;
    if (lse_stream_config(in.dtype, p.n, lc)) {
      kernels::LseStreamLast& last = kernels::lse_stream_last_config();
      last.lanes.store(lc.lanes, std::memory_order_relaxed);
      last.threads.store(lc.lanes > 0 ? 0 : lc.threads, std::memory_order_relaxed);
      return kernels::launch_lse_stream_rows(rp, lc, s);
    }
  }
  // lse17: longer rows of logsumexp and the state on lse_stream's chunk kernel where lse_chunks_takes says.
  if (row_out && forced_softmax_path() == SoftmaxPath::automatic &&
      (path == SoftmaxPath::split_row || path == SoftmaxPath::cluster_row || path == SoftmaxPath::grid_row) &&
      lse_chunks_takes(in.dtype, p.n)) {
    const int threads = kernels::lse_chunk_threads_setting();
    return kernels::launch_lse_chunk_rows(
        rp, threads > 0 ? threads : (in.dtype == DType::f32 ? kLseChunkThreadsF32 : kLseChunkThreads16), s);
  }
  // split18: long rows' softmax / log-softmax with the running chunk pass where split_running_takes says.
  if (!row_out && split_running_takes(path, in.dtype, out.dtype, rp.op, p.n))
    return kernels::launch_split_running_rows(rp, s);
  switch (path) {
    case SoftmaxPath::warp_per_row: {
      const kernels::WarpConfig c = warp_config(p.n, in.dtype, rp.op);
      const int occ = kernels::warp_occ_blocks(warp_occ_rule(p.n, in.dtype, rp.op, c.elems));  // short14
      if (occ > 0 && kernels::launch_warp_rows_occ(rp, c, occ, s)) return;
      return kernels::launch_warp_rows(rp, c, s);
    }
    case SoftmaxPath::block_per_row: {
      kernels::BlockConfig c = block_row_config(p.n, kernels::kBlockElems, kBlockMaxN, kernels::kWideBlockElems);
      c.staged = c.wide && wide_row_pipeline_pays(in.dtype, rp.op, p.n);
      c.lane_stages = block_lane_stages(in.dtype, rp, c);
      c.ahead = block_ahead_rows(in.dtype, rp, c);
      c.evict_first = kAheadEvictFirst;
      return kernels::launch_block_rows(rp, c, s);
    }
    case SoftmaxPath::cluster_row: {
      kernels::BlockConfig c = cluster_config(p.n, kernels::kBlockElems);
      c.staged = row_pipeline_pays(rp.op, c);
      return kernels::launch_block_rows(rp, c, s);
    }
    case SoftmaxPath::split_row: return kernels::launch_split_rows(rp, s);
    case SoftmaxPath::grid_row: return kernels::launch_grid_rows(rp, s);
    case SoftmaxPath::strided_inner:
      return kernels::launch_strided_inner(rp, strided_config(p.n, rp.inner, /*cache_ok=*/true), s);
    default: refuse(op, path, "not a forward path");
  }
}

void softmax_backward(const char* op, BackwardKind kind, const SoftmaxProblem& p, const TensorView& dx,
                      const TensorView& y, const TensorView& dy, const SoftmaxOptions& options, Stream stream) {
  if (!is_float_type(y.dtype)) throw_unsupported(op, "the CUDA backend takes f32, f16 and bf16 tensors");
  DeviceGuard guard(y.device.index);  // before the path: the dispatcher asks the tensor's device about clusters
  const SoftmaxPath path = choose_path(op, y, p.dim, p.n, /*backward=*/true);
  if (path == SoftmaxPath::lesson_row_per_thread)
    refuse(op, path, "the lesson has no backward kernels");
  if (p.rows == 0 || p.n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream.handle);
  std::array<const TensorView*, kernels::kSlots> views{};
  views[kernels::kX] = &y;
  views[kernels::kDy] = &dy;
  views[kernels::kOut] = &dx;
  if (detail::is_set(options.temperature_per_row)) views[kernels::kTemp] = &options.temperature_per_row;
  // strided_inner keeps the steps of all three tensors; the others need y unit-stride only for speed.
  const int inner_dim = path == SoftmaxPath::strided_inner ? pick_inner_dim(y, p.dim) : -1;
  RowProblem rp = make_problem(y, p.dim, inner_dim, views);
  rp.op = kind == BackwardKind::softmax ? kernels::Op::softmax_backward : kernels::Op::log_softmax_backward;
  rp.x = y.data;
  rp.dy = dy.data;
  rp.out = dx.data;
  rp.x_dtype = y.dtype;
  rp.out_dtype = dx.dtype;
  set_temperature(rp, options);
  switch (path) {
    case SoftmaxPath::warp_per_row: {
      kernels::WarpConfig c = warp_backward_config(rp, y.dtype);
      const kernels::WarpBackwardDense d = warp_backward_dense(rp, y.dtype, c);  // sbwd11
      kernels::WarpBackwardLast& last = kernels::warp_backward_last();
      last.lanes.store(c.lanes, std::memory_order_relaxed);
      last.elems.store(c.elems, std::memory_order_relaxed);
      last.grid.store(c.grid, std::memory_order_relaxed);
      return kernels::launch_backward_warp_rows(rp, c, d, s);
    }
    case SoftmaxPath::block_per_row: {
      // mid9: read twice, no row in registers (backward_reread.cu), where it was faster.
      if (backward_reread_takes(y.dtype, rp.op, p.n)) return kernels::launch_backward_reread_rows(rp, s);
      kernels::BlockConfig c;
      const bool f32 = y.dtype == DType::f32;
      if (p.n >= (f32 ? kBackwardSharedFromNF32 : kBackwardSharedFromN16)) {
        // y's 32 a thread in registers, dy in shared memory (BlockConfig::dy_shared).
        c.threads = round_up32(ceil_div(p.n, kernels::kBackwardWideSharedElems));
        c.dy_shared = true;
        return kernels::launch_backward_block_rows(rp, c, s);
      }
      c = block_row_config(p.n, kernels::kBackwardBlockElems, kBackwardBlockMaxN, kernels::kBackwardWideBlockElems);
      c.staged = !c.wide && backward_row_pipeline_pays(y.dtype, c);
      return kernels::launch_backward_block_rows(rp, c, s);
    }
    case SoftmaxPath::cluster_row:
      return kernels::launch_backward_block_rows(rp, cluster_config(p.n, kernels::kBackwardBlockElems), s);
    case SoftmaxPath::split_row:
      // vocab10: row_loop.cu (bitwise the split kernels, one launch) where its rule takes the call.
      if (kernels::launch_backward_row_loop_rows(rp, s)) return;
      return kernels::launch_backward_split_rows(rp, s);
    case SoftmaxPath::strided_inner:
      return kernels::launch_backward_strided_inner(rp, strided_config(p.n, rp.inner, /*cache_ok=*/false), s);
    default: refuse(op, path, "not a backward path");
  }
}

}  // namespace smk::cuda
