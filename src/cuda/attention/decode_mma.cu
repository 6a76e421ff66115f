// softmaxkit: attention_decode on the tensor cores — the split-KV kernel with S = Q·Kᵀ and O = P·V on mma.sync
// m16n8k16 (f16/bf16 in, f32 accumulators), the online softmax on the score fragments in f32 (base 2, ex2).
//
// Traffic: as decode.cu's kernel, each K and V element of a sequence's first seqlens[b] rows is read once, 4·D bytes
// per key and KV head; q, O and the split partials are noise (< 0.5 %). Floor on the H200: Σ_b seqlens[b]·Hkv·4·D
// bytes / 4.27 TB/s (measured copy, ANCHORS.md): 31 µs at (B, S) = (1, 32768), Hkv = 8, D = 128.
// Arithmetic: 2·16·D flops per key for Q·Kᵀ (M padded to 16 rows) and 2·8·D for Vᵀ·Pᵀ (N = 8 rows): 48·D flops per
// 4·D bytes, 12 per byte, 51 TFLOP/s of tensor-core work at copy speed (< 10 % of the H200's mma.sync rate).
// The softmax runs once per (key, row) pair — 8 rows per key, one exponential each, padding rows included — instead
// of once per lane sharing the key (decode.cu's problem): the kernel is meant to be limited by bytes in flight only.
// Measured (H200, 2026-11-30, run of e84495d, bench_decode, 2 stages, at most 16 splits, the dispatcher's merges):
// 3.55-3.94 TB/s on the issue's batch rows, 3.79 at (1, 131072), 2.56 at (1, 32768) (52.5 µs against a 31 µs floor;
// cuDNN 50.2 in the same run); 0.87-0.98x cuDNN. Round 4 counted the fixed cost at (1, 32768): the timing method's
// floor 2.3 µs (a 4-byte memset between the events after the flush), a call with every length 0 9.0 µs, the fused
// merge ~3.7 µs (7 %: the call less the split kernel alone), the call's graph replay 53.6 µs against 53.3 for the same
// path called directly (memset counters, as captured: the GPU, not the host, sets the time; the 5-8 µs of host work a
// call overlap the flush), one kernel a call (plus the workspace's allocation and free, a memset only when captured). After a flush that leaves L2 clean: 49.2 µs
// against cuDNN's 42.2. docs/perf-notebook.md ("decode attention (issue 8), round 4") has the tables and what is left.
// Session 6 (dec5; H200 runs of 0ad26b8 and e9af5e6, 2026-11-30, docs/bench/dec5-s6-2026-11-30.md), this kernel as
// committed in 2adb76c: 53.2 µs at (1, 32768) (2.52 TB/s; round 4's build in the same run 52.8), 142.6 at (1, 131072)
// (3.77), 153.3 / 273.3 / 147.5 on the batch rows (3.50 / 3.93 / 3.64 TB/s), 56.1 and 154.9 at 64/8: within 0.6 µs of
// round 4's build on every row; 0.87-0.97x cuDNN (run 1's 49.9-256.7 µs). The programmatic dependent launch (pdl):
// alone after the flush within 0.3 µs of the plain launch; right after a small kernel 1.0-1.3 µs less on every row.
// Nsight Compute at (1, 32768) (run 1): the kernel runs 49.1 µs, its SMs active 69.6 K cycles on average but the
// busiest 85.5 K (of 87.6 K elapsed): the blocks, one an SM, finish up to ~19 % apart, and the tail where fewer and
// fewer of them stream is most of the fixed cost over cuDNN; the all-empty call's 9.2 µs is the kernel's own time
// (9.15 µs under ncu: long-scoreboard and instruction-cache stalls in the 8 blocks that write), not the launch.
// Session 7 (dec6; H200 runs of 4793bdd and 05f387e, 2026-11-30, docs/bench/dec6-s7-2026-11-30.md): this kernel,
// unchanged, beside a build whose blocks took up to 256 smaller pieces a sequence from an atomic cursor (commit
// 6545701): that lost on every row (68.8 against 53.1 µs at (1, 32768); Nsight Compute there: SMs active 90.3 K
// cycles on average, the busiest 116.2 K, against 66.9 K / 80.2 K for this kernel), so it was withdrawn. Measured in
// the same runs: 53.1 µs at (1, 32768) (2.53 TB/s), 140.3-142.6 at (1, 131072) (3.77-3.83), 149.7-152.4 / 268.0-272.8
// / 141.6-147.4 on the batch rows, 55.9-56.1 and 153.9-156.6 at 64/8; cuDNN 49.7 / 136.4 / 133.1 / 250.1 / 135.1 /
// 50.2 / 133.2 µs (0.87-0.97x). The merge's share under this rule, in 6545701's build (its one-piece-a-block path
// does this kernel's arithmetic, ~1 % slower): the call less the same call with the merge skipped, 6.7 % at
// (1, 32768), 9.8 % with 64/8 heads, 0.1-2.4 % on the other rows. At 16 x 8192 (Nsight Compute) the SMs were active
// 92 % of the kernel (2.59 waves of 396 blocks: the partial last wave), DRAM at 81 % of peak while it ran.
// Session 9 (dec9; H200 run of 12:42 UTC 2026-11-30, tree of 0ea7259 + commit 9c473f5's kernel, three samples of
// each build alternating in one call, docs/bench/dec9-s9-2026-11-30.md): this kernel 53.1-53.2 µs at (1, 32768),
// 142.3-142.4 at (1, 131072), 151.4-151.6 / 271.9-272.0 / 143.6-144.2 on the batch rows, 56.1-56.4 and 155.5-155.8 at
// 64/8 (cuDNN 49.9 / 138.6 / 135.3 / 255.2 / 136.9 / 50.4 / 135.5: 0.87-0.97x). Beside it, K and V rows copied by the
// bulk copy engine (cp.async.bulk, one 256-byte row a lane, rows padded by 16 bytes instead of swizzled, one
// transaction barrier a ring slot; 102-106 registers against 120) passed every test but lost on every row: 71.6,
// 244.6, 165.0 / 311.0 / 159.9, 74.6 and 167.9 µs. A bulk copy that small is one copy-engine operation per 256 bytes,
// and the rate fell furthest where one block holds an SM ((1, 131072): 2.19 against 3.77 TB/s), so the engine's
// operations, not the bytes, set that rate; the engine pays only with whole boxes (a tensor map, 4 KB a tile), not
// tried. The same run, this kernel: 3 ring stages (two blocks an SM) 152.2 against 151.6 µs at 16 x 8192, 53.0
// against 53.2 at (1, 32768); K and V stored head-major (torch's layout, through strides) 151.7 and 53.3: neither the
// ring's depth at the same bytes an SM nor the cache's layout is the gap to cuDNN.
// Session 10 (dec10): the TMA variant (decode_mma_tma_kernel, DecodeConfig::tma, kDecodeTma): each warp's lane 0
// fills the warp's ring slot with 2·D/64 boxes of 16 keys × 64 dimensions (2 KB each, 128-byte swizzle: 4 copy-engine
// operations a tile at D = 128, where dec9's bulk copies took 32) completing on one mbarrier a slot, instead of 16
// cp.async a lane. Same bytes per element, same floor. A box's bounds are S_max, not the sequence's length, so the
// keys past the visible window land too (NaN in the tests): K's scores are masked to −inf as before, V's rows are
// zeroed in shared memory after landing (with fence.proxy.async before the slot's next copy), so the ring holds what
// cp.async's zero-fill gave and the two give the same bits (test_decode TmaTilesGiveTheCpAsyncBits). 105-109
// registers at D = 128 against 122-123. Measured (H200 call of 15:00 UTC 2026-11-30, binaries of 1290b84,
// bench_decode --tma, 4 samples each alternating, docs/bench/dec10-s10-2026-11-30.md), cp.async / TMA µs: (1, 32768)
// 53.1 / 53.4, (1, 131072) 142.2 / 143.3, 16 x 8192 151.3 / 148.1, 64 x 4096 271.8 / 272.5, 128 x 1024 145.5 / 143.0,
// 64/8 56.1 / 56.3 and 155.7 / 155.7. So the bytes in flight of cp.async were not the cap dec9 looked for: the
// copy engine's tiles change the rate by -0.8..+2.1 %, and gain only on the two grids of 1024 blocks (2.59 waves of
// three blocks an SM). The dispatcher takes TMA where it was faster (attention_cuda.hpp's decode_tma_rule); in the
// same call, interleaved with cuDNN (that build: TMA on every row), ours / cuDNN 0.926 / 0.954 / 0.908 / 0.938 /
// 0.958 / 0.872 / 0.865 on the issue's rows (cuDNN 49.5 / 138.6 / 134.4 / 255.0 / 137.0 / 49.6 / 134.5 µs).
// Session 11 (dec11): the warps a block as a template parameter W, 4 (the dispatcher's, SASS unchanged) or 3
// (DecodeConfig::mma_warps, bf16/f16 at D = 128 with 2 stages: 48 KB of ring, 4 blocks an SM, 528 resident instead of
// 396; 122 / 105-109 registers). Same bytes per element, same floor. 3 warps fold in another order (other bits), so
// only a rule of the length could choose them. Not dispatched, then removed after the session's review (F17);
// e16cc07 has its code. Measured (H200 call of 16:53 UTC 2026-11-30, binaries of e16cc07,
// bench_decode --sweep, 3 samples alternating; docs/bench/dec11-s11-2026-11-30.md), 4 warps' µs / 3 warps' with the
// same tiles: 1.121-1.127 (cp.async) and 1.049-1.067 (TMA) on the grids of 512 blocks (1.29 waves at 3 an SM: S_max
// 1024 × 64, 4096 × 16, 8192 × 8), 0.984-1.018 on the grids of 1024 (2.59 waves; cp.async at 64/8 heads 0.905),
// 0.983-1.005 on grids of 2048 and more, 0.82-0.97 on grids of 256 blocks or fewer (one sequence: 0.88-0.93) — a
// function of the grid, not of the length, so not dispatched. The dispatcher's kernel
// in that call: 52.4 µs at (1, 32768) (2.56 TB/s), 140.0 at (1, 131072) (3.83), 149.4 / 267.1 / 140.8 (cp.async) and
// 146.0 / 267.5 / 140.7 (TMA) on the batch rows, 55.4 and 153.6 at 64/8; interleaved against cuDNN (dispatcher =
// decode_tma_rule) 0.938 / 0.967 / 0.905 / 0.938 / 0.959 / 0.891 / 0.858 on the issue's rows. cuDNN's own kernel on
// those rows (torch.profiler, same day): 4 warps, 183 registers, 86 KB of shared memory (2 an SM), one block per
// (sequence, KV head) without a merge at 16 × 8192 (128 blocks), 64 × 4096 (512) and 128 × 1024 (1024), and 32 splits
// plus a reduction kernel only at one sequence: its split count follows the batch, which this kernel's (batch
// invariance, decode_split.hpp) may not.
// Session 12 (dec12): this kernel unchanged; the dispatcher takes its TMA or cp.async tiles by the grid's blocks per
// SM (attention_cuda.hpp, decode_tma_grid_rule). Same bytes per element, same floor. Measured (H200 call of 19:11 UTC
// 2026-11-30, binaries of 5bb87b3, bench_decode --dec12, 3 samples alternating; docs/bench/dec12-s12-2026-11-30.md):
// 52.8 µs at (1, 32768) (2.54 TB/s), 142.2 at (1, 131072) (3.78), 148.2 / 271.6 / 143.5 on the batch rows, 55.8 and
// 155.3 at 64/8; the split rule's cap at 32 instead of 16 slower on the three single-sequence rows (53.4, 144.0,
// 57.7), at 24 slower still. Interleaved, ours / cuDNN 0.937 / 0.960 / 0.906 / 0.942 / 0.957 / 0.882 / 0.863.
// Session 14 (dec14): the cp.async issue from lane terms formed once (below, before the tile loop): a tile's hot path
// 557 -> 360 SASS instructions at D = 128, the same bytes per element and floor, the same bits. Measured beside the
// issue as before in one binary (H200 call of 00:08 UTC 2026-12-01, binaries of f68c7e8, bench_decode --dec14, 5
// samples each in turn; docs/bench/dec14-s14-2026-11-30.md), old / new µs: (1, 32768) 52.7 / 52.0 (2.58 TB/s),
// (1, 131072) 139.5 / 138.0 (3.89), 64 × 4096 267.4 / 264.7 (4.06), 64/8 55.3 / 54.8, (1, 8192) 28.2 / 27.3,
// 8 × 2048 34.3 / 34.0, 16 × 1024 31.4 / 30.7: 1.009-1.034x, every spread ≤ 0.5 µs. 3 ring stages were slower on six
// of those seven cells (0.987-0.993x), faster only at (1, 8192) (64 blocks: 26.3 µs). Nsight Compute, same call
// (PM sampling, 1.5-µs samples): at (1, 32768) this kernel streams at cuDNN's DRAM rate (90-99 % of peak a sample,
// ~20 samples each) but then runs ~3 µs with every block folding and no DRAM traffic, and ~6 µs with only the 8
// merging blocks (one per KV head) active; cuDNN drains in ~3 µs and reduces in a 3.9-µs kernel. At 64 × 4096 it
// streams at 93 % of peak a sample against cuDNN's 97 % (2048 blocks with their folds and merges against 512).
// Session 15 (dec15): the warps' fold skips only an empty warp, not one whose coefficient underflows (fold_groups'
// live mask; review F1), and dec14's lane terms are formed in the cp.async kernels only (F6). Measured in one binary
// (H200 call of 02:53 UTC 2026-12-01, binaries of 013cb4f, bench_decode --dec15, 5 samples each in turn;
// docs/bench/dec15-s15-2026-12-01.md): 52.3 µs at (1, 32768), 140.4 at (1, 131072), 55.0 at 64/8, 27.2 at
// (1, 8192), 269.2 at 64 × 4096; the split kernel alone (the merge kernel's call up to its launch) 48.5 / 136.9 /
// 49.3 / 23.6 / 262.1, so the fused merge adds 3.6-3.8 µs at 4 rows a block, 5.7 at 64/8, 7.2 at 64 × 4096. Beside
// them, the same bits each: every ring stage's tile issued before q's loads (a deep prologue) 0.993-0.998x on the
// single-sequence rows, the merge's fence before the count's reset instead of after 0.999-1.003x: neither kept (013cb4f
// has them).
// Session 16 (dec16; H200 calls of 05:02 and 05:08 UTC 2026-12-01, docs/bench/dec16-s16-2026-12-01.md): L2 prefetches
// of K and V rows, the first tiles a warp (and q) issued before the length's load at the split s_max gives, and tiles
// ahead in the loop, plus q's pairs as 32-bit loads, all as switches in one binary, the same bits. As one bulk prefetch
// (cp.async.bulk.prefetch.L2) a row a lane (4008706) every variant lost, 0.62-0.99x: the instruction takes a uniform
// address, so the compiler issues it lane by lane (R2UR, UBLKPF, BRA.U.ANY). As prefetch.global.L2 a line (310902b):
// 2 tiles before the length 1.004-1.035x and 0.971x at 64 × 4096 against that binary's default, prefetching ahead
// 0.77-0.97x (faster only at (1, 8192)), wide q 0.997-1.017x; but that binary's default ran 1.9-3.4 µs slower than the
// first call's (its q loads had become 16 branches between the two forms), so none was shown faster than this kernel:
// removed. Nsight Compute of this kernel at (1, 32768) (the first call): 10.6 % of the warps' stall samples fall before
// the tile loop (long scoreboard on the length and on q's 32 16-bit loads a lane, whose address registers wait 117 of
// 4255 samples; cold-code stalls 103), 11.9 % after it (barrier 227).
// Session 17 (dec17; H200 calls of 07:17 and 07:24 UTC 2026-12-01, docs/bench/dec17-s17-2026-12-01.md): dec16's
// levers again, each as a template flag of a separate kernel (decode_mma_tw_kernel, kTw below; this kernel's SASS
// unchanged), so the A/B is against HEAD's kernel itself. Same bytes per element, same floor. q's pairs as 32-bit loads
// where q is contiguous (16 loads a lane at D = 128 instead of 32): 1.002-1.021x over HEAD's kernel on the seven
// cp.async cells in 20 of 21 comparisons, now the dispatcher's at bf16 D = 128 (kDecodeMmaTweaks; (1, 32768) 52.1 ->
// 51.6-51.8 µs). The first 2 tiles a warp into L2 before the length's load (prefetch.global.L2 a line a lane): slower,
// 0.982-0.999x. The fused merge's arrival as one atom.inc.acq_rel (no MEMBAR.SC.GPU, no reset exchange): 1.000-1.017x,
// inside the 0.984-1.006x a byte-identical copy of this kernel read against it: not dispatched.
//
// Layout of the work. Grid (splits · row chunks, Hkv, B) as decode.cu's, split rule decode_split.hpp; a block serves
// kDecodeMmaRows = 8 query rows (the GQA group × the new tokens, padded) of one KV head and one split. Its warps take
// the split's 16-key tiles in turn (warp w: tiles w, w + W, ...), each with a ring of kStages tiles of K and V in
// shared memory filled by its own lanes' cp.async (so a warp waits only on its own copies: cp.async.wait_group and
// __syncwarp, no block barrier in the loop). Per tile:
//   S = Q·Kᵀ   A = Q (rows 0..7 real, 8..15 zero: a1 = a3 = 0), B = K rows via ldmatrix, as prefill.cu does;
//   softmax    row g (lane / 4) owns columns 2c, 2c+1 (c = lane % 4) of both 8-key n-tiles; masked keys → −inf,
//              then max over the quad, p = 2^(s·scale·log2e − m) as one FFMA and one ex2 (q negated when scale < 0,
//              exact, so the factor is positive and the max of s picks the max score), running (m, l) per row;
//   Oᵀ += Vᵀ·Pᵀ  A = Vᵀ through ldmatrix.trans (16 dimensions × 16 keys), B = P straight from the score registers:
//              the C layout (row g, keys 2c..2c+1) of the two n-tiles is the B layout (keys 2c.., column g) — P is
//              rounded to the input dtype here (FlashAttention's precision choice, docs/semantics.md "Decode").
// The warps' (m, l, Oᵀ) then fold in warp order through lse_fold.cuh and OnlineSoftmaxState (m·ln 2 turns the
// base-2 max into the state's natural units); one split writes O and LSE (with the sink). Several either keep their
// partials in shared memory and fold them across their thread-block cluster (merge_in_cluster: the dispatcher's
// choice up to 8 splits), or write f32 partials that the last of those blocks to finish folds (merge_if_last: the
// dispatcher's above 8) or decode.cu's merge kernel; the two in-kernel merges give the same bits.
//
// NaN and masking. Keys past the split, past seqlens or that no row of the block sees are never read: cp.async
// zero-fills them, their scores are −inf before the max. The causal band — keys some rows of the block see and
// others do not, at most Sq_new − 1 of them at the end of a sequence — is the one place where 0·V could meet a
// non-finite V inside the product: those V rows are zero-filled too, and their contribution is added on the CUDA
// cores afterwards, only to the rows that see them (with the unrounded f32 p). So, as in decode.cu, NaN anywhere
// outside a row's visible window cannot reach its output.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "cuda/attention/decode_common.cuh"
#include "cuda/attention/decode_split.hpp"
#include "cuda/attention/lse_fold.cuh"
#include "cuda/attention/ptx.cuh"
#include "cuda/attention/tma_map.hpp"
#include "cuda/device_attrs.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

using State = OnlineSoftmaxState<float>;

constexpr int kWarps = 4;           // warps per block; each takes every kWarps-th tile of the split
constexpr int kKeys = 16;           // keys per warp tile: two n-tiles of S, one k-step of P·V
constexpr int kRows = kDecodeMmaRows;
constexpr float kLn2 = 0.6931471805599453f;
constexpr unsigned kFull = 0xffffffffu;

// to_f32, from_f32: decode_common.cuh.

// x, kept in a register the compiler cannot see into (an empty asm that may change it): it is then formed once where
// written and not formed again from the kernel's parameters at each use (dec14's cp.async issue, below).
__device__ __forceinline__ std::uint32_t opaque(std::uint32_t x) {
  asm volatile("" : "+r"(x));
  return x;
}
__device__ __forceinline__ std::uint64_t opaque(std::uint64_t x) {
  asm volatile("" : "+l"(x));
  return x;
}
__device__ __forceinline__ std::int64_t opaque(std::int64_t x) {
  asm volatile("" : "+l"(x));
  return x;
}

// Where a row's outputs go: element x of O (query token tok, head h of sequence b) and the row's LSE (if wanted).
template <typename T>
__device__ __forceinline__ void store_out(const DecodeArgs& a, std::int64_t b, int h, int tok, int x, float o) {
  static_cast<T*>(a.out)[b * a.os[0] + tok * a.os[1] + h * a.os[2] + x * a.os[3]] = from_f32<T>(o);
}
__device__ __forceinline__ void store_lse(const DecodeArgs& a, std::int64_t b, int h, int tok, float lse) {
  if (a.lse != nullptr) a.lse[b * a.ls[0] + h * a.ls[1] + tok * a.ls[2]] = lse;
}

// What the two in-kernel merges (merge_if_last, merge_in_cluster) do per output row, once, so that they stay the same
// arithmetic in the same order, hence the same bits. Lane i holds split i's LSE `mine` (−inf past nsplit): a
// butterfly of OnlineSoftmaxState::merge (commutative bit for bit, so every lane ends with the same total) gives the
// row's state, the sink (`sink_lse`, when `has_sink`; loaded by the caller beside the splits' LSEs, not after the
// butterfly: one memory latency fewer on the merge's path) joins it last, and each lane's coefficient is the total's
// normalizer applied to its LSE — exp(LSE_i − m)/l: the splits' LSEs are the scores of one more softmax.
struct SplitWeights {
  State total;
  float coef;     // this lane's split's weight in the output; 0 past nsplit and for an empty split
  unsigned live;  // bit i: split i < nsplit holds terms (LSE not −inf); the same on every lane
};
__device__ __forceinline__ SplitWeights split_weights(float mine, int lane, int nsplit, bool has_sink,
                                                      float sink_lse) {
  State st = State::from_lse(mine);
#pragma unroll
  for (int o2 = 16; o2 > 0; o2 /= 2)
    st.merge(State::from_fields(__shfl_xor_sync(kFull, st.m, o2), __shfl_xor_sync(kFull, st.d, o2)));
  if (has_sink) st.merge(State::from_lse(sink_lse));
  const RowNormalizer<float> nrm = st.normalizer(EmptyRowPolicy::zeros);
  const unsigned live = __ballot_sync(kFull, lane < nsplit && mine != -detail::inf_<float>());
  return {st, lane < nsplit ? nrm.softmax(mine) : 0.0f, live};
}
// o = fmaf(c_i, part_i, o) over splits i = 0 .. nsplit − 1 in order (nsplit ≤ N, the same on every lane), c_i from
// lane i's coefficient; an empty split (LSE −inf) is skipped, one whose c_i underflows to 0 is not (its NaN or inf
// partial reaches O, as on the CPU; until session 14 every c_i = 0 was skipped), and NaN poisons. part(i, pv)
// gives this lane's V values of split i's partial row. Until session 6 the loop ran to N (32 for the fused merge)
// and skipped the splits past nsplit by their zero coefficients: the same fmaf sequence, so the same bits, but 32
// shuffles and tests on the merge's critical path where the rule makes at most 16 splits.
template <int N, int V, typename Part>
__device__ __forceinline__ void weigh_splits(const SplitWeights& w, int nsplit, float (&o)[V], const Part& part) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (i >= nsplit) break;
    const float ci = __shfl_sync(kFull, w.coef, i);
    if (!((w.live >> i) & 1u)) continue;
    float pv[V];
    part(i, pv);
#pragma unroll
    for (int x = 0; x < V; ++x) o[x] = fmaf(ci, pv[x], o[x]);
  }
}

// The fused merge: called by every block of a sequence with several splits after it wrote its partials. The last
// block of (b, KV head, row chunk) to arrive folds the nsplit partials of its rows (one warp per row): lane i holds
// split i's LSE as a state, a butterfly of OnlineSoftmaxState::merge (commutative bit for bit, so every lane ends
// with the same total) gives the rows' state, the sink joins it, and each split's coefficient is the total's
// normalizer applied to its LSE — exp(LSE_i − m)/l: the splits' LSEs are the scores of one more softmax. The order of
// the merges depends on the split count alone, so the result is deterministic and batch-invariant; an empty split
// (LSE −inf) gets coefficient 0 and is skipped, a NaN poisons the total.
// The last block also sets the count back to zero (every block of this launch that counts has counted), so the
// counters are all zero again when the kernel ends: decode.cu keeps them per stream for the next call.
// The partials go through shared memory: each warp first puts its row's nsplit partial rows in flight there
// (cp.async through L2, D/4 16-byte copies per split, 16 KB per warp at D = 128: the ring's 64 KB, free by now)
// beside the LSE load, runs the butterfly, then reads them back — one memory latency per row, where round 1 (commit
// 98f32d4) loaded the LSEs, then two batches of 16 partial rows through registers after the butterfly, three
// latencies in series. Measured in the H200 run of bb13db2 (2026-11-30), the same kernel otherwise: 53.8 against
// 55.3 µs at (B, S) = (1, 32768) with 32/8 heads, 57.2 against 60.0 with 64/8, 1.2-2.8 µs less on every row with
// splits (the dispatcher's two timings in that run differed by at most 0.3 µs). Holding all 32 partial rows in registers instead took the kernel from 124 to 166 registers (ptxas,
// D = 128); this way it has 120 (72 at D = 64). The arithmetic and its order are round 1's: the same bits.
template <typename T, int D>
__device__ __forceinline__ void merge_if_last(const DecodeArgs& a, std::int64_t b, int hk, int row_chunk, int nsplit,
                                              float* stage) {
  constexpr int V = D / 32;  // dimensions per lane
  static_assert(V == 2 || V == 4, "D = 64 or 128");
  static_assert(kDecodeSplitLimit <= 32, "one split per lane");
  __shared__ int last;
  // The arrival is a release and the last block's observation an acquire, each made by thread 0 alone between the
  // block's barriers (the pattern of cooperative groups' grid barrier): the barrier orders every thread's partial
  // writes before thread 0's fence, whose cumulativity makes them visible device-wide before the count; the last
  // block's fence after the count, then its barrier, order every thread's reads (through L2: __ldcg, cp.async.cg)
  // after the other blocks' arrivals. Until session 6 every thread fenced, before the barrier and after it.
  __syncthreads();
  if (threadIdx.x == 0) {
    int* ctr = a.counters + (b * gridDim.y + hk) * a.row_chunks + row_chunk;
    __threadfence();
    const bool mine_last = atomicAdd(ctr, 1) == nsplit - 1;
    if (mine_last) {
      atomicExch(ctr, 0);  // all nsplit arrivals are in: zero again for the next call on the stream
      __threadfence();
    }
    last = mine_last;
  }
  __syncthreads();
  if (!last) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < kRows; r += kWarps) {
    const int row = row_chunk * kRows + r;
    if (row >= a.rows) break;
    const int tok = row % a.sq, h = hk * a.group + row / a.sq;
    const std::int64_t prow = ((b * a.hq + h) * a.sq + tok) * a.grid_splits;
    const float mine = lane < nsplit ? __ldcg(a.part_lse + prow + lane) : -detail::inf_<float>();
    const float sink = a.sinks != nullptr ? a.sinks[h * a.sink_stride] : 0.0f;
    float o[V];
#pragma unroll
    for (int x = 0; x < V; ++x) o[x] = 0.0f;
    float* mine_stage = stage + warp * kDecodeSplitLimit * D;  // [split][D] f32, this warp's
    constexpr int kVecs = D / 4;                              // 16-byte copies per partial row
    for (int id = lane; id < nsplit * kVecs; id += 32) {      // no dependence on loaded data: all in flight
      const int i = id / kVecs, x = (id % kVecs) * 4;
      ptx::cp_async_16(ptx::smem_addr(mine_stage + i * D + x), a.part_o + (prow + i) * D + x, 16);
    }
    ptx::cp_async_commit();
    const SplitWeights w = split_weights(mine, lane, nsplit, a.sinks != nullptr, sink);
    ptx::cp_async_wait<0>();
    __syncwarp();  // every lane's copies have landed
    // One 16-byte (8 at D = 64) shared load a split: consecutive lanes, consecutive vectors, no conflict.
    weigh_splits<kDecodeSplitLimit>(w, nsplit, o, [&](int i, float (&pv)[V]) {
      if constexpr (V == 4) {
        const float4 t = *reinterpret_cast<const float4*>(mine_stage + i * D + lane * V);
        pv[0] = t.x, pv[1] = t.y, pv[2] = t.z, pv[3] = t.w;
      } else {
        const float2 t = *reinterpret_cast<const float2*>(mine_stage + i * D + lane * V);
        pv[0] = t.x, pv[1] = t.y;
      }
    });
    __syncwarp();  // the stage is read before this warp's next row overwrites it
    if (lane == 0) store_lse(a, b, h, tok, w.total.lse());
#pragma unroll
    for (int x = 0; x < V; ++x) store_out<T>(a, b, h, tok, lane * V + x, o[x]);
  }
}

// Shared memory of the fold after the ring (states [W][8], accumulators [W][8][D], coefficients, LSEs, live masks),
// and where the cluster merge's partial rows [8][D] and their LSEs [8] go after it (f32; the fold's accumulators are
// read while they are written, so the two must not overlap).
template <int D>
inline constexpr std::size_t kFoldBytes =
    kWarps * kRows * (sizeof(State) + D * sizeof(float)) + kRows * (kWarps + 1) * sizeof(float) +
    kRows * sizeof(unsigned);
template <int D>
inline constexpr std::size_t kPartOffset = (kFoldBytes<D> + 127) / 128 * 128;
template <int D>
inline constexpr std::size_t kPartEnd = kPartOffset<D> + (kRows * D + kRows) * sizeof(float);

// A barrier over the thread-block cluster with release/acquire semantics on shared memory (barrier.cluster.arrive
// .release + wait.acquire): sm_90 and later only; the host launches clusters only where the device has them.
__device__ __forceinline__ void cluster_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

// The cluster merge (DecodeMerge::cluster; the dispatcher's for at most 8 splits and blocks of more than 4 rows,
// attention_cuda.hpp has the measurements: clusters of 16 lost, 169.1 against 144.0 µs at (1, 131072); clusters of 8
// with 8 rows a block won, 156.4 against 158.5 at 16 × 8192 with 64/8). The splits of one (sequence, KV head, row
// chunk) are the blocks of one thread-block cluster (blockIdx.x = row chunk · grid_splits + split, cluster
// (grid_splits, 1, 1)), each split's normalised partial rows and LSEs stay in its own shared memory, and after one
// cluster barrier every block folds a share of the outputs by reading the others' shared memory (distributed shared
// memory): a unit is one row's 32-dimension slice, one dimension per lane, the units dealt to the nsplit · kWarps
// warps in turn. No partial goes to global memory, no counter, no fence, and the fold's critical path is one barrier
// and one round of remote loads instead of the last block's loads from L2 after every block's atomic.
// The arithmetic is merge_if_last's, element for element: lane i holds split i's LSE as a state, the same butterfly
// of OnlineSoftmaxState::merge (every lane ends with the same total), the sink, each split's coefficient from the
// total's normalizer, then o = fmaf(c_i, partial_i, o) in split order skipping empty splits — so for the same split rule the
// two merges give the same bits (test_decode checks it), and the result depends on the sequence's length alone.
// A second barrier keeps every block (and its shared memory) alive until the reads of it are done. Blocks past a
// shorter sequence's nsplit only join the two barriers.
template <typename T, int D>
__device__ __forceinline__ void merge_in_cluster(const DecodeArgs& a, std::int64_t b, int hk, int row_chunk, int split,
                                                 int nsplit, float* part) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every split's partial rows and LSEs are in its shared memory
  constexpr int kSlices = D / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int u = split * kWarps + warp; u < kRows * kSlices; u += nsplit * kWarps) {
    const int r = u / kSlices, x = (u % kSlices) * 32 + lane;
    const int row = row_chunk * kRows + r;
    if (row >= a.rows) break;  // rows grow with u
    const int tok = row % a.sq, h = hk * a.group + row / a.sq;
    // All the remote loads first (none depends on another): one latency for the unit.
    const float mine = lane < nsplit ? cluster.map_shared_rank(part, lane)[kRows * D + r] : -detail::inf_<float>();
    const float sink = a.sinks != nullptr ? a.sinks[h * a.sink_stride] : 0.0f;
    float pv[kDecodeClusterMax];
#pragma unroll
    for (int i = 0; i < kDecodeClusterMax; ++i) pv[i] = i < nsplit ? cluster.map_shared_rank(part, i)[r * D + x] : 0.0f;
    const SplitWeights w = split_weights(mine, lane, nsplit, a.sinks != nullptr, sink);
    float o[1] = {0.0f};
    weigh_splits<kDecodeClusterMax>(w, nsplit, o, [&](int i, float (&p)[1]) { p[0] = pv[i]; });
    store_out<T>(a, b, h, tok, x, o[0]);
    if (x == 0) store_lse(a, b, h, tok, w.total.lse());
  }
  cluster.sync();  // no block leaves, and takes its shared memory with it, before the reads of it are done
#else
  (void)a, (void)b, (void)hk, (void)row_chunk, (void)split, (void)nsplit, (void)part;
  cluster_barrier();
#endif
}

// The TMA variant's tensor maps over the K and V caches (host-encoded per call, passed by value as a __grid_constant__
// parameter): [B, S_max, Hkv, D] with boxes of 64 dimensions × 1 head × kKeys keys × 1 sequence, 128-byte swizzle.
struct DecodeMaps {
  CUtensorMap k, v;
};

// Element offset of (row, col) in a [kKeys][D] tile as the TMA lands it with 128-byte swizzle: panels of 64 columns
// (kKeys rows of 128 bytes, 2 KB, each at a multiple of 1024 bytes), the 16-byte chunk of a row XORed with row % 8
// (address bits 4-6 with bits 7-9). The 8 rows of an ldmatrix phase then fall in 8 different bank groups, as with
// ptx::swizzled, the cp.async ring's layout (one [kKeys][D] row-major tile, the chunk's low 3 bits swizzled).
template <int D>
__device__ __forceinline__ int tma_swizzled(int row, int col) {
  return (col >> 6) * (kKeys * 64) + row * 64 + ((((col >> 3) & 7) ^ (row & 7)) << 3) + (col & 7);
}
template <int D, bool kTma>
__device__ __forceinline__ int tile_offset(int row, int col) {
  if constexpr (kTma) return tma_swizzled<D>(row, col);
  else return ptx::swizzled<D>(row, col);
}

// The ring's bytes (all warps), and where the TMA variant puts its per-slot mbarriers: past the ring and the up to
// 1023 bytes that align it to 1024 (the 128-byte swizzle's pattern repeats every 1024 bytes and the TMA needs its
// boxes' destinations so aligned), so that the fold and the merges after the loop, which use shared memory from its
// start, never overwrite a barrier.
template <typename T, int D, int kStages>
inline constexpr std::size_t kRingBytes = std::size_t{kWarps} * kStages * 2 * kKeys * D * sizeof(T);
template <typename T, int D, int kStages>
inline constexpr std::size_t kTmaBarOffset = kRingBytes<T, D, kStages> + 1024;

// Session 17 (dec17): decode_mma_tw_kernel's template flag set (kTw; 0 in every default kernel, whose code it leaves as
// it was): kTwWideQ — q's pairs as one 32-bit load each (16 a lane at D = 128 instead of 32), where the host found q
// contiguous and its pairs 4-byte aligned. The same values loaded: the same bits (test_decode
// TweaksGiveTheDefaultBits). As run in session 17 (commit 7f9f852) the set also held kTwRamp = 1 (each warp's first 2
// tiles and the block's q into L2 before the length's load, one prefetch.global.L2 a line a lane, at the split s_max
// gives: 0.982-0.999x), kTwOneAtom = 4 (the fused merge's arrival as one atom.acq_rel.gpu.global.inc.u32 in place of
// two fence.sc, the add and the reset exchange: 1.000-1.017x, inside the spread of kTwCopy = 8, HEAD's code as
// another kernel, which read 0.984-1.006x against it): removed, not faster.
inline constexpr unsigned kTwWideQ = 2;

// kTma (sm_90+): each warp's lane 0 fills the warp's ring slot by TMA (2·D/64 boxes of 2 KB a 16-key tile, K then V,
// completing on the slot's mbarrier) instead of every lane's cp.async; maps: the caches' tensor maps (null otherwise).
template <typename T, int D, int kStages, bool kCluster, bool kTma, unsigned kTw = 0>
__device__ __forceinline__ void decode_mma_body(const DecodeArgs& a, const CUtensorMap* kmap, const CUtensorMap* vmap) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kSteps = D / 16;                       // k-steps of Q·Kᵀ; m-tiles (16 dimensions) of Vᵀ·Pᵀ
  constexpr int kTile = kKeys * D;                     // elements of one K or V tile
  constexpr int kChunks = D / 8;                       // 16-byte chunks per row
  constexpr int kCopies = 2 * kKeys * kChunks / 32;    // cp.async per lane per tile (K and V)
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  // [kStages][K, V][kKeys][D], swizzled (tile_offset); the TMA's ring starts at the first 1024-byte boundary.
  const std::uint32_t smem0 = ptx::smem_addr(smem);
  const std::uint32_t ring_pad = kTma ? ((smem0 + 1023u) & ~1023u) - smem0 : 0u;
  T* const ring = reinterpret_cast<T*>(smem + ring_pad) + warp * kStages * 2 * kTile;
  const std::uint32_t bars = smem0 + static_cast<std::uint32_t>(kTmaBarOffset<T, D, kStages>) + warp * kStages * 8;

  // The cluster merge needs the splits of one row chunk side by side (one cluster); otherwise the row chunks of one
  // split are (round 2's order).
  const int row_chunk = kCluster ? blockIdx.x / a.grid_splits : blockIdx.x % a.row_chunks;
  const int split = kCluster ? blockIdx.x % a.grid_splits : blockIdx.x / a.row_chunks;
  const int hk = blockIdx.y;
  const std::int64_t b = blockIdx.z;
  // A programmatic dependent launch (DecodeConfig::pdl) waits here, before its first load, for the kernel ahead of
  // it; a plain launch skips the instruction (a uniform branch).
  if (a.pdl) decode_pdl_wait();
  const int len = a.seqlens[b * a.seqlen_stride];
  const bool bad = len < 0 || len > a.s_max;  // documented: that sequence's O and LSE become NaN
  const int nsplit = bad ? 1 : decode_splits(len, a.max_splits, a.min_chunk);
  if (split >= nsplit) {  // the grid is sized for S_max; this sequence is shorter
    if constexpr (kCluster) {
      if (nsplit > 1) {  // its cluster merges: join the merge's two barriers (nsplit is the same across the cluster)
        cluster_barrier();
        cluster_barrier();
      }
    }
    return;
  }
  const int chunk = static_cast<int>(decode_chunk(bad ? 0 : len, a.max_splits, a.min_chunk));
  const int k0 = split * chunk;
  const int k1 = bad ? k0 : (len - k0 < chunk ? len : k0 + chunk);

  // Each row's visible end within this split (0 for padding rows and bad sequences); the block's smallest and
  // largest over its real rows bound the keys every row sees ([k0, v_end): V through the product) and the keys some
  // row sees ([k0, kv_end)); [v_end, kv_end) is the causal band.
  const auto lim_of = [&](int r) {
    const int row = row_chunk * kRows + r;
    if (row >= a.rows || bad) return 0;
    const int e = visible_end(a, len, row % a.sq);
    return e < k1 ? e : k1;
  };
  int v_end = INT_MAX, kv_end = 0;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (row_chunk * kRows + r >= a.rows) continue;
    const int e = lim_of(r);
    v_end = e < v_end ? e : v_end;
    kv_end = e > kv_end ? e : kv_end;
  }
  const int lim_g = lim_of(g), lim_r0 = lim_of(2 * c), lim_r1 = lim_of(2 * c + 1);

  const float sl2 = a.scale_log2;
  const T* kg = static_cast<const T*>(a.k) + b * a.ks[0] + hk * a.ks[2];
  const T* vg = static_cast<const T*>(a.v) + b * a.vs[0] + hk * a.vs[2];
  // The cp.async issue's lane terms (session 14, dec14), formed once here instead of every tile. A copy instruction
  // of the warp covers kRowsPerCopy rows: lane moves 16-byte chunk lc of row xr + lr, xr a compile-time multiple of
  // kRowsPerCopy, lr < kRowsPerCopy, so (xr + lr) % 8 = (xr % 8) ^ lr and ptx::swizzled's chunk is lc ^ lr ^ (xr % 8):
  // one shared-memory byte offset a value of xr % 8 (dst_lane), one global pointer a cache (klane, vlane) plus
  // (j0 + xr)·stride. Until dec14 the loop formed every address from (x · 32 + lane) afresh each tile: 332 of the
  // 557 SASS instructions of the cp.async kernel's tile at D = 128 (bf16, 2 stages; the loop's head to LDGDEPBAR,
  // cuobjdump of 2dff047's object); this way the tile takes 360 (the issue 135). The terms pass through opaque
  // (above) so that the compiler keeps them in registers: without it, it formed them again from the kernel's
  // parameters for every copy (a first build of this code: 622 instructions a tile).
  // The TMA kernels never use these terms, and opaque's asm is never removed as dead code: term() gives them 0 there
  // (session 15, review F6: dec14's build formed them in the TMA kernels too).
  const auto term = [](auto x) {
    if constexpr (kTma) return decltype(x){0};
    else return opaque(x);
  };
  constexpr int kRowsPerCopy = 32 / kChunks;  // 2 at D = 128, 4 at D = 64
  static_assert(32 % kChunks == 0 && kRowsPerCopy <= 8, "a copy instruction covers whole rows");
  const int lr = lane / kChunks, lc = lane % kChunks;
  std::uint32_t dst_lane[8 / kRowsPerCopy];
#pragma unroll
  for (int sw = 0; sw < 8 / kRowsPerCopy; ++sw)
    dst_lane[sw] = term(
        static_cast<std::uint32_t>((lr * D + (((lc ^ lr) ^ (sw * kRowsPerCopy)) << 3)) * sizeof(T)));
  constexpr std::int64_t kElem = sizeof(T);
  const std::int64_t ks1b = term(a.ks[1] * kElem), vs1b = term(a.vs[1] * kElem);  // bytes a cache row
  const std::uint64_t kbase = term(reinterpret_cast<std::uint64_t>(kg));
  const std::uint64_t vbase = term(reinterpret_cast<std::uint64_t>(vg));
  const std::uint64_t kstep = term(static_cast<std::uint64_t>(kRowsPerCopy * ks1b));
  const std::uint64_t vstep = term(static_cast<std::uint64_t>(kRowsPerCopy * vs1b));
  const std::uint64_t klane = term(kbase + static_cast<std::uint64_t>(lr * ks1b + lc * 8 * kElem));
  const std::uint64_t vlane = term(vbase + static_cast<std::uint64_t>(lr * vs1b + lc * 8 * kElem));
  const int ntiles = kv_end > k0 ? (kv_end - k0 + kKeys - 1) / kKeys : 0;
  const int my_tiles = ntiles > warp ? (ntiles - warp + kWarps - 1) / kWarps : 0;
  const auto first_key = [&](int i) { return k0 + (warp + i * kWarps) * kKeys; };
  const auto issue = [&](int i) {  // this warp's i-th tile into ring slot i % kStages
    T* st = ring + (i % kStages) * 2 * kTile;
    const int j0 = first_key(i);
    if constexpr (kTma) {
      // One arrival with the tile's bytes, then the boxes: keys past S_max land as zeros (and count), keys past
      // the sequence's visible window are real cache rows (any value): K's are masked (−inf scores), V's zeroed
      // after landing (below), since a box's bounds are S_max, not the length.
      if (lane == 0) {
        const std::uint32_t bar = bars + (i % kStages) * 8, dst = ptx::smem_addr(st);
        ptx::mbar_arrive_expect_tx(bar, 2 * kTile * sizeof(T));
#pragma unroll
        for (int pnl = 0; pnl < D / 64; ++pnl) {
          ptx::tma_load_4d(dst + pnl * kKeys * 128, kmap, 64 * pnl, hk, j0, static_cast<int>(b), bar);
          ptx::tma_load_4d(dst + kTile * sizeof(T) + pnl * kKeys * 128, vmap, 64 * pnl, hk, j0, static_cast<int>(b),
                           bar);
        }
      }
    } else {
      // Copy x moves row xr(x) + lr of K (x < kHalf) or V, chunk lc: the same rows, bytes and slots as the issue
      // before dec14 (commit f68c7e8 has it), from the lane's terms formed once (dst_lane, klane, vlane, the steps)
      // plus one product a tile.
      const std::uint32_t slot = ptx::smem_addr(st);
      const int kl = kv_end - j0 - lr, vl = v_end - j0 - lr;  // row xr + lr is visible iff xr < kl (K), vl (V)
      std::uint64_t kp = klane + static_cast<std::uint64_t>(static_cast<std::int64_t>(j0) * ks1b);
      std::uint64_t vp = vlane + static_cast<std::uint64_t>(static_cast<std::int64_t>(j0) * vs1b);
#pragma unroll
      for (int x = 0; x < kCopies; ++x) {
        constexpr int kHalf = kCopies / 2;
        const bool is_v = x >= kHalf;                // compile-time per x
        const int xr = (x % kHalf) * kRowsPerCopy;  // compile-time per x
        const bool ok = xr < (is_v ? vl : kl);
        // Past the visible rows the copy reads nothing (size 0) from the cache's own start, as before dec14.
        const std::uint64_t src = is_v ? (ok ? vp : vbase) : (ok ? kp : kbase);
        const std::uint32_t dst = slot + static_cast<std::uint32_t>(((is_v ? kTile : 0) + xr * D) * sizeof(T)) +
                                  dst_lane[(xr & 7) / kRowsPerCopy];
        ptx::cp_async_16(dst, reinterpret_cast<const void*>(src), ok ? 16 : 0);
        if (is_v) vp += vstep;
        else kp += kstep;
      }
    }
  };
  const auto prologue = [&] {  // the first kStages − 1 tiles in flight
    if constexpr (kTma) {
      if (lane == 0) {
#pragma unroll
        for (int s = 0; s < kStages; ++s) ptx::mbar_init(bars + s * 8, 1);
        ptx::fence_mbar_init();  // the barriers' initialisation visible to the TMA unit before its first copy
      }
      __syncwarp();
    }
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < my_tiles) issue(s);
      if constexpr (!kTma) ptx::cp_async_commit();
    }
  };

  // Q as the A operand: this lane's pairs of row g (dimensions 16kk + 2c.. and 16kk + 8 + 2c..); rows 8..15 are the
  // zero registers a1, a3. The raw 16-bit values, negated (exactly) for a negative scale.
  std::uint32_t qa[kSteps][2];
  const auto load_q = [&] {
    const int row = row_chunk * kRows + g;
    const bool real = row < a.rows;
    const int tok = row % a.sq, h = hk * a.group + row / a.sq;
    const std::uint16_t* qp = reinterpret_cast<const std::uint16_t*>(a.q) +
                              (real ? b * a.qs[0] + tok * a.qs[1] + h * a.qs[2] : 0);
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int d0 = 16 * kk + 8 * half + 2 * c;
        std::uint32_t pair = 0;
        if constexpr ((kTw & kTwWideQ) != 0) {  // contiguous, pairs 4-byte aligned (the host checked)
          if (real) pair = reinterpret_cast<const std::uint32_t*>(qp)[d0 / 2];
        } else {
          if (real) pair = qp[d0 * a.qs[3]] | (static_cast<std::uint32_t>(qp[(d0 + 1) * a.qs[3]]) << 16);
        }
        qa[kk][half] = a.scale < 0.0f ? ptx::neg2(pair) : pair;
      }
  };
  // The K/V stream starts before q's loads: q's fragments are built from its loaded values (the sign flip), and in
  // the other order (round 1) the warp waited one memory latency for them before its first cp.async, with nothing of
  // K or V in flight. Measured in the H200 run of bb13db2: 0.1-0.7 µs a call (0.1-0.5 %) on every row, at the edge
  // of that run's spread (0.3 µs), but never the other way. Session 6 (dec5, H200 run of 0ad26b8) issued q's loads
  // (and a single split's sink) before the length's instead, to overlap the empty call's three latencies: slower on
  // every row, 2.0-8.3 µs (147.8 against 152.1 at 128 × 1024, where nothing merges; the empty call 15.4 against 29.0
  // µs at 64 × 4096, every block loading q before it knew it had no keys). Back to this order.
  prologue();
  load_q();
  float m_run = -detail::inf_<float>(), l_run = 0.0f;  // row g, base 2; l_run: this lane's share (quad-summed last)
  bool nan_seen = false;  // a visible NaN score (fmaxf drops it from m_run; the state must still be NaN)
  float acc[kSteps][4];  // Oᵀ: (dimension 16mt + g (+8), rows 2c, 2c+1)
#pragma unroll
  for (int mt = 0; mt < kSteps; ++mt) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;

  for (int i = 0; i < my_tiles; ++i) {
    if (i + kStages - 1 < my_tiles) issue(i + kStages - 1);
    const T* sk = ring + (i % kStages) * 2 * kTile;
    const T* sv = sk + kTile;
    const int j0 = first_key(i);
    const int mi = lane / 8;
    if constexpr (kTma) {
      ptx::mbar_wait(bars + (i % kStages) * 8, (i / kStages) & 1);  // tile i's K and V have landed
      if (j0 + kKeys > v_end) {  // V rows no row of the block multiplies (what cp.async zero-fills): zeros
        // Whole 128-byte rows of each panel, so the swizzle does not matter; then the fence: these generic stores
        // must be ordered before the TMA's next write of this slot (HOPPER.md), which the __syncwarp at the end of
        // the iteration orders after every lane's fence.
        for (int id = lane; id < kKeys * kChunks; id += 32) {
          const int row = id / kChunks, ch = id % kChunks;
          if (j0 + row >= v_end)
            *reinterpret_cast<uint4*>(const_cast<T*>(sv) + tma_swizzled<D>(row, ch * 8)) = make_uint4(0, 0, 0, 0);
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      }
      __syncwarp();  // every lane's zeros are in before any lane's ldmatrix
    } else {
      ptx::cp_async_commit();
      ptx::cp_async_wait<kStages - 1>();  // this lane's copies of tile i have landed
      __syncwarp();                       // and every other lane's
    }

    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      std::uint32_t bf[4];
      ptx::ldmatrix_x4(bf, ptx::smem_addr(sk + tile_offset<D, kTma>((mi / 2) * 8 + lane % 8, kk * 16 + (mi % 2) * 8)));
      const std::uint32_t qf[4] = {qa[kk][0], 0u, qa[kk][1], 0u};
      ptx::mma_16816<T>(s[0], qf, bf[0], bf[1]);
      ptx::mma_16816<T>(s[1], qf, bf[2], bf[3]);
    }

    // Row g's scores of this tile: keys j0 + 8nt + 2c + e. fmaxf drops a NaN score from the max, but its p is then
    // NaN and poisons l and O all the same.
    float p[2][2];
    float mx = -detail::inf_<float>();
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = j0 + 8 * nt + 2 * c + e;
        p[nt][e] = j < lim_g ? s[nt][e] : -detail::inf_<float>();
        nan_seen |= p[nt][e] != p[nt][e];
        mx = fmaxf(mx, p[nt][e]);
      }
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
    const float m_new = fmaxf(m_run, mx * sl2);
    const float shift = m_new == -detail::inf_<float>() ? 0.0f : m_new;  // all masked so far: 2^(−inf − 0) = 0
    const float alpha = ptx::exp2_approx(m_run - shift);
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        p[nt][e] = ptx::exp2_approx(fmaf(p[nt][e], sl2, -shift));
        sum += p[nt][e];
      }
    l_run = l_run * alpha + sum;
    m_run = m_new;
    // This lane's accumulator rows are 2c and 2c + 1; their factors live on quads 2c and 2c + 1.
    const float a0 = __shfl_sync(kFull, alpha, 8 * c), a1 = __shfl_sync(kFull, alpha, 8 * c + 4);
#pragma unroll
    for (int mt = 0; mt < kSteps; ++mt) {
      acc[mt][0] *= a0;
      acc[mt][2] *= a0;
      acc[mt][1] *= a1;
      acc[mt][3] *= a1;
    }

    const std::uint32_t pb0 = ptx::pack2<T>(p[0][0], p[0][1]), pb1 = ptx::pack2<T>(p[1][0], p[1][1]);
#pragma unroll
    for (int mt = 0; mt < kSteps; ++mt) {
      std::uint32_t va[4];
      ptx::ldmatrix_x4_trans(va, ptx::smem_addr(sv + tile_offset<D, kTma>((mi / 2) * 8 + lane % 8, mt * 16 + (mi % 2) * 8)));
      ptx::mma_16816<T>(acc[mt], va, pb0, pb1);
    }

    // The causal band's keys in this tile (warp-uniform): their V rows are zeros in shared memory; add p·v here for
    // the rows that see them, reading V from global memory (< 8 keys per sequence).
    if (j0 + kKeys > v_end && j0 < kv_end) {
#pragma unroll
      for (int kk = 0; kk < kKeys; ++kk) {
        const int j = j0 + kk;
        if (j < v_end || j >= kv_end) continue;
        const float mine = p[kk / 8][kk % 2];
        const float p0 = __shfl_sync(kFull, mine, 8 * c + (kk % 8) / 2);
        const float p1 = __shfl_sync(kFull, mine, 8 * c + 4 + (kk % 8) / 2);
        const T* vrow = vg + j * a.vs[1];
#pragma unroll
        for (int mt = 0; mt < kSteps; ++mt) {
          const float lo = to_f32(vrow[16 * mt + g]), hi = to_f32(vrow[16 * mt + g + 8]);
          if (j < lim_r0) {
            acc[mt][0] = fmaf(p0, lo, acc[mt][0]);
            acc[mt][2] = fmaf(p0, hi, acc[mt][2]);
          }
          if (j < lim_r1) {
            acc[mt][1] = fmaf(p1, lo, acc[mt][1]);
            acc[mt][3] = fmaf(p1, hi, acc[mt][3]);
          }
        }
      }
    }
    __syncwarp();  // every lane has read this slot before the next iteration refills it
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // the ring is reused below

  l_run += __shfl_xor_sync(kFull, l_run, 1);
  l_run += __shfl_xor_sync(kFull, l_run, 2);
  int nan_q = nan_seen ? 1 : 0;  // over the quad, which shares row g
  nan_q |= __shfl_xor_sync(kFull, nan_q, 1);
  nan_q |= __shfl_xor_sync(kFull, nan_q, 2);

  // Fold the warps in warp order (shared memory: states [W][8], accumulators [W][8][D], then per row the coefficient
  // of each warp's accumulator, the row's LSE and its live warps), exactly as decode.cu folds its lane groups.
  State* sst = reinterpret_cast<State*>(smem);
  float* sacc = reinterpret_cast<float*>(sst + kWarps * kRows);
  float* coef = sacc + kWarps * kRows * D;
  float* slse = coef + kRows * kWarps;
  unsigned* slive = reinterpret_cast<unsigned*>(slse + kRows);  // [kRows], bit i: warp i holds terms
  if (c == 0) {
    // A visible NaN score makes the NaN state (fmaxf kept it out of m_run); a +inf score leaves m_run = +inf and l
    // NaN (inf − inf), which from_max_and_sum reads as the saturated state, as the online state's rules say.
    const float m = nan_q ? detail::nan_<float>() : m_run * kLn2;
    sst[warp * kRows + g] = State::from_max_and_sum(m, l_run);
  }
#pragma unroll
  for (int mt = 0; mt < kSteps; ++mt) {
    float* w = sacc + warp * kRows * D + 16 * mt + g;
    w[(2 * c) * D] = acc[mt][0];
    w[(2 * c + 1) * D] = acc[mt][1];
    w[(2 * c) * D + 8] = acc[mt][2];
    w[(2 * c + 1) * D + 8] = acc[mt][3];
  }
  __syncthreads();
  if (threadIdx.x < kRows) {
    const int r = threadIdx.x, row = row_chunk * kRows + r;
    // The sink joins exactly once: here or in the merge.
    const bool has_sink = nsplit == 1 && a.sinks != nullptr && row < a.rows;
    const float sink_lse = has_sink ? a.sinks[(hk * a.group + row / a.sq) * a.sink_stride] : 0.0f;
    fold_groups<kWarps>(sst + r, kRows, has_sink, sink_lse, bad, coef + r * kWarps, slse[r], slive[r]);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kRows * D; e += kThreads) {
    const int r = e / D, x = e % D, row = row_chunk * kRows + r;
    if (row >= a.rows) break;  // rows grow with e
    float o = 0.0f;
    const unsigned live = slive[r];
#pragma unroll
    for (int i = 0; i < kWarps; ++i) {
      const float ci = coef[r * kWarps + i];
      // Only an empty warp is skipped (fold_groups): a live one whose ci underflows to 0 still adds 0·acc, so its NaN
      // or inf reaches O as on the CPU; a NaN ci (a bad row, a NaN sink) poisons.
      if (((live >> i) & 1u) || ci != ci) o += ci * sacc[(i * kRows + r) * D + x];
    }
    const int tok = row % a.sq, h = hk * a.group + row / a.sq;
    if (nsplit == 1) {
      store_out<T>(a, b, h, tok, x, o);
      if (x == 0) store_lse(a, b, h, tok, slse[r]);
    } else if constexpr (kCluster) {
      float* part = reinterpret_cast<float*>(smem + kPartOffset<D>);
      part[r * D + x] = o;
      if (x == 0) part[kRows * D + r] = slse[r];
    } else {
      const std::int64_t prow = ((b * a.hq + h) * a.sq + tok) * a.grid_splits + split;
      a.part_o[prow * D + x] = o;
      if (x == 0) a.part_lse[prow] = slse[r];
    }
  }
  if constexpr (kCluster) {
    if (nsplit > 1) merge_in_cluster<T, D>(a, b, hk, row_chunk, split, nsplit, reinterpret_cast<float*>(smem + kPartOffset<D>));
  } else if (nsplit > 1 && a.counters != nullptr) {
    float* stage = reinterpret_cast<float*>(smem);  // the ring and the fold are done with (merge_if_last syncs)
    merge_if_last<T, D>(a, b, hk, row_chunk, nsplit, stage);
  }
}

template <typename T, int D, int kStages, bool kCluster>
__global__ void __launch_bounds__(kWarps * 32) decode_mma_kernel(const DecodeArgs a) {
  decode_mma_body<T, D, kStages, kCluster, false>(a, nullptr, nullptr);
}
// The TMA variant (session 10, dec10): built for 2 ring stages only (the dispatcher's), sm_90+.
template <typename T, int D, bool kCluster>
__global__ void __launch_bounds__(kWarps * 32) decode_mma_tma_kernel(const DecodeArgs a,
                                                                     const __grid_constant__ DecodeMaps maps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  decode_mma_body<T, D, 2, kCluster, true>(a, &maps.k, &maps.v);
#else
  (void)a, (void)maps;
  __trap();  // never launched: the host takes the TMA path on sm_90+ only
#endif
}
// Session 17 (dec17): the cp.async kernel at 2 stages without clusters (the dispatcher's on grids of at most 3 blocks
// an SM) with the template flag set kTw (kTwWideQ above), beside the default kernel (kTw = 0, whose
// SASS the flags leave unchanged) for one binary's A/B; launched only while decode_mma_tweaks (decode_split.hpp) is set.
template <typename T, int D, unsigned kTw>
__global__ void __launch_bounds__(kWarps * 32) decode_mma_tw_kernel(const DecodeArgs a) {
  decode_mma_body<T, D, 2, false, false, kTw>(a, nullptr, nullptr);
}
template <typename T, int D, int kStages, bool kCluster, bool kTma, unsigned kTw = 0>
constexpr auto kernel_of() {
  if constexpr (kTw != 0) return decode_mma_tw_kernel<T, D, kTw>;
  else if constexpr (kTma) return decode_mma_tma_kernel<T, D, kCluster>;
  else return decode_mma_kernel<T, D, kStages, kCluster>;
}

template <typename T, int D, int kStages, bool kTma = false>
constexpr std::size_t smem_bytes() {
  constexpr std::size_t ring = kRingBytes<T, D, kStages>;
  constexpr std::size_t stage = std::size_t{kWarps} * kDecodeSplitLimit * D * sizeof(float);  // the fused merge's
  static_assert(stage <= ring, "the merge's staging fits in the ring: no more shared memory per block");
  static_assert(kPartEnd<D> <= ring, "the cluster merge's partials fit in the ring: no more shared memory per block");
  // TMA: the ring aligned to 1024 bytes, then the barriers (kTmaBarOffset): 65.1 KB at D = 128, still 3 blocks an SM.
  if constexpr (kTma) return kTmaBarOffset<T, D, kStages> + std::size_t{kWarps} * kStages * 8;
  return ring > kPartEnd<D> ? ring : kPartEnd<D>;
}

// The kernel's attributes on one device, set at its first launch there (cudaFuncSetAttribute costs host time on
// every call otherwise): the opt-in to the dynamic shared memory its launches ask for — its own bytes
// (smem_bytes: 64 KB at D = 128 with 2 stages, 96 KB with 3: under the 99 KB of sm_86/89), and kDecodeSpreadSmem only
// once a spread launch or its occupancy query needs it, on a device that allows that much a block (cudaDevAttr
// MaxSharedMemoryPerBlockOptin: 227 KB on the H200; 99 KB on sm_86/89, where asking for 116 KB would throw, as every
// launch did until session 6). The limit only ever grows, under a lock (a spread launch's limit must never be lowered
// by another thread's plain one), and the flags are read without it afterwards.
// Every ordinal device_attrs accepts is kept (it throws past kMaxDevices): with fewer kept, a plain call on an
// ordinal past them would set its own bytes under the lock and could lower a spread launch's limit between that
// launch's set and its launch (found in session 6's review).
constexpr int kDevicesKept = kMaxDevices;
template <typename T, int D, int kStages, bool kCluster, bool kTma = false, unsigned kTw = 0>
void attributes_set(int device, bool spread) {
  static std::atomic<int> level[kDevicesKept];  // 0: not set, 1: the kernel's own bytes, 2: the spread bytes
  static std::mutex mu;
  const int want = spread ? 2 : 1;
  const bool kept = device >= 0 && device < kDevicesKept;
  if (kept && level[device].load(std::memory_order_acquire) >= want) return;
  std::lock_guard<std::mutex> lock(mu);
  if (kept && level[device].load(std::memory_order_relaxed) >= want) return;
  auto* kernel = kernel_of<T, D, kStages, kCluster, kTma, kTw>();
  constexpr std::size_t own = smem_bytes<T, D, kStages, kTma>();
  const std::size_t bytes = spread && own < kDecodeSpreadSmem ? kDecodeSpreadSmem : own;
  SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (kCluster) SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  if (kept) level[device].store(want, std::memory_order_release);
}

// Whether this device can give one block kDecodeSpreadSmem bytes (a spread launch; else no spread cluster runs).
bool spread_fits(int device) {
  return static_cast<std::size_t>(device_attrs(device).max_smem_optin) >= kDecodeSpreadSmem;
}

// cluster: 0 for a plain launch, else the cluster's extent in x (grid_splits, at most kDecodeClusterMax; above the
// portable 8 the kernel must allow a non-portable size). spread: ask for kDecodeSpreadSmem bytes of shared memory, so
// that one block holds a multiprocessor and a cluster of 16 takes 16 of them (decode_common.cuh says why). pdl: a
// programmatic dependent launch (the caller asks only on sm_90+). attrs: room for two launch attributes.
template <typename T, int D, int kStages, bool kCluster, bool kTma = false, unsigned kTw = 0>
cudaLaunchConfig_t prepare(int device, dim3 grid, int cluster, bool spread, bool pdl, cudaStream_t s,
                           cudaLaunchAttribute* attrs) {
  constexpr std::size_t bytes = smem_bytes<T, D, kStages, kTma>();
  attributes_set<T, D, kStages, kCluster, kTma, kTw>(device, spread);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kWarps * 32);
  cfg.dynamicSmemBytes = spread && bytes < kDecodeSpreadSmem ? kDecodeSpreadSmem : bytes;
  cfg.stream = s;
  cfg.attrs = attrs;
  if (kCluster) {
    cudaLaunchAttribute& c = attrs[cfg.numAttrs++];
    c.id = cudaLaunchAttributeClusterDimension;
    c.val.clusterDim.x = static_cast<unsigned>(cluster);
    c.val.clusterDim.y = 1;
    c.val.clusterDim.z = 1;
  }
  if (pdl) {
    cudaLaunchAttribute& p = attrs[cfg.numAttrs++];
    p.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    p.val.programmaticStreamSerializationAllowed = 1;
  }
  return cfg;
}

// decode_mma_tweaks' setting (decode_split.hpp): kDecodeTweaksRule (the dispatcher's flags, kDecodeMmaTweaks) unless
// a benchmark or test sets it.
std::atomic<unsigned> g_tweaks{kDecodeTweaksRule};
std::atomic<std::uint64_t> g_tw_launches{0};
// The flags the dispatcher gives the cp.async launches at 2 stages without clusters at bf16 D = 128 (where they were
// measured; HEAD's kernel elsewhere): q's wide loads (kTwWideQ; dropped where q is not contiguous in aligned pairs).
// Session 17 (dec17; two H200 calls, 07:17 and 07:24 UTC 2026-12-01, bench_decode --dec17, 9 rounds of every variant
// in turn, 80 calls a sample after the 256 MB flush; docs/bench/dec17-s17-2026-12-01.md), µs of HEAD's kernel / wide
// q forced / (second call) the dispatcher with this rule: (1, 32768) 52.1 / 51.8 and 52.1 / 51.6 / 51.7, (1, 131072)
// 140.1 / 139.8 and 139.9 / 139.5 / 139.6, 64/8 54.7 / 54.5 and 54.7 / 54.2 / 54.3, (1, 8192) 26.8 / 26.4 and
// 26.7 / 26.2 / 26.4, 64 × 4096 268.5 / 267.3 and 268.4 / 267.1 / 267.1, 8 × 2048 33.9 / 33.4 and 33.8 / 33.5 /
// 33.3, 16 × 1024 30.6 / 30.1 and 30.5 / 30.5 / 30.0: 1.002-1.021x in 20 of the 21 comparisons (0.998x in one), the
// same bits. The control, a byte-identical copy of HEAD's kernel under another name (kTwCopy, in 7f9f852), read
// 0.984-1.006x against it in the second call, so the gain (0.1-0.5 µs a call, 1.2 at 64 × 4096) is at the method's
// resolution on the long rows and above it on the short ones. Not kept (removed; commit 7f9f852 has them): the ramp's prefetches
// (0.982-0.999x), the one atomic (1.002-1.017x, but 0.985x and 1.000x at 16 × 1024, where nothing merges and its code
// never runs: within the control's spread), and all three (0.992-0.993x at 64 × 4096).
constexpr unsigned kDecodeMmaTweaks = kTwWideQ;

template <typename T, int D, unsigned kTw>
void launch_tw(const DecodeArgs& a, dim3 grid, int device, bool pdl, cudaStream_t s) {
  cudaLaunchAttribute attrs[2]{};
  const cudaLaunchConfig_t cfg = prepare<T, D, 2, false, false, kTw>(device, grid, 0, false, pdl, s, attrs);
  SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_mma_tw_kernel<T, D, kTw>, a));
  SMK_CUDA_CHECK_LAUNCH("decode_mma_tw_kernel");
  g_tw_launches.fetch_add(1, std::memory_order_relaxed);
}
// The flag sets built: wide q (2) at bf16 D = 128 (where it was measured). Returns false where tw is not built.
template <typename T, int D>
bool launch_tweaked(const DecodeArgs& a, unsigned tw, dim3 grid, int device, bool pdl, cudaStream_t s) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && D == 128) {
    if (tw == kTwWideQ) {
      launch_tw<T, D, kTwWideQ>(a, grid, device, pdl, s);
      return true;
    }
  }
  return false;
}

template <typename T, int D, int kStages>
void launch(const DecodeArgs& a, dim3 grid, int cluster, bool spread, int device, bool pdl, cudaStream_t s,
            const DecodeMaps* maps) {
  cudaLaunchAttribute attrs[2]{};
  if constexpr (kStages == 2) {
    unsigned tw = g_tweaks.load(std::memory_order_relaxed);
    if (tw == kDecodeTweaksRule) tw = std::is_same_v<T, __nv_bfloat16> && D == 128 ? kDecodeMmaTweaks : 0u;
    // Wide q needs q's pairs as aligned 32-bit words: contiguous along D, even strides, a 4-byte aligned start.
    const bool q_pairs = a.qs[3] == 1 && (a.qs[0] | a.qs[1] | a.qs[2]) % 2 == 0 &&
                         reinterpret_cast<std::uintptr_t>(a.q) % 4 == 0;
    if (!q_pairs) tw &= ~kTwWideQ;
    if (tw != 0 && maps == nullptr && cluster == 0) {
      if (!launch_tweaked<T, D>(a, tw, grid, device, pdl, s))
        throw_unsupported("attention_decode", "decode_mma_tweaks: flag set " + std::to_string(tw) + " not built here");
      return;
    }
  }
  if constexpr (kStages == 2) {
    if (maps != nullptr) {
      if (cluster > 0) {
        const cudaLaunchConfig_t cfg = prepare<T, D, 2, true, true>(device, grid, cluster, spread, pdl, s, attrs);
        SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_mma_tma_kernel<T, D, true>, a, *maps));
      } else {
        const cudaLaunchConfig_t cfg = prepare<T, D, 2, false, true>(device, grid, 0, spread, pdl, s, attrs);
        SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_mma_tma_kernel<T, D, false>, a, *maps));
      }
      SMK_CUDA_CHECK_LAUNCH("decode_mma_tma_kernel");
      return;
    }
  }
  if (cluster > 0) {
    const cudaLaunchConfig_t cfg = prepare<T, D, kStages, true>(device, grid, cluster, spread, pdl, s, attrs);
    SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_mma_kernel<T, D, kStages, true>, a));
  } else {
    const cudaLaunchConfig_t cfg = prepare<T, D, kStages, false>(device, grid, 0, spread, pdl, s, attrs);
    SMK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, decode_mma_kernel<T, D, kStages, false>, a));
  }
  SMK_CUDA_CHECK_LAUNCH("decode_mma_kernel");
}

// How many clusters of `cluster` blocks of this kernel the device runs at once (0: none, or no clusters, or no room
// for a spread block): asked once per device (the first kDevicesKept ordinals), size and spread, the answer kept for
// the process.
template <typename T, int D, int kStages>
int active_clusters(int device, int cluster, bool spread) {
  static std::atomic<int> known[kDevicesKept][kDecodeClusterMax + 1][2];  // the answer + 1; 0: not asked yet
  std::atomic<int>* slot = device >= 0 && device < kDevicesKept ? &known[device][cluster][spread ? 1 : 0] : nullptr;
  if (slot != nullptr) {
    const int k = slot->load(std::memory_order_relaxed);
    if (k != 0) return k - 1;
  }
  int active = 0;
  if (device_attrs(device).cc_major >= 9 && (!spread || spread_fits(device))) {
    cudaLaunchAttribute attrs[2]{};
    const cudaLaunchConfig_t cfg =
        prepare<T, D, kStages, true>(device, dim3(cluster), cluster, spread, false, nullptr, attrs);
    if (cudaOccupancyMaxActiveClusters(&active, decode_mma_kernel<T, D, kStages, true>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();  // not a sticky error: this size is refused, the atomic merge serves
      active = 0;
    }
  }
  if (slot != nullptr) slot->store(active + 1, std::memory_order_relaxed);
  return active;
}

template <typename T>
void launch_d(const DecodeArgs& a, int d, int stages, dim3 grid, int cluster, bool spread, int device, bool pdl,
              cudaStream_t s, const DecodeMaps* maps) {
  if (d == 64) {
    stages == 2 ? launch<T, 64, 2>(a, grid, cluster, spread, device, pdl, s, maps)
                : launch<T, 64, 3>(a, grid, cluster, spread, device, pdl, s, nullptr);
  } else {
    stages == 2 ? launch<T, 128, 2>(a, grid, cluster, spread, device, pdl, s, maps)
                : launch<T, 128, 3>(a, grid, cluster, spread, device, pdl, s, nullptr);
  }
}

std::atomic<std::uint64_t> g_tma_launches{0};

template <typename T>
int active_d(int device, int d, int stages, int cluster, bool spread) {
  if (d == 64)
    return stages == 2 ? active_clusters<T, 64, 2>(device, cluster, spread)
                       : active_clusters<T, 64, 3>(device, cluster, spread);
  return stages == 2 ? active_clusters<T, 128, 2>(device, cluster, spread)
                     : active_clusters<T, 128, 3>(device, cluster, spread);
}

}  // namespace

bool launch_decode_mma(const DecodeArgs& a, bool bf16, int d, int stages, dim3 grid, int cluster, bool spread,
                       int device, bool pdl, cudaStream_t s, bool tma, std::int64_t batch, std::int64_t hkv) {
  DecodeMaps maps{};
  const bool use_tma = tma && stages == 2 && device_attrs(device).cc_major >= 9 &&
                       encode_bshd(&maps.k, a.k, bf16, batch, a.s_max, hkv, d, a.ks[0], a.ks[1], a.ks[2], kKeys) &&
                       encode_bshd(&maps.v, a.v, bf16, batch, a.s_max, hkv, d, a.vs[0], a.vs[1], a.vs[2], kKeys);
  const DecodeMaps* m = use_tma ? &maps : nullptr;
  if (bf16) launch_d<__nv_bfloat16>(a, d, stages, grid, cluster, spread, device, pdl, s, m);
  else launch_d<__half>(a, d, stages, grid, cluster, spread, device, pdl, s, m);
  if (use_tma) g_tma_launches.fetch_add(1, std::memory_order_relaxed);
  return use_tma;
}

std::uint64_t decode_tma_launches() { return g_tma_launches.load(std::memory_order_relaxed); }

unsigned decode_mma_tweaks(unsigned bits) { return g_tweaks.exchange(bits, std::memory_order_relaxed); }
std::uint64_t decode_tw_launches() { return g_tw_launches.load(std::memory_order_relaxed); }

int decode_mma_active_clusters(int device, bool bf16, int d, int stages, int cluster, bool spread) {
  if (cluster < 2 || cluster > kDecodeClusterMax) return 0;
  return bf16 ? active_d<__nv_bfloat16>(device, d, stages, cluster, spread)
              : active_d<__half>(device, d, stages, cluster, spread);
}

}  // namespace smk::cuda
