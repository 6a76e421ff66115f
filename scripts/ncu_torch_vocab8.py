"""torch.compile's softmax / log-softmax kernels on 4096x151936 for Nsight Compute (vocab8, issue 3).

Run under `ncu --profile-from-start off`: each case is compiled and run once outside the profiled range (compilation
and any autotuning are not profiled), then called once between cudaProfilerStart / cudaProfilerStop. With
TORCH_LOGS=output_code in the environment, Inductor prints the generated Triton source (grid, block sizes, passes,
eviction hints) to stderr.
  usage: python3 scripts/ncu_torch_vocab8.py [op:dtype ...]   (default: softmax:f32 log_softmax:bf16)
"""
import sys

import torch


def main() -> None:
    specs = sys.argv[1:] or ["softmax:f32", "log_softmax:bf16"]
    rows, n = 4096, 151936
    for spec in specs:
        op, dt = spec.split(":")
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dt]
        torch._dynamo.reset()
        x = torch.randn(rows, n, device="cuda", dtype=dtype)
        fn = torch.softmax if op == "softmax" else torch.log_softmax
        compiled = torch.compile(lambda t: fn(t, dim=-1))
        compiled(x)
        torch.cuda.synchronize()
        print(f"=== {op} {dt} {rows}x{n}: compiled, profiling one call", flush=True)
        torch.cuda.profiler.start()
        compiled(x)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
