#!/usr/bin/env python3
"""Decode attention (issue 8), session 7 (dec6): ours beside torch SDPA FLASH and cuDNN, one compact table.

Reads tests/cuda/attention/bench_decode's JSON (--ours, this build; --old, an older build's, timed in the same device
call), times torch's FLASH and cuDNN backends on the same shapes the same way (scripts/bench_decode.py's time_us: a
256 MB write that evicts L2 before each call, CUDA events, the median of 200), and writes one row per shape: ours (the
dispatcher), its TB/s of K and V read, the same rule with one piece a block, the merge's share (the call less the
split kernel alone, the merge skipped under the same rule), the rule's shortest piece at 128 / 512 / 1024 keys, the
rule of sessions 2-6 in this build (one piece a block; with the cursor), the old build, FLASH, cuDNN, and the ratios
(above 1: ours faster). --torch-json FILE also keeps torch's times.
    usage: compare_torch_decode.py --ours new.json [--old old.json] [--out FILE.md] [--torch-json FILE]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_decode import time_us  # noqa: E402  (the same timing as the earlier rounds' tables)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True)
    ap.add_argument("--old")
    ap.add_argument("--out")
    ap.add_argument("--torch-json")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours = json.load(open(args.ours))
    old = {(r["B"], r["S"], r["Hq"]): r for r in json.load(open(args.old))} if args.old else {}
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    head = ["B, S, Hq/Hkv, D", "ours µs", "ours TB/s", "again µs", "one piece a block µs", "merge skipped µs",
            "merge %", "min 128 µs", "min 512 µs", "min 1024 µs", "rule 6 (this build) µs", "rule 6, cursor µs",
            "old build µs", "FLASH µs", "cuDNN µs", "cuDNN TB/s", "ours / FLASH", "ours / cuDNN",
            "old / cuDNN", "best of ours / cuDNN"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    theirs = []
    for row in ours:
        B, S, hq, hkv, d = row["B"], row["S"], row["Hq"], row["Hkv"], row["D"]
        gen = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        tb = lambda us: row["kv_bytes"] / us / 1e6
        got = {}
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    got[name] = time_us(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), torch, flush)
            except RuntimeError as e:
                print(f"{name} failed on {B, S, hq, hkv, d}: {str(e).splitlines()[0]}")
                got[name] = None
        theirs.append({"B": B, "S": S, "Hq": hq, "Hkv": hkv, "D": d, **got})
        o = old.get((B, S, hq))
        f = lambda x: "n/a" if x is None or x < 0 else f"{x:.1f}"
        ratio = lambda a, b: "n/a" if a is None or b is None or b <= 0 else f"{a / b:.3f}"
        variants = [row.get(k, -1) for k in ("us", "us_static", "us_min128", "us_min512", "us_min1024")]
        best = min(x for x in variants if x > 0)
        cells = [f"{B}, {S}, {hq}/{hkv}, {d}", f(row["us"]), f"{tb(row['us']):.2f}", f(row["us_again"]),
                 f(row.get("us_static")), f(row.get("us_skip")),
                 f"{100 * (row['us'] - row['us_skip']) / row['us']:.1f}" if row.get("us_skip", -1) > 0 else "n/a",
                 f(row.get("us_min128")), f(row.get("us_min512")), f(row.get("us_min1024")), f(row.get("us_rule6")),
                 f(row.get("us_rule6_steal")), f(o["us"]) if o else "n/a", f(got["flash"]), f(got["cudnn"]),
                 f"{tb(got['cudnn']):.2f}" if got["cudnn"] else "n/a", ratio(got["flash"], row["us"]),
                 ratio(got["cudnn"], row["us"]), ratio(got["cudnn"], o["us"] if o else None),
                 ratio(got["cudnn"], best)]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
        del q, k, v
        torch.cuda.empty_cache()
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
