"""Cross-entropy from logits on any DLPack array: argument plumbing around softmaxkit._C (no arithmetic here).

The semantics are the C++ library's (include/softmaxkit/cross_entropy.hpp), which follow PyTorch's
F.cross_entropy: ignore_index, reductions none / sum / mean (a weighted mean with class weights), label smoothing,
plus PaLM's z-loss and logit soft-capping.
"""

import numbers
import sys

from . import _C
from ._arrays import framework_of, launch_stream
from ._errors import InvalidArgumentError
from ._ops import _float_code, _no_autograd, _refuse_requires_grad

_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}


def _reduction(op, reduction):
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise InvalidArgumentError(
            f"{op}: argument 'options.reduction': must be 'none', 'sum' or 'mean' ({reduction!r} given)")
    return _REDUCTIONS[reduction]


def _real(op, arg, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{op}: argument '{arg}': must be a real number ({value!r} given)")
    return float(value)


def _int(op, arg, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{op}: argument '{arg}': must be an int ({value!r} given)")
    return int(value)


def _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero):
    return (_int(op, "options.ignore_index", ignore_index), _reduction(op, reduction),
            bool(mean_of_nothing_is_zero), _real(op, "options.label_smoothing", label_smoothing),
            _real(op, "options.z_loss", z_loss), _real(op, "options.softcap", softcap))


def _rows(vx):
    return vx.shape[0] if len(vx.shape) >= 1 else 0


def cross_entropy(logits, targets, *, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                  z_loss=0.0, softcap=0.0, mean_of_nothing_is_zero=False, return_lse=False, return_z_loss=False,
                  stream=None, inplace_backward=False):
    """Cross-entropy of [N, C] logits against [N] integer targets, in one pass over the logits.

    Per row: loss = (1 - eps) * w[t] * (LSE - z[t]) + eps / C * sum_c w[c] * (LSE - z[c]) + z_loss * LSE^2, with
    z = softcap * tanh(x / softcap) when softcap > 0. Rows whose target is ignore_index contribute 0 and are not
    counted.

    Args:
        logits: [N, C], float32, float16, bfloat16 (f32 arithmetic) or float64 (CPU only); any row stride.
        targets: [N], int32 or int64; each a class in [0, C) or ignore_index. Any other value raises
            InvalidArgumentError naming the row (on a GPU after the kernels ran: that row's loss is NaN).
        weight: optional [C] class weights, float32 (float64 for float64 logits), each >= 0.
        reduction: "none" ([N] losses), "sum" or "mean" (a scalar). The mean divides the cross-entropy by the
            sum of w[t] over the counted rows (PyTorch's weighted mean) and the z-loss by their number; with every
            row ignored it is NaN, or 0 with mean_of_nothing_is_zero=True.
        label_smoothing: eps in [0, 1]. z_loss: s >= 0 (1e-4 is usual). softcap: c >= 0 (0 disables).
        return_lse: also return the per-row log-sum-exp [N] (float32; float64 for float64 logits), which
            cross_entropy_backward can reuse to skip a pass.
        return_z_loss: also return the z-loss part (the loss's shape).
        stream: CUDA stream for CUDA arrays (see softmaxkit.softmax); ignored on the CPU.
        inplace_backward: for torch logits that require grad with reduction "sum" or "mean": write the gradient
            over the logits during the forward (their values are destroyed; the gradient then shares their
            storage). Without it the gradient goes to a fresh buffer.

    For torch logits that require grad (grad mode on, reduction "sum" or "mean"), the forward computes the
    gradient too, in one call (cross_entropy_forward_backward: on a GPU the logits are read once), and the
    backward only scales it by the upstream gradient when that is not exactly 1. Otherwise (reduction "none", or
    no gradient wanted) this is the registered op softmaxkit.torch.cross_entropy, whose backward reads the logits
    again.

    Returns:
        loss, or a tuple (loss, lse?, z_loss?) in that order with the parts asked for.
    """
    op = "cross_entropy"
    torch = sys.modules.get("torch")
    if (stream is None and torch is not None and isinstance(logits, torch.Tensor) and logits.requires_grad
            and torch.is_grad_enabled() and reduction in ("sum", "mean")):
        scalars = _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
        loss, lse, zl = _fused_function().apply(logits, targets, weight, scalars, bool(inplace_backward))
        parts = (loss,) + ((lse,) if return_lse else ()) + ((zl,) if return_z_loss else ())
        return parts[0] if len(parts) == 1 else parts
    if stream is None and torch is not None and isinstance(logits, torch.Tensor):
        from . import torch as smk_torch

        return smk_torch.cross_entropy(logits, targets, weight=weight, ignore_index=ignore_index,
                                       reduction=reduction, label_smoothing=label_smoothing, z_loss=z_loss,
                                       softcap=softcap, mean_of_nothing_is_zero=mean_of_nothing_is_zero,
                                       return_lse=return_lse, return_z_loss=return_z_loss)
    if stream is not None:
        _no_autograd(op, logits)
    return _forward_impl(logits, targets, weight, ignore_index, reduction, label_smoothing, z_loss, softcap,
                         mean_of_nothing_is_zero, return_lse, return_z_loss, stream)


class _Outputs:
    """The arrays a call allocates for its outputs, in order, and their delivery once the call has run."""

    def __init__(self, fw, op, launch):
        self.fw, self.op, self.launch, self.results = fw, op, launch, []

    def new(self, shape, arg, dtype):
        arr, owner = self.fw.empty(self.op, shape, dtype)
        self.results.append((arr, owner))
        return owner.view(arr, self.op, arg, self.launch, writable=True)

    def deliver(self):
        return tuple(self.fw.deliver(arr, owner, self.launch) for arr, owner in self.results)


def _grad_loss_view(fw, op, grad_loss, loss_shape, stat, launch):
    """The upstream gradient as a view: None (1), an array of the loss's shape, or a number filled into one."""
    if grad_loss is None:
        return None
    if isinstance(grad_loss, numbers.Real) and not isinstance(grad_loss, bool):
        gl, gl_owner = fw.empty(op, loss_shape, stat)
        gl[...] = float(grad_loss)  # a fill on the framework's own (current) stream, which the launch follows
        return gl_owner.view(gl, op, "grad_loss", launch)
    return framework_of(grad_loss).view(grad_loss, op, "grad_loss", launch)


def _logits_call(op, logits, targets, scalars, stream):
    """What every call on logits and targets starts with: the framework, the launch stream, the two views, the
    logits' dtype code and the statistics' (f64 for f64 logits, else f32), the rows and the loss's shape."""
    fw = framework_of(logits)
    launch = launch_stream(op, fw, stream)
    vx = fw.view(logits, op, "logits", launch)
    vt = framework_of(targets).view(targets, op, "targets", launch)
    code = _float_code(op, "logits", vx)
    stat = "f64" if code == "f64" else "f32"
    n = _rows(vx)
    return fw, launch, vx, vt, code, stat, n, ((n,) if scalars[1] == 0 else ())


def _forward_impl(logits, targets, weight, ignore_index, reduction, label_smoothing, z_loss, softcap,
                  mean_of_nothing_is_zero, return_lse, return_z_loss, stream):
    op = "cross_entropy"
    scalars = _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    fw, launch, vx, vt, code, stat, n, loss_shape = _logits_call(op, logits, targets, scalars, stream)
    outs = _Outputs(fw, op, launch)
    vloss = outs.new(loss_shape, "loss", stat)
    vlse = outs.new((n,), "lse", stat) if return_lse else None
    vz = outs.new(loss_shape, "z_loss", stat) if return_z_loss else None
    vw = framework_of(weight).view(weight, op, "options.class_weights", launch) if weight is not None else None
    _C.cross_entropy(vloss, vx, vt, *scalars, vw, vlse, vz, launch)
    out = outs.deliver()
    return out[0] if len(out) == 1 else out


def _forward_backward_impl(logits, targets, grad_loss, weight, scalars, inplace, stream):
    """(loss, grad, lse, z_loss) of one cross_entropy_forward_backward call; grad is `logits` itself when inplace."""
    op = "cross_entropy_forward_backward"
    fw, launch, vx, vt, code, stat, n, loss_shape = _logits_call(op, logits, targets, scalars, stream)
    outs = _Outputs(fw, op, launch)
    vloss = outs.new(loss_shape, "loss", stat)
    vlse = outs.new((n,), "lse", stat)
    vz = outs.new(loss_shape, "z_loss", stat)
    if inplace:
        vg = fw.view(logits, op, "grad_logits", launch, writable=True)
    else:
        vg = outs.new(tuple(vx.shape), "grad_logits", code)
    vgl = _grad_loss_view(fw, op, grad_loss, loss_shape, stat, launch)
    vw = framework_of(weight).view(weight, op, "options.class_weights", launch) if weight is not None else None
    _C.cross_entropy_forward_backward(vloss, vg, vx, vt, vgl, *scalars, vw, vlse, vz, launch)
    out = outs.deliver()
    grad = logits if inplace else out[3]
    return out[0], grad, out[1], out[2]


def cross_entropy_forward_backward(logits, targets, grad_loss=None, *, weight=None, ignore_index=-100,
                                   reduction="mean", label_smoothing=0.0, z_loss=0.0, softcap=0.0,
                                   mean_of_nothing_is_zero=False, inplace=False, return_lse=False,
                                   return_z_loss=False, stream=None):
    """cross_entropy and cross_entropy_backward in one call: the loss and its gradient in the logits.

    On a GPU a row of up to 49152 classes is read once and its gradient written once (no soft-capping); otherwise
    the two calls run (they measured faster on wider rows). Plain arrays: autograd does not see the call (torch tensors that require grad are refused
    while grad mode is on; softmaxkit.cross_entropy on such tensors uses this call itself).

    Args:
        grad_loss: the upstream gradient of the loss's shape (an array, float32 / float64, or a number); None is 1.
        inplace: write the gradient over `logits` (their values are destroyed).
        Other arguments: as in cross_entropy.

    Returns:
        (loss, grad_logits), then lse and z_loss when asked for. grad_logits has the logits' shape and dtype
        (`logits` itself with inplace=True).
    """
    op = "cross_entropy_forward_backward"
    _refuse_requires_grad(op, (logits,), "the call returns the gradient itself and autograd does not see it, but "
                                         "the logits require grad; pass detached tensors (or call under "
                                         "torch.no_grad()), or use softmaxkit.cross_entropy")
    scalars = _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    loss, grad, lse, zl = _forward_backward_impl(logits, targets, grad_loss, weight, scalars, inplace, stream)
    return (loss, grad) + ((lse,) if return_lse else ()) + ((zl,) if return_z_loss else ())


_FUSED = None


def _fused_function():
    """The torch.autograd.Function behind softmaxkit.cross_entropy for logits that require grad (built on first use,
    so that importing softmaxkit never imports torch)."""
    global _FUSED
    if _FUSED is not None:
        return _FUSED
    import torch

    class FusedCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, targets, weight, scalars, inplace):
            # The gradient for an upstream gradient of 1: sum and mean are linear in that scalar.
            loss, grad, lse, zl = _forward_backward_impl(logits.detach(), targets, None, weight, scalars, inplace,
                                                         None)
            ctx.save_for_backward(grad)
            ctx.mark_non_differentiable(lse, zl)
            return loss, lse, zl

        @staticmethod
        def backward(ctx, grad_loss, grad_lse, grad_z):
            (grad,) = ctx.saved_tensors
            if grad_loss is None:
                return None, None, None, None, None
            # One scalar read back (a sync) spares a pass over the gradient when the upstream gradient is 1.
            if not bool(torch.equal(grad_loss, torch.ones_like(grad_loss))):
                grad = grad * grad_loss.to(grad.dtype)
            return grad, None, None, None, None

    _FUSED = FusedCrossEntropy
    return _FUSED


def cross_entropy_backward(logits, targets, grad_loss=1.0, *, lse=None, weight=None, ignore_index=-100,
                           reduction="mean", label_smoothing=0.0, z_loss=0.0, softcap=0.0,
                           mean_of_nothing_is_zero=False, out=None, inplace=False, stream=None):
    """The gradient of cross_entropy with respect to the logits, times grad_loss.

    grad = ((1 - eps) * w[t] * (p - onehot(t)) + eps / C * (sum(w) * p - w) + 2 * z_loss * LSE * p) * grad_loss,
    times 1 - tanh(x / softcap)^2 under soft-capping; 0 on ignored rows. The target's entry p - 1 is formed in
    float32 as -(sum of the other p) before rounding, so it keeps its digits as p -> 1 in bfloat16.

    Args:
        grad_loss: the upstream gradient, of the loss's shape ([N] for reduction "none", a scalar otherwise):
            an array (float32; float64 for float64 logits) or a Python number.
        lse: optional per-row LSE from cross_entropy(..., return_lse=True): on a GPU the backward then reads the
            logits once instead of twice.
        out: optional [N, C] result (the logits' dtype, or float32 for 16-bit logits).
        inplace: write the gradient over `logits` (out=logits): the logits are read once and overwritten once.
        Other arguments: as in cross_entropy (they must be the forward call's).

    Returns:
        The gradient, of the logits' shape and dtype (or `out`, or `logits` itself with inplace=True).
    """
    op = "cross_entropy_backward"
    if inplace:
        if out is not None:
            raise InvalidArgumentError(f"{op}: argument 'out': inplace=True writes into logits; pass one or the other")
        out = logits
    if out is not None or stream is not None:
        _no_autograd(op, logits, out)
    scalars = _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    fw, launch, vx, vt, code, stat, _, loss_shape = _logits_call(op, logits, targets, scalars, stream)
    # Required here: None goes to the view, which refuses it naming the argument, as before.
    vgl = (_grad_loss_view(fw, op, grad_loss, loss_shape, stat, launch) if grad_loss is not None
           else framework_of(grad_loss).view(grad_loss, op, "grad_loss", launch))
    vlse = framework_of(lse).view(lse, op, "lse", launch) if lse is not None else None
    vw = framework_of(weight).view(weight, op, "options.class_weights", launch) if weight is not None else None
    if out is None:
        result, owner = fw.empty(op, tuple(vx.shape), code)
        vg = owner.view(result, op, "grad_logits", launch, writable=True)
    else:
        result, owner = out, None
        vg = framework_of(out).view(out, op, "grad_logits", launch, writable=True)
    _C.cross_entropy_backward(vg, vx, vt, vgl, *scalars, vw, vlse, launch)
    return result if owner is None else fw.deliver(result, owner, launch)


def linear_cross_entropy(h, w, targets, bias=None, *, weight=None, ignore_index=-100, reduction="mean",
                         label_smoothing=0.0, z_loss=0.0, softcap=0.0, mean_of_nothing_is_zero=False, grad_loss=None,
                         chunk_rows=None, logit_rows=None, stream=None):
    """Cross-entropy of the logits h @ w.T (+ bias) and its gradients, without the [N, V] logits.

    One call returns the loss and the gradients of grad_loss * loss with respect to h, w and the bias: the logits are
    formed chunk_rows rows at a time (float32, from the inputs' products) and never kept, so the upstream gradient
    must be known up front (None: 1). Semantics and options: cross_entropy's (include/softmaxkit/
    linear_cross_entropy.hpp has the algorithm and its precision).

    Args:
        h: [N, d] hidden states; w: [V, d] classifier; bias: optional [V]. One dtype for all three: float32,
            float16, bfloat16 (float64 on the CPU). Each row's elements contiguous.
        targets: [N], int32 or int64. weight: optional [V] class weights, float32 (float64 for float64 inputs).
        grad_loss: the upstream gradient of the loss's shape (an array, float32 / float64, or a number); None is 1.
        chunk_rows: rows per chunk (> 0); None takes the library's default (512 MiB of one chunk's logits and
            gradient). logit_rows: on a GPU, rows of float32 logits formed at once inside a chunk (> 0; None:
            the chunk), which lowers the memory without narrowing the gradient products.
        Other arguments: as in cross_entropy.

    Returns:
        (loss, dh, dw, lse), or (loss, dh, dw, dbias, lse) when a bias is given; lse is the per-row log-sum-exp
        (float32; float64 for float64 inputs). These are plain arrays: autograd does not see the call (torch
        tensors that require grad are refused while grad mode is on).
    """
    op = "linear_cross_entropy"
    _refuse_requires_grad(op, (h, w, bias), "the call returns its gradients itself and autograd does not see it, but "
                                            "an argument requires grad; pass detached tensors (or call under "
                                            "torch.no_grad())")
    scalars = _scalars(op, ignore_index, reduction, label_smoothing, z_loss, softcap, mean_of_nothing_is_zero)
    if chunk_rows is not None:
        chunk_rows = _int(op, "options.chunk_rows", chunk_rows)
    if logit_rows is not None:
        logit_rows = _int(op, "options.logit_rows", logit_rows)
    fw = framework_of(h)
    launch = launch_stream(op, fw, stream)
    vh = fw.view(h, op, "hidden", launch)
    vw = framework_of(w).view(w, op, "weight", launch)
    vt = framework_of(targets).view(targets, op, "targets", launch)
    vb = framework_of(bias).view(bias, op, "options.bias", launch) if bias is not None else None
    vcw = framework_of(weight).view(weight, op, "options.ce.class_weights", launch) if weight is not None else None
    code = _float_code(op, "hidden", vh)
    stat = "f64" if code == "f64" else "f32"
    n = _rows(vh)
    loss_shape = (n,) if scalars[1] == 0 else ()
    outs = _Outputs(fw, op, launch)
    vloss = outs.new(loss_shape, "loss", stat)
    vdh = outs.new(tuple(vh.shape), "grad_hidden", code)
    vdw = outs.new(tuple(vw.shape), "grad_weight", code)
    vdb = outs.new(tuple(vb.shape), "grad_bias", code) if bias is not None else None
    vlse = outs.new((n,), "lse", stat)
    vgl = _grad_loss_view(fw, op, grad_loss, loss_shape, stat, launch)
    _C.linear_cross_entropy(vloss, vlse, vdh, vdw, vdb, vh, vw, vt, vgl, vb, chunk_rows, logit_rows, *scalars, vcw,
                            launch)
    return outs.deliver()
