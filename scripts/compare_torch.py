#!/usr/bin/env python3
"""softmaxkit beside PyTorch eager, torch.compile and cuDNN, on the same GPU in one run.

Our numbers come from `softmaxkit bench --format json` (the automatic kernel path; cuDNN's rows are in the same
file), read from --bench-json or produced by running --softmaxkit. PyTorch is timed here, on the same shapes and
dtypes, with triton.testing.do_bench (median; L2 cleared before every call, as the bench does). torch.compile
gets a fresh compiler for every (shape, dtype, op): torch._dynamo.reset() and raised recompile limits, so no
shape is timed through a fallback. Writes one markdown table (compare.md) with every ratio and the geometric-mean
speedup over torch eager, and prints it.

  python3 scripts/compare_torch.py --bench-json out/bench.json --out out
  python3 scripts/compare_torch.py --softmaxkit build/default/apps/softmaxkit/softmaxkit --grid issue

Ratios are (their time) / (our time): above 1 we are faster.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time

OPS = ["softmax", "log_softmax", "logsumexp", "softmax_backward", "log_softmax_backward"]
TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


# --- Pure helpers (no torch): selection, ratios, the table. ----------------------------------------------------


def load_bench(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if data.get("schema") != 1 or "results" not in data:
        raise SystemExit(f"{path}: not a softmaxkit bench JSON (schema 1)")
    return data


def select_cases(bench: dict, grid: str, ops: list[str], dtypes: list[str]) -> list[dict]:
    """The (dtype, shape, op) cases to compare: every shape of `grid` ("all" = every shape) the bench ran."""
    shapes: list[tuple[str, int, int]] = []
    for r in bench["results"]:
        key = (r["shape"], r["rows"], r["cols"])
        if (grid == "all" or r["grid"] == grid) and key not in shapes:
            shapes.append(key)
    cases = []
    for dtype in dtypes:
        for name, rows, cols in shapes:
            for op in ops:
                cases.append({"dtype": dtype, "shape": name, "rows": rows, "cols": cols, "op": op})
    return cases


def lookup(bench: dict, case: dict, impl: str, path: str | None = None) -> float | None:
    """Median µs of a timed bench row, or None."""
    for r in bench["results"]:
        if (r["impl"] == impl and r["op"] == case["op"] and r["dtype"] == case["dtype"]
                and r["rows"] == case["rows"] and r["cols"] == case["cols"] and r["status"] == "ok"
                and (path is None or r["path"] == path)):
            return float(r["median_us"])
    return None


def ratio(theirs: float | None, ours: float | None) -> float | None:
    if theirs is None or ours is None or ours <= 0:
        return None
    return theirs / ours


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_us(v: float | None) -> str:
    return "—" if v is None else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")


def fmt_ratio(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def min_traffic_bytes(op: str, dtype: str, rows: int, cols: int) -> int:
    """The bench's definition (../shared/ANCHORS.md): softmax/log_softmax 2n, logsumexp n, backward 3n elements."""
    per = {"softmax": 2, "log_softmax": 2, "logsumexp": 1, "softmax_backward": 3, "log_softmax_backward": 3}[op]
    size = {"f32": 4, "bf16": 2, "f16": 2}[dtype]
    return per * rows * cols * size


def build_table(rows: list[dict], header: list[str]) -> tuple[str, list[str]]:
    """Markdown table and the summary lines (each starting 'headline compare')."""
    out = list(header)
    out.append("| dtype | shape | rows × cols | op | ours µs | ours TB/s | eager µs | compile µs | cuDNN µs "
               "| eager/ours | compile/ours | cuDNN/ours | best other/ours |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tbps = None
        if r["ours"]:
            tbps = min_traffic_bytes(r["op"], r["dtype"], r["rows"], r["cols"]) / (r["ours"] * 1e-6) / 1e12
        others = [v for v in (r["eager"], r["compile"], r["cudnn"]) if v is not None]
        best = min(others) if others else None
        r["vs_best"] = ratio(best, r["ours"])
        out.append("| {} | {} | {}×{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["dtype"], r["shape"], r["rows"], r["cols"], r["op"], fmt_us(r["ours"]),
            "—" if tbps is None else f"{tbps:.2f}", fmt_us(r["eager"]),
            fmt_us(r["compile"]) if r["compile"] is not None else r.get("compile_note", "—"), fmt_us(r["cudnn"]),
            fmt_ratio(ratio(r["eager"], r["ours"])), fmt_ratio(ratio(r["compile"], r["ours"])),
            fmt_ratio(ratio(r["cudnn"], r["ours"])), fmt_ratio(r["vs_best"])))

    summary = []
    for dtype in sorted({r["dtype"] for r in rows}, key=list(TORCH_DTYPES).index) + [None]:
        sel = [r for r in rows if dtype is None or r["dtype"] == dtype]
        g = geomean([ratio(r["eager"], r["ours"]) for r in sel])
        gc = geomean([ratio(r["compile"], r["ours"]) for r in sel])
        n = sum(1 for r in sel if ratio(r["eager"], r["ours"]) is not None)
        summary.append("headline compare {}: geomean speedup over torch eager {} ({} cases), over torch.compile {}"
                       .format(dtype or "all", fmt_ratio(g), n, fmt_ratio(gc)))
    judged = [r for r in rows if r["vs_best"] is not None]
    behind = [r for r in judged if r["vs_best"] < 1.0]
    summary.append("headline compare: at least as fast as the fastest of eager, compile and cuDNN on {} of {} "
                   "cases".format(len(judged) - len(behind), len(judged)))
    for r in behind:
        summary.append("  behind: {} {} {}×{} {}: ours {} µs, best other {} µs ({})".format(
            r["dtype"], r["op"], r["rows"], r["cols"], r["shape"], fmt_us(r["ours"]),
            fmt_us(r["ours"] * r["vs_best"]), fmt_ratio(r["vs_best"])))
    for who in ("eager", "compile"):
        spreads = sorted(v for v in (spread(r.get(who + "_samples", [])) for r in rows) if v is not None)
        if spreads:
            summary.append("headline compare: torch {}'s own spread between rounds (slowest / fastest round): median "
                           "{:.3f}, worst {:.3f}, over 5 % on {} of {} cases".format(
                               who, spreads[len(spreads) // 2], spreads[-1], sum(1 for v in spreads if v > 1.05),
                               len(spreads)))
    missing = [r for r in rows if r["ours"] is None]
    if missing:
        summary.append("headline compare: {} cases have no softmaxkit time (op or dtype not served yet; see "
                       "bench.json)".format(len(missing)))
    return "\n".join(out), summary


# --- Timing PyTorch. -------------------------------------------------------------------------------------------


class TorchTimer:
    def __init__(self, warmup_ms: float, rep_ms: float):
        import torch  # noqa: F401  (imported here so the helpers above work without torch)

        self.torch = torch
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        try:
            from triton.testing import do_bench

            self.do_bench = do_bench
        except Exception as e:  # noqa: BLE001
            print(f"triton.testing.do_bench unavailable ({e}); timing with CUDA events the same way", file=sys.stderr)
            self.do_bench = None
        import torch._dynamo as dynamo

        # A fresh compiler per case (reset) and limits high enough that nothing falls back to eager.
        for name, value in (("recompile_limit", 1 << 16), ("cache_size_limit", 1 << 16),
                            ("accumulated_recompile_limit", 1 << 20), ("accumulated_cache_size_limit", 1 << 20)):
            try:
                if hasattr(dynamo.config, name):
                    setattr(dynamo.config, name, value)
            except Exception as e:  # noqa: BLE001  (a renamed or read-only knob in this torch)
                print(f"torch._dynamo.config.{name}: {e}", file=sys.stderr)
        self.dynamo = dynamo

    def median_us(self, fn) -> float:
        if self.do_bench is not None:
            q = self.do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, quantiles=[0.5, 0.1, 0.9])
            return 1000.0 * float(q[0])
        return 1000.0 * self._events_median_ms(fn)

    def _events_median_ms(self, fn) -> float:
        # do_bench's method: clear 256 MB of cache, then time one call between two events; median of the calls.
        torch = self.torch
        cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        fn()
        torch.cuda.synchronize()
        times, deadline = [], time.perf_counter() + (self.warmup_ms + self.rep_ms) / 1000.0
        while len(times) < 10 or time.perf_counter() < deadline:
            cache.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
            if len(times) >= 2000:
                break
        times.sort()
        return times[len(times) // 2]


def torch_fns(torch, op: str):
    """(function, how its arguments are made) for one op; dim = -1 throughout."""
    if op == "softmax":
        return (lambda x: torch.softmax(x, dim=-1)), "x"
    if op == "log_softmax":
        return (lambda x: torch.log_softmax(x, dim=-1)), "x"
    if op == "logsumexp":
        return (lambda x: torch.logsumexp(x, dim=-1)), "x"
    if op == "softmax_backward":
        return (lambda y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype)), "y_softmax"
    if op == "log_softmax_backward":
        return (lambda y, dy: torch.ops.aten._log_softmax_backward_data(dy, y, -1, y.dtype)), "y_log_softmax"
    raise ValueError(op)


def spread(samples: list[float]) -> float | None:
    """max / min of one case's timings (1.0: the rounds agreed)."""
    ok = [v for v in samples if v is not None and v > 0]
    return max(ok) / min(ok) if len(ok) >= 2 else None


def time_torch(timer: TorchTimer, cases: list[dict], compile_budget_s: float | None, skip_compile: bool,
               after_each=None, rounds: int = 2) -> None:
    """Times eager and torch.compile `rounds` times a case (a fresh compiler per case) and keeps the fastest of each.

    Session 11 saw compile's own times move 1.12× (single cases up to 4.2×) between two sessions' runs, so one timing
    of torch is not its number. Keeping the fastest round favours torch, never us. The samples are kept
    (eager_samples, compile_samples) and their spread is reported."""
    torch = timer.torch
    gen = torch.Generator(device="cuda")
    compile_spent = 0.0
    current = None  # (dtype, rows, cols) whose tensors are live
    x = y_sm = y_lsm = dy = None
    for i, case in enumerate(cases):
        key = (case["dtype"], case["rows"], case["cols"])
        if key != current:
            x = y_sm = y_lsm = dy = None
            torch.cuda.empty_cache()
            dtype = getattr(torch, TORCH_DTYPES[case["dtype"]])
            gen.manual_seed(20261129)
            # Logits N(0, 2²), as the bench draws them.
            x = (torch.randn(case["rows"], case["cols"], device="cuda", generator=gen) * 2.0).to(dtype)
            dy = torch.randn(case["rows"], case["cols"], device="cuda", generator=gen).to(dtype)
            y_sm = torch.softmax(x, dim=-1)
            y_lsm = torch.log_softmax(x, dim=-1)
            torch.cuda.synchronize()
            current = key
        fn, kind = torch_fns(torch, case["op"])
        args = {"x": (x,), "y_softmax": (y_sm, dy), "y_log_softmax": (y_lsm, dy)}[kind]
        label = f"[{i + 1}/{len(cases)}] {case['dtype']} {case['op']} {case['rows']}x{case['cols']}"
        case["eager_samples"], case["compile_samples"] = [], []
        case["compile"], case["compile_s"] = None, None
        compiled = None
        if skip_compile:
            case["compile_note"] = "not run"
        elif compile_budget_s is not None and compile_spent >= compile_budget_s:
            case["compile_note"] = "budget"
        else:
            try:
                timer.dynamo.reset()
                compiled = torch.compile(fn, dynamic=False)
                t0 = time.perf_counter()
                compiled(*args)
                torch.cuda.synchronize()
                case["compile_s"] = time.perf_counter() - t0
                compile_spent += case["compile_s"]
            except Exception as e:  # noqa: BLE001
                compiled = None
                case["compile_note"] = "error"
                print(f"{label}: torch.compile failed: {e}", file=sys.stderr)
        # Rounds alternate eager and compiled, so a slow stretch of the GPU does not land on one of them only.
        for _ in range(max(1, rounds)):
            try:
                case["eager_samples"].append(timer.median_us(lambda: fn(*args)))
            except Exception as e:  # noqa: BLE001  (report, never abort the comparison)
                print(f"{label}: torch eager failed: {e}", file=sys.stderr)
            if compiled is not None:
                try:
                    case["compile_samples"].append(timer.median_us(lambda: compiled(*args)))
                except Exception as e:  # noqa: BLE001
                    case["compile_note"] = "error"
                    print(f"{label}: torch.compile's kernel failed: {e}", file=sys.stderr)
        case["eager"] = min(case["eager_samples"]) if case["eager_samples"] else None
        case["compile"] = min(case["compile_samples"]) if case["compile_samples"] else None
        print(f"{label}: eager {' / '.join(fmt_us(v) for v in case['eager_samples'])} µs, compile "
              f"{' / '.join(fmt_us(v) for v in case['compile_samples']) or '—'} µs (the fastest kept)"
              + (f" (compiled in {case['compile_s']:.1f} s)" if case["compile_s"] else ""), flush=True)
        if after_each is not None:
            after_each(i + 1)


def run_bench_binary(binary: str, grid: str, ops: list[str], dtypes: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.json")
        cmd = [binary, "bench", "--shape", grid, "--op", ",".join(ops), "--dtype", ",".join(dtypes),
               "--format", "csv", "--json", path]
        print("running:", " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL).returncode
        if not os.path.exists(path):
            raise SystemExit(f"softmaxkit bench wrote no JSON (exit {rc}); nothing to compare against")
        return load_bench(path)


def git_commit() -> str:
    # The device machine's copy of the tree has no .git: the caller names the commit in SMK_COMMIT there.
    if os.environ.get("SMK_COMMIT"):
        return os.environ["SMK_COMMIT"]
    try:
        return subprocess.run(["git", "log", "-1", "--format=%h %cd", "--date=short"], capture_output=True,
                              text=True, check=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except Exception:  # noqa: BLE001
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench-json", help="softmaxkit bench --json output of this run")
    p.add_argument("--softmaxkit", default="build/default/apps/softmaxkit/softmaxkit",
                   help="the binary to run when --bench-json is not given or missing")
    p.add_argument("--grid", default="issue", help="bench grid to compare (issue, decode, odd, sweep, all)")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--out", default=os.environ.get("OUT", "out"), help="folder for compare.md")
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--compile-budget-s", type=float, default=None,
                   help="stop compiling new cases once torch.compile has taken this long (reported as 'budget')")
    p.add_argument("--no-compile", action="store_true", help="time torch eager only")
    p.add_argument("--rounds", type=int, default=2,
                   help="time eager and torch.compile this many times a case, alternating; the fastest is kept")
    args = p.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    dtypes = [d for d in args.dtypes.split(",") if d]
    for o in ops:
        if o not in OPS:
            raise SystemExit(f"--ops: unknown op {o!r}")
    for d in dtypes:
        if d not in TORCH_DTYPES:
            raise SystemExit(f"--dtypes: unknown dtype {d!r}")

    if args.bench_json and os.path.exists(args.bench_json):
        bench = load_bench(args.bench_json)
    else:
        bench = run_bench_binary(args.softmaxkit, args.grid, ops, dtypes)
    cases = select_cases(bench, args.grid, ops, dtypes)
    if not cases:
        raise SystemExit(f"the bench JSON has no shapes of grid {args.grid!r}")

    timer = TorchTimer(args.warmup_ms, args.rep_ms)
    torch = timer.torch
    import triton  # noqa: F401

    for c in cases:
        c["ours"] = lookup(bench, c, "softmaxkit", "auto")
        c["cudnn"] = lookup(bench, c, "cudnn")
    run = bench.get("run", {})
    ceil = run.get("ceilings", {})
    t0 = time.perf_counter()
    commit = git_commit()
    os.makedirs(args.out, exist_ok=True)

    def render(done: int) -> tuple[str, list[str]]:
        header = [
            "# softmaxkit vs PyTorch eager, torch.compile and cuDNN",
            "",
            f"- GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}, triton {triton.__version__}, "
            f"cuDNN (bench) {run.get('cudnn', '?')}",
            f"- commit {commit}; bench run {run.get('date_utc', '?')}; torch timed "
            f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')} "
            f"({time.perf_counter() - t0:.0f} s)",
            f"- ceilings (bench, same run): copy {ceil.get('copy_gbps', 0) / 1000:.2f} TB/s, read "
            f"{ceil.get('read_gbps', 0) / 1000:.2f} TB/s",
            "- ours: `softmaxkit bench`, automatic path, CUDA events, L2 flushed, median; torch: "
            f"triton.testing.do_bench (warm-up {args.warmup_ms:g} ms, {args.rep_ms:g} ms of repeats, median, L2 "
            f"cleared); torch.compile reset per case (dynamic=False). torch timed in {args.rounds} alternating rounds a "
            "case (eager, compiled), the fastest round of each kept. Ratios: their time / ours (> 1: we are faster).",
            "- TB/s counts the minimum traffic: softmax/log_softmax 2n, logsumexp n, backward 3n elements.",
        ]
        if done < len(cases):
            header.append(f"- PARTIAL: torch timed on {done} of {len(cases)} cases so far")
        header.append("")
        table, summary = build_table(cases[:done], header)
        text = table + "\n\n" + "\n".join(
            f"- {s.removeprefix('headline ')}" if not s.startswith("  ") else f"  - {s.strip()}" for s in summary)
        with open(os.path.join(args.out, "compare.md"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        return table, summary

    # compare.md is rewritten after every case, so a run stopped at its time limit still leaves a table.
    time_torch(timer, cases, args.compile_budget_s, args.no_compile, after_each=render, rounds=args.rounds)
    table, summary = render(len(cases))
    print(table)
    print()
    for s in summary:
        print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
