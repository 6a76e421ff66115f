#!/usr/bin/env python3
"""Decode attention (issue 8): ours beside torch SDPA FLASH and cuDNN, one compact table (session 7, dec6; session 9, dec9).

Reads tests/cuda/attention/bench_decode's JSON (--ours, this build; --old, an older build's, timed in the same device
call; each may be given several times, one file per sample, taken in alternation new, old, new, old ...), times
torch's FLASH and cuDNN backends on the same shapes the same way (scripts/bench_decode.py's time_us: a 256 MB write
that evicts L2 before each call, CUDA events, the median of 200), and writes one row per shape: ours (the dispatcher;
every sample, the ratios from their median), its TB/s of K and V read, the dispatcher timed again, 3 ring stages, the
same call on head-major K and V (torch's layout), the old build's samples, FLASH, cuDNN, and the ratios (above 1: ours
faster). Session 7's columns (pieces, cursors) are gone with that code; its table is in docs/bench/dec6-s7-2026-11-30.md.
--torch-json FILE also keeps torch's times; --torch-in FILE reads them from such a file instead of timing (a table
redrawn after more samples of ours in the same call, without timing torch again).
    usage: compare_torch_decode.py --ours new.json [--ours new2.json ...] [--old old.json ...] [--out FILE.md]
           [--torch-json FILE | --torch-in FILE]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_decode import time_us  # noqa: E402  (the same timing as the earlier rounds' tables)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True, action="append")
    ap.add_argument("--old", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--torch-json")
    ap.add_argument("--torch-in")
    args = ap.parse_args()
    timed = {}
    if args.torch_in:
        timed = {(t["B"], t["S"], t["Hq"]): t for t in json.load(open(args.torch_in))}
    else:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

    samples = [json.load(open(f)) for f in args.ours]
    ours = samples[0]
    key = lambda r: (r["B"], r["S"], r["Hq"])
    new_us = {}
    for sample in samples:
        for r in sample:
            new_us.setdefault(key(r), []).append(r["us"])
    old_us = {}
    for f in args.old:
        for r in json.load(open(f)):
            old_us.setdefault(key(r), []).append(r["us"])
    flush = None if args.torch_in else torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    head = ["B, S, Hq/Hkv, D", "ours µs (samples)", "ours TB/s", "again µs", "3 stages µs", "head-major K, V µs",
            "old build µs (samples)", "FLASH µs", "cuDNN µs", "cuDNN TB/s", "ours / FLASH", "ours / cuDNN",
            "old / cuDNN", "new / old"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    theirs = []
    for row in ours:
        B, S, hq, hkv, d = row["B"], row["S"], row["Hq"], row["Hkv"], row["D"]
        tb = lambda us: row["kv_bytes"] / us / 1e6
        got = {}
        if args.torch_in:
            t = timed.get((B, S, hq), {})
            got = {"flash": t.get("flash"), "cudnn": t.get("cudnn")}
        else:
            gen = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
            k = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
            v = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
            for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        got[name] = time_us(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), torch,
                                            flush)
                except RuntimeError as e:
                    print(f"{name} failed on {B, S, hq, hkv, d}: {str(e).splitlines()[0]}")
                    got[name] = None
            del q, k, v
            torch.cuda.empty_cache()
        theirs.append({"B": B, "S": S, "Hq": hq, "Hkv": hkv, "D": d, **got})
        med = lambda xs: statistics.median(xs) if xs else None
        mine, theirs_old = new_us.get((B, S, hq), []), old_us.get((B, S, hq), [])
        m_new, m_old = med(mine), med(theirs_old)
        f = lambda x: "n/a" if x is None or x < 0 else f"{x:.1f}"
        fs = lambda xs: " / ".join(f"{x:.1f}" for x in xs) if xs else "n/a"
        ratio = lambda a, b: "n/a" if a is None or b is None or b <= 0 else f"{a / b:.3f}"
        cells = [f"{B}, {S}, {hq}/{hkv}, {d}", fs(mine), f"{tb(m_new):.2f}", f(row["us_again"]),
                 f(row.get("us_stages3")), f(row.get("us_headmajor")), fs(theirs_old), f(got["flash"]),
                 f(got["cudnn"]), f"{tb(got['cudnn']):.2f}" if got["cudnn"] else "n/a", ratio(got["flash"], m_new),
                 ratio(got["cudnn"], m_new), ratio(got["cudnn"], m_old), ratio(m_old, m_new)]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    if args.torch_json:
        json.dump(theirs, open(args.torch_json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
