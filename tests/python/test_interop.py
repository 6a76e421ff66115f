"""CuPy and JAX arrays: read in place (the library sees the framework's own pointer), results in the caller's
framework, the caller's stream for CuPy. Each test skips when its framework (or a CUDA device for it) is missing;
JAX's CPU arrays run wherever jax is installed."""

import os

import numpy as np
import pytest
import scipy.special as sp

import softmaxkit as smk
from softmaxkit import _C

from conftest import assert_lse_close, assert_softmax_close

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def supported(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except smk.UnsupportedError as e:
        pytest.skip(f"unsupported by this build: {e}")


def _cupy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy sees no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as e:
        pytest.skip(f"CuPy sees no CUDA device: {e}")
    if not smk.cuda_built():
        pytest.skip("softmaxkit was built without CUDA")
    return cupy


def _x(shape=(64, 257), seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)


@pytest.mark.gpu
def test_cupy_zero_copy_result_and_values():
    cupy = _cupy()
    x = _x()
    wide = cupy.full((64, 300), cupy.nan, dtype=cupy.float32)
    xc = wide[:, 7:264]  # offset, non-contiguous rows
    xc[...] = cupy.asarray(x)
    v = _C.View(xc.__dlpack__(stream=1), "t", "in")
    assert v.data_ptr == xc.data.ptr and v.strides == (300, 1) and v.device == ("cuda", xc.device.id)
    p = supported(smk.softmax, xc)
    assert isinstance(p, cupy.ndarray) and p.dtype == cupy.float32 and p.device.id == xc.device.id
    assert_softmax_close(cupy.asnumpy(p), sp.softmax(x.astype(np.float64), axis=-1), 257, "cupy softmax")
    lse = supported(smk.logsumexp, xc)
    assert isinstance(lse, cupy.ndarray)
    assert_lse_close(cupy.asnumpy(lse), sp.logsumexp(x.astype(np.float64), axis=-1), 257, "cupy logsumexp")
    out = cupy.full(x.shape, cupy.nan, dtype=cupy.float32)  # poisoned
    assert supported(smk.log_softmax, xc, out=out) is out
    assert not cupy.isnan(out).any()


@pytest.mark.gpu
def test_cupy_current_stream_is_honoured():
    """CuPy's current stream is a non-blocking stream with ~50 ms of sleep queued before the input is written;
    the op must queue behind it (had it run on the legacy stream it would read the NaN fill)."""
    cupy = _cupy()
    torch = pytest.importorskip("torch")  # for a sleeping kernel on an arbitrary stream
    x = _x(seed=1)
    src = cupy.asarray(x)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = cupy.full(x.shape, cupy.nan, dtype=cupy.float32)
        with torch.cuda.stream(torch.cuda.ExternalStream(s.ptr)):
            torch.cuda._sleep(100_000_000)
        y[...] = src
        p = supported(smk.softmax, y)
    s.synchronize()
    assert_softmax_close(cupy.asnumpy(p), sp.softmax(x.astype(np.float64), axis=-1), 257, "cupy stream")


def _jax():
    return pytest.importorskip("jax")


def test_jax_cpu_arrays():
    jax = _jax()
    jnp = jax.numpy
    x = _x((5, 33), seed=2)
    cpu = jax.devices("cpu")[0]
    xj = jax.device_put(jnp.asarray(x), cpu)
    p = smk.softmax(xj)
    assert isinstance(p, jax.Array)
    assert_softmax_close(np.asarray(p), sp.softmax(x.astype(np.float64), axis=-1), 33, "jax cpu softmax")
    m, l = smk.softmax_state(xj)
    assert isinstance(m, jax.Array) and isinstance(l, jax.Array)
    np.testing.assert_array_equal(np.asarray(m), x.max(axis=-1))


@pytest.mark.gpu
def test_jax_cuda_zero_copy_input_and_jax_result():
    jax = _jax()
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError as e:
        pytest.skip(f"JAX sees no GPU: {e}")
    jnp = jax.numpy
    x = _x(seed=3)
    xj = jax.device_put(jnp.asarray(x), gpu)
    xj.block_until_ready()
    v = _C.View(xj.__dlpack__(stream=1), "t", "in")
    assert v.data_ptr == xj.unsafe_buffer_pointer() and v.device[0] == "cuda"
    p = supported(smk.softmax, xj)
    assert isinstance(p, jax.Array) and list(p.devices())[0].platform == "gpu"
    assert_softmax_close(np.asarray(p), sp.softmax(x.astype(np.float64), axis=-1), 257, "jax gpu softmax")
    lse = supported(smk.logsumexp, xj)
    assert_lse_close(np.asarray(lse), sp.logsumexp(x.astype(np.float64), axis=-1), 257, "jax gpu logsumexp")
    # The result is a JAX array JAX can compute with.
    np.testing.assert_allclose(np.asarray(jnp.sum(p, axis=-1)), 1.0, rtol=1e-5)
