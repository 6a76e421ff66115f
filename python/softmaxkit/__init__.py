"""softmaxkit: numerically stable softmax, log-softmax and log-sum-exp for CPUs and NVIDIA GPUs.

Every function takes any array that exports DLPack (NumPy, torch, CuPy, JAX), on the CPU or a CUDA device, reads
it in place without copying, and returns its result in the caller's framework::

    import numpy as np, softmaxkit as smk
    p = smk.softmax(np.array([[1000.0, 1001.0, 1002.0]], dtype=np.float32))  # [[0.090, 0.245, 0.665]]

For torch, ``import softmaxkit.torch`` registers the ops with torch.library (custom ops with fake
implementations and autograd formulas): they then work under autograd and ``torch.compile(fullgraph=True)``. A
plain ``softmaxkit.softmax(tensor)`` call goes through those registered ops too.

The numerical contract (what -inf, +inf and NaN rows produce, accuracy bounds) is the C++ library's; see
include/softmaxkit/core/online_state.hpp and docs/semantics.md in the source tree.
"""

from ._errors import CudaError, Error, InternalError, InvalidArgumentError, UnsupportedError
from . import _C

_C._set_error_types(InvalidArgumentError, UnsupportedError, CudaError, InternalError)

from ._ops import (  # noqa: E402
    log_softmax,
    log_softmax_backward,
    logsumexp,
    softmax,
    softmax_backward,
    softmax_state,
)
from ._cross_entropy import (  # noqa: E402
    cross_entropy,
    cross_entropy_backward,
    cross_entropy_forward_backward,
    linear_cross_entropy,
)

from ._attention import attention, attention_decode, merge_attention_states  # noqa: E402

__version__ = _C.__version__


def cuda_built():
    """True when this build of softmaxkit has its CUDA backend (pip builds it when nvcc is found)."""
    return _C.cuda_built()


def cuda_device_count():
    """Number of CUDA devices softmaxkit can use: 0 in a CPU-only build, without a driver or without a GPU."""
    return _C.cuda_device_count()


def cuda_unavailable_reason():
    """Why cuda_device_count() is 0, in one line; empty when a device is available."""
    return _C.cuda_unavailable_reason()


__all__ = [
    "Error",
    "InvalidArgumentError",
    "UnsupportedError",
    "CudaError",
    "InternalError",
    "softmax",
    "log_softmax",
    "logsumexp",
    "softmax_state",
    "softmax_backward",
    "log_softmax_backward",
    "cross_entropy",
    "cross_entropy_backward",
    "cross_entropy_forward_backward",
    "linear_cross_entropy",
    "attention",
    "attention_decode",
    "merge_attention_states",
    "cuda_built",
    "cuda_device_count",
    "cuda_unavailable_reason",
]
