#!/usr/bin/env python3
"""Debian's PyTorch with libhcops.so preloaded as its oneDNN: bf16 matmuls run in HCOps.

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON tests/torch/test_dnnl_torch.py

PyTorch 1.13 sends a bf16 product to oneDNN's matmul primitive (never to BLAS)
when the CPU has AVX-512 BW/VL/DQ and the product is larger than 16^3:
mm/addmm (Linear) through mkldnn_bf16_gemm when m*n*k > 4096, bmm/baddbmm when
b*m*n*k > 4096 (checked before bmm's own small-product loop), both operands and
the result bf16. Under torch.autocast("cpu", bfloat16) or with bf16 tensors,
the cases below reach it: F.linear with and without bias (2-D and 3-D input),
2-D matmul (also of a column slice: a row stride larger than its width),
matmul batched against a 2-D operand (folded into one 2-D product) and
against a broadcast batch, bmm, also of a transposed operand; forward and
backward, odd sizes. Then 5 AdamW steps of perf/dit/dit.py's DiT (its "mini"
configuration: DiT-S/2's blocks, 2 of them, batch 2) under bf16 autocast.

Three children run the same cases from the same seeds, 2 threads each:
stock PyTorch (ONEDNN_VERBOSE=1), LD_PRELOAD=$HCOPS_LIB (HCOPS_VERBOSE=1 and
ONEDNN_VERBOSE=1) and LD_PRELOAD with HCOPS_DNNL=0 (pure forwarding, cases
only). Each child writes oneDNN's verbose lines (stdout), HCOps' (stderr, put
on the same pipe) and a marker line before each case into one ordered stream,
and saves every output (forward result, then each input's gradient) with
torch.save. Checks:
- stock: every case reaches oneDNN's matmul (else the case tests nothing);
- preloaded: each case's outputs within the bound below of stock's; for each
  case and for the DiT steps, one `hcops_verbose,exec,cpu,matmul,hcops:...`
  line per matmul primitive stock oneDNN executed, with the same primitive
  kind, memory descriptors, attributes (scratchpad mode aside), aux and
  problem fields, and no oneDNN matmul executed; the DiT losses within 1e-2
  relative of stock at every step; no `hcops:` warning or error line;
- HCOPS_DNNL=0: outputs bitwise equal to stock, oneDNN's matmuls as stock's,
  no HCOps exec line.

Bound: both libraries multiply the same bf16 operands exactly in f32 and
accumulate in f32 (error at most k 2^-24 S each, S = sum_k |a||b| (+ |c| of
the sum post-op: Linear's bias), k the longest contraction of the case), then
round once to bf16, half an ulp each. So |hcops - stock| <= (k + 2) 2^-23 S +
1 bf16 ulp of max(|hcops|, |stock|) (2^(e-7) for 2^e <= |x|), plus 2^-7 S for
each intermediate bf16 rounding between the product and the output (one for
the weight gradient of a batch-broadcast matmul, a bf16 sum over the
broadcast of bf16 products). S is the case evaluated in float64 on the
absolute values of its bf16-rounded inputs and upstream gradient: every
output is a sum of products of those, so it is exactly sum |a||b|.

Exit status: 0 all passed, 1 something failed, 77 skipped (torch missing,
PyTorch not linked to a shared libdnnl, or not sending bf16 matmuls to oneDNN
on this CPU), 99 no HCOPS_LIB.
"""
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))  # harness: Report, library_or_exit
sys.path.insert(0, os.path.join(HERE, "..", "..", "perf", "dit"))
from harness import Report, library_or_exit  # noqa: E402
import time_limits  # noqa: E402  (harness put tests/ on the path)

PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
THREADS = 2
SEED = 1613
DIT_MODEL, DIT_BATCH, DIT_STEPS = "mini", 2, 5
LOSS_RTOL = 1e-2
CHILD_TIMEOUT_S = time_limits.limit(900)
HCOPS_EXEC = "hcops_verbose,exec,cpu,"
ONEDNN_EXEC = "onednn_verbose,exec,cpu,"
PRIMITIVES = ("matmul", "inner_product")


# ---------------------------------------------------------------- the cases
# Each: (name, mode, leaf shapes, forward(torch, *leaves), k = longest
# contraction, intermediate bf16 roundings of the outputs). mode "autocast":
# f32 leaves, forward under torch.autocast("cpu", bfloat16); "bf16": bf16
# leaves. Sizes are odd where PyTorch allows and every product is > 16^3.

def linear(torch, x, w, b=None):
    return torch.nn.functional.linear(x, w, b)


def matmul(torch, a, b):
    return torch.matmul(a, b)


def matmul_column_slice(torch, a, b):
    """a's first 65 columns: a row stride of 80 (lda > k) forward, and a
    transposed strided operand in the weight gradient."""
    return torch.matmul(a[:, :65], b)


def bmm(torch, a, b):
    return torch.bmm(a, b)


def bmm_transposed(torch, a, b):
    return torch.bmm(a, b.transpose(1, 2))


CASES = [
    ("Linear with bias, autocast", "autocast", [(33, 65), (47, 65), (47,)], linear, 65, 0),
    ("Linear without bias, autocast", "autocast", [(33, 65), (47, 65)], linear, 65, 0),
    ("Linear with bias, 3-D input, autocast", "autocast", [(3, 11, 64), (96, 64), (96,)], linear, 96, 0),
    ("Linear with bias, bf16 tensors", "bf16", [(40, 72), (56, 72), (56,)], linear, 72, 0),
    ("Linear without bias, bf16 tensors", "bf16", [(40, 72), (56, 72)], linear, 72, 0),
    ("matmul 2-D, bf16 tensors", "bf16", [(33, 65), (65, 47)], matmul, 65, 0),
    ("matmul 2-D, autocast", "autocast", [(48, 40), (40, 56)], matmul, 56, 0),
    ("matmul 2-D, column slice, bf16 tensors", "bf16", [(33, 80), (65, 47)], matmul_column_slice, 65, 0),
    ("matmul batched x 2-D, bf16 tensors", "bf16", [(2, 3, 17, 40), (40, 24)], matmul, 102, 0),
    ("matmul batched x broadcast batch, autocast", "autocast", [(2, 3, 20, 32), (1, 3, 32, 24)], matmul, 32, 1),
    ("bmm, bf16 tensors", "bf16", [(4, 21, 33), (4, 33, 19)], bmm, 33, 0),
    ("bmm, transposed operand, autocast", "autocast", [(4, 32, 64), (4, 48, 64)], bmm_transposed, 64, 0),
]


def emit(record):
    print(json.dumps(record), flush=True)


def run_case(torch, gen, mode, shapes, forward):
    """The forward result and every leaf's gradient of sum(y * dy), dy random
    bf16 values (so that the gradient flowing into the bf16 product is exact);
    and S, the same evaluated in f64 on the absolute values."""
    bf16 = torch.bfloat16
    leaves = [torch.randn(s, generator=gen) for s in shapes]
    upstream = []

    def evaluate(inputs, amp, dtype):
        inputs = [t.detach().requires_grad_() for t in inputs]
        if amp:
            with torch.autocast("cpu", dtype=bf16):
                y = forward(torch, *inputs)
        else:
            y = forward(torch, *inputs)
        if not upstream:
            upstream.append(torch.randn(y.shape, generator=gen).to(bf16))
        dy = upstream[0].to(dtype)
        (y.to(dtype) * (dy.abs() if dtype == torch.float64 else dy)).sum().backward()
        return [y.detach()] + [t.grad for t in inputs]

    if mode == "autocast":
        outs = evaluate(leaves, True, torch.float32)
    else:
        outs = evaluate([t.to(bf16) for t in leaves], False, torch.float32)
    scale = evaluate([t.to(bf16).double().abs() for t in leaves], False, torch.float64)
    return outs, scale


def run_dit(torch):
    from dit import CONFIGS, DiT, alphas_cumprod, make_batch, train_step
    torch.manual_seed(SEED)
    model = DiT(*CONFIGS[DIT_MODEL])
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    gen = torch.Generator().manual_seed(SEED)
    abar = alphas_cumprod()
    return [train_step(model, opt, abar, make_batch(gen, DIT_BATCH), "bf16") for _ in range(DIT_STEPS)]


def child(out_path, with_dit):
    # One ordered stream: oneDNN prints its verbose lines on stdout (and
    # flushes), HCOps writes its own to stderr, the markers go to stdout.
    os.dup2(1, 2)
    import torch
    torch.set_num_threads(THREADS)
    with open("/proc/self/maps") as f:
        dnnl = sorted({line.split()[-1] for line in f if "libdnnl.so" in line})
    emit({"torch": torch.__version__, "libdnnl": dnnl})
    results = {}
    for i, (name, mode, shapes, forward, _, _) in enumerate(CASES):
        emit({"case": name})
        gen = torch.Generator().manual_seed(SEED + i)
        results[name] = run_case(torch, gen, mode, shapes, forward)
    if with_dit:
        emit({"case": "DiT"})
        emit({"dit_losses": run_dit(torch)})
    emit({"case": None})
    torch.save(results, out_path)
    return 0


# --------------------------------------------------------------- parent side

class Run:
    """A finished child: exit status, its stream split by case, its JSON records."""

    def __init__(self, label, proc):
        self.label, self.returncode = label, proc.returncode
        self.lines = proc.stdout.splitlines()
        self.records, self.segments = [], collections.defaultdict(list)
        case = "start-up"
        for line in self.lines:
            if line.startswith("{"):
                try:
                    rec = json.loads(line)
                except ValueError:
                    rec = {}
                self.records.append(rec)
                if "case" in rec:
                    case = rec["case"] or "exit"
                    continue
            self.segments[case].append(line)

    def record(self, key):
        return next((r[key] for r in self.records if key in r), None)

    def tail(self, n=12):
        return "\n      ".join(self.lines[-n:])


def run_child(label, path, env_extra, with_dit):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HCOPS_", "ONEDNN_", "DNNL_", "OMP_", "LD_PRELOAD", "PYTHONPATH"))}
    env.update(OMP_NUM_THREADS=str(THREADS), ONEDNN_VERBOSE="1", **env_extra)
    cmd = [PYTHON, os.path.abspath(__file__), "--child", path] + (["--dit"] if with_dit else [])
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        proc = subprocess.CompletedProcess(cmd, f"timeout after {CHILD_TIMEOUT_S} s", out, "")
    run = Run(label, proc)
    if run.returncode != 0:
        print(f"    {label} child: exit {run.returncode}; output tail:\n      {run.tail()}")
    return run


def exec_keys(lines, prefix):
    """The primitives a verbose stream executed: (kind, prop, mds, attrs, aux,
    problem) of each exec line of prefix whose kind is matmul/inner_product;
    the scratchpad mode left out of attrs (HCOps has no scratchpad)."""
    keys = collections.Counter()
    for line in lines:
        if not line.startswith(prefix):
            continue
        f = line.split(",")
        if len(f) < 11 or f[3] not in PRIMITIVES:
            continue
        attrs = " ".join(sorted(a for a in f[7].split() if not a.startswith("attr-scratchpad:")))
        keys[(f[3], f[5], f[6], attrs, f[8], f[9])] += 1
    return keys


def implementations(lines, prefix):
    return collections.Counter(line.split(",")[4] for line in lines if line.startswith(prefix)
                               and len(line.split(",")) > 4 and line.split(",")[3] in PRIMITIVES)


def describe(keys, n=3):
    return "; ".join(f"{c}x {k[0]} {k[2]} {k[3] or '-'} {k[5]}" for k, c in list(keys.items())[:n])


def ulp_bf16(torch, x):
    """One bf16 ulp of |x| (0 for 0): 2^(e-7) for 2^e <= |x|."""
    e = torch.floor(torch.log2(torch.clamp(x.abs(), min=2.0 ** -126)))
    return torch.where(x == 0, torch.zeros_like(x), torch.pow(2.0, e - 7))


def compare(torch, got, ref, scale, k, roundings):
    """(ok, worst |got - ref| / bound, detail) under the bound of the docstring."""
    if got is None or ref is None:
        return got is None and ref is None, 0.0, "an output is undefined in one run only"
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False, math.inf, f"{got.dtype}{tuple(got.shape)} vs {ref.dtype}{tuple(ref.shape)}"
    g, r, s = got.double(), ref.double(), scale.double()
    if not (torch.isfinite(g).all() and torch.isfinite(r).all()):
        return False, math.inf, "non-finite values"
    bound = (k + 2) * 2.0 ** -23 * s + ulp_bf16(torch, torch.maximum(g.abs(), r.abs())) + roundings * 2.0 ** -7 * s
    err = (g - r).abs()
    ratio = float((err / torch.clamp(bound, min=1e-300)).max()) if err.numel() else 0.0
    bad = err > bound
    if not bad.any():
        return True, ratio, ""
    i = int(torch.nonzero(bad.reshape(-1))[0])
    return False, ratio, (f"{int(bad.sum())} of {err.numel()} beyond the bound, e.g. hcops {g.reshape(-1)[i]:.6g} "
                          f"stock {r.reshape(-1)[i]:.6g} bound {bound.reshape(-1)[i]:.3g}")


def rel_diff(x, y):
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.inf
    return abs(x - y) / max(abs(x), abs(y), 1e-30)


def check_values(report, torch, stock, other, label):
    for name, _, _, _, k, roundings in CASES:
        (ref, scale), (got, _) = stock[name], other[name]
        worst, details = 0.0, []
        ok = len(got) == len(ref)
        for i, (g, r, s) in enumerate(zip(got, ref, scale)):
            good, ratio, detail = compare(torch, g, r, s, k, roundings)
            ok, worst = ok and good, max(worst, ratio)
            if not good:
                details.append(f"{'forward' if i == 0 else f'gradient {i}'}: {detail}")
        report.check(ok, f"{label}: {name}: forward and gradients within the bf16 bound of stock",
                     "; ".join(details) if details else f"worst {worst:.2f} of the bound")


def check_bitwise(report, torch, stock, other, label):
    for name, *_ in CASES:
        ref, got = stock[name][0], other[name][0]
        same = len(ref) == len(got) and all(
            (a is None and b is None) or (a is not None and b is not None and a.dtype == b.dtype
                                          and a.shape == b.shape and torch.equal(a, b)) for a, b in zip(ref, got))
        report.check(same, f"{label}: {name}: outputs bitwise equal to stock")


def main():
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2], sys.argv[3:] == ["--dit"])
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {e}")
        return 77
    lib = library_or_exit()
    report = Report()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: os.path.join(tmp, f"{k}.pt") for k in ("stock", "hcops", "off")}
        stock = run_child("stock", paths["stock"], {}, with_dit=True)
        if stock.returncode != 0:
            report.check(False, "stock PyTorch child completed", f"exit {stock.returncode}")
            return report.finish()
        if not stock.record("libdnnl"):
            print(f"SKIP: PyTorch {stock.record('torch')} has no shared libdnnl.so loaded (linked statically?): "
                  "nothing to interpose")
            return 77
        if not any(exec_keys(stock.segments[name], ONEDNN_EXEC) for name, *_ in CASES):
            print("SKIP: stock PyTorch sent no bf16 matmul to oneDNN on this CPU (PyTorch 1.13 needs AVX-512 "
                  "BW/VL/DQ for that): nothing for HCOps to take")
            return 77
        print(f"PyTorch {stock.record('torch')}, {stock.record('libdnnl')}, {THREADS} threads; "
              f"oneDNN implementations in stock: {dict(implementations(stock.lines, ONEDNN_EXEC))}")
        hcops = run_child("preloaded", paths["hcops"], {"LD_PRELOAD": lib, "HCOPS_VERBOSE": "1"}, with_dit=True)
        off = run_child("HCOPS_DNNL=0", paths["off"], {"LD_PRELOAD": lib, "HCOPS_DNNL": "0"}, with_dit=False)
        report.check(hcops.returncode == 0, "preloaded child completed", f"exit {hcops.returncode}")
        report.check(off.returncode == 0, "HCOPS_DNNL=0 child completed", f"exit {off.returncode}")
        for run in (hcops, off):
            noise = [line for line in run.lines if line.startswith("hcops:")]
            report.check(not noise, f"{run.label}: no 'hcops:' warning or error", "; ".join(noise[:3]))
        results = {k: torch.load(p) if os.path.exists(p) else None for k, p in paths.items()}

    for name, *_ in CASES:
        want = exec_keys(stock.segments[name], ONEDNN_EXEC)
        report.check(bool(want), f"stock: {name}: reaches oneDNN's matmul",
                     f"{sum(want.values())} primitives: {describe(want)}")
    for segment in [name for name, *_ in CASES] + ["DiT"]:
        want = exec_keys(stock.segments[segment], ONEDNN_EXEC)
        got = exec_keys(hcops.segments[segment], HCOPS_EXEC)
        left = exec_keys(hcops.segments[segment], ONEDNN_EXEC)
        missing, extra = want - got, got - want
        report.check(bool(want) and not missing and not extra and not left,
                     f"preloaded: {segment}: every matmul ran in HCOps, verbose fields as oneDNN's",
                     f"{sum(got.values())} HCOps lines for {sum(want.values())} oneDNN primitives in stock; "
                     f"missing: {describe(missing) or '-'}; unexpected: {describe(extra) or '-'}; "
                     f"left to oneDNN: {describe(left) or '-'}" if missing or extra or left or not want else
                     f"{sum(got.values())} primitives, {dict(implementations(hcops.segments[segment], HCOPS_EXEC))}")
    for name, *_ in CASES:
        want = exec_keys(stock.segments[name], ONEDNN_EXEC)
        got = exec_keys(off.segments[name], ONEDNN_EXEC)
        ours = exec_keys(off.segments[name], HCOPS_EXEC)
        report.check(got == want and not ours, f"HCOPS_DNNL=0: {name}: oneDNN executed stock's matmuls, HCOps none",
                     f"oneDNN {sum(got.values())} (stock {sum(want.values())}), HCOps {sum(ours.values())}")

    ls, lh = stock.record("dit_losses"), hcops.record("dit_losses")
    ok = bool(ls) and bool(lh) and len(ls) == len(lh) == DIT_STEPS
    rel = max((rel_diff(x, y) for x, y in zip(ls, lh)), default=math.inf) if ok else math.inf
    report.check(ok and rel <= LOSS_RTOL,
                 f"preloaded: DiT-{DIT_MODEL}/2 batch {DIT_BATCH}, {DIT_STEPS} bf16-autocast steps: losses within "
                 f"{LOSS_RTOL:g} relative of stock", f"max rel diff {rel:.2e}; stock {ls}; preloaded {lh}")

    if results["stock"] is None:
        report.check(False, "stock child saved its outputs")
        return report.finish()
    if results["hcops"] is not None:
        check_values(report, torch, results["stock"], results["hcops"], "preloaded")
    if results["off"] is not None:
        check_bitwise(report, torch, results["stock"], results["off"], "HCOPS_DNNL=0")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
