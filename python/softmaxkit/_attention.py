"""Attention (the FlashAttention recurrence) and the merge of partial results: argument plumbing around
softmaxkit._C, no arithmetic here. The semantics are include/softmaxkit/attention.hpp's."""

from . import _C
from ._arrays import framework_of, launch_stream
from ._errors import InvalidArgumentError
from ._ops import _refuse_requires_grad


def _refuse_grad(op, *arrays):
    """attention has no backward yet: a tensor that requires grad would silently lose its gradient, so refuse it."""
    _refuse_requires_grad(op, arrays, "an argument requires grad, but softmaxkit's attention has no backward pass in "
                                      "this version; call it under torch.no_grad() or detach the inputs")


def _inputs(op, stream, named, also_refuse=()):
    """Every call's preamble: refuses arrays that require grad (the inputs and `also_refuse`), takes the launch stream
    from the first input's framework, and views each input. `named`: (array, C++ argument name) pairs, the leading
    one first. Returns the framework, the launch stream and the views, in order."""
    _refuse_grad(op, *(arr for arr, _ in named), *also_refuse)
    fw = framework_of(named[0][0])
    launch = launch_stream(op, fw, stream)
    return fw, launch, [framework_of(arr).view(arr, op, name, launch) for arr, name in named]


def _optional_view(op, arg, arr, launch):
    return None if arr is None else framework_of(arr).view(arr, op, arg, launch)


def _outputs(op, fw, launch, pairs):
    """For each (given array or None, shape, dtype code, C++ name): the array to return, its View, its owner."""
    made = []
    for given, shape, code, name in pairs:
        if given is None:
            arr, owner = fw.empty(op, shape, code)
            made.append((arr, owner.view(arr, op, name, launch, writable=True), owner))
        else:
            made.append((given, framework_of(given).view(given, op, name, launch, writable=True), None))
    return made


def _deliver(fw, launch, made):
    """The results of _outputs as the caller gets them: given arrays as they are, new ones in q's framework."""
    return tuple(arr if owner is None else fw.deliver(arr, owner, launch) for arr, _, owner in made)


def attention(q, k, v, *, scale=None, causal=False, sinks=None, cu_seqlens_q=None, cu_seqlens_k=None, out=None,
              lse=None, stream=None):
    """Scaled dot-product attention with the per-row log-sum-exp: returns (O, LSE).

    For each batch b, query head h (KV head h // (Hq // Hkv): grouped-query attention) and query row i:
    s_j = scale * q_i . k_j over the keys j visible to i, O_i = sum_j softmax(s)_j v_j, LSE_i = log sum_j exp(s_j).

    Args:
        q: [B, Sq, Hq, D] (FlashAttention's layout), or [total_q, Hq, D] packed when cu_seqlens_* are given.
        k, v: [B, Sk, Hkv, D] (or [total_k, Hkv, D]); Hq must be a multiple of Hkv. float32 or float64 on the
            CPU; float16 or bfloat16 anywhere (on a GPU: the tensor-core kernel, head dimension 64 or 128, the
            head dimension contiguous and 16-byte-aligned rows).
        scale: the softmax scale; None means 1/sqrt(D).
        causal: key j is visible to query i when j <= i + Sk - Sq (the diagonal aligned bottom-right).
        sinks: optional float32 [Hq]: one logit per query head joining the softmax's denominator only.
        cu_seqlens_q, cu_seqlens_k: int32 [B + 1] cumulative offsets of packed variable-length sequences.
        out, lse: optional result arrays (O in q's dtype and shape; LSE float32 [B, Hq, Sq], or [Hq, total_q]).
        stream: CUDA stream for CUDA arrays (as in softmaxkit.softmax).

    A query row that sees no key gets O = 0 and LSE = -inf (LSE = its sink when sinks are set). There is no
    backward pass yet: inputs that require grad are refused.
    """
    op = "attention_forward"
    fw, launch, (vq, vk, vv) = _inputs(op, stream, [(q, "q"), (k, "k"), (v, "v")], also_refuse=(out, lse))
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None
    shape = tuple(vq.shape)
    if varlen and len(shape) == 3:
        lse_shape = (shape[1], shape[0])
    elif not varlen and len(shape) == 4:
        lse_shape = (shape[0], shape[2], shape[1])
    else:
        want = "[total_q, Hq, D] (varlen)" if varlen else "[B, Sq, Hq, D]"
        raise InvalidArgumentError(f"{op}: argument 'q': must be {want}, got shape {list(shape)}")
    stat = "f64" if vq.dtype == "f64" else "f32"
    made = _outputs(
        op, fw, launch, [(out, shape, vq.dtype, "out"), (lse, lse_shape, stat, "lse")])
    (_, vo, _), (_, vl, _) = made
    _C.attention_forward(vo, vl, vq, vk, vv, 0.0 if scale is None else float(scale), bool(causal),
                         _optional_view(op, "options.sinks", sinks, launch),
                         _optional_view(op, "options.cu_seqlens_q", cu_seqlens_q, launch),
                         _optional_view(op, "options.cu_seqlens_k", cu_seqlens_k, launch), launch)
    return _deliver(fw, launch, made)


def attention_decode(q, k_cache, v_cache, seqlens, *, scale=None, causal=False, sinks=None, out=None, lse=None,
                     stream=None):
    """Decode attention against a KV cache with per-sequence lengths (split-KV on the GPU): returns (O, LSE).

    Args:
        q: [B, Sq_new, Hq, D], Sq_new <= 8 new tokens per sequence.
        k_cache, v_cache: [B, S_max, Hkv, D]; Hq must be a multiple of Hkv. Rows at or past seqlens[b] are never
            read (NaN there cannot reach the output).
        seqlens: int32 [B], each in [0, S_max], on q's device: sequence b attends to its first seqlens[b] rows.
        scale: the softmax scale; None means 1/sqrt(D).
        causal: among the new tokens, token i sees keys j < seqlens[b] - Sq_new + i + 1 (they are the cache's last
            Sq_new rows).
        sinks: optional float32 [Hq] logits joining each softmax's denominator only.
        out, lse: optional results (O in q's dtype and shape; LSE float32 [B, Hq, Sq_new]).
        stream: CUDA stream for CUDA arrays (as in softmaxkit.softmax).

    dtypes: float16/bfloat16 with D = 64 or 128 on a GPU; float32, float16, bfloat16, float64 and any D on the CPU.
    On a GPU a length outside [0, S_max] gives that sequence NaN (checking it would need a synchronisation); the
    CPU raises. The GPU result is bitwise reproducible and batch-invariant. No backward pass: inputs that require
    grad are refused.
    """
    op = "attention_decode"
    fw, launch, (vq, vk, vv, vs) = _inputs(
        op, stream, [(q, "q"), (k_cache, "k_cache"), (v_cache, "v_cache"), (seqlens, "seqlens")],
        also_refuse=(out, lse))
    shape = tuple(vq.shape)
    if len(shape) != 4:
        raise InvalidArgumentError(f"{op}: argument 'q': must be [B, Sq_new, Hq, D], got shape {list(shape)}")
    stat = "f64" if vq.dtype == "f64" else "f32"
    made = _outputs(
        op, fw, launch, [(out, shape, vq.dtype, "out"), (lse, (shape[0], shape[2], shape[1]), stat, "lse")])
    (_, vo, _), (_, vl, _) = made
    _C.attention_decode(vo, vl, vq, vk, vv, vs, 0.0 if scale is None else float(scale), bool(causal),
                        _optional_view(op, "options.sinks", sinks, launch), launch)
    return _deliver(fw, launch, made)


def merge_attention_states(o_a, lse_a, o_b, lse_b, *, out=None, stream=None):
    """Merges two partial attention results over disjoint key sets by their LSEs: returns (O, LSE) with
    LSE = log(exp(LSE_a) + exp(LSE_b)) and O = exp(LSE_a - LSE) O_a + exp(LSE_b - LSE) O_b.

    o_a, o_b: [..., D], any rank >= 1, the same shape; lse_a, lse_b: o's shape without D, float32 (float64 on the
    CPU for float64 O). An empty part (LSE -inf) is the identity; NaN in either LSE gives NaN. out: optional pair
    (out_o, out_lse), which may be (o_a, lse_a) to accumulate in place.
    """
    op = "merge_attention_states"
    fw, launch, (va, vla, vb, vlb) = _inputs(op, stream, [(o_a, "o_a"), (lse_a, "lse_a"), (o_b, "o_b"),
                                                          (lse_b, "lse_b")])
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 2):
        raise InvalidArgumentError(f"{op}: argument 'out': must be a pair (out_o, out_lse)")
    given = (None, None) if out is None else tuple(out)
    made = _outputs(
        op, fw, launch, [(given[0], tuple(va.shape), va.dtype, "out_o"),
                         (given[1], tuple(vla.shape), vla.dtype, "out_lse")])
    (_, vo, _), (_, vl, _) = made
    _C.merge_attention_states(vo, vl, va, vla, vb, vlb, launch)
    return _deliver(fw, launch, made)
