"""Whether stock PyTorch runs bf16 autocast at all on this machine, and how
fast against f32.

The first: a step of DiT's layer kinds (the patch embedding's Conv2d, a
Linear), forward and backward, on PyTorch's own kernels, in a child with no
HCOps in it. Debian's arm64 PyTorch 1.13 does not run it: its oneDNN 2.6 has
no bf16 convolution on AArch64 ("could not create a primitive descriptor
iterator"), so there is no stock bf16 step to compare with. Read by the demo
(perf/dit/demo.py) and tests/torch/test_dit_ops.py.

The second: a Linear's forward and backward in f32 and in bf16. On a CPU
without bf16 instructions and without AVX-512 (a 2-core Zen 3, 2026-12-03),
stock PyTorch's bf16 one took 14x (the 2.x wheel) and 25x (Debian's 1.13) as
long as its f32 one, and a DiT-S/2 step a minute or more; the demo then
times bf16 briefly (perf/dit/demo.py)."""
import os
import subprocess


def _stock_env(env):
    """env without HCOps in it: no HCOPS_* variable, no LD_PRELOAD."""
    return {k: v for k, v in env.items() if not k.startswith(("HCOPS_", "LD_PRELOAD"))}


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
    env = _stock_env(os.environ)
    try:
        p = subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return ""
    return "" if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]


SPEED_PROBE = r"""
import sys, time, torch
threads, m, k, n, reps = map(int, sys.argv[1:])
torch.set_num_threads(threads)
torch.manual_seed(0)
lin = torch.nn.Linear(k, n)
x = torch.randn(m, k, requires_grad=True)


def once(bf16):
    t = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        y = lin(x)
    y.float().sum().backward()
    return time.perf_counter() - t


out = []
for bf16 in (False, True):
    once(bf16)  # first call: oneDNN's primitive creation, first touch
    out.append(min(once(bf16) for _ in range(reps)))
print(*out)
"""

# DiT-S/2's MLP up-projection at batch 4: 1024 tokens of 384 to 1536.
SPEED_SHAPE = (1024, 384, 1536)


class SpeedProbeError(Exception):
    """Why stock bf16 could not be timed; timed_out when the probe ran out
    of time (bf16 far slower than any step one would time)."""

    def __init__(self, why, timed_out=False):
        super().__init__(why)
        self.timed_out = timed_out


def stock_bf16_times(python, env, timeout, shape=SPEED_SHAPE, reps=2):
    """(f32 s, bf16 s): the best of reps calls, after one, of a Linear's
    forward and backward (m x k input, k to n) in f32 and under bf16
    autocast, on stock PyTorch in a child with env (its threads set there:
    torch.set_num_threads does not reach OpenBLAS's pool); HCOps and
    LD_PRELOAD are taken out of it. SpeedProbeError if it could not be
    timed."""
    env = _stock_env(env)
    threads = env.get("OMP_NUM_THREADS") or str(os.cpu_count())
    cmd = [python, "-c", SPEED_PROBE, threads, *map(str, shape), str(reps)]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SpeedProbeError(f"not timed within {timeout} s", timed_out=True) from None
    except OSError as e:
        raise SpeedProbeError(f"{python}: {e.strerror}") from None
    if p.returncode != 0:
        raise SpeedProbeError((p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    # The last line: a runtime's own verbose output (ONEDNN_VERBOSE) may come before it.
    last = (p.stdout.strip().splitlines() or [""])[-1]
    try:
        f32, bf16 = map(float, last.split())
    except ValueError:
        raise SpeedProbeError(f"no times printed (last line {last!r})") from None
    return f32, bf16
