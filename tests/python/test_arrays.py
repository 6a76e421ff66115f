"""How arrays reach the library and come back (python/softmaxkit/_arrays.py): zero-copy reads of strided and offset
NumPy views, results written through `out=` views in place, and the package metadata."""

import pathlib
import re

import numpy as np
import scipy.special as sp

import softmaxkit as smk
from softmaxkit import _C

from conftest import assert_lse_close, assert_softmax_close

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_view_is_the_callers_memory():
    big = np.arange(60, dtype=np.float32).reshape(6, 10)
    x = big[1::2, 3:9:2]  # offset base pointer, strides (20, 2) elements
    v = _C.View(x, "t", "in")
    assert v.data_ptr == x.ctypes.data  # the same address: nothing was copied
    assert v.shape == (3, 3) and v.strides == (20, 2) and v.dtype == "f32" and v.device == ("cpu", 0)
    t = _C.View(x.T, "t", "in")
    assert t.data_ptr == x.ctypes.data and t.strides == (2, 20)


def test_strided_and_offset_inputs_read_in_place():
    rng = np.random.default_rng(5)
    big = rng.standard_normal((9, 40)).astype(np.float32)
    x = big[1::3, 5:37:2]  # 3 x 16, non-contiguous, unaligned base
    x64 = x.astype(np.float64)
    assert_softmax_close(smk.softmax(x), sp.softmax(x64, axis=-1), 16, "strided softmax")
    assert_softmax_close(smk.softmax(x, 0), sp.softmax(x64, axis=0), 3, "strided softmax dim 0")
    assert_lse_close(smk.logsumexp(x.T, 0), sp.logsumexp(x64.T, axis=0), 16, "transposed logsumexp")


def test_out_view_is_written_in_place_and_nothing_else():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 12)).astype(np.float32)
    buf = np.full((4, 30), np.nan, dtype=np.float32)  # poisoned
    out = buf[:, 3:27:2]
    r = smk.softmax(x, out=out)
    assert r is out
    assert_softmax_close(buf[:, 3:27:2], sp.softmax(x.astype(np.float64), axis=-1), 12, "out view")
    untouched = np.ones(buf.shape, bool)
    untouched[:, 3:27:2] = False
    assert np.isnan(buf[untouched]).all()


def test_logsumexp_and_state_into_out_views():
    x = np.random.default_rng(7).standard_normal((5, 8)).astype(np.float32)
    buf = np.full((5, 3), np.nan, dtype=np.float32)
    smk.logsumexp(x, out=buf[:, 1])
    assert_lse_close(buf[:, 1], sp.logsumexp(x.astype(np.float64), axis=-1), 8, "lse out")
    assert np.isnan(buf[:, [0, 2]]).all()
    bm, bl = np.full((5, 2), np.nan, np.float32), np.full((2, 5), np.nan, np.float32)
    m, l = bm[:, 1], bl[0]  # strided and contiguous; two buffers (the outputs must not share memory)
    r = smk.softmax_state(x, out=(m, l))
    assert r[0] is m and r[1] is l
    np.testing.assert_array_equal(bm[:, 1], x.max(axis=-1))
    assert np.isnan(bm[:, 0]).all() and np.isnan(bl[1]).all()
    assert_lse_close(bm[:, 1] + np.log(bl[0].astype(np.float64)), sp.logsumexp(x.astype(np.float64), axis=-1), 8,
                     "m + log l")


def test_in_place():
    x = np.random.default_rng(8).standard_normal((3, 9)).astype(np.float32)
    ref = sp.softmax(x.astype(np.float64), axis=-1)
    r = smk.softmax(x, out=x)
    assert r is x
    assert_softmax_close(x, ref, 9, "in place")


def test_float32_result_for_16_bit_input_on_request():
    x = np.random.default_rng(9).standard_normal((2, 50)).astype(np.float16)
    out = np.empty((2, 50), np.float32)
    smk.softmax(x, out=out)
    assert_softmax_close(out, sp.softmax(x.astype(np.float64), axis=-1), 50, "f16 in, f32 out")


def test_read_only_input_is_accepted():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    x.setflags(write=False)
    assert_softmax_close(smk.softmax(x), sp.softmax(x.astype(np.float64), axis=-1), 6, "read-only input")


def test_dlpack_capsule_and_foreign_exporter():
    class Exporter:  # a minimal DLPack producer that is not NumPy: the result comes back as NumPy (no namespace)
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = np.random.default_rng(10).standard_normal((3, 5)).astype(np.float32)
    p = smk.softmax(Exporter(x))
    assert isinstance(p, np.ndarray)
    assert_softmax_close(p, sp.softmax(x.astype(np.float64), axis=-1), 5, "foreign exporter")
    assert _C.View(Exporter(x), "t", "in").data_ptr == x.ctypes.data


def test_version_matches_pyproject_and_cmake():
    py = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    cm = re.search(r"project\(softmaxkit VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert smk.__version__ == py == cm


def test_cuda_queries_never_throw():
    assert isinstance(smk.cuda_built(), bool)
    n = smk.cuda_device_count()
    assert n >= 0
    assert (smk.cuda_unavailable_reason() == "") == (n > 0)


def test_docstrings_give_shapes_and_dtypes():
    for f in (smk.softmax, smk.log_softmax, smk.logsumexp, smk.softmax_state, smk.softmax_backward,
              smk.log_softmax_backward):
        doc = f.__doc__
        assert doc and "dtype" in doc and "shape" in doc, f.__name__
