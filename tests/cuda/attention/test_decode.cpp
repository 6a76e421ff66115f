// attention_decode on the GPU against the CPU float64 reference (itself checked against a long-double evaluation of
// the definition in tests/cpu/test_attention_decode.cpp): the issue's cache lengths with GQA and sinks, lengths mixed
// in one batch (so most of the grid's splits are entirely padding for the short ones), NaN planted past every
// length, causal multi-token rows, bitwise determinism and batch invariance, bad input. Outputs are poisoned (NaN)
// before every run, so an element the kernel does not write fails.
//
// Tolerance, derived (not observed): the inputs are exact in bf16/f16 and the reference evaluates them in double.
// The kernel computes in f32 and rounds O once: at most half an ulp of the 16-bit type, 2^-9·|O| for bf16 (2^-12 for
// f16), doubled for margin; plus the f32 error of O relative to Σ_j p_j·|v_j| (itself the reference run on |V|):
// ≤ 512u for the longest sequential sum a lane group does (4096/8 keys), 6u per rescaling of its accumulator (the
// running max moves O(log n) times on exchangeable scores: ≤ 20 assumed, 120u), 13u per merge of the fold over the
// ≤ 16 lane groups and ≤ 32 splits (624u), and the score error (≤ ~12 roundings of Σ|q_x·k_x|·scale, ~1e-5 relative
// in each weight): ≈ 1.5e-4 in all, checked at 2e-4. LSE: the same terms on log l, 2e-4 + 2u·|LSE|.
// The tensor-core kernel (decode_mma.cu) rounds each probability p to the input dtype before P·V (docs/semantics.md,
// "Decode"): |fl(p) − p| ≤ u_p·p + η, u_p the dtype's unit roundoff (2^-8 bf16, 2^-11 f16) and η the absolute error
// below its normal range (f16 subnormals: 2^-25; bf16: ex2.approx flushes below 2^-126). In O = Σ_j p_j·v_j / L
// (p relative to the running max, never above the row's max score M) that adds u_p·Σ_j p_j·|v_j| / L — u_p times the
// same error scale — plus η·e^(M − LSE)·Σ_j |v_j| over the row's visible keys, which the test computes per element.
// Its other f32 steps (scores from the tensor cores' f32 accumulation, ~24 roundings relative to Σ|q_x·k_x|·scale;
// the accumulator's ≤ 50 products of 16 keys per warp in series; the warp and split folds; ex2.approx's 2^-22 and the
// FFMA argument's ln2·|x|·2^-24) stay inside the 2e-4 above. LSE: l sums the unrounded p, so the same 2e-4 + 2u·|LSE|.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention/args.hpp"
#include "cuda/attention/attention_cuda.hpp"
#include "cuda/attention/decode_split.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/softmax.hpp"
#include "softmaxkit/cuda/runtime.hpp"
#include "support/gpu.hpp"

namespace {

using smk::AttentionDecodeOptions;
using smk::TensorView;
using smk::cuda::DeviceBuffer;

template <typename T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, smk::bfloat16_t>) return smk::to_bfloat16(x);
  else return smk::to_half(x);
}
template <typename T>
double rel_rounding() {  // one ulp of the 16-bit type, relative
  return std::is_same_v<T, smk::bfloat16_t> ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}
template <typename T>
T nan_value() {
  return T{0xFFFF};
}

// A decode problem on the host: q, caches (NaN at and past every sequence's length), sinks; and its GPU copies.
template <typename T>
struct Case {
  std::int64_t B, sq, hq, hkv, d, smax;
  std::vector<std::int32_t> lens;
  bool causal = false, with_sinks = true;
  float scale = 0;  // options.scale (0: 1/√D)
  std::vector<T> q, k, v, v_abs;
  std::vector<float> sinks;

  Case(std::int64_t B_, std::int64_t sq_, std::int64_t hq_, std::int64_t hkv_, std::int64_t d_, std::int64_t smax_,
       std::vector<std::int32_t> lens_, std::uint32_t seed)
      : B(B_), sq(sq_), hq(hq_), hkv(hkv_), d(d_), smax(smax_), lens(std::move(lens_)) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0, 1);
    q.resize(B * sq * hq * d);
    k.resize(B * smax * hkv * d);
    v.resize(k.size());
    v_abs.resize(k.size());
    for (auto& x : q) x = from_float<T>(dist(rng));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < smax; ++j)
        for (std::int64_t i = 0; i < hkv * d; ++i) {
          const std::int64_t at = (b * smax + j) * hkv * d + i;
          const bool live = j < lens[b];
          k[at] = live ? from_float<T>(dist(rng)) : nan_value<T>();
          v[at] = live ? from_float<T>(dist(rng)) : nan_value<T>();
          v_abs[at] = live ? T{static_cast<std::uint16_t>(v[at].bits & 0x7FFF)} : nan_value<T>();
        }
    for (std::int64_t h = 0; h < hq; ++h) sinks.push_back(2.0f - 0.9f * static_cast<float>(h));
  }
  AttentionDecodeOptions options(const float* sink_data, smk::Device dev) const {
    AttentionDecodeOptions o;
    o.causal = causal;
    o.scale = scale;
    if (with_sinks) o.sinks = TensorView::of(sink_data, {hq}, dev);
    return o;
  }
};

struct Result {
  std::vector<float> o, lse;  // O converted to float
};

// The kernel variants (smk::cuda::DecodeConfig) the tests run besides the public entry point's: one vector per lane
// for blocks of ≤ 4 rows, and reduce-scattered scores.
using smk::cuda::DecodeConfig;
using smk::cuda::DecodeKernel;
using smk::cuda::DecodeScores;
const DecodeConfig kOneVector{1, DecodeScores::all_lanes};
const DecodeConfig kScattered{0, DecodeScores::scatter};
// The tensor-core kernel (decode_mma.cu) with its default ring and with the other depth; and the CUDA-core kernel
// with the dispatcher's own choices.
// kMma merges the splits inside the split kernel through an atomic count (the fused merge), kMma3 (and the
// dispatcher) inside it through distributed shared memory (the cluster merge), kMmaMergeKernel with the merge kernel.
const DecodeConfig kMma{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused};
const DecodeConfig kMma3{0, DecodeScores::dispatcher, DecodeKernel::mma, 3, smk::cuda::DecodeMerge::cluster};
const DecodeConfig kMmaMergeKernel{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::kernel};
const DecodeConfig kCudaCores{0, DecodeScores::dispatcher, DecodeKernel::cuda_cores};
// The split rule with chunks of at least 256 keys instead of kDecodeMinChunk (bench_decode measures the constant).
const DecodeConfig kMmaChunk256{0, DecodeScores::dispatcher, DecodeKernel::mma, 0, smk::cuda::DecodeMerge::dispatcher,
                                256};
// Round 2's split rule (up to 32 splits, more than a cluster holds) with the fused merge: one split per lane of its
// merging warp, 100003 keys in 32 chunks.
const DecodeConfig kMmaCap32{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused, 0, 32};
// The cluster merge at a cap of 8 splits (clusters of at most 8, the portable size; a mixed batch's short sequences
// leave blocks that only join the barriers).
const DecodeConfig kMmaCluster8{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::cluster,
                                0, 8};
const DecodeConfig kMmaFused8{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused, 0, 8};
// The fused merge with its counters zeroed by a memset before each call (what a stream that captures a graph gets)
// instead of the per-stream counters that reset themselves.
using smk::cuda::DecodeToggle;
const DecodeConfig kMmaMemset{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused, 0, 0,
                              DecodeToggle::off};
// The cluster merge forced at the rule's cap (16 splits), packed as round 3 launched it and spread one block an SM
// (round 4: kDecodeSpreadSmem).
const DecodeConfig kMmaClusterPacked{0, DecodeScores::dispatcher, DecodeKernel::mma, 2,
                                     smk::cuda::DecodeMerge::cluster, 0, 0, DecodeToggle::dispatcher,
                                     DecodeToggle::off};
const DecodeConfig kMmaClusterSpread{0, DecodeScores::dispatcher, DecodeKernel::mma, 2,
                                     smk::cuda::DecodeMerge::cluster, 0, 0, DecodeToggle::dispatcher,
                                     DecodeToggle::on};
// The dispatcher with spread clusters allowed (off by default): it spreads only where every cluster of the call
// runs at once, so whether a sequence's splits merge in a spread cluster or by the fused merge depends on the batch —
// allowed only because the two give the same bits, which BitwiseDeterministicAndBatchInvariant checks with it.
const DecodeConfig kSpreadDispatch{0, DecodeScores::dispatcher, DecodeKernel::mma, 2,
                                   smk::cuda::DecodeMerge::dispatcher, 0, 0, DecodeToggle::dispatcher,
                                   DecodeToggle::on};
// The tensor-core kernel as a plain launch, and as a programmatic dependent launch forced with each merge (session 6:
// DecodeConfig::pdl; the dispatcher's default is kDecodePdl). The launch changes no arithmetic: the same bits.
const DecodeConfig kNoPdl{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::dispatcher,
                          0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::off};
const DecodeConfig kPdlFused{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused,
                             0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::on};
const DecodeConfig kPdlCluster8{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::cluster,
                                0, 8, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::on};
// Session 10 (dec10): K and V tiles by TMA forced on (fused merge, cluster merge) and forced off (the cp.async
// kernel, under the dispatcher's merge). The two fill the ring with the same values where the block reads them (V rows
// past the visible window zero in both, K rows there masked to −inf scores in both), so the same bits.
const DecodeConfig kTmaFused{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused,
                             0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::dispatcher,
                             DecodeToggle::on};
const DecodeConfig kTmaCluster{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::cluster,
                               0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::dispatcher,
                               DecodeToggle::on};
const DecodeConfig kCpAsyncFused{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::fused,
                                 0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::dispatcher,
                                 DecodeToggle::off};
const DecodeConfig kCpAsyncCluster{0, DecodeScores::dispatcher, DecodeKernel::mma, 2,
                                   smk::cuda::DecodeMerge::cluster, 0, 0, DecodeToggle::dispatcher,
                                   DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::off};
bool is_mma(const DecodeConfig* config) {
  const auto kernel = config ? config->kernel : DecodeKernel::dispatcher;
  if (kernel == DecodeKernel::dispatcher && (config == nullptr || (config->vecs == 0 && config->scores == DecodeScores::dispatcher)))
    return smk::cuda::kDecodeKernel == DecodeKernel::mma;
  return kernel == DecodeKernel::mma;
}
const char* name_of(const DecodeConfig* config) {
  if (config == nullptr) return "dispatcher";
  if (config == &kOneVector) return "cuda cores, one vector";
  if (config == &kScattered) return "cuda cores, scatter";
  if (config == &kMma) return "tensor cores, fused (atomic) merge";
  if (config == &kMma3) return "tensor cores, 3 stages, cluster merge";
  if (config == &kMmaMergeKernel) return "tensor cores, merge kernel";
  if (config == &kMmaChunk256) return "tensor cores, chunks of 256+";
  if (config == &kMmaCap32) return "tensor cores, fused merge, up to 32 splits";
  if (config == &kMmaCluster8) return "tensor cores, cluster merge, up to 8 splits";
  if (config == &kMmaFused8) return "tensor cores, fused merge, up to 8 splits";
  if (config == &kMmaMemset) return "tensor cores, fused merge, counters zeroed by a memset";
  if (config == &kMmaClusterPacked) return "tensor cores, cluster merge up to 16, packed";
  if (config == &kMmaClusterSpread) return "tensor cores, cluster merge up to 16, one block an SM";
  if (config == &kSpreadDispatch) return "dispatcher with spread clusters allowed";
  if (config == &kNoPdl) return "tensor cores, plain launch (no programmatic dependent launch)";
  if (config == &kPdlFused) return "tensor cores, fused merge, programmatic dependent launch";
  if (config == &kPdlCluster8) return "tensor cores, cluster merge up to 8, programmatic dependent launch";
  if (config == &kTmaFused) return "tensor cores, TMA tiles, fused merge";
  if (config == &kTmaCluster) return "tensor cores, TMA tiles, cluster merge";
  if (config == &kCpAsyncFused) return "tensor cores, cp.async tiles, fused merge";
  if (config == &kCpAsyncCluster) return "tensor cores, cp.async tiles, cluster merge";
  return "cuda cores";
}

// No config: the public entry point (the dispatcher's choice); else that variant through the internal entry point.
template <typename T>
Result run_gpu(const Case<T>& c, const DecodeConfig* config = nullptr) {
  const auto dev = smk::Device::cuda(0);
  auto dq = DeviceBuffer<T>::from_host(c.q), dk = DeviceBuffer<T>::from_host(c.k), dv = DeviceBuffer<T>::from_host(c.v);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  DeviceBuffer<T> dout(c.q.size());
  DeviceBuffer<float> dlse(c.B * c.hq * c.sq);
  dout.fill_bytes(0xFF);
  dlse.fill_bytes(0xFF);
  const auto O = TensorView::of(dout.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto L = TensorView::of(dlse.data(), {c.B, c.hq, c.sq}, dev);
  const auto Q = TensorView::of(dq.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto K = TensorView::of(dk.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto V = TensorView::of(dv.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto N = TensorView::of(dl.data(), {c.B}, dev);
  const auto opt = c.options(ds.data(), dev);
  if (config == nullptr) {
    smk::attention_decode(O, L, Q, K, V, N, opt);
  } else {
    const auto p = smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, opt);
    smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, {}, nullptr, *config);
  }
  const auto o = dout.to_host();
  Result r;
  for (const T& x : o) r.o.push_back(smk::to_float(x));
  r.lse = dlse.to_host();
  return r;
}

// The float64 reference on V (o, lse) and on |V| (the error scale Σ_j p_j·|v_j|), one sequence at a time on f64
// copies of the 16-bit inputs (exact; the reference's outputs take its inputs' dtype) of its live cache rows only.
template <typename T>
void reference(const Case<T>& c, std::vector<double>& o, std::vector<double>& lse, std::vector<double>& scale) {
  o.assign(c.q.size(), 0);
  scale.assign(c.q.size(), 0);
  lse.assign(c.B * c.hq * c.sq, 0);
  std::vector<double> unused(c.hq * c.sq);
  std::vector<double> sinks(c.sinks.begin(), c.sinks.end());
  AttentionDecodeOptions opt;
  opt.causal = c.causal;
  opt.scale = c.scale;
  if (c.with_sinks) opt.sinks = TensorView::of(sinks.data(), {c.hq});
  const auto widen = [](const std::vector<T>& x, std::int64_t begin, std::int64_t n) {
    std::vector<double> y(n);
    for (std::int64_t i = 0; i < n; ++i) y[i] = smk::to_float(x[begin + i]);
    return y;
  };
  const std::int64_t per_q = c.sq * c.hq * c.d, row = c.hkv * c.d;
  for (std::int64_t b = 0; b < c.B; ++b) {
    const std::int64_t n = c.lens[b];
    const auto q = widen(c.q, b * per_q, per_q), k = widen(c.k, b * c.smax * row, n * row),
               v = widen(c.v, b * c.smax * row, n * row), va = widen(c.v_abs, b * c.smax * row, n * row);
    const std::int32_t len = c.lens[b];
    const auto Q = TensorView::of(q.data(), {1, c.sq, c.hq, c.d});
    const auto K = TensorView::of(k.data(), {1, n, c.hkv, c.d});
    const auto N = TensorView::of(&len, {1});
    smk::cpu::reference::attention_decode(TensorView::of(o.data() + b * per_q, {1, c.sq, c.hq, c.d}),
                                          TensorView::of(lse.data() + b * c.hq * c.sq, {1, c.hq, c.sq}), Q, K,
                                          TensorView::of(v.data(), {1, n, c.hkv, c.d}), N, opt);
    smk::cpu::reference::attention_decode(TensorView::of(scale.data() + b * per_q, {1, c.sq, c.hq, c.d}),
                                          TensorView::of(unused.data(), {1, c.hq, c.sq}), Q, K,
                                          TensorView::of(va.data(), {1, n, c.hkv, c.d}), N, opt);
  }
}

// Per output element, e^(M − LSE)·Σ_j |v_j[x]| over the row's visible keys (M: the row's largest scaled score, LSE
// the reference's, sink included): the factor of η in the tensor-core kernel's bound (above). 0 for a row with no key.
template <typename T>
std::vector<double> subnormal_scale(const Case<T>& c, const std::vector<double>& lse) {
  std::vector<double> out(c.q.size(), 0.0);
  const double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  const std::int64_t group = c.hq / c.hkv;
  std::vector<double> sum(c.d);
  for (std::int64_t b = 0; b < c.B; ++b)
    for (std::int64_t t = 0; t < c.sq; ++t)
      for (std::int64_t h = 0; h < c.hq; ++h) {
        const std::int64_t len = c.lens[b];
        std::int64_t vis = len;
        if (c.causal) vis = std::clamp<std::int64_t>(len - c.sq + t + 1, 0, len);
        if (vis == 0) continue;
        const std::int64_t hk = h / group, qoff = ((b * c.sq + t) * c.hq + h) * c.d;
        double mx = -INFINITY;
        std::fill(sum.begin(), sum.end(), 0.0);
        for (std::int64_t j = 0; j < vis; ++j) {
          const std::int64_t koff = ((b * c.smax + j) * c.hkv + hk) * c.d;
          double dot = 0;
          for (std::int64_t x = 0; x < c.d; ++x) {
            dot += static_cast<double>(smk::to_float(c.q[qoff + x])) * smk::to_float(c.k[koff + x]);
            sum[x] += std::fabs(smk::to_float(c.v[koff + x]));
          }
          mx = std::max(mx, scale * dot);
        }
        const double f = std::exp(mx - lse[(b * c.hq + h) * c.sq + t]);
        for (std::int64_t x = 0; x < c.d; ++x) out[qoff + x] = f * sum[x];
      }
  return out;
}

// mma: the tensor-core kernel's bound (P rounded to T before P·V), else the CUDA-core kernel's. A reference NaN
// (a non-finite V the row sees) must come back NaN.
// The reference's values for a case, computed once where several variants are checked against it.
struct Expected {
  std::vector<double> o, lse, scale, tiny;  // tiny: subnormal_scale (the tensor-core kernel's η term)
};
template <typename T>
Expected expected_of(const Case<T>& c) {
  Expected e;
  reference(c, e.o, e.lse, e.scale);
  e.tiny = subnormal_scale(c, e.lse);
  return e;
}

template <typename T>
void expect_matches(const Case<T>& c, const Expected& e, const Result& got, bool mma) {
  const std::vector<double>& o = e.o;
  const std::vector<double>& lse = e.lse;
  const std::vector<double>& scale = e.scale;
  const double u_p = mma ? rel_rounding<T>() : 0.0;  // 2^-8 (bf16), 2^-11 (f16): the unit roundoff
  const double eta = std::is_same_v<T, smk::bfloat16_t> ? std::ldexp(1.0, -126) : std::ldexp(1.0, -25);
  const std::vector<double> tiny = mma ? e.tiny : std::vector<double>(o.size(), 0.0);
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (std::isnan(o[i])) {
      ASSERT_TRUE(std::isnan(got.o[i])) << "element " << i << ": the reference is NaN";
      continue;
    }
    const double tol = rel_rounding<T>() * std::fabs(o[i]) + (2e-4 + u_p) * scale[i] + eta * tiny[i];
    ASSERT_NEAR(got.o[i], o[i], tol) << "element " << i << " (b " << i / (c.sq * c.hq * c.d) << ")";
  }
  for (std::size_t i = 0; i < lse.size(); ++i) {
    if (std::isnan(lse[i])) ASSERT_TRUE(std::isnan(got.lse[i])) << "lse " << i;
    else if (std::isinf(lse[i])) ASSERT_EQ(got.lse[i], lse[i]) << "lse " << i;
    else ASSERT_NEAR(got.lse[i], lse[i], 2e-4 + 2.4e-7 * std::fabs(lse[i])) << "lse " << i;
  }
}

template <typename T>
void expect_matches_reference(const Case<T>& c, const Result& got, bool mma = false) {
  expect_matches(c, expected_of(c), got, mma);
}

template <typename T>
void issue_lengths(std::int64_t d) {
  // Mixed lengths in one batch, the empty sequence included: against S_max = 4097 the grid has 5 splits per
  // sequence, so the short sequences' other splits are entirely padding (and must not write).
  // Blocks of 4 rows here (4 query heads per KV head, one token): the dispatcher's variant and the two others.
  // The tensor-core kernel also with a negative scale (q negated exactly inside, the factor kept positive).
  for (const DecodeConfig* config :
       {static_cast<const DecodeConfig*>(nullptr), &kOneVector, &kScattered, &kMma, &kMma3, &kMmaMergeKernel,
        &kMmaChunk256, &kMmaCap32}) {
    SCOPED_TRACE(testing::Message() << "variant " << name_of(config));
    const bool mma = is_mma(config);
    {
      Case<T> c(8, 1, 8, 2, d, 4097, {1, 2, 255, 256, 257, 4097, 0, 1000}, 21);
      SCOPED_TRACE("batch of mixed lengths");
      expect_matches_reference(c, run_gpu(c, config), mma);
      c.with_sinks = false;
      SCOPED_TRACE("no sinks");
      expect_matches_reference(c, run_gpu(c, config), mma);
      c.scale = -0.3f;
      SCOPED_TRACE("scale -0.3");
      expect_matches_reference(c, run_gpu(c, config), mma);
    }
    {
      Case<T> c(1, 1, 4, 1, d, 100003, {100003}, 22);  // the most splits, the last one partial
      SCOPED_TRACE("100003 keys");
      expect_matches_reference(c, run_gpu(c, config), mma);
    }
  }
}

TEST(CudaAttentionDecode, IssueLengthsBf16D128) {
  SMK_REQUIRE_GPU();
  issue_lengths<smk::bfloat16_t>(128);
}
TEST(CudaAttentionDecode, IssueLengthsF16D64) {
  SMK_REQUIRE_GPU();
  issue_lengths<smk::half_t>(64);
}

// Several new tokens, causal (bottom-right), among them lengths shorter than Sq_new (rows with no visible key: O = 0,
// LSE = the sink or −inf); 4 and 8 query heads per KV head, so rows span one or several row chunks of a block.
TEST(CudaAttentionDecode, CausalMultiToken) {
  SMK_REQUIRE_GPU();
  for (std::int64_t sq : {2, 5, 8})
    for (std::int64_t group : {1, 4})
      for (bool sinks : {false, true}) {
        SCOPED_TRACE(testing::Message() << "sq=" << sq << " group=" << group << " sinks=" << sinks);
        Case<smk::bfloat16_t> c(5, sq, 2 * group, 2, 128, 2060, {3, 8, 1500, 2055, 1}, 30 + static_cast<unsigned>(sq));
        c.causal = true;
        c.with_sinks = sinks;
        expect_matches_reference(c, run_gpu(c), is_mma(nullptr));
        expect_matches_reference(c, run_gpu(c, &kScattered));
        expect_matches_reference(c, run_gpu(c, &kMma), true);
        expect_matches_reference(c, run_gpu(c, &kMma3), true);
        expect_matches_reference(c, run_gpu(c, &kMmaMergeKernel), true);
        expect_matches_reference(c, run_gpu(c, &kMmaChunk256), true);
        if (c.hq / c.hkv * sq <= 4) expect_matches_reference(c, run_gpu(c, &kOneVector));
      }
  Case<smk::half_t> c(3, 4, 8, 1, 64, 3000, {4, 2999, 1025}, 40);  // 8 heads × 4 tokens: 32 rows, 4 row chunks
  c.causal = true;
  expect_matches_reference(c, run_gpu(c), is_mma(nullptr));
  expect_matches_reference(c, run_gpu(c, &kScattered));
  expect_matches_reference(c, run_gpu(c, &kMma), true);
}

// Under causal, the last Sq_new − 1 keys of a sequence (the new tokens' own) are seen by some rows and not others:
// a NaN planted in V there must reach exactly the rows that see it (the reference says which) and no other. The
// tensor-core kernel keeps those V rows out of its product (0·NaN) and adds them on the CUDA cores.
TEST(CudaAttentionDecode, CausalBandNaNReachesOnlyTheRowsThatSeeIt) {
  SMK_REQUIRE_GPU();
  for (const DecodeConfig* config : {&kScattered, &kMma, &kMma3}) {
    SCOPED_TRACE(name_of(config));
    Case<smk::bfloat16_t> c(3, 4, 8, 2, 128, 2100, {2000, 3, 2100}, 70);
    c.causal = true;
    for (std::int64_t b = 0; b < c.B; ++b) {  // V of the sequence's last key, dimension 5 of KV head 1: NaN
      const std::int64_t at = ((b * c.smax + c.lens[b] - 1) * c.hkv + 1) * c.d + 5;
      c.v[at] = nan_value<smk::bfloat16_t>();
    }
    const Result got = run_gpu(c, config);
    std::size_t nans = 0;
    for (float x : got.o) nans += std::isnan(x) ? 1 : 0;
    EXPECT_EQ(nans, 3u * 4u) << "one dimension of 4 query heads, at the one token that sees the key, per sequence";
    expect_matches_reference(c, got, is_mma(config));
  }
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The same call twice gives the same bits; each sequence run alone (in a batch of one, with a cache of its own length)
// gives the same bits as inside the batch: the split rule looks at nothing but the sequence's length and the device.
TEST(CudaAttentionDecode, BitwiseDeterministicAndBatchInvariant) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  const std::vector<std::int32_t> lens = {5000, 300, 70000, 1, 33000};
  Case<T> batch(5, 2, 8, 2, 128, 70000, lens, 50);
  batch.causal = true;
  const Expected expected = expected_of(batch);  // the inputs and the reference once, for every variant
  const std::int64_t per_q = batch.sq * batch.hq * batch.d, per_kv = batch.smax * batch.hkv * batch.d;
  std::vector<Case<T>> alone_cases;
  for (std::int64_t b = 0; b < batch.B; ++b) {
    Case<T> one(1, batch.sq, batch.hq, batch.hkv, batch.d, 1, {0}, 0);  // then made the batch's sequence b alone
    one.causal = true;
    one.smax = lens[b];
    one.lens = {lens[b]};
    one.q.assign(batch.q.begin() + b * per_q, batch.q.begin() + (b + 1) * per_q);
    one.k.assign(batch.k.begin() + b * per_kv, batch.k.begin() + b * per_kv + lens[b] * batch.hkv * batch.d);
    one.v.assign(batch.v.begin() + b * per_kv, batch.v.begin() + b * per_kv + lens[b] * batch.hkv * batch.d);
    one.sinks = batch.sinks;
    alone_cases.push_back(std::move(one));
  }
  for (const DecodeConfig* config : {static_cast<const DecodeConfig*>(nullptr), &kCudaCores, &kMma, &kMmaMergeKernel,
                                     &kMmaChunk256, &kMmaCluster8, &kSpreadDispatch}) {
  SCOPED_TRACE(name_of(config));
  const Result first = run_gpu(batch, config), second = run_gpu(batch, config);
  EXPECT_TRUE(bitwise_equal(first.o, second.o));
  EXPECT_TRUE(bitwise_equal(first.lse, second.lse));
  for (std::int64_t b = 0; b < batch.B; ++b) {
    SCOPED_TRACE(testing::Message() << "sequence " << b << " of length " << lens[b]);
    const Result alone = run_gpu(alone_cases[b], config);
    const std::vector<float> in_batch_o(first.o.begin() + b * per_q, first.o.begin() + (b + 1) * per_q);
    const std::int64_t per_l = batch.hq * batch.sq;
    const std::vector<float> in_batch_l(first.lse.begin() + b * per_l, first.lse.begin() + (b + 1) * per_l);
    EXPECT_TRUE(bitwise_equal(alone.o, in_batch_o));
    EXPECT_TRUE(bitwise_equal(alone.lse, in_batch_l));
  }
  expect_matches(batch, expected, first, is_mma(config));
  if (config != &kCudaCores) continue;
  // The reduce-scattered variant: deterministic too, and right.
  const Result s1 = run_gpu(batch, &kScattered), s2 = run_gpu(batch, &kScattered);
  EXPECT_TRUE(bitwise_equal(s1.o, s2.o));
  EXPECT_TRUE(bitwise_equal(s1.lse, s2.lse));
  expect_matches(batch, expected, s1, false);
  }
}

// The two in-kernel merges compute the same thing in the same order: for the same split rule the cluster merge
// (through distributed shared memory, the default) gives the fused merge's bits (atomic count, partials through
// global memory), with several row chunks per KV head (4 causal tokens × 4 query heads: 16 rows, two chunks of 8) and
// sequences of different split counts in one batch, at the rule's cap and at 8 splits. Neither keeps anything between
// calls: calls on two streams at once, without synchronising in between (a smaller problem first on one of them),
// all give those bits.
TEST(CudaAttentionDecode, ClusterMergeGivesTheFusedMergesBitsAcrossCallsAndStreams) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  Case<T> c(3, 4, 8, 2, 128, 33000, {33000, 4097, 20000}, 61);
  c.causal = true;
  const Result ref = run_gpu(c, &kMma);
  expect_matches_reference(c, ref, true);
  for (const DecodeConfig* config : {static_cast<const DecodeConfig*>(nullptr), &kMma3, &kMmaMemset, &kMma,
                                     &kMmaClusterPacked, &kMmaClusterSpread, &kNoPdl, &kPdlFused}) {
    SCOPED_TRACE(name_of(config));
    const Result got = run_gpu(c, config);
    EXPECT_TRUE(bitwise_equal(got.o, ref.o));
    EXPECT_TRUE(bitwise_equal(got.lse, ref.lse));
  }
  {
    SCOPED_TRACE("at most 8 splits");
    const Result f8 = run_gpu(c, &kMmaFused8), c8 = run_gpu(c, &kMmaCluster8), p8 = run_gpu(c, &kPdlCluster8);
    EXPECT_TRUE(bitwise_equal(c8.o, f8.o));
    EXPECT_TRUE(bitwise_equal(c8.lse, f8.lse));
    EXPECT_TRUE(bitwise_equal(p8.o, f8.o));
    EXPECT_TRUE(bitwise_equal(p8.lse, f8.lse));
  }
  {
    SCOPED_TRACE("the dispatcher's own cluster: 8 splits, 8 rows a block");
    Case<T> d(2, 2, 8, 2, 128, 8000, {8000, 3000}, 63);
    d.causal = true;
    const Result fused = run_gpu(d, &kMma), disp = run_gpu(d);
    expect_matches_reference(d, disp, true);
    EXPECT_TRUE(bitwise_equal(disp.o, fused.o));
    EXPECT_TRUE(bitwise_equal(disp.lse, fused.lse));
  }
  c.causal = false;
  c.sq = 1;
  c.q.resize(c.B * c.hq * c.d);
  const Result ref1 = run_gpu(c, &kMma);
  expect_matches_reference(c, ref1, true);
  {
    SCOPED_TRACE("one token: 4 rows per KV head");
    const Result got = run_gpu(c);
    EXPECT_TRUE(bitwise_equal(got.o, ref1.o));
    EXPECT_TRUE(bitwise_equal(got.lse, ref1.lse));
  }
  Case<T> small(1, 1, 8, 2, 128, 20000, {20000}, 62);
  const Result small_ref = run_gpu(small, &kMma);
  {
    SCOPED_TRACE("16 splits, one sequence: the dispatcher (fused merge) and the spread cluster forced");
    const Result disp = run_gpu(small), spread = run_gpu(small, &kMmaClusterSpread);
    expect_matches_reference(small, disp, true);
    EXPECT_TRUE(bitwise_equal(disp.o, small_ref.o));
    EXPECT_TRUE(bitwise_equal(disp.lse, small_ref.lse));
    EXPECT_TRUE(bitwise_equal(spread.o, small_ref.o));
    EXPECT_TRUE(bitwise_equal(spread.lse, small_ref.lse));
  }

  const auto dev = smk::Device::cuda(0);
  auto dq = DeviceBuffer<T>::from_host(c.q), dk = DeviceBuffer<T>::from_host(c.k), dv = DeviceBuffer<T>::from_host(c.v);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  auto sq = DeviceBuffer<T>::from_host(small.q), sk = DeviceBuffer<T>::from_host(small.k),
       sv = DeviceBuffer<T>::from_host(small.v);
  auto sl = DeviceBuffer<std::int32_t>::from_host(small.lens);
  const auto opt = c.options(ds.data(), dev);
  const auto Q = TensorView::of(dq.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto K = TensorView::of(dk.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto V = TensorView::of(dv.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto N = TensorView::of(dl.data(), {c.B}, dev);
  cudaStream_t streams[2];
  for (auto& st : streams) ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  constexpr int kRounds = 3;
  std::vector<DeviceBuffer<T>> outs;
  std::vector<DeviceBuffer<float>> lses;
  for (int i = 0; i < 2 * kRounds; ++i) {
    outs.emplace_back(c.q.size());
    lses.emplace_back(c.B * c.hq * c.sq);
  }
  DeviceBuffer<T> small_out(small.q.size());
  DeviceBuffer<float> small_lse(small.hq);
  small_out.fill_bytes(0xFF);
  small_lse.fill_bytes(0xFF);
  {  // stream 0 sees a smaller problem first
    const auto so = TensorView::of(small_out.data(), {1, 1, small.hq, small.d}, dev);
    const auto sL = TensorView::of(small_lse.data(), {1, small.hq, 1}, dev);
    smk::attention_decode(so, sL, TensorView::of(sq.data(), {1, 1, small.hq, small.d}, dev),
                          TensorView::of(sk.data(), {1, small.smax, small.hkv, small.d}, dev),
                          TensorView::of(sv.data(), {1, small.smax, small.hkv, small.d}, dev),
                          TensorView::of(sl.data(), {1}, dev), small.options(ds.data(), dev), smk::Stream{streams[0]});
  }
  for (int i = 0; i < 2 * kRounds; ++i) {  // alternating streams, no synchronisation until the end
    cudaStream_t st = streams[i % 2];
    ASSERT_EQ(cudaMemsetAsync(outs[i].data(), 0xFF, c.q.size() * sizeof(T), st), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(lses[i].data(), 0xFF, c.B * c.hq * c.sq * sizeof(float), st), cudaSuccess);
    smk::attention_decode(TensorView::of(outs[i].data(), {c.B, c.sq, c.hq, c.d}, dev),
                          TensorView::of(lses[i].data(), {c.B, c.hq, c.sq}, dev), Q, K, V, N, opt, smk::Stream{st});
  }
  for (auto& st : streams) {
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    cudaStreamDestroy(st);
  }
  std::vector<float> small_o;
  for (const T& x : small_out.to_host()) small_o.push_back(smk::to_float(x));
  EXPECT_TRUE(bitwise_equal(small_o, small_ref.o));
  EXPECT_TRUE(bitwise_equal(small_lse.to_host(), small_ref.lse));
  for (int i = 0; i < 2 * kRounds; ++i) {
    SCOPED_TRACE(testing::Message() << "call " << i << " on stream " << i % 2);
    std::vector<float> o;
    for (const T& x : outs[i].to_host()) o.push_back(smk::to_float(x));
    EXPECT_TRUE(bitwise_equal(o, ref1.o));
    EXPECT_TRUE(bitwise_equal(lses[i].to_host(), ref1.lse));
  }
}

// The fused merge's counters kept per stream are bounded (decode.cu, counter_buffer): 70 streams, each made, called
// once and destroyed without waiting, push the first ones' buffers out (at most 64 kept; the least recently used is
// freed after the device synchronises), and a stream whose buffer was freed gets a new one at its next call. Every
// call gives the bits of counters zeroed by a memset; a freed buffer still in use, or a count left behind, would not.
TEST(CudaAttentionDecode, KeptCountersStayBoundedOverManyStreams) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  Case<T> c(1, 1, 8, 2, 128, 20000, {20000}, 81);
  const Result ref = run_gpu(c, &kMmaMemset);
  expect_matches_reference(c, ref, true);
  const auto dev = smk::Device::cuda(0);
  auto dq = DeviceBuffer<T>::from_host(c.q), dk = DeviceBuffer<T>::from_host(c.k), dv = DeviceBuffer<T>::from_host(c.v);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  const auto opt = c.options(ds.data(), dev);
  const auto Q = TensorView::of(dq.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto K = TensorView::of(dk.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto V = TensorView::of(dv.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto N = TensorView::of(dl.data(), {c.B}, dev);
  constexpr int kStreams = 70;
  std::vector<DeviceBuffer<T>> outs;
  std::vector<DeviceBuffer<float>> lses;
  for (int i = 0; i <= kStreams; ++i) {
    outs.emplace_back(c.q.size());
    lses.emplace_back(c.hq);
    outs.back().fill_bytes(0xFF);
    lses.back().fill_bytes(0xFF);
  }
  const auto call = [&](int i, cudaStream_t st) {
    const auto O = TensorView::of(outs[i].data(), {c.B, c.sq, c.hq, c.d}, dev);
    const auto L = TensorView::of(lses[i].data(), {c.B, c.hq, c.sq}, dev);
    const auto p = smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, opt);
    smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{st}, nullptr, kMma);
  };
  cudaStream_t first;
  ASSERT_EQ(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), cudaSuccess);
  call(0, first);
  for (int i = 1; i < kStreams; ++i) {
    cudaStream_t st;
    ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
    call(i, st);
    ASSERT_EQ(cudaStreamDestroy(st), cudaSuccess);  // its work still runs; its buffer stays until pushed out
  }
  call(kStreams, first);  // its buffer was pushed out by the others: a new one
  ASSERT_EQ(cudaStreamSynchronize(first), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStreamDestroy(first);
  for (int i = 0; i <= kStreams; ++i) {
    SCOPED_TRACE(testing::Message() << "call " << i);
    std::vector<float> o;
    for (const T& x : outs[i].to_host()) o.push_back(smk::to_float(x));
    EXPECT_TRUE(bitwise_equal(o, ref.o));
    EXPECT_TRUE(bitwise_equal(lses[i].to_host(), ref.lse));
  }
}

// A call captured into a CUDA graph (the cluster launch a kernel node with its cluster size): each replay gives the
// direct call's bits, and a direct call on the capturing stream between replays too.
TEST(CudaAttentionDecode, GraphCaptureReplaysGiveTheDirectCallsBits) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  Case<T> c(2, 1, 8, 2, 128, 20000, {20000, 3000}, 71);
  const Result ref = run_gpu(c);
  expect_matches_reference(c, ref, is_mma(nullptr));
  const auto dev = smk::Device::cuda(0);
  auto dq = DeviceBuffer<T>::from_host(c.q), dk = DeviceBuffer<T>::from_host(c.k), dv = DeviceBuffer<T>::from_host(c.v);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  DeviceBuffer<T> dout(c.q.size());
  DeviceBuffer<float> dlse(c.B * c.hq * c.sq);
  const auto O = TensorView::of(dout.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto L = TensorView::of(dlse.data(), {c.B, c.hq, c.sq}, dev);
  const auto Q = TensorView::of(dq.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto K = TensorView::of(dk.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto V = TensorView::of(dv.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto N = TensorView::of(dl.data(), {c.B}, dev);
  const auto opt = c.options(ds.data(), dev);
  cudaStream_t st;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  smk::attention_decode(O, L, Q, K, V, N, opt, smk::Stream{st});
  ASSERT_EQ(cudaStreamEndCapture(st, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  const auto check = [&](const char* what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
    std::vector<float> o;
    for (const T& x : dout.to_host()) o.push_back(smk::to_float(x));
    EXPECT_TRUE(bitwise_equal(o, ref.o));
    EXPECT_TRUE(bitwise_equal(dlse.to_host(), ref.lse));
  };
  const auto poison = [&] {
    ASSERT_EQ(cudaMemsetAsync(dout.data(), 0xFF, c.q.size() * sizeof(T), st), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(dlse.data(), 0xFF, c.B * c.hq * c.sq * sizeof(float), st), cudaSuccess);
  };
  poison();
  ASSERT_EQ(cudaGraphLaunch(exec, st), cudaSuccess);
  check("first replay");
  poison();
  smk::attention_decode(O, L, Q, K, V, N, opt, smk::Stream{st});
  check("direct call on the capturing stream");
  poison();
  ASSERT_EQ(cudaGraphLaunch(exec, st), cudaSuccess);
  check("second replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
}

// Non-contiguous views: caches stored [B, Hkv, S_max, D] and q, out stored [B, Hq, Sq, D], seen through
// [B, S, H, D] strides; lse stored [B, Sq, Hq]. Then the same call without lse gives the same O, bit for bit.
TEST(CudaAttentionDecode, StridedViewsAndOptionalLse) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  Case<T> c(3, 2, 8, 2, 128, 3000, {2999, 1, 1500}, 60);
  c.causal = true;
  const std::int64_t B = c.B, sq = c.sq, hq = c.hq, hkv = c.hkv, d = c.d, smax = c.smax;
  std::vector<T> kp(c.k.size()), vp(c.v.size()), qp(c.q.size());
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < smax; ++j)
      for (std::int64_t h = 0; h < hkv; ++h)
        for (std::int64_t x = 0; x < d; ++x) {
          kp[((b * hkv + h) * smax + j) * d + x] = c.k[((b * smax + j) * hkv + h) * d + x];
          vp[((b * hkv + h) * smax + j) * d + x] = c.v[((b * smax + j) * hkv + h) * d + x];
        }
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < sq; ++i)
      for (std::int64_t h = 0; h < hq; ++h)
        for (std::int64_t x = 0; x < d; ++x) qp[((b * hq + h) * sq + i) * d + x] = c.q[((b * sq + i) * hq + h) * d + x];
  const auto dev = smk::Device::cuda(0);
  auto dq = DeviceBuffer<T>::from_host(qp), dk = DeviceBuffer<T>::from_host(kp), dv = DeviceBuffer<T>::from_host(vp);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  DeviceBuffer<T> dout(c.q.size());
  DeviceBuffer<float> dlse(B * hq * sq);
  const auto bshd = [&](T* p, std::int64_t s, std::int64_t h) {  // [B, S, H, D] over storage [B, H, S, D]
    return TensorView::strided(p, smk::DType::bf16, dev, {B, s, h, d}, {h * s * d, d, s * d, 1});
  };
  const auto O = bshd(dout.data(), sq, hq);
  const auto L = TensorView::strided(dlse.data(), smk::DType::f32, dev, {B, hq, sq}, {sq * hq, 1, hq});
  const auto N = TensorView::of(dl.data(), {B}, dev);
  const auto opt = c.options(ds.data(), dev);
  // The public entry point, then each kernel through the internal one.
  for (const DecodeConfig* config : {static_cast<const DecodeConfig*>(nullptr), &kCudaCores, &kMma, &kMmaMergeKernel}) {
  SCOPED_TRACE(name_of(config));
  const auto call = [&](const TensorView& lse_view) {
    const auto Qv = bshd(dq.data(), sq, hq), Kv = bshd(dk.data(), smax, hkv), Vv = bshd(dv.data(), smax, hkv);
    if (config == nullptr) {
      smk::attention_decode(O, lse_view, Qv, Kv, Vv, N, opt);
    } else {
      const auto p = smk::detail::check_decode_args("attention_decode", O, lse_view, Qv, Kv, Vv, N, opt);
      smk::cuda::attention_decode(O, lse_view, Qv, Kv, Vv, N, opt, p, {}, nullptr, *config);
    }
  };
  dout.fill_bytes(0xFF);
  dlse.fill_bytes(0xFF);
  call(L);
  const auto o_storage = dout.to_host();
  const auto l_storage = dlse.to_host();
  Result got;
  got.o.resize(c.q.size());
  got.lse.resize(B * hq * sq);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < sq; ++i)
      for (std::int64_t h = 0; h < hq; ++h) {
        for (std::int64_t x = 0; x < d; ++x)
          got.o[((b * sq + i) * hq + h) * d + x] = smk::to_float(o_storage[((b * hq + h) * sq + i) * d + x]);
        got.lse[(b * hq + h) * sq + i] = l_storage[(b * sq + i) * hq + h];
      }
  expect_matches_reference(c, got, is_mma(config));
  dout.fill_bytes(0xFF);
  call(TensorView{});
  const auto again = dout.to_host();
  EXPECT_EQ(std::memcmp(again.data(), o_storage.data(), again.size() * sizeof(T)), 0);
  }
}

// merge_attention_states on the GPU (f32, the decode merge's algebra through lse_fold.cuh): the empty part is the
// identity exactly, the merge commutes bit for bit, and it is associative up to rounding (tests/cpu/
// test_attention_decode_merge.cpp derives the bound: 8e-6·max|O| and 4e-6 + 4u·|LSE|).
// A programmatic dependent launch (DecodeConfig::pdl) may start before the kernel ahead of it on the stream has
// finished, so the split kernel must read nothing before griddepcontrol.wait. Here that kernel writes q
// (smk::softmax of random logits over the head dimension, bf16 in and out, into a q poisoned with NaN just before) and
// the decode call follows at once on the same stream: its O and LSE must be bitwise those of the same call made after
// the stream has synchronised (a q read early is NaN or the previous round's). The softmax runs over 2^18 rows, tens
// of microseconds, and q is its LAST rows, written near its end, so that a read placed before the wait would land
// while q is still poisoned (a softmax of q's 32 rows alone ends before the decode kernel's blocks are scheduled).
// The fused merge (16 splits), the cluster merge (8 splits, 8 rows a block) and the dispatcher, three rounds each.
TEST(CudaAttentionDecode, ProgrammaticLaunchReadsThePreviousKernelsOutput) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  Case<T> c(2, 2, 8, 2, 128, 20000, {20000, 9000}, 71);
  const auto dev = smk::Device::cuda(0);
  std::mt19937 rng(72);
  std::normal_distribution<float> dist(0, 2);
  auto dk = DeviceBuffer<T>::from_host(c.k), dv = DeviceBuffer<T>::from_host(c.v);
  auto dl = DeviceBuffer<std::int32_t>::from_host(c.lens);
  auto ds = DeviceBuffer<float>::from_host(c.sinks);
  // The softmax's output: 2^18 rows of d, q its last B·sq·hq rows.
  const std::int64_t big_rows = std::int64_t{1} << 18, q_rows = c.B * c.sq * c.hq;
  ASSERT_LE(q_rows, big_rows);
  const std::size_t big = static_cast<std::size_t>(big_rows * c.d), q_at = big - c.q.size();
  DeviceBuffer<T> dbig(big), dout(c.q.size());
  T* const q_ptr = dbig.data() + q_at;
  DeviceBuffer<float> dlse(c.B * c.hq * c.sq);
  const auto opt = c.options(ds.data(), dev);
  const auto Q = TensorView::of(q_ptr, {c.B, c.sq, c.hq, c.d}, dev);
  const auto K = TensorView::of(dk.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto V = TensorView::of(dv.data(), {c.B, c.smax, c.hkv, c.d}, dev);
  const auto N = TensorView::of(dl.data(), {c.B}, dev);
  const auto O = TensorView::of(dout.data(), {c.B, c.sq, c.hq, c.d}, dev);
  const auto L = TensorView::of(dlse.data(), {c.B, c.hq, c.sq}, dev);
  const auto Y = TensorView::of(dbig.data(), {big_rows, c.d}, dev);
  const auto p = smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, opt);
  std::vector<T> big_logits(big);
  for (auto& x : big_logits) x = from_float<T>(dist(rng));
  auto dlogits = DeviceBuffer<T>::from_host(big_logits);
  const auto X = TensorView::of(dlogits.data(), {big_rows, c.d}, dev);
  cudaStream_t st;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  for (const DecodeConfig* config : {&kPdlFused, &kPdlCluster8, static_cast<const DecodeConfig*>(nullptr)}) {
    SCOPED_TRACE(name_of(config));
    for (int round = 0; round < 3; ++round) {
      std::vector<T> logits(c.q.size());  // q's logits anew each round (the rest of the softmax's rows stay)
      for (auto& x : logits) x = from_float<T>(dist(rng));
      ASSERT_EQ(cudaMemcpy(dlogits.data() + q_at, logits.data(), logits.size() * sizeof(T), cudaMemcpyHostToDevice),
                cudaSuccess);
      const auto call = [&](bool sync_first) {
        ASSERT_EQ(cudaMemsetAsync(q_ptr, 0xFF, c.q.size() * sizeof(T), st), cudaSuccess);
        ASSERT_EQ(cudaMemsetAsync(dout.data(), 0xFF, c.q.size() * sizeof(T), st), cudaSuccess);
        ASSERT_EQ(cudaMemsetAsync(dlse.data(), 0xFF, dlse.size() * sizeof(float), st), cudaSuccess);
        smk::softmax(Y, X, {}, smk::Stream{st});
        if (sync_first) ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
        if (config == nullptr) smk::attention_decode(O, L, Q, K, V, N, opt, smk::Stream{st});
        else smk::cuda::attention_decode(O, L, Q, K, V, N, opt, p, smk::Stream{st}, nullptr, *config);
        ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      };
      call(true);
      const auto want_o = dout.to_host();
      const auto want_l = dlse.to_host();
      call(false);
      const auto got_o = dout.to_host();
      const auto got_l = dlse.to_host();
      std::vector<float> wo, go;
      for (const T& x : want_o) wo.push_back(smk::to_float(x));
      for (const T& x : got_o) go.push_back(smk::to_float(x));
      EXPECT_TRUE(std::none_of(wo.begin(), wo.end(), [](float x) { return std::isnan(x); }));
      EXPECT_TRUE(bitwise_equal(go, wo));
      EXPECT_TRUE(bitwise_equal(got_l, want_l));
    }
  }
  cudaStreamDestroy(st);
}

TEST(CudaAttentionDecode, MergeOpIdentityCommutativityAssociativity) {
  SMK_REQUIRE_GPU();
  const std::int64_t rows = 257, d = 64;
  const auto dev = smk::Device::cuda(0);
  struct Part {
    DeviceBuffer<float> o, lse;
  };
  const auto make = [&](std::uint32_t seed, bool empty) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0, 1);
    std::vector<float> o(rows * d), lse(rows);
    for (float& x : o) x = empty ? NAN : dist(rng);  // an empty part's O is garbage that must not leak
    for (float& x : lse) x = empty ? -INFINITY : 4 * dist(rng);
    return Part{DeviceBuffer<float>::from_host(o), DeviceBuffer<float>::from_host(lse)};
  };
  const auto merge = [&](Part& x, Part& y) {
    Part out{DeviceBuffer<float>(rows * d), DeviceBuffer<float>(rows)};
    out.o.fill_bytes(0xFF);
    out.lse.fill_bytes(0xFF);
    smk::merge_attention_states(TensorView::of(out.o.data(), {rows, d}, dev), TensorView::of(out.lse.data(), {rows}, dev),
                                TensorView::of(x.o.data(), {rows, d}, dev), TensorView::of(x.lse.data(), {rows}, dev),
                                TensorView::of(y.o.data(), {rows, d}, dev), TensorView::of(y.lse.data(), {rows}, dev));
    return out;
  };
  Part a = make(1, false), b = make(2, false), c = make(3, false), e = make(4, true);
  const auto ah = a.o.to_host(), al = a.lse.to_host();
  for (int order = 0; order < 2; ++order) {
    const Part m = order == 0 ? merge(a, e) : merge(e, a);
    const auto o = m.o.to_host(), l = m.lse.to_host();
    for (std::int64_t i = 0; i < rows * d; ++i) ASSERT_EQ(o[i], ah[i]) << order << ", " << i;
    for (std::int64_t r = 0; r < rows; ++r) ASSERT_EQ(l[r], al[r]) << order << ", " << r;
  }
  Part ab = merge(a, b), ba = merge(b, a);
  const auto abo = ab.o.to_host(), bao = ba.o.to_host(), abl = ab.lse.to_host(), bal = ba.lse.to_host();
  for (std::int64_t i = 0; i < rows * d; ++i) ASSERT_EQ(abo[i], bao[i]) << i;
  for (std::int64_t r = 0; r < rows; ++r) ASSERT_EQ(abl[r], bal[r]) << r;
  Part bc = merge(b, c);
  const Part left = merge(ab, c), right = merge(a, bc);
  const auto lo = left.o.to_host(), ro = right.o.to_host(), ll = left.lse.to_host(), rl = right.lse.to_host();
  const auto bh = b.o.to_host(), ch = c.o.to_host();
  for (std::int64_t r = 0; r < rows; ++r) {
    float scale = 0;
    for (const auto* p : {&ah, &bh, &ch})
      for (std::int64_t x = 0; x < d; ++x) scale = std::max(scale, std::fabs((*p)[r * d + x]));
    for (std::int64_t x = 0; x < d; ++x) ASSERT_NEAR(lo[r * d + x], ro[r * d + x], 8e-6 * scale) << r;
    ASSERT_NEAR(ll[r], rl[r], 4e-6 + 4.8e-7 * std::fabs(ll[r])) << r;
  }
}

// Session 10: the TMA tiles (DecodeConfig::tma on) against the cp.async tiles (off), bitwise, and both against the
// float64 reference: NaN planted at and past every length (the TMA's boxes reach S_max, so those V rows land and
// must be zeroed), mixed lengths whose other splits are all padding, sinks, the issue's lengths with 32/8-style
// groups of 4 and GQA 64/8 (groups of 8: 8 rows a block), D = 64 and 128, bf16 and f16, causal multi-token rows
// with a NaN in the causal band (the V rows the block zeroes and adds on the CUDA cores), and 100003 keys (16
// splits, the last partial). Each forced-TMA call must have launched the TMA kernel (the launch count grows).
// SMK_GPU_TEST_SMALL (the sanitizer's runs) drops the 100003-key case.
template <typename T>
void tma_matches_cp_async(Case<T>& c, bool mma_bound = true) {
  const Expected e = expected_of(c);
  for (const auto& [tma, cp] : {std::pair{&kTmaFused, &kCpAsyncFused}, std::pair{&kTmaCluster, &kCpAsyncCluster}}) {
    SCOPED_TRACE(name_of(tma));
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    const Result t = run_gpu(c, tma);
    EXPECT_EQ(smk::cuda::decode_tma_launches(), before + 1) << "the TMA kernel was not launched";
    const Result ref = run_gpu(c, cp);
    EXPECT_EQ(smk::cuda::decode_tma_launches(), before + 1) << "the cp.async call launched the TMA kernel";
    EXPECT_TRUE(bitwise_equal(t.o, ref.o));
    EXPECT_TRUE(bitwise_equal(t.lse, ref.lse));
    expect_matches(c, e, t, mma_bound);
  }
}
TEST(CudaAttentionDecode, TmaTilesGiveTheCpAsyncBits) {
  SMK_REQUIRE_GPU();
  const bool small = std::getenv("SMK_GPU_TEST_SMALL") != nullptr;
  {
    SCOPED_TRACE("bf16 D=128, groups of 4, mixed lengths (padding splits), sinks");
    Case<smk::bfloat16_t> c(8, 1, 8, 2, 128, 4097, {1, 2, 255, 256, 257, 4097, 0, 1000}, 121);
    tma_matches_cp_async(c);
  }
  {
    SCOPED_TRACE("f16 D=64, groups of 4, mixed lengths, no sinks");
    Case<smk::half_t> c(8, 1, 8, 2, 64, 4097, {1, 2, 255, 256, 257, 4097, 0, 1000}, 122);
    c.with_sinks = false;
    tma_matches_cp_async(c);
  }
  {
    SCOPED_TRACE("bf16 D=128, GQA 64/8 scaled down (16/2: groups of 8), issue lengths, sinks");
    Case<smk::bfloat16_t> c(6, 1, 16, 2, 128, 4097, {1, 2, 255, 256, 257, 4097}, 123);
    tma_matches_cp_async(c);
  }
  {
    SCOPED_TRACE("bf16 D=128, causal 4 tokens, NaN in the causal band");
    Case<smk::bfloat16_t> c(3, 4, 8, 2, 128, 2100, {2000, 3, 2100}, 124);
    c.causal = true;
    for (std::int64_t b = 0; b < c.B; ++b) c.v[((b * c.smax + c.lens[b] - 1) * c.hkv + 1) * c.d + 5] =
        nan_value<smk::bfloat16_t>();
    tma_matches_cp_async(c);
  }
  if (!small) {
    SCOPED_TRACE("bf16 D=128, 100003 keys, 64/8-style group of 8");
    Case<smk::bfloat16_t> c(1, 1, 8, 1, 128, 100003, {100003}, 125);
    tma_matches_cp_async(c);
  }
}

// Session 14 (dec14): LeanCpAsyncIssueGivesTheOldIssuesBits (commit f68c7e8) compared the cp.async issue from lane
// terms formed once with the issue before it, bitwise, at 2 and 3 ring stages, bf16 / f16, mixed lengths with NaN past
// every length, groups of 4 and 8, the causal band's NaN and 100003 keys: passed on the H200 (full size, memcheck and
// racecheck). The old issue is gone; TmaTilesGiveTheCpAsyncBits above keeps the new issue bitwise against the TMA tiles.

// The dispatcher's TMA rule (attention_cuda.hpp, from dec10's run): TMA at caches of 1..1024 and 4097..8192 keys,
// cp.async at 1025..4096 and above 8192. A rule of the cache's length alone (it never sees the batch).
TEST(CudaAttentionDecode, TmaRuleBounds) {
  using smk::cuda::decode_tma_rule;
  if (!smk::cuda::kDecodeTma) GTEST_SKIP() << "kDecodeTma is off: cp.async everywhere";
  for (std::int64_t s : {1, 2, 255, 1024, 4097, 8000, 8192}) EXPECT_TRUE(decode_tma_rule(s)) << s;
  for (std::int64_t s : {1025, 2048, 4096, 8193, 16384, 32768, 100003, 131072}) EXPECT_FALSE(decode_tma_rule(s)) << s;
}
// The dispatcher takes the TMA kernel where its rule says so and the cp.async kernel elsewhere, with the same bits,
// at the rule's bounds (1024 / 1025, 4096 / 4097, 8192 / 8193) and between them. The count means something only if
// the dispatcher runs the tensor-core kernel with 2 ring stages here (the TMA variant's only build) and the driver
// encodes the maps: both asserted first (a forced TMA call must launch it), else the test would pass on a 0 count.
// Session 12: the dispatcher's rule is the grid's (kDecodeTmaByGrid): these small grids (at most 64 blocks) take
// cp.async, so a batch of 64 sequences of 8 KV heads (512 blocks) is added, which takes TMA on the H200.
TEST(CudaAttentionDecode, DispatcherTakesTmaByTheRule) {
  SMK_REQUIRE_GPU();
  if (!smk::cuda::kDecodeTma) GTEST_SKIP() << "kDecodeTma is off";
  ASSERT_TRUE(is_mma(nullptr)) << "the dispatcher's decode kernel is not the tensor-core one";
  ASSERT_EQ(smk::cuda::kDecodeMmaStages, 2) << "the dispatcher's ring stages: the TMA variant is built for 2 only";
  {
    Case<smk::bfloat16_t> c(2, 1, 8, 2, 128, 1000, {1000, 7}, 126);
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    (void)run_gpu(c, &kTmaCluster);
    ASSERT_EQ(smk::cuda::decode_tma_launches() - before, 1u) << "a forced TMA call did not launch the TMA kernel";
  }
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const auto rule = [&](std::int64_t smax, std::int64_t blocks) {
    return smk::cuda::kDecodeTmaByGrid ? smk::cuda::decode_tma_grid_rule(blocks, sms) : smk::cuda::decode_tma_rule(smax);
  };
  const int cap = smk::cuda::decode_max_splits(sms);
  if (smk::cuda::kDecodeTmaByGrid) {
    SCOPED_TRACE("64 sequences, 8 KV heads, one split: 512 blocks");
    std::vector<std::int32_t> lens(64);
    for (int b = 0; b < 64; ++b) lens[b] = 1 + (b * 37) % 300;
    Case<smk::bfloat16_t> c(64, 1, 32, 8, 128, 300, lens, 127);
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    const Result disp = run_gpu(c);
    EXPECT_EQ(smk::cuda::decode_tma_launches() - before, rule(300, 64 * 8) ? 1u : 0u);
    const Result cp = run_gpu(c, &kCpAsyncCluster);
    EXPECT_TRUE(bitwise_equal(disp.o, cp.o));
    EXPECT_TRUE(bitwise_equal(disp.lse, cp.lse));
    expect_matches_reference(c, disp, true);
  }
  for (std::int64_t smax : {1000, 1024, 1025, 3000, 4096, 4097, 8192, 8193, 9000}) {
    SCOPED_TRACE(testing::Message() << "S_max " << smax);
    Case<smk::bfloat16_t> c(2, 1, 8, 2, 128, smax, {static_cast<std::int32_t>(smax), 7}, 126);
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    const Result disp = run_gpu(c);
    const std::int64_t blocks = 2 * 2 * smk::cuda::decode_grid_splits(smax, cap);
    EXPECT_EQ(smk::cuda::decode_tma_launches() - before, rule(smax, blocks) ? 1u : 0u);
    const Result cp = run_gpu(c, &kCpAsyncCluster);
    EXPECT_TRUE(bitwise_equal(disp.o, cp.o));
    EXPECT_TRUE(bitwise_equal(disp.lse, cp.lse));
    expect_matches_reference(c, disp, true);
  }
}

// Session 12 (dec12): the TMA choice by the grid (DecodeConfig::tma_grid, decode_tma_grid_rule): TMA for more than
// kDecodeTmaGridLo and at most kDecodeTmaGridHi blocks per multiprocessor. A host rule: runs without a GPU.
// Review F2: kDecodeTma off must mean cp.async everywhere under both rules. The switch is a compile-time constant and
// the rules are constexpr, so the static_assert pins it at compile time (it has content only in a build with the
// switch off, the one it guards), and the test checks the off case at run time in such a build.
static_assert(smk::cuda::kDecodeTma ||
                  (!smk::cuda::decode_tma_grid_rule(397, 132) && !smk::cuda::decode_tma_grid_rule(1056, 132) &&
                   !smk::cuda::decode_tma_rule(1) && !smk::cuda::decode_tma_rule(8192)),
              "kDecodeTma off: decode_tma_grid_rule and decode_tma_rule must say cp.async everywhere");
TEST(CudaAttentionDecode, TmaGridRuleBounds) {
  using smk::cuda::decode_tma_grid_rule;
  if constexpr (!smk::cuda::kDecodeTma) {
    for (std::int64_t blocks : {1, 396, 397, 512, 1024, 1056, 1057, 4096})
      EXPECT_FALSE(decode_tma_grid_rule(blocks, 132)) << "kDecodeTma off, " << blocks;
    return;
  }
  for (std::int64_t blocks : {1, 8, 128, 256, 396}) EXPECT_FALSE(decode_tma_grid_rule(blocks, 132)) << blocks;
  for (std::int64_t blocks : {397, 512, 1024, 1056}) EXPECT_TRUE(decode_tma_grid_rule(blocks, 132)) << blocks;
  for (std::int64_t blocks : {1057, 2048, 4096}) EXPECT_FALSE(decode_tma_grid_rule(blocks, 132)) << blocks;
}
// Review F18: the grid rule's upper bound through the dispatcher. At one split (S_max = 64 <= kDecodeMinChunk) with
// 8 KV heads and groups of 4 (one block of kDecodeMmaRows rows a KV head), a batch of B sequences launches 8·B blocks:
// B = SMs is 8 blocks an SM, the last grid the rule gives TMA (1056 on the H200's 132 SMs); B = SMs + 1 is past
// it (1064), so cp.async. Expected launch counts are literals (1 and 0), not the rule's output; each dispatcher call
// must give the bits of the forced-TMA call (whose launch is counted too, so a 0 cannot pass vacuously) and match
// the float64 reference. Sequences of 0..64 keys, NaN at and past every length, sinks.
TEST(CudaAttentionDecode, DispatcherTakesCpAsyncAboveTheGridRule) {
  SMK_REQUIRE_GPU();
  if (!smk::cuda::kDecodeTma || !smk::cuda::kDecodeTmaByGrid) GTEST_SKIP() << "the dispatcher's grid rule is off";
  ASSERT_TRUE(is_mma(nullptr)) << "the dispatcher's decode kernel is not the tensor-core one";
  ASSERT_EQ(smk::cuda::kDecodeMmaStages, 2) << "the dispatcher's ring stages: the TMA variant is built for 2 only";
  ASSERT_EQ(smk::cuda::kDecodeTmaGridHi, 8) << "the batches below are set for the rule's bound of 8 blocks an SM";
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const std::int64_t smax = 64, hq = 32, hkv = 8, d = 128;
  ASSERT_EQ(smk::cuda::decode_grid_splits(smax, smk::cuda::decode_max_splits(sms)), 1) << "not one split";
  for (const std::int64_t B : {static_cast<std::int64_t>(sms), static_cast<std::int64_t>(sms) + 1}) {
    SCOPED_TRACE(testing::Message() << B << " sequences, " << B * hkv << " blocks on " << sms << " SMs");
    std::vector<std::int32_t> lens(B);
    for (std::int64_t b = 0; b < B; ++b) lens[b] = static_cast<std::int32_t>((b * 29) % (smax + 1));  // 0..64
    Case<smk::bfloat16_t> c(B, 1, hq, hkv, d, smax, lens, 141 + static_cast<std::uint32_t>(B - sms));
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    const Result disp = run_gpu(c);
    EXPECT_EQ(smk::cuda::decode_tma_launches() - before, B == sms ? 1u : 0u)
        << (B == sms ? "8 blocks an SM must take TMA" : "more than 8 blocks an SM must take cp.async");
    const std::uint64_t before_tma = smk::cuda::decode_tma_launches();
    const Result tma = run_gpu(c, &kTmaCluster);
    ASSERT_EQ(smk::cuda::decode_tma_launches() - before_tma, 1u) << "a forced TMA call did not launch the TMA kernel";
    EXPECT_TRUE(bitwise_equal(disp.o, tma.o));
    EXPECT_TRUE(bitwise_equal(disp.lse, tma.lse));
    expect_matches_reference(c, disp, true);
  }
}
// The grid rule sees the batch, so the same sequence takes cp.async alone and TMA inside a large enough batch: the
// bits must not change (batch invariance rests on the two tiles giving the same bits). Sequences of mixed lengths
// (one key to S_max, an empty one, NaN at and past every length, sinks) with 8 KV heads and groups of 4 at one split
// each: B = 1 and 16 launch 8 and 128 blocks (cp.async on the H200's 132 SMs), B = 64 launches 512 (TMA); each
// sequence alone, its batch of 16 and the batch of 64 give the same bits, the launch counts show which tiles ran
// (the test fails, rather than passing vacuously, if the three did not take both), and the batch matches the float64
// reference.
TEST(CudaAttentionDecode, TmaByTheGridKeepsBatchInvariance) {
  SMK_REQUIRE_GPU();
  using T = smk::bfloat16_t;
  const bool small = std::getenv("SMK_GPU_TEST_SMALL") != nullptr;
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const DecodeConfig grid_rule{0, DecodeScores::dispatcher, DecodeKernel::mma, 2, smk::cuda::DecodeMerge::dispatcher,
                               0, 0, DecodeToggle::dispatcher, DecodeToggle::dispatcher, DecodeToggle::dispatcher,
                               DecodeToggle::dispatcher, DecodeToggle::on};
  const std::int64_t smax = small ? 300 : 600, hq = 32, hkv = 8, d = 128;  // one split: blocks = B · 8
  std::vector<std::int32_t> lens;
  const std::int32_t pick[] = {1, 2, 255, 256, 257, 0, 555, static_cast<std::int32_t>(smax)};
  for (int b = 0; b < 64; ++b) lens.push_back(std::min<std::int32_t>(pick[b % 8] + b / 8, smax));
  Case<T> big(64, 1, hq, hkv, d, smax, lens, 131);
  const auto slice = [&](std::int64_t b0, std::int64_t n) {
    Case<T> c(n, 1, hq, hkv, d, 1, std::vector<std::int32_t>(n, 0), 0);
    const std::int64_t per_q = hq * d, per_kv = smax * hkv * d;
    c.smax = smax;
    c.lens.assign(lens.begin() + b0, lens.begin() + b0 + n);
    c.q.assign(big.q.begin() + b0 * per_q, big.q.begin() + (b0 + n) * per_q);
    c.k.assign(big.k.begin() + b0 * per_kv, big.k.begin() + (b0 + n) * per_kv);
    c.v.assign(big.v.begin() + b0 * per_kv, big.v.begin() + (b0 + n) * per_kv);
    c.v_abs.assign(big.v_abs.begin() + b0 * per_kv, big.v_abs.begin() + (b0 + n) * per_kv);
    c.sinks = big.sinks;
    return c;
  };
  const auto tma_of = [&](std::int64_t B) { return smk::cuda::decode_tma_grid_rule(B * hkv, sms); };  // 1 split
  if (tma_of(1) == tma_of(64)) GTEST_SKIP() << sms << " SMs: B = 1 and 64 take the same tiles, nothing to compare";
  const auto run_counted = [&](const Case<T>& c, bool want_tma) {
    const std::uint64_t before = smk::cuda::decode_tma_launches();
    Result r = run_gpu(c, &grid_rule);
    EXPECT_EQ(smk::cuda::decode_tma_launches() - before, want_tma ? 1u : 0u) << "B = " << c.B;
    return r;
  };
  const Result r64 = run_counted(big, tma_of(64));
  expect_matches_reference(big, r64, true);
  const Case<T> b16 = slice(16, 16);
  const Result r16 = run_counted(b16, tma_of(16));
  const std::int64_t per_o = hq * d, per_l = hq;
  EXPECT_TRUE(bitwise_equal(r16.o, std::vector<float>(r64.o.begin() + 16 * per_o, r64.o.begin() + 32 * per_o)));
  EXPECT_TRUE(bitwise_equal(r16.lse, std::vector<float>(r64.lse.begin() + 16 * per_l, r64.lse.begin() + 32 * per_l)));
  for (std::int64_t b : {16, 21, 23, 31, 63}) {
    SCOPED_TRACE(testing::Message() << "sequence " << b << " of length " << lens[b] << " alone");
    const Result one = run_counted(slice(b, 1), tma_of(1));
    EXPECT_TRUE(bitwise_equal(one.o, std::vector<float>(r64.o.begin() + b * per_o, r64.o.begin() + (b + 1) * per_o)));
    EXPECT_TRUE(bitwise_equal(one.lse, std::vector<float>(r64.lse.begin() + b * per_l, r64.lse.begin() + (b + 1) * per_l)));
  }
}

// The split rule of decode_split.hpp: contiguous chunks that cover [0, L) exactly, at most the cap.
TEST(CudaAttentionDecode, SplitRuleCoversEveryKeyOnce) {
  for (int sms : {1, 8, 132, 200}) {
    const int cap = smk::cuda::decode_max_splits(sms);
    EXPECT_GE(cap, 1);
    EXPECT_LE(cap, smk::cuda::kDecodeSplitCap);
    EXPECT_LE(cap, smk::cuda::kDecodeClusterMax);  // the splits of one (sequence, KV head) fit one cluster
    for (std::int64_t len : {0, 1, 1023, 1024, 1025, 4097, 32768, 100003, 131072, 1 << 22}) {
      const std::int64_t chunk = smk::cuda::decode_chunk(len, cap);
      const int n = smk::cuda::decode_splits(len, cap);
      EXPECT_LE(n, cap) << len;
      EXPECT_GE(n, 1) << len;
      EXPECT_LE(n, smk::cuda::decode_grid_splits(std::max<std::int64_t>(len, 1), cap)) << len;
      if (len > 0) {
        EXPECT_LT((n - 1) * chunk, len) << len;  // the last split holds at least one key
        EXPECT_GE(n * chunk, len) << len;        // and the splits reach the end
      }
    }
  }
}

TEST(CudaAttentionDecode, BadInputs) {
  SMK_REQUIRE_GPU();
  const auto dev = smk::Device::cuda(0);
  const std::int64_t B = 2, hq = 4, hkv = 2, d = 128, smax = 64;
  DeviceBuffer<smk::bfloat16_t> q(B * hq * d), k(B * smax * hkv * d + 8), v(k.size()), o(q.size());
  DeviceBuffer<float> lse(B * hq), qf(q.size()), kf(k.size()), vf(k.size()), of(q.size());
  std::vector<std::int32_t> lens_host = {64, 10};
  auto lens = DeviceBuffer<std::int32_t>::from_host(lens_host);
  const auto Q = TensorView::of(q.data(), {B, 1, hq, d}, dev);
  const auto O = TensorView::of(o.data(), {B, 1, hq, d}, dev);
  const auto L = TensorView::of(lse.data(), {B, hq, 1}, dev);
  const auto K = TensorView::of(k.data(), {B, smax, hkv, d}, dev);
  const auto V = TensorView::of(v.data(), {B, smax, hkv, d}, dev);
  const auto N = TensorView::of(lens.data(), {B}, dev);
  const auto expect = [](smk::ErrorCode code, const std::string& needle, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no error; expected " << needle;
    } catch (const smk::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find("attention_decode"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  // f32 runs on the CPU only.
  expect(smk::ErrorCode::unsupported, "f32", [&] {
    smk::attention_decode(TensorView::of(of.data(), {B, 1, hq, d}, dev), L, TensorView::of(qf.data(), {B, 1, hq, d}, dev),
                          TensorView::of(kf.data(), {B, smax, hkv, d}, dev),
                          TensorView::of(vf.data(), {B, smax, hkv, d}, dev), N);
  });
  // D = 96.
  expect(smk::ErrorCode::unsupported, "head dimensions", [&] {
    smk::attention_decode(TensorView::of(o.data(), {B, 1, 4, 96}, dev), L, TensorView::of(q.data(), {B, 1, 4, 96}, dev),
                          TensorView::of(k.data(), {B, smax, 2, 96}, dev), TensorView::of(v.data(), {B, smax, 2, 96}, dev),
                          N);
  });
  // A cache that is not 16-byte aligned (offset by one element).
  expect(smk::ErrorCode::unsupported, "k_cache", [&] {
    smk::attention_decode(O, L, Q, TensorView::of(k.data() + 1, {B, smax, hkv, d}, dev), V, N);
  });
  // Lengths on the host for device tensors.
  expect(smk::ErrorCode::invalid_argument, "'seqlens'", [&] {
    smk::attention_decode(O, L, Q, K, V, TensorView::of(lens_host.data(), {B}));
  });
  // A length past S_max on the GPU: that sequence's O and LSE are NaN, the other's are written normally.
  std::vector<smk::bfloat16_t> ones(k.size(), smk::to_bfloat16(1.0f));
  k.copy_from_host(ones);
  q.copy_from_host(std::vector<smk::bfloat16_t>(q.size(), smk::to_bfloat16(0.01f)));
  v.copy_from_host(ones);
  lens.copy_from_host(std::vector<std::int32_t>{65, 10});
  for (const DecodeConfig* config : {static_cast<const DecodeConfig*>(nullptr), &kCudaCores, &kMma}) {
    SCOPED_TRACE(name_of(config));
    o.fill_bytes(0xFF);
    lse.fill_bytes(0xFF);
    if (config == nullptr) {
      smk::attention_decode(O, L, Q, K, V, N);
    } else {
      const auto p = smk::detail::check_decode_args("attention_decode", O, L, Q, K, V, N, {});
      smk::cuda::attention_decode(O, L, Q, K, V, N, {}, p, {}, nullptr, *config);
    }
    const auto oh = o.to_host();
    const auto lh = lse.to_host();
    for (std::int64_t i = 0; i < hq * d; ++i) {
      EXPECT_TRUE(std::isnan(smk::to_float(oh[i]))) << i;
      EXPECT_EQ(smk::to_float(oh[hq * d + i]), 1.0f) << i;  // V = 1 everywhere: O = 1 whatever the weights
    }
    for (std::int64_t h = 0; h < hq; ++h) {
      EXPECT_TRUE(std::isnan(lh[h]));
      EXPECT_FALSE(std::isnan(lh[hq + h]));
    }
  }
}

// A row that sees no key (an empty sequence, or a causal token before the cache's first key) gets O = 0 and LSE = the
// sink, whatever the sink — NaN and +inf too, the CPU's rule since session 13 (tests/cpu/test_attention.cpp,
// NoVisibleKeyGivesZeroWhateverTheSink); until session 14 the GPU's fold gave O = NaN there. Rows that see keys follow
// the float64 reference (a NaN sink poisons them, a +inf one gives O = NaN and LSE = +inf), one split or several
// (5000 keys: the merge's fold meets the NaN and +inf sinks too). Every kernel variant and merge.
template <typename T>
void no_key_whatever_the_sink(std::int64_t d) {
  const std::vector<float> sinks = {NAN, INFINITY, -INFINITY, 2.0f};
  for (const DecodeConfig* config :
       {static_cast<const DecodeConfig*>(nullptr), &kOneVector, &kScattered, &kMma, &kMma3, &kMmaMergeKernel,
        &kMmaCap32, &kMmaCluster8, &kTmaFused, &kCpAsyncCluster}) {
    SCOPED_TRACE(testing::Message() << "variant " << name_of(config));
    const bool mma = is_mma(config);
    {
      Case<T> c(4, 1, 4, 1, d, 5000, {0, 3, 0, 5000}, 31);
      c.sinks = sinks;
      SCOPED_TRACE("empty sequences beside 3 and 5000 keys");
      expect_matches_reference(c, run_gpu(c, config), mma);
      const Result got = run_gpu(c, config);
      for (const std::int64_t b : {0, 2})
        for (std::int64_t h = 0; h < c.hq; ++h) {
          for (std::int64_t x = 0; x < d; ++x) ASSERT_EQ(got.o[(b * c.hq + h) * d + x], 0.0f) << b << "," << h;
          const float l = got.lse[b * c.hq + h];
          if (std::isnan(sinks[h])) EXPECT_TRUE(std::isnan(l)) << b << "," << h;
          else EXPECT_EQ(l, sinks[h]) << b << "," << h;
        }
    }
    {
      Case<T> c(2, 3, 4, 1, d, 1500, {1, 1500}, 32);  // tokens 0 and 1 of sequence 0 see no key
      c.causal = true;
      c.sinks = sinks;
      SCOPED_TRACE("causal, 3 tokens over 1 and 1500 keys");
      expect_matches_reference(c, run_gpu(c, config), mma);
    }
  }
}

TEST(CudaAttentionDecode, NoVisibleKeyGivesZeroWhateverTheSink) {
  SMK_REQUIRE_GPU();
  no_key_whatever_the_sink<smk::bfloat16_t>(128);
  no_key_whatever_the_sink<smk::half_t>(64);
}

// Session 15 (dec15; review F1, F2): a part that holds terms is never skipped, also where its weight underflows to 0.
// One key scores ~130 above every other (the outlier, its K row a constant along the positive q), so any key group,
// warp or split that does not hold it weighs less than e^−104 (the smallest f32 subnormal) in the row and its
// coefficient underflows to 0. A non-finite V row planted (dimension 5, KV head 0, so every query head sees it) among
// such keys must still reach O, as on the CPU and in the float64 reference: NaN gives NaN (the reference's NaN);
// +inf gives NaN too, since f32 forms 0·inf where the exact weight e^−130·inf is +inf — the CPU's f32 path gives NaN
// there (asserted first), so that is the expectation, and the reference's +inf elsewhere would be a wrong plant.
// Until session 15 the decode kernels' fold of a block's groups / warps skipped every zero coefficient, so a plant in
// another group or warp of the outlier's split was dropped (finite O). A finite plant (none) checks that the outlier
// itself changes nothing else: the reference within the usual tolerance. Where the outlier and the plant sit:
// 1000 keys (one split): keys 0 and 17 (the outlier's group / warp folds first), 802 and 17 (the plant's first);
// 5000 keys (5 splits of 1024): 0 and 17 (one split, the fold inside it, then the splits' merge carries the NaN
// partial), 0 and 4500 (the plant in the last split: the merge of the splits), 4500 and 17. Key 17 is in lane group
// 1 (17 % NG, NG = 8, 16 or 32 lane groups) or warp 1 (tile 1) of its split; 0 and 802 in group 0 / 2 and warp 0 / 2;
// 4500 is split 4's key 404, tile 25, warp 1. Every kernel variant and merge the dispatcher can pick, forced; under
// SMK_GPU_TEST_SMALL (the sanitizers' runs) bf16 D = 128, NaN plants, three placements and four variants.
enum class Plant { none, nan, inf };
template <typename T>
void underflowing_part_is_kept(std::int64_t d) {
  struct Where {
    std::int32_t len, outlier, planted;
  };
  const bool small = std::getenv("SMK_GPU_TEST_SMALL") != nullptr;
  std::vector<Where> wheres = {{1000, 0, 17}, {1000, 802, 17}, {5000, 0, 17}, {5000, 0, 4500}, {5000, 4500, 17}};
  std::vector<Plant> plants = {Plant::none, Plant::nan, Plant::inf};
  if (small) {  // the sanitizers' runs: the fold inside a split, then the splits' merge, NaN only, four variants
    wheres = {{1000, 802, 17}, {5000, 0, 17}, {5000, 0, 4500}};
    plants = {Plant::nan};
  }
  const std::int64_t hq = 4, hkv = 1;
  for (const Where& w : wheres)
    for (const Plant plant : plants) {
      const char* kind = plant == Plant::none ? " (finite)" : plant == Plant::nan ? " (NaN)" : " (+inf)";
      SCOPED_TRACE(testing::Message() << w.len << " keys, outlier at " << w.outlier << ", plant at " << w.planted
                                      << kind);
      Case<T> c(1, 1, hq, hkv, d, w.len, {w.len}, 151 + static_cast<std::uint32_t>(w.outlier + w.planted));
      for (auto& x : c.q) x = from_float<T>(std::fabs(smk::to_float(x)) + 0.5f);  // positive: every head's outlier
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      double qsum_min = INFINITY;
      for (std::int64_t h = 0; h < hq; ++h) {
        double s = 0;
        for (std::int64_t x = 0; x < d; ++x) s += smk::to_float(c.q[h * d + x]);
        qsum_min = std::min(qsum_min, s);
      }
      const T kc = from_float<T>(static_cast<float>(135.0 / (scale * qsum_min)));
      for (std::int64_t x = 0; x < d; ++x) c.k[w.outlier * hkv * d + x] = kc;
      const std::int64_t at = w.planted * hkv * d + 5;
      if (plant == Plant::nan) c.v[at] = nan_value<T>();
      if (plant == Plant::inf) c.v[at] = from_float<T>(INFINITY);
      if (plant != Plant::none) c.v_abs[at] = from_float<T>(INFINITY);
      // The premise: in every row the outlier scores at least 110 above every other key (e^−110 < 2^−149).
      for (std::int64_t h = 0; h < hq; ++h) {
        double top = -INFINITY, rest = -INFINITY;
        for (std::int64_t j = 0; j < w.len; ++j) {
          double dot = 0;
          for (std::int64_t x = 0; x < d; ++x)
            dot += static_cast<double>(smk::to_float(c.q[h * d + x])) * smk::to_float(c.k[j * hkv * d + x]);
          if (j == w.outlier) top = scale * dot;
          else rest = std::max(rest, scale * dot);
        }
        ASSERT_GT(top - rest, 110.0) << "head " << h;
        ASSERT_LT(top, 200.0) << "head " << h;
      }
      Expected e = expected_of(c);
      if (plant == Plant::inf) {  // the CPU's f32 path: NaN exactly at the planted dimension of each head
        std::vector<T> out(c.q.size());
        std::vector<float> lse(hq);
        smk::cpu::attention_decode(TensorView::of(out.data(), {1, 1, hq, d}), TensorView::of(lse.data(), {1, hq, 1}),
                                   TensorView::of(c.q.data(), {1, 1, hq, d}),
                                   TensorView::of(c.k.data(), {1, c.smax, hkv, d}),
                                   TensorView::of(c.v.data(), {1, c.smax, hkv, d}),
                                   TensorView::of(c.lens.data(), {1}), c.options(c.sinks.data(), smk::Device::cpu()));
        for (std::size_t i = 0; i < out.size(); ++i) {
          const bool planted_dim = i % d == 5;
          ASSERT_EQ(std::isnan(smk::to_float(out[i])), planted_dim) << "the CPU's f32 result, element " << i;
          if (planted_dim) {
            ASSERT_TRUE(std::isinf(e.o[i]) && e.o[i] > 0) << "the float64 reference, element " << i;
            e.o[i] = NAN;
          }
        }
      }
      for (const DecodeConfig* config :
           {static_cast<const DecodeConfig*>(nullptr), &kOneVector, &kScattered, &kMma, &kMma3, &kMmaMergeKernel,
            &kTmaFused, &kTmaCluster, &kCpAsyncFused, &kCpAsyncCluster}) {
        if (small && config != &kScattered && config != &kMmaMergeKernel && config != &kTmaCluster &&
            config != &kCpAsyncFused)
          continue;
        SCOPED_TRACE(testing::Message() << "variant " << name_of(config));
        const Result got = run_gpu(c, config);
        std::size_t nans = 0;
        for (float x : got.o) nans += std::isnan(x) ? 1 : 0;
        EXPECT_EQ(nans, plant == Plant::none ? 0u : static_cast<std::size_t>(hq)) << "one dimension of each head";
        expect_matches(c, e, got, is_mma(config));
      }
    }
}

TEST(CudaAttentionDecode, UnderflowingPartWithNonFiniteVIsKept) {
  SMK_REQUIRE_GPU();
  underflowing_part_is_kept<smk::bfloat16_t>(128);
  if (std::getenv("SMK_GPU_TEST_SMALL") == nullptr) underflowing_part_is_kept<smk::half_t>(64);
}

// Session 17 (dec17): decode_mma_tw_kernel's template flags (decode_mma_tweaks: 2 q's pairs as 32-bit loads, the
// dispatcher's at bf16 D = 128 since dec17; 0 HEAD's kernel forced) give the dispatcher's bits and the reference's
// values. The flags apply to the cp.async launches at 2 stages without clusters (fused merge, merge kernel); the
// cluster and TMA launches must ignore them. A dispatcher's call after the forced ones on the same stream gives the
// same bits again. Mixed lengths with NaN past every length, groups of 4 and 8 (f16 D = 64: HEAD's kernel either way),
// causal tokens with a NaN in the causal band, 100003 keys (16 splits into the fused merge; not under
// SMK_GPU_TEST_SMALL). As run in session 17 (commit 7f9f852) it also covered flags since removed (1, 4, 5, 7, 8).
template <typename T>
void tweaks_match(Case<T>& c, bool each_flag) {
  const Expected e = expected_of(c);
  std::vector<unsigned> sets = {0u};
  if (each_flag) sets = {0u, 2u};
  for (const DecodeConfig* config : {&kCpAsyncFused, &kMmaMergeKernel, &kCpAsyncCluster, &kTmaFused}) {
    SCOPED_TRACE(name_of(config));
    // At bf16 D = 128 (each_flag) the cp.async launches without clusters take the flagged kernel, by the dispatcher's
    // rule and under flag 2; the TMA launches never do (where TMA served: it falls back to cp.async tiles).
    const bool cp_async = config == &kCpAsyncFused || config == &kMmaMergeKernel;
    const std::uint64_t tw0 = smk::cuda::decode_tw_launches(), tma0 = smk::cuda::decode_tma_launches();
    const Result plain = run_gpu(c, config);
    if (each_flag && cp_async) {
      EXPECT_GT(smk::cuda::decode_tw_launches(), tw0) << "the rule's wide-q kernel did not serve";
    }
    if (config == &kTmaFused && smk::cuda::decode_tma_launches() > tma0) {
      EXPECT_EQ(smk::cuda::decode_tw_launches(), tw0) << "a TMA launch took the flagged kernel";
    }
    for (const unsigned tw : sets) {
      SCOPED_TRACE(testing::Message() << "flags " << tw);
      const unsigned before = smk::cuda::decode_mma_tweaks(tw);
      const std::uint64_t tw1 = smk::cuda::decode_tw_launches();
      Result got;
      try {
        got = run_gpu(c, config);
      } catch (...) {
        smk::cuda::decode_mma_tweaks(before);
        throw;
      }
      smk::cuda::decode_mma_tweaks(before);
      if (cp_async) {
        if (tw == 0) EXPECT_EQ(smk::cuda::decode_tw_launches(), tw1) << "flag set 0 must run HEAD's kernel";
        else EXPECT_GT(smk::cuda::decode_tw_launches(), tw1) << "flag set " << tw << " did not take the flagged kernel";
      }
      EXPECT_EQ(before, smk::cuda::kDecodeTweaksRule) << "the switch was left on";
      EXPECT_TRUE(bitwise_equal(got.o, plain.o));
      EXPECT_TRUE(bitwise_equal(got.lse, plain.lse));
      expect_matches(c, e, got, true);
    }
    const Result again = run_gpu(c, config);
    EXPECT_TRUE(bitwise_equal(again.o, plain.o)) << "a default call after the flagged ones";
    EXPECT_TRUE(bitwise_equal(again.lse, plain.lse)) << "a default call after the flagged ones";
  }
}
TEST(CudaAttentionDecode, TweaksGiveTheDefaultBits) {
  SMK_REQUIRE_GPU();
  const bool small = std::getenv("SMK_GPU_TEST_SMALL") != nullptr;
  {
    SCOPED_TRACE("bf16 D=128, groups of 4, mixed lengths");
    Case<smk::bfloat16_t> c(9, 1, 8, 2, 128, 4097, {1, 2, 15, 17, 40, 255, 4097, 0, 1000}, 181);
    tweaks_match(c, true);
  }
  if (!small) {
    SCOPED_TRACE("f16 D=64, groups of 8, mixed lengths, no sinks");
    Case<smk::half_t> c(6, 1, 16, 2, 64, 4097, {1, 33, 255, 256, 4097, 3000}, 182);
    c.with_sinks = false;
    tweaks_match(c, false);
  }
  {
    SCOPED_TRACE("bf16 D=128, causal 4 tokens, NaN in the causal band");
    Case<smk::bfloat16_t> c(3, 4, 8, 2, 128, 2100, {2000, 3, 2100}, 183);
    c.causal = true;
    for (std::int64_t b = 0; b < c.B; ++b) c.v[((b * c.smax + c.lens[b] - 1) * c.hkv + 1) * c.d + 5] =
        nan_value<smk::bfloat16_t>();
    tweaks_match(c, true);
  }
  if (!small) {
    SCOPED_TRACE("bf16 D=128, 100003 keys");
    Case<smk::bfloat16_t> c(1, 1, 4, 1, 128, 100003, {100003}, 184);
    tweaks_match(c, true);
  }
  {
    SCOPED_TRACE("flag sets not built are refused, not run as another");
    Case<smk::half_t> c(1, 1, 4, 1, 64, 300, {300}, 185);
    const unsigned before = smk::cuda::decode_mma_tweaks(2u);  // wide q: built at bf16 D = 128 only
    EXPECT_THROW(run_gpu(c, &kCpAsyncFused), smk::Error);
    smk::cuda::decode_mma_tweaks(before);
  }
}

}  // namespace
