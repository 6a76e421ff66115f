// C entry points to smk::attention_forward (prefill) and smk::attention_decode for scripts/sdpa_interleaved.py, which
// loads this shared library with ctypes and calls it on torch's own CUDA tensors and current stream, so that ours and
// SDPA's backends are timed interleaved in ONE process on the same inputs (not a test; not installed).
//
// Every tensor is passed as a raw device pointer plus shape and strides (in elements, 4 of each), so torch's
// [B, H, S, D] tensors can reach us as [B, S, H, D] views without a copy:
//   q, out [B, Sq, Hq, D] (out has q's shape; its own strides), k, v [B, Sk, Hkv, D] (one shape, their own strides),
//   lse f32 contiguous [B, Hq, Sq], or null to skip it; decode's seqlens int32 [B] on the device.
// dtype: 0 f32, 1 f16, 2 bf16; scale ≤ 0: 1/√D; stream: a cudaStream_t (torch.cuda.current_stream().cuda_stream).
// Returns 0, or 1 with the message of the exception (smk::Error names the op and the argument) in `err`: no
// exception crosses the C boundary.
#include <cstdint>
#include <cstring>
#include <exception>

#include "softmaxkit/attention.hpp"

namespace {
smk::DType dtype_of(int code) { return code == 1 ? smk::DType::f16 : code == 2 ? smk::DType::bf16 : smk::DType::f32; }

// A rank-4 view on CUDA device 0 (the ops check every field: a bad shape or stride comes back as smk::Error).
smk::TensorView view4(const void* data, smk::DType dt, const std::int64_t* shape, const std::int64_t* strides) {
  smk::TensorView t;
  t.data = const_cast<void*>(data);
  t.dtype = dt;
  t.device = smk::Device::cuda(0);
  t.rank = 4;
  for (int i = 0; i < 4; ++i) {
    t.shape[i] = shape[i];
    t.strides[i] = strides[i];
  }
  return t;
}

int report(const char* what, char* err, int err_len) {
  if (err && err_len > 0) {
    std::strncpy(err, what, static_cast<std::size_t>(err_len) - 1);
    err[err_len - 1] = 0;
  }
  return 1;
}
}  // namespace

extern "C" int smk_attention_forward(void* out, const std::int64_t* out_strides, void* lse, const void* q,
                                     const std::int64_t* q_shape, const std::int64_t* q_strides, const void* k,
                                     const void* v, const std::int64_t* kv_shape, const std::int64_t* k_strides,
                                     const std::int64_t* v_strides, int dtype, int causal, float scale, void* stream,
                                     char* err, int err_len) {
  try {
    const smk::DType dt = dtype_of(dtype);
    smk::AttentionOptions o;
    o.causal = causal != 0;
    if (scale > 0) o.scale = scale;
    const smk::TensorView L =
        lse ? smk::TensorView::contiguous(lse, smk::DType::f32, smk::Device::cuda(0), {q_shape[0], q_shape[2], q_shape[1]})
            : smk::TensorView{};
    smk::attention_forward(view4(out, dt, q_shape, out_strides), L, view4(q, dt, q_shape, q_strides),
                           view4(k, dt, kv_shape, k_strides), view4(v, dt, kv_shape, v_strides), o,
                           smk::Stream{stream});
    return 0;
  } catch (const std::exception& e) {
    return report(e.what(), err, err_len);
  } catch (...) {
    return report("attention_forward: unknown exception", err, err_len);
  }
}

extern "C" int smk_attention_decode(void* out, const std::int64_t* out_strides, void* lse, const void* q,
                                    const std::int64_t* q_shape, const std::int64_t* q_strides, const void* k_cache,
                                    const void* v_cache, const std::int64_t* kv_shape, const std::int64_t* k_strides,
                                    const std::int64_t* v_strides, const void* seqlens, int dtype, int causal,
                                    float scale, void* stream, char* err, int err_len) {
  try {
    const smk::DType dt = dtype_of(dtype);
    smk::AttentionDecodeOptions o;
    o.causal = causal != 0;
    if (scale > 0) o.scale = scale;
    const smk::Device dev = smk::Device::cuda(0);
    const smk::TensorView L =
        lse ? smk::TensorView::contiguous(lse, smk::DType::f32, dev, {q_shape[0], q_shape[2], q_shape[1]})
            : smk::TensorView{};
    smk::attention_decode(view4(out, dt, q_shape, out_strides), L, view4(q, dt, q_shape, q_strides),
                          view4(k_cache, dt, kv_shape, k_strides), view4(v_cache, dt, kv_shape, v_strides),
                          smk::TensorView::contiguous(const_cast<void*>(seqlens), smk::DType::i32, dev, {kv_shape[0]}),
                          o, smk::Stream{stream});
    return 0;
  } catch (const std::exception& e) {
    return report(e.what(), err, err_len);
  } catch (...) {
    return report("attention_decode: unknown exception", err, err_len);
  }
}
