#!/usr/bin/env python3
"""Plots attention prefill throughput against sequence length: ours beside torch's SDPA backends.

Reads the markdown table scripts/bench_sdpa.py writes (prefill_vs_sdpa.md, or a docs/bench file holding it: the
first table in the file is used) and draws TFLOP/s against S for the sweep rows (16k tokens per batch, H = 2048/D),
one panel per head dimension, full and causal.
    usage: plot_prefill.py TABLE.md --out FILE.png [--title TEXT]
"""
import argparse
import re
import sys


def read_table(path):
    rows, header = [], None
    for line in open(path):
        if not line.startswith("|"):
            if rows:
                break  # the first table only
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-"):
            continue
        rows.append(dict(zip(header, cells)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="attention prefill on the H200, bf16")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_table(args.table)
    if not rows:
        print(f"plot_prefill: no table in {args.table}")
        return 1
    series = {}  # (d, mask, who) -> [(s, tflops)]
    for r in rows:
        b, h, s, d, mask = (x.strip() for x in r["B, H, S, D, mask"].split(","))
        b, h, s, d = int(b), int(h), int(s), int(d)
        if b * s != 16384 or h * d != 2048:
            continue  # not a sweep row
        ours = float(re.match(r"[\d.]+", r["ours TFLOP/s (config)"]).group())
        for who, key in (("softmaxkit", None), ("SDPA flash", "flash TFLOP/s"), ("SDPA cuDNN", "cudnn TFLOP/s"),
                         ("SDPA efficient", "efficient TFLOP/s")):
            v = ours if key is None else float(r[key])
            series.setdefault((d, mask, who), []).append((s, v))
    dims = sorted({k[0] for k in series})
    fig, axes = plt.subplots(1, len(dims), figsize=(6 * len(dims), 4.2), squeeze=False)
    styles = {"softmaxkit": "C0", "SDPA flash": "C1", "SDPA cuDNN": "C2", "SDPA efficient": "C3"}
    for ax, d in zip(axes[0], dims):
        for (dd, mask, who), pts in sorted(series.items()):
            if dd != d:
                continue
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=styles[who],
                    linestyle="-" if mask == "full" else "--", marker="o", markersize=3, label=f"{who}, {mask}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length S (batch = 16384 / S, heads = 2048 / D)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"D = {d}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot_prefill: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
