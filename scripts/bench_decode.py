#!/usr/bin/env python3
"""torch SDPA's FLASH and cuDNN backends beside our decode kernel on issue 8's rows, in one run on the device machine.

Times torch.nn.functional.scaled_dot_product_attention (bf16, one query token, q [B, Hq, 1, D] against k, v
[B, Hkv, S, D] with enable_gqa=True) under each backend, the way tests/cuda/attention/bench_decode.cpp times ours:
CUDA events around each call, an untimed 256 MB write before it to evict L2, the median of 200 after 5 warm-ups; and
with --clean, cuDNN once more after a flush that leaves L2 clean (the write, then an untimed read of the 256 MB), as bench_decode's
"clean L2" probe times ours. If a backend refuses enable_gqa it gets K and V expanded to Hq heads (marked "x": it then
reads Hq/Hkv times the bytes, but TB/s still counts the unique K and V, as ours does). Joins bench_decode's JSON
(round 4's fields) into one markdown table: µs and TB/s of K and V read for the dispatcher's choice (timed twice: the
spread; and once with an event recorded inside the call, round 3's method), under the same split rule the cluster
merge forced (packed, and spread one block an SM), the fused (atomic) merge with kept and with memset counters, the
merge kernel instead (and its share), the clean-L2 probes (ours, the fused merge), the empty-sequence call, the
timing method's floor (a 4-byte memset), the call's graph replay and its node counts (kernels / memsets / other), host
µs per call (internal entry point / public API) and how many clusters of 16 the device runs at once; with --old, the
dispatcher of an older build's bench_decode JSON timed in the same run (old-beside-new); each backend; ours over each
backend. Session 6 (dec5) adds, where the JSON has them: the plain launch beside the dispatcher's programmatic
dependent launch, the "after a kernel" probe (a 1×1024 logsumexp then the call inside the timed window, both
launches, and that kernel alone) and the empty call as a plain launch; a probe the JSON marks -1 (bench_decode
--quick leaves it out) prints n/a.
    usage: bench_decode.py --ours bench_decode.json [--old old.json] [--clean] [--out FILE.md]
"""
import argparse
import json
import statistics


def time_us(fn, torch, flush, clean=False):
    for _ in range(5):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(200)]
    for s, e in zip(starts, ends):
        flush.zero_()
        if clean:
            flush.sum(dtype=torch.int32)  # reads the 256 MB: the dirty lines are written back before the timed call
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(1e3 * s.elapsed_time(e) for s, e in zip(starts, ends))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True)
    ap.add_argument("--old")
    ap.add_argument("--out")
    ap.add_argument("--clean", action="store_true", help="also time cuDNN after a flush that leaves L2 clean")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours = json.load(open(args.ours))
    old = {(r["B"], r["S"], r["Hq"]): r for r in json.load(open(args.old))} if args.old else {}
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    backends = [("flash", SDPBackend.FLASH_ATTENTION, False), ("cudnn", SDPBackend.CUDNN_ATTENTION, False)]
    if args.clean:
        backends.append(("cudnn clean L2", SDPBackend.CUDNN_ATTENTION, True))
    head = ["B, S, Hq/Hkv, D", "ours µs", "ours TB/s", "ours again µs"]
    if old:
        head += ["old µs", "old / ours"]
    head += ["plain launch µs", "after a kernel µs (pdl / plain / kernel alone)", "empty plain µs",
             "ours, event between µs", "cluster packed µs", "cluster spread µs", "fused merge µs", "fused, memset µs",
             "with merge kernel µs", "its merge %", "clean L2 µs", "fused clean L2 µs", "empty µs", "floor µs",
             "graph replay µs", "graph nodes k/m/o", "host µs (internal / public)", "16-clusters at once (spread / packed)"]
    for n, _, _ in backends:
        head += [f"{n} µs", f"{n} TB/s"]
    head += ["ours / flash", "ours / cudnn"] + (["ours clean / cudnn clean"] if args.clean else [])
    if old:
        head += ["old / cudnn"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in ours:
        B, S, hq, hkv, d = row["B"], row["S"], row["Hq"], row["Hkv"], row["D"]
        gen = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        k = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        v = torch.randn(B, hkv, S, d, device="cuda", dtype=torch.bfloat16, generator=gen)
        tb = lambda us: row["kv_bytes"] / us / 1e6
        got = {}
        for name, backend, clean in backends:
            us, mark = None, ""
            try:
                with sdpa_kernel(backend):
                    us = time_us(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), torch, flush, clean)
            except RuntimeError:
                try:  # the backend refused GQA: give it expanded K and V
                    ke, ve = (t.repeat_interleave(hq // hkv, dim=1) for t in (k, v))
                    with sdpa_kernel(backend):
                        us = time_us(lambda: F.scaled_dot_product_attention(q, ke, ve), torch, flush, clean)
                    mark = " x"
                    del ke, ve
                except RuntimeError as e:
                    print(f"{name} failed on {B, S, hq, hkv, d}: {str(e).splitlines()[0]}")
            got[name] = (us, mark)
        cells = [f"{B}, {S}, {hq}/{hkv}, {d}", f"{row['us']:.1f}", f"{tb(row['us']):.2f}", f"{row['us_again']:.1f}"]
        o = old.get((B, S, hq))
        if old:
            cells += [f"{o['us']:.1f}" if o else "n/a", f"{o['us'] / row['us']:.3f}" if o else "n/a"]
        f = lambda key: f"{row[key]:.1f}" if row.get(key, -1) >= 0 else "n/a"
        cells += [f("us_nopdl"), f"{f('us_after')} / {f('us_after_nopdl')} / {f('us_tiny')}", f("us_empty_nopdl"),
                  f("us_event"), f("us_cluster_packed"), f("us_cluster_spread"), f("us_fused"), f("us_memset"),
                  f("us_merge_kernel"), f"{100 * row['merge_us_merge_kernel'] / row['us_merge_kernel']:.1f}",
                  f("us_clean_l2"), f("us_fused_clean_l2"), f("us_empty"), f("us_floor"), f("us_graph"),
                  f"{row.get('graph_kernels')}/{row.get('graph_memsets')}/{row.get('graph_other')}",
                  f"{f('host_us')} / {f('host_us_public')}",
                  f"{row.get('active16_spread')} / {row.get('active16_packed')}"]
        for name, _, _ in backends:
            us, mark = got[name]
            cells += ["n/a", "n/a"] if us is None else [f"{us:.1f}{mark}", f"{tb(us):.2f}"]
        ratio = lambda theirs, mine: "n/a" if theirs is None else f"{theirs / mine:.3f}"
        cells += [ratio(got["flash"][0], row["us"]), ratio(got["cudnn"][0], row["us"])]
        if args.clean:
            cells += [ratio(got["cudnn clean L2"][0], row["us_clean_l2"])]
        if old:
            cells += [ratio(got["cudnn"][0], o["us"]) if o else "n/a"]
        lines.append("| " + " | ".join(cells) + " |")
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
