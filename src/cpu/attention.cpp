// softmaxkit CPU backend: attention forward and the merge of partial states, one algorithm templated on the compute
// type (Acc = float: the float path, double for f64 tensors; Acc = double: the reference).
//
// Attention is the article's Step 4 generalised: for each query row, keys in blocks of kBlock; each block's scores
// form an OnlineSoftmaxState that merges into the row's, and merge_weights rescales the un-normalised output. Only
// visible keys are read (causal, varlen), so NaN beyond them cannot leak in. The sink, if any, merges in as one
// more state with no value row.
#include <cmath>
#include <string>
#include <vector>

#include "attention/args.hpp"
#include "cpu/attention_internal.hpp"
#include "cpu/rows.hpp"
#include "softmaxkit/attention.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/online_state.hpp"

namespace smk::cpu {

namespace {

using smk::detail::AttentionProblem;

constexpr std::int64_t kBlock = 256;  // keys per block: the article's choice; any size gives the same result

std::int32_t offset_at(const TensorView& cu, std::int64_t i) {
  return static_cast<const std::int32_t*>(cu.data)[i * cu.strides[0]];
}

void check_offsets(const char* op, const char* arg, const TensorView& cu, std::int64_t total) {
  std::int64_t prev = 0;
  for (std::int64_t i = 0; i < cu.shape[0]; ++i) {
    const std::int64_t x = offset_at(cu, i);
    if ((i == 0 && x != 0) || x < prev || x > total)
      throw_invalid_argument(op, arg, "offsets must start at 0, never decrease and stay within " +
                                          std::to_string(total) + "; entry " + std::to_string(i) + " is " +
                                          std::to_string(x));
    prev = x;
  }
}

template <typename Acc>
void attention(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
               const TensorView& v, const AttentionOptions& o) {
  const AttentionProblem p = smk::detail::check_attention_args(op, out, lse, q, k, v, o);
  if (!q.device.is_cpu()) throw_invalid_argument(op, "q", "is on " + q.device.str() + ", expected cpu");
  if (p.varlen) {
    check_offsets(op, "options.cu_seqlens_q", o.cu_seqlens_q, p.sq);
    check_offsets(op, "options.cu_seqlens_k", o.cu_seqlens_k, p.sk);
  }
  const int r = p.varlen ? 0 : 1;  // index of the sequence dimension
  const std::int64_t group = p.hq / p.hkv;
  const Acc scale = static_cast<Acc>(p.scale);
  std::vector<Acc> qrow(p.d), acc(p.d), scores(kBlock);
  detail::with_type(q.dtype, q.data, [&](auto* qd) {
    auto* kd = static_cast<decltype(qd)>(k.data);
    auto* vd = static_cast<decltype(qd)>(v.data);
    auto* od = static_cast<decltype(qd)>(out.data);
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t q0 = p.varlen ? offset_at(o.cu_seqlens_q, b) : 0;
      const std::int64_t k0 = p.varlen ? offset_at(o.cu_seqlens_k, b) : 0;
      const std::int64_t nq = p.varlen ? offset_at(o.cu_seqlens_q, b + 1) - q0 : p.sq;
      const std::int64_t nk = p.varlen ? offset_at(o.cu_seqlens_k, b + 1) - k0 : p.sk;
      const std::int64_t qb = p.varlen ? 0 : b * q.strides[0], kb = p.varlen ? 0 : b * k.strides[0];
      const std::int64_t vb = p.varlen ? 0 : b * v.strides[0], ob = p.varlen ? 0 : b * out.strides[0];
      for (std::int64_t h = 0; h < p.hq; ++h) {
        const std::int64_t hk = h / group;
        for (std::int64_t i = 0; i < nq; ++i) {
          const auto* qi = qd + qb + (q0 + i) * q.strides[r] + h * q.strides[r + 1];
          for (std::int64_t x = 0; x < p.d; ++x) qrow[x] = detail::load<Acc>(qi + x * q.strides[r + 2]);
          // Causal, bottom-right aligned: row i sees keys j ≤ i + (nk − nq).
          const std::int64_t visible = o.causal ? std::max<std::int64_t>(0, std::min(nk, i + (nk - nq) + 1)) : nk;
          OnlineSoftmaxState<Acc> state = OnlineSoftmaxState<Acc>::empty();
          std::fill(acc.begin(), acc.end(), Acc(0));
          for (std::int64_t j0 = 0; j0 < visible; j0 += kBlock) {
            const std::int64_t nb = std::min(kBlock, visible - j0);
            Acc max = -smk::detail::inf_<Acc>();
            for (std::int64_t j = 0; j < nb; ++j) {
              const auto* kj = kd + kb + (k0 + j0 + j) * k.strides[r] + hk * k.strides[r + 1];
              Acc dot = 0;
              for (std::int64_t x = 0; x < p.d; ++x) dot += qrow[x] * detail::load<Acc>(kj + x * k.strides[r + 2]);
              scores[j] = scale * dot;
              max = nan_max(max, scores[j]);
            }
            const Acc shift = OnlineSoftmaxState<Acc>::shift_for(max);
            for (std::int64_t j = 0; j < nb; ++j) scores[j] = exp_diff(scores[j], shift);
            const auto block = OnlineSoftmaxState<Acc>::from_max_and_sum(max, detail::pairwise_sum(scores.data(), nb));
            const auto w = state.merge_weights(block);
            for (std::int64_t x = 0; x < p.d; ++x) acc[x] *= w.self;
            for (std::int64_t j = 0; j < nb; ++j) {
              const Acc pj = scores[j] * w.other;
              const auto* vj = vd + vb + (k0 + j0 + j) * v.strides[r] + hk * v.strides[r + 1];
              for (std::int64_t x = 0; x < p.d; ++x) acc[x] += pj * detail::load<Acc>(vj + x * v.strides[r + 2]);
            }
            state.merge(block);
          }
          if (o.sinks.data) {  // one more score, with no value row: only the denominator grows
            Acc sink = 0;
            detail::with_type(o.sinks.dtype, o.sinks.data,
                              [&](auto* s) { sink = detail::load<Acc>(s + h * o.sinks.strides[0]); });
            const auto sink_state = OnlineSoftmaxState<Acc>::from_lse(sink);
            const auto w = state.merge_weights(sink_state);
            if (visible > 0)  // no key: acc holds no term to rescale (a NaN or +inf sink's NaN weight would poison it)
              for (std::int64_t x = 0; x < p.d; ++x) acc[x] *= w.self;
            state.merge(sink_state);
          }
          // No visible key: O = 0 by definition, whatever the sink (the header; NaN or +inf sinks too, as torch's
          // P·V over no keys); LSE is the sink's. Every key −inf and no sink mass: the empty state, O = 0, never 0/0.
          const Acc inv = state.is_empty() || visible == 0 ? Acc(0) : Acc(1) / state.l();
          auto* oi = od + ob + (q0 + i) * out.strides[r] + h * out.strides[r + 1];
          for (std::int64_t x = 0; x < p.d; ++x) detail::store(oi + x * out.strides[r + 2], acc[x] * inv);
          if (lse.data) {
            const std::int64_t off = p.varlen ? h * lse.strides[0] + (q0 + i) * lse.strides[1]
                                              : b * lse.strides[0] + h * lse.strides[1] + i * lse.strides[2];
            detail::with_type(lse.dtype, lse.data, [&](auto* l) { detail::store(l + off, state.lse()); });
          }
        }
      }
    }
  });
}

// Element offset of flat row index `row` (over every dimension of `t` but the last `drop` ones).
std::int64_t row_offset(const TensorView& t, std::int64_t row, int drop) {
  std::int64_t off = 0;
  for (int d = t.rank - 1 - drop; d >= 0; --d) {
    off += (row % t.shape[d]) * t.strides[d];
    row /= t.shape[d];
  }
  return off;
}

template <typename Acc>
void merge(const char* op, const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
           const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b) {
  const std::int64_t rows = smk::detail::check_merge_args(op, out_o, out_lse, o_a, lse_a, o_b, lse_b);
  if (!o_a.device.is_cpu()) throw_invalid_argument(op, "o_a", "is on " + o_a.device.str() + ", expected cpu");
  const std::int64_t d = o_a.shape[o_a.rank - 1];
  const int last = o_a.rank - 1;
  detail::with_type(o_a.dtype, o_a.data, [&](auto* pa) {
    auto* pb = static_cast<decltype(pa)>(o_b.data);
    auto* po = static_cast<decltype(pa)>(out_o.data);
    detail::with_type(lse_a.dtype, lse_a.data, [&](auto* la) {
      auto* lb = static_cast<decltype(la)>(lse_b.data);
      auto* lo = static_cast<decltype(la)>(out_lse.data);
      for (std::int64_t row = 0; row < rows; ++row) {
        const auto a = OnlineSoftmaxState<Acc>::from_lse(detail::load<Acc>(la + row_offset(lse_a, row, 0)));
        const auto b = OnlineSoftmaxState<Acc>::from_lse(detail::load<Acc>(lb + row_offset(lse_b, row, 0)));
        const auto w = a.merge_weights(b);
        auto merged = a;
        merged.merge(b);
        // Each part is already normalised (its l is 1): O = (w_a·O_a + w_b·O_b) / (w_a + w_b). Two empty parts give
        // O = 0 whatever their O held.
        const Acc inv = Acc(1) / merged.l();
        const std::int64_t oa = row_offset(o_a, row, 1), ob = row_offset(o_b, row, 1), oo = row_offset(out_o, row, 1);
        for (std::int64_t x = 0; x < d; ++x) {
          const Acc va = detail::load<Acc>(pa + oa + x * o_a.strides[last]);
          const Acc vb = detail::load<Acc>(pb + ob + x * o_b.strides[last]);
          // An empty side (LSE −inf) is skipped, so its O (0, or garbage a caller left) cannot make NaN. A non-empty
          // side is always added, even where its weight underflows to 0: its inf or NaN O then still reaches the sum
          // (0·NaN = NaN), as the exact e^(L_a − L)·O_a would, and as attention_forward's own P·V does. NaN weights
          // (a NaN or +inf LSE) poison the sum.
          Acc sum = 0;
          if (!a.is_empty()) sum += w.self * va;
          if (!b.is_empty()) sum += w.other * vb;
          detail::store(po + oo + x * out_o.strides[last], merged.is_empty() ? Acc(0) : sum * inv);
        }
        detail::store(lo + row_offset(out_lse, row, 0), merged.lse());
      }
    });
  });
}

// Decode is attention_forward on each sequence's first seqlens[b] cache rows (the causal diagonal aligns
// bottom-right against that length, as it does against Sk), so it runs the same recurrence on per-sequence views.
template <typename Acc>
void decode(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
            const TensorView& v, const TensorView& seqlens, const AttentionDecodeOptions& o) {
  const auto p = smk::detail::check_decode_args(op, out, lse, q, k, v, seqlens, o);
  if (!q.device.is_cpu()) throw_invalid_argument(op, "q", "is on " + q.device.str() + ", expected cpu");
  const auto* lens = static_cast<const std::int32_t*>(seqlens.data);
  for (std::int64_t b = 0; b < p.batch; ++b) {  // every length first: a rejected call writes nothing
    const std::int64_t n = lens[b * seqlens.strides[0]];
    if (n < 0 || n > p.s_max)
      throw_invalid_argument(op, "seqlens", "entry " + std::to_string(b) + " is " + std::to_string(n) +
                                                ", outside [0, S_max = " + std::to_string(p.s_max) + "]");
  }
  AttentionOptions fo;
  fo.scale = o.scale;  // 0 stays 0: attention() resolves 1/√D in its own precision
  fo.causal = o.causal;
  fo.sinks = o.sinks;
  // One sequence of a [B, ...] view: batch index b, and the first `len` rows of dimension 1. An empty view may have
  // null data (a cache of S_max = 0): no offset is applied to it (null + offset is undefined behaviour).
  const auto slice = [](TensorView t, std::int64_t b, std::int64_t len) {
    if (t.data) t.data = static_cast<char*>(t.data) + b * t.strides[0] * static_cast<std::int64_t>(dtype_size(t.dtype));
    t.shape[0] = 1;
    t.shape[1] = len;
    return t;
  };
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t n = lens[b * seqlens.strides[0]];
    attention<Acc>(op, slice(out, b, p.sq), lse.data ? slice(lse, b, p.hq) : lse, slice(q, b, p.sq),
                   slice(k, b, n), slice(v, b, n), fo);
  }
}

}  // namespace

namespace internal {
void attention_decode(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                      const TensorView& k_cache, const TensorView& v_cache, const TensorView& seqlens,
                      const AttentionDecodeOptions& options) {
  if (q.dtype == DType::f64) decode<double>(op, out, lse, q, k_cache, v_cache, seqlens, options);
  else decode<float>(op, out, lse, q, k_cache, v_cache, seqlens, options);
}
void attention_forward(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const AttentionOptions& options) {
  if (q.dtype == DType::f64) attention<double>(op, out, lse, q, k, v, options);
  else attention<float>(op, out, lse, q, k, v, options);
}
}  // namespace internal

void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options) {
  internal::attention_decode("cpu::attention_decode", out, lse, q, k_cache, v_cache, seqlens, options);
}
namespace reference {
void attention_decode(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k_cache,
                      const TensorView& v_cache, const TensorView& seqlens, const AttentionDecodeOptions& options) {
  decode<double>("cpu::reference::attention_decode", out, lse, q, k_cache, v_cache, seqlens, options);
}
}  // namespace reference

void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options) {
  internal::attention_forward("cpu::attention_forward", out, lse, q, k, v, options);
}
void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b) {
  if (o_a.dtype == DType::f64) merge<double>("cpu::merge_attention_states", out_o, out_lse, o_a, lse_a, o_b, lse_b);
  else merge<float>("cpu::merge_attention_states", out_o, out_lse, o_a, lse_a, o_b, lse_b);
}

namespace reference {
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q, const TensorView& k,
                       const TensorView& v, const AttentionOptions& options) {
  attention<double>("cpu::reference::attention_forward", out, lse, q, k, v, options);
}
void merge_attention_states(const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                            const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b) {
  merge<double>("cpu::reference::merge_attention_states", out_o, out_lse, o_a, lse_a, o_b, lse_b);
}
}  // namespace reference

}  // namespace smk::cpu
