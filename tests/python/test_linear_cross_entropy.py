"""softmaxkit.linear_cross_entropy from Python (issue 5), on NumPy arrays on the CPU.

The reference is independent of softmaxkit: the logits h @ w.T + b in float64, SciPy's logsumexp, the gradient of
the mean cross-entropy written out (softmax − one-hot, over the rows not ignored), and the three products in NumPy.
"""
import numpy as np
import pytest
from scipy.special import logsumexp

import softmaxkit as smk



def reference(h, w, t, b=None, ignore_index=-100, g=1.0):
    """(mean loss, and the gradients of g·loss: dh, dw, db; lse) in float64."""
    x = h.astype(np.float64) @ w.astype(np.float64).T
    if b is not None:
        x = x + b
    n, v = x.shape
    lse = logsumexp(x, axis=1)
    valid = t != ignore_index
    tt = np.where(valid, t, 0)
    count = valid.sum()
    loss = (lse - x[np.arange(n), tt])[valid].sum() / count
    p = np.exp(x - lse[:, None])
    p[np.arange(n), tt] -= 1.0
    p[~valid] = 0.0
    gmat = p * (g / count)
    return loss, gmat @ w, gmat.T @ h, gmat.sum(axis=0), lse  # the loss itself; grad_loss scales the gradients


def problem(n, d, v, seed, dtype=np.float64, bias=True):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((n, d)).astype(dtype)
    w = (rng.standard_normal((v, d)) * 2 / np.sqrt(d)).astype(dtype)
    b = (0.5 * rng.standard_normal(v)).astype(dtype) if bias else None
    t = rng.integers(0, v, n)
    t[1::5] = -100
    return h, w, b, t


@pytest.mark.parametrize("chunk_rows", [None, 1, 3, 7, 100])
def test_float64_matches_reference(chunk_rows):
    h, w, b, t = problem(13, 6, 21, 1)
    loss, dh, dw, db, lse = smk.linear_cross_entropy(h, w, t, b, chunk_rows=chunk_rows)
    rl, rdh, rdw, rdb, rlse = reference(h, w, t, b)
    assert loss.shape == () and dh.shape == h.shape and dw.shape == w.shape and db.shape == b.shape
    np.testing.assert_allclose(loss, rl, rtol=1e-12)
    np.testing.assert_allclose(lse, rlse, rtol=1e-12)
    for got, want in ((dh, rdh), (dw, rdw), (db, rdb)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * np.abs(want).max())


def test_float32_within_float_tolerance_and_upstream_gradient():
    h, w, b, t = problem(17, 8, 40, 2, np.float32)
    loss, dh, dw, db, lse = smk.linear_cross_entropy(h, w, t, b, chunk_rows=5, logit_rows=2, grad_loss=0.5)
    assert dh.dtype == np.float32 and loss.dtype == np.float32
    rl, rdh, rdw, rdb, _ = reference(h, w, t, b, g=0.5)
    # f32 products of d = 8 or N = 17 terms and the f32 cross-entropy: a few hundred u of each output's largest
    # magnitude bounds it (the C++ tests derive the gate); 1e-5 is ~170 u.
    np.testing.assert_allclose(loss, rl, rtol=1e-5)
    for got, want in ((dh, rdh), (dw, rdw), (db, rdb)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_without_bias_returns_four():
    h, w, _, t = problem(6, 4, 9, 3, bias=False)
    out = smk.linear_cross_entropy(h, w, t)
    assert len(out) == 4
    rl, rdh, rdw, _, _ = reference(h, w, t)
    np.testing.assert_allclose(out[0], rl, rtol=1e-12)
    np.testing.assert_allclose(out[2], rdw, rtol=0, atol=1e-13 * np.abs(rdw).max())


def test_bad_arguments_name_the_argument():
    h, w, b, t = problem(6, 4, 9, 4)
    with pytest.raises(smk.InvalidArgumentError, match="options.chunk_rows"):
        smk.linear_cross_entropy(h, w, t, b, chunk_rows=0)
    with pytest.raises(smk.InvalidArgumentError, match="options.logit_rows"):
        smk.linear_cross_entropy(h, w, t, b, logit_rows=-2)
    with pytest.raises(smk.InvalidArgumentError, match="'weight'"):
        smk.linear_cross_entropy(h, w[:, :3].copy(), t, b)
    with pytest.raises(smk.InvalidArgumentError, match="'weight'"):
        smk.linear_cross_entropy(h, w.astype(np.float32), t, b)
    with pytest.raises(smk.InvalidArgumentError, match="'targets'"):
        smk.linear_cross_entropy(h, w, np.full(6, 9), b)
    with pytest.raises(smk.InvalidArgumentError, match="options.bias"):
        smk.linear_cross_entropy(h, w, t, b[:5].copy())
