#!/usr/bin/env python3
"""Bandwidth achieved against row length, per op and dtype, from `softmaxkit bench --json` output.

One panel per dtype; one line per op (softmaxkit's automatic path) over the row-length sweep (every shape of 2^26
elements), cuDNN's softmax dashed beside it, and the device's copy and read ceilings measured in the same run as
horizontal lines. GB/s counts the minimum traffic (softmax/log_softmax 2n, logsumexp n, backward 3n elements).

  python3 scripts/plot_bench.py out/bench.json --out docs/bench/bandwidth_vs_row_length.png
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SWEEP_ELEMENTS = 1 << 26  # the bench's sweep grid holds rows × cols at 2^26 (apps/softmaxkit/bench_spec.cpp)
OPS = ["softmax", "log_softmax", "logsumexp", "softmax_backward", "log_softmax_backward"]
DTYPES = ["f32", "bf16", "f16"]
COLORS = {"softmax": "tab:blue", "log_softmax": "tab:orange", "logsumexp": "tab:green",
          "softmax_backward": "tab:red", "log_softmax_backward": "tab:purple"}


def series(results: list[dict], impl: str, dtype: str, op: str, path: str | None) -> list[tuple[int, float]]:
    pts = {}
    for r in results:
        if (r["impl"] == impl and r["dtype"] == dtype and r["op"] == op and r["status"] == "ok"
                and (path is None or r["path"] == path) and r["rows"] * r["cols"] == SWEEP_ELEMENTS):
            pts[r["cols"]] = r["gbps"]
    return sorted(pts.items())


def col_label(c: int) -> str:
    if c >= 1 << 20:
        return f"{c >> 20}M"
    if c >= 1 << 10:
        return f"{c >> 10}K"
    return str(c)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bench_json")
    p.add_argument("--out", default="docs/bench/bandwidth_vs_row_length.png")
    p.add_argument("--commit", default=os.environ.get("SMK_COMMIT"),
                   help="commit to name in the title (default: $SMK_COMMIT, else git log -1)")
    args = p.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(args.bench_json, encoding="utf-8") as f:
        bench = json.load(f)
    results = bench["results"]
    run = bench.get("run", {})
    ceil = run.get("ceilings", {})
    copy_gbps, read_gbps = ceil.get("copy_gbps", 0.0), ceil.get("read_gbps", 0.0)
    dtypes = [d for d in DTYPES if any(r["dtype"] == d and r["status"] == "ok" for r in results)]
    if not dtypes:
        print("plot_bench: no timed rows in", args.bench_json, file=sys.stderr)
        return 1
    commit = args.commit
    if commit is None:
        try:
            commit = subprocess.run(["git", "log", "-1", "--format=%h"], capture_output=True, text=True, check=True,
                                    cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
        except Exception:  # noqa: BLE001
            commit = "?"

    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.5 * len(dtypes) + 2.0, 4.8), sharey=True, squeeze=False)
    plotted = 0
    for ax, dtype in zip(axes[0], dtypes):
        for op in OPS:
            pts = series(results, "softmaxkit", dtype, op, "auto")
            if pts:
                ax.plot([c for c, _ in pts], [g / 1000 for _, g in pts], marker="o", ms=3.5, color=COLORS[op],
                        label=op)
                plotted += 1
        for op in ("softmax", "softmax_backward"):
            pts = series(results, "cudnn", dtype, op, None)
            if pts:
                ax.plot([c for c, _ in pts], [g / 1000 for _, g in pts], ls="--", lw=1.2, color=COLORS[op],
                        alpha=0.7, label=f"cuDNN {op}")
        if copy_gbps:
            ax.axhline(copy_gbps / 1000, color="black", lw=1.2, label=f"copy {copy_gbps / 1000:.2f} TB/s")
            ax.axhline(0.9 * copy_gbps / 1000, color="black", lw=0.8, ls=":", label="90 % of copy")
        if read_gbps:
            ax.axhline(read_gbps / 1000, color="grey", lw=1.0, ls="-.", label=f"read {read_gbps / 1000:.2f} TB/s")
        ax.set_xscale("log", base=2)
        ticks = [1 << k for k in range(5, 22, 2)]
        ax.set_xticks(ticks)
        ax.set_xticklabels([col_label(t) for t in ticks])
        ax.set_xlabel("row length (elements); rows × length = 2^26")
        ax.set_title(dtype)
        ax.grid(True, which="major", alpha=0.3)
        top = max([copy_gbps, read_gbps] + [r["gbps"] for r in results if r["status"] == "ok"]) / 1000
        ax.set_ylim(0, 1.08 * top)
    axes[0][0].set_ylabel("TB/s of minimum traffic")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    dev = run.get("device", {}).get("name", "GPU")
    fig.suptitle(f"softmaxkit bandwidth vs row length — {dev}, {run.get('date_utc', '')[:10]}, commit {commit}",
                 fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"plot_bench: {plotted} series written to {args.out}")
    return 0 if plotted else 1


if __name__ == "__main__":
    sys.exit(main())
