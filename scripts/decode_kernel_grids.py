#!/usr/bin/env python3
"""The kernels torch SDPA's cuDNN and FLASH backends launch for issue 8's decode rows, with their grids (session 11,
dec11): what separates our split kernel's grid from cuDNN's. One bf16 query token, D = 128, K and V in torch's layout
[B, Hkv, S, D] as scripts/sdpa_interleaved.py builds them; each backend warmed up, then three calls under
torch.profiler (CUDA activity), whose trace (Kineto) records every kernel's grid, block, registers, shared memory and
duration. Prints one line per (row, backend, kernel name) with the median duration; not a timing method (the calls
run back to back, L2 warm): scripts/sdpa_interleaved.py times.
    usage: decode_kernel_grids.py [--out FILE.md] [--json FILE.json]
"""
import argparse
import json
import os
import statistics
import tempfile

ROWS = [(1, 32768, 32, 8), (1, 131072, 32, 8), (16, 8192, 32, 8), (64, 4096, 32, 8), (128, 1024, 32, 8),
        (1, 32768, 64, 8), (16, 8192, 64, 8)]
D = 128


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    dev = "cuda"
    lines, record = [], []

    def emit(text):
        lines.append(text)
        print(text, flush=True)

    emit(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}, "
         f"{torch.cuda.get_device_properties(0).multi_processor_count} SMs")
    emit("")
    emit("| B, S, Hq/Hkv | backend | kernel | grid | block | regs | smem B | blocks | median µs (3 calls) |")
    emit("|---|---|---|---|---|---:|---:|---:|---:|")
    for (B, S, hq, hkv) in ROWS:
        g = torch.Generator(device=dev).manual_seed(7)
        q = torch.randn(B, hq, 1, D, device=dev, dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, hkv, S, D, device=dev, dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, hkv, S, D, device=dev, dtype=torch.bfloat16, generator=g)
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            try:
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
            except RuntimeError as e:
                emit(f"| {B}, {S}, {hq}/{hkv} | {name} | refused: {str(e).splitlines()[0][:80]} | | | | | | |")
                continue
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            prof.export_chrome_trace(path)
            trace = json.load(open(path))
            os.unlink(path)
            kernels = {}
            for ev in trace.get("traceEvents", []):
                if ev.get("cat") != "kernel":
                    continue
                a = ev.get("args", {})
                key = (ev.get("name", "?"), tuple(a.get("grid", [])), tuple(a.get("block", [])))
                kernels.setdefault(key, {"dur": [], "regs": a.get("registers per thread"),
                                         "smem": a.get("shared memory")})["dur"].append(ev.get("dur", 0))
            for (kname, grid, block), info in kernels.items():
                blocks = 1
                for x in grid:
                    blocks *= x
                short = kname if len(kname) <= 90 else kname[:87] + "..."
                emit(f"| {B}, {S}, {hq}/{hkv} | {name} | `{short}` | {list(grid)} | {list(block)} | {info['regs']} | "
                     f"{info['smem']} | {blocks} | {statistics.median(info['dur']):.1f} |")
                record.append({"row": [B, S, hq, hkv, D], "backend": name, "kernel": kname, "grid": list(grid),
                               "block": list(block), "registers": info["regs"], "smem": info["smem"],
                               "blocks": blocks, "us": info["dur"]})
        del q, k, v
        torch.cuda.empty_cache()
    if args.out:
        open(args.out, "w").write("\n".join(lines) + "\n")
    if args.json:
        json.dump(record, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
