#!/usr/bin/env python3
"""The PyTorch side of perf/ops_bench.py: a process that stays up for the whole
run and times what it is asked, so that torch's start-up is paid once and the
HCOps and stock runs of an operator alternate inside one process
(torch.ops.hcops.set_enabled). Reads one JSON request a line on stdin and
answers each with one JSON line on stdout; errors are answered as
{"error": text}.

  $PYTHON perf/ops_worker.py --hcops | --stock

--hcops imports hcops.torch (the operators and the fused optimizer) and
answers "lib": "hcops" and "torch" (the same call with HCOps disabled);
--stock never imports it. The first line says what was loaded:
{"torch": version, "hcops": null or why it could not be loaded}.

Requests (threads: torch.set_num_threads for this request):
  {"cmd": "op", "case": [model, op, dir, dtype, threads], "lib": "hcops"|"torch", "iters": N, "reps": R}
      the ATen operator PyTorch's autograd calls (aten::gelu, aten::gelu_backward,
      aten::_softmax, aten::native_layer_norm_backward, ...) on the case's
      tensors; -> {"ns": median over R batches of the time per call in a batch
      of N calls}. Every call allocates its output, as in training.
  {"cmd": "adamw", "model": "S"|"tiny", "dtype": ..., "threads": T, "lib": "hcops"|"torch"|"torch-foreach", "iters": N,
   "reps": R}
      torch.optim.AdamW.step over perf/dit's DiT parameters with random
      gradients: hcops = the fused step hcops.torch installs, torch = stock
      foreach=False (1.13's default), torch-foreach = stock foreach=True;
      -> {"ns": per step, "params": parameter count}.
  {"cmd": "check", "op": ..., "dir": ..., "dtype": ..., "dims": [...], "files": {arg: [path, dtype]}}
      the arguments hcops-dnnl-ops --dump wrote: the reference is PyTorch's
      stock operator in f32 on the same inputs (bf16 ones widened); ->
      {"dnnl": worst, "torch": worst, "hcops": worst, "hcops~torch": worst}, each
      the largest |got - ref| / (rtol |ref| + atol max(1, max|ref|)) over the
      outputs (<= 1 passes; benchlib.ops.tolerance); "torch" is stock PyTorch
      in the data's type on the same inputs, "hcops~torch" HCOps against that
      stock result instead of the f32 one.
  {"cmd": "quit"}
"""
import json
import os
import statistics
import sys
import time

import torch

PERF = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(1, os.path.join(PERF, "dit"))
from benchlib.ops import ELTWISE, LAYER_NORM, LN_EPS, SOFTMAX, Case, tolerance  # noqa: E402

DT = {"f32": torch.float32, "bf16": torch.bfloat16}
aten = torch.ops.aten
hcops_on = None  # torch.ops.hcops.set_enabled once hcops.torch is loaded


def load_hcops():
    """None once hcops.torch is imported and its switch found, else why not.
    The package is python/ beside perf/ when it is not installed."""
    global hcops_on
    sys.path.append(os.path.join(os.path.dirname(PERF), "python"))
    try:
        import hcops.torch  # noqa: F401
        hcops_on = torch.ops.hcops.set_enabled
    except Exception as e:  # ImportError, the library's OSError, a missing op's RuntimeError
        return f"{type(e).__name__}: {e}"
    return None


def use(lib):
    """HCOps' kernels for lib "hcops", PyTorch's own for "torch"."""
    if hcops_on is not None:
        hcops_on(lib == "hcops")
    elif lib == "hcops":
        raise RuntimeError("hcops.torch is not loaded in this worker")


def timed(fn, iters, reps):
    """Median over reps batches of the ns per call of iters calls, after one
    untimed call (first touch, lazy set-up). The result of each call is
    dropped at once, so its memory returns to the allocator as in training."""
    fn()
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            fn()
        per_call.append((time.perf_counter_ns() - t0) / iters)
    return statistics.median(per_call)


# ---- operators -------------------------------------------------------------------

def forward(op, x, w=None, b=None):
    """op's forward as autograd calls it; LayerNorm returns (y, mean, rstd)."""
    if op in ("gelu_tanh", "gelu_erf"):
        return aten.gelu(x, approximate="tanh" if op == "gelu_tanh" else "none")
    if op == "silu":
        return aten.silu(x)
    if op == "softmax":
        return aten._softmax(x, -1, False)
    if op == "log_softmax":
        return aten._log_softmax(x, -1, False)
    return aten.native_layer_norm(x, [x.shape[-1]], w, b, LN_EPS)


def backward(op, dy, x, saved, w=None, b=None):
    """op's backward as autograd calls it: saved is the forward's output
    (softmax) or (mean, rstd) (LayerNorm); LayerNorm returns (dx, dw, db)."""
    if op in ("gelu_tanh", "gelu_erf"):
        return aten.gelu_backward(dy, x, approximate="tanh" if op == "gelu_tanh" else "none")
    if op == "silu":
        return aten.silu_backward(dy, x)
    if op == "softmax":
        return aten._softmax_backward_data(dy, saved, -1, dy.dtype)
    if op == "log_softmax":
        return aten._log_softmax_backward_data(dy, saved, -1, dy.dtype)
    mean, rstd = saved
    return aten.native_layer_norm_backward(dy, x, [x.shape[-1]], mean, rstd, w, b, [True, w is not None, b is not None])


class OpInputs:
    """The tensors of one case, made once: x in [-4, 4], dy in [-1, 1] (as
    hcops-dnnl-ops draws them), weight near 1 and bias near 0, and what the
    backward reads from the forward (computed by stock PyTorch)."""

    def __init__(self, case):
        gen = torch.Generator().manual_seed(14)
        dt = DT[case.dtype]
        self.x = (torch.rand(case.dims, generator=gen) * 8 - 4).to(dt)
        self.dy = (torch.rand(case.dims, generator=gen) * 2 - 1).to(dt)
        self.w = self.b = None
        if case.op == "layer_norm_affine":  # PyTorch 1.13 wants them in the data's type
            self.w = (torch.rand(case.dims[-1], generator=gen) + 0.5).to(dt)
            self.b = (torch.rand(case.dims[-1], generator=gen) - 0.5).to(dt)
        self.saved = None
        if case.dir == "bwd" and case.op not in ELTWISE:
            use("torch")
            out = forward(case.op, self.x, self.w, self.b)
            self.saved = out if case.op in SOFTMAX else out[1:]

    def call(self, case):
        if case.dir == "fwd":
            return lambda: forward(case.op, self.x, self.w, self.b)
        return lambda: backward(case.op, self.dy, self.x, self.saved, self.w, self.b)


inputs = {}  # the current case's OpInputs: one case at a time, to bound memory


def measure_op(req):
    case = Case(*req["case"])
    if case not in inputs:
        inputs.clear()
        inputs[case] = OpInputs(case)
    torch.set_num_threads(case.threads)
    use(req["lib"])
    return {"ns": timed(inputs[case].call(case), req["iters"], req["reps"])}


# ---- AdamW -----------------------------------------------------------------------

adamw_params = {}  # (model, dtype): (parameters with their gradients, count)
adamw_opts = {}    # (model, dtype, lib): optimizer


def adamw_optimizer(model_name, dtype, lib):
    """AdamW over a DiT's parameters (seeded, gradients random and kept; the
    libraries of one datatype share them), its state made by one untimed
    step. Defaults of torch.optim.AdamW but the learning rate (DiT's 1e-4)."""
    if (model_name, dtype) not in adamw_params:
        from dit import CONFIGS, DiT
        torch.manual_seed(0)
        params = list(DiT(*CONFIGS[model_name]).to(DT[dtype]).parameters())
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        adamw_params[model_name, dtype] = (params, sum(p.numel() for p in params))
    params, n = adamw_params[model_name, dtype]
    key = (model_name, dtype, lib)
    if key not in adamw_opts:
        foreach = True if lib == "torch-foreach" else None  # None: 1.13's default, the single-tensor loop
        adamw_opts[key] = torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
    return adamw_opts[key], n


def measure_adamw(req):
    if req["lib"] == "hcops":
        use("hcops")  # in case the switch covers the optimizer too; stock AdamW runs in the --stock worker
    torch.set_num_threads(req["threads"])
    opt, n = adamw_optimizer(req["model"], req["dtype"], req["lib"])
    return {"ns": timed(opt.step, req["iters"], req["reps"]), "params": n}


# ---- checks ----------------------------------------------------------------------

def load(path, dtype, shape):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    return torch.frombuffer(data, dtype=DT[dtype]).reshape(shape)


def outputs(op, direction, t, dt):
    """op's outputs on the inputs t (oneDNN's argument names) in datatype dt,
    named as oneDNN names them (LayerNorm's variance from rstd)."""
    x = t["src"].to(dt) if "src" in t else None  # softmax's backward reads dst instead
    w = t["scale"].to(dt) if "scale" in t else None
    b = t["shift"].to(dt) if "shift" in t else None
    if direction == "fwd":
        if op not in LAYER_NORM:
            return {"dst": forward(op, x)}
        y, mean, rstd = forward(op, x, w, b)
        return {"dst": y, "mean": mean.reshape(-1), "variance": rstd.float().reshape(-1) ** -2 - LN_EPS}
    dy = t["diff_dst"].to(dt)
    if op in ELTWISE:
        return {"diff_src": backward(op, dy, x, None)}
    if op in SOFTMAX:
        return {"diff_src": backward(op, dy, None, t["dst"].to(dt))}
    _, mean, rstd = forward(op, x, w, b)
    dx, dw, db = backward(op, dy, x, (mean, rstd), w, b)
    return {"diff_src": dx, "diff_scale": dw, "diff_shift": db} if w is not None else {"diff_src": dx}


def worst(got, ref, dtype):
    """The largest error over the outputs in units of the tolerance (<= 1 passes)."""
    rtol, atol = tolerance(dtype)
    w = 0.0
    for name, r in ref.items():
        g = got[name].float().reshape(r.shape)
        bound = rtol * r.abs() + atol * max(1.0, r.abs().max().item())
        e = ((g - r).abs() / bound).max().item()
        w = max(w, e) if e == e else float("inf")  # NaN: a failure
    return w


def check(req):
    dims = req["dims"]
    rows = [d for d in dims[:-1]]
    shapes = {"mean": rows, "variance": rows, "scale": [dims[-1]], "shift": [dims[-1]],
              "diff_scale": [dims[-1]], "diff_shift": [dims[-1]]}
    t = {k: load(path, dt, shapes.get(k, dims)) for k, (path, dt) in req["files"].items()}
    inputs_ = {k: v.float() for k, v in t.items()}
    use("torch")
    ref = outputs(req["op"], req["dir"], inputs_, torch.float32)
    dt = DT[req["dtype"]]
    answer = {"dnnl": worst({k: t[k] for k in ref}, ref, req["dtype"]),
              "torch": worst(outputs(req["op"], req["dir"], inputs_, dt), ref, req["dtype"])}
    if hcops_on is not None:
        stock = outputs(req["op"], req["dir"], inputs_, dt)
        use("hcops")
        got = outputs(req["op"], req["dir"], inputs_, dt)
        answer["hcops"] = worst(got, ref, req["dtype"])
        # The bound for bf16: PyTorch's own bf16 result, or within a unit in its last place.
        answer["hcops~torch"] = worst(got, {k: v.float() for k, v in stock.items()}, req["dtype"])
    return answer


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("--hcops", "--stock"):
        print(__doc__, file=sys.stderr)
        return 2
    why = load_hcops() if sys.argv[1] == "--hcops" else "not asked (--stock)"
    print(json.dumps({"torch": torch.__version__, "hcops": why}), flush=True)
    handlers = {"op": measure_op, "adamw": measure_adamw, "check": check}
    for line in sys.stdin:
        req = json.loads(line)
        if req["cmd"] == "quit":
            break
        try:
            answer = handlers[req["cmd"]](req)
        except Exception as e:  # answered, so that the driver can name the case
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
