"""softmaxkit on torch tensors: every op against torch itself (run in float64), gradients through the registered
autograd formulas, torch.autograd.gradcheck on the CPU float64 path, torch.library.opcheck, torch.compile with
fullgraph=True, zero-copy and the caller's CUDA stream. CUDA cases carry the `gpu` mark and skip without a device;
the whole file skips without torch (CI installs only what the NumPy tests need)."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import softmaxkit as smk  # noqa: E402
import softmaxkit.torch as smkt  # noqa: E402
from softmaxkit import _C  # noqa: E402

from conftest import U32, assert_log_softmax_close, assert_lse_close, assert_softmax_close, log2n  # noqa: E402

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)]
DTYPES16 = {torch.float16: np.float16}


def supported(fn, *args, **kwargs):
    """Runs fn; a layout or dtype this build's kernels do not take yet skips the test with the library's reason."""
    try:
        return fn(*args, **kwargs)
    except smk.UnsupportedError as e:
        pytest.skip(f"unsupported by this build: {e}")


def poison_allocator(shape, dtype, device):
    """Leaves a NaN-filled block of this size in torch's caching allocator, so the next allocation of the same
    size (the op's result) most likely starts as NaN rather than as stale correct-looking values."""
    if device == "cuda":
        torch.full(shape, float("nan"), dtype=dtype, device=device)  # freed at once, its block cached


def rand(shape, dtype, device, seed, scale=5.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype).to(device)


def np64(t):
    return t.detach().to("cpu", torch.float64).numpy()


def assert_16bit_close(out, ref, f32_bound, dtype):
    """A 16-bit result: the f32 computation's error, then one rounding to the 16-bit type (half an ulp there)."""
    o, r = np64(out), np.asarray(ref, dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(o), np.isnan(r))
    ok = np.isfinite(r)
    a = torch.from_numpy(np.abs(r[ok])).to(dtype)
    ulp = (torch.nextafter(a, torch.tensor(math.inf, dtype=dtype)) - a).double().numpy()
    bound = ulp + np.broadcast_to(f32_bound, r.shape)[ok]  # a full ulp: the reference's own rounding to 16 bits
    err = np.abs(o[ok] - r[ok])
    assert np.all(err <= bound), f"max err over bound {np.max(err - bound):.3g}"


CASES = [((4, 33), -1), ((3, 1025), -1), ((2, 5, 7), 1), ((300, 3), 0)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_forward_against_torch(device, dtype, shape, dim, layout):
    x = rand(shape, dtype, device, seed=sum(shape))
    if layout == "strided":  # every other column of a wider tensor, offset by one
        wide = rand(shape[:-1] + (2 * shape[-1] + 1,), dtype, device, seed=3)
        wide[..., 1::2] = x
        x = wide[..., 1::2]
        assert not x.is_contiguous()
    n = shape[dim]
    x64 = x.double()
    ref_p, ref_y, ref_l = torch.softmax(x64, dim), torch.log_softmax(x64, dim), torch.logsumexp(x64, dim)
    for op, ref in (("softmax", ref_p), ("log_softmax", ref_y)):
        poison_allocator(x.shape, dtype, device)
        out = supported(getattr(smk, op), x, dim)
        assert isinstance(out, torch.Tensor) and out.device == x.device and out.dtype == dtype
        assert out.shape == x.shape
        if dtype == torch.float32:
            check = assert_softmax_close if op == "softmax" else assert_log_softmax_close
            check(np64(out), np64(ref), n, f"{op} {device}")
        else:
            r = np64(ref)
            f32 = (6 + log2n(n)) * U32 * np.abs(r) if op == "softmax" else (2 * np.abs(r) + log2n(n) + 3) * U32
            assert_16bit_close(out, r, f32, dtype)
    poison_allocator(ref_l.shape, torch.float32, device)
    lse = supported(smk.logsumexp, x, dim)
    assert lse.dtype == torch.float32 and lse.shape == ref_l.shape and lse.device == x.device
    assert_lse_close(np64(lse), np64(ref_l), n, f"logsumexp {device}")
    assert supported(smk.logsumexp, x, dim, keepdim=True).shape == torch.logsumexp(x64, dim, keepdim=True).shape


@pytest.mark.parametrize("device", DEVICES)
def test_out_poisoned_and_in_place(device):
    x = rand((8, 100), torch.float32, device, seed=5)
    ref = np64(torch.softmax(x.double(), -1))
    out = torch.full_like(x, float("nan"))
    r = supported(smk.softmax, x, out=out)
    assert r is out
    assert_softmax_close(np64(out), ref, 100, "out=")
    y = x.clone()
    supported(smk.softmax, y, out=y)
    assert_softmax_close(np64(y), ref, 100, "in place")


@pytest.mark.parametrize("device", DEVICES)
def test_adversarial_rows(device):
    inf, nan = math.inf, math.nan
    x = torch.tensor([[-inf, -inf, -inf, -inf], [1.0, inf, 2.0, 3.0], [0.0, 1.0, nan, 2.0], [1000.0, 1.0, -inf, 0.0]],
                     device=device)
    p = supported(smk.softmax, x)
    assert torch.isnan(p[:3]).all()
    pz = supported(smk.softmax, x, empty_rows="zeros")
    assert (pz[0] == 0).all() and torch.isnan(pz[1:3]).all()
    y = supported(smk.log_softmax, x)
    assert y[3, 0].item() == 0.0 and y[3, 1].item() == -999.0 and y[3, 2].item() == -inf
    lse = supported(smk.logsumexp, x)
    assert lse[0].item() == -inf and lse[1].item() == inf and math.isnan(lse[2].item())
    torch.testing.assert_close(lse[:2], torch.logsumexp(x[:2].double(), -1).float())


@pytest.mark.parametrize("device", DEVICES)
def test_options_against_torch(device):
    x = rand((6, 4, 24), torch.float32, device, seed=7)
    t_row = (torch.rand((6, 4), generator=torch.Generator().manual_seed(1)) * 3 + 0.2).to(device)
    keep = torch.rand((1, 4, 24), generator=torch.Generator().manual_seed(2)).to(device) > 0.3
    keep[0, 1] = False  # a fully masked row
    bias = rand((1, 4, 24), torch.float32, device, seed=8, scale=1.0)
    x64 = x.double()
    cases = [
        (dict(temperature=0.6), x64 / torch.tensor(0.6, dtype=torch.float32).double()),
        (dict(temperature=t_row), x64 / t_row.double()[..., None]),
        (dict(mask=keep), x64.masked_fill(~keep, -math.inf)),
        (dict(mask=bias, temperature=2.0), x64 / 2.0 + bias.double()),
    ]
    from conftest import scaling_error

    for kw, z in cases:
        e = scaling_error(np64(z))
        assert_softmax_close(np64(supported(smk.softmax, x, **kw)), np64(torch.softmax(z, -1)), 24, str(kw), e)
        assert_log_softmax_close(np64(supported(smk.log_softmax, x, **kw)), np64(torch.log_softmax(z, -1)), 24,
                                 str(kw), e)
        assert_lse_close(np64(supported(smk.logsumexp, x, **kw)), np64(torch.logsumexp(z, -1)), 24, str(kw),
                         e.max(axis=-1))
    pz = supported(smk.softmax, x, mask=keep, empty_rows="zeros")
    assert (pz[:, 1] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_state_against_torch(device):
    x = rand((5, 77), torch.float32, device, seed=9)
    m, l = supported(smk.softmax_state, x)
    assert m.dtype == torch.float32 and m.shape == (5,) and l.shape == (5,)
    torch.testing.assert_close(m, x.amax(-1), rtol=0, atol=0)
    ref_l = torch.exp(x.double() - x.double().amax(-1, keepdim=True)).sum(-1)
    torch.testing.assert_close(l.double(), ref_l, rtol=(6 + log2n(77)) * U32, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_backward_ops_against_torch(device, dtype, dim):
    """softmax_backward and log_softmax_backward against torch's own backward kernels run in float64 on the same
    (rounded) y and dy. Bound: the row sum's error, at most (n - 1) u sum|dy| in any order, plus a few roundings
    of dx, and for 16-bit results their own rounding."""
    n = 130
    x = rand((6, n) if dim == -1 else (n, 6), torch.float64, device, seed=10)
    dy = rand(x.shape, dtype, device, seed=11, scale=1.0)
    aten = torch.ops.aten
    for fwd, bwd, ref_bwd in ((torch.softmax, smk.softmax_backward, aten._softmax_backward_data),
                              (torch.log_softmax, smk.log_softmax_backward, aten._log_softmax_backward_data)):
        y = fwd(x, dim).to(dtype)
        ref = ref_bwd(dy.double(), y.double(), dim, torch.float64)
        poison_allocator(y.shape, dtype, device)
        dx = supported(bwd, y, dy, dim)
        assert dx.dtype == dtype and dx.shape == y.shape and dx.device == y.device
        row_abs = dy.double().abs().sum(dim, keepdim=True)
        tol = (n + 3) * U32 * row_abs + (0 if dtype == torch.float32 else torch.finfo(dtype).eps * ref.abs())
        assert ((dx.double() - ref).abs() <= tol).all(), f"{fwd.__name__} backward {dtype}"
        dx_t = supported(bwd, y, dy, dim, temperature=4.0)
        assert ((dx_t.double() - ref / 4).abs() <= tol / 4 + U32 * ref.abs()).all(), "temperature 4"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("options", ["plain", "temperature", "per_row", "bool_mask", "additive_mask"])
def test_autograd_matches_torch(device, op, options):
    x = rand((4, 3, 50), torch.float32, device, seed=12)
    w = rand((4, 3, 50), torch.float32, device, seed=13, scale=1.0)
    kw, ref_in = {}, (lambda v: v)
    if options == "temperature":
        kw = dict(temperature=0.5)
        ref_in = lambda v: v / 0.5  # noqa: E731
    elif options == "per_row":
        t = (torch.rand((4, 3), generator=torch.Generator().manual_seed(3)) + 0.5).to(device)
        kw = dict(temperature=t)
        ref_in = lambda v: v / t.double()[..., None]  # noqa: E731
    elif options == "bool_mask":
        keep = torch.rand((1, 3, 50), generator=torch.Generator().manual_seed(4)).to(device) > 0.3
        kw = dict(mask=keep)
        ref_in = lambda v: v.masked_fill(~keep, -math.inf)  # noqa: E731
    elif options == "additive_mask":
        bias = rand((1, 1, 50), torch.float32, device, seed=14, scale=1.0)
        kw = dict(mask=bias)
        ref_in = lambda v: v + bias.double()  # noqa: E731
    xa = x.clone().requires_grad_()
    y = supported(getattr(smk, op), xa, -1, **kw)  # a plain call on a tensor goes through the registered op
    assert y.requires_grad and y.grad_fn is not None
    if op == "logsumexp":
        w = w[..., 0]
    finite = torch.isfinite(y)  # log_softmax of a masked position is -inf: leave it out of the loss
    supported((torch.where(finite, y, 0) * w).sum().backward)
    xr = x.double().requires_grad_()
    yr = getattr(torch, op)(ref_in(xr), -1)
    (torch.where(finite, yr, 0) * w.double()).sum().backward()
    n, scale = 50, float(w.abs().max())
    torch.testing.assert_close(xa.grad.double(), xr.grad, rtol=0, atol=(n + 16) * U32 * scale * 4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_gradient_is_zero_where_the_output_does_not_depend_on_x(device, op):
    # A fully masked row under empty_rows="zeros" is constant 0, and a masked position of log_softmax is -inf
    # whatever x is: their gradient is 0 even when the upstream gradient there is not.
    x = rand((3, 6), torch.float32, device, seed=21).requires_grad_()
    keep = torch.tensor([[True] * 6, [False] * 6, [True, False, True, True, False, True]], device=device)
    y = supported(getattr(smk, op), x, -1, mask=keep, empty_rows="zeros")
    dy = rand((3, 6), torch.float32, device, seed=22)
    supported(y.backward, dy)
    assert (x.grad[1] == 0).all(), "the fully masked row"
    assert (x.grad[2][~keep[2]] == 0).all(), "the masked positions"
    xr = x.detach().double().requires_grad_()
    yr = getattr(torch, op)(xr[0], -1)
    yr.backward(dy[0].double())
    torch.testing.assert_close(x.grad[0].double(), xr.grad[0], rtol=0, atol=64 * U32)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_gradcheck_float64_cpu(op):
    x = rand((3, 7), torch.float64, "cpu", seed=15).requires_grad_()
    f = getattr(smkt, op)
    assert supported(torch.autograd.gradcheck, lambda v: f(v, -1), (x,))
    assert supported(torch.autograd.gradcheck, lambda v: f(v, 0, temperature=0.7), (x,))
    t_row = torch.tensor([0.5, 1.5, 3.0], dtype=torch.float32)
    assert supported(torch.autograd.gradcheck, lambda v: f(v, -1, temperature=t_row), (x,))
    keep = torch.tensor([[True, False, True, True, True, False, True]])
    if op != "log_softmax":  # log_softmax of a removed position is -inf, where finite differences do not apply
        assert supported(torch.autograd.gradcheck, lambda v: f(v, -1, mask=keep), (x,))
    bias = torch.linspace(-1, 1, 7, dtype=torch.float64)[None]
    assert supported(torch.autograd.gradcheck, lambda v: f(v, -1, mask=bias), (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = rand((5, 40), torch.float32, device, seed=16)
    y = torch.softmax(x, -1)
    ops = torch.ops.softmaxkit
    for op, args, utils in [
        (ops.softmax.default, (x.requires_grad_(), -1, 1.0, None, None, False), None),
        (ops.log_softmax.default, (x, -1, 0.5, None, None, True), None),
        (ops.logsumexp.default, (x.detach(), 0, True, 1.0, None, None), ("test_schema", "test_faketensor")),
        (ops.softmax_state.default, (x.detach(), -1, False, 1.0, None, None), ("test_schema", "test_faketensor")),
        (ops.softmax_backward.default, (y, torch.ones_like(y), -1, 1.0, None), ("test_schema", "test_faketensor")),
        (ops.log_softmax_backward.default, (y.log(), y, -1, 2.0, None), ("test_schema", "test_faketensor")),
    ]:
        kwargs = {} if utils is None else {"test_utils": utils}
        supported(torch.library.opcheck, op, args, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()

    def f(x, w, keep):
        p = smkt.softmax(x * 2.0, -1, temperature=0.5)
        y = smkt.log_softmax(p + w, 0, mask=keep)
        lse = smkt.logsumexp(x, -1)
        return (torch.where(torch.isfinite(y), y, 0) * w).sum() + lse.sum()

    backend = "inductor" if device == "cuda" else "aot_eager"  # CPU: no C++ toolchain needed for the check
    cf = torch.compile(f, fullgraph=True, backend=backend)
    x = rand((16, 64), torch.float32, device, seed=17)
    w = rand((16, 64), torch.float32, device, seed=18, scale=1.0)
    keep = torch.rand((16, 1), generator=torch.Generator().manual_seed(5)).to(device) > 0.2
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref = supported(f, xa, w, keep)
    ref.backward()
    got = supported(cf, xb, w, keep)
    got.backward()
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(xb.grad, xa.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_copy_views(device):
    wide = rand((6, 21), torch.float32, device, seed=19)
    x = wide[1:, 2::3]
    v = _C.View(x.__dlpack__() if device == "cpu" else x.__dlpack__(stream=-1), "t", "in")
    assert v.data_ptr == x.data_ptr() and v.strides == x.stride() and v.shape == tuple(x.shape)
    assert v.device == (device, 0 if device == "cpu" else x.device.index)


def test_argument_errors_with_torch():
    x = torch.randn(3, 4)
    with pytest.raises(smk.InvalidArgumentError, match="do not support automatic differentiation"):
        smk.softmax(x.requires_grad_(), out=torch.empty(3, 4))
    with pytest.raises(smk.InvalidArgumentError, match="do not support automatic differentiation"):
        smk.logsumexp(x, stream=0)
    with torch.no_grad():
        assert smk.softmax(x, out=torch.empty(3, 4)).shape == (3, 4)  # fine where no gradient is recorded
    with pytest.raises(smk.InvalidArgumentError, match="argument 'temperature'"):
        smkt.softmax(x, temperature="hot")
    with pytest.raises(smk.InvalidArgumentError, match=r"argument 'options.dim': dim 2 is out of range"):
        smkt.softmax(x.detach(), 2)


@pytest.mark.gpu
def test_mixed_devices_rejected():
    x = torch.randn(3, 4, device="cuda")
    with pytest.raises(smk.InvalidArgumentError, match=r"argument 'options.mask'.*is on cpu"):
        supported(smk.softmax, x, mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(smk.InvalidArgumentError, match=r"argument 'out': is on cpu but 'in' is on cuda:0"):
        supported(smk.softmax, x, out=torch.empty(3, 4))


@pytest.mark.gpu
def test_callers_stream_is_honoured():
    """softmax on a side stream behind a long pending kernel must wait for it: the input is written on that stream
    after ~50 ms of sleep, and its memory holds NaN until then. Had the op run on another (non-blocking or legacy)
    stream, it would read the NaN (or stale) values."""
    x = rand((512, 1000), torch.float32, "cuda", seed=20)
    ref = np64(torch.softmax(x.double(), -1))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.full_like(x, float("nan"))
        torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time queued on `side`
        y.copy_(x)
        p = supported(smk.softmax, y)  # torch's current stream is `side` here
        assert not side.query()  # still pending: the call did not block the host
    torch.cuda.current_stream().wait_stream(side)
    assert_softmax_close(np64(p), ref, 1000, "current side stream")

    # An explicit stream= for a torch tensor, with the default stream current.
    z = torch.full_like(x, float("nan"))
    out = torch.full_like(x, float("nan"))
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        z.copy_(x)
    supported(smk.softmax, z, out=out, stream=side)
    side.synchronize()
    assert_softmax_close(np64(out), ref, 1000, "stream=side")
