"""Shared helpers for softmaxkit's Python tests.

CPU tests need NumPy, SciPy and pytest only (what scripts/setup.sh installs). Tests marked `gpu` need a CUDA device
and torch and skip, with the reason, anywhere else (CI has no GPU); scripts/device.sh runs them on the H200.
References are independent of softmaxkit: SciPy's scipy.special functions, or the mathematics in float64.
"""

import os

# JAX grabs 75 % of the GPU's memory on first use unless told otherwise; torch and CuPy share the device here.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import math

import numpy as np
import pytest

U32 = 2.0**-24  # unit roundoff of float32


def cuda_skip_reason():
    """None when torch sees a CUDA device and softmaxkit was built with CUDA, else why the GPU tests skip."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device visible to torch"
    import softmaxkit

    if not softmaxkit.cuda_built():
        return "softmaxkit was built without CUDA (SOFTMAXKIT_ENABLE_CUDA=OFF or no nvcc)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    checked = False
    for item in items:
        if "gpu" in item.keywords:
            if not checked:
                reason, checked = cuda_skip_reason(), True
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"GPU test: {reason}"))


def log2n(n):
    return math.log2(max(n, 2))


def scaling_error(z, dim=-1):
    """Extra error from scaling the scores before the shift (temperature): fl(x / T), or x times a rounded 1/T,
    moves each z by up to 2u|z|, so z - max z moves by up to 2u(|z| + |max z|). Relative for probabilities,
    absolute for logs."""
    z = np.asarray(z, dtype=np.float64)
    zf = np.where(np.isfinite(z), z, 0.0)
    return 2 * U32 * (np.abs(zf) + np.abs(zf).max(axis=dim, keepdims=True))


def assert_softmax_close(p, ref, n, what="", extra=0.0):
    """The contract's f32 softmax gate: relative error <= (6 + log2 n) u where the reference exceeds 1e-30
    (and absolute 1e-30 below it), NaN exactly where the reference is NaN. `extra`: a further relative
    allowance per element (scaling_error)."""
    p = np.asarray(p, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert p.shape == ref.shape, what
    np.testing.assert_array_equal(np.isnan(p), np.isnan(ref), err_msg=f"NaN pattern {what}")
    ok = ~np.isnan(ref)
    bound = (6 + log2n(n)) * U32 + np.broadcast_to(extra, ref.shape)[ok]
    err = np.abs(p[ok] - ref[ok])
    allowed = np.where(ref[ok] > 1e-30, bound * ref[ok], 1e-30)
    assert np.all(err <= allowed), f"{what}: max rel err {np.max(err / np.maximum(ref[ok], 1e-300)):.3g} > {bound:.3g}"


def _assert_log_gate(y, ref, n, y_terms, what, extra=0.0):
    y = np.asarray(y, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert y.shape == ref.shape, what
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref), err_msg=f"NaN pattern {what}")
    inf = np.isinf(ref)
    np.testing.assert_array_equal(y[inf], ref[inf], err_msg=f"infinities {what}")
    fin = np.isfinite(ref)
    bound = (y_terms * np.abs(ref[fin]) + log2n(n) + 3) * U32 + np.broadcast_to(extra, ref.shape)[fin]
    err = np.abs(y[fin] - ref[fin])
    assert np.all(err <= bound), f"{what}: max abs err {np.max(err - bound):.3g} over the bound"


def assert_lse_close(lse, ref, n, what="", extra=0.0):
    """The contract's f32 logsumexp gate: absolute error <= (|LSE| + log2 n + 3) u (one rounding of m + log l,
    whose log l carries the sum's error); infinities and NaN exactly as the reference."""
    _assert_log_gate(lse, ref, n, 1, what, extra)


def assert_log_softmax_close(y, ref, n, what="", extra=0.0):
    """f32 log-softmax: absolute error <= (2|y| + log2 n + 3) u. y = fl(fl(x - m) - log l) rounds twice, and
    |x - m| <= |y| (log l >= 0), so each rounding costs up to u|y|; log l adds the sum's (log2 n + 3) u. (The
    contract's draft gate of (|y| + log2 n + 3) u assumes x - m exact, which holds only for x near m.)"""
    _assert_log_gate(y, ref, n, 2, what, extra)


def assert_log_softmax_close_16(y, ref, n, dtype, what=""):
    """16-bit log-softmax: the f32 result's error, then one rounding to the 16-bit type (half its ulp). The
    contract's "1 ulp of the output type" cannot hold for log-probabilities near 0: there log l is below the
    f16 ulp of 1 only by f32's resolution of l."""
    y = np.asarray(y).astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    half_ulp = 0.5 * np.spacing(np.maximum(np.abs(y), np.abs(ref)).astype(dtype)).astype(np.float64)
    err = np.abs(y - ref)
    bound = half_ulp + (2 * np.abs(ref) + log2n(n) + 3) * U32
    assert np.all(err <= bound), f"{what}: max abs err {np.max(err - bound):.3g} over the bound"


def ulp_distance_16(a, b, dtype):
    """Distance in units in the last place between two arrays of one 16-bit float dtype (finite values)."""
    ia = np.asarray(a, dtype=dtype).view(np.uint16).astype(np.int32)
    ib = np.asarray(b, dtype=dtype).view(np.uint16).astype(np.int32)
    # Map sign-magnitude bit patterns onto a monotone integer line.
    ia = np.where(ia & 0x8000, 0x8000 - ia, ia)
    ib = np.where(ib & 0x8000, 0x8000 - ib, ib)
    return np.abs(ia - ib)
