// warp_per_row: rows of up to 1024 elements, one row per group of 1–32 lanes (several rows per warp for tiny rows),
// the row in registers (4–32 elements per lane), 16-byte vector loads when the row is aligned, a persistent grid.
//
// Traffic per element: softmax / log-softmax read n and write n: 8 B (f32), 4 B (bf16/f16 → same dtype);
// logsumexp / state read n: 4 B (f32), 2 B (bf16/f16). Floor on the H200 at the measured 4.27 TB/s copy (4.42 read):
// 32768×1024, 262144×128, 1048576×32, 65536×512 (2^25 elements) f32 softmax 62.9 µs, bf16 31.4 µs; logsumexp f32
// 30.3 µs, bf16 15.2 µs. At 90 % of read, bf16 logsumexp must take 2.0e12 elements/s, ~7.6 per SM-clock at 1.98 GHz:
// ~16 issue slots an element.
// Measured (H200, 2026-11-30, softmaxkit bench, L2 flushed, median; docs/perf-notebook.md "warpdiet", tree of
// 3e902ce with this file's log-term change): 262144×128 softmax f32 74.7 µs (84 % of copy), bf16 45.8 (69 %);
// log-softmax f32 74.2 (85 %), bf16 45.5 (69 %); logsumexp f32 48.0 (63 % of read), bf16 37.7 (40 %), f16 37.9;
// 1048576×32 bf16 softmax 47.6, log-softmax 46.7, logsumexp 35.6 (43 %); 32768×1024 bf16 47.8 / 46.8 / 39.1.
// The log ops' terms come from thread_log_rest (log_term_exp_ftz: SASS 13.2 instructions an element for the exp,
// tie count and sum, 17.2 before): 16-bit logsumexp 1.11-1.12×, log-softmax 1.02-1.11×, f32 logsumexp 1.03-1.07×;
// softmax (exp_diff) is unchanged: a variant 7 instructions an element cheaper ran no faster (bf16) or slower (f16),
// so the 16-bit forward is not bound by issue alone. A register prefetch of the next rows (one block fewer an SM)
// was measured too and dropped: 0.87-1.05× on the row ops, f32 logsumexp 0.89×.
// Nsight Compute (H200, 2026-11-30, bw16's run of e7a1abd): 262144×128 softmax bf16 (E32 L4, 80 registers, 3 blocks
// an SM) DRAM 54 % busy, issue slots 73 % busy, ~28 instructions an element (29.4M warp instructions for 2^25
// elements): close to issue-bound, the exp_diff and the 16-bit unpack and pack being most of it; f32 (E16 L8, 63
// registers, 4 blocks) DRAM 75 %, issue 55 %, 58 % of the cycles between a warp's issues waiting on its loads. A
// variant staging each lane group's next rows in shared memory by cp.async (two buffers, no register held by a load
// in flight) was timed beside this kernel (bw16's run of d4f4d06, tune_softmax, µs direct → staged): f32 slower
// everywhere (262144×128 softmax 81.8 → 87.3, 1048576×32 81.5 → 92.5, 32768×1024 81.0 → 82.3), bf16 softmax 1-4 %
// faster at 128-1024 (50.1 → 49.2 at 128) but logsumexp slower and 1048576×32 1.36× slower (51.4 → 69.8): dropped.
// The 16-bit-output tier (common.cuh out_exp, where plain_exp_pays below): 16-bit softmax's terms as expf(fl(z − m)),
// SASS 17.4 → 10.4 instructions an element in the exp window (bf16, E = 32). Measured (H200, 2026-11-30, tier16's run
// of 77c64e6, softmaxkit bench, L2 flushed, median, old → new): bf16 softmax 32768×1024 48.8 → 41.7 µs (75 % of copy),
// 262144×128 46.6 → 42.2 (75 %); f16 47.8 → 42.0, 45.4 → 40.7; the log ops and f32 unchanged (the same SASS).
// fwd16 (session 7, 2026-11-30): the 16-bit log ops' terms by log_term_exp16 (common.cuh thread_log_rest_in: SASS 12.0 →
// 6.8 instructions an element in the exp window at E = 32, 10.3 → 6.0 at E = 16; 80 registers, no spill; f32 and
// softmax kernels SASS-identical, cuobjdump sm_90a). Measured (H200, fwd16's runs of a7b007d and dd0d523, softmaxkit
// bench, L2 flushed, median, µs old (3809204) → new, two runs where both timed it; docs/bench/fwd16-s7-2026-11-30.md):
// bf16 logsumexp 1048576×32 36.2 → 31.8 / 35.7 → 31.2 (2.15 TB/s, 49 % of read), 262144×128 38.7 → 33.9 / 37.8 → 34.3,
// 65536×512 41.1 → 35.7 / 40.1 → 35.2, 32768×1024 39.4 → 35.5 (f16 alike, 1.12-1.14×); bf16 log-softmax 262144×128
// 45.6 → 43.1 / 45.5 → 42.8, 32768×1024 47.2 → 43.3, 1048576×32 46.5 → 45.5 (on two lanes: one lane a row went 47.5 →
// 50.7 with the cheaper terms, the store side of a row a lane; softmax_cuda.cpp kWarpLogSoftmax16NarrowMaxN).
// Nsight Compute (fwd16's run of a7b007d): 262144×128 bf16 softmax 21.0 instructions an element, one warp eligible on
// 67 % of cycles, DRAM 63 %, 3 blocks an SM (80 registers, 34 % occupancy), 43 % of a warp's cycles waiting on its
// loads; 1048576×32 bf16 logsumexp (new terms, a row a lane) 16.0 an element, 67 % issue, DRAM 50 %, L1 hit 48 % (each
// 16-byte load covers half of a 32-byte sector, the other half comes from L1); 1048576×32 f32 softmax (E16 L2, 63
// registers, 4 blocks) 30.7 an element, 50 % issue, DRAM 72 %, 59 % of a warp's cycles waiting on loads: the f32 rows
// want more bytes in flight a warp, the 16-bit rows fewer instructions and more warps.
// short8 (session 8, 2026-11-30; docs/bench/short8-s8-2026-11-30.md): Nsight Compute beside torch.compile's Triton
// kernel for f32 262144×128 softmax: ours 68.2 µs under ncu, 528 blocks of 256 (persistent), 63 registers, 47 %
// occupancy, DRAM 75 %, 60 % of a warp's cycles on its loads; Triton's 63.4 µs, 32768 blocks of 64 (7.8 waves, not
// persistent), 32 registers, 89 % occupancy, DRAM 80 %, plain ld/st.global.v4 (no cache hints), 16 elements a thread
// as ours. Timed (tune_softmax --short8, run of c47a42b, µs): f32 rows written back on a grid of up to 8 times the
// resident blocks (softmax_cuda.cpp kWarpGridF32; this kernel unchanged, SASS-identical) 262144×128 softmax 83.2 →
// 73.9, 1048576×32 81.8 → 75.8, 32768×1024 81.5 → 73.8 (log-softmax alike); 16-bit rows lost with it (0.93-0.98×) and
// stay persistent. Cache hints on the loads / stores and two rows at once at E16 were timed too and not kept.
// The bench (run of 6740400, 2026-11-30 10:38 UTC, L2 flushed, median, old → new µs): f32 262144×128 softmax 75.06 →
// 70.30 (90.0 % of the 4.24 TB/s copy; floor 63.3), 1048576×32 78.82 → 72.98 (86.7 %); bf16 unchanged (41-48 µs).
// short10 (session 10, 2026-11-30; docs/bench/short10-s10-2026-11-30.md; tune_softmax --short10, run of 809a984, µs,
// median of 30, the default timed first and last): 16-bit rows held packed as loaded (warp_rows_packed_kernel,
// packed16.cuh; dense rows, packed_rule.hpp), the same bits. ptxas (CUDA 13.0, sm_90a): E32 64 registers (4 blocks an
// SM) against 80 (3), E16 and E8 40 (6) against 64 / 72, no stack. bf16 logsumexp 1048576×32 31.78 / 31.49 → 29.63
// (2.26 TB/s, 53 % of copy), 262144×128 34.78 / 34.53 → 32.70, 65536×512 34.85 / 34.75 → 33.25; log-softmax 1048576×32
// (E16 L2) 47.04 / 48.19 → 43.52 (72 %), 262144×128 45.02 / 44.93 → 44.19, 65536×512 45.02 / 44.93 → 42.34, but
// 524288×64 43.78 / 43.74 → 45.31 (slower: not taken); softmax slower at every length (it forms its term again at the
// store: 49.50 / 49.28 → 63.62 at 1048576×32, 43.84 / 44.13 → 49.12 at 262144×128): not taken, and since the
// session 10 review (F13) not compiled: warp_rows_packed_kernel is the log ops' alone. Rows of 32 on 4 lanes
// of 8 (16-byte loads, 8 rows a warp) lost in every forward op, packed or not (softmax 75.8, logsumexp 49.5-64.1).
// Where: softmax_cuda.cpp warp_packed_rule.
// short11 (session 11, 2026-11-30; docs/bench/short11-s11-2026-11-30.md; tune_softmax --short11, run of 542e967, H200,
// copy 4.23 TB/s in that process, µs, median of 30, the default timed first and last): 16-bit softmax at 1024 on
// warp_rows_dense_kernel (below; 64 registers, 4 blocks an SM) bf16 44.48 / 45.31 → 43.65 (3.08 TB/s, 72 % of copy;
// floor 31.7), f16 44.51 / 43.71 → 43.14; 16-bit log-softmax at 1024 packed bf16 45.95 / 45.34 → 43.62, f16 44.64 /
// 44.86 → 43.36. The f32 rows stay on warp_rows_kernel (its dense form lost: below), at 84-87 % of copy in this run
// (floor 63.5 µs: 1048576×32 softmax 74.4 / 73.6, 262144×128 72.8 / 72.5, 32768×1024 73.0 / 72.5).
// short12 (session 12, 2026-11-30; docs/bench/short12-s12-2026-11-30.md; tune_softmax --short12, run of a9b96ce (the
// library of 775cf6d with a9b96ce's files), H200, copy 4.24 TB/s in that process, µs, median of 40, the default timed
// first and last; 16-bit floor at 2n bytes 31.7): 16-bit softmax rows of 17..32 on two lanes of 16 with the tier's
// terms, dense rows (32) on warp_rows_dense_kernel<In, 16, 6> (40 registers, 6 blocks an SM): 1048576×32 bf16 50.21 /
// 49.95 → 42.08 (75 % of copy; 1.19×), f16 49.76 / 49.73 → 41.73; the general kernel at E16 45.95 / 44.70. Why the
// one-lane row was slow (Nsight Compute, one launch each, same run): its 16-byte vectors cover half a 32-byte sector
// each, so its loads and stores move 4.19M sectors through L1 where two lanes of 16 move 2.10M (L1 hit 55 % against
// 22 %: the other halves); and 80 registers (3 blocks, 21.7 warps an SM active) against 40 (6, 37.5). Warp
// instructions 28.1M → 23.6M (26.8 → 22.5 an element), DRAM 48 → 65 % busy, 49.2 → 35.8 µs under ncu. torch.compile's
// Triton kernel for the same op: 33.4 µs under ncu, 32768 programs of 64 threads, 16 elements a thread (two 16-byte
// loads: our E16 L2 layout), 32 registers, 53.4 warps an SM, 23.1M warp instructions, DRAM 69 %: the instructions are
// now even, the warps 0.70× Triton's. E16 at 128 and 512 (dense or not) and the log ops at E16 tied or lost: unchanged.
// short14 (session 14, 2026-12-01; docs/bench/short14-s14-2026-11-30.md; tune_softmax --short14, run of 6ea8c47's
// binaries, H200, median of 30 µs, two rounds each): f32 softmax rows of 128 … 1024 and logsumexp rows of 32 / 64 on
// warp_rows_occ_kernel (below: blocks of 64 threads, one row group a warp, 48 warps an SM at 40 registers at E16, 32 at
// 64 at E32; the same bits as warp_rows_kernel): softmax 65536×512 71.52 / 71.10 → 69.60 / 70.21 (90 % of copy;
// 1.01-1.02× at 128 … 1024), logsumexp 1048576×32 45.57 / 44.99 → 44.29 / 44.26 (1.02-1.03×); rows of 32 slower in
// softmax and log-softmax, log-softmax tied at 64 … 512 (softmax_cuda.cpp warp_occ_rule). f32 softmax keeps exp_diff: a
// plain expf(fl(x − m)) breaks its relative gate (docs/semantics.md §6) for outputs with |x − m| beyond ~10 + L.
// short15 (session 15, 2026-12-01; docs/bench/short15-s15-2026-12-01.md; tune_softmax --short15, run of 4db3464's
// binaries, H200, median of 30 µs, two rounds each): 16-bit softmax rows of 128 … 1024 (E32, dense) on
// warp_rows_occ_kernel at 20 blocks an SM (48 registers, 40 warps; the same bits as the general and dense kernels):
// bf16 262144×128 42.34 / 42.05 → 39.01 / 39.26, 32768×1024 41.82 / 41.79 → 39.74 / 39.62 (1.05-1.09×, 79-81 % of copy;
// f16 1.04-1.08×). The 16-bit log ops and f32 rows of 32 lost there (below, at occ_built). short18 (session 18) took
// bf16 softmax rows of 64 there too (softmax_cuda.cpp kWarpOccSoftmaxMinNBf16, 1.03-1.05×; f16 at 64 was slower).
// short16 (session 16, 2026-12-01; docs/bench/short16-s16-2026-12-01.md; tune_softmax --short16, run of 3374352's
// binaries, H200, median of 30 µs, three rounds each, the dispatcher's kernel → the occupancy form, outputs byte for
// byte the same): the 16-bit log ops at E32 on warp_rows_packed_kernel at the occupancy kernel's blocks of 64 threads
// and grid, 24 blocks an SM (40 registers, no spill; 41-42 warps an SM against 26.5): bf16 log-softmax 262144×128
// 44.61 / 44.13 / 44.16 → 41.02 / 41.09 / 40.96 (77 % of copy), 32768×1024 42.59 / 43.33 / 43.49 → 41.25 / 41.09 /
// 40.64, 524288×64 (unpacked before) 44.61 / 45.31 / 44.86 → 42.75 / 43.01 / 43.20 (1.03-1.09× at 64 … 1024, the
// rounds' extremes; f16 1.04-1.09×); bf16 logsumexp 65536×512 34.56 / 34.46 / 34.75 → 32.45 / 32.45 / 31.55 (1.02-1.10×
// at 64 … 512, 1.00-1.06× at 32). Log-softmax at 32 (E16, two lanes) stays on the persistent packed kernel.
#include "cuda/softmax/common.cuh"
#include "cuda/softmax/launch.hpp"
#include "cuda/softmax/packed16.cuh"
#include "cuda/softmax/warp_occ.hpp"

namespace smk::cuda::kernels {

WarpRowTuning& warp_row_tuning() {
  static WarpRowTuning t;
  return t;
}

WarpRowLast& warp_row_last() {
  static WarpRowLast last;
  return last;
}

WarpOccTuning& warp_occ_tuning() {  // short14
  static WarpOccTuning t;
  return t;
}

WarpOccLast& warp_occ_last() {
  static WarpOccLast last;
  return last;
}

namespace {

constexpr int kThreads = 256;  // 8 warps: enough independent loads per block without hurting the persistent grid

// Rows a lane group handles at once: short rows (E ≤ 8) are loaded R at a time, so that a warp keeps as many bytes
// in flight as one with a long row (a warp moving 512 B per step cannot cover the memory latency).
template <int E>
constexpr int kRowsAtOnce = E >= 16 ? 1 : 16 / E;

// The statistics of the R rows a lane group holds (v: E elements a lane, `lanes` lanes a row): the max, softmax's
// sum of terms past the max and the max's ties (common.cuh thread_exp_rest, Out: void exp_diff, a 16-bit In the tier's
// plain exponential) or the log ops' (thread_log_rest_in<In>, the ties counted across the group). Every lane takes
// part in the shuffles. One copy for warp_rows_kernel, warp_rows_dense_kernel and warp_rows_occ_kernel (session 14's
// duplicates finding; short15): the same trees and terms in each, so their bits agree.
template <typename In, typename Out, bool kLog, int R, int E>
__device__ __forceinline__ void warp_row_stats(float (&v)[R][E], int lanes, float (&m)[R], int (&ties)[R],
                                               float (&rest)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) m[r] = group_max(tree_max<E>(v[r]), lanes);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    ties[r] = 0;
    const float shift = OnlineSoftmaxState<float>::shift_for(m[r]);
    if constexpr (kLog) {
      rest[r] = group_sum(thread_log_rest_in<In>(v[r], shift, ties[r]), lanes);
      ties[r] = group_count(ties[r], lanes);
    } else {
      rest[r] = group_sum(thread_exp_rest<Out>(v[r], shift, true, false, ties[r]), lanes);
    }
  }
}

// kLog: the op takes log l (log-softmax, logsumexp, the state), not 1/l (softmax). A template parameter, not a
// branch on p.op: the two arithmetics (common.cuh's thread_exp_rest and thread_log_rest) then compile apart, and
// neither pays the other's registers or instructions (measured: docs/perf-notebook.md, "log l's terms").
// Out: softmax's output type when known at compile time (In: 16-bit outputs take common.cuh out_exp's plain
// exponential, where plain_exp_pays below); void: read from p at the store, and softmax's terms from exp_diff.
template <typename In, typename Out, int E, bool kLog>
__global__ void __launch_bounds__(kThreads, E == 16 ? 4 : 3) warp_rows_kernel(const RowProblem p, int lanes) {
  using Tile = RowTile<In, E>;
  constexpr int R = kRowsAtOnce<E>;
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int groups = 32 / lanes;  // rows per warp and step
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const int n = static_cast<int>(p.n);
  for (std::int64_t base = warp * groups * R; base < p.rows; base += warps * groups * R) {
    float v[R][E];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row < p.rows) {
        Tile::load(v[r], at<In>(p.x, row_offset(p.map, row, kX)), n, p.step[kX], g, lanes);
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) v[r][i] = -detail::inf_<float>();
      }
    }
    if (p.scale || p.has_mask) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const std::int64_t row = base + r * groups + group;
        if (row < p.rows) Tile::transform(v[r], row_transform(p, RowRef{row, 0}), n, g, lanes);
      }
    }
    // Every lane takes part in the shuffles, idle groups included.
    float m[R], rest[R];
    int ties[R];
    warp_row_stats<In, Out, kLog>(v, lanes, m, ties, rest);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row >= p.rows) continue;
      const RowRef o{row, 0};
      const auto state = state_from(m[r], ties[r], rest[r], kLog);
      if (!writes_rows(p.op)) {
        if (g == 0) write_row_stats(p, o, state);
        continue;
      }
      finish_rows(v[r], state.normalizer(p.empty_rows), kLog ? Op::log_softmax : Op::softmax);
      with_out<Out, In>(p, [&](auto* tag) {
        using O = std::remove_pointer_t<decltype(tag)>;
        Tile::template store<O>(at<O>(p.out, o.off(p, kOut)), v[r], n, p.step[kOut], g, lanes);
      });
    }
  }
}

// write_row_stats on a one-dimensional row map (the packed and dense kernels' rows: row · stride).
__device__ __forceinline__ void write_row_stats_1d(const RowProblem& p, std::int64_t row,
                                                   const OnlineSoftmaxState<float>& state) {
  if (p.op == Op::logsumexp) {
    p.stat0[row * p.map.stride[kStat0][0]] = state.lse();
  } else {
    p.stat0[row * p.map.stride[kStat0][0]] = state.m;
    p.stat1[row * p.map.stride[kStat1][0]] = state.l();
  }
}

// short10 (session 10): warp_rows_kernel<In, void, E, true> (the log ops: log-softmax, logsumexp, the state) for
// dense 16-bit rows (packed_rule.hpp packed_dense: n = lanes · E, aligned, unit steps, outputs in the input dtype, no
// temperature, no mask), the row held packed as loaded (E/2 registers of row instead of E) and unpacked at each pass:
// the max (pass 0), the sum of terms (pass 1), and for log-softmax the outputs, formed a vector at a time where they
// are stored (pass 2). The same trees, terms and normalizer as warp_rows_kernel: bitwise its outputs
// (test_warp_row_gpu, Packed*). Log ops only: packed softmax ran 0.78-0.89× (short10's run of 809a984; it forms its
// term again at the store) and is neither taken by the rule nor compiled. kMinBlocks as there unless measured
// otherwise (short10: the packed row leaves room for more).
// short16 (session 16): kBlockThreads / kMinBlocks are the launch bounds only (the body reads blockDim.x): the
// persistent form at kThreads (E32 4 blocks an SM, E16 6), and the occupancy form (launch_occ: blocks of kOccThreads,
// one row group a warp, every block needed) at E32 and 24 blocks an SM (occ_built, below: 1.03-1.09× for
// log-softmax at 64 … 1024). One body, so the same bits (test_warp_row_gpu OccKernelBitwise16); the persistent
// forms' SASS is unchanged by the template parameters (cuobjdump sm_90a, encodings included).
template <typename In, int E, int kBlockThreads = kThreads, int kMinBlocks = (E == 32 ? 4 : 6)>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks) warp_rows_packed_kernel(const RowProblem p, int lanes) {
  constexpr int R = kRowsAtOnce<E>;
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int groups = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  // lanes ≤ 32: lanes >> 6 and lanes >> 7 are 0, which the compiler cannot know (packed16.cuh).
  const PackedKeys k1 = packed_keys<In>(static_cast<std::uint32_t>(lanes) >> 6);
  const PackedKeys k2 = packed_keys<In>(static_cast<std::uint32_t>(lanes) >> 7);
  const In* const xs = static_cast<const In*>(p.x);
  for (std::int64_t base = warp * groups * R; base < p.rows; base += warps * groups * R) {
    PackedRow<In, E> v[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row < p.rows) v[r].load(xs + row * p.map.stride[kX][0], g, lanes);
      else v[r].fill(from_f32<In>(-detail::inf_<float>()));
    }
    float m[R], rest[R];
    int ties[R];
#pragma unroll
    for (int r = 0; r < R; ++r) m[r] = group_max(tree_max_of<E>([&](int i) { return v[r].get0(i); }), lanes);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      ties[r] = 0;
      const float shift = OnlineSoftmaxState<float>::shift_for(m[r]);
      // thread_log_rest_in<In>'s terms, ties and tree
      rest[r] = group_sum(tree_sum_of<E>([&](int i) {
                            const float x = v[r].get(i, k1);
                            const bool tie = x == shift;
                            ties[r] += tie ? 1 : 0;
                            return tie ? 0.0f : log_term_exp16(x, shift);
                          }),
                          lanes);
      ties[r] = group_count(ties[r], lanes);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row >= p.rows) continue;
      const auto state = state_from(m[r], ties[r], rest[r], true);
      if (!writes_rows(p.op)) {
        if (g == 0) write_row_stats_1d(p, row, state);
        continue;
      }
      const auto norm = state.normalizer(p.empty_rows);
      store_packed_row<In, E>(static_cast<In*>(p.out) + row * p.map.stride[kOut][0], g, lanes, [&](int i) {
        return norm.log_softmax(v[r].get(i, k2));  // finish_rows' log-softmax
      });
    }
  }
}

// short11 (session 11): warp_rows_kernel for dense rows (packed_rule.hpp row_dense: n = lanes · E, whole aligned
// 16-byte vectors a lane, one row dimension, unit steps, outputs in the input dtype, no temperature, no mask). The
// general kernel's row offset (row_offset over a rank-4 map), scalar tails, transform and run-time output type hold
// registers that a dense row does not need (short10 counted ~40 of them in the packed kernels): here the addressing is
// row · stride + Tile::index, so the kernel fits under a tighter __launch_bounds__ (kMinBlocks) and an SM holds more
// warps, each with its loads in flight (short8's Nsight Compute: torch.compile's f32 kernel runs 64 warps an SM at 32
// registers against our 32 at 63). Softmax only, taken where plain_exp_pays (the 16-bit tier, In terms): the same
// loads, trees, terms (warp_rows_kernel<In, In, E, false>'s), normalizer and conversions: bitwise warp_rows_kernel's
// outputs (test_warp_row_gpu, Dense*). The log-op and separate-term-type forms were dropped (session 11's review F4;
// SASS of both built kernels identical, cuobjdump).
// Measured (H200, 2026-11-30, short11's run of 542e967, tune_softmax --short11, median of 30 µs, default first / last
// → dense): 16-bit softmax at 1024 (E32 L32, 64 registers and 4 blocks an SM against 80 and 3) bf16 44.48 / 45.31 →
// 43.65, f16 44.51 / 43.71 → 43.14; at 512 and 128 within the default's spread (bf16 43.97 / 43.74 → 43.30, 43.39 /
// 43.33 → 43.42) or slower (f16 at 128: 44.03 / 43.30 → 45.06). The f32 forms (E16 at 6 blocks an SM, 40 registers;
// E32 at 4) lost or tied on every shape on the dispatcher's grid of 8: softmax 1048576×32 74.43 / 73.60 → 82.69,
// 262144×128 72.80 / 72.45 → 72.58, 32768×1024 73.02 / 72.48 → 72.96; log-softmax 32768×1024 72.90 / 73.44 → 81.41
// (48 B of spill); logsumexp 262144×128 43.04 / 44.06 → 51.07; on the persistent grid 10-15 % slower still. More warps
// an SM did not bring more bytes in flight at the rate the fewer, fuller warps do: not built (their code is in
// 542e967). So the kernel is built for 16-bit softmax at E32 only (kDenseBuilt), and taken at 1024
// (softmax_cuda.cpp warp_dense_rule) only with the occupancy kernel held off: since short15 (session 15) the default
// sends those rows to warp_rows_occ_kernel at 20 blocks an SM, the same bits.
template <typename In, int E, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) warp_rows_dense_kernel(const RowProblem p, int lanes) {
  using Tile = RowTile<In, E>;
  using Vec = typename Tile::Vec;
  using W = typename Tile::template OutVec<In>;
  constexpr int R = kRowsAtOnce<E>;
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int groups = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  const In* const xs = static_cast<const In*>(p.x);
  for (std::int64_t base = warp * groups * R; base < p.rows; base += warps * groups * R) {
    float v[R][E];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row < p.rows) {
        const Vec* q = reinterpret_cast<const Vec*>(xs + row * p.map.stride[kX][0]) + g;
        Vec w[Tile::K];
#pragma unroll
        for (int k = 0; k < Tile::K; ++k) w[k] = q[k * lanes];
#pragma unroll
        for (int k = 0; k < Tile::K; ++k)
#pragma unroll
          for (int j = 0; j < Tile::V; ++j) v[r][k * Tile::V + j] = to_f32(w[k].v[j]);
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) v[r][i] = -detail::inf_<float>();
      }
    }
    float m[R], rest[R];
    int ties[R];
    warp_row_stats<In, In, false>(v, lanes, m, ties, rest);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row >= p.rows) continue;
      const auto state = state_from(m[r], ties[r], rest[r], false);
      // Unreachable (softmax only), kept: without it ptxas allocates the kernel's registers differently (the SASS
      // changes throughout, 64 registers either way), and the measured kernel is this one.
      if (!writes_rows(p.op)) {
        if (g == 0) write_row_stats_1d(p, row, state);
        continue;
      }
      finish_rows(v[r], state.normalizer(p.empty_rows), Op::softmax);
      W* q = reinterpret_cast<W*>(static_cast<In*>(p.out) + row * p.map.stride[kOut][0]) + g;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        W o;
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) o.v[j] = from_f32<In>(v[r][k * Tile::V + j]);
        q[k * lanes] = o;
      }
    }
  }
}

// The dense kernels built (short11): 16-bit softmax at E32 on two lanes or more (the tier's terms), at 4 blocks an SM
// (ptxas -v, CUDA 13, sm_90a: 64 registers, no spill; the general kernel 80 at 3). short12: also at E16 (rows of 32 on
// two lanes, softmax_cuda.cpp kWarpSoftmax16NarrowMaxN) at 6 blocks an SM: 40 registers, no spill (the general kernel
// at E16 64 at 4). Under a bound of 8 (32 registers, 4 B spilled in bf16) it ran slower (short12's run of a9b96ce,
// 1048576×32 µs: bf16 46.34 against 42.08 at 6, f16 44.03 against 41.73; its code is in a9b96ce): not built.
// short14 (session 14): f32 forward rows (softmax, log-softmax, logsumexp, the state) that are dense for `lanes` lanes
// of E (packed_rule.hpp row_dense), at torch.compile's occupancy: blocks of kOccThreads = 64 threads (two warps, as
// Triton's kernel for these rows), kMinBlocks of them an SM (E16 24: 48 warps at ≤ 40 registers; E32 16: 32 warps at
// ≤ 64), and a grid of one row group a warp (no persistent walk: the hardware hands out the blocks as SMs
// free up, so no block walks two row groups while another walks one; the loop below runs once unless a test caps the
// grid). The arithmetic is warp_rows_kernel<float, void, E, kLog>'s (the same loads into the same slots, trees, terms:
// exp_diff for softmax, log_term_exp_ftz for the log ops, normalizer and stores): bitwise its outputs
// (test_warp_row_gpu OccKernelBitwiseF32). Traffic as warp_per_row's: 8 B an element (softmax, log-softmax), 4 B
// (logsumexp, the state); 2^25 f32 elements 63.5 µs at 2n bytes and the 4.23 TB/s copy.
// short15 (session 15): the same kernel for dense 16-bit rows (In bf16 / f16; built for softmax, with the tier's terms,
// Out = In, as warp_rows_kernel<In, In, E, false> and warp_rows_dense_kernel take where plain_exp_pays: the same bits
// as both; test_warp_row_gpu OccKernelBitwise16). Traffic 4 B an element; 2^25 16-bit elements 31.4 µs at 2n bytes and
// the 4.27 TB/s copy.
constexpr int kOccThreads = 64;
template <typename In>
using OccOut = std::conditional_t<sizeof(In) == 2, In, void>;  // softmax's terms: the tier for 16-bit, exp_diff for f32
template <typename In, int E, bool kLog, int kMinBlocks>
__global__ void __launch_bounds__(kOccThreads, kMinBlocks) warp_rows_occ_kernel(const RowProblem p, int lanes) {
  using Tile = RowTile<In, E>;
  using Vec = typename Tile::Vec;
  using W = typename Tile::template OutVec<In>;
  constexpr int R = kRowsAtOnce<E>;
  const int lane = threadIdx.x % 32;
  const int group = lane / lanes, g = lane % lanes;
  const int groups = 32 / lanes;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * kOccThreads + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kOccThreads / 32;
  const In* const xs = static_cast<const In*>(p.x);
  for (std::int64_t base = warp * groups * R; base < p.rows; base += warps * groups * R) {
    float v[R][E];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row < p.rows) {
        const Vec* q = reinterpret_cast<const Vec*>(xs + row * p.map.stride[kX][0]) + g;
        Vec w[Tile::K];
#pragma unroll
        for (int k = 0; k < Tile::K; ++k) w[k] = q[k * lanes];
#pragma unroll
        for (int k = 0; k < Tile::K; ++k)
#pragma unroll
          for (int j = 0; j < Tile::V; ++j) v[r][k * Tile::V + j] = to_f32(w[k].v[j]);
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) v[r][i] = -detail::inf_<float>();
      }
    }
    float m[R], rest[R];
    int ties[R];
    warp_row_stats<In, OccOut<In>, kLog>(v, lanes, m, ties, rest);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const std::int64_t row = base + r * groups + group;
      if (row >= p.rows) continue;
      const auto state = state_from(m[r], ties[r], rest[r], kLog);
      if (!writes_rows(p.op)) {
        if (g == 0) write_row_stats_1d(p, row, state);
        continue;
      }
      finish_rows(v[r], state.normalizer(p.empty_rows), kLog ? Op::log_softmax : Op::softmax);
      W* q = reinterpret_cast<W*>(static_cast<In*>(p.out) + row * p.map.stride[kOut][0]) + g;
#pragma unroll
      for (int k = 0; k < Tile::K; ++k) {
        W o;
#pragma unroll
        for (int j = 0; j < Tile::V; ++j) o.v[j] = from_f32<In>(v[r][k * Tile::V + j]);
        q[k * lanes] = o;
      }
    }
  }
}

// The occupancy kernels built (short14), ptxas -v (CUDA 13.0, sm_90a): E16 at 24 blocks an SM (48 warps) 40
// registers (softmax no spill, the log ops 4 B), E32 softmax at 16 (32 warps) 64 registers, no spill. Measured (H200,
// 2026-12-01 00:24 UTC, short14's run of 6ea8c47's binaries, tune_softmax --short14, 2^25 f32 elements, median of 30
// µs, two rounds each, default → occ): softmax 262144×128 71.68 / 71.20 → 70.69 / 70.27, 131072×256 71.26 / 70.98 →
// 70.24 / 70.11, 65536×512 71.52 / 71.10 → 69.60 / 70.21, 32768×1024 (E32) 71.81 / 71.39 → 70.91 / 70.69 (1.01-1.02×;
// 90 % of the 4.27 TB/s copy at 512); logsumexp 1048576×32 45.57 / 44.99 → 44.29 / 44.26, 524288×64 45.18 / 45.50 →
// 44.42 / 44.26 (1.02-1.03×). Tied: log-softmax at 64 … 512 (71.9 / 72.0 → 71.4 / 72.0 at 64, 71.2 / 70.9 → 71.0 /
// 71.1 at 512), softmax at 64 (71.97 / 74.24 → 71.23 / 72.13). Slower: softmax and log-softmax at 32 (73.3 / 73.3 →
// 82.6 / 77.1, 72.5 / 73.2 → 77.6 / 78.8; Nsight Compute: 40 warps active against 27 but DRAM 73 % against 77 %, 9.5
// warps stalled on the long scoreboard an issue against 7.1), logsumexp at E16 where the dispatcher has E32 (128 …
// 512: 41.4 → 45.0, a wider lane wins for a read-only row). Not built (6ea8c47 has them): E16 at 28 blocks (32
// registers, 28-44 B spilled) 0.66-0.92× everywhere; E4 with four rows a lane group (each warp load 512 contiguous
// bytes, at 16 or 24 blocks) 0.48-0.99×: twice the warp instructions (Nsight Compute at 262144×128: 73.3M against
// 35.6M, issue 85 % busy), its per-row reductions four times a lane.
// short15 (session 15): 16-bit softmax at E32 (rows of 64 ... 1024 on 2 ... 32 lanes, the tier's terms) at 20 blocks
// an SM: ptxas -v (CUDA 13.0, sm_90a) 48 registers, bf16 4 B spilled, f16 16 B (40 warps an SM; the general kernel
// 80 registers at 3 blocks of 256, 24 warps; the dense kernel 64 at 4, 32). Measured (H200, 2026-12-01 02:32 UTC,
// short15's run of 4db3464's binaries, tune_softmax --short15, 2^25 elements, median of 30 µs, two rounds each, the
// dispatcher's kernel → occ b20; the outputs byte for byte the same): bf16 262144×128 42.34 / 42.05 → 39.01 / 39.26,
// 65536×512 43.04 / 43.74 → 40.38 / 39.68, 32768×1024 (dense kernel) 41.82 / 41.79 → 39.74 / 39.62 (1.05-1.10×, 78-81
// % of the copy); f16 262144×128 42.46 / 41.92 → 39.74 / 40.16, 32768×1024 43.42 / 42.53 → 40.06 / 40.64 (1.04-1.08×).
// Nsight Compute (same call, bf16, one launch each, µs under ncu, warps active an SM, warp instructions): 262144×128
// general 37.06, 22.2, 22.0M → occ b20 34.14, 33.8, 23.1M (torch.compile's Triton kernel 33.95, 54.2, 24.6M: blocks of
// 64, 32 registers); 32768×1024 dense 36.03, 26.5, 22.5M → 34.69, 34.5, 24.9M (Triton 32.64, 27.5, 21.7M: a warp a
// row, blocks of 32, 64 registers). Not built (4db3464 has them): 16-bit softmax at 16 blocks (64 registers, no spill;
// 32 warps) 1.00-1.07× (bf16 32768×1024 42.24 / 41.86: even), f16 at 128 within 1-2 % of b20; 16-bit log ops at 16
// blocks (44 B spilled) 0.90-0.93× of the packed kernel everywhere (bf16 262144×128 42.62 / 42.34 → 45.70 / 46.02); f32
// E16 with two row groups a warp at 16 blocks (64 registers; the log ops 24 B spilled) at 1048576×32: softmax 73.15 /
// 72.99 → 76.42 / 76.54, log-softmax 72.77 / 73.02 → 79.30 / 79.20 (slower, as short14's one group at 24: 76.3,
// 77.3-77.9).
// short16 (session 16): the 16-bit log ops (log-softmax, logsumexp, the state) at E32 on warp_rows_packed_kernel at
// the occupancy kernel's blocks of kOccThreads and grid (the row held packed: 16 registers of row, so no spill where
// the unpacked occupancy form spilled 44 B at 16 blocks), 24 blocks an SM: ptxas -v (CUDA 13.0, sm_90a) 40 registers,
// no spill (b20: 48, bf16 4 B spilled; b16: 63-64; the persistent packed kernel 63-64 at 4 blocks of 256). Measured
// (H200, 2026-12-01 05:01 UTC, short16's run of 3374352's binaries, tune_softmax --short16, 2^25 elements, median of
// 30 µs, three rounds each, the dispatcher's kernel → b16 / b20 / b24 (round 1 shown; the outputs byte for byte the
// same)): bf16 log-softmax 262144×128 44.61 → 42.98 / 41.57 / 41.02, 131072×256 42.94 → 41.89 / 40.90 / 39.87,
// 65536×512 42.62 → 42.40 / 41.06 / 40.22, 32768×1024 42.59 → 42.82 / 42.30 / 41.25, 524288×64 (the unpacked kernel
// before) 44.61 → 43.20 / 43.04 / 42.75; bf16 logsumexp 1048576×32 (one lane) 30.91 → 31.42 / 30.14 / 29.38,
// 262144×128 31.01 → 31.33 / 30.72 / 29.82, 65536×512 34.56 → 33.02 / 32.77 / 32.45; f16 log-softmax 262144×128 43.01
// → 43.39 / 41.38 / 40.83, 32768×1024 43.04 → 43.74 / 41.70 / 40.99. b24 fastest in every case. Nsight Compute (same
// call, one launch, bf16 log-softmax, µs under ncu, warps active an SM, warp instructions, issue active): 262144×128
// persistent 36.99, 26.7, 22.6M, 68 % → b24 33.95, 40.9, 25.6M, 79 %; 32768×1024 36.80, 26.4, 23.7M, 72 % → 34.14,
// 41.9, 26.7M, 82 % (each warp's prologue now paid once a row group: 13 % more instructions, near issue-bound).
// Not built (3374352 has them): E32 at 16 and 20; E16 (log-softmax's two lanes of 16 at rows of 32) at 24 / 32
// blocks (40 / 32 registers, bf16 b32 8 B spilled), slower than the persistent packed E16 kernel: bf16 1048576×32
// 44.32 / 44.22 / 44.19 → 47.04 / 46.59 / 46.98 (b24), 45.82 / 45.86 / 45.76 (b32); f16 alike.
// The table of forms built: (input dtype, E, blocks an SM, op class); occ_kernel below instantiates exactly these.
template <typename In, int E>
constexpr bool occ_built(int blocks, bool log) {
  if constexpr (sizeof(In) == 4) {
    if constexpr (E == 16) return blocks == 24;
    else return E == 32 && blocks == 16 && !log;
  } else {
    return E == 32 && blocks == (log ? 24 : 20);
  }
}
using OccKernel = void (*)(const RowProblem, int);
template <typename In, int E, bool kLog>
OccKernel occ_kernel() {
  if constexpr (sizeof(In) == 4 && E == 16) {
    return warp_rows_occ_kernel<float, 16, kLog, 24>;
  } else if constexpr (sizeof(In) == 4 && E == 32 && !kLog) {
    return warp_rows_occ_kernel<float, 32, false, 16>;
  } else if constexpr (sizeof(In) == 2 && E == 32 && !kLog) {
    return warp_rows_occ_kernel<In, 32, false, 20>;
  } else if constexpr (sizeof(In) == 2 && E == 32 && kLog) {  // short16: the row held packed
    return warp_rows_packed_kernel<In, 32, kOccThreads, 24>;
  } else {
    return nullptr;
  }
}

template <int E>
constexpr int kDenseMinBlocks = E == 32 ? 4 : 6;
template <typename In, int E>
constexpr bool kDenseBuilt = sizeof(In) == 2 && (E == 32 || E == 16);

// Where 16-bit softmax takes the 16-bit-output tier (common.cuh out_exp) here: rows of 32 elements a lane shared by
// two lanes or more. Measured (H200, 2026-11-30, tier16's run of 77c64e6, bench old → new, µs): bf16 32768×1024
// (32 lanes a row) 48.8 → 41.7, 262144×128 (4 lanes) 46.6 → 42.2, f16 47.8 → 42.0 and 45.4 → 40.7; but a row a lane
// (n ≤ 32: 1048576×32) 47.4 → 53.0 in both 16-bit types, cause not established (same 80 registers, no spills, 7
// fewer instructions an element). Those rows, and E < 32 (only rows of ≤ 16), keep exp_diff: Out = void, the
// kernel before the tier, instruction for instruction.
// short12: also at E16 on two lanes or more (16-bit softmax rows of 17..32, softmax_cuda.cpp kWarpSoftmax16NarrowMaxN),
// where rows of 32 ran 1048576×32 bf16 50.21 / 49.95 → 45.95 µs on the general kernel (f16 49.76 / 49.73 → 44.70) and
// 42.08 (41.73) on the dense one (short12's run of a9b96ce, tune_softmax --short12). The one-lane rows keep exp_diff.
template <typename In, int E>
bool plain_exp_pays(const RowProblem& p, WarpConfig c) {
  return sizeof(In) == 2 && (E == 32 || E == 16) && c.lanes > 1 && p.op == Op::softmax && p.out_dtype != DType::f32;
}

// short14 / short15: a dense f32 forward problem, or a dense 16-bit softmax (short15), on warp_rows_occ_kernel at
// `blocks` blocks an SM (warp_occ.hpp).
// One row group a warp: the grid is every block needed (capped at 2^31 − 1, the loop takes the rest), unless a test's
// tuning asks for a grid (WarpRowTuning grid or max_blocks: then as warp_grid says, the warps walking many groups).
template <typename In, int E>
void launch_occ(const RowProblem& p, WarpConfig c, int blocks, cudaStream_t s) {
  const OccKernel kernel = p.op != Op::softmax ? occ_kernel<In, E, true>() : occ_kernel<In, E, false>();
  WarpRowLast& last = warp_row_last();
  last.lanes.store(c.lanes, std::memory_order_relaxed);
  last.elems.store(E, std::memory_order_relaxed);
  last.packed.store(sizeof(In) == 2 && p.op != Op::softmax, std::memory_order_relaxed);  // short16
  last.dense.store(false, std::memory_order_relaxed);
  warp_occ_last().blocks.store(blocks, std::memory_order_relaxed);
  const int rows_per_block = (kOccThreads / 32) * (32 / c.lanes) * kRowsAtOnce<E>;
  const std::int64_t needed = (p.rows + rows_per_block - 1) / rows_per_block;
  const WarpRowTuning& t = warp_row_tuning();
  const unsigned grid = t.grid >= 0 || t.max_blocks > 0
                            ? warp_grid(persistent_grid(kernel, kOccThreads, 0, needed), needed, c)
                            : static_cast<unsigned>(std::min<std::int64_t>(needed, 0x7fffffff));
  kernel<<<grid, kOccThreads, 0, s>>>(p, c.lanes);
  SMK_CUDA_CHECK_LAUNCH("warp_rows_occ_kernel");
}

template <typename In, int E>
void launch(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  // Out = void: the output type read from p at the store, and exp_diff for softmax; In: the tier (above).
  auto kernel = p.op != Op::softmax ? warp_rows_kernel<In, void, E, true> : warp_rows_kernel<In, void, E, false>;
  if constexpr (sizeof(In) == 2 && (E == 32 || E == 16))
    if (plain_exp_pays<In, E>(p, c)) kernel = warp_rows_kernel<In, In, E, false>;
  // WarpConfig::packed (short10): the log ops' kernel with the row held packed, where the scores are the loaded
  // values (no temperature, no mask): the same bits. Softmax has no packed kernel (above) and ignores it.
  bool packed = false;
  if constexpr (sizeof(In) == 2 && E >= 8) {
    if (p.op != Op::softmax && warp_packed(c) && packed_dense(p, c.lanes, E)) {
      kernel = warp_rows_packed_kernel<In, E>;
      packed = true;
    }
  }
  // WarpConfig::dense (short11): the same problem on warp_rows_dense_kernel where one is built and the rows are dense.
  bool dense = false;
  if constexpr (kDenseBuilt<In, E>) {
    if (!packed && warp_dense(c) && row_dense(p, c.lanes, E) && plain_exp_pays<In, E>(p, c)) {
      kernel = warp_rows_dense_kernel<In, E, kDenseMinBlocks<E>>;
      dense = true;
    }
  }
  WarpRowLast& last = warp_row_last();
  last.lanes.store(c.lanes, std::memory_order_relaxed);
  last.elems.store(E, std::memory_order_relaxed);
  last.packed.store(packed, std::memory_order_relaxed);
  last.dense.store(dense, std::memory_order_relaxed);
  warp_occ_last().blocks.store(0, std::memory_order_relaxed);
  const int rows_per_block = (kThreads / 32) * (32 / c.lanes) * kRowsAtOnce<E>;
  const std::int64_t needed = (p.rows + rows_per_block - 1) / rows_per_block;
  // WarpConfig::grid (the dispatcher's, softmax_cuda.cpp kWarpGridF32): more blocks than fit for f32 rows.
  const unsigned grid = warp_grid(persistent_grid(kernel, kThreads, 0, needed), needed, c);
  kernel<<<grid, kThreads, 0, s>>>(p, c.lanes);
  SMK_CUDA_CHECK_LAUNCH("warp_rows_kernel");
}

template <typename In>
void launch_typed(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  switch (c.elems) {
    case 4: return launch<In, 4>(p, c, s);
    case 8: return launch<In, 8>(p, c, s);
    case 16: return launch<In, 16>(p, c, s);
    default: return launch<In, 32>(p, c, s);
  }
}

}  // namespace

bool warp_occ_built(DType t, int elems, int blocks, Op op) {
  const bool log = op != Op::softmax;
  if (t == DType::f32) {
    if (elems == 16) return occ_built<float, 16>(blocks, log);
    return elems == 32 && occ_built<float, 32>(blocks, log);
  }
  return (t == DType::bf16 || t == DType::f16) && elems == 32 && occ_built<__nv_bfloat16, 32>(blocks, log);
}

bool launch_warp_rows_occ(const RowProblem& p, WarpConfig c, int blocks, cudaStream_t s) {
  const bool backward = p.op == Op::softmax_backward || p.op == Op::log_softmax_backward;
  if (backward || !warp_occ_built(p.x_dtype, c.elems, blocks, p.op) || !row_dense(p, c.lanes, c.elems))
    return false;
  // 16-bit softmax: the tier's terms, which warp_rows_kernel takes only on two lanes or more (plain_exp_pays).
  if (p.x_dtype != DType::f32 && p.op == Op::softmax && c.lanes < 2) return false;
  // The 16-bit log ops' form here is the packed kernel (short16): WarpRowTuning::packed = 0 (unpacked asked) keeps
  // them off it, as on every other warp_per_row launch (session 16's review, F5).
  if (p.x_dtype != DType::f32 && p.op != Op::softmax && warp_row_tuning().packed == 0) return false;
  if (p.rows == 0) return true;
  with_in_type(p.x_dtype, [&](auto* tag) {
    using In = std::remove_pointer_t<decltype(tag)>;
    if constexpr (sizeof(In) == 4) {
      if (c.elems == 16) launch_occ<In, 16>(p, c, blocks, s);
      else launch_occ<In, 32>(p, c, blocks, s);
    } else {
      launch_occ<In, 32>(p, c, blocks, s);
    }
  });
  return true;
}

void launch_warp_rows(const RowProblem& p, WarpConfig c, cudaStream_t s) {
  if (p.rows == 0) return;
  with_in_type(p.x_dtype, [&](auto* tag) { launch_typed<std::remove_pointer_t<decltype(tag)>>(p, c, s); });
}

}  // namespace smk::cuda::kernels
