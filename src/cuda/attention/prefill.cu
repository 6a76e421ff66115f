// softmaxkit: attention_forward on the GPU, issue 7 stage 1: the FlashAttention-2 recurrence on the tensor cores
// (mma.sync m16n8k16, ldmatrix, cp.async), f16/bf16 in, f32 accumulation, O in the input dtype and the f32 LSE.
//
// Work and traffic. Per (batch, head) with S query and S key rows of D elements: 4·S²·D flops (S = Q·Kᵀ and O = P·V,
// halved under a causal mask) against (2 + 2·S/Br)·S·D·2 bytes (Q read and O written once, K and V read once per
// block of Br query rows, mostly from L2). At S = 4096, D = 128 that is ≈ 1000 flops per byte of DRAM traffic: far
// past the H200's ridge point (≈ 790 TFLOP/s dense bf16 / 4.8 TB/s ≈ 165), so the floor is the tensor cores', and
// mma.sync reaches about two thirds of the wgmma peak (FlashAttention-2 on Hopper: ≈ 350 TFLOP/s; our anchor,
// ../shared/ANCHORS.md: SDPA FLASH 346, cuDNN 597 at B=4, H=32, S=4096, D=128).
//
// Structure (one CTA = Br = 16·kWarps·kMT query rows of one (batch, head); each warp owns 16·kMT rows):
//   Q tile → shared (cp.async) → registers as A fragments, once.
//   for each key tile of Bc = 64 rows (K and V double-buffered in shared memory, the next tile's cp.async in flight
//   while this one is used):
//     S = Q·Kᵀ (K rows are the B operand as stored: ldmatrix without .trans);
//     mask (key ≥ Sk, or causal key > row + Sk − Sq) → −inf, only on tiles that need it;
//     the online softmax per row (running max m, running sum l, accumulator O rescaled by e^{m_old − m_new}), in
//     base 2: scores are scaled by scale·log2(e) first (before the max, so a negative scale is handled), then
//     p = 2^(s − m) on the special-function unit;
//     O += P·V with P straight from the S registers (the C layout of two 8-column tiles is the A layout of one
//     16-column tile) and V through ldmatrix.trans.
//   The final (m, l) becomes an OnlineSoftmaxState, which merges the sink (if any), gives the LSE, and the factor
//   that normalises O — the same state algebra as every other op.
// Shared tiles are [rows][D] with 16-byte chunks XOR-swizzled by row (chunk ^ row % 8), so the 8 row addresses of
// every ldmatrix phase hit 8 different bank groups.
//
// NaN and padding: keys at or past the sequence's end are never read (cp.async zero-fills them) and a masked score
// is set to −inf whatever K held. One case leaks: within the tile on the causal diagonal, a non-finite V row that a
// later query row may see is multiplied by P = 0 for an earlier row that may not, and 0·NaN = NaN. Keys that no row
// of the CTA can see are never loaded. (The CPU path never reads a masked key at all.)
//
// Measured on the H200: see docs/perf-notebook.md ("attention prefill, stage 1").
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/ptx.cuh"
#include "cuda/device_guard.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

constexpr int kBlockN = 64;  // keys per tile: 8 n-tiles of the S product, 4 k-steps of P·V
constexpr float kLn2 = 0.6931471805599453f;  // base-2 units back to natural ones

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
  float scale_log2;      // softmax scale · log2(e)
};

// Shared-memory element offset of (row, col) in a [rows][D] tile with XOR-swizzled 16-byte chunks.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies `valid` rows (≤ rows) of a [rows][D] tile from global (row stride `stride` elements) into shared memory,
// zero-filling the rest without reading them.
template <typename T, int D, int kRows, int kThreads>
__device__ __forceinline__ void load_tile(T* s, const T* g, std::int64_t stride, int valid) {
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < kRows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool ok = r < valid;
    ptx::cp_async_16(ptx::smem_addr(s + swz<D>(r, c)), ok ? g + r * stride + c : g, ok ? 16 : 0);
  }
}

// kMT: 16-row m-tiles per warp. With 2, every K and V fragment read from shared memory feeds two products (half
// the shared traffic per flop, FlashAttention-2's arrangement); Q then stays in registers only at D = 64 (at D = 128
// it is re-read from shared memory per k-step, to stay under 255 registers).
template <typename T, int D, int kWarps, int kMT>
__global__ void __launch_bounds__(kWarps * 32) prefill_kernel(const PrefillArgs a) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kBlockM = 16 * kWarps * kMT;
  constexpr int kNT = kBlockN / 8;  // n-tiles of S
  constexpr int kDT = D / 8;        // n-tiles of O
  constexpr bool kQInRegs = kMT == 1 || D == 64;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  // Buffers by arithmetic, not by a pointer array a run-time index would move to local memory.
  T* const sK0 = sQ + kBlockM * D;  // K tile of buffer i at sK0 + i·kTile, V's at sV0 + i·kTile
  T* const sV0 = sK0 + 2 * kBlockN * D;
  constexpr int kTile = kBlockN * D;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int b = blockIdx.z, h = blockIdx.y;
  // Heavy (causal) tiles first: the last query tiles see the most keys.
  const std::int64_t m0 = static_cast<std::int64_t>(gridDim.x - 1 - blockIdx.x) * kBlockM;
  std::int64_t q0 = 0, k0 = 0, sq = a.sq, sk = a.sk;
  if (a.cu_q) {
    q0 = a.cu_q[b];
    sq = a.cu_q[b + 1] - q0;
    k0 = a.cu_k[b];
    sk = a.cu_k[b + 1] - k0;
  }
  if (m0 >= sq) return;
  const int hk = h / a.group;
  const T* qg = static_cast<const T*>(a.q) + b * a.q_b + (q0 + m0) * a.q_s + h * a.q_h;
  const T* kg = static_cast<const T*>(a.k) + b * a.k_b + k0 * a.k_s + hk * a.k_h;
  const T* vg = static_cast<const T*>(a.v) + b * a.v_b + k0 * a.v_s + hk * a.v_h;
  const int q_rows = static_cast<int>(sq - m0 < kBlockM ? sq - m0 : kBlockM);

  // Keys visible to some row of this CTA: [0, kend). Causal: row i sees keys j ≤ i + Sk − Sq.
  std::int64_t kend = sk;
  if (a.causal) {
    const std::int64_t last = m0 + q_rows - 1 + sk - sq + 1;
    kend = last < 0 ? 0 : (last < sk ? last : sk);
  }
  const int n_tiles = static_cast<int>((kend + kBlockN - 1) / kBlockN);

  load_tile<T, D, kBlockM, kThreads>(sQ, qg, a.q_s, q_rows);
  if (n_tiles > 0) {
    const int valid = static_cast<int>(kend < kBlockN ? kend : kBlockN);
    load_tile<T, D, kBlockN, kThreads>(sK0, kg, a.k_s, valid);
    load_tile<T, D, kBlockN, kThreads>(sV0, vg, a.v_s, valid);
  }
  ptx::cp_async_commit();

  // This thread's rows: m-tile mt, half r → warp·16·kMT + mt·16 + g + 8r (within the CTA), and their state.
  const int wrow = warp * 16 * kMT;
  float m_run[kMT][2], l_run[kMT][2];  // l_run: this thread's partial sums; the quad's are added at the end
  float acc[kMT][kDT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.0f;
#pragma unroll
    for (int t = 0; t < kDT; ++t) acc[mt][t][0] = acc[mt][t][1] = acc[mt][t][2] = acc[mt][t][3] = 0.0f;
  }
  std::uint32_t qf[kQInRegs ? kMT : 1][kQInRegs ? D / 16 : 1][4];
  const auto q_frag = [&](std::uint32_t(&f)[4], int mt, int kk) {
    ptx::ldmatrix_x4(f, ptx::smem_addr(sQ + swz<D>(wrow + mt * 16 + lane % 16, kk * 16 + (lane / 16) * 8)));
  };

  for (int j = 0; j < n_tiles; ++j) {
    const int buf = j & 1;
    if (j + 1 < n_tiles) {
      const std::int64_t n1 = static_cast<std::int64_t>(j + 1) * kBlockN;
      const int valid = static_cast<int>(kend - n1 < kBlockN ? kend - n1 : kBlockN);
      load_tile<T, D, kBlockN, kThreads>(sK0 + (buf ^ 1) * kTile, kg + n1 * a.k_s, a.k_s, valid);
      load_tile<T, D, kBlockN, kThreads>(sV0 + (buf ^ 1) * kTile, vg + n1 * a.v_s, a.v_s, valid);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();  // everything but the tile just requested has landed
    __syncthreads();
    if constexpr (kQInRegs) {
      if (j == 0) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) q_frag(qf[mt][kk], mt, kk);
      }
    }

    // S = Q·Kᵀ for this warp's rows and the tile's 64 keys.
    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int t = 0; t < kNT; ++t) s[mt][t][0] = s[mt][t][1] = s[mt][t][2] = s[mt][t][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t qk[kQInRegs ? 1 : kMT][4];
      if constexpr (!kQInRegs) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) q_frag(qk[mt], mt, kk);
      }
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        std::uint32_t bf[4];
        const int mi = lane / 8;
        ptx::ldmatrix_x4(bf, ptx::smem_addr(sK0 + buf * kTile + swz<D>(np * 16 + (mi / 2) * 8 + lane % 8, kk * 16 + (mi % 2) * 8)));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          if constexpr (kQInRegs) {
            ptx::mma_16816<T>(s[mt][2 * np], qf[mt][kk], bf[0], bf[1]);
            ptx::mma_16816<T>(s[mt][2 * np + 1], qf[mt][kk], bf[2], bf[3]);
          } else {
            ptx::mma_16816<T>(s[mt][2 * np], qk[mt], bf[0], bf[1]);
            ptx::mma_16816<T>(s[mt][2 * np + 1], qk[mt], bf[2], bf[3]);
          }
        }
      }
    }

    const std::int64_t n0 = static_cast<std::int64_t>(j) * kBlockN;
    const bool edge = n0 + kBlockN > sk || (a.causal && n0 + kBlockN - 1 > m0 + sk - sq);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      // Scores in base-2 units, s·scale·log2(e), before the max: a negative scale flips which key is largest.
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][t][e] *= a.scale_log2;

      // Mask the keys past the end and, under causal, past each row's diagonal.
      if (edge) {
        const std::int64_t row0 = m0 + wrow + mt * 16 + g;
        const std::int64_t lim0 = a.causal ? row0 + sk - sq : sk - 1, lim1 = a.causal ? row0 + 8 + sk - sq : sk - 1;
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const std::int64_t key = n0 + t * 8 + 2 * c + e;
            if (key >= sk || key > lim0) s[mt][t][e] = -INFINITY;
            if (key >= sk || key > lim1) s[mt][t][2 + e] = -INFINITY;
          }
        }
      }

      // Online softmax: new row maxima (over the quad), rescale, exponentiate.
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = m_run[mt][r];
#pragma unroll
        for (int t = 0; t < kNT; ++t) mx = fmaxf(mx, fmaxf(s[mt][t][2 * r], s[mt][t][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row that has seen only −inf keeps max −inf; shift by 0 then, so that exp(−inf − 0) = 0, never NaN.
        const float shift = mx == -INFINITY ? 0.0f : mx;
        const float alpha = ptx::exp2_approx(m_run[mt][r] - shift);  // m_run = −inf: 0
        m_run[mt][r] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int t = 0; t < kNT; ++t) {
          s[mt][t][2 * r] = ptx::exp2_approx(s[mt][t][2 * r] - shift);
          s[mt][t][2 * r + 1] = ptx::exp2_approx(s[mt][t][2 * r + 1] - shift);
          sum += s[mt][t][2 * r] + s[mt][t][2 * r + 1];
        }
        l_run[mt][r] = l_run[mt][r] * alpha + sum;
#pragma unroll
        for (int t = 0; t < kDT; ++t) {
          acc[mt][t][2 * r] *= alpha;
          acc[mt][t][2 * r + 1] *= alpha;
        }
      }
    }

    // O += P·V: P from the S registers, V through ldmatrix.trans (each V fragment feeds every m-tile).
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      std::uint32_t pa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        pa[mt][0] = ptx::pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = ptx::pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = ptx::pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = ptx::pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < kDT / 2; ++dp) {
        std::uint32_t bf[4];
        const int mi = lane / 8;
        ptx::ldmatrix_x4_trans(bf, ptx::smem_addr(sV0 + buf * kTile + swz<D>(kk * 16 + (mi % 2) * 8 + lane % 8, dp * 16 + (mi / 2) * 8)));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          ptx::mma_16816<T>(acc[mt][2 * dp], pa[mt], bf[0], bf[1]);
          ptx::mma_16816<T>(acc[mt][2 * dp + 1], pa[mt], bf[2], bf[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before the next iteration's copy overwrites it
  }

  // Finish: quad sums, the state (with the sink), O normalised once, the LSE.
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      auto st = OnlineSoftmaxState<float>::from_max_and_sum(m_run[mt][r] * kLn2, l);
      float w = 1.0f;
      if (a.sinks) {
        const auto sink = OnlineSoftmaxState<float>::from_lse(a.sinks[h * a.sinks_stride]);
        w = st.merge_weights(sink).self;
        st.merge(sink);
      }
      const float factor = st.is_empty() ? 0.0f : w * st.normalizer(EmptyRowPolicy::zeros).inv_sum;
      const std::int64_t row = m0 + wrow + mt * 16 + g + 8 * r;
      if (row >= sq) continue;
      T* og = static_cast<T*>(a.o) + b * a.o_b + (q0 + row) * a.o_s + h * a.o_h;
#pragma unroll
      for (int t = 0; t < kDT; ++t)
        *reinterpret_cast<std::uint32_t*>(og + t * 8 + 2 * c) =
            ptx::pack2<T>(acc[mt][t][2 * r] * factor, acc[mt][t][2 * r + 1] * factor);
      if (a.lse && c == 0) a.lse[b * a.lse_b + h * a.lse_h + (q0 + row) * a.lse_s] = st.lse();
    }
  }
}

template <typename T, int D, int kWarps, int kMT>
void launch(const PrefillArgs& a, std::int64_t batch, std::int64_t hq, std::int64_t q_tiles, cudaStream_t stream) {
  constexpr int kBlockM = 16 * kWarps * kMT;
  constexpr int smem = (kBlockM + 4 * kBlockN) * D * static_cast<int>(sizeof(T));
  auto* kernel = prefill_kernel<T, D, kWarps, kMT>;
  SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(hq), static_cast<unsigned>(batch));
  kernel<<<grid, kWarps * 32, smem, stream>>>(a);
  SMK_CUDA_CHECK_LAUNCH("prefill_kernel");
}

template <typename T, int D>
void launch_config(int warps, int m_tiles, const PrefillArgs& a, std::int64_t batch, std::int64_t hq,
                   std::int64_t q_tiles, cudaStream_t stream) {
  if (warps == 4) {
    m_tiles == 1 ? launch<T, D, 4, 1>(a, batch, hq, q_tiles, stream) : launch<T, D, 4, 2>(a, batch, hq, q_tiles, stream);
  } else {
    m_tiles == 1 ? launch<T, D, 8, 1>(a, batch, hq, q_tiles, stream) : launch<T, D, 8, 2>(a, batch, hq, q_tiles, stream);
  }
}

bool aligned16(const TensorView& t) {
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0) return false;
  for (int d = 0; d + 1 < t.rank; ++d)
    if (t.strides[d] % 8 != 0 && t.shape[d] > 1) return false;
  return t.strides[t.rank - 1] == 1 || t.shape[t.rank - 1] == 1;
}

}  // namespace

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& o, bool varlen, std::int64_t batch,
                       std::int64_t sq, std::int64_t sk, double scale, const PrefillConfig& config, Stream stream) {
  const char* op = "attention_forward";
  if (q.dtype != DType::f16 && q.dtype != DType::bf16)
    throw_unsupported(op, "runs on the GPU's tensor cores for f16 and bf16 only, got q of dtype " +
                              std::string(dtype_name(q.dtype)) + "; convert, or run it on the CPU");
  const int rank = q.rank;
  const std::int64_t hq = q.shape[rank - 2], hkv = k.shape[rank - 2], d = q.shape[rank - 1];
  if (d != 64 && d != 128)
    throw_unsupported(op, "the GPU kernel supports head dimensions 64 and 128, got " + std::to_string(d));
  for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}, {"out", &out}})
    if (t->data && !aligned16(*t))
      throw_unsupported(op, std::string("the GPU kernel needs `") + name +
                                "` with a contiguous head dimension, a 16-byte-aligned base and strides that are "
                                "multiples of 8 elements; pass a contiguous copy");
  if (batch == 0 || hq == 0 || sq == 0) return;
  PrefillArgs a{};
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.o = out.data;
  a.lse = static_cast<float*>(lse.data);
  a.sinks = static_cast<const float*>(o.sinks.data);
  a.sinks_stride = o.sinks.data ? o.sinks.strides[0] : 0;
  a.group = static_cast<int>(hq / hkv);
  a.causal = o.causal ? 1 : 0;
  a.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  std::int64_t max_sq = sq;
  if (varlen) {
    a.cu_q = static_cast<const int*>(o.cu_seqlens_q.data);
    a.cu_k = static_cast<const int*>(o.cu_seqlens_k.data);
    // [total, H, D]: sequence stride 0, head 1, rows from the cumulative offsets; lse [Hq, total].
    a.q_s = q.strides[0], a.q_h = q.strides[1];
    a.k_s = k.strides[0], a.k_h = k.strides[1];
    a.v_s = v.strides[0], a.v_h = v.strides[1];
    a.o_s = out.strides[0], a.o_h = out.strides[1];
    if (lse.data) a.lse_h = lse.strides[0], a.lse_s = lse.strides[1];
    // Without max_seqlen the grid covers the whole packed batch per sequence; CTAs past their sequence's end
    // return at once (a few microseconds for thousands of them).
    max_sq = sq;
  } else {
    a.q_b = q.strides[0], a.q_s = q.strides[1], a.q_h = q.strides[2];
    a.k_b = k.strides[0], a.k_s = k.strides[1], a.k_h = k.strides[2];
    a.v_b = v.strides[0], a.v_s = v.strides[1], a.v_h = v.strides[2];
    a.o_b = out.strides[0], a.o_s = out.strides[1], a.o_h = out.strides[2];
    if (lse.data) a.lse_b = lse.strides[0], a.lse_h = lse.strides[1], a.lse_s = lse.strides[2];
    a.sq = sq;
    a.sk = sk;
  }
  DeviceGuard guard(q.device.index);
  const auto s = static_cast<cudaStream_t>(stream.handle);
  const bool d64 = d == 64;
  const int warps = config.warps != 0 ? config.warps : (d64 ? kPrefillWarpsD64 : kPrefillWarpsD128);
  const int m_tiles = config.m_tiles != 0 ? config.m_tiles : (d64 ? kPrefillMTilesD64 : kPrefillMTilesD128);
  if (warps != 4 && warps != 8) throw_invalid_argument(op, "config.warps", "must be 4 or 8");
  if (m_tiles != 1 && m_tiles != 2) throw_invalid_argument(op, "config.m_tiles", "must be 1 or 2");
  const std::int64_t rows = 16 * warps * m_tiles;
  const std::int64_t tiles = (max_sq + rows - 1) / rows;
  if (tiles > 0x7fffffff || batch > 65535 || hq > 65535)
    throw_invalid_argument(op, "q", "grid too large: " + std::to_string(tiles) + " query tiles, batch " +
                                        std::to_string(batch) + ", " + std::to_string(hq) + " heads");
  if (q.dtype == DType::bf16) {
    d64 ? launch_config<__nv_bfloat16, 64>(warps, m_tiles, a, batch, hq, tiles, s)
        : launch_config<__nv_bfloat16, 128>(warps, m_tiles, a, batch, hq, tiles, s);
  } else {
    d64 ? launch_config<__half, 64>(warps, m_tiles, a, batch, hq, tiles, s)
        : launch_config<__half, 128>(warps, m_tiles, a, batch, hq, tiles, s);
  }
}

}  // namespace smk::cuda
