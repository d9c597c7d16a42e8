"""The whole step from a torch.profiler trace: every operator the step ran,
HCOps' and PyTorch's alike, with its flops, its bytes and its roofline limit.

HCOPS_VERBOSE logs what HCOps ran; the rest of a step (PyTorch's own copies,
element-wise ops and reductions) is only in PyTorch's profiler. Given the
Chrome trace of a step, recorded with shapes:

    with torch.profiler.profile(record_shapes=True) as p:
        train_step()
    p.export_chrome_trace("step.json")

this reads its CPU operator events (name, start, duration, thread, input
shapes and dtypes), nests them per thread by time, and gives each event its
self time (its duration less its children's, as the profiler's own "self CPU"
column). Each operator that moves or computes data (not a view or an
allocation) gets a cost from its inputs:

- products (mm, addmm, bmm, baddbmm): 2 m n k flops; attention
  (_scaled_dot_product_flash_attention_for_cpu): 4 B H L S E, its backward
  10 B H L S E (the scores again and four products); at the peak of their
  dtype (bf16: the matrix units' where the CPU has them);
- every operator: bytes read (each tensor input) and written (an in-place op's
  first input again; an out-of-place op's output estimated from its inputs:
  the broadcast shape in the widest input dtype, nothing for a reduction,
  the sum for cat).

Its limit is max(flops / peak, bytes / bandwidth); the step's roofline limit
is the sum over operators, and its fraction that sum over the step's time.
A composite operator (linear, clone, matmul: its children move at least
half the data its own model says) has no cost, its work being in its
children; any other's bytes are its model's less its children's (a sum's
fill of its output). Times are self times. Operators whose inputs are tensor lists (the fused AdamW, the
_foreach_ ops) have no sizes in the trace, hence no cost.
"""
import json
import math

from . import cost as logcost

# The products, with the places of op(A) and op(B) among their arguments.
GEMM = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
ATTENTION = {"aten::" + name: per for name, per in logcost.ATTENTION_FLOPS.items()}
# Leaves that touch no data (views, allocations, metadata) or only dispatch.
NO_DATA = {
    "aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::t", "aten::transpose", "aten::permute",
    "aten::expand", "aten::reshape", "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select",
    "aten::unbind", "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::narrow", "aten::detach",
    "aten::alias", "aten::lift_fresh", "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::resize_",
    "aten::resolve_conj", "aten::resolve_neg", "aten::contiguous", "aten::to", "aten::_reshape_alias",
    "aten::view_as", "aten::expand_as", "aten::flatten", "aten::numpy_T", "aten::set_", "aten::is_nonzero",
    "aten::item", "aten::_local_scalar_dense", "aten::result_type", "aten::broadcast_tensors", "aten::detach_",
}
REDUCTIONS = {"aten::sum", "aten::mean", "aten::amax", "aten::max", "aten::min", "aten::norm", "aten::var",
              "aten::linalg_vector_norm", "aten::_foreach_norm"}
FILLS = {"aten::fill_", "aten::zero_", "aten::normal_", "aten::uniform_"}  # write only
DTYPE_BYTES = {"float": 4, "double": 8, "c10::BFloat16": 2, "c10::Half": 2, "long int": 8, "int": 4,
               "bool": 1, "unsigned char": 1, "signed char": 1, "short int": 2}


class TraceError(Exception):
    pass


class Event:
    __slots__ = ("name", "ts", "dur", "tid", "dims", "types", "self_us", "children", "flops", "bytes", "precision")

    def __init__(self, e):
        self.name = e["name"]
        self.ts = float(e["ts"])
        self.dur = float(e.get("dur", 0.0))
        self.tid = e.get("tid")
        args = e.get("args") or {}
        self.dims = args.get("Input Dims") or []
        self.types = args.get("Input type") or []
        self.self_us = self.dur
        self.children = []
        self.flops = 0.0
        self.bytes = 0.0
        self.precision = "f32"


def is_trace(path):
    """Whether path looks like a Chrome trace (JSON with traceEvents)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16).lstrip()
    except OSError:
        return False
    return (head.startswith(b"{") and b'"traceEvents"' in head) or (head.startswith(b"[") and b'"ph"' in head)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise TraceError(f"{path}: not a JSON trace: {e}") from None
    raw = data.get("traceEvents", []) if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise TraceError(f"{path}: no traceEvents list")
    events = []
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "user_annotation", None):
            continue
        if e.get("cat") == "user_annotation" and not str(e.get("name", "")).startswith("hcops::"):
            continue
        try:
            events.append(Event(e))
        except (KeyError, TypeError, ValueError) as err:
            raise TraceError(f"{path}: a bad event {str(e)[:80]}: {err}") from None
    if not events:
        raise TraceError(f"{path}: no CPU operator events (record the trace with torch.profiler's CPU activity)")
    if not any(ev.dims for ev in events):
        raise TraceError(f"{path}: no input shapes in the trace: record it with torch.profiler.profile("
                         "record_shapes=True) (PyTorch 1.13's legacy trace format has none)")
    nest(events)
    for ev in events:
        cost(ev)
    # An operator's own cost: a composite (linear, clone, matmul: children
    # that move at least half the data its model says) has none, its work
    # being in them; otherwise its model's bytes less its children's (a
    # sum's fill of its output, a bias copied into a product's output).
    inclusive = {id(ev): ev.bytes for ev in events}
    for ev in events:
        if not ev.children or not (ev.bytes or ev.flops):
            continue
        below = sum(inclusive[id(c)] for c in ev.children)
        if ev.name not in GEMM and ev.name not in ATTENTION and below >= 0.5 * ev.bytes:
            ev.bytes = ev.flops = 0.0
        else:
            ev.bytes = max(0.0, ev.bytes - below)
    return events


def nest(events):
    """Self times and leaves: per thread, an event's parent is the innermost
    earlier event that still runs when it starts."""
    by_tid = {}
    for ev in events:
        by_tid.setdefault(ev.tid, []).append(ev)
    for evs in by_tid.values():
        evs.sort(key=lambda ev: (ev.ts, -ev.dur))
        stack = []
        for ev in evs:
            while stack and stack[-1].ts + stack[-1].dur <= ev.ts:
                stack.pop()
            if stack:
                parent = stack[-1]
                parent.self_us -= ev.dur
                parent.children.append(ev)
            stack.append(ev)
    for ev in events:
        ev.self_us = max(ev.self_us, 0.0)


def _numel(shape):
    return math.prod(shape) if shape else 1


def _broadcast(shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s):
            j = nd - len(s) + i
            out[j] = max(out[j], d)
    return out


def cost(ev):
    tensors = [(list(d), DTYPE_BYTES[t]) for d, t in zip(ev.dims, ev.types) if isinstance(d, list) and t in DTYPE_BYTES]
    if ev.types and "c10::BFloat16" in ev.types[:3]:
        ev.precision = "bf16"
    if ev.name in GEMM:
        # The operands by their place in the schema; an out= overload's
        # destination (inductor calls those) comes after them, and is
        # counted as the written result, not read.
        i, j = GEMM[ev.name]
        dims = list(ev.dims)
        a, b = (dims[i], dims[j]) if len(dims) > j else (None, None)
        if isinstance(a, list) and isinstance(b, list) and len(a) >= 2 and len(b) >= 2:
            inputs = [(d, s) for k, (d, t) in enumerate(zip(dims, ev.types))
                      if k <= j and isinstance(d, list) and (s := DTYPE_BYTES.get(t))]
            batch = _numel(a[:-2])
            ev.flops = float(batch * logcost.gemm_flops(a[-2], b[-1], a[-1]))
            out = batch * a[-2] * b[-1] * max(s for _, s in tensors)
            ev.bytes = sum(_numel(d) * s for d, s in inputs) + out
        return
    if ev.name in ATTENTION:
        q = tensors[1][0] if ev.name.endswith("_backward") and len(tensors) > 1 else (tensors[0][0] if tensors else [])
        k = tensors[2][0] if ev.name.endswith("_backward") and len(tensors) > 2 else (
            tensors[1][0] if len(tensors) > 1 else [])
        if len(q) == 4 and len(k) == 4:
            ev.flops = ATTENTION[ev.name] * q[0] * q[1] * q[2] * k[2] * q[3]
        ev.bytes = sum(_numel(d) * s for d, s in tensors) * 2  # inputs, and outputs of about their size
        return
    if not ev.name.startswith(("aten::", "hcops::")) or ev.name in NO_DATA or not tensors:
        return
    read = 0 if ev.name in FILLS else sum(_numel(d) * s for d, s in tensors)
    widest = max(s for _, s in tensors)
    if ev.name.endswith("_") and not ev.name.startswith("aten::__"):
        written = _numel(tensors[0][0]) * tensors[0][1]  # in place (copy_: the destination)
    elif ev.name in REDUCTIONS:
        written = 0
    elif ev.name == "aten::cat":
        written = read
    else:
        written = _numel(_broadcast([d for d, _ in tensors])) * widest
    ev.bytes = float(read + written)
    ev.flops = float(max(_numel(d) for d, _ in tensors))


class Row:
    def __init__(self, name, precision):
        self.name, self.precision = name, precision
        self.calls = 0
        self.self_us = 0.0
        self.flops = 0.0
        self.bytes = 0.0
        self.limit_s = 0.0


def profile(events, peak_of, bandwidth):
    """Rows by (name, precision), each with its summed limit; peak_of(precision)
    in GFLOPS and bandwidth in GB/s (None: that side of the limit is left out)."""
    rows = {}
    for ev in events:
        r = rows.get((ev.name, ev.precision))
        if r is None:
            r = rows[(ev.name, ev.precision)] = Row(ev.name, ev.precision)
        r.calls += 1
        r.self_us += ev.self_us
        r.flops += ev.flops
        r.bytes += ev.bytes
        peak = peak_of(ev.precision if ev.name in GEMM or ev.name in ATTENTION else "f32")
        t_flops = ev.flops / (peak * 1e9) if peak and ev.flops else 0.0
        t_bytes = ev.bytes / (bandwidth * 1e9) if bandwidth and ev.bytes else 0.0
        r.limit_s += max(t_flops, t_bytes)
    return sorted(rows.values(), key=lambda r: -r.self_us)


def print_report(rows, out, top, steps, peak_of, bandwidth, machine_text, step_seconds=None):
    total_us = sum(r.self_us for r in rows)
    n = max(steps, 1)
    print(f"Whole step from a torch.profiler trace ({n} step{'s' if n > 1 else ''}; figures per step; "
          f"{machine_text})", file=out)
    print(f"{'operator':<52} {'dtype':<5} {'calls':>6} {'self ms':>9} {'share':>6} {'GFLOP':>8} {'GB':>7} "
          f"{'limit ms':>9} {'of limit':>8}", file=out)
    shown = rows if top <= 0 else rows[:top]
    for r in shown:
        frac = f"{100 * r.limit_s * 1e6 / r.self_us:7.0f}%" if r.self_us > 0 and r.limit_s else f"{'':>8}"
        print(f"{r.name[:52]:<52} {r.precision:<5} {r.calls / n:>6.0f} {r.self_us / 1e3 / n:>9.2f} "
              f"{100 * r.self_us / total_us if total_us else 0:>5.1f}% {r.flops / 1e9 / n:>8.2f} "
              f"{r.bytes / 1e9 / n:>7.3f} {r.limit_s * 1e3 / n:>9.3f} {frac}", file=out)
    if len(shown) < len(rows):
        rest = rows[len(shown):]
        print(f"{f'({len(rest)} more operators)':<52} {'':<5} {sum(r.calls for r in rest) / n:>6.0f} "
              f"{sum(r.self_us for r in rest) / 1e3 / n:>9.2f}", file=out)
    limit_s = sum(r.limit_s for r in rows)
    gemm_flops = {p: sum(r.flops for r in rows if r.precision == p and (r.name in GEMM or r.name in ATTENTION))
                  for p in ("f32", "bf16")}
    flop_limit = sum(f / (peak_of(p) * 1e9) for p, f in gemm_flops.items() if f and peak_of(p))
    step_s = total_us / 1e6 / n
    print(f"\nstep: {step_s:.3f} s of operator time in the trace; roofline limit (the sum of max(flops / peak, "
          f"bytes / bandwidth)) {limit_s / n:.3f} s: {100 * limit_s / n / step_s if step_s else 0:.1f} % of it",
          file=out)
    if step_seconds:  # the profiler's own cost is in the trace's times: the step as measured without it
        print(f"against the step measured without the profiler ({step_seconds:.3f} s): roofline limit "
              f"{100 * limit_s / n / step_seconds:.1f} %, FLOP limit {100 * flop_limit / n / step_seconds:.1f} %",
              file=out)
    if flop_limit:
        print(f"FLOP limit (the products and attention at their dtype's peak) {flop_limit / n:.3f} s: "
              f"{100 * flop_limit / n / step_s:.1f} % of the trace's step", file=out)
    if not bandwidth or not any(peak_of(p) for p in ("f32", "bf16")):
        print("(no peak or bandwidth measured: the limits leave that side out)", file=out)
    print("HCOps' operators appear under the aten names they take over; PyTorch's own are the rest.", file=out)


def write_csv(rows, path, steps):
    import csv
    n = max(steps, 1)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["operator", "dtype", "calls", "self_ms", "gflop", "gb", "limit_ms"])
        for r in rows:
            w.writerow([r.name, r.precision, r.calls / n, f"{r.self_us / 1e3 / n:.9g}", f"{r.flops / 1e9 / n:.9g}",
                        f"{r.bytes / 1e9 / n:.9g}", f"{r.limit_s * 1e3 / n:.9g}"])
