"""softmaxkit.attention and softmaxkit.merge_attention_states from Python.

CPU (NumPy, runs in CI): against a float64 evaluation of the definition written here, independent of the library
(all scores at once, no blocks). GPU (torch, the `gpu` mark): the tensor-core kernel against a float64 reference
computed by torch on the GPU, with issue 7's rule from FlashAttention's tests: our bf16 error is at most twice
torch's own bf16 SDPA error against the same reference.
"""

import math

import numpy as np
import pytest

import softmaxkit as smk


def reference(q, k, v, scale=None, causal=False, sinks=None):
    """O and LSE in float64 for [B, Sq, Hq, D] q and [B, Sk, Hkv, D] k, v, straight from the definition."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    group = hq // hkv
    o = np.zeros_like(q)
    lse = np.full((b, hq, sq), -np.inf)
    for h in range(hq):
        s = scale * np.einsum("bid,bjd->bij", q[:, :, h], k[:, :, h // group])
        if causal:
            i = np.arange(sq)[:, None]
            j = np.arange(sk)[None, :]
            s = np.where(j <= i + sk - sq, s, -np.inf)
        cols = [s] if sinks is None else [s, np.full((b, sq, 1), float(sinks[h]))]
        full = np.concatenate(cols, axis=2)
        m = full.max(axis=2, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(full - m)
        l = e.sum(axis=2, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(l > 0, e[:, :, :sk] / np.where(l > 0, l, 1), 0.0)
            lse[:, h] = np.where(l[..., 0] > 0, m[..., 0] + np.log(np.where(l[..., 0] > 0, l[..., 0], 1)), -np.inf)
        o[:, :, h] = np.einsum("bij,bjd->bid", p, v[:, :, h // group])
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq, sk", [(5, 5), (3, 9), (9, 3)])
def test_cpu_float32_against_definition(causal, sq, sk):
    rng = np.random.default_rng(sq * 10 + sk)
    q = rng.standard_normal((2, sq, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, sk, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, sk, 2, 8)).astype(np.float32)
    sinks = rng.standard_normal(4).astype(np.float32)
    for s in (None, sinks):
        o, lse = smk.attention(q, k, v, causal=causal, sinks=s)
        o_ref, lse_ref = reference(q, k, v, causal=causal, sinks=s)
        assert o.dtype == np.float32 and lse.dtype == np.float32 and lse.shape == (2, 4, sq)
        # f32 path: scores to ~D u |q||k| relative, probabilities and O to a few u: 1e-5 is ~100x that for D = 8.
        np.testing.assert_allclose(o, o_ref, rtol=1e-5, atol=1e-5)
        fin = np.isfinite(lse_ref)
        np.testing.assert_array_equal(lse[~fin], lse_ref[~fin])
        np.testing.assert_allclose(lse[fin], lse_ref[fin], rtol=1e-5, atol=1e-5)


def test_cpu_varlen_matches_per_sequence_calls():
    rng = np.random.default_rng(3)
    lq, lk = [3, 1, 4], [5, 2, 4]
    q = rng.standard_normal((sum(lq), 2, 8)).astype(np.float32)
    k = rng.standard_normal((sum(lk), 1, 8)).astype(np.float32)
    v = rng.standard_normal((sum(lk), 1, 8)).astype(np.float32)
    cq = np.cumsum([0] + lq).astype(np.int32)
    ck = np.cumsum([0] + lk).astype(np.int32)
    o, lse = smk.attention(q, k, v, causal=True, cu_seqlens_q=cq, cu_seqlens_k=ck)
    assert lse.shape == (2, sum(lq))
    for i in range(3):
        qs, ks = slice(cq[i], cq[i + 1]), slice(ck[i], ck[i + 1])
        o_ref, lse_ref = reference(q[None, qs], k[None, ks], v[None, ks], causal=True)
        np.testing.assert_allclose(o[qs], o_ref[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(lse[:, qs], lse_ref[0], rtol=1e-5, atol=1e-5)


def test_cpu_merge_of_two_halves_is_the_whole():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 3, 2, 8))
    k = rng.standard_normal((1, 10, 2, 8))
    v = rng.standard_normal((1, 10, 2, 8))
    oa, la = smk.attention(q, k[:, :4], v[:, :4])
    ob, lb = smk.attention(q, k[:, 4:], v[:, 4:])
    # o is [B, S, H, D], lse [B, H, S]: view the LSEs as [B, S, H] to match o's leading dimensions.
    o, lse = smk.merge_attention_states(oa, la.transpose(0, 2, 1), ob, lb.transpose(0, 2, 1))
    o_ref, lse_ref = reference(q, k, v)
    np.testing.assert_allclose(o, o_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, lse_ref.transpose(0, 2, 1), rtol=1e-12, atol=1e-12)


def test_errors_name_the_argument():
    q = np.zeros((2, 3, 8), np.float32)
    with pytest.raises(smk.InvalidArgumentError, match="'q'"):
        smk.attention(q, q, q)
    q4 = np.zeros((1, 2, 3, 8), np.float32)
    k4 = np.zeros((1, 2, 2, 8), np.float32)
    with pytest.raises(smk.InvalidArgumentError, match="'k'"):
        smk.attention(q4, k4, k4)  # 2 KV heads do not divide 3 query heads


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("sq, sk", [(1, 127), (129, 129), (1000, 257), (257, 1000)])
def test_gpu_error_at_most_twice_torch_sdpa(causal, d, sq, sk):
    import torch

    torch.manual_seed(sq * 7 + sk + d)
    b, hq, hkv = 2, 8, 2
    q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        o, lse = smk.attention(q, k, v, causal=causal)
        # The float64 reference and torch's own bf16 SDPA on the same inputs ([B, H, S, D], KV heads repeated).
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        kt, vt = (x.repeat_interleave(hq // hkv, dim=1) for x in (kt, vt))
        s = (qt.double() @ kt.double().transpose(-1, -2)) / math.sqrt(d)
        if causal:
            i = torch.arange(sq, device="cuda")[:, None]
            j = torch.arange(sk, device="cuda")[None, :]
            s = s.masked_fill(j > i + sk - sq, -math.inf)
        lse_ref = torch.logsumexp(s, dim=-1)
        p = torch.nan_to_num(torch.exp(s - lse_ref[..., None]), nan=0.0)
        o_ref = (p @ vt.double()).transpose(1, 2)
        o_pt = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=False, attn_mask=(
            (torch.arange(sk, device="cuda")[None, :] <= torch.arange(sq, device="cuda")[:, None] + sk - sq)
            if causal else None)).transpose(1, 2)
    assert o.dtype == torch.bfloat16 and lse.dtype == torch.float32 and lse.shape == (b, hq, sq)
    seen = torch.isfinite(lse_ref)
    ours = (o.double() - o_ref)[seen.transpose(1, 2)].abs().max().item() if seen.any() else 0.0
    theirs = (o_pt.double() - o_ref)[seen.transpose(1, 2)].abs().max().item() if seen.any() else 0.0
    assert ours <= 2 * theirs + 1e-6, f"our max error {ours:.3g} > 2 x torch's {theirs:.3g}"
    # Rows with no visible key (causal, Sq > Sk): O = 0 and LSE = -inf exactly.
    assert torch.all(o.transpose(1, 2)[~seen] == 0)
    assert torch.all(lse[~seen] == -math.inf)
    # LSE: f32 scores of D exact bf16 products; 1e-4 absolute is ~20x the D·2^-24·scale·|q||k| bound here.
    assert (lse.double() - lse_ref)[seen].abs().max().item() <= 1e-4 * (1 + lse_ref[seen].abs().max().item())


@pytest.mark.gpu
def test_gpu_sinks_gqa_varlen_against_reference():
    import torch

    torch.manual_seed(5)
    lq, lk = [7, 130, 1], [130, 64, 9]
    hq, hkv, d = 8, 2, 128
    q = torch.randn(sum(lq), hq, d, device="cuda", dtype=torch.float16)
    k = torch.randn(sum(lk), hkv, d, device="cuda", dtype=torch.float16)
    v = torch.randn(sum(lk), hkv, d, device="cuda", dtype=torch.float16)
    sinks = torch.randn(hq, device="cuda", dtype=torch.float32)
    cq = torch.tensor([0] + list(np.cumsum(lq)), dtype=torch.int32, device="cuda")
    ck = torch.tensor([0] + list(np.cumsum(lk)), dtype=torch.int32, device="cuda")
    o, lse = smk.attention(q, k, v, causal=True, sinks=sinks, cu_seqlens_q=cq, cu_seqlens_k=ck)
    for i in range(3):
        qs, ks = slice(int(cq[i]), int(cq[i + 1])), slice(int(ck[i]), int(ck[i + 1]))
        o_ref, lse_ref = reference(q[qs][None].cpu().numpy(), k[ks][None].cpu().numpy(), v[ks][None].cpu().numpy(),
                                   causal=True, sinks=sinks.cpu().numpy())
        # f16 (u = 2^-11): P rounded before P·V and O rounded once: u (sum p|v| + |O|) <= ~4u max|v| here.
        np.testing.assert_allclose(o[qs].double().cpu().numpy(), o_ref[0], atol=5e-3, rtol=0)
        np.testing.assert_allclose(lse[:, qs].double().cpu().numpy(), lse_ref[0], atol=1e-4, rtol=1e-5)


def decode_reference(q, k, v, seqlens, causal=False, sinks=None):
    """attention_decode from the definition: sequence b's new tokens against its first seqlens[b] cache rows."""
    outs, lses = [], []
    for b, n in enumerate(seqlens):
        o, lse = reference(q[b:b + 1], k[b:b + 1, :n], v[b:b + 1, :n], causal=causal, sinks=sinks)
        outs.append(o)
        lses.append(lse)
    return np.concatenate(outs), np.concatenate(lses)


@pytest.mark.parametrize("causal", [False, True])
def test_cpu_decode_against_definition_nan_past_each_length(causal):
    rng = np.random.default_rng(6)
    b, s_max, hq, hkv, d, new = 3, 40, 4, 2, 8, 3
    q = rng.standard_normal((b, new, hq, d)).astype(np.float32)
    k = rng.standard_normal((b, s_max, hkv, d)).astype(np.float32)
    v = rng.standard_normal((b, s_max, hkv, d)).astype(np.float32)
    seqlens = np.array([40, 17, 2], dtype=np.int32)
    for i, n in enumerate(seqlens):  # rows past a sequence's length must never be read
        k[i, n:] = np.nan
        v[i, n:] = np.nan
    sinks = rng.standard_normal(hq).astype(np.float32)
    for s in (None, sinks):
        o, lse = smk.attention_decode(q, k, v, seqlens, causal=causal, sinks=s)
        assert o.shape == q.shape and lse.shape == (b, hq, new)
        o_ref, lse_ref = decode_reference(q, k, v, seqlens, causal=causal, sinks=s)
        assert np.all(np.isfinite(o))
        np.testing.assert_allclose(o, o_ref, rtol=1e-5, atol=1e-5)
        fin = np.isfinite(lse_ref)
        np.testing.assert_array_equal(lse[~fin], lse_ref[~fin])
        np.testing.assert_allclose(lse[fin], lse_ref[fin], rtol=1e-5, atol=1e-5)


def test_cpu_decode_bad_length_is_an_error():
    q = np.zeros((1, 1, 2, 8), np.float32)
    k = np.zeros((1, 4, 2, 8), np.float32)
    with pytest.raises(smk.InvalidArgumentError, match="seqlens"):
        smk.attention_decode(q, k, k, np.array([5], np.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_decode_against_reference(d):
    import torch

    torch.manual_seed(d)
    b, s_max, hq, hkv, new = 3, 3000, 8, 2, 2
    q = torch.randn(b, new, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, s_max, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, s_max, hkv, d, device="cuda", dtype=torch.bfloat16)
    lens = [3000, 1025, 1]
    for i, n in enumerate(lens):
        k[i, n:] = float("nan")
        v[i, n:] = float("nan")
    seqlens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    o, lse = smk.attention_decode(q, k, v, seqlens, causal=True)
    o_ref, lse_ref = decode_reference(q.float().cpu().numpy(), k.float().cpu().numpy(), v.float().cpu().numpy(),
                                      lens, causal=True)
    # The binding's plumbing (tests/cuda/attention/test_decode.cpp holds the kernel to its derived bound). The
    # tensor-core kernel rounds each probability p to bf16 before P·V (docs/semantics.md §9): at most
    # 2^-8·Σ p|v| / L, a weighted mean of |v| (~0.8 here, whose weights spread over hundreds of keys; 5 at worst, the
    # largest of these ~10^6 normal samples), so ~0.003; plus O's one rounding to bf16, <= 2^-9 |O| (|O| <= 0.2 when
    # the weights spread, <= 5 for the one row that sees a single key, whose p = 1 is exact): 0.01 at most; f32
    # accumulation far below both: 0.02.
    np.testing.assert_allclose(o.float().cpu().numpy(), o_ref, atol=0.02, rtol=0)
    np.testing.assert_allclose(lse.cpu().numpy(), lse_ref, atol=1e-4, rtol=1e-5)
