#!/usr/bin/env python3
"""torch.compile's kernels for softmax-family ops, called once each under Nsight Compute beside ours.

Run it under `ncu --profile-from-start off -k regex:triton ...` (scripts/device.sh's profiling steps). For each
(op, dtype, shape) it compiles the op exactly as scripts/compare_torch.py times it (torch_fns, dynamic=False), runs
it a few times so that compilation and any autotuning happen outside the profiled range, and checks the output
against float64 (so the kernels profiled are ones that compute the op). Then, once the file named by --go exists
(a step's GPU tests have finished, so no other process shares the GPU while ncu measures; --wait-s at most), it calls
each compiled function once between cudaProfilerStart and cudaProfilerStop.

  ncu --profile-from-start off -k regex:triton -c 2 python3 scripts/ncu_torch.py --op softmax \\
      --dtype f32 bf16 --shape 1048576x32

Logits are N(0, 1) · --scale + --shift; a backward op's y is the softmax (or log-softmax) of such logits rounded to
the dtype, and dy is N(0, 1). With --ptx the global loads / stores and launch bounds of the PTX Triton wrote to
TRITON_CACHE_DIR are listed after the run, with --source the generated Triton source under TORCHINDUCTOR_CACHE_DIR.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import OPS, TORCH_DTYPES, torch_fns  # noqa: E402  (one home for the ops as torch runs them)


def reference(torch, op: str, args):
    """The op in float64 on the same inputs."""
    a = [t.double() for t in args]
    if op == "softmax":
        return torch.softmax(a[0], -1)
    if op == "log_softmax":
        return torch.log_softmax(a[0], -1)
    if op == "logsumexp":
        return torch.logsumexp(a[0], -1)
    y, dy = a
    if op == "softmax_backward":
        return y * (dy - (dy * y).sum(-1, keepdim=True))
    return dy - torch.exp(y) * dy.sum(-1, keepdim=True)


def make_args(torch, op: str, dtype, rows: int, cols: int, scale: float, shift: float):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32) * scale + shift
    if op in ("softmax", "log_softmax", "logsumexp"):
        return (x.to(dtype),)
    y = (torch.softmax(x, -1) if op == "softmax_backward" else torch.log_softmax(x, -1)).to(dtype)
    return (y, torch.randn(rows, cols, device="cuda", dtype=torch.float32).to(dtype))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", required=True, choices=OPS)
    p.add_argument("--dtype", nargs="+", default=["f32"], choices=list(TORCH_DTYPES))
    p.add_argument("--shape", nargs="+", required=True, help="rows x cols, e.g. 1048576x32")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--shift", type=float, default=0.0)
    p.add_argument("--go", default=None, help="wait for this file before the profiled calls")
    p.add_argument("--wait-s", type=float, default=60.0)
    p.add_argument("--ptx", action="store_true", help="list the PTX's global loads / stores (TRITON_CACHE_DIR)")
    p.add_argument("--source", action="store_true", help="print Inductor's Triton source (TORCHINDUCTOR_CACHE_DIR)")
    args = p.parse_args(argv)
    shapes = []
    for s in args.shape:
        m = re.fullmatch(r"(\d+)x(\d+)", s)
        if not m:
            p.error(f"--shape: {s!r} is not ROWSxCOLS")
        shapes.append((int(m.group(1)), int(m.group(2))))

    import torch

    torch.manual_seed(0)
    fn, _ = torch_fns(torch, args.op)
    compiled = torch.compile(fn, dynamic=False)
    cases = {}
    for d in args.dtype:
        for rows, cols in shapes:
            cases[f"{d} {rows}x{cols}"] = make_args(torch, args.op, getattr(torch, TORCH_DTYPES[d]), rows, cols,
                                                    args.scale, args.shift)
    for _ in range(3):
        outs = {k: compiled(*a) for k, a in cases.items()}
    torch.cuda.synchronize()
    for k, a in cases.items():
        err = (outs[k].double() - reference(torch, args.op, a)).abs().max().item()
        print(f"{args.op} {k}: max abs error against float64 {err:.3g}", flush=True)

    deadline = time.monotonic() + args.wait_s
    while args.go and not os.path.exists(args.go) and time.monotonic() < deadline:
        time.sleep(0.2)
    print("go file seen" if not args.go or os.path.exists(args.go) else "go file not seen: profiling anyway",
          flush=True)
    torch.cuda.cudart().cudaProfilerStart()
    for a in cases.values():
        compiled(*a)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()

    if args.ptx and os.environ.get("TRITON_CACHE_DIR"):
        for ptx in sorted(pathlib.Path(os.environ["TRITON_CACHE_DIR"]).rglob("*.ptx")):
            text = ptx.read_text()
            name = re.search(r"\.entry\s+(\w+)", text)
            ops = collections.Counter(re.findall(r"\b((?:ld|st)\.global[\w.:]*)", text))
            print(f"PTX {name.group(1) if name else ptx.name}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
            for line in text.splitlines():
                if ".maxntid" in line or ".reqntid" in line:
                    print("   ", line.strip())
    if args.source and os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        for path in sorted(pathlib.Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).rglob("*.py")):
            text = path.read_text(errors="replace")
            if not path.name.startswith("__") and ("@triton.jit" in text or "triton_heuristics" in text):
                print("=====", path)
                print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
