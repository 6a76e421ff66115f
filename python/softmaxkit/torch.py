"""softmaxkit's ops registered with torch.library, for autograd and torch.compile.

Importing this module registers, under the namespace ``softmaxkit`` (``torch.ops.softmaxkit.*``):

    softmax, log_softmax           custom ops with fake (meta) implementations and autograd formulas whose
                                   backward passes are softmaxkit's own softmax_backward / log_softmax_backward
    logsumexp                      a custom op with a fake implementation and an autograd formula (its gradient is
                                   softmaxkit's softmax, scaled per row)
    softmax_state                  a custom op with a fake implementation; not differentiable (backward raises)
    softmax_backward, log_softmax_backward
                                   custom ops with fake implementations (the backward passes themselves)

The functions below wrap them with softmaxkit's keyword arguments. They run on CPU and CUDA tensors, on torch's
current CUDA stream, and work under ``torch.compile(fullgraph=True)``: the ops are opaque to the compiler, which
shapes their results through the fake implementations. Results are contiguous, of the shapes and dtypes that
softmaxkit.softmax & co. document. Masks and per-row temperatures are constants to autograd: they get no gradient.
"""

import numbers
from typing import Optional, Tuple

import torch

from . import _C, _ops
from ._errors import InvalidArgumentError

__all__ = [
    "softmax",
    "log_softmax",
    "logsumexp",
    "softmax_state",
    "softmax_backward",
    "log_softmax_backward",
]

_Tensor = torch.Tensor


def _reduced_shape(x, dim, keepdim):
    d = dim + x.dim() if dim < 0 else dim
    shape = list(x.shape)
    if 0 <= d < len(shape):
        if keepdim:
            shape[d] = 1
        else:
            del shape[d]
    return shape


def _stat_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _temperature_arg(temperature, per_row):
    return per_row if per_row is not None else temperature


# --- the ops -----------------------------------------------------------------------------------------------------
# Their implementations call softmaxkit's plain functions, which allocate with torch and launch on torch's current
# stream. Scalar and per-row temperature travel separately because a schema argument has one type.

@torch.library.custom_op("softmaxkit::softmax", mutates_args=())
def _softmax_op(x: _Tensor, dim: int, temperature: float, temperature_per_row: Optional[_Tensor],
                mask: Optional[_Tensor], zeros: bool) -> _Tensor:
    return _ops._forward_impl("softmax", _C.softmax, x, dim, _temperature_arg(temperature, temperature_per_row),
                              mask, "zeros" if zeros else "nan", None, None)


@torch.library.custom_op("softmaxkit::log_softmax", mutates_args=())
def _log_softmax_op(x: _Tensor, dim: int, temperature: float, temperature_per_row: Optional[_Tensor],
                    mask: Optional[_Tensor], zeros: bool) -> _Tensor:
    return _ops._forward_impl("log_softmax", _C.log_softmax, x, dim,
                              _temperature_arg(temperature, temperature_per_row), mask, "zeros" if zeros else "nan",
                              None, None)


@torch.library.custom_op("softmaxkit::logsumexp", mutates_args=())
def _logsumexp_op(x: _Tensor, dim: int, keepdim: bool, temperature: float, temperature_per_row: Optional[_Tensor],
                  mask: Optional[_Tensor]) -> _Tensor:
    return _ops._forward_impl("logsumexp", _C.logsumexp, x, dim, _temperature_arg(temperature, temperature_per_row),
                              mask, "nan", None, None, keepdim=keepdim)


@_softmax_op.register_fake
def _(x, dim, temperature, temperature_per_row, mask, zeros):
    return x.new_empty(x.shape)


@_log_softmax_op.register_fake
def _(x, dim, temperature, temperature_per_row, mask, zeros):
    return x.new_empty(x.shape)


@_logsumexp_op.register_fake
def _(x, dim, keepdim, temperature, temperature_per_row, mask):
    return x.new_empty(_reduced_shape(x, dim, keepdim), dtype=_stat_dtype(x))


@torch.library.custom_op("softmaxkit::softmax_state", mutates_args=())
def _softmax_state_op(x: _Tensor, dim: int, keepdim: bool, temperature: float,
                      temperature_per_row: Optional[_Tensor], mask: Optional[_Tensor]) -> Tuple[_Tensor, _Tensor]:
    return _ops._state_impl("softmax_state", x, dim, _temperature_arg(temperature, temperature_per_row), mask,
                            keepdim, None, None)


@_softmax_state_op.register_fake
def _(x, dim, keepdim, temperature, temperature_per_row, mask):
    shape = _reduced_shape(x, dim, keepdim)
    return x.new_empty(shape, dtype=_stat_dtype(x)), x.new_empty(shape, dtype=_stat_dtype(x))


@torch.library.custom_op("softmaxkit::softmax_backward", mutates_args=())
def _softmax_backward_op(y: _Tensor, dy: _Tensor, dim: int, temperature: float,
                         temperature_per_row: Optional[_Tensor]) -> _Tensor:
    return _ops._backward_impl("softmax_backward", _C.softmax_backward, y, dy, dim,
                               _temperature_arg(temperature, temperature_per_row), None, None)


@torch.library.custom_op("softmaxkit::log_softmax_backward", mutates_args=())
def _log_softmax_backward_op(y: _Tensor, dy: _Tensor, dim: int, temperature: float,
                             temperature_per_row: Optional[_Tensor]) -> _Tensor:
    return _ops._backward_impl("log_softmax_backward", _C.log_softmax_backward, y, dy, dim,
                               _temperature_arg(temperature, temperature_per_row), None, None)


@_softmax_backward_op.register_fake
def _(y, dy, dim, temperature, temperature_per_row):
    return y.new_empty(y.shape)


@_log_softmax_backward_op.register_fake
def _(y, dy, dim, temperature, temperature_per_row):
    return y.new_empty(y.shape)


# --- autograd ------------------------------------------------------------------------------------------------------

def _save_forward(ctx, inputs, output):
    x, dim, temperature, temperature_per_row, mask, zeros = inputs
    ctx.save_for_backward(output, temperature_per_row, mask)
    ctx.dim, ctx.temperature, ctx.zeros = dim, temperature, zeros


def _make_backward(backward_op, log):
    def backward(ctx, grad):
        y, per_row, mask = ctx.saved_tensors
        # The upstream gradient of a reduction is often an expanded (stride-0) view; give the kernels rows.
        dx = backward_op(y, grad.contiguous(), ctx.dim, ctx.temperature, per_row)
        if log:
            # The library's formula dx = dy − exp(y)·Σdy is the derivative where y depends on x. Log-softmax does
            # not depend on x at a position the mask removes (y = −inf whatever x is), nor anywhere in a row the
            # zeros policy filled (y = 0 whatever x is): the gradient there is 0. (Softmax's formula already gives 0
            # in both cases, since y = 0 there.) A row of n > 1 exact zeros can only be such a filled row, because a
            # real log-softmax row has Σ exp(y) = 1.
            if mask is not None:
                removed = ~mask if mask.dtype == torch.bool else torch.isneginf(mask)
                dx = dx.masked_fill(removed, 0)
            if ctx.zeros and y.shape[ctx.dim] > 1:
                dx = dx.masked_fill((y == 0).all(dim=ctx.dim, keepdim=True), 0)
        return dx, None, None, None, None, None

    return backward


_softmax_op.register_autograd(_make_backward(_softmax_backward_op, False), setup_context=_save_forward)
_log_softmax_op.register_autograd(_make_backward(_log_softmax_backward_op, True), setup_context=_save_forward)


def _no_setup(ctx, inputs, output):
    pass


def _not_differentiable(name):
    def backward(ctx, *grads):
        raise NotImplementedError(f"softmaxkit.torch.{name} has no backward pass; differentiate logsumexp "
                                  f"(or softmax) instead")

    return backward


# d logsumexp(x / T + mask) / dx = softmax(x / T + mask) / T: the library's softmax, scaled by the upstream
# gradient of each row (a broadcast multiply; no softmax arithmetic here). An empty row's softmax is NaN, as is
# torch.logsumexp's gradient there.
def _save_lse(ctx, inputs, output):
    x, dim, keepdim, temperature, temperature_per_row, mask = inputs
    ctx.save_for_backward(x, temperature_per_row, mask)
    ctx.dim, ctx.keepdim, ctx.temperature = dim, keepdim, temperature


def _logsumexp_backward(ctx, grad):
    x, per_row, mask = ctx.saved_tensors
    p = _softmax_op(x, ctx.dim, ctx.temperature, per_row, mask, False)
    g = grad if ctx.keepdim else grad.unsqueeze(ctx.dim)
    if per_row is not None:
        g = g / (per_row if per_row.dim() == x.dim() else per_row.unsqueeze(ctx.dim))
    else:
        g = g / ctx.temperature
    return (p * g).to(x.dtype), None, None, None, None, None


_logsumexp_op.register_autograd(_logsumexp_backward, setup_context=_save_lse)
_softmax_state_op.register_autograd(_not_differentiable("softmax_state"), setup_context=_no_setup)


# --- the Python API ----------------------------------------------------------------------------------------------

def _split_temperature(op, temperature):
    if isinstance(temperature, torch.Tensor):
        return 1.0, temperature
    if isinstance(temperature, numbers.Real) and not isinstance(temperature, bool):
        return float(temperature), None
    raise InvalidArgumentError(f"{op}: argument 'temperature': must be a positive real or a float32 tensor of one "
                               f"value per row ({type(temperature).__name__} given)")


def _zeros(op, empty_rows):
    return _ops._empty_rows(op, empty_rows)


def softmax(x, dim=-1, *, temperature=1.0, mask=None, empty_rows="nan"):
    """softmaxkit.softmax as the registered op ``torch.ops.softmaxkit.softmax``: differentiable in x (its backward is
    softmaxkit's softmax_backward) and traceable by torch.compile. Arguments as softmaxkit.softmax; temperature
    is a float or a float32 tensor of one value per row."""
    t, per_row = _split_temperature("softmax", temperature)
    return _softmax_op(x, dim, t, per_row, mask, _zeros("softmax", empty_rows))


def log_softmax(x, dim=-1, *, temperature=1.0, mask=None, empty_rows="nan"):
    """softmaxkit.log_softmax as the registered op ``torch.ops.softmaxkit.log_softmax`` (differentiable in x)."""
    t, per_row = _split_temperature("log_softmax", temperature)
    return _log_softmax_op(x, dim, t, per_row, mask, _zeros("log_softmax", empty_rows))


def logsumexp(x, dim=-1, *, keepdim=False, temperature=1.0, mask=None):
    """softmaxkit.logsumexp as the registered op ``torch.ops.softmaxkit.logsumexp`` (differentiable in x)."""
    t, per_row = _split_temperature("logsumexp", temperature)
    return _logsumexp_op(x, dim, keepdim, t, per_row, mask)


def softmax_state(x, dim=-1, *, keepdim=False, temperature=1.0, mask=None):
    """softmaxkit.softmax_state as the registered op ``torch.ops.softmaxkit.softmax_state``: returns (m, l)."""
    t, per_row = _split_temperature("softmax_state", temperature)
    return _softmax_state_op(x, dim, keepdim, t, per_row, mask)


def softmax_backward(y, dy, dim=-1, *, temperature=1.0):
    """softmaxkit.softmax_backward as the registered op ``torch.ops.softmaxkit.softmax_backward``."""
    t, per_row = _split_temperature("softmax_backward", temperature)
    return _softmax_backward_op(y, dy, dim, t, per_row)


def log_softmax_backward(y, dy, dim=-1, *, temperature=1.0):
    """softmaxkit.log_softmax_backward as the registered op ``torch.ops.softmaxkit.log_softmax_backward``."""
    t, per_row = _split_temperature("log_softmax_backward", temperature)
    return _log_softmax_backward_op(y, dy, dim, t, per_row)


# --- cross-entropy (issue 5) ---------------------------------------------------------------------------------------
# The forward returns the loss with the per-row LSE and the z-loss part; the backward reuses the LSE (one read of
# the logits on a GPU). The LSE and z-loss outputs are treated as constants by autograd (the z-loss is already part
# of the loss), as are the targets and class weights.

from . import _cross_entropy as _ce  # noqa: E402

_REDUCTION_NAMES = {v: k for k, v in _ce._REDUCTIONS.items()}


@torch.library.custom_op("softmaxkit::cross_entropy", mutates_args=())
def _cross_entropy_op(logits: _Tensor, targets: _Tensor, weight: Optional[_Tensor], ignore_index: int,
                      reduction: int, mean_of_nothing_is_zero: bool, label_smoothing: float, z_loss: float,
                      softcap: float) -> Tuple[_Tensor, _Tensor, _Tensor]:
    return _ce._forward_impl(logits, targets, weight, ignore_index, _REDUCTION_NAMES[reduction], label_smoothing,
                             z_loss, softcap, mean_of_nothing_is_zero, True, True, None)


@_cross_entropy_op.register_fake
def _(logits, targets, weight, ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing, z_loss, softcap):
    shape = [logits.shape[0]] if reduction == 0 else []
    dt = _stat_dtype(logits)
    return (logits.new_empty(shape, dtype=dt), logits.new_empty([logits.shape[0]], dtype=dt),
            logits.new_empty(shape, dtype=dt))


@torch.library.custom_op("softmaxkit::cross_entropy_backward", mutates_args=())
def _cross_entropy_backward_op(grad_loss: _Tensor, logits: _Tensor, targets: _Tensor, lse: _Tensor,
                               weight: Optional[_Tensor], ignore_index: int, reduction: int,
                               mean_of_nothing_is_zero: bool, label_smoothing: float, z_loss: float,
                               softcap: float) -> _Tensor:
    return _ce.cross_entropy_backward(logits, targets, grad_loss, lse=lse, weight=weight, ignore_index=ignore_index,
                                      reduction=_REDUCTION_NAMES[reduction], label_smoothing=label_smoothing,
                                      z_loss=z_loss, softcap=softcap, mean_of_nothing_is_zero=mean_of_nothing_is_zero)


@_cross_entropy_backward_op.register_fake
def _(grad_loss, logits, targets, lse, weight, ignore_index, reduction, mean_of_nothing_is_zero, label_smoothing,
      z_loss, softcap):
    return logits.new_empty(logits.shape)


def _save_cross_entropy(ctx, inputs, output):
    logits, targets, weight = inputs[:3]
    ctx.save_for_backward(logits, targets, weight, output[1])
    ctx.scalars = inputs[3:]
    ctx.mark_non_differentiable(output[1], output[2])


def _cross_entropy_backward(ctx, grad_loss, grad_lse, grad_z):
    logits, targets, weight, lse = ctx.saved_tensors
    if grad_loss is None:
        return (None,) * 9
    grad_loss = grad_loss.to(_stat_dtype(logits))
    dx = _cross_entropy_backward_op(grad_loss, logits, targets, lse, weight, *ctx.scalars)
    return (dx,) + (None,) * 8


_cross_entropy_op.register_autograd(_cross_entropy_backward, setup_context=_save_cross_entropy)


def cross_entropy(logits, targets, *, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                  z_loss=0.0, softcap=0.0, mean_of_nothing_is_zero=False, return_lse=False, return_z_loss=False):
    """softmaxkit.cross_entropy as the registered op ``torch.ops.softmaxkit.cross_entropy``: differentiable in the
    logits (the backward is softmaxkit's cross_entropy_backward, fed the forward's LSE) and traceable by
    torch.compile. Arguments and results as softmaxkit.cross_entropy."""
    op = "cross_entropy"
    scalars = _ce._scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    loss, lse, zl = _cross_entropy_op(logits, targets, weight, *scalars)
    # The LSE and the z-loss are reported statistics (the z-loss is already inside `loss`): detached, since
    # mark_non_differentiable in setup_context does not reach a torch.library op's outputs on every torch version
    # (torch 2.11 on the H200 returned an LSE that required grad).
    parts = (loss,) + ((lse.detach(),) if return_lse else ()) + ((zl.detach(),) if return_z_loss else ())
    return parts[0] if len(parts) == 1 else parts


def cross_entropy_backward(logits, targets, grad_loss, lse, *, weight=None, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0, z_loss=0.0, softcap=0.0, mean_of_nothing_is_zero=False):
    """softmaxkit.cross_entropy_backward as the registered op ``torch.ops.softmaxkit.cross_entropy_backward``
    (grad_loss a tensor of the loss's shape; lse the forward's)."""
    op = "cross_entropy_backward"
    scalars = _ce._scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    return _cross_entropy_backward_op(grad_loss, logits, targets, lse, weight, *scalars)


__all__ += ["cross_entropy", "cross_entropy_backward"]
