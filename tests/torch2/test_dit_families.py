"""DiT training under hcops-run on every kernel family this CPU runs, against
stock PyTorch 2.x (issue 50: the aarch64 wheel under QEMU, at each vector
length `make check-aarch64` emulates; on x86-64 the same on its families).

For each family F (hcops-info --families; HCOPS_TEST_FAMILIES restricts) and
each model of DIT_FAMILIES_MODELS (default "tiny"; make check-aarch64 adds
"S:1", DiT-S/2 at batch 1, on QEMU's default vector lengths; MODEL:BATCH
sets a model's batch), perf/dit/dit.py trains DIT_STEPS steps (default 3)
at batch DIT_BATCH (default 2), 2 threads, attention through
scaled_dot_product_attention as timm's DiT on 2.x does, in f32 and under
bf16 autocast:
- stock: the venv's python alone (no hcops-run, no preload), once per model
  and precision;
- hcops: under hcops-run with HCOPS_ISA=F and HCOPS_VERBOSE=1.
- preload: f32 under hcops-run --no-ops (libhcops.so alone, no PyTorch
  layer), once per model.
Checks, per family, model and precision:
- every step's loss within 1e-5 relative of stock's in f32, 1e-2 in bf16;
- the last step's gradient norm of each parameter within 1e-5 relative in
  f32, 1e-2 in bf16 (of the largest, for the near-zero ones of the zero-
  initialized gates): the losses alone hardly move in a few steps;
- HCOps ran the step: verbose exec lines of the dispatcher's GEMMs
  (aten::mm / addmm / bmm), of attention and of the fused AdamW;
- which family ran each call: each dtype's GEMMs all on one family, F (the
  family forced) or the one below it that has kernels for that dtype;
  attention and AdamW on one family, F or the one whose operators F uses;
  the count of GEMM calls per family is printed.
And under the preload alone: losses within 1e-5 of stock, and where the
wheel calls a BLAS library of its own (the aarch64 wheels' OpenBLAS), its
GEMMs taken by HCOps (verbose lines of ?gemm_).
Prints "N passed, M failed"; exit 0 / 1; 99 without hcops-run or hcops-info.

Run by tests/torch2/test_dit_families.sh (PYTHON: the 2.x python).
"""
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))  # harness.Report: the PASS/FAIL lines
from harness import Report  # noqa: E402
import time_limits  # noqa: E402  (harness put tests/ on the path)
DIT = os.path.join(HERE, "..", "..", "perf", "dit", "dit.py")
# The children run this interpreter (PYTHON may be a wrapper that enters
# an emulated root, which this process is in already).
PYTHON = sys.executable
RUN = os.environ.get("HCOPS_RUN", "../tools/hcops-run")
INFO = os.environ.get("HCOPS_INFO", "../tools/hcops-info")
MODELS = os.environ.get("DIT_FAMILIES_MODELS", "tiny").split()
STEPS = int(os.environ.get("DIT_STEPS", "3"))
BATCH = int(os.environ.get("DIT_BATCH", "2"))
LOSS_RTOL = {"none": 1e-5, "bf16": 1e-2}
GRAD_RTOL = {"none": 1e-5, "bf16": 1e-2}
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
TIMEOUT_S = time_limits.limit(450)  # 3600 s under QEMU (DiT-S/2 there)


def families():
    """The families to run: hcops-info's, restricted by HCOPS_TEST_FAMILIES
    (each of which must run here: a run meant for a family never skips it)."""
    here = subprocess.run([INFO, "--families"], capture_output=True, text=True, check=True).stdout.split()
    wanted = os.environ.get("HCOPS_TEST_FAMILIES", "").split()
    missing = [f for f in wanted if f not in here]
    if missing:
        raise SystemExit(f"FAIL: HCOPS_TEST_FAMILIES names {missing}, which this CPU does not run (runs: {here})")
    return here, [f for f in here if not wanted or f in wanted]


def dynamic_blas():
    """The BLAS library the wheel's libtorch_cpu loads, if it is a library of
    its own (the aarch64 wheels' OpenBLAS), which a preloaded libhcops.so
    then takes the GEMMs of; None where it is linked in (the x86-64 wheels'
    MKL)."""
    code = ("import os, torch; d = os.path.join(os.path.dirname(torch.__file__), 'lib'); "
            "print(' '.join(f for f in os.listdir(d) if f.startswith(('libopenblas', 'libblas', 'libmkl_rt'))))")
    p = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S)
    return p.stdout.split()[0] if p.returncode == 0 and p.stdout.split() else None


def model_and_batch(spec):
    """("S", 1) for "S:1", (spec, DIT_BATCH) without a batch."""
    name, _, batch = spec.partition(":")
    return name, int(batch) if batch else BATCH


def dit(spec, amp, hcops_isa=None, run_args=None):
    """(result of dit.py --json or None, stderr); under hcops-run RUN_ARGS
    when given (the families' runs: none)."""
    # As a user runs it: no HCOps setting of the tests', no preload but hcops-run's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCOPS_") and k != "LD_PRELOAD"}
    model, batch = model_and_batch(spec)
    argv = [PYTHON, DIT, "--model", model, "--batch", str(batch), "--steps", str(STEPS), "--warmup", "0",
            "--threads", "2", "--attention", "sdpa", "--autocast", amp, "--json"]
    if hcops_isa or run_args is not None:
        env.update(HCOPS_VERBOSE="1")
        if hcops_isa:
            env.update(HCOPS_ISA=hcops_isa)
        argv = [RUN] + (run_args or []) + ["--"] + argv
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{") and p.returncode == 0:
            return json.loads(line), p.stderr
    return None, p.stderr


def calls_by_family(stderr):
    """{(routine, dtype): Counter(impl)} from the verbose exec lines, their
    columns named by the legend lines (one for GEMMs, one for operators)."""
    legends, found = [], collections.defaultdict(collections.Counter)
    for line in stderr.splitlines():
        cols = line.split(",")
        if cols[:2] == ["hcops_verbose", "legend"]:
            legends.append(cols[2:])
        elif cols[:2] == ["hcops_verbose", "exec"]:
            for legend in legends:  # the legend of as many columns (no column holds a comma)
                if len(cols) - 2 == len(legend) and "impl" in legend:
                    row = dict(zip(legend, cols[2:]))
                    name = row.get("routine") or row.get("op")
                    if name is None:
                        continue
                    # The GEMM lines name the dtype among their details; the operators' in a column.
                    dtype = row.get("dtype") or ("bf16" if "dtype=bf16" in line else "f32")
                    found[(name, dtype)][row["impl"]] += 1
                    break
    return found


def main():
    report = Report()
    check = report.check
    for tool in (RUN, INFO):
        if not os.access(tool, os.X_OK):
            print(f"FAIL: no {tool}")
            return 99
    here, fams = families()
    blas_lib = dynamic_blas()
    print(f"== families here: {' '.join(here)}; run: {' '.join(fams)}; models {MODELS} (default batch {BATCH}), "
          f"{STEPS} steps", flush=True)
    for model in MODELS:
        for amp in ("none", "bf16"):
            stock, err = dit(model, amp)
            check(stock is not None, f"DiT-{model} {amp}: stock steps", err[-1500:])
            if stock is None:
                continue
            print(f"   stock losses {['%.7f' % v for v in stock['losses']]}", flush=True)
            # The preload alone (hcops-run --no-ops: libhcops.so, no PyTorch
            # layer): where the wheel calls a BLAS library of its own, its
            # f32 GEMMs reach HCOps through BLAS.
            if amp == "none":
                ours, err = dit(model, amp, run_args=["--no-ops"])
                check(ours is not None and max(abs(a - b) / max(abs(b), 1e-12) for a, b in
                                               zip(ours["losses"], stock["losses"])) <= LOSS_RTOL[amp],
                      f"DiT-{model} {amp} under the preload alone: losses within {LOSS_RTOL[amp]:g} of stock",
                      err[-1500:] if ours is None else f"{ours['losses']} vs {stock['losses']}")
                blas = sum(n for (name, _), impls in calls_by_family(err).items() if name.endswith("gemm_")
                           for n in impls.values())
                if blas_lib:
                    check(blas > 0, f"DiT-{model} {amp} under the preload alone: HCOps took the wheel's BLAS GEMMs "
                          f"({blas} calls; the wheel's {blas_lib})")
                else:
                    # (The x86-64 wheels' MKL is linked into libtorch_cpu, yet
                    # its sgemm_ is called through the PLT: the preload takes
                    # it; not checked, as nothing promises that.)
                    print(f"   the wheel links its BLAS in; the preload alone took {blas} of its GEMMs", flush=True)
            for fam in fams:
                what = f"DiT-{model} {amp} on {fam}"
                ours, err = dit(model, amp, fam)
                check(ours is not None, f"{what}: steps under hcops-run", err[-1500:])
                if ours is None:
                    continue
                rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(ours["losses"], stock["losses"]))
                check(rel <= LOSS_RTOL[amp] and len(ours["losses"]) == len(stock["losses"]),
                      f"{what}: losses within {LOSS_RTOL[amp]:g} of stock ({rel:.2g})",
                      f"{ours['losses']} vs {stock['losses']}")
                # Each parameter's gradient norm of the last step, relative to
                # the largest (the zero-initialized gates' are ~0); a gradient
                # one side has and the other not is a difference too.
                top = max(abs(g) for g in stock["grad_norms"] if g is not None)
                pairs = list(zip(ours["grad_norms"], stock["grad_norms"]))
                grel = max((abs(a - b) / max(abs(b), 1e-3 * top) if a is not None and b is not None
                            else 0.0 if a is None and b is None else float("inf")) for a, b in pairs)
                check(grel <= GRAD_RTOL[amp] and len(ours["grad_norms"]) == len(stock["grad_norms"]),
                      f"{what}: the last step's gradient norms within {GRAD_RTOL[amp]:g} of stock ({grel:.2g})")
                calls = calls_by_family(err)
                gemms = {k: v for k, v in calls.items() if k[0] in GEMMS}
                attention = {k: v for k, v in calls.items() if k[0].startswith("_scaled_dot_product")}
                adam = {k: v for k, v in calls.items() if k[0].startswith("adam_step")}
                check(bool(gemms) and bool(attention) and bool(adam),
                      f"{what}: HCOps ran the GEMMs, attention and AdamW",
                      f"verbose exec lines: {sorted(calls)}")
                # The GEMMs of each dtype all on one family, F or the one F's
                # products of that dtype fall to (a family has kernels for
                # some dtypes: avx512_bf16's f32 runs on avx512, neon's bf16
                # on generic), never a family above F; attention and AdamW
                # likewise on one family, F or the one whose operators F
                # uses (sme and sve_bf16 have none of their own: sve).
                stray, impls_of = [], collections.defaultdict(set)
                below = {f"hcops:{f}" for f in here[here.index(fam):]}
                for (name, dtype), impls in calls.items():
                    kind = ("GEMMs" if name in GEMMS else
                            "operators" if name.startswith(("_scaled_dot_product", "adam_step")) else None)
                    if kind is None:
                        continue
                    impls_of[f"{dtype} {kind}" if kind == "GEMMs" else kind].update(impls)
                    stray += [f"{name} {dtype} on {impl}" for impl in impls if impl not in below]
                stray += [f"{what_ran} on {len(i)} families ({sorted(i)})" for what_ran, i in impls_of.items()
                          if len(i) > 1]
                check(not stray, f"{what}: each dtype's GEMMs, and attention and AdamW, on one family at or "
                      f"below {fam}", "; ".join(sorted(set(stray))))
                print(f"   {what}: attention and AdamW on {sorted(impls_of['operators'])}", flush=True)
                ran = collections.Counter()
                for (name, dtype), impls in gemms.items():
                    ran.update({f"{dtype} {impl}": n for impl, n in impls.items()})
                print(f"   {what}: GEMM calls {dict(ran)}; losses {['%.7f' % v for v in ours['losses']]}",
                      flush=True)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
