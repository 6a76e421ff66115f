#!/usr/bin/env python3
"""bwd18 (session 18, issue 3): torch.compile's 2-D backward kernels, timed the way tune_softmax --bwd18 times ours,
then called once each for Nsight Compute.

Run it under `ncu --profile-from-start off -k regex:triton ...` (scripts/device.sh's bwd18 step) with
TRITON_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR set, so the kernels' cubins, PTX and Inductor sources can be read back.
For each (op, dtype, shape) it compiles the op as scripts/compare_torch.py does (torch_fns, dynamic=False), runs it so
that compilation and autotuning happen first, checks the output against float64 (the kernels timed compute the op),
writes --ready, waits for --go (so nothing else runs on the GPU), then times each case: three rounds, in each the
median of --reps calls, each call after 256 MiB are cleared (the L2 flushed, the GPU busy while the call is issued)
between two CUDA events, inputs rotated over copies that exceed the L2 (tune_softmax's make_buffers sizes). Then one
call of each case between cudaProfilerStart / Stop, then the PTX's global loads / stores and the Inductor sources.
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
from compare_torch import TORCH_DTYPES, torch_fns  # noqa: E402
from ncu_torch import make_args, reference  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", nargs="+", required=True, help="OP:DTYPE:ROWSxCOLS, e.g. softmax_backward:bf16:16384x4096")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ready", default=None)
    p.add_argument("--go", default=None)
    p.add_argument("--wait-s", type=float, default=120.0)
    p.add_argument("--no-profile", action="store_true")
    args = p.parse_args(argv)

    import torch
    import torch._dynamo as dynamo

    # Every case compiled before any is timed: the compiled functions share their code object, so dynamo keeps one
    # entry a shape (no reset between cases) under limits high enough that none falls back to eager.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, 64)
    torch.manual_seed(0)
    cases = []
    for spec in args.case:
        m = re.fullmatch(r"(\w+):(\w+):(\d+)x(\d+)", spec)
        if not m:
            p.error(f"--case: {spec!r} is not OP:DTYPE:ROWSxCOLS")
        op, d, rows, cols = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        dtype = getattr(torch, TORCH_DTYPES[d])
        fn, _ = torch_fns(torch, op)
        t0 = time.monotonic()
        compiled = torch.compile(fn, dynamic=False)
        base = make_args(torch, op, dtype, rows, cols, 1.0, 0.0)
        bytes_ = rows * cols * base[0].element_size()
        copies = max(2, min(64, (512 << 20) // bytes_))
        sets = [base] + [tuple(t.roll(k + 1, dims=0).contiguous() for t in base) for k in range(copies - 1)]
        for _ in range(3):
            out = compiled(*base)
        torch.cuda.synchronize()
        ref = reference(torch, op, base)
        err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        print(f"{spec}: compiled in {time.monotonic() - t0:.1f} s, {copies} input copies, "
              f"max|dx-ref|/max|ref| {err:.3e}", flush=True)
        cases.append((spec, compiled, sets, 3 * bytes_))
    if args.ready:
        pathlib.Path(args.ready).touch()
    deadline = time.monotonic() + args.wait_s
    while args.go and not os.path.exists(args.go) and time.monotonic() < deadline:
        time.sleep(0.1)
    print("go file seen" if not args.go or os.path.exists(args.go) else "go file not seen: timing anyway", flush=True)

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for spec, compiled, sets, bytes_ in cases:
        rounds = []
        for _ in range(args.rounds):
            ms = []
            for i in range(args.reps + 2):
                a = sets[i % len(sets)]
                flush.zero_()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                compiled(*a)
                e1.record()
                e1.synchronize()
                if i >= 2:
                    ms.append(e0.elapsed_time(e1))
            ms.sort()
            rounds.append(1000.0 * ms[len(ms) // 2])
        med = sorted(rounds)[len(rounds) // 2]
        print(f"torch.compile {spec}: {med:.2f} us ({bytes_ / med / 1e6:.2f} TB/s); rounds "
              + " ".join(f"{r:.2f}" for r in rounds)
              + f" (spread {100.0 * (max(rounds) - min(rounds)) / med:.2f}%)", flush=True)

    if not args.no_profile:
        torch.cuda.cudart().cudaProfilerStart()
        for spec, compiled, sets, _ in cases:
            compiled(*sets[0])
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()

    if os.environ.get("TRITON_CACHE_DIR"):
        for ptx in sorted(pathlib.Path(os.environ["TRITON_CACHE_DIR"]).rglob("*.ptx")):
            text = ptx.read_text()
            name = re.search(r"\.entry\s+(\w+)", text)
            ops = collections.Counter(re.findall(r"\b((?:ld|st|createpolicy)\.[\w.:]*)", text))
            print(f"PTX {ptx.parent.name}/{name.group(1) if name else ptx.name}: "
                  + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
            for line in text.splitlines():
                if ".maxntid" in line or ".reqntid" in line or ".param" in line:
                    print("   ", line.strip())
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        for path in sorted(pathlib.Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]).rglob("*")):
            if not path.is_file():
                continue
            if path.suffix == ".best_config" or (path.suffix == ".py" and not path.name.startswith("__")):
                text = path.read_text(errors="replace")
                if path.suffix == ".best_config" or "@triton.jit" in text:
                    print("=====", path)
                    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
