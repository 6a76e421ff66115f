#!/usr/bin/env python3
"""Our attention (prefill and decode) and torch SDPA's backends timed interleaved in ONE process, on the same inputs.

Why: timed in separate processes (tune_prefill, then scripts/bench_sdpa.py; bench_decode, then bench_decode.py), a
ratio to cuDNN carries the card's state at each one's turn: pfx9 saw the same kernel's (4, 32, 4096, 128) full row
drop ~12 % after two or three columns of one tune_prefill pass (clocks / power under sustained load, probably).
Here every implementation is timed once in each ROUND (CUDA events around each of k calls on torch's current stream,
the median of the k), the order rotated by one each round, R rounds; reported per implementation: the median over the
rounds and their range (min-max), and the ratio ours / cuDNN formed within each round (median and range), so a drift
of the card over the run moves both sides of each ratio alike. nvidia-smi's clocks (sm, mem), power, temperature and
active throttle reasons are read (query only) before and after each row.

Ours is called through build's libsmk_attention_capi.so (tests/cuda/attention/attention_capi.cpp) by ctypes on
torch's tensors and stream. Inputs: bf16 randn, torch's [B, H, S, D] layout; "ours" reads the very same memory as a
[B, S, H, D] view (strides), "ours bshd" a contiguous [B, S, H, D] copy (FlashAttention's layout, the one our
tune_prefill / bench_decode time), to show what the layout costs.
Prefill (issue 7): (4, 32, 4096, 128) full and causal, (16, 16, 2048, 64) full, (1, 32, 16384, 128) causal;
TFLOP/s = 4·B·H·S²·D (halved for causal) / time. Backends FLASH_ATTENTION and CUDNN_ATTENTION.
Decode (issue 8): one new token, D = 128, 32/8 heads at (B, S) = (1, 32768), (1, 131072), (16, 8192), (64, 4096),
(128, 1024), and 64/8 heads at (1, 32768), (16, 8192); TB/s of the unique K and V read (2·B·S·Hkv·D·2 bytes) / time;
an untimed 256 MB write before every timed call evicts L2 (as bench_decode / bench_decode.py do); SDPA gets
enable_gqa=True (or K and V expanded to Hq heads where a backend refuses it, marked "x").
Before timing, each row checks ours against SDPA's output once (max abs error; outputs poisoned with NaN before): a
sanity gate, not the accuracy test (tests/cuda/attention/test_prefill.cpp, test_decode.cpp are).
    usage: sdpa_interleaved.py --lib libsmk_attention_capi.so [--out FILE.md] [--json FILE.json]
                               [--rounds R] [--calls k] [--only prefill|decode] [--deadline-s T]
"""
import argparse
import ctypes
import json
import math
import statistics
import subprocess
import sys
import time

BF16 = 2  # attention_capi's dtype code

PREFILL_ROWS = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (16, 16, 2048, 64, False),
                (1, 32, 16384, 128, True)]
DECODE_ROWS = [(1, 32768, 32, 8), (1, 131072, 32, 8), (16, 8192, 32, 8), (64, 4096, 32, 8), (128, 1024, 32, 8),
               (1, 32768, 64, 8), (16, 8192, 64, 8)]
DECODE_D = 128
# Sanity gate on max |ours − SDPA| (bf16 outputs of softmax-weighted randn values, |O| ≲ 4): a few bf16 ulps at the
# output's magnitude. A wrong kernel (wrong scale, mask, head mapping) misses it by orders of magnitude.
GATE = 0.0625


def smi():
    """nvidia-smi's reading (query only: the card's settings are never changed)."""
    base = "clocks.sm,clocks.mem,power.draw,temperature.gpu"
    got = ""
    # The throttle field's name changed across drivers (clocks_event_reasons since 535): the first one it takes.
    for q in (base + ",clocks_event_reasons.active", base + ",clocks_throttle_reasons.active", base):
        try:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=10)
        except Exception as e:  # noqa: BLE001 (a reading, never a reason to stop)
            return f"nvidia-smi failed: {e}"
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0]
        got = (r.stdout + r.stderr).strip()
    return f"nvidia-smi: {got}"


class Ours:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        p, i64p, c_int, c_float = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_float
        self.lib.smk_attention_forward.argtypes = [p, i64p, p, p, i64p, i64p, p, p, i64p, i64p, i64p, c_int, c_int,
                                                   c_float, p, ctypes.c_char_p, c_int]
        self.lib.smk_attention_decode.argtypes = [p, i64p, p, p, i64p, i64p, p, p, i64p, i64p, i64p, p, c_int, c_int,
                                                  c_float, p, ctypes.c_char_p, c_int]
        self.err = ctypes.create_string_buffer(1024)

    @staticmethod
    def arr(vals):
        return (ctypes.c_int64 * 4)(*[int(x) for x in vals])

    def bind(self, fn, out, lse, q, k, v, causal, seqlens=None):
        """A no-argument callable for one configuration (the arrays built once, outside the timed calls).
        q, k, v, out are torch tensors viewed as [B, S, H, D]; lse contiguous [B, Hq, Sq] or None."""
        import torch
        args = [out.data_ptr(), self.arr(out.stride()), lse.data_ptr() if lse is not None else None, q.data_ptr(),
                self.arr(q.shape), self.arr(q.stride()), k.data_ptr(), v.data_ptr(), self.arr(k.shape),
                self.arr(k.stride()), self.arr(v.stride())]
        if seqlens is not None:
            args.append(seqlens.data_ptr())
        f = getattr(self.lib, fn)
        err = self.err

        def call():
            rc = f(*args, BF16, int(causal), 0.0, torch.cuda.current_stream().cuda_stream, err, len(err))
            if rc != 0:
                raise RuntimeError(err.value.decode())
        return call


# GPU cycles of torch.cuda._sleep queued ahead of the timed calls, so the host's launch work (SDPA's dispatch under
# sdpa_kernel is tens of µs, ours through ctypes less) happens while the GPU is busy and never lands between a start
# event and its kernel: ~1 ms before each batch of k calls, and ~0.1 ms before each decode call (a decode kernel takes
# 30-150 µs, less than the host's work for one call).
SLEEP_BATCH, SLEEP_CALL = 2_000_000, 200_000


def gpu_sleep(torch, cycles):
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(cycles)


def check_errors(ours, torch):
    """Bad arguments come back through the C boundary as rc 1 and smk::Error's message naming the op (no crash):
    K with a head dim other than Q's, and a decode query of 9 new tokens (at most 8). Returns the messages."""
    dev, bf = "cuda", torch.bfloat16
    q = torch.zeros(1, 16, 2, 128, device=dev, dtype=bf)
    k = torch.zeros(1, 16, 2, 64, device=dev, dtype=bf)
    out = torch.empty_like(q)
    msgs = []
    for fn, qq, kk, want, extra in (("smk_attention_forward", q, k, "attention_forward", None),
                                   ("smk_attention_decode", torch.zeros(1, 9, 2, 128, device=dev, dtype=bf), q,
                                    "attention_decode", torch.full((1,), 16, device=dev, dtype=torch.int32))):
        o = torch.empty_like(qq)
        try:
            ours.bind(fn, o, None, qq, kk, kk, False, extra)()
            msgs.append(f"{fn}: accepted a bad argument (no error)")
        except RuntimeError as e:
            msgs.append(("ok: " if want in str(e) else "WRONG MESSAGE: ") + str(e))
    del q, k, out
    return msgs


def time_calls(fn, k, torch, flush=None):
    """Median µs of k calls, events around each call (an untimed L2-evicting write before each when flush is set)."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(k)]
    gpu_sleep(torch, SLEEP_BATCH)
    for s, e in ev:
        if flush is not None:
            flush.zero_()
            gpu_sleep(torch, SLEEP_CALL)
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(1e3 * s.elapsed_time(e) for s, e in ev)


def rounds(impls, R, k, torch, flush=None, warmup=3):
    """impls: [(name, fn)]. Returns {name: [µs per round]}, {name: [position per round]}."""
    for _, fn in impls:
        for _ in range(warmup):
            if flush is not None:
                flush.zero_()
            fn()
    torch.cuda.synchronize()
    times = {n: [] for n, _ in impls}
    pos = {n: [] for n, _ in impls}
    for r in range(R):
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        for p, (n, fn) in enumerate(order):
            times[n].append(time_calls(fn, k, torch, flush))
            pos[n].append(p)
    return times, pos


def summarize(label, unit, per_round, impls, times, pos, ours_names, ref="cudnn"):
    """Markdown cells for one row, and a dict for the JSON."""
    med = {n: statistics.median(per_round(t) for t in times[n]) for n in times}
    lo = {n: min(per_round(t) for t in times[n]) for n in times}
    hi = {n: max(per_round(t) for t in times[n]) for n in times}
    cells = [label]
    for n in times:
        cells.append(f"{med[n]:.1f} ({lo[n]:.1f}–{hi[n]:.1f})")
    ratios = {}
    for o in ours_names:
        for theirs in ("cudnn", "flash"):
            if theirs not in times or o not in times:
                continue
            rr = [t_them / t_us for t_us, t_them in zip(times[o], times[theirs])]  # > 1: ours faster
            ratios[f"{o} / {theirs}"] = rr
    for key in ratios:
        rr = ratios[key]
        cells.append(f"{statistics.median(rr):.3f} ({min(rr):.3f}–{max(rr):.3f})")
    # The card's drift inside a round: each implementation's median by its position in the round's order.
    bypos = {}
    for n in times:
        slots = {}
        for t, p in zip(times[n], pos[n]):
            slots.setdefault(p, []).append(per_round(t))
        bypos[n] = [round(statistics.median(slots[p]), 1) for p in sorted(slots)]
    return cells, list(ratios), {"median": med, "min": lo, "max": hi, "ratios": ratios, "by_position": bypos,
                                 "us_per_round": times, "positions": pos, "unit": unit}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out")
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=10, help="k: calls per implementation per round (prefill)")
    ap.add_argument("--decode-calls", type=int, default=20)
    ap.add_argument("--only", choices=["prefill", "decode"])
    ap.add_argument("--deadline-s", type=float, default=1e9, help="start no new row after this many seconds")
    ap.add_argument("--rows", help="prefill rows to run, by index into PREFILL_ROWS (e.g. 0,1,3)")
    args = ap.parse_args()
    t0 = time.time()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours = Ours(args.lib)
    dev = "cuda"
    lines, record = [], {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                         "rounds": args.rounds, "calls": args.calls, "decode_calls": args.decode_calls,
                         "prefill": [], "decode": [], "smi": [("start", smi())]}
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; cuDNN {torch.backends.cudnn.version()}; "
          f"{args.rounds} rounds; smi at start: {record['smi'][0][1]}", flush=True)

    def emit(text):
        lines.append(text)
        print(text, flush=True)
        if args.out:
            open(args.out, "w").write("\n".join(lines) + "\n")

    def sdpa_fn(backend, q, k, v, causal, gqa=False):
        def call():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        return call

    emit(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}; "
         f"{args.rounds} rounds, order rotated each round; prefill {args.calls} calls, decode {args.decode_calls} "
         f"calls (each after an L2-evicting write) per implementation per round; cells: median over rounds "
         f"(min–max); ratios: the other's time / ours within each round (> 1: ours faster).")
    errors = check_errors(ours, torch)
    emit("Bad arguments through the C entry points: " + "; ".join(errors))
    record["errors"] = errors
    if args.only != "decode":
        head = None
        for ri, (B, H, S, D, causal) in enumerate(PREFILL_ROWS):
            if args.rows is not None and str(ri) not in args.rows.split(","):
                continue
            if time.time() - t0 > args.deadline_s:
                emit(f"(deadline: prefill row {B, H, S, D, causal} not run)")
                continue
            label = f"{B}, {H}, {S}, {D}, {'causal' if causal else 'full'}"
            before = smi()
            g = torch.Generator(device=dev).manual_seed(7)
            q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(3))
            qv, kv, vv = (t.transpose(1, 2) for t in (q, k, v))  # [B, S, H, D] views of the same memory
            qc, kc, vc = (t.contiguous() for t in (qv, kv, vv))  # FlashAttention's layout, own copies
            out = torch.empty(B, S, H, D, device=dev, dtype=torch.bfloat16)
            out2 = torch.empty_like(out)
            lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
            impls = [("ours", ours.bind("smk_attention_forward", out, lse, qv, kv, vv, causal)),
                     ("ours bshd", ours.bind("smk_attention_forward", out2, lse, qc, kc, vc, causal)),
                     ("cudnn", sdpa_fn(SDPBackend.CUDNN_ATTENTION, q, k, v, causal)),
                     ("flash", sdpa_fn(SDPBackend.FLASH_ATTENTION, q, k, v, causal))]
            # Sanity gate, once: poisoned outputs, ours (both layouts) against each SDPA backend.
            out.fill_(float("nan"))
            out2.fill_(float("nan"))
            impls[0][1]()
            impls[1][1]()
            errs = {}
            for name, fn in list(impls[2:]):
                try:
                    ref = fn().transpose(1, 2).float()
                except RuntimeError as e:  # a backend that does not take this shape: left out of the row
                    print(f"{name} failed on {label}: {str(e).splitlines()[0]}", flush=True)
                    impls = [(n, f) for n, f in impls if n != name]
                    continue
                # torch's max keeps a NaN (Python's max(x, nan) returns x, so a poisoned, unwritten output would pass)
                errs[name] = torch.stack([(o.float() - ref).abs().max() for o in (out, out2)]).max().item()
            torch.cuda.synchronize()
            bad = [n for n, e in errs.items() if not (e <= GATE)]
            flop = 4.0 * B * H * S * S * D / (2 if causal else 1)
            tf = lambda us: flop / (us * 1e-6) / 1e12
            times, pos = rounds(impls, args.rounds, args.calls, torch)
            after = smi()
            cells, rnames, rec = summarize(label, "TFLOP/s", tf, impls, times, pos, ["ours", "ours bshd"])
            if head is None:
                head = ["B, H, S, D, mask"] + [f"{n} TFLOP/s" for n, _ in impls] + rnames + \
                       ["max abs err vs cudnn / flash", "nvidia-smi before → after (sm MHz, mem MHz, W, °C, throttle)"]
                emit("\n## Prefill (issue 7)\n")
                emit("| " + " | ".join(head) + " |")
                emit("|" + "---|" * len(head))
            cells += [" / ".join(f"{errs.get(n, float('nan')):.3g}" for n in ("cudnn", "flash")) +
                      (" FAILED GATE" if bad else ""),
                      f"{before} → {after}"]
            emit("| " + " | ".join(cells) + " |")
            rec.update({"row": [B, H, S, D, causal], "max_abs_err": errs, "smi_before": before, "smi_after": after})
            record["prefill"].append(rec)
            print("  by position (TFLOP/s, slot 0..3):", rec["by_position"], flush=True)
            del q, k, v, qv, kv, vv, qc, kc, vc, out, out2, lse, impls
            torch.cuda.empty_cache()

    if args.only != "prefill":
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
        head = None
        for (B, S, hq, hkv) in DECODE_ROWS:
            if time.time() - t0 > args.deadline_s:
                emit(f"(deadline: decode row {B, S, hq, hkv} not run)")
                continue
            D = DECODE_D
            label = f"{B}, {S}, {hq}/{hkv}, {D}"
            before = smi()
            g = torch.Generator(device=dev).manual_seed(7)
            q = torch.randn(B, hq, 1, D, device=dev, dtype=torch.bfloat16, generator=g)
            k = torch.randn(B, hkv, S, D, device=dev, dtype=torch.bfloat16, generator=g)
            v = torch.randn(B, hkv, S, D, device=dev, dtype=torch.bfloat16, generator=g)
            qv, kv, vv = (t.transpose(1, 2) for t in (q, k, v))
            kc, vc = kv.contiguous(), vv.contiguous()
            seqlens = torch.full((B,), S, device=dev, dtype=torch.int32)
            out = torch.empty(B, 1, hq, D, device=dev, dtype=torch.bfloat16)
            out2 = torch.empty_like(out)
            lse = torch.empty(B, hq, 1, device=dev, dtype=torch.float32)
            impls = [("ours", ours.bind("smk_attention_decode", out, lse, qv, kv, vv, False, seqlens)),
                     ("ours bshd", ours.bind("smk_attention_decode", out2, lse, qv, kc, vc, False, seqlens))]
            marks, errs = {}, {}
            out.fill_(float("nan"))
            out2.fill_(float("nan"))
            impls[0][1]()
            impls[1][1]()
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                fn = sdpa_fn(backend, q, k, v, False, gqa=True)
                try:
                    ref = fn()
                    marks[name] = ""
                except RuntimeError:
                    try:  # the backend refused GQA: K and V expanded to Hq heads (it then reads Hq/Hkv the bytes)
                        ke, ve = (t.repeat_interleave(hq // hkv, dim=1) for t in (k, v))
                        fn = sdpa_fn(backend, q, ke, ve, False)
                        ref = fn()
                        marks[name] = " x"
                    except RuntimeError as e:
                        print(f"{name} failed on {label}: {str(e).splitlines()[0]}", flush=True)
                        continue
                ref = ref.transpose(1, 2).float()
                # torch's max keeps a NaN (Python's max(x, nan) returns x, so a poisoned, unwritten output would pass)
                errs[name] = torch.stack([(o.float() - ref).abs().max() for o in (out, out2)]).max().item()
                impls.append((name + marks[name], fn))
            torch.cuda.synchronize()
            bad = [n for n, e in errs.items() if not (e <= GATE)]
            kv_bytes = 2.0 * B * S * hkv * D * 2
            tb = lambda us: kv_bytes / (us * 1e-6) / 1e12
            times, pos = rounds(impls, args.rounds, args.decode_calls, torch, flush)
            after = smi()
            for n in list(times):  # ratios pair by the backend's plain name
                if n.endswith(" x"):
                    times[n[:-2]], pos[n[:-2]] = times.pop(n), pos.pop(n)
            cells, rnames, rec = summarize(label, "TB/s", tb, impls, times, pos, ["ours", "ours bshd"])
            if head is None:
                head = ["B, S, Hq/Hkv, D"] + [f"{n} TB/s" for n in times] + rnames + \
                       ["max abs err vs " + " / ".join(errs), "nvidia-smi before → after"]
                emit("\n## Decode (issue 8)\n")
                emit("| " + " | ".join(head) + " |")
                emit("|" + "---|" * len(head))
            cells += [" / ".join(f"{errs[n]:.3g}{marks[n]}" for n in errs) + (" FAILED GATE" if bad else ""),
                      f"{before} → {after}"]
            emit("| " + " | ".join(cells) + " |")
            rec.update({"row": [B, S, hq, hkv, D], "max_abs_err": errs, "marks": marks, "smi_before": before,
                        "smi_after": after, "kv_bytes": kv_bytes})
            record["decode"].append(rec)
            print("  by position (TB/s, slot 0..3):", rec["by_position"], flush=True)
            del q, k, v, qv, kv, vv, kc, vc, out, out2, lse, impls, seqlens
            torch.cuda.empty_cache()
    record["smi"].append(("end", smi()))
    emit(f"\nnvidia-smi at the end: {record['smi'][-1][1]}; {time.time() - t0:.0f} s in all")
    if args.json:
        json.dump(record, open(args.json, "w"), indent=1)
    gate_failed = any(not m.startswith("ok: ") for m in errors) or \
        any(not (e <= GATE) for r in record["prefill"] + record["decode"] for e in r["max_abs_err"].values())
    return 1 if gate_failed else 0


if __name__ == "__main__":
    sys.exit(main())
