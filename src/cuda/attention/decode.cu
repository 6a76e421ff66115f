// softmaxkit: attention_decode on the GPU — split-KV ("Flash-Decoding") attention of a few new tokens against a KV
// cache, grouped-query heads, sinks.
// Since 98f32d4 the dispatcher runs the tensor-core kernel (decode_mma.cu, 1.34-1.75x faster on the issue's rows);
// this CUDA-core kernel stays selectable (DecodeConfig::kernel = cuda_cores), and its merge kernel below also serves
// the tensor-core kernel when DecodeConfig::merge asks for it. The host entry point at the end chooses.
//
// Traffic. Each K and V element of a sequence's first seqlens[b] cache rows is read once: 2 bytes per element, 4·D
// bytes per key and KV head (K and V). q, O (2·Hq·Sq·D bytes per sequence) and the split partials (f32 O and LSE,
// Hq/Hkv·Sq·(4·D + 4) bytes per split: 2 KB against a split's 512 KB of K and V at D = 128, under 0.5 %) are noise.
// Floor on the H200: Σ_b seqlens[b]·Hkv·4·D bytes / 4.27 TB/s (the measured copy bandwidth, ANCHORS.md; 4.8 TB/s
// nominal): 31 µs for (B, S) = (1, 32768) at Hkv = 8, D = 128.
// Measured (H200, 2026-11-29, commit e4be1ff, bench_decode): 1.26-1.79 TB/s on the issue's 32/8 rows (30-42 % of
// copy; 106 µs at (1, 32768), of which the merge kernel then took 21 %), 0.66-0.76 TB/s at 64/8: compute-bound, see
// below. cuDNN in the same run: 2.7-4.2 TB/s. docs/perf-notebook.md has the table.
// Session 6 (dec5, 2026-11-30): this kernel unchanged (the dispatcher runs decode_mma.cu's); the host entry point
// below reads the SM count from device_attrs.hpp instead of asking the device every call, sets each CUDA-core
// variant's shared-memory opt-in once per device, and may launch the tensor-core kernel as a programmatic dependent
// (DecodeConfig::pdl; measured in decode_mma.cu's header).
// Session 12 (dec12): the host entry point chooses the tensor-core kernel's TMA or cp.async tiles (the same bits) by
// the launch's blocks per SM (decode_tma_grid_rule) instead of by S_max (decode_tma_rule; DecodeConfig::tma_grid off):
// 1.1-5.2 % on the cells of dec11's sweep where the two differ, the issue's rows unchanged (attention_cuda.hpp).
//
// CUDA cores, not tensor cores — the count, and where it went wrong: one block serves all R = (Hq/Hkv)·Sq_new query
// rows of one KV head, so each key costs 4·R·D flops (q·k and p·v) for its 4·D bytes: R flops per byte. At 4.27 TB/s
// that is 17 TFLOP/s of f32 FMA for the issue's rows (R = 4) and 34 for Hq/Hkv = 8, against the H200's ~67 TFLOP/s
// f32, so the FMAs alone fit. What the count left out is the softmax step per (key, row): exp_diff, the tile's
// state merge and the butterfly, ~40 instructions, redone by each of the D/E lanes that share a key — as many
// instructions as the FMAs again, at 8 warps per SM (2 blocks of 254 or 238 registers). The measured time scales with
// R, so the next version must stop the redundancy: one lane per key for q·k (q from shared memory, no butterfly, one
// softmax step per (key, row)), or mma with the R rows as the M dimension. Rows beyond kRows are served by more
// blocks that re-read the same K/V tile (mostly from L2, since they are adjacent in the grid).
//
// Layout of the work. Grid (splits · row chunks, Hkv, B); block = 128 threads, serving kRows = 4 or 8 rows. A key
// is read by D/E lanes, E = 16 or 8 elements (two or one 16-byte vectors, C) each; the block's lane groups take
// interleaved keys, kKeysPerGroup per tile, and a 3- or 4-stage cp.async ring stages the tiles in shared memory.
// Each thread reads back only the bytes its own cp.async wrote, so the ring needs cp.async.wait_group and no barrier.
// Keys past the split's end are zero-filled (never read from memory), and keys a row may not see (past the split,
// past seqlens, causal) get the score −inf and no share of V, so NaN anywhere outside the visible window cannot reach
// O. Each lane group keeps one OnlineSoftmaxState per row (merge_weights rescales its accumulator per tile, as the
// CPU does per block; with DecodeScores::scatter one lane per (key, row) pair runs that step, see the kernel); the
// groups then merge in a fixed order through shared memory (lse_fold.cuh). One split writes O and LSE itself (the sink joins
// there); several write f32 partials (O normalised, LSE without the sink) that decode_merge_kernel folds in split
// order, the sink last. Split sizes: decode_split.hpp — a function of the sequence's length and the device only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/decode_counters.hpp"
#include "cuda/attention/decode_common.cuh"
#include "cuda/attention/decode_split.hpp"
#include "cuda/attention/lse_fold.cuh"
#include "cuda/device_attrs.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/softmax/kernels.hpp"  // workspace_alloc / workspace_free: the library's stream-ordered scratch pool
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

using State = OnlineSoftmaxState<float>;

constexpr int kThreads = 128;
constexpr int kKeysPerGroup = 4;  // keys per lane group per tile

// 16-byte vectors per thread per key (C): 1 or 2 (16 dimensions) when a block serves ≤ 4 rows (kDecodeVecsSmallRows
// chooses), 1 for 8 rows, whose q and accumulator registers (2·8·rows·C) would not fit twice. Two vectors halve the
// lanes per key, and with them the lanes that redo each score's softmax step and the butterfly's depth, at 254
// registers (two blocks of 4 warps per SM) against 165 (three).
// Ring depth: tiles are 16 KB (one vector) or 32 KB (two); 4 or 3 stages keep 48 or 64 KB in flight per block while
// the ring (64 or 96 KB) still lets two blocks share an SM.
template <int C>
inline constexpr int kStages = C == 2 ? 3 : 4;
constexpr int kMergeWarps = 4;    // rows (b, h, token) per block of the merge kernel
constexpr unsigned kFull = 0xffffffffu;

// DecodeArgs: decode_common.cuh (shared with the tensor-core kernel, decode_mma.cu).

// to_f32, from_f32: decode_common.cuh.

// 8 packed 16-bit values to f32 (bf16: a shift; f16: the hardware conversion).
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) {
  const T* h = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_f32(h[i]);
}

// 16-byte asynchronous copy global → shared; `valid == false` zero-fills and reads nothing.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// p ? a : b on values held in registers. A plain conditional here lets the compiler select between the two array
// elements' addresses, which moves the whole (register) array to local memory.
__device__ __forceinline__ float select(bool p, float a, float b) {
  float r;
  asm("{\n .reg .pred q;\n setp.ne.b32 q, %3, 0;\n selp.f32 %0, %1, %2, q;\n}" : "=f"(r) : "f"(a), "f"(b), "r"(int(p)));
  return r;
}

// One lane group's recursive halving over N values: at offset O the lane keeps the half of its list selected by its
// bit O and adds the partner's copy of that half; after log2(lanes) steps v[x] is the group's full sum of value
// t·(N / lanes) + x. Compile-time offsets and halves keep the array in registers.
template <int O, int Half, int N>
__device__ __forceinline__ void reduce_scatter(float (&v)[N], int t) {
  if constexpr (O > 0) {
    const bool upper = (t & O) != 0;
#pragma unroll
    for (int i = 0; i < Half; ++i) {
      const float send = select(upper, v[i], v[i + Half]);
      const float keep = select(upper, v[i + Half], v[i]);
      v[i] = keep + __shfl_xor_sync(kFull, send, O);
    }
    reduce_scatter<O / 2, Half / 2>(v, t);
  }
}

// visible_end: decode_common.cuh.

template <typename T, int D, int kRows, int C, bool kScatter>
__global__ void __launch_bounds__(kThreads, 2) decode_split_kernel(const DecodeArgs a) {
  constexpr int E = 8 * C;  // elements per thread per key
  constexpr int S = kStages<C>;
  constexpr int TD = D / E;                   // lanes per key; lane t holds dimensions 8·(c·TD + t) + [0, 8)
  constexpr int NG = kThreads / TD;           // lane groups (keys per tile slot)
  constexpr int kTile = NG * kKeysPerGroup;
  // kScatter: the N = kRows·kKeysPerGroup partial dots of a tile are reduce-scattered over the group's TD lanes, so
  // lane t ends with the P full scores of pairs idx = t·P + x (idx = r·kKeysPerGroup + kk): all in one row, r_mine.
  // It runs the softmax step for that row only (the KPG/P lanes of a row share it bitwise), then the group gathers
  // every pair's weight and every row's rescale factor by shuffles. Without it every lane reduces, exponentiates
  // and merges all N pairs itself.
  constexpr int N = kRows * kKeysPerGroup;
  constexpr int P = kScatter ? N / TD : N;
  constexpr int kLanesPerRow = kKeysPerGroup / P;
  static_assert(!kScatter || (N % TD == 0 && kKeysPerGroup % P == 0), "a lane's pairs must lie in one row");
  constexpr int kStage = kKeysPerGroup * 2 * C * kThreads;  // uint4 per stage
  static_assert(kDecodeChunkAlign % kTile == 0, "tiles must divide chunks");
  extern __shared__ __align__(16) unsigned char smem[];
  uint4* ring = reinterpret_cast<uint4*>(smem);  // [S][kKeysPerGroup][2 (K, V)][C][kThreads]

  const int tid = threadIdx.x, g = tid / TD, t = tid % TD;
  const int row_chunk = blockIdx.x % a.row_chunks;
  const int split = blockIdx.x / a.row_chunks;
  const int hk = blockIdx.y;
  const std::int64_t b = blockIdx.z;
  // Key positions are ints: a length is an int32, and every position compared below is at most that length.
  const int len = a.seqlens[b * a.seqlen_stride];
  const bool bad = len < 0 || len > a.s_max;  // documented: that sequence's O and LSE become NaN
  const int nsplit = bad ? 1 : decode_splits(len, a.max_splits, a.min_chunk);
  if (split >= nsplit) return;  // the grid is sized for S_max; this sequence is shorter
  const int chunk = static_cast<int>(decode_chunk(bad ? 0 : len, a.max_splits, a.min_chunk));
  const int k0 = split * chunk;
  const int k1 = bad ? k0 : (len - k0 < chunk ? len : k0 + chunk);

  // This thread's E dimensions of each row's query, in f32; rows past a.rows (the last chunk's padding) see nothing.
  float qf[kRows][E];
  int vis[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = row_chunk * kRows + r;
    vis[r] = 0;
#pragma unroll
    for (int x = 0; x < E; ++x) qf[r][x] = 0.0f;
    if (row < a.rows) {
      const int tok = row % a.sq, h = hk * a.group + row / a.sq;
      const T* qp = static_cast<const T*>(a.q) + b * a.qs[0] + tok * a.qs[1] + h * a.qs[2];
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int x = 0; x < 8; ++x) qf[r][8 * c + x] = to_f32(qp[(8 * (c * TD + t) + x) * a.qs[3]]);
      vis[r] = bad ? 0 : visible_end(a, len, tok);
    }
  }

  State st[kRows];
  float acc[kRows][E];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    st[r] = State::empty();
#pragma unroll
    for (int x = 0; x < E; ++x) acc[r][x] = 0.0f;
  }
  // kScatter: this lane's row, its visible end, and its state (st[] is then unused).
  const int r_mine = kScatter ? t * P / kKeysPerGroup : 0;
  int vis_mine = 0;
#pragma unroll
  for (int r = 0; r < kRows; ++r)
    if (r == r_mine) vis_mine = vis[r];
  State st_mine = State::empty();

  const T* kbase = static_cast<const T*>(a.k) + b * a.ks[0] + hk * a.ks[2] + 8 * t;
  const T* vbase = static_cast<const T*>(a.v) + b * a.vs[0] + hk * a.vs[2] + 8 * t;
  const int ntiles = (k1 - k0 + kTile - 1) / kTile;
  const auto issue = [&](int tile) {
    uint4* st_ring = ring + (tile % S) * kStage;
#pragma unroll
    for (int kk = 0; kk < kKeysPerGroup; ++kk) {
      const int j = k0 + tile * kTile + kk * NG + g;
      const bool valid = j < k1;
      const std::int64_t jj = valid ? j : 0;  // a mapped address even when nothing is read
#pragma unroll
      for (int c = 0; c < C; ++c) {
        cp_async16(st_ring + ((kk * 2 + 0) * C + c) * kThreads + tid, kbase + jj * a.ks[1] + 8 * c * TD, valid);
        cp_async16(st_ring + ((kk * 2 + 1) * C + c) * kThreads + tid, vbase + jj * a.vs[1] + 8 * c * TD, valid);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < ntiles) issue(s);
    cp_async_commit();
  }

  for (int tile = 0; tile < ntiles; ++tile) {
    if (tile + S - 1 < ntiles) issue(tile + S - 1);
    cp_async_commit();
    cp_async_wait<S - 1>();  // this tile's group has landed (this thread's own copies: no barrier needed)
    const uint4* st_ring = ring + (tile % S) * kStage;
    const int jbase = k0 + tile * kTile + g;

    // Scores: E-element partial dots, then a butterfly over the key's TD lanes (every lane ends with the same sum).
    float s[kKeysPerGroup][kRows];
#pragma unroll
    for (int kk = 0; kk < kKeysPerGroup; ++kk) {
      float kf[E];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        float part[8];
        unpack8<T>(st_ring[((kk * 2 + 0) * C + c) * kThreads + tid], part);
#pragma unroll
        for (int x = 0; x < 8; ++x) kf[8 * c + x] = part[x];
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float dot = qf[r][0] * kf[0];
#pragma unroll
        for (int x = 1; x < E; ++x) dot = fmaf(qf[r][x], kf[x], dot);
        s[kk][r] = dot;
      }
    }
    bool seen[kKeysPerGroup][kRows];
    if constexpr (kScatter) {
      float v[N];
#pragma unroll
      for (int kk = 0; kk < kKeysPerGroup; ++kk)
#pragma unroll
        for (int r = 0; r < kRows; ++r) v[r * kKeysPerGroup + kk] = s[kk][r];
      reduce_scatter<TD / 2, N / 2>(v, t);  // v[x]: the full dot of pair t·P + x
      float mx = -detail::inf_<float>();
#pragma unroll
      for (int x = 0; x < P; ++x) {
        const int j = jbase + ((t * P + x) % kKeysPerGroup) * NG;
        v[x] = (j < k1 && j < vis_mine) ? a.scale * v[x] : -detail::inf_<float>();
        mx = nan_max(mx, v[x]);
      }
#pragma unroll
      for (int o = 1; o < kLanesPerRow; o *= 2) mx = nan_max(mx, __shfl_xor_sync(kFull, mx, o));
      const float shift = State::shift_for(mx);
      float sum = 0.0f;
#pragma unroll
      for (int x = 0; x < P; ++x) {
        v[x] = exp_diff(v[x], shift);
        sum += v[x];
      }
#pragma unroll
      for (int o = 1; o < kLanesPerRow; o *= 2) sum += __shfl_xor_sync(kFull, sum, o);  // same bits on each lane
      const State blk = State::from_max_and_sum(mx, sum);
      const auto w = st_mine.merge_weights(blk);
      st_mine.merge(blk);
#pragma unroll
      for (int x = 0; x < P; ++x) v[x] *= w.other;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {  // row r's rescale factor, from the first lane of row r
        const float ws = __shfl_sync(kFull, w.self, r * kLanesPerRow, TD);
#pragma unroll
        for (int x = 0; x < E; ++x) acc[r][x] *= ws;
      }
#pragma unroll
      for (int kk = 0; kk < kKeysPerGroup; ++kk)
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int idx = r * kKeysPerGroup + kk, j = jbase + kk * NG;
          s[kk][r] = __shfl_sync(kFull, v[idx % P], idx / P, TD);
          seen[kk][r] = j < k1 && j < vis[r];
        }
    } else {
#pragma unroll
      for (int off = TD / 2; off > 0; off /= 2)
#pragma unroll
        for (int kk = 0; kk < kKeysPerGroup; ++kk)
#pragma unroll
          for (int r = 0; r < kRows; ++r) s[kk][r] += __shfl_xor_sync(kFull, s[kk][r], off);

      // This tile's state per row, merged into the group's; the accumulator follows through merge_weights.
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float mx = -detail::inf_<float>();
#pragma unroll
        for (int kk = 0; kk < kKeysPerGroup; ++kk) {
          const int j = jbase + kk * NG;
          seen[kk][r] = j < k1 && j < vis[r];
          s[kk][r] = seen[kk][r] ? a.scale * s[kk][r] : -detail::inf_<float>();
          mx = nan_max(mx, s[kk][r]);
        }
        const float shift = State::shift_for(mx);
        float sum = 0.0f;
#pragma unroll
        for (int kk = 0; kk < kKeysPerGroup; ++kk) {
          s[kk][r] = exp_diff(s[kk][r], shift);
          sum += s[kk][r];
        }
        const State blk = State::from_max_and_sum(mx, sum);
        const auto w = st[r].merge_weights(blk);
#pragma unroll
        for (int x = 0; x < E; ++x) acc[r][x] *= w.self;
#pragma unroll
        for (int kk = 0; kk < kKeysPerGroup; ++kk) s[kk][r] *= w.other;
        st[r].merge(blk);
      }
    }
#pragma unroll
    for (int kk = 0; kk < kKeysPerGroup; ++kk) {
      float vf[E];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        float part[8];
        unpack8<T>(st_ring[((kk * 2 + 1) * C + c) * kThreads + tid], part);
#pragma unroll
        for (int x = 0; x < 8; ++x) vf[8 * c + x] = part[x];
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (seen[kk][r]) {  // an unseen key adds nothing, not 0·V (V may be NaN there)
#pragma unroll
          for (int x = 0; x < E; ++x) acc[r][x] = fmaf(s[kk][r], vf[x], acc[r][x]);
        }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is reused below

  // Merge the NG lane groups in group order. Shared memory: the groups' states and accumulators, then per row the
  // coefficient of each group's accumulator (the fold's weights, times 1/l), the row's LSE and its live groups.
  State* sst = reinterpret_cast<State*>(smem);                 // [NG][kRows]
  float* sacc = reinterpret_cast<float*>(sst + NG * kRows);    // [NG][kRows][D]
  float* coef = sacc + NG * kRows * D;                         // [kRows][NG]
  float* slse = coef + kRows * NG;                             // [kRows]
  unsigned* slive = reinterpret_cast<unsigned*>(slse + kRows);  // [kRows], bit i: group i holds terms
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if constexpr (kScatter) {
      if (r == r_mine && t % kLanesPerRow == 0) sst[g * kRows + r] = st_mine;
    } else {
      if (t == 0) sst[g * kRows + r] = st[r];
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float4* dst = reinterpret_cast<float4*>(sacc + (g * kRows + r) * D + 8 * (c * TD + t));
      dst[0] = make_float4(acc[r][8 * c + 0], acc[r][8 * c + 1], acc[r][8 * c + 2], acc[r][8 * c + 3]);
      dst[1] = make_float4(acc[r][8 * c + 4], acc[r][8 * c + 5], acc[r][8 * c + 6], acc[r][8 * c + 7]);
    }
  }
  __syncthreads();
  if (tid < kRows) {
    const int r = tid, row = row_chunk * kRows + r;
    // The sink joins exactly once: here or in the merge.
    const bool has_sink = nsplit == 1 && a.sinks != nullptr && row < a.rows;
    const float sink_lse = has_sink ? a.sinks[(hk * a.group + row / a.sq) * a.sink_stride] : 0.0f;
    fold_groups<NG>(sst + r, kRows, has_sink, sink_lse, bad, coef + r * NG, slse[r], slive[r]);
  }
  __syncthreads();
  for (int e = tid; e < kRows * D; e += kThreads) {
    const int r = e / D, x = e % D, row = row_chunk * kRows + r;
    if (row >= a.rows) break;  // rows grow with e
    float o = 0.0f;
    const unsigned live = slive[r];
#pragma unroll
    for (int i = 0; i < NG; ++i) {
      const float ci = coef[r * NG + i];
      // Only an empty group is skipped (fold_groups): a live one whose ci underflows to 0 still adds 0·acc, so its NaN
      // or inf reaches O as on the CPU; a NaN ci (a bad row, a NaN sink) poisons.
      if (((live >> i) & 1u) || ci != ci) o += ci * sacc[(i * kRows + r) * D + x];
    }
    const int tok = row % a.sq, h = hk * a.group + row / a.sq;
    if (nsplit == 1) {
      static_cast<T*>(a.out)[b * a.os[0] + tok * a.os[1] + h * a.os[2] + x * a.os[3]] = from_f32<T>(o);
      if (x == 0 && a.lse != nullptr) a.lse[b * a.ls[0] + h * a.ls[1] + tok * a.ls[2]] = slse[r];
    } else {
      const std::int64_t prow = ((b * a.hq + h) * a.sq + tok) * a.grid_splits + split;
      a.part_o[prow * D + x] = o;
      if (x == 0) a.part_lse[prow] = slse[r];
    }
  }
}

// One warp per output row (b, h, token) of a sequence with several splits: lane i holds split i's LSE; every lane
// runs the same fold over the splits in order (the sink last) and keeps the final coefficient of its own split, then
// the lanes stream the partial outputs, each lane D/32 dimensions.
template <typename T, int D>
__global__ void __launch_bounds__(kMergeWarps * 32) decode_merge_kernel(const DecodeArgs a, std::int64_t rows) {
  constexpr int V = D / 32;
  const int lane = threadIdx.x % 32;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kMergeWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int tok = static_cast<int>(row % a.sq);
  const int h = static_cast<int>((row / a.sq) % a.hq);
  const std::int64_t b = row / (static_cast<std::int64_t>(a.sq) * a.hq);
  const std::int64_t len = a.seqlens[b * a.seqlen_stride];
  if (len < 0 || len > a.s_max) return;  // written (NaN) by the split kernel
  const int n = decode_splits(len, a.max_splits, a.min_chunk);
  if (n <= 1) return;  // the split kernel wrote O and LSE itself
  const std::int64_t prow = row * a.grid_splits;
  const float my_lse = lane < n ? a.part_lse[prow + lane] : -detail::inf_<float>();
  // The loads carry no condition, so all of them can be in flight together (the first H200 run, with each load
  // behind a `ci != 0` test, spent 21 % of the (1, 32768) row here): split i < n wrote its partial, and i ≥ n re-reads
  // split n − 1 (an L1 hit) with coefficient 0, since lanes ≥ n hold no split.
  float pv[kDecodeSplitLimit][V];
#pragma unroll
  for (int i = 0; i < kDecodeSplitLimit; ++i) {
    const float* po = a.part_o + (prow + (i < n ? i : n - 1)) * D + lane * V;
#pragma unroll
    for (int x = 0; x < V; ++x) pv[i][x] = po[x];
  }
  // The splits that hold terms (LSE not −inf): only an empty split is skipped below, not one whose coefficient
  // underflows to 0, whose NaN or inf partial must still reach O (0·NaN = NaN), as on the CPU.
  const unsigned live = __ballot_sync(kFull, lane < n && my_lse != -detail::inf_<float>());
  PartFold fold;
  float c = 0.0f;
  for (int i = 0; i < n; ++i) {
    const auto w = fold.add(State::from_lse(__shfl_sync(kFull, my_lse, i)));
    if (lane < i) c = PartFold::carry(c, w);
    else if (lane == i) c = w.other;
  }
  if (a.sinks != nullptr) c = PartFold::carry(c, fold.add(State::from_lse(a.sinks[h * a.sink_stride])));
  c *= fold.inv_sum();
  float o[V];
#pragma unroll
  for (int x = 0; x < V; ++x) o[x] = 0.0f;
#pragma unroll
  for (int i = 0; i < kDecodeSplitLimit; ++i) {
    const float ci = __shfl_sync(kFull, c, i);
#pragma unroll
    for (int x = 0; x < V; ++x)  // an empty split (and lanes ≥ n) is skipped, NaN poisons
      o[x] = (live >> i) & 1u ? fmaf(ci, pv[i][x], o[x]) : o[x];
  }
  T* out = static_cast<T*>(a.out) + b * a.os[0] + tok * a.os[1] + h * a.os[2];
#pragma unroll
  for (int x = 0; x < V; ++x) out[(lane * V + x) * a.os[3]] = from_f32<T>(o[x]);
  if (lane == 0 && a.lse != nullptr) a.lse[b * a.ls[0] + h * a.ls[1] + tok * a.ls[2]] = fold.lse();
}

template <typename T, int D, int kRows, int C, bool kScatter>
void launch_split(const DecodeArgs& a, dim3 grid, cudaStream_t s) {
  constexpr int TD = D / (8 * C), NG = kThreads / TD;
  constexpr std::size_t ring = std::size_t{kStages<C>} * kKeysPerGroup * 2 * C * kThreads * 16;
  constexpr std::size_t merge =
      NG * kRows * (sizeof(State) + D * sizeof(float)) + kRows * (NG + 1) * sizeof(float) + kRows * sizeof(unsigned);
  constexpr std::size_t bytes = ring > merge ? ring : merge;
  // The opt-in once per device (the first kMaxDevices ordinals), not on every call.
  static std::atomic<bool> done[kMaxDevices];
  const int dev = current_device_ordinal();
  if (!done[dev].load(std::memory_order_acquire)) {
    SMK_CUDA_CHECK(cudaFuncSetAttribute(decode_split_kernel<T, D, kRows, C, kScatter>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    done[dev].store(true, std::memory_order_release);
  }
  decode_split_kernel<T, D, kRows, C, kScatter><<<grid, kThreads, bytes, s>>>(a);
  SMK_CUDA_CHECK_LAUNCH("decode_split_kernel");
}

// The merge kernel after either split kernel, when some sequence has several splits.
template <typename T, int D>
void merge_splits(const DecodeArgs& a, std::int64_t out_rows, cudaStream_t s) {
  if (a.part_o == nullptr) return;
  const std::int64_t blocks = (out_rows + kMergeWarps - 1) / kMergeWarps;
  decode_merge_kernel<T, D><<<static_cast<unsigned>(blocks), kMergeWarps * 32, 0, s>>>(a, out_rows);
  SMK_CUDA_CHECK_LAUNCH("decode_merge_kernel");
}

template <typename T, int D>
void launch(const DecodeArgs& a, int rows_per_block, int vecs, bool scatter, dim3 grid, std::int64_t out_rows,
            cudaStream_t s, void* event) {
  // The variants built: 8 rows with one vector per lane, 4 rows with one or two; reduce-scattered scores for the
  // one-vector 8-row and the two-vector 4-row blocks (the dispatcher's shapes), to keep the instantiations few.
  if (rows_per_block == 8) {
    if (scatter) launch_split<T, D, 8, 1, true>(a, grid, s);
    else launch_split<T, D, 8, 1, false>(a, grid, s);
  } else if (vecs == 1) {
    launch_split<T, D, 4, 1, false>(a, grid, s);
  } else {
    if (scatter) launch_split<T, D, 4, 2, true>(a, grid, s);
    else launch_split<T, D, 4, 2, false>(a, grid, s);
  }
  if (event != nullptr) SMK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), s));
  merge_splits<T, D>(a, out_rows, s);
}

void check_cache(const char* op, const char* arg, const TensorView& c) {
  bool ok = c.strides[3] == 1 && reinterpret_cast<std::uintptr_t>(c.data) % 16 == 0;
  for (int d = 0; d < 3; ++d) ok = ok && (c.strides[d] % 8 == 0 || c.shape[d] == 1);
  if (!ok)
    throw_unsupported(op, std::string("argument '") + arg + "': the CUDA kernel needs a contiguous head dimension, " +
                              "a 16-byte aligned pointer and strides that are multiples of 8 elements (16-byte rows)");
}

// The fused merge's arrival counters kept per (device, stream) between calls: the policy (leases, eviction, growth)
// is decode_counters.hpp's; here are its CUDA calls and the key of a call.
struct CudaCounterOps {
  static bool ok(cudaError_t e) {
    if (e == cudaSuccess) return true;
    (void)cudaGetLastError();  // it concerned only this optimisation: the caller takes the memset path
    return false;
  }
  bool sync_device(int device) {
    int previous = 0;
    if (!ok(cudaGetDevice(&previous))) return false;
    if (previous != device && !ok(cudaSetDevice(device))) return false;
    const bool done = ok(cudaDeviceSynchronize());
    if (previous != device) (void)ok(cudaSetDevice(previous));
    return done;
  }
  bool sync_stream(void* s) { return ok(cudaStreamSynchronize(static_cast<cudaStream_t>(s))); }
  int* alloc_zeroed(std::size_t n, void* s) {
    int* p = nullptr;
    if (!ok(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(int)))) return nullptr;
    if (!ok(cudaMemsetAsync(p, 0, n * sizeof(int), static_cast<cudaStream_t>(s)))) {
      (void)ok(cudaFree(p));  // nothing was launched on it
      return nullptr;
    }
    return p;
  }
  void release(int device, int* p) {
    int previous = 0;
    if (!ok(cudaGetDevice(&previous))) return;
    if (previous != device && !ok(cudaSetDevice(device))) return;
    (void)ok(cudaFree(p));
    if (previous != device) (void)ok(cudaSetDevice(previous));
  }
};
constexpr std::size_t kKeptCounterBuffers = 64;
using KeptCounters = CounterCache<CudaCounterOps>;

// A lease on this stream's kept counters (at least n, zero), held until the kernel is launched; empty where the
// stream is capturing a graph (its replays may run on any stream, at the same time as calls on this one: the caller
// zeroes workspace counters with a memset node) or none can be had.
KeptCounters::Lease counter_buffer(int device, cudaStream_t s, std::size_t n) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &capture) != cudaSuccess) {
    (void)cudaGetLastError();  // e.g. the legacy stream while another stream captures: take the memset path
    return {};
  }
  if (capture != cudaStreamCaptureStatusNone) return {};
  unsigned long long id = 0;
  SMK_CUDA_CHECK(cudaStreamGetId(s, &id));
  const std::size_t thread = s == nullptr || s == cudaStreamPerThread
                                 ? std::hash<std::thread::id>{}(std::this_thread::get_id())
                                 : 0;
  static KeptCounters cache(kKeptCounterBuffers);
  return cache.acquire(CounterKey{device, id, thread}, n, s);
}

}  // namespace

void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options,
                      const detail::DecodeProblem& p, Stream stream, void* merge_start_event,
                      const DecodeConfig& config) {
  const char* op = "attention_decode";
  if (q.dtype != DType::f16 && q.dtype != DType::bf16)
    throw_unsupported(op, std::string("the CUDA kernel takes f16 and bf16, not ") + dtype_name(q.dtype) +
                              " (f32 runs on the CPU)");
  if (p.d != 64 && p.d != 128)
    throw_unsupported(op, "the CUDA kernel supports head dimensions 64 and 128, not " + std::to_string(p.d));
  if (p.batch == 0 || p.hq == 0) return;
  check_cache(op, "k_cache", k_cache);
  check_cache(op, "v_cache", v_cache);
  if (p.batch > 65535 || p.hkv > 65535)
    throw_unsupported(op, "the CUDA kernel takes at most 65535 sequences and 65535 KV heads");

  DeviceGuard guard(q.device.index);
  // The device's facts are read once per process (device_attrs.hpp), not queried per call.
  const int dev = current_device_ordinal();
  const DeviceAttrs& facts = device_attrs(dev);
  const int sms = facts.sm_count;

  DecodeArgs a{};
  a.q = q.data;
  a.k = k_cache.data;
  a.v = v_cache.data;
  a.out = out.data;
  a.lse = static_cast<float*>(lse.data);
  a.seqlens = static_cast<const std::int32_t*>(seqlens.data);
  a.sinks = static_cast<const float*>(options.sinks.data);
  for (int d = 0; d < 4; ++d) {
    a.qs[d] = q.strides[d];
    a.os[d] = out.strides[d];
  }
  for (int d = 0; d < 3; ++d) {
    a.ls[d] = lse.data ? lse.strides[d] : 0;
    a.ks[d] = k_cache.strides[d];
    a.vs[d] = v_cache.strides[d];
  }
  a.seqlen_stride = seqlens.strides[0];
  a.sink_stride = options.sinks.data ? options.sinks.strides[0] : 0;
  a.s_max = p.s_max;
  a.sq = static_cast<int>(p.sq);
  a.hq = static_cast<int>(p.hq);
  a.group = static_cast<int>(p.hq / p.hkv);
  a.rows = a.group * a.sq;
  const bool wants_cuda_cores = config.vecs != 0 || config.scores != DecodeScores::dispatcher;
  const DecodeKernel kernel = config.kernel != DecodeKernel::dispatcher
                                  ? config.kernel
                                  : (wants_cuda_cores ? DecodeKernel::cuda_cores : kDecodeKernel);
  // The tensor-core kernel folds |scale|·log2(e) into one FFMA per score: a scale whose product with log2(e)
  // overflows f32 (|scale| > 2.3e38) goes to the CUDA-core kernel, which multiplies by the scale itself.
  const double scale_log2 = std::fabs(p.scale) * 1.4426950408889634;
  const bool mma = kernel == DecodeKernel::mma && scale_log2 < 3.0e38;
  a.scale_log2 = static_cast<float>(scale_log2);
  const int mma_stages = config.mma_stages != 0 ? config.mma_stages : kDecodeMmaStages;
  if (mma_stages != 2 && mma_stages != 3) throw_unsupported(op, "DecodeConfig::mma_stages must be 0, 2 or 3");
  const int rows_per_block = mma ? kDecodeMmaRows : a.rows <= 4 ? 4 : 8;
  const int vecs = config.vecs != 0 ? config.vecs : kDecodeVecsSmallRows;
  if (vecs != 1 && vecs != 2) throw_unsupported(op, "DecodeConfig::vecs must be 0, 1 or 2");
  const bool scatter =
      config.scores == DecodeScores::dispatcher ? kDecodeScatter : config.scores == DecodeScores::scatter;
  if (!mma && scatter && rows_per_block == 4 && vecs == 1)
    throw_unsupported(op, "DecodeConfig: reduce-scattered scores are built for vecs = 2 only at <= 4 rows");
  a.row_chunks = (a.rows + rows_per_block - 1) / rows_per_block;
  if (config.max_splits < 0 || config.max_splits > kDecodeSplitLimit)
    throw_unsupported(op, "DecodeConfig::max_splits must be 0 to " + std::to_string(kDecodeSplitLimit));
  a.max_splits = decode_max_splits(sms, config.max_splits != 0 ? config.max_splits : kDecodeSplitCap);
  a.min_chunk = config.min_chunk != 0 ? config.min_chunk : static_cast<int>(kDecodeMinChunk);
  if (a.min_chunk < kDecodeChunkAlign || a.min_chunk % kDecodeChunkAlign != 0)
    throw_unsupported(op, "DecodeConfig::min_chunk must be 0 or a positive multiple of " +
                              std::to_string(kDecodeChunkAlign));
  a.grid_splits = decode_grid_splits(p.s_max, a.max_splits, a.min_chunk);
  a.scale = static_cast<float>(p.scale);
  a.causal = options.causal;

  const auto s = static_cast<cudaStream_t>(stream.handle);
  const std::int64_t out_rows = p.batch * p.hq * p.sq;
  const DecodeMerge merge = config.merge != DecodeMerge::dispatcher ? config.merge : kDecodeMerge;
  const auto on = [](DecodeToggle t, bool dflt) { return t == DecodeToggle::dispatcher ? dflt : t == DecodeToggle::on; };
  // The cluster merge where a cluster of grid_splits blocks runs on this device (the dispatcher: up to
  // kDecodeClusterDispatch blocks for blocks of more than 4 real rows; above, only with spread_cluster on — off by
  // default, since the H200 runs 7 spread clusters of 16 at once, not the 8 a single sequence with 8 KV heads needs —
  // and where every cluster of the call runs at once; attention_cuda.hpp has the numbers); else the fused merge, which
  // gives the same bits.
  const bool forced = config.merge == DecodeMerge::cluster;
  const bool spread = a.grid_splits > kDecodeClusterDispatch && on(config.spread_cluster, kDecodeSpreadCluster);
  const bool bf16 = q.dtype == DType::bf16;
  const int d = static_cast<int>(p.d);
  int cluster = 0;
  if (mma && merge == DecodeMerge::cluster && a.grid_splits > 1 && a.grid_splits <= kDecodeClusterMax) {
    const int active = decode_mma_active_clusters(dev, bf16, d, mma_stages, a.grid_splits, spread);
    const std::int64_t clusters = p.batch * p.hkv * a.row_chunks;
    const bool pays = forced || (a.grid_splits <= kDecodeClusterDispatch ? a.rows >= kDecodeClusterMinRows
                                                                          : spread && clusters <= active);
    if (pays && active > 0) cluster = a.grid_splits;
  }
  const bool fused = mma && cluster == 0 && (merge == DecodeMerge::fused || merge == DecodeMerge::cluster);
  void* workspace = nullptr;
  bool memset_counters = false;
  KeptCounters::Lease lease;
  if (a.grid_splits > 1 && cluster == 0) {
    const std::size_t parts = static_cast<std::size_t>(out_rows) * a.grid_splits;
    const std::size_t counters = fused ? static_cast<std::size_t>(p.batch * p.hkv * a.row_chunks) : 0;
    // Held until the launch below (the destructor at the end of this function gives it back): never freed before.
    if (fused && on(config.self_reset_counters, kDecodeSelfResetCounters)) lease = counter_buffer(dev, s, counters);
    int* const kept = lease.get();
    workspace = kernels::workspace_alloc(parts * (p.d + 1) * sizeof(float) + (kept ? 0 : counters * sizeof(int)), s);
    a.part_o = static_cast<float*>(workspace);
    a.part_lse = a.part_o + parts * p.d;
    if (kept != nullptr) {
      a.counters = kept;  // zero since the last call on this stream ended (or since counter_buffer's memset)
    } else if (fused) {  // zeroed on the stream before the call (a captured graph gets a memset node)
      a.counters = reinterpret_cast<int*>(a.part_lse + parts);
      const cudaError_t err = cudaMemsetAsync(a.counters, 0, counters * sizeof(int), s);
      memset_counters = true;
      if (err != cudaSuccess) {
        kernels::workspace_free(workspace, s);
        SMK_CUDA_CHECK(err);
      }
    }
  }
  const dim3 grid(static_cast<unsigned>(a.grid_splits * a.row_chunks), static_cast<unsigned>(p.hkv),
                  static_cast<unsigned>(p.batch));
  // A programmatic dependent launch (DecodeConfig::pdl) where the kernel before it on the stream is the caller's
  // (sm_90+): not after this call's own memset of the counters, and not while the stream captures a graph (whose
  // nodes before it may be the workspace's allocation).
  bool pdl = mma && on(config.pdl, kDecodePdl) && facts.cc_major >= 9 && !memset_counters;
  if (pdl) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &capture) != cudaSuccess) {
      (void)cudaGetLastError();  // e.g. the legacy stream while another stream captures: a plain launch
      pdl = false;
    } else if (capture != cudaStreamCaptureStatusNone) {
      pdl = false;
    }
  }
  a.pdl = pdl;
  try {
    if (mma) {
      // TMA or cp.async (the same bits): by S_max, or by the grid's blocks per SM (session 12, tma_grid).
      const std::int64_t blocks = static_cast<std::int64_t>(grid.x) * grid.y * grid.z;
      const bool tma_rule = on(config.tma_grid, kDecodeTmaByGrid) ? decode_tma_grid_rule(blocks, sms)
                                                                  : decode_tma_rule(p.s_max);
      launch_decode_mma(a, bf16, d, mma_stages, grid, cluster, spread && cluster > 0, dev, pdl, s,
                        on(config.tma, tma_rule), p.batch, p.hkv);
      if (merge_start_event != nullptr) SMK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(merge_start_event), s));
      if (fused) a.part_o = nullptr;  // merged inside the split kernel: no merge kernel
      const bool f16 = q.dtype == DType::f16;
      if (p.d == 64) f16 ? merge_splits<__half, 64>(a, out_rows, s) : merge_splits<__nv_bfloat16, 64>(a, out_rows, s);
      else f16 ? merge_splits<__half, 128>(a, out_rows, s) : merge_splits<__nv_bfloat16, 128>(a, out_rows, s);
    } else if (q.dtype == DType::f16) {
      if (p.d == 64) launch<__half, 64>(a, rows_per_block, vecs, scatter, grid, out_rows, s, merge_start_event);
      else launch<__half, 128>(a, rows_per_block, vecs, scatter, grid, out_rows, s, merge_start_event);
    } else {
      if (p.d == 64) launch<__nv_bfloat16, 64>(a, rows_per_block, vecs, scatter, grid, out_rows, s, merge_start_event);
      else launch<__nv_bfloat16, 128>(a, rows_per_block, vecs, scatter, grid, out_rows, s, merge_start_event);
    }
  } catch (...) {
    if (workspace) kernels::workspace_free(workspace, s);
    throw;
  }
  if (workspace) kernels::workspace_free(workspace, s);
}

}  // namespace smk::cuda
