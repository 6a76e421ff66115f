#!/usr/bin/env python3
"""softmaxkit's cross-entropy beside PyTorch's F.cross_entropy, on the same GPU in one run (issue 5).

Our numbers come from `softmaxkit bench --op ce --json` (rows cross_entropy: forward, mean reduction, per-row LSE;
cross_entropy_fwd_bwd: that forward, then the backward in place over the logits; cross_entropy_fused: the one call
cross_entropy_forward_backward in place, which reads the logits once where a row fits on chip). PyTorch is timed here on the same
shapes and dtypes with the same method as scripts/compare_torch.py (triton.testing.do_bench, L2 cleared before
each call, median): F.cross_entropy(x, t) forward, and forward + torch.autograd.grad (the gradient of x, as a
training step needs it); our backward alone (in place, with the forward's LSE) is listed without a torch time. GB/s
counts the minimum traffic: forward reads the logits (n), forward+backward and the backward alone read them once
and write the gradient once (2n); % is of the copy ceiling the bench measured in the same run (forward: of
the read ceiling). Writes compare_ce.md and prints it.

  python3 scripts/compare_torch_ce.py --bench-json out/bench_ce.json --out out
  python3 scripts/compare_torch_ce.py --tune-json out/tune_ce.json --out out   # tune_cross_entropy's rows instead

With --tune-json our times are tune_cross_entropy's (two_calls → cross_entropy_fwd_bwd, fused →
cross_entropy_fused, backward → cross_entropy_backward, fused/... listed as such beside torch's forward + backward),
and the ceilings are ANCHORS.md's H200 figures (copy 4270 GB/s, read 4300 GB/s), not measured in the run.
--old-tune-json adds an older build's tune_cross_entropy rows of the same run as old:<variant> (A/B in one run).

Ratios are (torch's time) / (our time): above 1 we are faster. The issue's targets: forward+backward ≥ 3× torch
and ≥ 85 % of the copy bound; forward ≥ 90 % of the read bound.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import TORCH_DTYPES, TorchTimer, git_commit, load_bench  # noqa: E402

OPS = ["cross_entropy", "cross_entropy_fwd_bwd", "cross_entropy_fused", "cross_entropy_backward"]
ELEMS = {"cross_entropy": 1, "cross_entropy_fwd_bwd": 2, "cross_entropy_fused": 2, "cross_entropy_backward": 2}
# Ops torch is timed on; the backward alone has no public torch counterpart (it is listed with ours only). Our
# fused call (cross_entropy_forward_backward) and our two calls are both set beside torch's forward + backward.
TORCH_OPS = ("cross_entropy", "cross_entropy_fwd_bwd", "cross_entropy_fused")
SIZE = {"f32": 4, "bf16": 2, "f16": 2}


def our_rows(bench: dict) -> list[dict]:
    rows = []
    for r in bench["results"]:
        if (r["impl"] == "softmaxkit" and (r["op"] in OPS or r["op"].startswith(("fused/", "old:"))) and r["status"] == "ok"
                and r["path"] == "auto"):
            rows.append({"op": r["op"], "dtype": r["dtype"], "rows": r["rows"], "cols": r["cols"],
                         "ours": r["median_us"]})
    return rows


TUNE_OPS = {"two_calls": "cross_entropy_fwd_bwd", "fused": "cross_entropy_fused", "backward": "cross_entropy_backward",
            "forward": "cross_entropy"}


def tune_bench(path: str, old_path: str | None = None) -> dict:
    """tune_cross_entropy's JSON as a bench-like dict (rows and the ANCHORS.md ceilings). With old_path (an older
    build's tune_cross_entropy in the same run), its rows follow, named "old:<variant>"."""
    import json

    with open(path, encoding="utf-8") as f:
        rows = json.load(f)
    results = [{"impl": "softmaxkit", "op": TUNE_OPS.get(r["variant"], r["variant"]), "dtype": r["dtype"],
                "rows": r["rows"], "cols": r["cols"], "median_us": r["median_us"], "status": "ok", "path": "auto"}
               for r in rows]
    if old_path:
        with open(old_path, encoding="utf-8") as f:
            results += [{"impl": "softmaxkit", "op": "old:" + r["variant"], "dtype": r["dtype"], "rows": r["rows"],
                         "cols": r["cols"], "median_us": r["median_us"], "status": "ok", "path": "auto"}
                        for r in json.load(f)]
    return {"results": results, "run": {"ceilings": {"copy_gbps": 4270.0, "read_gbps": 4300.0},
                                        "device": {"name": "H200 (ceilings: ANCHORS.md)"}}}


def time_torch(timer: TorchTimer, cases: list[dict]) -> None:
    torch = timer.torch
    import torch.nn.functional as F

    gen = torch.Generator(device="cuda")
    current, x, t = None, None, None
    for case in cases:
        key = (case["dtype"], case["rows"], case["cols"])
        if key != current:
            x = t = None
            torch.cuda.empty_cache()
            gen.manual_seed(20261129)
            dtype = getattr(torch, TORCH_DTYPES[case["dtype"]])
            x = (torch.randn(case["rows"], case["cols"], device="cuda", generator=gen) * 2.0).to(dtype)
            t = torch.randint(0, case["cols"], (case["rows"],), device="cuda", generator=gen)
            current = key
        if case["op"] not in TORCH_OPS:
            # Tuning variants and an older build's rows of forward + backward: beside torch's forward + backward of
            # the same shape, timed once (their backward alone has no torch time).
            same = [c for c in cases if c["op"] == "cross_entropy_fwd_bwd" and c.get("torch")
                    and (c["dtype"], c["rows"], c["cols"]) == key]
            case["torch"] = same[0]["torch"] if same and not case["op"].endswith("backward") else None
            continue
        if case["op"] == "cross_entropy_fused":  # the same torch call as cross_entropy_fwd_bwd: timed once
            same = [c for c in cases if c["op"] == "cross_entropy_fwd_bwd" and c.get("torch")
                    and (c["dtype"], c["rows"], c["cols"]) == key]
            if same:
                case["torch"] = same[0]["torch"]
                print(f"{case['dtype']} {case['op']} {case['rows']}x{case['cols']}: ours {case['ours']:.1f} µs, "
                      f"torch {case['torch']:.1f} µs (fwd+bwd, as timed above)", flush=True)
                continue
        if case["op"] == "cross_entropy":
            def fn():
                return F.cross_entropy(x, t)
        else:
            xg = x.detach().requires_grad_(True)

            def fn():
                (g,) = torch.autograd.grad(F.cross_entropy(xg, t), xg)
                return g
        try:
            case["torch"] = timer.median_us(fn)
        except Exception as e:  # noqa: BLE001  (report, never abort)
            case["torch"] = None
            print(f"{case}: torch failed: {e}", file=sys.stderr)
        print(f"{case['dtype']} {case['op']} {case['rows']}x{case['cols']}: ours {case['ours']:.1f} µs, "
              f"torch {case['torch'] or float('nan'):.1f} µs", flush=True)


def table(bench: dict, cases: list[dict]) -> str:
    ceil = bench["run"]["ceilings"]
    copy, read = ceil.get("copy_gbps", 0), ceil.get("read_gbps", 0)
    out = [f"# Cross-entropy: softmaxkit vs torch F.cross_entropy ({git_commit()})", "",
           f"Device: {bench['run'].get('device', {}).get('name', '?')}; ceilings in this run: copy {copy:.0f} GB/s, "
           f"read {read:.0f} GB/s.", "",
           "| dtype | rows × cols | op | ours µs | GB/s | % of bound | torch µs | torch GB/s | speedup |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        nbytes = ELEMS.get(c["op"], 2) * c["rows"] * c["cols"] * SIZE[c["dtype"]]
        gbps = nbytes / (c["ours"] * 1e-6) / 1e9
        bound = read if c["op"] == "cross_entropy" else copy
        pct = 100 * gbps / bound if bound else float("nan")
        tt = c.get("torch")
        theirs = f"{tt:.1f} | {nbytes / (tt * 1e-6) / 1e9:.0f} | {tt / c['ours']:.2f}×" if tt else "— | — | —"
        out.append(f"| {c['dtype']} | {c['rows']} × {c['cols']} | {c['op']} | {c['ours']:.1f} | {gbps:.0f} | "
                   f"{pct:.1f} % of {'read' if c['op'] == 'cross_entropy' else 'copy'} | {theirs} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bench-json", help="softmaxkit bench --op ce --json output of this run")
    src.add_argument("--tune-json", help="tune_cross_entropy --json output of this run")
    p.add_argument("--old-tune-json", help="with --tune-json: an older build's tune_cross_entropy JSON of the same run")
    p.add_argument("--out", default="out")
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=200.0)
    args = p.parse_args(argv)
    bench = load_bench(args.bench_json) if args.bench_json else tune_bench(args.tune_json, args.old_tune_json)
    cases = our_rows(bench)
    if not cases:
        raise SystemExit(f"{args.bench_json or args.tune_json}: no cross-entropy rows")
    time_torch(TorchTimer(args.warmup_ms, args.rep_ms), cases)
    md = table(bench, cases)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compare_ce.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    for c in cases:
        if c.get("torch"):
            print(f"headline ce {c['dtype']} {c['op']} {c['rows']}x{c['cols']}: {c['torch'] / c['ours']:.2f}x torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
