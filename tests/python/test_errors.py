"""Misuse raises a softmaxkit exception carrying the C++ library's message (op and argument named), and writes
nothing. Messages are matched literally where the library's wording is the contract."""

import re

import numpy as np
import pytest

import softmaxkit as smk


def _x(shape=(2, 3), dtype=np.float32):
    return np.ones(shape, dtype=dtype)


def test_exception_hierarchy():
    assert issubclass(smk.InvalidArgumentError, ValueError) and issubclass(smk.InvalidArgumentError, smk.Error)
    assert issubclass(smk.UnsupportedError, NotImplementedError) and issubclass(smk.UnsupportedError, smk.Error)
    assert issubclass(smk.CudaError, RuntimeError) and issubclass(smk.InternalError, RuntimeError)
    assert smk.InvalidArgumentError.code == "invalid_argument" and smk.UnsupportedError.code == "unsupported"


def test_out_shape_mismatch_message_is_the_libraries():
    out = np.full((2, 4), np.nan, np.float32)
    with pytest.raises(smk.InvalidArgumentError,
                       match=re.escape("softmax: argument 'out': shape [2, 4] does not match 'in' shape [2, 3]")):
        smk.softmax(_x(), out=out)
    assert np.isnan(out).all()  # nothing written


def test_out_dtype():
    with pytest.raises(smk.InvalidArgumentError,
                       match=re.escape("log_softmax: argument 'out': dtype f64 is not supported here")):
        smk.log_softmax(_x(), out=np.empty((2, 3), np.float64))


@pytest.mark.parametrize("dtype,code", [(np.int64, "i64"), (np.int32, "i32"), (np.bool_, "b8")])
def test_non_float_input(dtype, code):
    with pytest.raises(smk.InvalidArgumentError, match=re.escape(f"softmax: argument 'in': dtype {code} is not")):
        smk.softmax(_x(dtype=dtype))


def test_unknown_dlpack_dtype():
    with pytest.raises(smk.InvalidArgumentError, match=r"logsumexp: argument 'in': DLPack dtype \(code 5"):
        smk.logsumexp(_x(dtype=np.complex64))
    with pytest.raises(ValueError, match=r"argument 'in': DLPack dtype \(code 0, 8 bits"):
        smk.softmax(_x(dtype=np.int8))


@pytest.mark.parametrize("dim", [2, -3, 7])
def test_dim_out_of_range(dim):
    with pytest.raises(smk.InvalidArgumentError,
                       match=re.escape(f"argument 'options.dim': dim {dim} is out of range for a tensor of rank 2")):
        smk.logsumexp(_x(), dim)
    with pytest.raises(smk.InvalidArgumentError, match=re.escape(f"dim {dim} is out of range")):
        smk.softmax(_x(), dim)


def test_rank_zero_and_too_many_dims():
    with pytest.raises(smk.InvalidArgumentError, match=re.escape("softmax: argument 'in': must have at least one")):
        smk.softmax(np.ones((), np.float32))
    with pytest.raises(smk.InvalidArgumentError, match=re.escape("argument 'in': rank 9 exceeds")):
        smk.softmax(np.ones((1,) * 9, np.float32))


def test_negative_strides():
    with pytest.raises(smk.InvalidArgumentError, match="stride -1 of dimension 1 is negative"):
        smk.softmax(_x()[:, ::-1])


def test_output_overlapping_input():
    buf = np.zeros((2, 4), np.float32)
    with pytest.raises(smk.InvalidArgumentError, match=re.escape("softmax: argument 'out': partially overlaps 'in'")):
        smk.softmax(buf[:, :3], out=buf[:, 1:])


def test_output_that_overlaps_itself():
    out = np.lib.stride_tricks.as_strided(np.zeros(3, np.float32), shape=(2, 3), strides=(0, 4))
    with pytest.raises(smk.InvalidArgumentError, match="an output must not overlap itself"):
        smk.softmax(_x(), out=out)


def test_read_only_out():
    out = np.empty((2, 3), np.float32)
    out.setflags(write=False)
    with pytest.raises(smk.InvalidArgumentError, match="softmax: argument 'out': is not a writable array"):
        smk.softmax(_x(), out=out)


def test_not_an_array():
    with pytest.raises(smk.InvalidArgumentError, match=re.escape("softmax: argument 'in': is not an array")):
        smk.softmax([[1.0, 2.0]])


@pytest.mark.parametrize("t", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_temperature(t):
    with pytest.raises(smk.InvalidArgumentError, match="argument 'options.temperature'"):
        smk.softmax(_x(), temperature=t)


def test_per_row_temperature_shape_and_dtype():
    with pytest.raises(smk.InvalidArgumentError, match="argument 'options.temperature_per_row'"):
        smk.softmax(_x(), temperature=np.ones(3, np.float32))  # 2 rows, not 3
    with pytest.raises(smk.InvalidArgumentError, match="options.temperature_per_row': dtype f64"):
        smk.softmax(_x(), temperature=np.ones(2, np.float64))


def test_mask_shape():
    with pytest.raises(smk.InvalidArgumentError, match="argument 'options.mask'"):
        smk.softmax(_x(), mask=np.ones((2, 4), bool))


def test_bad_empty_rows_and_stream():
    with pytest.raises(smk.InvalidArgumentError, match="argument 'empty_rows': must be 'nan' or 'zeros'"):
        smk.softmax(_x(), empty_rows="zero")
    with pytest.raises(smk.InvalidArgumentError, match="argument 'stream'"):
        smk.softmax(_x(), stream="default")


def test_backward_shape_mismatch():
    with pytest.raises(smk.InvalidArgumentError, match="softmax_backward: argument 'dy'"):
        smk.softmax_backward(_x(), np.ones((2, 4), np.float32))


def test_errors_are_catchable_as_builtins():
    with pytest.raises(ValueError):
        smk.softmax(_x(), 5)
