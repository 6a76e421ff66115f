"""torch.compile's softmax backward at bf16 1048576x32 and 262144x128, for Nsight Compute beside ours (sbwd12, session 12).

Run under `ncu --profile-from-start off ...` (scripts/device.sh sbwd12). The op is the one scripts/compare_torch.py
compiles (aten._softmax_backward_data(dy, y, -1, dtype), dynamic=False). The compile, its autotuning and a warm-up run
happen outside the profiled range; the outputs are checked against a float64 softmax backward first, so the kernels
profiled are ones that compute the op. Then, once the file named by SMK_SB12_GO exists (the step's GPU tests are done,
so no other process shares the GPU while ncu measures), one call of each shape between cudaProfilerStart / Stop.
"""

import os
import time

import torch


def main() -> None:
    torch.manual_seed(0)
    cases = {}
    for rows, n in ((1048576, 32), (262144, 128)):
        y = torch.softmax(torch.randn(rows, n, device="cuda", dtype=torch.float32), -1).to(torch.bfloat16)
        dy = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
        cases[f"{rows}x{n}"] = (y, dy)
    fn = torch.compile(lambda y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype), dynamic=False)
    outs = {}
    for _ in range(3):
        outs = {k: fn(y, dy) for k, (y, dy) in cases.items()}
    torch.cuda.synchronize()
    for k, (y, dy) in cases.items():
        yd, dyd = y.double(), dy.double()
        ref = yd * (dyd - (dyd * yd).sum(-1, keepdim=True))
        err = (outs[k].double() - ref).abs().max().item()
        print(f"bf16 {k} softmax backward: max abs err against float64 {err:.3g}", flush=True)
    go = os.environ.get("SMK_SB12_GO")
    deadline = time.monotonic() + float(os.environ.get("SMK_SB12_WAIT_S", "60"))
    while go and not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.2)
    print("go file seen" if not go or os.path.exists(go) else "go file not seen: profiling anyway", flush=True)
    torch.cuda.cudart().cudaProfilerStart()
    for y, dy in cases.values():
        fn(y, dy)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
