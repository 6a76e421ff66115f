"""The exceptions softmaxkit raises: one class per smk::ErrorCode of the C++ library.

Each carries the library's message unchanged, e.g.
``softmax: argument 'out': shape [2, 4] does not match 'in' shape [2, 3]``. The message names the C++ argument:
``in`` is the array you pass as ``x`` (or ``y``/``dy`` for the backward passes), ``out`` the result or your ``out=``.
Each class also derives from the built-in exception a Python user expects, so ``except ValueError`` works.
"""


class Error(Exception):
    """Base class of every softmaxkit error. ``code`` is the C++ smk::ErrorCode's name."""

    code = "internal"


class InvalidArgumentError(Error, ValueError):
    """The call broke the contract: a shape, dtype, device, stride, alias, dim or option is wrong."""

    code = "invalid_argument"


class UnsupportedError(Error, NotImplementedError):
    """A legal request this build or backend does not provide (e.g. CUDA arrays with a CPU-only build)."""

    code = "unsupported"


class CudaError(Error, RuntimeError):
    """A CUDA runtime call or kernel launch failed; the message names the call."""

    code = "cuda_error"


class InternalError(Error, RuntimeError):
    """A broken invariant inside softmaxkit: always a bug, please report it."""

    code = "internal"
