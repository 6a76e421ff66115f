"""torch.compile's logsumexp over 4096x16384 f32 for Nsight Compute (scripts/device.sh `lse10`).

Compiles it (dynamic=False, as scripts/compare_torch.py does), runs it a few times so that compilation and any
autotuning are over, then calls it once between cudaProfilerStart and cudaProfilerStop: run it under
`ncu --profile-from-start off` and only that launch is profiled. (scripts/ncu_torch_mid8.py, less its backward op.)
"""
import torch


def main() -> int:
    torch.manual_seed(0)
    x = torch.randn(4096, 16384, device="cuda", dtype=torch.float32) * 4 + 20
    lse = torch.compile(lambda t: torch.logsumexp(t, dim=-1), dynamic=False)
    for _ in range(3):
        lse(x)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    lse(x)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
