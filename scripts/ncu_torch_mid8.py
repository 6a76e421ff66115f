"""torch.compile's kernels for two of issue 3's rows, for Nsight Compute (scripts/device.sh `mid8`).

Compiles (dynamic=False, as scripts/compare_torch.py does) f32 logsumexp over 4096x16384 and bf16 log-softmax backward
over 8192x32000 (aten._log_softmax_backward_data, the op compare_torch.py times), runs each a few times so that
compilation and any autotuning are over, then calls each once between cudaProfilerStart and cudaProfilerStop: run it
under `ncu --profile-from-start off` and only those launches are profiled. Prints the generated kernels' Triton source
(the launch grid, block, reduction loop and cache hints are read there and in the profile).
"""
import os
import sys

import torch


def main() -> int:
    torch.manual_seed(0)
    dev = "cuda"
    x = torch.randn(4096, 16384, device=dev, dtype=torch.float32) * 4 + 20
    lse = torch.compile(lambda t: torch.logsumexp(t, dim=-1), dynamic=False)
    y = torch.log_softmax(torch.randn(8192, 32000, device=dev, dtype=torch.float32), -1).to(torch.bfloat16)
    dy = torch.randn(8192, 32000, device=dev, dtype=torch.bfloat16)
    bwd = torch.compile(lambda a, b: torch.ops.aten._log_softmax_backward_data(b, a, -1, a.dtype), dynamic=False)
    for _ in range(5):
        lse(x)
        bwd(y, dy)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    lse(x)
    bwd(y, dy)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    # The generated source, from Inductor's cache (TORCHINDUCTOR_CACHE_DIR set by the caller).
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py") and not f.startswith("__"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if "@triton.jit" in text or "triton_heuristics" in text:
                    print("=====", path)
                    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
