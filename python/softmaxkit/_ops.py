"""The softmax family on any DLPack array: argument plumbing around softmaxkit._C (no arithmetic here)."""

import numbers
import operator
import sys

from . import _C
from ._arrays import FLOAT_CODES, framework_of, launch_stream
from ._errors import InvalidArgumentError

_COMMON_DOC = """
    Arrays: any object exporting DLPack or the buffer protocol — NumPy, torch, CuPy, JAX — on the CPU or a CUDA
    device, with any non-negative strides (views and slices are read in place, never copied). The result comes back
    in the caller's framework on the same device; see softmaxkit._arrays for who allocates it and which CUDA stream
    the call runs on (torch: its current stream; CuPy: its current stream; others: ``stream=`` or the legacy
    default stream). Errors raise softmaxkit.InvalidArgumentError (a ValueError) or UnsupportedError (a
    NotImplementedError) with the library's message, whose argument names are the C++ ones ('in' is ``x``).
"""


def _dim(op, dim, rank):
    """`dim` in [0, rank), with the library's own messages (needed here to shape a reduction's result)."""
    if isinstance(dim, bool):
        raise InvalidArgumentError(f"{op}: argument 'options.dim': must be an int, not a bool")
    try:
        dim = operator.index(dim)
    except TypeError:
        raise InvalidArgumentError(
            f"{op}: argument 'options.dim': must be an int ({type(dim).__name__} given)") from None
    if rank < 1:
        raise InvalidArgumentError(f"{op}: argument 'in': must have at least one dimension")
    d = dim + rank if dim < 0 else dim
    if d < 0 or d >= rank:
        raise InvalidArgumentError(
            f"{op}: argument 'options.dim': dim {dim} is out of range for a tensor of rank {rank}")
    return dim, d


def _float_code(op, arg, view):
    if view.dtype not in FLOAT_CODES:
        raise InvalidArgumentError(f"{op}: argument '{arg}': dtype {view.dtype} is not supported here "
                                   f"(expected one of f32, f16, bf16, f64)")
    return view.dtype


def _empty_rows(op, empty_rows):
    if empty_rows == "nan":
        return False
    if empty_rows == "zeros":
        return True
    raise InvalidArgumentError(f"{op}: argument 'empty_rows': must be 'nan' or 'zeros' ({empty_rows!r} given)")


def _temperature(op, temperature, launch):
    """(scalar, per-row View or None): a Python/NumPy real is the scalar T, an array is one T per row."""
    if isinstance(temperature, numbers.Real) and not isinstance(temperature, bool):
        return float(temperature), None
    if isinstance(temperature, bool) or temperature is None:
        raise InvalidArgumentError(f"{op}: argument 'temperature': must be a positive real or an array of one "
                                   f"float32 per row ({temperature!r} given)")
    fw = framework_of(temperature)
    return 1.0, fw.view(temperature, op, "options.temperature_per_row", launch)


def _mask(op, mask, launch):
    if mask is None:
        return None
    return framework_of(mask).view(mask, op, "options.mask", launch)


def _refuse_requires_grad(op, arrays, why):
    """Raises `op: why` when grad mode is on and a torch tensor among `arrays` requires grad: a call autograd cannot
    see must refuse such a tensor instead of dropping its gradient silently."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.is_grad_enabled():
        return
    for a in arrays:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            raise InvalidArgumentError(f"{op}: {why}")


def _no_autograd(op, *arrays):
    """A call with out= or stream= bypasses the registered torch ops, so autograd would not see it: refuse tensors
    that require grad (as torch refuses out= for them)."""
    _refuse_requires_grad(op, arrays, "out= and stream= do not support automatic differentiation, but an argument "
                                      "requires grad; call without them (softmaxkit.torch registers the op with "
                                      "autograd) or under torch.no_grad()")


def _torch_route(x, out, stream):
    """softmaxkit.torch's autograd- and torch.compile-aware op for a plain call on a torch tensor, else None."""
    torch = sys.modules.get("torch")
    if out is None and stream is None and torch is not None and isinstance(x, torch.Tensor):
        from . import torch as smk_torch

        return smk_torch
    return None


def _forward_impl(op, fn, x, dim, temperature, mask, empty_rows, out, stream, keepdim=None):
    """One forward call; `keepdim` is None for softmax/log_softmax and a bool for reductions."""
    if out is not None or stream is not None:
        _no_autograd(op, x, out)
    fw = framework_of(x)
    launch = launch_stream(op, fw, stream)
    vin = fw.view(x, op, "in", launch)
    code = _float_code(op, "in", vin)
    zeros = _empty_rows(op, empty_rows)
    dim, d = _dim(op, dim, len(vin.shape))
    t, per_row = _temperature(op, temperature, launch)
    vmask = _mask(op, mask, launch)
    if out is None:
        shape = list(vin.shape)
        if keepdim is None:
            out_code = code
        else:
            out_code = "f64" if code == "f64" else "f32"  # a statistic: f32 for f16/bf16 (softmax.hpp)
            if keepdim:
                shape[d] = 1
            else:
                del shape[d]
        result, owner = fw.empty(op, tuple(shape), out_code)
        vout = owner.view(result, op, "out", launch, writable=True)
    else:
        result, owner = out, None
        vout = framework_of(out).view(out, op, "out", launch, writable=True)
    fn(vout, vin, dim, zeros, t, per_row, vmask, launch)
    return result if owner is None else fw.deliver(result, owner, launch)


def _state_impl(op, x, dim, temperature, mask, keepdim, out, stream):
    if out is not None or stream is not None:
        _no_autograd(op, x, *(out if isinstance(out, (tuple, list)) else (out,)))
    fw = framework_of(x)
    launch = launch_stream(op, fw, stream)
    vin = fw.view(x, op, "in", launch)
    code = _float_code(op, "in", vin)
    dim, d = _dim(op, dim, len(vin.shape))
    t, per_row = _temperature(op, temperature, launch)
    vmask = _mask(op, mask, launch)
    if out is None:
        shape = list(vin.shape)
        if keepdim:
            shape[d] = 1
        else:
            del shape[d]
        out_code = "f64" if code == "f64" else "f32"
        m, owner = fw.empty(op, tuple(shape), out_code)
        l, owner_l = fw.empty(op, tuple(shape), out_code)
        outs, views = (m, l), (owner.view(m, op, "out_max", launch, True), owner_l.view(l, op, "out_sum", launch, True))
    else:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise InvalidArgumentError(f"{op}: argument 'out': must be a pair (out_max, out_sum)")
        owner, outs = None, tuple(out)
        views = tuple(framework_of(o).view(o, op, name, launch, True) for o, name in zip(out, ("out_max", "out_sum")))
    _C.softmax_state(views[0], views[1], vin, dim, t, per_row, vmask, launch)
    if owner is None:
        return outs
    return tuple(fw.deliver(o, owner, launch) for o in outs)


def _backward_impl(op, fn, y, dy, dim, temperature, out, stream):
    if out is not None or stream is not None:
        _no_autograd(op, y, dy, out)
    fw = framework_of(y)
    launch = launch_stream(op, fw, stream)
    vy = fw.view(y, op, "y", launch)
    vdy = framework_of(dy).view(dy, op, "dy", launch)
    code = _float_code(op, "y", vy)
    dim, _ = _dim(op, dim, len(vy.shape))
    t, per_row = _temperature(op, temperature, launch)
    if out is None:
        result, owner = fw.empty(op, tuple(vy.shape), code)
        vdx = owner.view(result, op, "dx", launch, writable=True)
    else:
        result, owner = out, None
        vdx = framework_of(out).view(out, op, "dx", launch, writable=True)
    fn(vdx, vy, vdy, dim, t, per_row, launch)
    return result if owner is None else fw.deliver(result, owner, launch)


# --- public functions --------------------------------------------------------------------------------------------

def softmax(x, dim=-1, *, temperature=1.0, mask=None, empty_rows="nan", out=None, stream=None):
    """softmax(x / temperature + mask) over dimension `dim`: exp(z - max z) / sum exp(z - max z).

    Args:
        x: scores, any shape of rank >= 1; float32, float16, bfloat16 (f32 arithmetic, rounded once), or float64
            (CPU only).
        dim: the dimension reduced over; negative counts from the end.
        temperature: a positive finite real T, or an array of one float32 T per row (x's shape without `dim`).
        mask: optional, same rank as x with each size equal to x's or 1 (broadcast). Boolean: True keeps a
            position, False removes it. Floating (float32 or x's dtype): added to x / T (-inf removes a position).
        empty_rows: what a row with every position removed or -inf produces: "nan" (PyTorch's answer, the
            default) or "zeros".
        out: optional result array, x's shape, x's dtype (or float32 for 16-bit x); may be x itself (in place).
        stream: CUDA stream for CUDA arrays (see below); ignored on the CPU.

    Returns:
        An array of x's shape and dtype, in x's framework (or `out`). A row containing +inf or NaN gives NaN
        everywhere; a row that is empty along `dim` writes nothing.
    """
    route = _torch_route(x, out, stream)
    if route is not None:
        return route.softmax(x, dim, temperature=temperature, mask=mask, empty_rows=empty_rows)
    return _forward_impl("softmax", _C.softmax, x, dim, temperature, mask, empty_rows, out, stream)


def log_softmax(x, dim=-1, *, temperature=1.0, mask=None, empty_rows="nan", out=None, stream=None):
    """log(softmax(x / temperature + mask)) over `dim`, computed as (z - max z) - log sum exp(z - max z).

    The arguments, shapes and dtypes are softmax's. The log-probability of the largest score is exact to the
    rounding of log(sum), with no cancellation (log_softmax([1000, 1]) is [0, -999]). Removed (masked) positions
    give -inf; an empty row gives NaN, or 0 with empty_rows="zeros".
    """
    route = _torch_route(x, out, stream)
    if route is not None:
        return route.log_softmax(x, dim, temperature=temperature, mask=mask, empty_rows=empty_rows)
    return _forward_impl("log_softmax", _C.log_softmax, x, dim, temperature, mask, empty_rows, out, stream)


def logsumexp(x, dim=-1, *, keepdim=False, temperature=1.0, mask=None, out=None, stream=None):
    """log(sum(exp(x / temperature + mask))) over `dim`, with the max shifted out so nothing overflows.

    Returns x's shape without `dim` (or with it of size 1 when keepdim), dtype float32 (float64 for float64 x;
    the log-sum-exp is a statistic, so 16-bit inputs give float32). A row of only -inf, a fully masked row and a
    row of length 0 give -inf; a row containing +inf gives +inf; a row containing NaN gives NaN.
    Other arguments as in softmax.
    """
    route = _torch_route(x, out, stream)
    if route is not None:
        return route.logsumexp(x, dim, keepdim=keepdim, temperature=temperature, mask=mask)
    return _forward_impl("logsumexp", _C.logsumexp, x, dim, temperature, mask, "nan", out, stream, keepdim=keepdim)


def softmax_state(x, dim=-1, *, keepdim=False, temperature=1.0, mask=None, out=None, stream=None):
    """The per-row online-softmax state (m, l): m the row max, l = sum exp(x - m), so logsumexp = m + log(l).

    For callers that merge partial rows (a vocabulary split across devices): two states merge exactly as
    M = max(m_a, m_b), l = l_a exp(m_a - M) + l_b exp(m_b - M). Regimes (include/softmaxkit/core/online_state.hpp):
    empty row (all -inf, fully masked, length 0): m = -inf, l = 0; finite: 1 <= l <= n; a +inf score:
    m = l = +inf; a NaN score: m = l = NaN.

    Returns a pair (m, l), each of logsumexp's shape and dtype. `out` may be such a pair.
    """
    route = _torch_route(x, out, stream)
    if route is not None:
        return route.softmax_state(x, dim, keepdim=keepdim, temperature=temperature, mask=mask)
    return _state_impl("softmax_state", x, dim, temperature, mask, keepdim, out, stream)


def softmax_backward(y, dy, dim=-1, *, temperature=1.0, out=None, stream=None):
    """The gradient of softmax: dx = (y * (dy - sum(dy * y, dim))) / T, from its output y and upstream dy.

    y and dy have one shape; dx has y's shape and dtype (out= may also be float32 for 16-bit y, or dy itself to
    work in place). temperature is the forward call's (scalar or per-row). Masks and empty_rows do not apply: a
    removed position has y = 0 and so gets dx = 0.
    """
    route = _torch_route(y, out, stream)
    if route is not None:
        return route.softmax_backward(y, dy, dim, temperature=temperature)
    return _backward_impl("softmax_backward", _C.softmax_backward, y, dy, dim, temperature, out, stream)


def log_softmax_backward(y, dy, dim=-1, *, temperature=1.0, out=None, stream=None):
    """The gradient of log_softmax: dx = (dy - exp(y) * sum(dy, dim)) / T, from its output y and upstream dy.

    y (the forward output) and dy share one shape; dx has y's shape and dtype (float32 also allowed through out=
    for 16-bit y). Other arguments as in softmax_backward.
    """
    route = _torch_route(y, out, stream)
    if route is not None:
        return route.log_softmax_backward(y, dy, dim, temperature=temperature)
    return _backward_impl("log_softmax_backward", _C.log_softmax_backward, y, dy, dim, temperature, out, stream)


for _f in (softmax, log_softmax, logsumexp, softmax_state, softmax_backward, log_softmax_backward):
    _f.__doc__ += _COMMON_DOC
del _f
