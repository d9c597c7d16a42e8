#!/usr/bin/env python3
"""Per-layer memory traffic, FLOPs and time of one DiT training step (issue 18,
AutoMem): the input of perf/automem/projection.py.

  /usr/bin/python3 perf/automem/layer_traffic.py --model XL --batch 1 --threads 1 --steps 1 --out xl.json

One entry per *leaf module call* in forward order (a module called twice
appears twice), plus pseudo-layers for work done outside leaf modules:
- "attention": the q k^T, softmax and (.) v of an Attention module (the module
  with qkv, proj and heads: timm's, DiT's), between its qkv and proj calls;
  FLOPs 4 b h n^2 d from the shapes (the two matmuls; softmax not counted);
- "glue": the operations between two entries outside any leaf module (adaLN
  modulate, gates, residual adds, patch/position embedding adds, the loss);
  no FLOPs counted (elementwise), only their bytes.

Per entry:
- param_bytes: the bytes of the module's parameters (storages deduplicated);
  param_first_use marks the first call of a parameter storage, so that the sum
  over first uses is the model's parameter bytes (param_bytes_total);
- in_bytes / out_bytes: the tensors the call takes and returns (storages
  deduplicated; views count their own elements);
- saved_bytes: what autograd keeps for backward while the entry runs
  (torch.autograd.graph.saved_tensors_hooks), parameters excluded, storages
  deduplicated within the entry; saved_bytes_total deduplicates across entries;
- flops: Linear 2 m n k (m = rows of the input), Conv2d 2 * output elements *
  in_channels/groups * kernel area, attention as above, everything else 0;
- fwd_op_bytes: bytes read + written by every ATen operator the entry's
  forward dispatches (TorchDispatchMode, views excluded), from one extra
  untimed forward: the traffic if nothing stays in cache between operators;
- fwd_s: measured (module forward pre-hook to forward hook, median of steps);
- bwd_s, bwd_source: "measured" = time from the gradient of the entry's output
  being complete to the gradient of its input being produced (identity
  autograd functions on the output and the input; the autograd engine may run
  other ready nodes in between, so this can overstate branchy layers);
  "estimated" for an entry whose input needs no gradient (the patch embedding,
  timestep and label embedders): 2 x its fwd_s; glue entries take what is left
  of the measured backward, shared in proportion to their fwd_s ("residual").

Plus the AdamW step's traffic (reads param, grad, exp_avg, exp_avg_sq; writes
param, exp_avg, exp_avg_sq: 7 x the parameter bytes) and its measured time,
and the whole step's forward / backward / optimizer times (median of --steps,
after --warmup untimed steps). Activation bytes and FLOPs scale with the batch,
which is recorded ("batch") so that the projection can rescale.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
PERF = os.path.dirname(HERE)

# Operators that return a view or do no memory traffic of their own.
VIEW_OPS = {"t", "view", "_unsafe_view", "expand", "detach", "transpose", "permute", "unsqueeze", "squeeze",
            "reshape", "_reshape_alias", "slice", "select", "split", "split_with_sizes", "chunk", "unbind",
            "as_strided", "alias", "lift_fresh", "view_as", "unflatten", "flatten", "narrow", "expand_as",
            "numpy_T", "diagonal", "unfold", "real", "imag", "_to_copy_noop"}


def storage_key(t):
    s = t.storage()
    return (s.data_ptr(), s.size() * t.element_size())


def tensors_of(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from tensors_of(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_of(o)


def tensor_bytes(obj):
    """Bytes of the tensors in obj, a storage region counted once."""
    seen, total = set(), 0
    for t in tensors_of(obj):
        key = (t.storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()
    return total


def linear_flops(module, x, out):
    m = x.numel() // module.in_features
    return 2 * m * module.out_features * module.in_features


def conv_flops(module, x, out):
    kh, kw = module.kernel_size
    return 2 * out.numel() * (module.in_channels // module.groups) * kh * kw


def is_attention(m):
    return isinstance(getattr(m, "qkv", None), nn.Linear) and isinstance(getattr(m, "proj", None), nn.Linear) \
        and isinstance(getattr(m, "heads", None), int)


class _Mark(torch.autograd.Function):
    """Identity; its backward records the time its gradient arrives under key."""

    @staticmethod
    def forward(ctx, tracer, key, x):
        ctx.tracer, ctx.key = tracer, key
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        ctx.tracer.bwd_mark(ctx.key)
        return None, None, grad


class Tracer:
    """Hooks on a model's leaf modules (and Attention modules) that cut a
    forward into entries and record each entry's bytes, FLOPs and times."""

    def __init__(self, model):
        self.model = model
        self.names = {}
        for name, m in model.named_modules():
            self.names.setdefault(m, name or "model")
        self.param_ptrs = {storage_key(p) for p in model.parameters()}
        self.handles = []
        for m in model.modules():
            if not list(m.children()):
                self.handles.append(m.register_forward_pre_hook(self._pre))
                self.handles.append(m.register_forward_hook(self._post))
        self.attn_of = {}  # qkv / proj module -> its Attention
        for m in model.modules():
            if is_attention(m):
                self.attn_of[m.qkv] = ("qkv", m)
                self.attn_of[m.proj] = ("proj", m)
        self.reset()

    def close(self):
        for h in self.handles:
            h.remove()

    # ---- one forward at a time
    def reset(self):
        self.entries = []
        self.cur = None
        self.marks = {}
        self.glue_n = 0
        self.seen_params = set()
        self.saved_all = set()
        self.saved_total = 0
        self.active = False

    def _open(self, name, kind, t):
        e = {"index": len(self.entries), "name": name, "kind": kind, "param_bytes": 0, "param_first_use": 0,
             "in_bytes": 0, "out_bytes": 0, "saved_bytes": 0, "flops": 0, "fwd_op_bytes": 0, "fwd_op_flops": 0,
             "t0": t, "_saved": set()}
        self.entries.append(e)
        self.cur = e
        return e

    def _end(self, t):
        if self.cur is not None:
            self.cur["t1"] = t
            self.cur = None

    def begin(self):
        self.reset()
        self.active = True
        self._open("glue.0", "glue", time.perf_counter())

    def finish(self):
        self._end(time.perf_counter())
        self.active = False

    def _pre(self, module, inputs):
        if not self.active:
            return None
        t = time.perf_counter()
        self._end(t)
        role = self.attn_of.get(module)
        if role and role[0] == "proj" and self.entries and self.entries[-1]["kind"] == "attention":
            self.entries[-1]["out_bytes"] = tensor_bytes(inputs)
            inputs = self._mark_inputs(self.entries[-1], inputs, "pin") or inputs  # attention's backward starts
        e = self._open(self.names[module], type(module).__name__, t)
        e["in_bytes"] = tensor_bytes(inputs)
        mine = set()
        for p in module.parameters(recurse=False):
            k = storage_key(p)
            if k not in mine:  # a storage the module holds twice counts once
                mine.add(k)
                e["param_bytes"] += p.numel() * p.element_size()
            if k not in self.seen_params:
                self.seen_params.add(k)
                e["param_first_use"] += p.numel() * p.element_size()
        e["_inputs"] = [x for x in inputs if isinstance(x, torch.Tensor)]
        return self._mark_inputs(e, inputs, "in") or (inputs if role and role[0] == "proj" else None)

    def _mark_inputs(self, e, inputs, tag):
        if not torch.is_grad_enabled() or not any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs):
            return None
        e.setdefault("has_" + tag, True)
        return tuple(_Mark.apply(self, (e["index"], tag), x) if isinstance(x, torch.Tensor) and x.requires_grad
                     else x for x in inputs)

    def _post(self, module, inputs, out):
        if not self.active:
            return None
        t = time.perf_counter()
        e = self.cur
        e["t1"] = t
        x = e.pop("_inputs")
        if isinstance(module, nn.Linear) and x:
            e["flops"] = linear_flops(module, x[0], out)
        elif isinstance(module, nn.Conv2d) and x:
            e["flops"] = conv_flops(module, x[0], out)
        e["out_bytes"] = tensor_bytes(out)
        if isinstance(out, torch.Tensor) and out.requires_grad and torch.is_grad_enabled():
            e["has_out"] = True
            out = _Mark.apply(self, (e["index"], "out"), out)
        self.cur = None
        role = self.attn_of.get(module)
        if role and role[0] == "qkv":
            attn = role[1]
            b, n, c3 = out.shape
            c = c3 // 3
            a = self._open(self.names[attn] + ".core", "attention", time.perf_counter())
            a["in_bytes"] = e["out_bytes"]
            a["flops"] = 4 * b * attn.heads * n * n * (c // attn.heads)
            a["qkv_index"] = e["index"]
        else:
            self.glue_n += 1
            self._open(f"glue.{self.glue_n}", "glue", time.perf_counter())
        return out

    # ---- saved tensors
    def pack(self, t):
        if self.active and self.cur is not None:
            k = storage_key(t)
            if k not in self.param_ptrs:
                if k not in self.cur["_saved"]:
                    self.cur["_saved"].add(k)
                    self.cur["saved_bytes"] += k[1]
                if k not in self.saved_all:
                    self.saved_all.add(k)
                    self.saved_total += k[1]
        return t

    @staticmethod
    def unpack(t):
        return t

    def bwd_mark(self, key):
        self.marks.setdefault(key, time.perf_counter())

    # ---- operator bytes (untimed pass)
    def op(self, name, args, out):
        if self.cur is None:
            return
        base = name.split(".")[0]
        if base in VIEW_OPS:
            return
        self.cur["fwd_op_bytes"] += tensor_bytes(args) + tensor_bytes(out)
        if base in ("mm", "bmm", "addmm", "baddbmm"):
            a = [t for t in tensors_of(args)][-2:]
            if len(a) == 2 and a[0].dim() >= 2:
                self.cur["fwd_op_flops"] += 2 * a[0].numel() * a[1].shape[-1]


def op_counter(tracer):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            tracer.op(func.overloadpacket.__name__, (args, kwargs or {}), out)
            return out

    return Count()


def run_step(tracer, loss_fn, opt, count_ops=False):
    """One training step under the tracer (count_ops: the forward alone, every
    operator's bytes counted); returns (entries, times, marks, saved bytes)."""
    tracer.begin()
    t0 = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(tracer.pack, tracer.unpack):
        if count_ops:
            with op_counter(tracer):
                loss = loss_fn()
        else:
            loss = loss_fn()
    tracer.finish()
    t1 = time.perf_counter()
    if count_ops:
        del loss
        for e in tracer.entries:
            e.pop("_saved", None)
            e.pop("_inputs", None)
        return tracer.entries, None, {}, tracer.saved_total
    if opt is not None:
        opt.zero_grad(set_to_none=True)
    else:
        for p in tracer.model.parameters():
            p.grad = None
    loss.backward()
    t2 = time.perf_counter()
    if opt is not None:
        opt.step()
    t3 = time.perf_counter()
    for e in tracer.entries:
        e.pop("_saved", None)
        e.pop("_inputs", None)
    return tracer.entries, {"forward_s": t1 - t0, "backward_s": t2 - t1, "optimizer_s": t3 - t2,
                            "step_s": t3 - t0}, dict(tracer.marks), tracer.saved_total


def backward_times(entries, marks, backward_s):
    """Each entry's backward seconds and how it was obtained (module docstring)."""
    out = []
    for e in entries:
        i = e["index"]
        if e["kind"] == "attention":
            a, b = marks.get((i, "pin")), marks.get((e["qkv_index"], "out"))
        elif e["kind"] == "glue":
            out.append((None, "residual"))
            continue
        else:
            a, b = marks.get((i, "out")), marks.get((i, "in"))
        if a is not None and b is not None and b >= a:
            out.append((b - a, "measured"))
        else:
            out.append((2 * (e["t1"] - e["t0"]), "estimated"))
    known = sum(t for t, s in out if t is not None)
    glue_fwd = sum(e["t1"] - e["t0"] for e in entries if e["kind"] == "glue") or 1.0
    rest = max(backward_s - known, 0.0)
    return [(t, s) if t is not None else (rest * (e["t1"] - e["t0"]) / glue_fwd, s) for (t, s), e in zip(out, entries)]


def trace(model, loss_fn, opt=None, steps=1, warmup=1):
    """Measure model's training step (loss_fn() -> the loss; opt: its optimizer
    or None). Returns the entries (forward order) and the step's times."""
    tracer = Tracer(model)
    try:
        runs = []
        for i in range(warmup + steps):
            entries, times, marks, saved_total = run_step(tracer, loss_fn, opt)
            if i >= warmup:
                bwd = backward_times(entries, marks, times["backward_s"])
                runs.append((entries, times, bwd, saved_total))
        # bytes of every operator: one more forward, untimed
        op_entries, _, _, _ = run_step(tracer, loss_fn, None, count_ops=True)
    finally:
        tracer.close()
    entries = [dict(e) for e in runs[0][0]]
    if [e["name"] for e in op_entries] != [e["name"] for e in entries]:
        raise RuntimeError("the forward took a different path in the operator-counting pass")
    for j, e in enumerate(entries):
        e["fwd_op_bytes"] = op_entries[j]["fwd_op_bytes"]
        e["fwd_op_flops"] = op_entries[j]["fwd_op_flops"]
        e["fwd_s"] = statistics.median(r[0][j]["t1"] - r[0][j]["t0"] for r in runs)
        e["bwd_s"] = statistics.median(r[2][j][0] for r in runs)
        e["bwd_source"] = runs[0][2][j][1]
        for k in ("t0", "t1", "has_in", "has_out", "has_pin"):
            e.pop(k, None)
    # glue segments where nothing happened (e.g. between a Sequential's children)
    keep = [e for e in entries if e["kind"] != "glue" or e["fwd_op_bytes"] or e["saved_bytes"]]
    dropped_s = sum(e["fwd_s"] for e in entries if e not in keep)
    idx = {e["index"]: n for n, e in enumerate(keep)}
    for n, e in enumerate(keep):
        e["index"] = n
        if "qkv_index" in e:
            e["qkv_index"] = idx[e["qkv_index"]]
    times = {k: statistics.median(r[1][k] for r in runs) for k in runs[0][1]}
    params = {storage_key(p): p.numel() * p.element_size() for p in model.parameters()}
    return {
        "layers": keep,
        "dropped_glue_s": dropped_s,
        "param_bytes_total": sum(params.values()),
        "param_count": sum(p.numel() for p in model.parameters()),
        "saved_bytes_total": runs[0][3],
        "peak_activation_bytes": runs[0][3] + max(e["in_bytes"] + e["out_bytes"] for e in keep),
        "step": times,
        "optimizer": {"name": type(opt).__name__ if opt else None,
                      "read_bytes": 4 * sum(params.values()), "write_bytes": 3 * sum(params.values()),
                      "bytes": 7 * sum(params.values()), "flops": 12 * sum(p.numel() for p in model.parameters()),
                      "s": times["optimizer_s"]},
    }


def measure_dit(model_name, batch, threads, steps, warmup, seed=0):
    sys.path.insert(0, os.path.join(PERF, "dit"))
    import dit

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    hidden, depth, heads = dit.CONFIGS[model_name]
    model = dit.DiT(hidden, depth, heads)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    abar = dit.alphas_cumprod()
    gen = torch.Generator().manual_seed(seed)
    data = dit.make_batch(gen, batch)
    # The same batch every step: label dropout draws from torch's global RNG,
    # which does not change the path (a where), so every step has the same entries.
    res = trace(model, lambda: dit.diffusion_loss(model, abar, data), opt, steps, warmup)
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), platform.machine())
    out = {"model": f"DiT-{model_name}/2", "config": {"hidden": hidden, "depth": depth, "heads": heads,
                                                       "tokens": (dit.LATENT_SIZE // dit.PATCH) ** 2},
           "batch": batch, "threads": threads, "steps": steps, "warmup": warmup, "dtype": "float32",
           "machine": cpu, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    out.update(res)
    out["notes"] = [
        "per-entry bwd_s: 'measured' = output gradient complete -> input gradient produced (identity autograd "
        "functions); 'estimated' = 2 x fwd_s (input needs no gradient); glue: the rest of the measured backward "
        "shared by fwd_s ('residual')",
        "activation bytes and FLOPs scale with 'batch'; parameter bytes do not",
        "flops: Linear 2mnk, Conv2d 2 * out * Cin/g * kh * kw, attention 4 b h n^2 d; elementwise work not counted",
    ]
    return out


def main(argv=None):
    sys.path.insert(0, os.path.join(PERF, "dit"))
    import dit

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(dit.CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2, help="timed steps (median); default 2")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.batch < 1 or args.steps < 1 or args.threads < 1 or args.warmup < 0:
        ap.error("--batch, --steps and --threads must be at least 1, --warmup at least 0")
    out = measure_dit(args.model, args.batch, args.threads, args.steps, args.warmup)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    L = out["layers"]
    kinds = {}
    for e in L:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    s = out["step"]
    print(f"{out['model']} batch {args.batch}, {args.threads} threads: {len(L)} entries "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); params {out['param_bytes_total'] / 2**20:.1f} MiB, "
          f"saved for backward {out['saved_bytes_total'] / 2**20:.1f} MiB, "
          f"{sum(e['flops'] for e in L) / 1e9:.2f} GFLOP forward; step {s['step_s']:.3f} s (forward {s['forward_s']:.3f}, "
          f"backward {s['backward_s']:.3f}, optimizer {s['optimizer_s']:.3f}); "
          f"sum of entries: forward {sum(e['fwd_s'] for e in L):.3f} s, backward {sum(e['bwd_s'] for e in L):.3f} s "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
