#!/usr/bin/env python3
"""torch's SDPA backends beside our prefill kernel on issue 7's rows, in one run on the device machine.

Times torch.nn.functional.scaled_dot_product_attention under each backend (FLASH_ATTENTION, CUDNN_ATTENTION,
EFFICIENT_ATTENTION) on the rows tests/cuda/attention/tune_prefill.cpp times (bf16, [B, H, S, D] as torch wants it),
with CUDA events, 3 warm-ups and the median of 10, and joins them with tune_prefill's JSON into one markdown table of
TFLOP/s (4·B·H·S²·D, halved for causal) and our ratio to each backend. "ours" is the best column of tune_prefill
for the row, or with --pick the named column per head dimension (the dispatcher's default, say).
--save-sdpa keeps torch's numbers as JSON; --sdpa-json rebuilds the table from them without torch or a GPU.
--backends picks backends (default flash,cudnn,efficient); --repeat N times each backend N times per row, in turn
(flash, cudnn, flash, cudnn, ...), shows the median and lists every timing after the table (the JSON keeps them
under "runs").
--ours takes several JSON files of the same rows (tune_prefill run twice, say: SMK_TUNE_TMA=0 then =only): their
columns are joined per row. A file given as NAME=FILE (another binary timed in the same run: the kernels before a
change, say) joins with its columns named "NAME <column>" and never counts as "ours"; every joined column is listed
after the table, row by row.
    usage: bench_sdpa.py --ours tune_prefill.json [more.json ...] [NAME=other.json ...] [--out FILE.md]
                         [--save-sdpa FILE.json | --sdpa-json FILE.json] [--pick "64=4w x2 n64 s2;128=4w x2 n64 s2"]
"""
import argparse
import json
import statistics
import sys


def time_ms(fn):
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(13):
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True, nargs="+")
    ap.add_argument("--out")
    ap.add_argument("--save-sdpa")
    ap.add_argument("--sdpa-json")
    ap.add_argument("--pick")
    ap.add_argument("--backends", default="flash,cudnn,efficient")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    names = [n for n in ["flash", "cudnn", "efficient"] if n in args.backends.split(",")]
    saved = json.load(open(args.sdpa_json)) if args.sdpa_json else None
    if saved is None:
        try:
            import torch
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except ImportError:
            print("bench_sdpa: torch is not installed")
            return 2
        if not torch.cuda.is_available():
            print("bench_sdpa: torch sees no GPU")
            return 2
    pick = dict(kv.split("=", 1) for kv in args.pick.split(";")) if args.pick else {}
    key = lambda r: (r["b"], r["h"], r["s"], r["d"], r["causal"])
    ours = json.load(open(args.ours[0]))
    others = {key(row): {} for row in ours}  # NAME=FILE columns: shown, never "ours"
    for extra in args.ours[1:]:  # more columns for the same rows
        prefix, _, path = extra.rpartition("=")
        more = {key(r): r["tflops"] for r in json.load(open(path))}
        for row in ours:
            cols = more.get(key(row), {})
            if prefix:
                others[key(row)].update({f"{prefix} {k}": v for k, v in cols.items()})
            else:
                row["tflops"].update(cols)
    backends = [(n, None) for n in names] if saved is not None else \
        [(n, b) for n, b in [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                             ("efficient", SDPBackend.EFFICIENT_ATTENTION)] if n in names]
    record = []
    runs_lines = []
    lines = ["| B, H, S, D, mask | ours TFLOP/s (config) | " + " | ".join(f"{n} TFLOP/s" for n, _ in backends) +
             " | " + " | ".join(f"ours / {n}" for n, _ in backends) + " |",
             "|---|---|" + "---|" * (2 * len(backends))]
    for row in ours:
        b, h, s, d, causal = row["b"], row["h"], row["s"], row["d"], row["causal"]
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        if str(d) in pick:
            best = (pick[str(d)], row["tflops"][pick[str(d)]])
        else:
            best = max(row["tflops"].items(), key=lambda x: x[1])
        if saved is not None:
            match = [r for r in saved if (r["b"], r["h"], r["s"], r["d"], r["causal"]) == (b, h, s, d, causal)]
            theirs = [match[0]["tflops"][n] if match else float("nan") for n in names]
        else:
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            runs = {name: [] for name, _ in backends}
            for _ in range(max(1, args.repeat)):
                for name, backend in backends:
                    try:
                        with sdpa_kernel(backend):
                            ms = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                                                  is_causal=causal))
                        runs[name].append(flops / ms / 1e9)
                    except RuntimeError as e:  # a backend that does not take this shape
                        print(f"{name} on {b},{h},{s},{d}: {str(e).splitlines()[0]}", file=sys.stderr)
                        runs[name].append(float("nan"))
            theirs = [statistics.median(runs[name]) for name, _ in backends]
            if args.repeat > 1:
                runs_lines += [f"| {b}, {h}, {s}, {d}, {'causal' if causal else 'full'} | {name} | " +
                               " / ".join(f"{t:.1f}" for t in runs[name]) + " |" for name, _ in backends]
            del q, k, v
        record.append({"b": b, "h": h, "s": s, "d": d, "causal": causal, "tflops": dict(zip(names, theirs))})
        if saved is None and args.repeat > 1:
            record[-1]["runs"] = runs
        ratios = [best[1] / t if t == t else float("nan") for t in theirs]
        lines.append(f"| {b}, {h}, {s}, {d}, {'causal' if causal else 'full'} | {best[1]:.0f} ({best[0]}) | " +
                     " | ".join(f"{t:.0f}" for t in theirs) + " | " + " | ".join(f"{r:.2f}" for r in ratios) + " |")
        print(lines[-1], flush=True)
    if args.save_sdpa:
        json.dump(record, open(args.save_sdpa, "w"), indent=1)
    if runs_lines:  # every timing of each backend (--repeat)
        lines += ["", "| B, H, S, D, mask | backend | TFLOP/s, each timing |", "|---|---|---|"] + runs_lines
    if any(others.values()):  # every column of every binary, row by row
        lines += ["", "| B, H, S, D, mask | column | TFLOP/s |", "|---|---|---|"]
        for row in ours:
            b, h, s, d, causal = key(row)
            for name, t in list(row["tflops"].items()) + list(others[key(row)].items()):
                lines.append(f"| {b}, {h}, {s}, {d}, {'causal' if causal else 'full'} | {name} | {t:.1f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        open(args.out, "w").write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
