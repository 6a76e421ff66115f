#include "attention/args.hpp"

#include <cmath>
#include <string>

#include "core/validate.hpp"
#include "softmaxkit/core/error.hpp"

namespace smk::detail {

namespace {

DType stat_dtype(const TensorView& t) { return t.dtype == DType::f64 ? DType::f64 : DType::f32; }

std::string dims(std::initializer_list<std::int64_t> shape) {
  std::string s = "[";
  for (std::int64_t x : shape) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
  return s + "]";
}

void expect_shape(const char* op, const char* arg, const TensorView& v, std::initializer_list<std::int64_t> shape) {
  bool ok = v.rank == static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t x : shape) ok = ok && v.shape[d++] == x;
  if (!ok) throw_invalid_argument(op, arg, "shape " + v.shape_str() + " should be " + dims(shape));
}

void check_output(const char* op, const char* arg, const TensorView& v, std::initializer_list<const TensorView*> inputs,
                  std::initializer_list<const char*> names) {
  check_writable(op, arg, v);
  auto name = names.begin();
  for (const TensorView* in : inputs) check_no_overlap(op, arg, v, *name++, *in, false);
}

// The options prefill and decode share: sinks (f32 [Hq], f64 for f64 tensors, on q's device) and the scale,
// resolved (0 means 1/√D). The sinks are an input too: out and lse may not overlap them (docs/semantics.md §4).
double check_sinks_and_scale(const char* op, const TensorView& sinks, float scale, const TensorView& q,
                             std::int64_t hq, std::int64_t d, const TensorView& out, const TensorView& lse) {
  if (sinks.data) {
    check_view(op, "options.sinks", sinks);
    expect_shape(op, "options.sinks", sinks, {hq});
    check_dtype_in(op, "options.sinks", sinks, {stat_dtype(q)});
    check_same_device(op, "options.sinks", sinks, "q", q);
    check_no_overlap(op, "out", out, "options.sinks", sinks, false);
    if (lse.data) check_no_overlap(op, "lse", lse, "options.sinks", sinks, false);
  }
  if (!std::isfinite(scale)) throw_invalid_argument(op, "options.scale", "must be finite (0 means 1/sqrt(D))");
  return scale != 0.0f ? static_cast<double>(scale) : 1.0 / std::sqrt(static_cast<double>(d));
}

}  // namespace

AttentionProblem check_attention_args(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                                      const TensorView& k, const TensorView& v, const AttentionOptions& o) {
  check_view(op, "q", q);
  check_view(op, "k", k);
  check_view(op, "v", v);
  check_view(op, "out", out);
  const bool varlen = o.cu_seqlens_q.data != nullptr || o.cu_seqlens_k.data != nullptr;
  const int rank = varlen ? 3 : 4;
  if (q.rank != rank)
    throw_invalid_argument(op, "q", std::string("must be ") + (varlen ? "[total_q, Hq, D] (varlen)" : "[B, Sq, Hq, D]") +
                                        ", got shape " + q.shape_str());
  if (k.rank != rank) throw_invalid_argument(op, "k", "must have rank " + std::to_string(rank) + ", got " + k.shape_str());
  check_same_shape(op, "v", v, "k", k);
  check_dtype_in(op, "q", q, {DType::f32, DType::f16, DType::bf16, DType::f64});
  check_dtype_in(op, "k", k, {q.dtype});
  check_dtype_in(op, "v", v, {q.dtype});
  if (q.dtype == DType::f64 && !q.device.is_cpu()) throw_invalid_argument(op, "q", "dtype f64 is supported on the CPU only");
  check_same_device(op, "k", k, "q", q);
  check_same_device(op, "v", v, "q", q);
  check_same_device(op, "out", out, "q", q);
  AttentionProblem p{};
  p.varlen = varlen;
  const int h = rank - 2;  // index of the head dimension
  p.hq = q.shape[h];
  p.hkv = k.shape[h];
  p.d = q.shape[rank - 1];
  if (k.shape[rank - 1] != p.d)
    throw_invalid_argument(op, "k", "head dimension " + std::to_string(k.shape[rank - 1]) + " differs from q's " +
                                        std::to_string(p.d));
  if (p.hkv == 0 || p.hq % p.hkv != 0)
    throw_invalid_argument(op, "k", std::to_string(p.hkv) + " KV heads do not divide " + std::to_string(p.hq) +
                                        " query heads (grouped-query attention needs Hq % Hkv == 0)");
  if (varlen) {
    if (!o.cu_seqlens_q.data || !o.cu_seqlens_k.data)
      throw_invalid_argument(op, o.cu_seqlens_q.data ? "options.cu_seqlens_k" : "options.cu_seqlens_q",
                             "must be set too: variable lengths need both cumulative offsets");
    check_view(op, "options.cu_seqlens_q", o.cu_seqlens_q);
    check_view(op, "options.cu_seqlens_k", o.cu_seqlens_k);
    check_dtype_in(op, "options.cu_seqlens_q", o.cu_seqlens_q, {DType::i32});
    check_dtype_in(op, "options.cu_seqlens_k", o.cu_seqlens_k, {DType::i32});
    if (o.cu_seqlens_q.rank != 1 || o.cu_seqlens_q.shape[0] < 1)
      throw_invalid_argument(op, "options.cu_seqlens_q", "must be [B + 1], got " + o.cu_seqlens_q.shape_str());
    expect_shape(op, "options.cu_seqlens_k", o.cu_seqlens_k, {o.cu_seqlens_q.shape[0]});
    check_same_device(op, "options.cu_seqlens_q", o.cu_seqlens_q, "q", q);
    check_same_device(op, "options.cu_seqlens_k", o.cu_seqlens_k, "q", q);
    p.batch = o.cu_seqlens_q.shape[0] - 1;
    p.sq = q.shape[0];
    p.sk = k.shape[0];
    expect_shape(op, "out", out, {p.sq, p.hq, p.d});
    if (lse.data) expect_shape(op, "lse", lse, {p.hq, p.sq});
  } else {
    p.batch = q.shape[0];
    p.sq = q.shape[1];
    p.sk = k.shape[1];
    if (k.shape[0] != p.batch)
      throw_invalid_argument(op, "k", "batch " + std::to_string(k.shape[0]) + " differs from q's " + std::to_string(p.batch));
    check_same_shape(op, "out", out, "q", q);
    if (lse.data) expect_shape(op, "lse", lse, {p.batch, p.hq, p.sq});
  }
  check_dtype_in(op, "out", out, {q.dtype});
  check_output(op, "out", out, {&q, &k, &v}, {"q", "k", "v"});
  if (lse.data) {
    check_view(op, "lse", lse);
    check_dtype_in(op, "lse", lse, {stat_dtype(q)});
    check_same_device(op, "lse", lse, "q", q);
    check_output(op, "lse", lse, {&q, &k, &v, &out}, {"q", "k", "v", "out"});
  }
  if (varlen) {  // the offsets are read while out and lse are written: no overlap (docs/semantics.md §4)
    for (auto [name, cu] :
         {std::pair{"options.cu_seqlens_q", &o.cu_seqlens_q}, {"options.cu_seqlens_k", &o.cu_seqlens_k}}) {
      check_no_overlap(op, "out", out, name, *cu, false);
      if (lse.data) check_no_overlap(op, "lse", lse, name, *cu, false);
    }
  }
  p.scale = check_sinks_and_scale(op, o.sinks, o.scale, q, p.hq, p.d, out, lse);
  return p;
}

DecodeProblem check_decode_args(const char* op, const TensorView& out, const TensorView& lse, const TensorView& q,
                                const TensorView& k, const TensorView& v, const TensorView& seqlens,
                                const AttentionDecodeOptions& o) {
  check_view(op, "q", q);
  check_view(op, "k_cache", k);
  check_view(op, "v_cache", v);
  check_view(op, "out", out);
  check_view(op, "seqlens", seqlens);
  if (q.rank != 4) throw_invalid_argument(op, "q", "must be [B, Sq_new, Hq, D], got shape " + q.shape_str());
  if (k.rank != 4) throw_invalid_argument(op, "k_cache", "must be [B, S_max, Hkv, D], got shape " + k.shape_str());
  check_same_shape(op, "v_cache", v, "k_cache", k);
  check_dtype_in(op, "q", q, {DType::f32, DType::f16, DType::bf16, DType::f64});
  check_dtype_in(op, "k_cache", k, {q.dtype});
  check_dtype_in(op, "v_cache", v, {q.dtype});
  check_same_device(op, "k_cache", k, "q", q);
  check_same_device(op, "v_cache", v, "q", q);
  check_same_device(op, "out", out, "q", q);
  check_same_device(op, "seqlens", seqlens, "q", q);
  DecodeProblem p{};
  p.batch = q.shape[0];
  p.sq = q.shape[1];
  p.hq = q.shape[2];
  p.d = q.shape[3];
  p.s_max = k.shape[1];
  p.hkv = k.shape[2];
  if (p.sq < 1 || p.sq > kDecodeMaxNewTokens)
    throw_invalid_argument(op, "q", "has " + std::to_string(p.sq) + " new tokens per sequence; decode takes 1 to " +
                                        std::to_string(kDecodeMaxNewTokens) + " (use attention_forward for prefill)");
  if (k.shape[0] != p.batch)
    throw_invalid_argument(op, "k_cache", "batch " + std::to_string(k.shape[0]) + " differs from q's " +
                                              std::to_string(p.batch));
  if (k.shape[3] != p.d)
    throw_invalid_argument(op, "k_cache", "head dimension " + std::to_string(k.shape[3]) + " differs from q's " +
                                              std::to_string(p.d));
  if (p.hkv == 0 || p.hq % p.hkv != 0)
    throw_invalid_argument(op, "k_cache", std::to_string(p.hkv) + " KV heads do not divide " + std::to_string(p.hq) +
                                              " query heads (grouped-query attention needs Hq % Hkv == 0)");
  check_dtype_in(op, "seqlens", seqlens, {DType::i32});
  expect_shape(op, "seqlens", seqlens, {p.batch});
  check_same_shape(op, "out", out, "q", q);
  check_dtype_in(op, "out", out, {q.dtype});
  check_output(op, "out", out, {&q, &k, &v, &seqlens}, {"q", "k_cache", "v_cache", "seqlens"});
  if (lse.data) {
    check_view(op, "lse", lse);
    expect_shape(op, "lse", lse, {p.batch, p.hq, p.sq});
    check_dtype_in(op, "lse", lse, {stat_dtype(q)});
    check_same_device(op, "lse", lse, "q", q);
    check_output(op, "lse", lse, {&q, &k, &v, &seqlens, &out}, {"q", "k_cache", "v_cache", "seqlens", "out"});
  }
  p.scale = check_sinks_and_scale(op, o.sinks, o.scale, q, p.hq, p.d, out, lse);
  return p;
}

std::int64_t check_merge_args(const char* op, const TensorView& out_o, const TensorView& out_lse, const TensorView& o_a,
                              const TensorView& lse_a, const TensorView& o_b, const TensorView& lse_b) {
  for (auto [name, t] : {std::pair{"out_o", &out_o}, {"out_lse", &out_lse}, {"o_a", &o_a}, {"lse_a", &lse_a},
                         {"o_b", &o_b}, {"lse_b", &lse_b}})
    check_view(op, name, *t);
  if (o_a.rank < 1) throw_invalid_argument(op, "o_a", "must have at least one dimension (the head dimension)");
  check_dtype_in(op, "o_a", o_a, {DType::f32, DType::f16, DType::bf16, DType::f64});
  if (o_a.dtype == DType::f64 && !o_a.device.is_cpu())
    throw_invalid_argument(op, "o_a", "dtype f64 is supported on the CPU only");
  check_same_shape(op, "o_b", o_b, "o_a", o_a);
  check_same_shape(op, "out_o", out_o, "o_a", o_a);
  check_dtype_in(op, "o_b", o_b, {o_a.dtype});
  check_dtype_in(op, "out_o", out_o, {o_a.dtype});
  bool ok = lse_a.rank == o_a.rank - 1;
  for (int d = 0; ok && d < lse_a.rank; ++d) ok = lse_a.shape[d] == o_a.shape[d];
  if (!ok)
    throw_invalid_argument(op, "lse_a", "shape " + lse_a.shape_str() + " must be 'o_a' shape " + o_a.shape_str() +
                                            " without its last dimension");
  check_same_shape(op, "lse_b", lse_b, "lse_a", lse_a);
  check_same_shape(op, "out_lse", out_lse, "lse_a", lse_a);
  for (auto [name, t] : {std::pair{"lse_a", &lse_a}, {"lse_b", &lse_b}, {"out_lse", &out_lse}})
    check_dtype_in(op, name, *t, {stat_dtype(o_a)});
  for (auto [name, t] : {std::pair{"o_b", &o_b}, {"out_o", &out_o}, {"lse_a", &lse_a}, {"lse_b", &lse_b},
                         {"out_lse", &out_lse}})
    check_same_device(op, name, *t, "o_a", o_a);
  check_writable(op, "out_o", out_o);
  check_writable(op, "out_lse", out_lse);
  // Exact aliasing (accumulating into one of the inputs) is safe: each element is read before it is written.
  check_no_overlap(op, "out_o", out_o, "o_a", o_a, true);
  check_no_overlap(op, "out_o", out_o, "o_b", o_b, true);
  check_no_overlap(op, "out_lse", out_lse, "lse_a", lse_a, true);
  check_no_overlap(op, "out_lse", out_lse, "lse_b", lse_b, true);
  for (auto [name, t] : {std::pair{"lse_a", &lse_a}, {"lse_b", &lse_b}, {"out_lse", &out_lse}})
    check_no_overlap(op, "out_o", out_o, name, *t, false);
  check_no_overlap(op, "out_lse", out_lse, "o_a", o_a, false);
  check_no_overlap(op, "out_lse", out_lse, "o_b", o_b, false);
  return rows_excluding(o_a, o_a.rank - 1);
}

}  // namespace smk::detail
