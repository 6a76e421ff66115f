// softmaxkit (internal): the arguments both prefill kernels take (src/cuda/attention/prefill.cu, mma.sync, and
// prefill_wgmma.cu, wgmma), filled once by attention_forward in prefill.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace smk::cuda {

struct PrefillArgs {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;            // null: not wanted
  const float* sinks;    // null: none
  std::int64_t sinks_stride;
  const int* cu_q;       // varlen cumulative offsets (device), or null
  const int* cu_k;
  // Element strides of (batch, sequence, head); the head dimension is contiguous. Varlen: batch strides are 0 and
  // rows are addressed from the sequence's cumulative offset.
  std::int64_t q_b, q_s, q_h, k_b, k_s, k_h, v_b, v_s, v_h, o_b, o_s, o_h;
  std::int64_t lse_b, lse_h, lse_s;
  std::int64_t sq, sk;   // per-sequence lengths (not varlen)
  int group;             // Hq / Hkv
  int causal;
  float scale_log2;      // softmax scale · log2(e), finite (attention_forward checks)
  int fold;              // 1: p = 2^(s·scale_log2 − m) as one FFMA, the max on raw scores (needs scale_log2 > 0)
  int o_smem;            // 1: O through shared memory, 16-byte stores (mma.sync kernel only)
  int skip_rescale;      // 1: skip O's rescale when no row maximum of the 16-row tile moved
  int pin;               // 1: the wgmma kernel's build with the softmax pinned ahead of the P·V wait, where one is
                         // built (prefill_wgmma.cu, kPin)
  // The causal schedule (session 9, pfx9; prefill_block): 0, the grid is (query blocks, heads, batch); > 0, a 1-D
  // grid of grid_tiles · grid_heads · batch CTAs walking chunks of (batch, head) pairs, heaviest query block first
  // across a chunk's heads: the first chunk_big chunks hold chunk_heads + 1 pairs, the rest chunk_heads.
  // attention_forward sets chunk_heads = 1 to ask for it; prefill_wgmma.cu's launch sizes the chunks.
  int chunk_heads;
  int chunk_big;
  int grid_heads;          // Hq (chunk_heads > 0)
  std::int64_t grid_tiles;  // query blocks of the longest sequence (chunk_heads > 0)
  int trim;  // 1: wgmma kernel, 128-key tiles: a causal diagonal tile whose upper 64 keys no row of a warpgroup sees
             // is multiplied over its lower 64 keys only by that warpgroup (prefill_wgmma.cu says why)
};

#if defined(__CUDACC__)
// Where a CTA of either kernel stands (grid: x the query blocks of kBlockM rows, heaviest causal block first, since
// the last query rows see the most keys; y the query head; z the batch entry or varlen sequence; or, with
// a.chunk_heads, the 1-D causal schedule below): its sequence's lengths, its first query row, the keys visible to
// some row of it and its global base pointers.
// The causal schedule: CTAs start in launch order, one an SM at D = 128, and under a causal mask the query block
// from the end of a sequence has up to S / kBlockM times the work of the first. The (x, y, z) grid walks each head's
// blocks heaviest first, but a head's blocks are few against 132 SMs (32 at S = 4096), so heavy blocks of the last
// heads still start late and the call ends on a tail. chunk_heads > 0 walks chunk_heads consecutive (batch, head)
// pairs at a time, query block by query block from the heaviest, across the chunk's heads: the light blocks of one
// chunk fill the SMs beside the next chunk's heavy ones, and only the last chunk's lightest blocks end the call,
// while the keys in flight stay those of about two chunks (L2). The host sizes a chunk at about two waves of CTAs
// (prefill.cu). Which CTA computes which rows is all that changes: every CTA's bits are the same either way.
template <typename T>
struct PrefillBlock {
  std::int64_t m0;      // the CTA's first query row within its sequence
  std::int64_t q0;      // the sequence's first row in packed (varlen) Q and O; 0 otherwise
  std::int64_t sq, sk;  // the sequence's query and key lengths
  std::int64_t kend;    // keys [0, kend) are visible to some row of the CTA (causal: row i sees keys j ≤ i + Sk − Sq)
  int q_rows;           // the CTA's query rows within the sequence (≤ kBlockM)
  int b, h;             // the batch entry (or varlen sequence) and the query head
  int hk;               // the KV head of query head h
  const T* qg;          // Q row m0 of the CTA's head
  const T* kg;          // K and V row 0 of the sequence, head hk
  const T* vg;
};
// False when the CTA has no query row (a varlen sequence shorter than the longest): the kernel returns at once.
template <typename T>
__device__ __forceinline__ bool prefill_block(const PrefillArgs& a, std::int64_t block_m, PrefillBlock<T>& p) {
  int b = static_cast<int>(blockIdx.z), h = static_cast<int>(blockIdx.y);
  std::int64_t from_top = blockIdx.x, tiles = gridDim.x;  // the query block, counted from the heaviest
  if (a.chunk_heads > 0) {
    // The chunk of CTA L: chunk_big chunks of chunk_heads + 1 pairs, then chunks of chunk_heads.
    tiles = a.grid_tiles;
    const std::int64_t L = blockIdx.x, big = (a.chunk_heads + 1) * tiles, in_big = a.chunk_big * big;
    std::int64_t first, heads, r;  // the chunk's first pair and its pairs; L's place in it
    if (L < in_big) {
      heads = a.chunk_heads + 1, first = L / big * heads, r = L % big;
    } else {
      heads = a.chunk_heads;
      first = a.chunk_big * (heads + 1) + (L - in_big) / (heads * tiles) * heads, r = (L - in_big) % (heads * tiles);
    }
    from_top = r / heads;
    const std::int64_t pair = first + r % heads;  // b · Hq + h: a chunk's heads are consecutive
    b = static_cast<int>(pair / a.grid_heads);
    h = static_cast<int>(pair % a.grid_heads);
  }
  p.b = b, p.h = h;
  p.m0 = (tiles - 1 - from_top) * block_m;
  std::int64_t k0 = 0;
  p.q0 = 0, p.sq = a.sq, p.sk = a.sk;
  if (a.cu_q) {
    p.q0 = a.cu_q[b];
    p.sq = a.cu_q[b + 1] - p.q0;
    k0 = a.cu_k[b];
    p.sk = a.cu_k[b + 1] - k0;
  }
  if (p.m0 >= p.sq) return false;
  p.hk = h / a.group;
  p.qg = static_cast<const T*>(a.q) + b * a.q_b + (p.q0 + p.m0) * a.q_s + h * a.q_h;
  p.kg = static_cast<const T*>(a.k) + b * a.k_b + k0 * a.k_s + p.hk * a.k_h;
  p.vg = static_cast<const T*>(a.v) + b * a.v_b + k0 * a.v_s + p.hk * a.v_h;
  p.q_rows = static_cast<int>(p.sq - p.m0 < block_m ? p.sq - p.m0 : block_m);
  p.kend = p.sk;
  if (a.causal) {
    const std::int64_t last = p.m0 + p.q_rows - 1 + p.sk - p.sq + 1;
    p.kend = last < 0 ? 0 : (last < p.sk ? last : p.sk);
  }
  return true;
}
#endif

// The wgmma kernel (prefill_wgmma.cu) for head dimension d (64 or 128), `warps` 4 or 8 (one or two consumer
// warpgroups of 64 query rows) or 9 (two, and a producer warpgroup: TMA only) and key tiles of block_n (64 or 128), f16
// (bf16 = false) or bf16; false if that combination is not built. Needs an sm_90a build and a compute-capability
// 9.0 device (prefill_wgmma_available).
// tma: Q, K and V by the tensor memory accelerator (not for varlen: false then) instead of every thread's cp.async.
bool prefill_wgmma_launch(bool bf16, int d, int warps, int block_n, bool tma, const PrefillArgs& a,
                          std::int64_t batch, std::int64_t hq, std::int64_t max_sq, cudaStream_t stream);
// True when this build holds the sm_90a code of the wgmma kernel and `device` is compute capability 9.0.
bool prefill_wgmma_available(int device);
// Session 15 (pfx15), for tune_prefill and test_prefill: the form of the wgmma kernel's tile loop that later launches
// take, process-wide (not for concurrent callers): 0 the default (prefill_wgmma.cu's kPrefillWgmmaOverlapForm: 2;
// kPrefillWgmmaOverlapFormCausal: 4 under a causal mask), 1 P·V of tile j − 1 done before tile j's softmax (the
// kernel before session 15), 2 P·V under the softmax (built for the D = 128 TMA default: warps 9, 128-key tiles;
// other variants run their usual build), 4 (session 16, pfx16) form 2 with each warpgroup's first causal crossing
// tile under the overlap too (kOvDiag; the same build only). Every form gives the same bits.
void prefill_wgmma_set_pv_form(int form);
// Overlap kernels (forms 2 and 4) launched so far in this process (a test's proof that the form it asked for ran),
// and of them those of form 4.
std::int64_t prefill_wgmma_overlap_launches();
std::int64_t prefill_wgmma_ov_diag_launches();

}  // namespace smk::cuda
