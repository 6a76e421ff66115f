#!/usr/bin/env python3
"""torch SDPA's FLASH and cuDNN backends beside our decode kernel on issue 8's rows, in one run on the device machine.

Times torch.nn.functional.scaled_dot_product_attention (bf16, one query token, q [B, Hq, 1, D] against k, v
[B, Hkv, S, D] with enable_gqa=True) under each backend, the way tests/cuda/attention/bench_decode.cpp times ours:
CUDA events around each call, an untimed 256 MB write before it to evict L2, the median of 200 after 5 warm-ups. If
a backend refuses enable_gqa it gets K and V expanded to Hq heads (marked "x" in the table: it then reads Hq/Hkv times
the bytes, but TB/s still counts the unique K and V, as ours does). Joins bench_decode's JSON into one markdown table:
µs and TB/s of K and V read for the dispatcher's choice (timed twice: the spread); the fused merge's counters zeroed
by a memset (round 1's way); the other ring depth; the merge kernel instead of the fused merge (and that merge's
share); the split rule's shortest chunk at 2048 and 4096 keys; each backend; ours over each backend.
    usage: bench_decode.py --ours bench_decode.json [--out FILE.md]
"""
import argparse
import json
import statistics


def time_us(fn, torch, flush):
    for _ in range(5):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
    for s, e in zip(starts, ends):
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(1e3 * s.elapsed_time(e) for s, e in zip(starts, ends))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours = json.load(open(args.ours))
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    lines = ["| B, S, Hq/Hkv, D | ours µs | ours TB/s | ours again µs | memset µs | "
             "other stages µs | with merge kernel µs | its merge % | chunks ≥ 2048 µs | chunks ≥ 4096 µs | " +
             " | ".join(f"{n} µs | {n} TB/s" for n, _ in backends) + " | " +
             " | ".join(f"ours / {n}" for n, _ in backends) + " |",
             "|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * len(backends) + "---|" * len(backends)]
    for row in ours:
        B, S, hq, hkv, d = row["B"], row["S"], row["Hq"], row["Hkv"], row["D"]
        gen = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        cells, ratios = [], []
        for name, backend in backends:
            us, mark = None, ""
            try:
                with sdpa_kernel(backend):
                    us = time_us(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), torch, flush)
            except RuntimeError:
                try:  # the backend refused GQA: give it expanded K and V
                    ke, ve = (t.repeat_interleave(hq // hkv, dim=1) for t in (k, v))
                    with sdpa_kernel(backend):
                        us = time_us(lambda: F.scaled_dot_product_attention(q, ke, ve), torch, flush)
                    mark = " x"
                    del ke, ve
                except RuntimeError as e:
                    print(f"{name} failed on {B, S, hq, hkv, d}: {str(e).splitlines()[0]}")
            if us is None:
                cells.append("n/a | n/a")
                ratios.append("n/a")
            else:
                cells.append(f"{us:.1f}{mark} | {row['kv_bytes'] / us / 1e6:.2f}")
                ratios.append(f"{us / row['us']:.2f}")
        tb = lambda us: row["kv_bytes"] / us / 1e6
        lines.append(f"| {B}, {S}, {hq}/{hkv}, {d} | {row['us']:.1f} | {tb(row['us']):.2f} | {row['us_again']:.1f} | "
                     f"{row['us_memset']:.1f} | {row['us_other_stages']:.1f} ({row['other_stages']}) | "
                     f"{row['us_merge_kernel']:.1f} | {100 * row['merge_us_merge_kernel'] / row['us_merge_kernel']:.1f} | "
                     f"{row['us_chunk2048']:.1f} | {row['us_chunk4096']:.1f} | " +
                     " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        print(lines[-1], flush=True)
        del q, k, v
        torch.cuda.empty_cache()
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
