"""The softmax family on NumPy arrays (CPU), against SciPy's scipy.special softmax, log_softmax and logsumexp run in
float64 on the same values: an implementation independent of softmaxkit. Tolerances are the contract's gates
(tests/python/conftest.py), adversarial rows are the contract's table (include/softmaxkit/core/online_state.hpp)."""

import numpy as np
import pytest
import scipy.special as sp

import softmaxkit as smk

from conftest import (assert_log_softmax_close, assert_log_softmax_close_16, assert_lse_close, assert_softmax_close,
                      scaling_error, ulp_distance_16)

SHAPES_DIMS = [((1, 1), -1), ((3, 7), -1), ((3, 7), 0), ((5, 33), 1), ((2, 3, 1025), -1), ((4, 6, 5), 1),
               ((2, 300, 3), -2), ((17,), 0)]


def _random(shape, dtype, seed, scale=6.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
def test_f32_random_against_scipy(shape, dim):
    x = _random(shape, np.float32, seed=len(shape) * 100 + shape[0])
    x64 = x.astype(np.float64)
    n = shape[dim]
    p = smk.softmax(x, dim)
    assert isinstance(p, np.ndarray) and p.dtype == np.float32 and p.shape == x.shape
    assert_softmax_close(p, sp.softmax(x64, axis=dim), n, "softmax")
    y = smk.log_softmax(x, dim)
    assert y.dtype == np.float32
    assert_log_softmax_close(y, sp.log_softmax(x64, axis=dim), n, "log_softmax")
    lse = smk.logsumexp(x, dim)
    assert lse.dtype == np.float32 and lse.shape == tuple(s for i, s in enumerate(shape) if i != dim % len(shape))
    assert_lse_close(lse, sp.logsumexp(x64, axis=dim), n, "logsumexp")
    lse_k = smk.logsumexp(x, dim, keepdim=True)
    assert lse_k.shape == sp.logsumexp(x64, axis=dim, keepdims=True).shape
    np.testing.assert_array_equal(lse_k.squeeze(dim), lse)


@pytest.mark.parametrize("shape,dim", SHAPES_DIMS[:5])
def test_f64_against_scipy(shape, dim):
    x = _random(shape, np.float64, seed=7)
    p = smk.softmax(x, dim)
    assert p.dtype == np.float64
    np.testing.assert_allclose(p, sp.softmax(x, axis=dim), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(smk.log_softmax(x, dim), sp.log_softmax(x, axis=dim), rtol=1e-13, atol=1e-13)
    lse = smk.logsumexp(x, dim)
    assert lse.dtype == np.float64
    np.testing.assert_allclose(lse, sp.logsumexp(x, axis=dim), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("n", [1, 3, 31, 1025])
def test_f16_within_one_ulp_of_correctly_rounded_reference(n):
    x = _random((4, n), np.float16, seed=n, scale=3.0)
    x64 = x.astype(np.float64)  # exact
    p = smk.softmax(x)
    assert p.dtype == np.float16
    assert ulp_distance_16(p, sp.softmax(x64, axis=-1).astype(np.float16), np.float16).max() <= 1
    y = smk.log_softmax(x)
    assert y.dtype == np.float16
    assert_log_softmax_close_16(y, sp.log_softmax(x64, axis=-1), n, np.float16, "f16 log_softmax")
    lse = smk.logsumexp(x)
    assert lse.dtype == np.float32  # a statistic: f32 for 16-bit inputs
    assert_lse_close(lse, sp.logsumexp(x64, axis=-1), n, "f16 logsumexp")


def test_f16_long_row_of_equal_logits_gives_one_over_n():
    n = 4096
    x = np.full((2, n), 0.5, dtype=np.float16)
    p = smk.softmax(x)
    assert ulp_distance_16(p, np.full((2, n), 1.0 / n).astype(np.float16), np.float16).max() <= 1


def test_bfloat16_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy arrays need ml_dtypes (optional)")
    bf16 = ml_dtypes.bfloat16
    x = _random((3, 129), np.float32, seed=3, scale=4.0).astype(bf16)
    x64 = x.astype(np.float64)
    p = smk.softmax(x)
    assert p.dtype == bf16
    ref = sp.softmax(x64, axis=-1).astype(bf16)
    assert ulp_distance_16(p.view(np.uint16).view(np.float16), ref.view(np.uint16).view(np.float16),
                           np.float16).max() <= 1  # bit-pattern distance; bf16 orders like f16 by bits
    lse = smk.logsumexp(x)
    assert lse.dtype == np.float32
    assert_lse_close(lse, sp.logsumexp(x64, axis=-1), 129, "bf16 logsumexp")


# --- the contract's adversarial rows ------------------------------------------------------------------------------

INF, NAN = np.inf, np.nan


def test_all_minus_inf_row_nan_by_default_zeros_on_request():
    x = np.array([[-INF, -INF, -INF], [1.0, 2.0, 3.0], [-INF, -INF, -INF]], dtype=np.float32)
    p = smk.softmax(x)
    assert np.isnan(p[0]).all() and np.isnan(p[2]).all()
    assert_softmax_close(p[1], sp.softmax([1.0, 2.0, 3.0]), 3, "finite row next to empty rows")
    pz = smk.softmax(x, empty_rows="zeros")
    np.testing.assert_array_equal(pz[[0, 2]], 0.0)
    np.testing.assert_array_equal(pz[1], p[1])
    assert np.isnan(smk.log_softmax(x)[0]).all()
    np.testing.assert_array_equal(smk.log_softmax(x, empty_rows="zeros")[[0, 2]], 0.0)
    lse = smk.logsumexp(x)
    assert lse[0] == -INF and lse[2] == -INF  # under either policy
    assert lse[0] == sp.logsumexp(x[0].astype(np.float64))


def test_plus_inf_row():
    x = np.array([[1.0, INF, 3.0], [INF, INF, -INF], [INF, -INF, -INF]], dtype=np.float32)
    assert np.isnan(smk.softmax(x)).all()
    assert np.isnan(smk.log_softmax(x)).all()
    np.testing.assert_array_equal(smk.logsumexp(x), [INF, INF, INF])
    np.testing.assert_array_equal(smk.logsumexp(x), sp.logsumexp(x.astype(np.float64), axis=-1))


@pytest.mark.parametrize("pos", [0, 4, 7, 8, 32, 64])
def test_nan_anywhere_poisons_the_row(pos):
    x = _random((2, 65), np.float32, seed=pos)
    x[1, pos] = NAN
    p, y, lse = smk.softmax(x), smk.log_softmax(x), smk.logsumexp(x)
    assert np.isnan(p[1]).all() and np.isnan(y[1]).all() and np.isnan(lse[1])
    assert not np.isnan(p[0]).any() and not np.isnan(lse[0])
    # NaN with +inf and -inf in the same row is still NaN: no max or clamp drops it.
    x[0, :3] = [INF, -INF, NAN]
    assert np.isnan(smk.logsumexp(x)[0]) and np.isnan(smk.softmax(x)[0]).all()


@pytest.mark.parametrize("shape", [(3, 0), (0, 5)], ids=["empty_rows", "zero_rows"])
def test_empty_softmax_into_numpy_empty_array(shape):
    x = np.zeros(shape, dtype=np.float32)
    assert smk.softmax(x).shape == shape
    assert smk.log_softmax(x).shape == shape


def test_empty_rows_and_zero_rows():
    x = np.zeros((3, 0), dtype=np.float32)
    lse = smk.logsumexp(x)
    np.testing.assert_array_equal(lse, [-INF] * 3)
    np.testing.assert_array_equal(lse, sp.logsumexp(np.zeros((3, 0)), axis=-1))
    assert smk.logsumexp(np.zeros((0, 5), dtype=np.float32)).shape == (0,)


@pytest.mark.parametrize("shift", [1e3, 1e7, -1e7])
def test_huge_shifts_f32(shift):
    base = _random((4, 50), np.float32, seed=11, scale=3.0)
    x = (base.astype(np.float64) + shift).astype(np.float32)
    x64 = x.astype(np.float64)  # the reference sees exactly the rounded scores
    assert_softmax_close(smk.softmax(x), sp.softmax(x64, axis=-1), 50, f"shift {shift}")
    assert_log_softmax_close(smk.log_softmax(x), sp.log_softmax(x64, axis=-1), 50, f"shift {shift}")
    assert_lse_close(smk.logsumexp(x), sp.logsumexp(x64, axis=-1), 50, f"shift {shift}")


def test_huge_shift_f16():
    base = _random((4, 40), np.float16, seed=12, scale=2.0)
    x = (base.astype(np.float64) + 1.5e3).astype(np.float16)
    x64 = x.astype(np.float64)
    assert ulp_distance_16(smk.softmax(x), sp.softmax(x64, axis=-1).astype(np.float16), np.float16).max() <= 1


def test_log_softmax_of_dominant_score_is_exact():
    y = smk.log_softmax(np.array([1000.0, 1.0], dtype=np.float32))
    assert y[0] == 0.0 and y[1] == -999.0  # [0, -999] exactly: no cancellation of x - LSE


@pytest.mark.parametrize("row", [[0.0, -40.0], [1e10, 1e-10], [5.0, 5.0 + 2**-20, 5.0 - 2**-20], [80.0, 0.0, -80.0]])
def test_wide_ranges_and_near_ties(row):
    x = np.array([row], dtype=np.float32)
    x64 = x.astype(np.float64)
    assert_softmax_close(smk.softmax(x), sp.softmax(x64, axis=-1), len(row), str(row))
    assert_log_softmax_close(smk.log_softmax(x), sp.log_softmax(x64, axis=-1), len(row), str(row))
    assert_lse_close(smk.logsumexp(x), sp.logsumexp(x64, axis=-1), len(row), str(row))


# --- options: temperature and masks ------------------------------------------------------------------------------

def test_scalar_temperature():
    x = _random((5, 37), np.float32, seed=21)
    for t in (0.25, 1.0, 3.0):
        z = x.astype(np.float64) / np.float64(np.float32(t))
        e = scaling_error(z)
        assert_softmax_close(smk.softmax(x, temperature=t), sp.softmax(z, axis=-1), 37, f"T={t}", e)
        assert_log_softmax_close(smk.log_softmax(x, temperature=t), sp.log_softmax(z, axis=-1), 37, f"T={t}", e)
        assert_lse_close(smk.logsumexp(x, temperature=t), sp.logsumexp(z, axis=-1), 37, f"T={t}",
                         e.max(axis=-1))


def test_per_row_temperature():
    x = _random((3, 4, 9), np.float32, seed=22)
    t = np.array([[0.5, 1.0, 2.0, 4.0], [0.3, 0.7, 1.1, 9.0], [1.0, 1.0, 1.0, 1.0]], dtype=np.float32)
    z = x.astype(np.float64) / t.astype(np.float64)[..., None]
    e = scaling_error(z)
    assert_softmax_close(smk.softmax(x, temperature=t), sp.softmax(z, axis=-1), 9, "per-row T", e)
    assert_lse_close(smk.logsumexp(x, temperature=t), sp.logsumexp(z, axis=-1), 9, "per-row T lse", e.max(axis=-1))


def test_boolean_mask_broadcast_over_rows():
    x = _random((4, 3, 10), np.float32, seed=23)
    keep = np.random.default_rng(1).random((1, 3, 10)) > 0.4
    keep[0, 2, :] = False  # a fully masked row (in every batch entry): an empty row
    z = np.where(keep, x.astype(np.float64), -np.inf)
    p = smk.softmax(x, mask=keep)
    assert np.isnan(p[:, 2]).all()
    assert_softmax_close(p[:, :2], sp.softmax(z[:, :2], axis=-1), 10, "boolean mask")
    np.testing.assert_array_equal(smk.softmax(x, mask=keep, empty_rows="zeros")[:, 2], 0.0)
    lse = smk.logsumexp(x, mask=keep)
    assert (lse[:, 2] == -np.inf).all()
    assert_lse_close(lse[:, :2], sp.logsumexp(z[:, :2], axis=-1), 10, "boolean mask lse")


def test_additive_mask():
    x = _random((3, 16), np.float32, seed=24)
    bias = _random((1, 16), np.float32, seed=25, scale=2.0)
    bias[0, 3] = -np.inf
    z = x.astype(np.float64) / np.float64(np.float32(2.0)) + bias.astype(np.float64)
    e = scaling_error(z)  # x / T + mask rounds twice
    p = smk.softmax(x, temperature=2.0, mask=bias)
    assert (p[:, 3] == 0).all()
    assert_softmax_close(p, sp.softmax(z, axis=-1), 16, "additive mask", e)
    assert_log_softmax_close(smk.log_softmax(x, temperature=2.0, mask=bias), sp.log_softmax(z, axis=-1), 16,
                             "additive", e)


# --- the online state and the backward passes --------------------------------------------------------------------

def test_softmax_state_regimes_and_values():
    x = _random((5, 21), np.float32, seed=31)
    x[1] = -np.inf
    x[2, 4] = np.inf
    x[3, 7] = np.nan
    m, l = smk.softmax_state(x)
    assert m.dtype == np.float32 and l.dtype == np.float32 and m.shape == (5,)
    x64 = x.astype(np.float64)
    for r in (0, 4):
        assert m[r] == x[r].max()
        np.testing.assert_allclose(l[r], np.exp(x64[r] - x64[r].max()).sum(), rtol=(6 + np.log2(21)) * 2**-24)
        assert_lse_close(m[r] + np.log(np.float64(l[r])), sp.logsumexp(x64[r]), 21, "m + log l")
    assert m[1] == -np.inf and l[1] == 0  # empty
    assert m[2] == np.inf and l[2] == np.inf  # saturated
    assert np.isnan(m[3]) and np.isnan(l[3])  # NaN
    mk, lk = smk.softmax_state(x, keepdim=True)
    assert mk.shape == (5, 1) and lk.shape == (5, 1)


def _jvp_softmax(p, dy, dim):
    return p * (dy - (dy * p).sum(axis=dim, keepdims=True))


@pytest.mark.parametrize("shape,dim", [((4, 19), -1), ((6, 5, 3), 1)])
def test_softmax_backward_against_jacobian(shape, dim):
    x = _random(shape, np.float64, seed=41)
    dy = _random(shape, np.float64, seed=42, scale=1.0)
    p = sp.softmax(x, axis=dim)
    # The Jacobian of softmax is diag(p) - p p^T, so J^T dy is p * (dy - <dy, p>).
    dx = smk.softmax_backward(p, dy, dim)
    np.testing.assert_allclose(dx, _jvp_softmax(p, dy, dim), rtol=1e-12, atol=1e-15)
    p32, dy32 = p.astype(np.float32), dy.astype(np.float32)
    dx32 = smk.softmax_backward(p32, dy32, dim)
    assert dx32.dtype == np.float32
    ref = _jvp_softmax(p32.astype(np.float64), dy32.astype(np.float64), dim)
    np.testing.assert_allclose(dx32, ref, rtol=0, atol=(shape[dim] + 8) * 2**-24 * np.abs(dy).max())
    dx_t = smk.softmax_backward(p, dy, dim, temperature=4.0)
    np.testing.assert_allclose(dx_t, _jvp_softmax(p, dy, dim) / 4.0, rtol=1e-12, atol=1e-15)


def test_log_softmax_backward_against_jacobian():
    x = _random((5, 23), np.float64, seed=43)
    dy = _random((5, 23), np.float64, seed=44, scale=1.0)
    y = sp.log_softmax(x, axis=-1)
    # d log_softmax = I - 1 p^T, so J^T dy = dy - p * sum(dy).
    ref = dy - np.exp(y) * dy.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(smk.log_softmax_backward(y, dy), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(smk.log_softmax_backward(y, dy, temperature=0.5), ref / 0.5, rtol=1e-12, atol=1e-14)


def test_backward_matches_finite_differences_of_scipy():
    x = _random((2, 7), np.float64, seed=45, scale=2.0)
    dy = _random((2, 7), np.float64, seed=46, scale=1.0)
    h = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = ((sp.softmax(x + e, axis=-1) - sp.softmax(x - e, axis=-1)) * dy).sum() / (2 * h)
    np.testing.assert_allclose(smk.softmax_backward(sp.softmax(x, axis=-1), dy), fd, rtol=1e-6, atol=1e-9)
