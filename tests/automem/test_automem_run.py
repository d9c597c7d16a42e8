#!/usr/bin/env python3
"""hcops-run --automem on an unmodified training script: AutoMem is applied to
the model an optimizer is given, and to nothing else.

  HCOPS_RUN=/abs/path/hcops-run $PYTHON tests/automem/test_automem_run.py

The script (written here, knowing nothing of HCOps) trains a three-layer model
with tied weights, keeps an EMA copy no optimizer steps, and prints its losses,
the SHA-256 of its parameters and which hcops modules got loaded. Cases:
- --automem with node 0 named fast (HCOPS_MEM_FAST_NODES=0) and a budget that
  forces moves: the HCOPS_MEM_STATS report names one model (not the EMA copy),
  prefetches and offloads, high-water within the budget; losses and parameters
  bitwise those of --mem alone; hcops.torch and hcops.automem both loaded;
- --no-ops --automem: hcops.automem loaded and active, hcops.torch not;
- --dry-run says HCOPS_RUN_HOOKS=ops,automem and preloads libhcops_mem.so;
- HCOPS_MEM_STATS gives one libhcops_mem report, the script's: the tools
  hcops-run runs before it (lstopo, awk) do not load the libraries;
- this machine as it is (no fast tier) with HCOPS_VERBOSE=1: one info line says
  AutoMem does nothing, the report says inactive, results the same.

Exit status: 0 all passed, 1 something failed, 77 torch missing (skip), 99 no hcops-run.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import Report  # noqa: E402
import time_limits  # noqa: E402  (harness put tests/ on the path)

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"SKIP: torch: {e}")
    sys.exit(77)

SCRIPT = r'''
import copy, hashlib, json, sys
import torch
from torch import nn
torch.manual_seed(0)
torch.set_num_threads(1)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(512, 1024)      # 2 MiB weights: libhcops_mem blocks
        self.b = nn.Linear(1024, 512)
        self.c = nn.Linear(512, 1024)
        self.c.weight = self.a.weight      # tied
    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x))))).sum(dim=1)

model = Net()
ema = copy.deepcopy(model).requires_grad_(False)
opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0)
gen = torch.Generator().manual_seed(1)
losses = []
for step in range(5):
    x = torch.randn(64, 512, generator=gen)
    loss = (model(x) ** 2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(p, alpha=0.1)
    losses.append(loss.item())
h = hashlib.sha256()
for p in list(model.parameters()) + list(ema.parameters()):
    h.update(p.detach().numpy().tobytes())
print(json.dumps({"losses": losses, "sha": h.hexdigest(),
                  "ops": "hcops.torch" in sys.modules, "automem": "hcops.automem" in sys.modules}))
'''
BUDGET = 5 << 20  # two of the three 2 MiB weights


def main():
    report = Report()
    hcops_run = os.environ.get("HCOPS_RUN")
    if not hcops_run or not os.access(hcops_run, os.X_OK):
        print("ERROR: HCOPS_RUN must name hcops-run")
        return 99
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "train.py")
        with open(script, "w") as f:
            f.write(SCRIPT)

        def run(opts, **env_extra):
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("HCOPS_VERBOSE", "HCOPS_MEM_", "HCOPS_AUTOMEM", "HCOPS_RUN_HOOKS"))}
            env["OMP_NUM_THREADS"] = "1"
            env.update(env_extra)
            p = subprocess.run([hcops_run, *opts, sys.executable, script], env=env, capture_output=True,
                               text=True, timeout=time_limits.limit(300))
            out = None
            for line in p.stdout.splitlines():
                if line.startswith("{"):
                    out = json.loads(line)
            if p.returncode != 0 or out is None:
                report.check(False, f"{' '.join(opts)}: exit {p.returncode}; stderr: {p.stderr[-1500:]}")
            return out or {}, p.stderr

        base, _ = run(["--mem"])
        report.check(bool(base.get("losses")), f"--mem alone trains: losses {base.get('losses')}")

        out, err = run(["--automem"], HCOPS_MEM_FAST_NODES="0", HCOPS_AUTOMEM_FAST_BYTES=str(BUDGET),
                       HCOPS_MEM_STATS="1")
        report.check(out.get("losses") == base.get("losses") and out.get("sha") == base.get("sha"),
                     "--automem (fast node 0, 5 MiB budget): losses and parameters bitwise those of --mem")
        report.check(out.get("ops") is True and out.get("automem") is True,
                     f"--automem loads hcops.torch and hcops.automem: {out.get('ops')}, {out.get('automem')}")
        m = re.search(r"hcops_automem: (\d+) model\(s\), budget ([\d.]+) MiB .*high-water ([\d.]+) MiB", err)
        report.check(m is not None and m[1] == "1", f"one model under AutoMem (the EMA copy is not): {m and m[0]}")
        if m:
            report.check(float(m[3]) <= float(m[2]) and float(m[2]) == BUDGET / 2**20,
                         f"high-water {m[3]} MiB within the budget {m[2]} MiB")
        reports = [line for line in err.splitlines() if line.startswith("hcops_mem:") and "large allocations" in line]
        report.check(len(reports) == 1, f"one libhcops_mem report, the script's (hcops-run's own tools run "
                                        f"without the preloads): {len(reports)}")
        mv = re.search(r"prefetched ([\d.]+) MiB in (\d+) moves, .* offloaded ([\d.]+) MiB in (\d+)", err)
        report.check(mv is not None and int(mv[2]) > 0 and int(mv[4]) > 0,
                     f"tensors were prefetched and offloaded: {mv and mv[0]}")

        out, err = run(["--no-ops", "--automem"], HCOPS_MEM_FAST_NODES="0", HCOPS_AUTOMEM_FAST_BYTES=str(BUDGET),
                       HCOPS_MEM_STATS="1")
        report.check(out.get("ops") is False and out.get("automem") is True and "1 model(s)" in err,
                     f"--no-ops --automem: AutoMem without the operators (ops {out.get('ops')}, "
                     f"automem {out.get('automem')})")
        # Without the operators the GEMMs go through sgemm_ rather than the
        # dispatcher (another operand order and bias rounding): the reference
        # is --no-ops --mem.
        base_no_ops, _ = run(["--no-ops", "--mem"])
        report.check(out.get("sha") == base_no_ops.get("sha"), "--no-ops --automem: the parameters of --no-ops --mem")

        p = subprocess.run([hcops_run, "--automem", "--dry-run", "true"], capture_output=True, text=True,
                           timeout=time_limits.limit(60))
        report.check("HCOPS_RUN_HOOKS=ops,automem" in p.stdout and "libhcops_mem.so" in p.stdout,
                     f"--dry-run: hooks and preload shown: {p.stdout.strip()[:300]}")

        out, err = run(["--automem"], HCOPS_VERBOSE="1", HCOPS_MEM_STATS="1")
        info = [line for line in err.splitlines() if line.startswith("hcops_verbose,info,automem:")]
        report.check(len(info) == 1 and "does nothing" in info[0],
                     f"no fast tier: one info line says AutoMem does nothing: {info}")
        report.check("hcops_automem: inactive" in err, "no fast tier: the report says inactive")
        report.check(out.get("sha") == base.get("sha"), "no fast tier: the same parameters")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
