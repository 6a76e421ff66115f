#!/usr/bin/env python3
"""softmaxkit's linear cross-entropy beside torch's matmul + F.cross_entropy, on the same GPU and inputs (issue 5).

For each shape (N rows, d hidden, V classes, bf16; 5 % of the rows ignored, mean reduction):
  * the float64 reference, on the GPU: logits = H·Wᵀ in float64 from the bf16 inputs, loss, G = ∂loss/∂logits,
    dH = G·W, dW = Gᵀ·H, all in float64;
  * torch's bf16 pipeline as a user writes it: logits = H @ W.T (bf16), F.cross_entropy(logits, t), backward;
  * ours: smk::linear_cross_entropy through build/.../libsmk_lce_capi.so (ctypes, on torch's tensors and stream),
    at the default chunk and at other chunk sizes.
Reported: loss relative error; dH and dW relative error norm-wise (‖Δ‖_F / ‖ref‖_F) and max-wise
(max |Δ| / max |ref|); time (CUDA events around the whole step, median of the repeats); peak memory beyond the inputs
and outputs — torch: torch.cuda.max_memory_allocated above the inputs, less the gradients it returns; ours: the
device's used memory (cudaMemGetInfo) sampled from the call until its end event, above the used memory before (our
workspace comes from softmaxkit's own stream-ordered pool, which torch's counters do not see; the pool keeps up to
64 MB between calls, so this can read up to 64 MB low), with the chunk's planned bytes beside it.

  python3 scripts/compare_torch_lce.py --lib build/default/tests/libsmk_lce_capi.so --out out

The issue's targets at N = 8192, d = 4096, V = 151936: time ≤ 1.1× torch, peak memory ≤ 10 % of torch's, errors never
above torch's bf16 result. Writes compare_lce.md and compare_lce.json into --out and prints the table.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time


def git_commit() -> str:
    env = os.environ.get("SMK_COMMIT")
    if env:
        return env
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - the copy on the device has no .git
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default="out")
    ap.add_argument("--shapes", default="8192x4096x151936,4096x2048x32000")
    ap.add_argument("--chunks", default="0,256,1024,1024/256",
                    help="chunk_rows to time, each optionally /logit_rows (0: the default)")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    lib = ctypes.CDLL(args.lib)  # CDLL releases the GIL during the call
    lib.smk_lce.restype = ctypes.c_int
    lib.smk_lce.argtypes = [ctypes.c_void_p] * 9 + [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p,
                                                    ctypes.c_char_p, ctypes.c_int]
    lib.smk_lce_default_chunk_rows.restype = ctypes.c_int64
    lib.smk_lce_default_chunk_rows.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
    # The default logits rows (session 8); an older library has none: the chunk, as it then was.
    default_logit_rows = getattr(lib, "smk_lce_default_logit_rows", None)
    if default_logit_rows is not None:
        default_logit_rows.restype = ctypes.c_int64
        default_logit_rows.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name()
    results = []

    def elapsed_ms(fn, reps):
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times), times

    def rel_errors(got, ref):
        diff = got.double() - ref
        return {"norm": (diff.norm() / ref.norm()).item(), "max": (diff.abs().max() / ref.abs().max()).item()}

    for shape in args.shapes.split(","):
        n, d, v = (int(s) for s in shape.split("x"))
        torch.cuda.empty_cache()
        gen = torch.Generator(device=dev)
        gen.manual_seed(20261130)
        # Logits of spread ~3 (a trained classifier's range), hidden states of unit scale.
        h = torch.randn(n, d, device=dev, generator=gen).to(torch.bfloat16)
        w = (torch.randn(v, d, device=dev, generator=gen) * (3.0 / math.sqrt(d))).to(torch.bfloat16)
        t = torch.randint(0, v, (n,), device=dev, generator=gen)
        t[torch.rand(n, device=dev, generator=gen) < 0.05] = -100
        valid = t != -100
        count = valid.sum().item()

        # float64 reference.
        h64, w64 = h.double(), w.double()
        x = h64 @ w64.T
        lse64 = torch.logsumexp(x, dim=1)
        tc = t.clamp(min=0)
        xt = x.gather(1, tc[:, None])[:, 0]
        loss64 = ((lse64 - xt) * valid).sum().item() / count
        x.sub_(lse64[:, None]).exp_()  # x is now p
        x[torch.arange(n, device=dev), tc] -= 1.0
        x[~valid] = 0.0
        x /= count
        dh64 = x @ w64
        dw64 = x.T @ h64
        del x, h64, w64, xt
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

        # torch's bf16 pipeline.
        hp, wp = h.clone().requires_grad_(), w.clone().requires_grad_()

        def torch_step():
            hp.grad = wp.grad = None
            loss = F.cross_entropy(hp @ wp.T, t)
            loss.backward()
            return loss

        torch_step()  # warm-up (cuBLAS workspace, kernels)
        torch.cuda.synchronize()
        hp.grad = wp.grad = None
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        torch_loss = torch_step()
        torch.cuda.synchronize()
        torch_peak = torch.cuda.max_memory_allocated() - base - hp.grad.numel() * 2 - wp.grad.numel() * 2
        torch_acc = {"loss": abs(torch_loss.double().item() - loss64) / abs(loss64),
                     "dH": rel_errors(hp.grad, dh64), "dW": rel_errors(wp.grad, dw64)}
        torch_ms, torch_all = elapsed_ms(torch_step, args.reps)
        hp.grad = wp.grad = None
        del hp, wp, torch_loss
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

        # ours.
        loss = torch.empty((), device=dev, dtype=torch.float32)
        lse = torch.empty(n, device=dev, dtype=torch.float32)
        dh = torch.empty_like(h)
        dw = torch.empty_like(w)
        err = ctypes.create_string_buffer(1024)
        stream = torch.cuda.current_stream().cuda_stream
        default_chunk = lib.smk_lce_default_chunk_rows(n, v, 2)
        default_x = default_logit_rows(n, v, 2) if default_logit_rows is not None else default_chunk

        for spec in args.chunks.split(","):
            chunk, _, xrows = spec.partition("/")
            chunk, xrows = int(chunk), int(xrows or 0)
            used_chunk = default_chunk if chunk <= 0 else min(chunk, n)
            used_x = min(xrows, used_chunk) if xrows > 0 else default_x if chunk <= 0 else used_chunk

            def poison():  # every output NaN (all bits set) before the call whose results are checked
                for out in (loss, lse, dh, dw):
                    out.view(torch.int32 if out.element_size() == 4 else torch.int16).fill_(-1)

            def ours_step():
                rc = lib.smk_lce(loss.data_ptr(), lse.data_ptr(), dh.data_ptr(), dw.data_ptr(), None, h.data_ptr(),
                                 w.data_ptr(), None, t.data_ptr(), 2, n, d, v, chunk, xrows, 2, stream, err,
                                 len(err))
                if rc != 0:
                    raise RuntimeError(err.value.decode())

            poison()
            ours_step()  # warm-up (cuBLAS handle, pool)
            torch.cuda.synchronize()
            poison()
            torch.cuda.synchronize()
            # Peak: sample the device's used memory from before the call until its work is done (query, never a
            # synchronize, which would let the pool return the workspace before the last sample).
            free0, total = torch.cuda.mem_get_info()
            peak = total - free0
            end = torch.cuda.Event()
            ours_step()
            end.record()
            samples = 0
            while True:
                f, _ = torch.cuda.mem_get_info()
                peak = max(peak, total - f)
                samples += 1
                if end.query():
                    break
                time.sleep(0.0005)
            torch.cuda.synchronize()
            ours_peak = peak - (total - free0)
            planned = used_chunk * v * 2 + used_x * v * 4
            acc = {"loss": abs(loss.double().item() - loss64) / abs(loss64), "dH": rel_errors(dh, dh64),
                   "dW": rel_errors(dw, dw64), "lse_max_abs": (lse.double() - lse64).abs().max().item()}
            ours_ms, ours_all = elapsed_ms(ours_step, args.reps)
            row = {"n": n, "d": d, "v": v, "dtype": "bf16", "chunk_rows": used_chunk, "chunk_arg": chunk,
                   "logit_rows": used_x, "logit_arg": xrows,
                   "ours_ms": ours_ms, "ours_all_ms": ours_all, "torch_ms": torch_ms, "torch_all_ms": torch_all,
                   "ours_peak_bytes": ours_peak, "ours_planned_chunk_bytes": planned, "ours_peak_samples": samples,
                   "torch_peak_bytes": torch_peak, "ours_acc": acc, "torch_acc": torch_acc}
            results.append(row)
            print(json.dumps(row), flush=True)
        del dh64, dw64, h, w, t, loss, lse, dh, dw
        torch.cuda.empty_cache()

    os.makedirs(args.out, exist_ok=True)
    meta = {"gpu": gpu, "torch": torch.__version__, "commit": git_commit(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    with open(os.path.join(args.out, "compare_lce.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"# Linear cross-entropy beside torch (matmul + F.cross_entropy, bf16) — {meta['gpu']}, torch "
             f"{meta['torch']}, commit {meta['commit']}, {meta['date']}", "",
             "| N × d × V | chunk (/ logit rows) | ours ms | torch ms | time ratio | ours peak MB (planned) | torch peak MB | memory "
             "ratio | loss rel err ours / torch | dH norm err ours / torch | dH max err ours / torch | dW norm err "
             "ours / torch | dW max err ours / torch |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        o, tr = r["ours_acc"], r["torch_acc"]
        lines.append(
            f"| {r['n']} × {r['d']} × {r['v']} | {r['chunk_rows']}"
            f"{'' if r.get('logit_rows', r['chunk_rows']) == r['chunk_rows'] else ' / ' + str(r['logit_rows'])} | "
            f"{r['ours_ms']:.2f} | {r['torch_ms']:.2f} | "
            f"{r['ours_ms'] / r['torch_ms']:.3f} | {r['ours_peak_bytes'] / 1e6:.0f} "
            f"({r['ours_planned_chunk_bytes'] / 1e6:.0f}) | {r['torch_peak_bytes'] / 1e6:.0f} | "
            f"{r['ours_peak_bytes'] / r['torch_peak_bytes']:.3f} | {o['loss']:.2e} / {tr['loss']:.2e} | "
            f"{o['dH']['norm']:.2e} / {tr['dH']['norm']:.2e} | {o['dH']['max']:.2e} / {tr['dH']['max']:.2e} | "
            f"{o['dW']['norm']:.2e} / {tr['dW']['norm']:.2e} | {o['dW']['max']:.2e} / {tr['dW']['max']:.2e} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "compare_lce.md"), "w") as f:
        f.write(text)
    print(text)
    for r in results:
        if r["chunk_arg"] == 0 and r.get("logit_arg", 0) == 0:  # the defaults
            o, tr = r["ours_acc"], r["torch_acc"]
            worse = [k for k in ("dH", "dW") for m in ("norm", "max") if o[k][m] > tr[k][m]]
            if o["loss"] > tr["loss"]:
                worse.append("loss")
            print(f"headline lce {r['n']}x{r['d']}x{r['v']}: time {r['ours_ms'] / r['torch_ms']:.3f}x torch, memory "
                  f"{r['ours_peak_bytes'] / r['torch_peak_bytes']:.3f}x torch, less accurate than torch in: "
                  f"{worse or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
