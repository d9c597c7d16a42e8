#!/usr/bin/env python3
"""Projected step time of one data-parallel rank's DiT training step on a
machine with a fast memory tier (on-package HBM, "OPM") and DDR, in three
placements (issue 18, AutoMem), from perf/automem/layer_traffic.py's JSON:

  DDR       every tensor in DDR;
  AutoMem   the current layer's parameters (and gradients) and activations in
            the fast tier; the next layer's parameters migrated DDR -> fast by
            one helper core while this layer computes, finished layers
            offloaded (gradients copied back to DDR; parameters are unchanged
            until the optimizer, so dropping them costs nothing);
  all-fast  every tensor in the fast tier, if parameters + gradients + the 2
            AdamW states + the peak activations fit; else "does not fit".

  /usr/bin/python3 perf/automem/projection.py --inputs xl.json --preset lx2 --batch 8 --csv lx2.csv --png lx2.png
  /usr/bin/python3 perf/automem/projection.py --inputs xl.json --preset xeon-max --migration-gbs 12

The model (every figure is printed with the results, "assumed" where it is ours):
- a rank = one fast-tier NUMA node's cores (LX2: a cluster of 16 cores;
  Xeon Max flat SNC4: a quadrant of 14), read from the preset's hwloc XML; one
  of its cores is AutoMem's helper, the others compute, in all three
  placements alike (--compute-cores), so that only the placement differs;
- every rank of the machine runs at once: a DDR node's bandwidth is shared
  evenly by the ranks whose cores it serves (LX2: DDR per die, uniform within
  the die, 4 clusters each); the rank's fast tier is its own node (LX2:
  --opm-node picks a remote one instead: 50% of local bandwidth within a
  die, 37% across dies, 10% across CPUs, the DiT-HC paper's figures);
- each entry of the trace (leaf-module call, attention core, glue) is a
  roofline: time = max(FLOPs / (compute cores x per-core peak x efficiency),
  sum over tiers of bytes on the tier / the tier's bandwidth) (the bytes of
  the two tiers are not moved in parallel); forward FLOPs from the trace,
  backward 2 x forward; forward bytes = parameters + max(operator bytes -
  parameters, input + output); backward bytes = parameters read + gradients
  written + 2 x the forward's activation bytes (every operator's backward
  reads what it saved and its output gradient, writes its input gradient);
  activation bytes and FLOPs scale linearly from the measured batch to --batch;
- AdamW: 7 x parameter bytes (read param, grad, 2 states; write param, 2
  states), 12 FLOPs per parameter, a roofline in the tier the state is in;
- AutoMem: a window of two consecutive parameter-carrying entries
  (parameters + gradients, 2 x (P_i + P_j) at most) is reserved in the fast
  tier; the rest of the fast tier takes the activations saved for backward,
  first come first served in forward order; activations that do not fit are
  allocated in DDR (forward writes and backward reads them there). The helper
  copies at --migration-gbs (not capped: it should not exceed the rank's DDR
  share, a note says when it does), one copy at a time, in order: forward, prefetch of the next parameter entry (it may
  start when the entry two before has finished: the window holds two);
  backward, the offload of the finished entry's gradients, then the prefetch
  of the next; the entry waits for its prefetch (a stall); the last
  gradients' offload is exposed. An entry whose copy would cost more than it
  gains (2 prefetches + 1 offload > time from DDR - time from the fast tier,
  forward + backward) is not
  migrated under --policy worthwhile: it computes on its parameters in DDR
  (then AutoMem is never slower than DDR); the default, --policy always,
  migrates every parameter entry as the paper's AutoMem does, so a slow
  helper can make it slower than DDR. The optimizer runs either
  in DDR or streamed through the fast tier by the helper (4P in, 3P out),
  whichever is faster. Migration does not slow the computing cores' own DDR
  traffic (not modelled).
"""
import argparse
import math
import os
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # perf/, for benchlib
from benchlib.inputs import read_json  # noqa: E402
from benchlib.report import write_records  # noqa: E402
# The synthetic machines: $HCOPS_TOPOLOGY_DIR (as the test suite sets it), else tests/topologies.
TOPOLOGIES = os.environ.get("HCOPS_TOPOLOGY_DIR") or os.path.normpath(
    os.path.join(HERE, "..", "..", "tests", "topologies"))
GiB = 1 << 30
GB = 1e9

# Remote OPM bandwidth as a fraction of local (the DiT-HC paper, LX2).
REMOTE_OPM = {"local": 1.0, "same-die": 0.50, "cross-die": 0.37, "cross-cpu": 0.10}

PRESETS = {
    "lx2": {
        "topology": "lx2-like-2cpu-8die-256core.xml",
        "fast_gbs": (400.0, "assumed: OPM bandwidth of one cluster's local stack (not published in our notes)"),
        "ddr_gbs": (100.0, "assumed: DDR bandwidth per die, shared by its clusters (not published in our notes)"),
        "core_gflops": (64.0, "assumed: per-core fp32 peak (not published in our notes)"),
        "migration_gbs": (20.0, "assumed: one helper core's DDR -> OPM copy rate (not published in our notes)"),
        "efficiency": (0.6, "assumed: fraction of peak the layers' GEMMs reach"),
        "remote": "DiT-HC paper: remote OPM 50% of local within a die, 37% across dies, 10% across CPUs; "
                  "DDR uniform within a die",
    },
    "xeon-max": {
        "topology": "xeon-max-flat-snc4-2s.xml",
        "fast_gbs": (1000.0 / 4, "public: Xeon Max 9480 HBM2e ~1 TB/s peak per socket, / 4 SNC4 quadrants"),
        "ddr_gbs": (300.0 / 4, "public: DDR5 ~300 GB/s per socket, / 4 SNC4 quadrants"),
        "core_gflops": (100.0, "assumed: per-core fp32 AVX-512 peak (2 FMA x 16 lanes x 2 at ~1.6 GHz under "
                               "AVX-512 load; AMX bf16 not modelled)"),
        "migration_gbs": (12.0, "assumed: one core's DDR -> HBM copy rate"),
        "efficiency": (0.6, "assumed: fraction of peak the layers' GEMMs reach"),
        "remote": "flat mode, SNC4: each quadrant its own 16 GiB HBM node and DDR node; remote HBM not used",
    },
}


class InputError(Exception):
    pass


# ----------------------------------------------------------------- topology

def cpuset(text):
    v = 0
    for word in (text or "0x0").split(","):
        v = (v << 32) | (int(word, 16) if word else 0)  # hwloc writes a zero word as nothing
    return v


def read_topology(path):
    """The ranks (fast-tier NUMA nodes) of an hwloc XML: for each, its cores,
    its fast node's bytes, its DDR node, and how many ranks share that DDR
    node; plus the die / package of every fast node (for remote OPM)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise InputError(f"{path}: cannot read the topology: {e}") from None
    objs = list(root.iter("object"))
    cores = [cpuset(o.get("cpuset")) for o in objs if o.get("type") == "Core"]
    numa = [o for o in objs if o.get("type") == "NUMANode"]
    fast = [o for o in numa if o.get("subtype") == "HBM"]
    ddr = [o for o in numa if o.get("subtype") != "HBM"]
    if not fast or not ddr:
        raise InputError(f"{path}: needs HBM and DDR NUMA nodes")

    def groups(kind):
        return [cpuset(o.get("cpuset")) for o in objs if o.get("type") == kind]

    packages, dies = groups("Package"), groups("Die")

    def within(cs, sets):
        return next((i for i, s in enumerate(sets) if cs & s == cs), None)

    ranks = []
    for o in fast:
        cs = cpuset(o.get("cpuset"))
        d = next((x for x in ddr if cpuset(x.get("cpuset")) & cs == cs), None)
        if d is None:
            raise InputError(f"{path}: no DDR node serves the cores of HBM node {o.get('os_index')}")
        dcs = cpuset(d.get("cpuset"))
        ranks.append({"fast_node": int(o.get("os_index")), "fast_bytes": int(o.get("local_memory")),
                      "cores": sum(1 for c in cores if c & cs == c), "ddr_node": int(d.get("os_index")),
                      "ddr_bytes": int(d.get("local_memory")),
                      "ddr_sharers": sum(1 for f in fast if cpuset(f.get("cpuset")) & dcs == cpuset(f.get("cpuset"))),
                      "package": within(cs, packages), "die": within(cs, dies)})
    return {"path": path, "ranks": ranks, "packages": len(packages), "dies": len(dies), "cores": len(cores),
            "description": next((i.get("value") for i in root.iter("info")
                                 if i.get("name") == "SyntheticDescription"), "")}


def opm_distances(topo, rank=0):
    """Each fast node's relation to rank's cores: local, same-die, cross-die, cross-cpu."""
    me = topo["ranks"][rank]
    out = []
    for r in topo["ranks"]:
        if r is me:
            rel = "local"
        elif r["package"] != me["package"]:
            rel = "cross-cpu"
        elif me["die"] is not None and r["die"] != me["die"]:
            rel = "cross-die"
        else:
            rel = "same-die"
        out.append((r["fast_node"], rel))
    return out


# ----------------------------------------------------------------- inputs

def load_inputs(path):
    inp = read_json(path, ("layers", "batch", "param_bytes_total", "peak_activation_bytes", "optimizer", "model"),
                    "perf/automem/layer_traffic.py", InputError)
    if not inp["layers"]:
        raise InputError(f"{path}: no layers")
    for e in inp["layers"]:
        for k in ("param_bytes", "in_bytes", "out_bytes", "saved_bytes", "flops", "fwd_op_bytes"):
            if not isinstance(e.get(k), (int, float)) or e[k] < 0:
                raise InputError(f"{path}: layer {e.get('name')!r} without a valid {k!r}")
    return inp


# ----------------------------------------------------------------- model

class Machine:
    def __init__(self, fast_bw, ddr_bw, flops, migration_bw, fast_bytes, cores_compute):
        self.fast_bw, self.ddr_bw, self.flops = fast_bw, ddr_bw, flops
        self.migration_bw = migration_bw
        self.fast_bytes, self.cores_compute = fast_bytes, cores_compute

    def roofline(self, flops, fast_bytes, ddr_bytes):
        return max(flops / self.flops, fast_bytes / self.fast_bw + ddr_bytes / self.ddr_bw)


def entries(inp, batch):
    """Per entry: params P, forward/backward activation bytes and FLOPs at batch."""
    s = batch / inp["batch"]
    out = []
    for e in inp["layers"]:
        P = e["param_bytes"]
        act = max(e["fwd_op_bytes"] - P, e["in_bytes"] + e["out_bytes"]) * s
        out.append({"name": e["name"], "P": P, "first": e.get("param_first_use", P), "fa": act, "ba": 2 * act,
                    "ff": e["flops"] * s, "bf": 2 * e["flops"] * s, "saved": e["saved_bytes"] * s,
                    "transient": (e["in_bytes"] + e["out_bytes"]) * s})
    return out


def optimizer_time(inp, m, where):
    P = inp["param_bytes_total"]
    fl = inp["optimizer"].get("flops", 12 * P / 4)
    return m.roofline(fl, 7 * P, 0) if where == "fast" else m.roofline(fl, 0, 7 * P)


def fast_total(inp, batch):
    """Bytes everything would take in the fast tier: params, grads, 2 states, peak activations."""
    return 4 * inp["param_bytes_total"] + inp["peak_activation_bytes"] * batch / inp["batch"]


def uniform(inp, m, batch, tier):
    """Every tensor in one tier."""
    E = entries(inp, batch)
    fwd = bwd = 0.0
    for e in E:
        if tier == "fast":
            fwd += m.roofline(e["ff"], e["P"] + e["fa"], 0)
            bwd += m.roofline(e["bf"], 2 * e["P"] + e["ba"], 0)
        else:
            fwd += m.roofline(e["ff"], 0, e["P"] + e["fa"])
            bwd += m.roofline(e["bf"], 0, 2 * e["P"] + e["ba"])
    opt = optimizer_time(inp, m, tier)
    moved = sum(2 * e["P"] + e["fa"] + e["ba"] for e in E) + 7 * inp["param_bytes_total"]
    return {"forward_s": fwd, "backward_s": bwd, "optimizer_s": opt, "stall_s": 0.0, "step_s": fwd + bwd + opt,
            "fast_bytes_moved": moved if tier == "fast" else 0, "ddr_bytes_moved": moved if tier == "ddr" else 0,
            "migrated_bytes": 0}


BUDGET = {"bytes": None}  # --budget-gib: AutoMem's budget (HCOPS_AUTOMEM_FAST_BYTES), default the fast tier


def automem(inp, m, batch, policy="always"):
    if policy == "hcops":
        return automem_hcops(inp, m, batch, BUDGET["bytes"])
    E = entries(inp, batch)
    pidx = [i for i, e in enumerate(E) if e["P"] > 0]
    window = max([2 * (E[a]["P"] + E[b]["P"]) for a, b in zip(pidx, pidx[1:])] +
                 [2 * E[i]["P"] for i in pidx] + [0])
    res = {"window_bytes": window}
    budget = m.fast_bytes - window
    if budget < 0:
        res.update(fits=False, note=f"the window ({window / GiB:.2f} GiB) does not fit in the fast tier")
        return res
    # activations: saved ones first come first served, the rest of each entry's transients likewise
    left = budget
    frac = []
    for e in E:
        need = e["saved"] if e["saved"] > 0 else e["transient"]
        f = 1.0 if need <= 0 else max(0.0, min(1.0, left / need))
        if e["saved"] > 0:
            left = max(0.0, left - e["saved"])
        frac.append(f)
    mig = m.migration_bw
    fast_moved = ddr_moved = migrated = 0.0

    def times(e, f, migrated_params, phase):
        if phase == "f":
            a, fl, pb = e["fa"], e["ff"], e["P"]
        else:
            a, fl, pb = e["ba"], e["bf"], 2 * e["P"]
        fast_b = a * f + (pb if migrated_params else 0)
        ddr_b = a * (1 - f) + (0 if migrated_params else pb)
        return m.roofline(fl, fast_b, ddr_b), fast_b, ddr_b

    # forward ------------------------------------------------------------
    t = 0.0          # the computing cores' clock
    helper = 0.0     # the helper core's clock
    ends = {}        # param entry -> its compute end
    compute = stall = 0.0
    plan = {}
    for i in pidx:
        e = E[i]
        t_ddr = times(e, frac[i], False, "f")[0] + times(e, frac[i], False, "b")[0]
        t_fast = times(e, frac[i], True, "f")[0] + times(e, frac[i], True, "b")[0]
        cost = 2 * e["P"] / mig if mig > 0 else math.inf  # prefetch in forward and backward
        cost += e["P"] / mig if mig > 0 else math.inf     # gradient offload
        plan[i] = policy == "always" or cost <= t_ddr - t_fast
    migrated_list = [i for i in pidx if plan[i]]
    order = {j: k for k, j in enumerate(migrated_list)}
    fwd = 0.0
    for i, e in enumerate(E):
        if plan.get(i):
            k = order[i]
            start = helper
            if k >= 2:
                start = max(start, ends[migrated_list[k - 2]])
            helper = start + e["P"] / mig
            migrated += e["P"]
            if helper > t:
                stall += helper - t
                t = helper
        dt, fb, db = times(e, frac[i], plan.get(i, False), "f")
        t += dt
        compute += dt
        fast_moved += fb
        ddr_moved += db
        ends[i] = t
    fwd = t
    # backward: reverse order; the last migrated entry's parameters are still resident
    rev = list(reversed(migrated_list))
    helper = t
    ends_b = {}
    for i in reversed(range(len(E))):
        e = E[i]
        if plan.get(i):
            k = rev.index(i)
            if k >= 1:
                start = helper
                if k >= 2:
                    start = max(start, ends_b[rev[k - 2]])
                helper = start + e["P"] / mig
                migrated += e["P"]
                if helper > t:
                    stall += helper - t
                    t = helper
        dt, fb, db = times(e, frac[i], plan.get(i, False), "b")
        t += dt
        compute += dt
        fast_moved += fb
        ddr_moved += db
        ends_b[i] = t
        if plan.get(i):  # offload its gradients
            helper = max(helper, t) + e["P"] / mig
            migrated += e["P"]
    if helper > t:  # the last gradients must be in DDR before the optimizer
        stall += helper - t
        t = helper
    bwd = t - fwd
    # optimizer: in DDR, or streamed through the fast tier by the helper
    P = inp["param_bytes_total"]
    o_ddr = optimizer_time(inp, m, "ddr")
    o_fast = optimizer_time(inp, m, "fast")
    o_stream = max(o_fast, 7 * P / mig) if mig > 0 else math.inf
    opt = min(o_ddr, o_stream)
    if o_stream < o_ddr:
        fast_moved += 7 * P
        migrated += 7 * P
    else:
        ddr_moved += 7 * P
    res.update(fits=True, forward_s=fwd, backward_s=bwd, optimizer_s=opt, stall_s=stall, step_s=t + opt,
               compute_s=compute, optimizer_where="streamed" if o_stream < o_ddr else "ddr",
               fast_bytes_moved=fast_moved, ddr_bytes_moved=ddr_moved, migrated_bytes=migrated,
               migrated_entries=len(migrated_list), param_entries=len(pidx),
               activations_in_fast=sum(f * e["saved"] for f, e in zip(frac, E)),
               activations_saved=sum(e["saved"] for e in E), note="")
    return res


def _planner():
    """hcops.automem.plan from the source tree (python/ beside perf/)."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    try:
        from hcops.automem import plan
    finally:
        sys.path.pop(0)
    return plan


def automem_hcops(inp, m, batch, budget=None):
    """AutoMem as hcops.automem runs it: the parameter entries' placement is
    hcops.automem.plan's, within `budget` (default: the rank's fast tier, the
    runtime's default): resident when they fit, else a window moved one event
    ahead with Belady offloads; gradients stay in the fast tier when
    parameters and gradients fit the budget, else each is offloaded once
    accumulated; activations take what the pinned tensors leave, first come
    first served; the optimizer reads parameters and gradients where they
    are, its states in DDR (allocated outside every layer)."""
    plan_mod = _planner()
    E = entries(inp, batch)
    budget = m.fast_bytes if budget is None else budget
    pidx = [i for i, e in enumerate(E) if e["P"] > 0]
    events = ([plan_mod.Event("F", i, (i,)) for i in pidx] + [plan_mod.Event("B", i, (i,)) for i in reversed(pidx)])
    sizes = {i: E[i]["P"] for i in pidx}
    plan = plan_mod.make_plan(events, sizes, budget)
    P = inp["param_bytes_total"]
    keep_grads = 2 * sum(sizes.values()) <= budget
    pinned = plan.high_water + (sum(sizes.values()) if keep_grads else 0)
    left = max(0.0, m.fast_bytes - pinned)
    frac = []
    for e in E:
        need = e["saved"] if e["saved"] > 0 else e["transient"]
        frac.append(1.0 if need <= 0 else max(0.0, min(1.0, left / need)))
        if e["saved"] > 0:
            left = max(0.0, left - e["saved"])
    mig = m.migration_bw
    pos_of = {}
    for j, ev in enumerate(plan.events):
        pos_of.setdefault((ev.kind, ev.unit), j)
    resident_at = {}
    for j, ev in enumerate(plan.events):
        resident_at[(ev.kind, ev.unit)] = ev.unit in plan.actions[j].resident
    t = helper = stall = compute = migrated = fast_moved = ddr_moved = 0.0

    def run(i, phase):
        nonlocal t, helper, stall, compute, migrated, fast_moved, ddr_moved
        e = E[i]
        key = ("F" if phase == "f" else "B", i)
        j = pos_of.get(key)
        fast_params = False
        if j is not None:
            act = plan.actions[j]
            if helper > t:  # this entry's prefetch (queued at the previous event) must be done
                stall += helper - t
                t = helper
            miss = sum(sizes[k] for k in act.fetch)
            if miss:
                stall += miss / mig
                t += miss / mig
                migrated += miss
            fast_params = resident_at[key]
            ahead = sum(sizes[k] for k in act.prefetch)
            helper = max(helper, t) + ahead / mig
            migrated += ahead
        a, fl = (e["fa"], e["ff"]) if phase == "f" else (e["ba"], e["bf"])
        pb = e["P"] if phase == "f" else 2 * e["P"]
        fb = a * frac[i] + (pb if fast_params else 0)
        db = a * (1 - frac[i]) + (0 if fast_params else pb)
        dt = m.roofline(fl, fb, db)
        t += dt
        compute += dt
        fast_moved += fb
        ddr_moved += db
        if phase == "b" and e["P"] and not keep_grads:  # its gradients offloaded once accumulated
            helper = max(helper, t) + e["P"] / mig
            migrated += e["P"]

    for i in range(len(E)):
        run(i, "f")
    fwd = t
    for i in reversed(range(len(E))):
        run(i, "b")
    if helper > t:
        stall += helper - t
        t = helper
    bwd = t - fwd
    fl = inp["optimizer"].get("flops", 12 * P / 4)
    in_fast = 3 * P if keep_grads else 2 * P  # params read and written, gradients read
    in_fast = in_fast if plan.high_water >= sum(sizes.values()) else 0
    opt = m.roofline(fl, in_fast, 7 * P - in_fast)
    return {"fits": True, "forward_s": fwd, "backward_s": bwd, "optimizer_s": opt, "stall_s": stall,
            "step_s": t + opt, "compute_s": compute, "optimizer_where": "params in fast" if in_fast else "ddr",
            "fast_bytes_moved": fast_moved, "ddr_bytes_moved": ddr_moved, "migrated_bytes": migrated,
            "migrated_entries": len({k for a in plan.actions for k in a.prefetch + a.fetch}),
            "param_entries": len(pidx), "activations_in_fast": sum(f * e["saved"] for f, e in zip(frac, E)),
            "activations_saved": sum(e["saved"] for e in E), "window_bytes": plan.high_water,
            "note": f"hcops plan: {plan.high_water / GiB:.2f} GiB pinned, gradients "
                    f"{'kept' if keep_grads else 'offloaded'}"}


def project(inp, m, batch, policy="always"):
    """The three placements at batch."""
    ddr = uniform(inp, m, batch, "ddr")
    fast = uniform(inp, m, batch, "fast")
    need = fast_total(inp, batch)
    fast["fits"] = need <= m.fast_bytes
    fast["need_bytes"] = need
    am = automem(inp, m, batch, policy)
    return {"ddr": ddr, "automem": am, "fast": fast}


# ----------------------------------------------------------------- CLI

def machine_from_args(args, topo):
    p = PRESETS[args.preset]
    rank = topo["ranks"][0]
    vals = {}
    for k in ("fast_gbs", "ddr_gbs", "core_gflops", "migration_gbs", "efficiency"):
        v = getattr(args, k)
        vals[k] = (v, "given") if v is not None else p[k]
    cores_compute = args.compute_cores or rank["cores"] - 1
    fast_bw = vals["fast_gbs"][0] * GB * REMOTE_OPM[args.opm_node]
    ddr_bw = vals["ddr_gbs"][0] * GB / rank["ddr_sharers"]
    flops = cores_compute * vals["core_gflops"][0] * 1e9 * vals["efficiency"][0]
    cap = args.fast_gib * GiB if args.fast_gib else rank["fast_bytes"]
    m = Machine(fast_bw, ddr_bw, flops, vals["migration_gbs"][0] * GB, cap, cores_compute)
    return m, vals, rank, cores_compute


def assumptions(inp, args, topo, m, vals, rank, cores_compute):
    p = PRESETS[args.preset]
    notes = [
        f"topology {os.path.basename(topo['path'])} ({topo['description']}): {topo['packages']} CPUs, "
        f"{topo['dies'] or 'no'} dies, {len(topo['ranks'])} fast-tier nodes, {topo['cores']} cores",
        f"rank = the cores of one fast-tier node: {rank['cores']} cores, {cores_compute} computing, 1 helper "
        f"(the same compute cores in every placement); fast tier {m.fast_bytes / GiB:.1f} GiB "
        f"(node {rank['fast_node']}), DDR node {rank['ddr_node']} ({rank['ddr_bytes'] / GiB:.0f} GiB) shared by "
        f"{rank['ddr_sharers']} rank(s)",
        f"fast-tier bandwidth {vals['fast_gbs'][0]:g} GB/s x {REMOTE_OPM[args.opm_node]:g} ({args.opm_node} OPM) "
        f"= {m.fast_bw / GB:g} GB/s per rank [{vals['fast_gbs'][1]}]",
        f"DDR bandwidth {vals['ddr_gbs'][0]:g} GB/s per DDR node / {rank['ddr_sharers']} = {m.ddr_bw / GB:g} GB/s "
        f"per rank [{vals['ddr_gbs'][1]}]",
        f"per-core peak {vals['core_gflops'][0]:g} GFLOP/s [{vals['core_gflops'][1]}] x efficiency "
        f"{vals['efficiency'][0]:g} [{vals['efficiency'][1]}] x {cores_compute} cores = {m.flops / 1e9:.0f} GFLOP/s",
        f"helper-core migration {vals['migration_gbs'][0]:g} GB/s [{vals['migration_gbs'][1]}]"
        f"{'' if m.migration_bw <= min(m.ddr_bw, m.fast_bw) else ' (more than the rank' + chr(39) + 's DDR share: optimistic)'}",
        p["remote"],
        f"trace: {inp['model']} measured at batch {inp['batch']} on {inp.get('machine', '?')} "
        f"({inp.get('threads', '?')} threads, {inp.get('dtype', 'float32')}); activations and FLOPs scaled "
        f"to batch {args.batch}",
        f"AutoMem policy {args.policy}: " + {
            "always": "every parameter entry migrated at each use (the paper's)",
            "worthwhile": "an entry migrated only if its copies cost less than they gain",
            "hcops": "hcops.automem's plan: parameters resident while they fit the budget "
                     f"({(args.budget_gib or m.fast_bytes / GiB):g} GiB), else a window one event ahead with "
                     "Belady offloads; gradients kept when parameters and gradients fit"}[args.policy],
        "per entry: roofline max(FLOPs / compute, sum of bytes / tier bandwidth); backward FLOPs 2x forward; "
        "AdamW 7 x parameter bytes; elementwise FLOPs not counted; caches not modelled (every operator's bytes "
        "go to memory)",
    ]
    return notes


def fmt_s(x):
    return f"{x:9.3f}" if isinstance(x, (int, float)) and math.isfinite(x) else f"{'-':>9}"


def table(inp, res, args, m):
    rows = []
    lines = [f"{'placement':<10} {'step s':>9} {'forward':>9} {'backward':>9} {'optim.':>9} {'stall':>9} "
             f"{'fast GB':>9} {'DDR GB':>9}  note"]
    for key, label in (("ddr", "DDR"), ("automem", "AutoMem"), ("fast", "all-fast")):
        r = res[key]
        note = ""
        if key == "automem":
            if not r["fits"]:
                note = r["note"]
            else:
                note = (f"window {r['window_bytes'] / GiB:.2f} GiB; {r['activations_in_fast'] / GiB:.2f} of "
                        f"{r['activations_saved'] / GiB:.2f} GiB saved activations in fast; "
                        f"{r['migrated_entries']}/{r['param_entries']} param entries migrated; optimizer "
                        f"{r['optimizer_where']}; stall {100 * r['stall_s'] / r['step_s']:.1f}%")
        if key == "fast":
            note = (f"fits: {r['need_bytes'] / GiB:.2f} GiB <= {m.fast_bytes / GiB:.1f} GiB" if r["fits"] else
                    f"does not fit: {r['need_bytes'] / GiB:.2f} GiB (params+grads+2 states "
                    f"{4 * inp['param_bytes_total'] / GiB:.2f} + activations "
                    f"{(r['need_bytes'] - 4 * inp['param_bytes_total']) / GiB:.2f}) > {m.fast_bytes / GiB:.1f} GiB; "
                    f"times if it fitted")
        ok = key != "automem" or r["fits"]
        lines.append(f"{label:<10} " + " ".join(fmt_s(r.get(k) if ok else None) for k in
                                                ("step_s", "forward_s", "backward_s", "optimizer_s", "stall_s")) +
                     f" {r.get('fast_bytes_moved', 0) / GB:9.1f} {r.get('ddr_bytes_moved', 0) / GB:9.1f}  {note}")
        rows.append({"model": inp["model"], "preset": args.preset, "batch": args.batch, "placement": label,
                     "fits": r.get("fits", True), "step_s": r.get("step_s"), "forward_s": r.get("forward_s"),
                     "backward_s": r.get("backward_s"), "optimizer_s": r.get("optimizer_s"),
                     "stall_s": r.get("stall_s"), "fast_bytes": r.get("fast_bytes_moved"),
                     "ddr_bytes": r.get("ddr_bytes_moved"), "migration_gbs": m.migration_bw / GB, "note": note})
    return lines, rows


def sweep(inp, m, batch, bws, policy="always"):
    out = []
    for bw in bws:
        mm = Machine(m.fast_bw, m.ddr_bw, m.flops, bw * GB, m.fast_bytes, m.cores_compute)
        r = automem(inp, mm, batch, policy)
        if r["fits"]:
            out.append({"migration_gbs": bw, "step_s": r["step_s"], "stall_s": r["stall_s"],
                        "stall_fraction": r["stall_s"] / r["step_s"], "migrated_entries": r["migrated_entries"]})
    return out


def break_even(inp, m, batch, policy, target):
    """The lowest migration bandwidth (GB/s) at which AutoMem's step is no
    longer than target (bisection on a log scale; the step does not increase
    with the bandwidth), or None above 1e4 GB/s."""
    def step(bw):
        r = automem(inp, Machine(m.fast_bw, m.ddr_bw, m.flops, bw * GB, m.fast_bytes, m.cores_compute), batch, policy)
        return r["step_s"] if r["fits"] else math.inf
    lo, hi = 1e-3, 1e4
    if step(hi) > target:
        return None
    if step(lo) <= target:
        return lo
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if step(mid) <= target else (mid, hi)
    return hi


def plot(inp, res, sw, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    labels, vals, colors = [], [], []
    for key, label, c in (("ddr", "DDR", "tab:gray"), ("automem", "AutoMem", "tab:blue"),
                          ("fast", "all-fast", "tab:green")):
        r = res[key]
        if key == "automem" and not r["fits"]:
            continue
        labels.append(label + ("\n(does not fit)" if key == "fast" and not r["fits"] else ""))
        vals.append(r["step_s"])
        colors.append(c)
    a1.bar(labels, vals, color=colors)
    a1.set_ylabel("projected step time (s)")
    a1.set_title(f"{inp['model']} batch {args.batch} on {args.preset} (one rank)", fontsize=9)
    if sw:
        a2.plot([s["migration_gbs"] for s in sw], [100 * s["stall_fraction"] for s in sw], "-o", ms=4)
        a2.set_xscale("log")
    a2.set_xlabel("helper-core migration bandwidth (GB/s)")
    a2.set_ylabel("AutoMem stall (% of step)")
    a2.set_title("sensitivity: stall vs migration bandwidth", fontsize=9)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", required=True, help="layer_traffic.py's JSON")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="lx2")
    ap.add_argument("--topology", help="hwloc XML (default: the preset's, in tests/topologies)")
    ap.add_argument("--batch", type=int, help="per-rank batch to project (default: the measured one)")
    ap.add_argument("--fast-gbs", type=float, help="fast-tier (OPM/HBM) bandwidth of one node, GB/s")
    ap.add_argument("--ddr-gbs", type=float, help="DDR bandwidth of one DDR node, GB/s (shared by its ranks)")
    ap.add_argument("--core-gflops", type=float, help="per-core peak, GFLOP/s")
    ap.add_argument("--efficiency", type=float, help="fraction of peak reached, (0, 1]")
    ap.add_argument("--migration-gbs", type=float, help="helper core's copy bandwidth, GB/s")
    ap.add_argument("--compute-cores", type=int, help="computing cores of a rank (default: its cores - 1)")
    ap.add_argument("--fast-gib", type=float, help="fast-tier capacity of a rank, GiB (default: the topology's)")
    ap.add_argument("--opm-node", choices=sorted(REMOTE_OPM), default="local",
                    help="where the rank's fast tier is relative to its cores (paper's remote fractions)")
    ap.add_argument("--policy", choices=["hcops", "always", "worthwhile"], default="hcops",
                    help="AutoMem as hcops.automem plans it (hcops: resident within the budget, a window "
                    "when it does not fit), the paper's (always: every parameter entry migrated each use), or "
                    "only the entries whose copies cost less than they gain (worthwhile)")
    ap.add_argument("--budget-gib", type=float,
                    help="--policy hcops: AutoMem's budget (HCOPS_AUTOMEM_FAST_BYTES), GiB (default: the fast tier)")
    ap.add_argument("--sweep", default="1,2,5,10,20,50,100,200,500",
                    help="migration bandwidths (GB/s) for the sensitivity")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    args = ap.parse_args(argv)
    try:
        for k in ("fast_gbs", "ddr_gbs", "core_gflops", "migration_gbs", "fast_gib"):
            v = getattr(args, k)
            if v is not None and not v > 0:
                raise InputError(f"--{k.replace('_', '-')} must be positive")
        if args.efficiency is not None and not 0 < args.efficiency <= 1:
            raise InputError("--efficiency not within (0, 1]")
        if args.budget_gib is not None and args.budget_gib < 0:
            raise InputError("--budget-gib must not be negative")
        BUDGET["bytes"] = None if args.budget_gib is None else args.budget_gib * GiB
        inp = load_inputs(args.inputs)
        if args.batch is None:
            args.batch = inp["batch"]
        if args.batch < 1:
            raise InputError("--batch must be at least 1")
        topo = read_topology(args.topology or os.path.join(TOPOLOGIES, PRESETS[args.preset]["topology"]))
        sw_bws = [float(x) for x in args.sweep.split(",") if x.strip()]
    except (InputError, ValueError) as e:
        print(f"projection.py: {e}", file=sys.stderr)
        return 2
    m, vals, rank, cores_compute = machine_from_args(args, topo)
    notes = assumptions(inp, args, topo, m, vals, rank, cores_compute)
    res = project(inp, m, args.batch, args.policy)
    lines, rows = table(inp, res, args, m)
    sw = sweep(inp, m, args.batch, sw_bws, args.policy)
    print(f"{inp['model']}, batch {args.batch} per rank, projected on {args.preset}:")
    for n in notes:
        print(f"  - {n}")
    if args.preset == "lx2":
        rel = opm_distances(topo)
        counts = {}
        for _, r in rel:
            counts[r] = counts.get(r, 0) + 1
        print("  - OPM nodes seen from rank 0: " + ", ".join(
            f"{counts[k]} {k} ({REMOTE_OPM[k] * vals['fast_gbs'][0]:g} GB/s)" for k in REMOTE_OPM if k in counts))
    for line in lines:
        print("  " + line)
    print("  AutoMem sensitivity (migration GB/s: step s, stall % of step): " + ", ".join(
        f"{s['migration_gbs']:g}: {s['step_s']:.3f} s {100 * s['stall_fraction']:.1f}%" for s in sw))
    d = res["ddr"]["step_s"]
    even = break_even(inp, m, args.batch, args.policy, d)
    print(f"  AutoMem ({args.policy}) as fast as DDR from a migration bandwidth of " +
          (f"{even:.3g} GB/s" if even is not None else "- (never, up to 1e4 GB/s)"))
    for other in [p for p in ("hcops", "always", "worthwhile") if p != args.policy]:
        o = automem(inp, m, args.batch, other)
        if not o["fits"]:
            continue
        print(f"  AutoMem, policy {other}: {o['step_s']:.3f} s, {o['migrated_entries']}/{o['param_entries']} "
              f"parameter entries migrated, stall {o['stall_s']:.3f} s")
        rows.append(dict(rows[1], placement=f"AutoMem-{other}", step_s=o["step_s"], forward_s=o["forward_s"],
                         backward_s=o["backward_s"], optimizer_s=o["optimizer_s"], stall_s=o["stall_s"],
                         fast_bytes=o["fast_bytes_moved"], ddr_bytes=o["ddr_bytes_moved"],
                         note=f"{o['migrated_entries']}/{o['param_entries']} parameter entries migrated"))
    if args.csv:
        sweep_rows = [{"model": inp["model"], "preset": args.preset, "batch": args.batch,
                       "placement": "AutoMem-sweep", "fits": True, "step_s": s["step_s"], "stall_s": s["stall_s"],
                       "migration_gbs": s["migration_gbs"], "note": f"stall fraction {s['stall_fraction']:.4f}"}
                      for s in sw]
        write_records(args.csv, rows + sweep_rows, notes)
    if args.png:
        plot(inp, res, sw, args, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
