"""Whether stock PyTorch runs bf16 autocast at all on this machine: a step
of DiT's layer kinds (the patch embedding's Conv2d, a Linear), forward and
backward, on PyTorch's own kernels, in a child with no HCOps in it. Debian's
arm64 PyTorch 1.13 does not: its oneDNN 2.6 has no bf16 convolution on
AArch64 ("could not create a primitive descriptor iterator"), so there is no
stock bf16 step to compare with. Read by the demo (perf/dit/demo.py) and
tests/torch/test_dit_ops.py."""
import os
import subprocess

PROBE = r"""
import torch
conv, lin = torch.nn.Conv2d(4, 8, 2, 2), torch.nn.Linear(8, 8)
x = torch.randn(2, 4, 8, 8)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = lin(conv(x).flatten(2).transpose(1, 2))
y.float().sum().backward()
"""


def stock_bf16_error(python, timeout):
    """'' if python's stock PyTorch runs the probe, else its error's last
    line. A timeout is not a refusal (''): the caller's own runs say what
    happens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HCOPS_", "LD_PRELOAD"))}
    try:
        p = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ""
    return "" if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
