"""torch.compile's softmax kernels at 1048576x32 (f32 and bf16), for Nsight Compute beside ours (short12, session 12).

Run under `ncu --profile-from-start off ...` (scripts/device.sh short12): the compile, its autotuning and a warm-up run
outside the profiled range; then, once the file named by SMK_S12_GO exists (the step's GPU tests have finished, so
no other process shares the GPU while ncu measures), one call of each compiled function between cudaProfilerStart /
Stop. The outputs are checked against a float64 softmax first, so the kernels profiled are ones that compute the op.
After the run it lists the global loads and stores and the launch bounds in the PTX Triton wrote to TRITON_CACHE_DIR.
"""

import collections
import os
import pathlib
import re
import time

import torch


def main() -> None:
    torch.manual_seed(0)
    xs = {
        "f32": torch.randn(1048576, 32, device="cuda", dtype=torch.float32),
        "bf16": torch.randn(1048576, 32, device="cuda", dtype=torch.bfloat16),
    }
    fn = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    for _ in range(3):
        outs = {k: fn(x) for k, x in xs.items()}
    torch.cuda.synchronize()
    for k, x in xs.items():
        err = (outs[k].double() - torch.softmax(x.double(), -1)).abs().max().item()
        print(f"{k} max abs err against float64: {err:.3g}", flush=True)
    go = os.environ.get("SMK_S12_GO")
    deadline = time.monotonic() + float(os.environ.get("SMK_S12_WAIT_S", "60"))
    while go and not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.2)
    print("go file seen" if not go or os.path.exists(go) else "go file not seen: profiling anyway", flush=True)
    torch.cuda.cudart().cudaProfilerStart()
    for x in xs.values():
        fn(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()

    cache = os.environ.get("TRITON_CACHE_DIR")
    if cache:
        for ptx in sorted(pathlib.Path(cache).rglob("*.ptx")):
            text = ptx.read_text()
            name = re.search(r"\.entry\s+(\w+)", text)
            ops = collections.Counter(re.findall(r"\b((?:ld|st)\.global[\w.:]*)", text))
            print(f"PTX {name.group(1) if name else ptx.name}: " + ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
            for line in text.splitlines():
                if ".maxntid" in line or ".reqntid" in line:
                    print("   ", line.strip())


if __name__ == "__main__":
    main()
