"""Arrays in, arrays out: which framework an argument comes from, how its memory reaches the C++ library without a
copy, where a result is allocated, and which CUDA stream a call runs on. No arithmetic happens here.

Frameworks
    torch    results are torch tensors on the input's device (torch's caching allocator).
    NumPy    results are NumPy arrays (bfloat16 through ml_dtypes, when it is installed).
    CuPy     results are CuPy arrays on the input's device.
    others   (JAX, and any array exporting DLPack): CPU results are allocated by NumPy, CUDA results by CuPy (or, if
             CuPy is missing, torch); the launch stream is synchronised, then the result is handed to the caller's
             framework through its own ``from_dlpack`` (``x.__array_namespace__().from_dlpack``), which takes the
             memory over without a copy. JAX arrays are immutable, so they are never written into.

Streams (CUDA arrays only; CPU calls run synchronously on the calling thread)
    ``stream=None``: torch inputs run on ``torch.cuda.current_stream(device)``, CuPy inputs on CuPy's current
    stream, any other input on the legacy default stream. ``stream=`` may be an int handle (``cudaStream_t``;
    0 or 1 is the legacy default stream, 2 the per-thread one) or an object with ``cuda_stream`` (torch),
    ``ptr`` (CuPy) or ``__cuda_stream__`` (CUDA Python). Inputs are taken through the DLPack stream protocol, so
    their producer orders its pending work before the launch stream.
"""

import numbers
import sys

from ._errors import InvalidArgumentError, UnsupportedError
from . import _C

FLOAT_CODES = ("f32", "f16", "bf16", "f64")
_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64"}


def _np():
    import numpy

    return numpy


def _ml_dtypes_bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


def stream_handle(op, stream):
    """The integer cudaStream_t of a user's ``stream=`` argument."""
    if isinstance(stream, bool):
        raise InvalidArgumentError(f"{op}: argument 'stream': must be a CUDA stream handle, not a bool")
    if isinstance(stream, numbers.Integral):
        handle = int(stream)
    elif hasattr(stream, "__cuda_stream__"):
        handle = int(stream.__cuda_stream__()[1])
    elif hasattr(stream, "cuda_stream"):
        handle = int(stream.cuda_stream)
    elif hasattr(stream, "ptr"):
        handle = int(stream.ptr)
    else:
        raise InvalidArgumentError(
            f"{op}: argument 'stream': expected an int cudaStream_t or an object with cuda_stream, ptr or "
            f"__cuda_stream__ ({type(stream).__name__} given)")
    if handle < 0:
        raise InvalidArgumentError(f"{op}: argument 'stream': handle {handle} is negative")
    return handle


def _protocol_stream(launch):
    # DLPack's __dlpack__(stream=...) spells the legacy default stream 1 (0 is reserved).
    return launch if launch else 1


class Framework:
    """How one framework's arrays enter and leave softmaxkit. Subclasses override what differs."""

    name = "dlpack"

    def __init__(self, like):
        self.like = like

    # --- where the call runs -------------------------------------------------------------------------------------
    def device(self):
        """('cpu', 0) or ('cuda', index) of the array this framework was detected from."""
        dev = self.like.__dlpack_device__() if hasattr(self.like, "__dlpack_device__") else (1, 0)
        dev_type, index = int(dev[0]), int(dev[1])
        return ("cuda", index) if dev_type in (2, 13) else ("cpu", 0)

    def current_stream(self):
        """The stream this framework orders its own work on, or None when it exposes none."""
        return None

    # --- arguments -----------------------------------------------------------------------------------------------
    def exported(self, arr, launch, cuda):
        """What _C.View takes for `arr`: the array itself (nanobind calls __dlpack__ or the buffer protocol) or a
        DLPack capsule produced for the launch stream. Returns (object, bf16_bits)."""
        if cuda and hasattr(arr, "__dlpack__"):
            return arr.__dlpack__(stream=_protocol_stream(launch)), False
        return arr, False

    def view(self, arr, op, arg, launch, writable=False):
        cuda = self.device()[0] == "cuda"
        obj, bf16_bits = self.exported(arr, launch, cuda)
        return _C.View(obj, op, arg, writable, bf16_bits)

    # --- results -------------------------------------------------------------------------------------------------
    def empty(self, op, shape, code):
        """A new writable array for a result; returns (array, the Framework of that array)."""
        kind, index = self.device()
        if kind == "cpu":
            return NumpyFramework(None).empty(op, shape, code)
        return _staging_framework(op).empty_on(op, shape, code, index)

    def deliver(self, result, owner, launch):
        """The result as an array of the caller's framework."""
        if owner is self or owner.name == self.name:
            return result
        if self.device()[0] == "cuda":
            owner.synchronize(launch)  # the caller's framework may read it on any stream from here on
        namespace = getattr(self.like, "__array_namespace__", None)
        if namespace is None:
            return result
        return namespace().from_dlpack(result)


class NumpyFramework(Framework):
    name = "numpy"

    def device(self):
        return ("cpu", 0)

    def exported(self, arr, launch, cuda):
        if arr.dtype.name == "bfloat16":  # ml_dtypes: exported by neither DLPack nor the buffer protocol
            return arr.view(_np().uint16), True
        return arr, False

    def empty(self, op, shape, code):
        np = _np()
        if code == "bf16":
            bf16 = _ml_dtypes_bfloat16()
            if bf16 is None:
                raise UnsupportedError(f"{op}: a bfloat16 NumPy result needs the ml_dtypes package")
            a = np.empty(shape, dtype=bf16)
        else:
            a = np.empty(shape, dtype=_NAMES[code])
        return a, NumpyFramework(a)


class TorchFramework(Framework):
    name = "torch"

    def device(self):
        d = self.like.device
        if d.type == "cuda":
            return ("cuda", d.index if d.index is not None else 0)
        if d.type != "cpu":
            return (d.type, d.index or 0)  # _C.View names the unsupported device
        return ("cpu", 0)

    def current_stream(self):
        import torch

        return torch.cuda.current_stream(self.like.device).cuda_stream

    def exported(self, arr, launch, cuda):
        t = arr.detach()  # torch refuses to export a tensor that requires grad; the storage is the same
        if not cuda:
            return t, False
        # No synchronisation when we launch on the stream torch orders this tensor on (-1 tells the producer so).
        same = launch == self.current_stream_of(t)
        return t.__dlpack__(stream=-1 if same else _protocol_stream(launch)), False

    @staticmethod
    def current_stream_of(t):
        import torch

        return torch.cuda.current_stream(t.device).cuda_stream

    def empty(self, op, shape, code):
        return self.empty_on(op, shape, code, self.like.device)

    def empty_on(self, op, shape, code, device):
        import torch

        dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
        if isinstance(device, int):
            device = torch.device("cuda", device)
        t = torch.empty(shape, dtype=dtypes[code], device=device)
        return t, TorchFramework(t)

    def synchronize(self, launch):
        import torch

        torch.cuda.ExternalStream(launch).synchronize() if launch else torch.cuda.synchronize()


class CupyFramework(Framework):
    name = "cupy"

    def device(self):
        return ("cuda", int(self.like.device.id))

    def current_stream(self):
        import cupy

        with cupy.cuda.Device(self.like.device.id):
            return int(cupy.cuda.get_current_stream().ptr)

    def exported(self, arr, launch, cuda):
        return arr.__dlpack__(stream=_protocol_stream(launch)), False

    def empty_on(self, op, shape, code, index):
        import cupy

        if code == "bf16":
            raise UnsupportedError(f"{op}: CuPy has no bfloat16 dtype for the result; pass out= or use torch")
        with cupy.cuda.Device(index):
            a = cupy.empty(shape, dtype=_NAMES[code])
        return a, CupyFramework(a)

    def empty(self, op, shape, code):
        return self.empty_on(op, shape, code, self.device()[1])

    def synchronize(self, launch):
        import cupy

        cupy.cuda.ExternalStream(launch).synchronize() if launch else cupy.cuda.Stream.null.synchronize()


def _staging_framework(op):
    """CuPy or torch, to allocate CUDA results for frameworks whose arrays cannot be written (JAX)."""
    for name, cls in (("cupy", CupyFramework), ("torch", TorchFramework)):
        if name in sys.modules:
            return cls(None)
    for name, cls in (("cupy", CupyFramework), ("torch", TorchFramework)):
        try:
            __import__(name)
        except ImportError:
            continue
        return cls(None)
    raise UnsupportedError(
        f"{op}: the result of a CUDA array of this framework is allocated through CuPy or torch, and neither is "
        f"installed; pass out= with a writable CUDA array")


def framework_of(arr):
    """The Framework of one array argument."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(arr, np.ndarray):
        return NumpyFramework(arr)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(arr, torch.Tensor):
        return TorchFramework(arr)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(arr, cupy.ndarray):
        return CupyFramework(arr)
    return Framework(arr)


def launch_stream(op, fw, stream):
    """The cudaStream_t a call on `fw`'s device runs on (0 for CPU calls, which ignore it)."""
    handle = None if stream is None else stream_handle(op, stream)  # checked on the CPU too
    if fw.device()[0] != "cuda":
        return 0
    if handle is not None:
        return handle
    current = fw.current_stream()
    return 0 if current is None else int(current)
