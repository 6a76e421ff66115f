"""torch.compile's generated kernels for two short-row cases, for Nsight Compute (short8, session 8).

Run under `ncu --profile-from-start off ...`: the compile, its autotuning and a warm-up run outside the profiled range;
then one call of each compiled function between cudaProfilerStart / Stop, so ncu sees exactly those kernels:
  f32 262144x128 softmax, and bf16 1048576x32 softmax backward (aten._softmax_backward_data, as compare_torch.py).
TORCH_LOGS=output_code (set by scripts/device.sh) prints the generated Triton source; after the run this script lists
the global loads and stores (with their cache qualifiers) in the PTX Triton wrote to TRITON_CACHE_DIR.
"""

import collections
import os
import pathlib
import re

import torch


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(262144, 128, device="cuda", dtype=torch.float32)
    y = torch.softmax(torch.randn(1048576, 32, device="cuda", dtype=torch.float32), -1).to(torch.bfloat16)
    dy = torch.randn(1048576, 32, device="cuda", dtype=torch.bfloat16)
    fwd = torch.compile(lambda t: torch.softmax(t, -1), dynamic=False)
    bwd = torch.compile(lambda a, b: torch.ops.aten._softmax_backward_data(b, a, -1, a.dtype), dynamic=False)
    for _ in range(3):
        out_f = fwd(x)
        out_b = bwd(y, dy)
    torch.cuda.synchronize()
    # The outputs are right (so the kernels profiled are the ones that compute the op).
    ref_f = torch.softmax(x.double(), -1)
    yd, dyd = y.double(), dy.double()
    ref_b = yd * (dyd - (dyd * yd).sum(-1, keepdim=True))
    print("fwd max abs err", (out_f.double() - ref_f).abs().max().item())
    print("bwd max abs err", (out_b.double() - ref_b).abs().max().item(), flush=True)
    torch.cuda.cudart().cudaProfilerStart()
    fwd(x)
    bwd(y, dy)
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
                if ".maxntid" in line or ".reqntid" in line or "createpolicy" in line:
                    print("   ", line.strip())


if __name__ == "__main__":
    main()
