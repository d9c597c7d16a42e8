#!/usr/bin/env python3
"""hcops.automem's plan (python/hcops/automem/plan.py) for DiT models, and the
budget AutoMem takes on the synthetic machines of tests/topologies.

- The budget: a child per topology (HWLOC_XMLFILE, HWLOC_THISSYSTEM=0, the
  built libhcops_mem.so preloaded) prints hcops.automem.fast_tier() and what
  enable() returns: 16 GiB from the fast tier of the domain on the LX2-like
  machine (its OPM) and on the Xeon Max (flat HBM), none on the EPYC
  (enable returns None).
- The event sequence: a child on this machine (HCOPS_MEM_FAST_NODES=0 forces
  a fast tier) records one forward and backward of DiT-mini through AutoMem's
  own hooks (the events and sizes its runtime hands to make_plan); the events
  a DiT of any shape makes are then built here from dit.py's structure and
  checked equal to the recorded ones (every tensor, and those >= 1 MiB), so
  that DiT-S/2 and DiT-XL/2 are planned without building them.
- The plan, for mini (recorded), S/2 and XL/2 (built): forward in module
  order, backward its reverse; at every event the resident bytes within the
  budget and the layer's own tensors resident; the moves consistent (what was
  resident, less the evictions, plus the fetches and prefetches, is what is
  resident); the prefetch at event i exactly the tensors of event i+1 not yet
  resident (one layer ahead, forward and backward) when both layers fit;
  offloads by farthest next use (Belady); the cycle closing on its start.
  A budget holding everything: no move after the first cycle. Three layers'
  worth: moves, and no miss. One layer's worth: misses, budget still held. A
  layer larger than the budget: in too_large, never fetched. Budget 0: no
  moves at all.

Run with HCOPS_MEM_LIB (the libhcops_mem.so to preload), HCOPS_TOPOLOGY_DIR
(tests/topologies: a checkout without them fails, as tests/engine/numa_gemm.sh
does); prints ok/FAIL lines; exit 1 on a failure, 77 when torch
is missing (the torch-free checks still run), 99 without HCOPS_MEM_LIB.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
DIT_DIR = os.path.join(HERE, "..", "..", "perf", "dit")
sys.path.insert(0, SRC_PYTHON)
sys.path.insert(0, HERE)
from automem_harness import check, failures, run_child as harness_run  # noqa: E402

GiB, MiB = 1 << 30, 1 << 20
TOPOLOGIES = {  # file: fast-tier budget of the calling thread's domain
    "lx2-like-2cpu-8die-256core.xml": 16 * GiB,
    "xeon-max-flat-snc4-2s.xml": 16 * GiB,
    "epyc-nps4-2s.xml": 0,
}
CHILD_TIMEOUT_S = 120


# ------------------------------------------------------------------ children
def child_topology():
    """Prints fast_tier() and whether enable() did anything, as JSON."""
    import torch
    from hcops import automem
    budget, source = automem.fast_tier()
    am = automem.enable(torch.nn.Linear(1024, 1024))
    print(json.dumps({"budget": budget, "source": source, "enabled": am is not None,
                      "reason": automem.statistics()["reason"]}))


def child_record():
    """One forward and backward of DiT-mini through AutoMem's hooks, with every
    tensor tracked (min_bytes 1) and with the default threshold: the events
    and sizes the runtime hands to make_plan, as JSON."""
    sys.path.insert(0, DIT_DIR)
    import torch
    import dit
    from hcops import automem
    from hcops.automem import runtime
    torch.set_num_threads(1)
    captured = []
    real = runtime.make_plan

    def spy(events, sizes, budget):
        captured.append((list(events), dict(sizes), budget))
        return real(events, sizes, budget)
    runtime.make_plan = spy
    out = {}
    for label, min_bytes in (("all", 1), ("default", None)):
        torch.manual_seed(0)
        model = dit.DiT(*dit.CONFIGS["mini"])
        am = automem.enable(model, min_bytes=min_bytes)
        gen = torch.Generator().manual_seed(0)
        dit.diffusion_loss(model, dit.alphas_cumprod(), dit.make_batch(gen, 1)).backward()
        events, sizes, budget = captured[-1]
        out[label] = {
            "events": [[e.kind, am.unit_names[e.unit], [[am.slots[k].name, sizes[k]] for k in e.keys]]
                       for e in events],
            "min_bytes": am.min_bytes, "budget": budget,
            "plan_events": len(am.plan.events) if am.plan else -1}
        automem.disable(model)
    print(json.dumps(out))


def run_child(mode, env_extra):
    return harness_run(__file__, [mode], env_extra, CHILD_TIMEOUT_S, tail=2000)


# ------------------------------------------------- DiT's events from its shape
def dit_layers(hidden, depth):
    """(unit name, [(tensor, shape)]) of every layer AutoMem hooks in a DiT
    (perf/dit/dit.py, variant "dit"), in the order the forward runs them."""
    h, grid, out = hidden, 32 // 2, 2 * 4 * 2 * 2
    layers = [("DiT", [("pos_embed", (1, grid * grid, h))]),
              ("x_embedder.proj", [("weight", (h, 4, 2, 2)), ("bias", (h,))]),
              ("t_embedder.mlp.0", [("weight", (h, 256)), ("bias", (h,))]),
              ("t_embedder.mlp.1", []),
              ("t_embedder.mlp.2", [("weight", (h, h)), ("bias", (h,))]),
              ("y_embedder.table", [("weight", (1001, h))])]
    for b in range(depth):
        p = f"blocks.{b}."
        layers += [(p + "adaLN_modulation.0", []),
                   (p + "adaLN_modulation.1", [("weight", (6 * h, h)), ("bias", (6 * h,))]),
                   (p + "norm1", []),
                   (p + "attn.qkv", [("weight", (3 * h, h)), ("bias", (3 * h,))]),
                   (p + "attn.proj", [("weight", (h, h)), ("bias", (h,))]),
                   (p + "norm2", []),
                   (p + "mlp.0", [("weight", (4 * h, h)), ("bias", (4 * h,))]),
                   (p + "mlp.1", []),
                   (p + "mlp.2", [("weight", (h, 4 * h)), ("bias", (h,))])]
    layers += [("final_layer.adaLN_modulation.0", []),
               ("final_layer.adaLN_modulation.1", [("weight", (2 * h, h)), ("bias", (2 * h,))]),
               ("final_layer.norm_final", []),
               ("final_layer.linear", [("weight", (out, h)), ("bias", (out,))])]
    return layers


def dit_events(hidden, depth, min_bytes=MiB):
    """The recorded form ([kind, unit name, [[tensor, bytes]...]]) of one DiT
    training step: fp32 tensors of at least min_bytes; forward in module order,
    backward with the model's own output first, then the layers reversed."""
    def nbytes(shape):
        n = 4
        for d in shape:
            n *= d
        return n
    layers = [(name, [[t, nbytes(s)] for t, s in tensors if nbytes(s) >= min_bytes])
              for name, tensors in dit_layers(hidden, depth)]
    fwd = [["F", n, ts] for n, ts in layers]
    bwd = [["B", n, ts] for n, ts in [layers[0]] + layers[:0:-1]]
    return fwd + bwd


def to_plan_input(recorded):
    """Event list and sizes for make_plan from the recorded form; unit names
    and keys numbered in first appearance."""
    from hcops.automem.plan import Event
    units, keys, sizes, events = {}, {}, {}, []
    for kind, name, tensors in recorded:
        u = units.setdefault(name, len(units))
        ks = []
        for t, n in tensors:
            k = keys.setdefault((name, t), len(keys))
            sizes[k] = n
            ks.append(k)
        events.append(Event(kind, u, tuple(ks)))
    names = {u: n for n, u in units.items()}
    return events, sizes, names


# ------------------------------------------------------------ plan invariants
def next_use_table(events):
    """dist[i][k]: events from i to the next event after i using k (cyclic)."""
    n = len(events)
    dist = [dict() for _ in range(n)]
    for i in range(n):
        for d in range(n, 0, -1):  # nearest wins
            for k in events[(i + d) % n].keys:
                dist[i][k] = d
    return dist


def layer_bytes(events, sizes):
    return {e.unit: sum(sizes[k] for k in e.keys) for e in events}


def check_plan(label, events, sizes, budget, names):
    """Every invariant of a plan; returns the plan and counts of its moves."""
    from hcops.automem.plan import make_plan
    plan = make_plan(events, sizes, budget)
    own = layer_bytes(events, sizes)
    large = [u for u in dict.fromkeys(e.unit for e in events) if own[u] > budget]
    problems = []
    if sorted(plan.too_large) != sorted(large):
        problems.append(f"too_large {[names[u] for u in plan.too_large]}, not {[names[u] for u in large]}")
    if plan.events != [e for e in events if e.keys and own[e.unit] <= budget]:
        problems.append("the plan's events are not the step's less key-less and too-large layers")
    n = len(plan.events)
    dist = next_use_table(plan.events) if n else []
    large_keys = {k for e in events if e.unit in large for k in e.keys}
    counts = {"evict": 0, "fetch": 0, "prefetch": 0}
    prev = set(plan.initial)
    for i, (ev, act) in enumerate(zip(plan.events, plan.actions)):
        where = f"{ev.kind} {names[ev.unit]} (#{i})"
        need = set(ev.keys)
        nxt = plan.events[(i + 1) % n]
        res = set(act.resident)
        for what in counts:
            counts[what] += len(getattr(act, what))
        rb = sum(sizes[k] for k in res)
        if rb > budget or plan.resident_bytes(i) != rb:
            problems.append(f"{where}: resident {rb} > budget {budget}")
        if not need <= res:
            problems.append(f"{where}: own tensors {sorted(need - res)} not resident")
        if not set(act.evict) <= prev or set(act.evict) & need:
            problems.append(f"{where}: evicts {act.evict}, not resident before or its own")
        kept_res = prev - set(act.evict)
        if act.fetch != sorted(need - kept_res):
            problems.append(f"{where}: fetches {act.fetch}, not its missing tensors {sorted(need - kept_res)}")
        missing_next = [k for k in nxt.keys if k not in kept_res | need]
        pair = sum(sizes[k] for k in need | set(nxt.keys))
        if pair <= budget and act.prefetch != missing_next:
            problems.append(f"{where}: prefetches {act.prefetch}, not the next event's {missing_next}")
        if act.prefetch != [k for k in missing_next if k in act.prefetch]:
            problems.append(f"{where}: prefetches {act.prefetch} beyond the next event's {missing_next}")
        if res != kept_res | need | set(act.prefetch):
            problems.append(f"{where}: resident {sorted(res)} is not the moves' result")
        others = res - need - set(nxt.keys)
        for v in act.evict:
            closer = [r for r in others if dist[i][r] > dist[i][v]]
            if closer:
                problems.append(f"{where}: offloads {v} (next use in {dist[i][v]}) but keeps {closer} used later")
        if res & large_keys:
            problems.append(f"{where}: a too-large layer's tensors {sorted(res & large_keys)} resident")
        prev = res
    if n and prev != set(plan.initial):
        problems.append("the cycle does not end where it starts")
    high = max((plan.resident_bytes(i) for i in range(n)), default=0)
    if plan.high_water < high or plan.high_water > budget:
        problems.append(f"high_water {plan.high_water}: below the largest resident {high} or above the budget")
    check(not problems, f"{label}: {n} events, {len(large)} too large; budget held, own tensors resident, "
                        f"moves consistent, prefetch one event ahead, Belady offloads", "; ".join(problems[:5]))
    return plan, counts


def check_model(label, recorded, topo_budget):
    """The plans of one model's step under the budgets of the brief."""
    events, sizes, names = to_plan_input(recorded)
    keyed = [e for e in events if e.keys]
    fwd = [e.unit for e in keyed if e.kind == "F"]
    bwd = [e.unit for e in keyed if e.kind == "B"]
    top = [u for u in fwd if names[u] == "DiT"]
    check([e.kind for e in keyed] == ["F"] * len(fwd) + ["B"] * len(bwd),
          f"{label}: the step is the forward events, then the backward ones")
    check(top + [u for u in bwd if u not in top] == top + [u for u in fwd if u not in top][::-1],
          f"{label}: backward runs the layers in the reverse order of forward ({len(fwd)} layers)")
    own = layer_bytes(keyed, sizes)
    total = sum(sizes.values())
    biggest = sorted(own.values(), reverse=True)

    # The topology's budget: everything fits.
    plan, counts = check_plan(f"{label}, budget {topo_budget / GiB:.0f} GiB", events, sizes, topo_budget, names)
    check(plan.initial == frozenset(sizes) and all(a.resident == frozenset(sizes) for a in plan.actions),
          f"{label}, {topo_budget / GiB:.0f} GiB: every tensor resident at every event ({total / MiB:.1f} MiB)")
    check(counts == {"evict": 0, "fetch": 0, "prefetch": 0} and plan.high_water == total,
          f"{label}, {topo_budget / GiB:.0f} GiB: no move after the first cycle", str(counts))

    # Three layers' worth: moves, and every layer prefetched in time.
    three = sum(biggest[:3])
    plan, counts = check_plan(f"{label}, 3 layers' worth ({three / MiB:.1f} MiB)", events, sizes, three, names)
    check(counts["evict"] > 0 and counts["prefetch"] > 0 and counts["fetch"] == 0 and not plan.too_large,
          f"{label}, 3 layers' worth: offloads and prefetches, no miss", str(counts))
    kinds = {e.kind for e, a in zip(plan.events, plan.actions) if a.prefetch}
    check(kinds == {"F", "B"}, f"{label}, 3 layers' worth: prefetches during the forward and the backward",
          str(kinds))

    # One layer's worth: a layer and the next do not fit together: misses.
    plan, counts = check_plan(f"{label}, the largest layer ({biggest[0] / MiB:.1f} MiB)", events, sizes,
                              biggest[0], names)
    check(counts["fetch"] > 0 and not plan.too_large, f"{label}, the largest layer's worth: misses fetched",
          str(counts))

    # Smaller than the largest layer: that one stays in DDR.
    budget = biggest[0] - 1
    plan, counts = check_plan(f"{label}, largest layer - 1 byte", events, sizes, budget, names)
    big_units = {u for u, b in own.items() if b > budget}
    big_keys = {k for e in keyed if e.unit in big_units for k in e.keys}
    moved = {k for a in plan.actions for k in a.fetch + a.prefetch} | set(plan.initial)
    check(set(plan.too_large) == big_units and big_units and not moved & big_keys,
          f"{label}, largest layer - 1 byte: {len(big_units)} layer(s) too large, never fetched")

    # Budget 0: nothing moves.
    plan, counts = check_plan(f"{label}, budget 0", events, sizes, 0, names)
    check(not plan.actions and not plan.initial and plan.high_water == 0 and len(plan.too_large) == len(own),
          f"{label}, budget 0: no moves, every layer too large")

    # Budgets in between: only the invariants.
    for frac in (0.15, 0.3, 0.5, 0.8, 0.99):
        budget = max(biggest[0], int(total * frac))
        check_plan(f"{label}, {frac:.0%} of the tensors", events, sizes, budget, names)


def pure_checks():
    """The planner on small hand-made cycles whose plans are known."""
    from hcops.automem.plan import Event, make_plan
    # Four layers of 1 MiB each, forward then backward, budget two layers:
    # each event holds its own and prefetches the next.
    fw = [Event("F", u, (u,)) for u in range(4)]
    ev = fw + [Event("B", u, (u,)) for u in reversed(range(4))]
    sizes = {k: MiB for k in range(4)}
    plan = make_plan(ev, sizes, 2 * MiB)
    want = [[], [2], [3], [], [], [1], [0], []]  # F0's next (F1) came in at B0, B3's (B2) stayed
    check([a.prefetch for a in plan.actions] == want, "4 layers, budget 2: prefetch the next layer",
          str([a.prefetch for a in plan.actions]))
    check([sorted(a.resident) for a in plan.actions] == [[0, 1], [1, 2], [2, 3], [2, 3], [2, 3], [1, 2], [0, 1], [0, 1]],
          "4 layers, budget 2: resident is this layer and the next",
          str([sorted(a.resident) for a in plan.actions]))
    # Belady, budget 3: at F2 (3 comes in) 0 goes, next used at B0, farther
    # than 1 (B1); at B1 (0 comes in) 3 goes, next used at F3, farther than 2.
    plan = make_plan(ev, sizes, 3 * MiB)
    check([a.evict for a in plan.actions] == [[], [], [0], [], [], [], [3], []] and
          not any(a.fetch for a in plan.actions),
          "4 layers, budget 3: offload the farthest next use (F2: 0, B1: 3), no miss",
          str([a.evict for a in plan.actions]))
    # A shared tensor (key 9 in units 0 and 2) counts once.
    ev2 = [Event("F", 0, (0, 9)), Event("F", 1, (1,)), Event("F", 2, (2, 9)),
           Event("B", 2, (2, 9)), Event("B", 1, (1,)), Event("B", 0, (0, 9))]
    plan = make_plan(ev2, {0: MiB, 1: MiB, 2: MiB, 9: MiB}, 4 * MiB)
    check(plan.high_water == 4 * MiB and not any(a.evict or a.fetch or a.prefetch for a in plan.actions),
          "a tensor shared by two layers counts once: 4 tensors fit 4 MiB")
    # A unit used twice (same keys at two events) and a layer too large.
    ev3 = [Event("F", 0, (0,)), Event("F", 1, (1,)), Event("F", 0, (0,)), Event("F", 2, (2,)),
           Event("B", 2, (2,)), Event("B", 0, (0,)), Event("B", 1, (1,)), Event("B", 0, (0,))]
    plan = make_plan(ev3, {0: MiB, 1: MiB, 2: 5 * MiB}, 2 * MiB)
    check(plan.too_large == [2] and all(2 not in a.resident for a in plan.actions) and len(plan.events) == 6,
          "a 5 MiB layer under a 2 MiB budget is too_large and never resident")
    check(not any(a.fetch for a in plan.actions), "a module called twice: both calls planned, no miss")


def main():
    lib = os.environ.get("HCOPS_MEM_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_MEM_LIB must name the libhcops_mem.so to test (got {lib!r})")
        return 99
    lib = os.path.abspath(lib)
    topo_dir = os.environ.get("HCOPS_TOPOLOGY_DIR", "")

    pure_checks()
    # DiT-XL/2 (hidden 1152, depth 28), from its shapes: no torch needed.
    xl = dit_events(1152, 28)
    xl_total = sum(n for _, _, ts in xl[:len(xl) // 2] for _, n in ts)
    check(2400 * MiB < xl_total < 2700 * MiB, f"DiT-XL/2's tensors >= 1 MiB: {xl_total / MiB:.0f} MiB")
    check_model("DiT-XL/2", xl, 16 * GiB)
    check_model("DiT-S/2", dit_events(384, 12), 16 * GiB)

    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"SKIP: torch cannot be imported by {sys.executable} ({e}): no budget on the topologies, "
              "no recorded step")
        return 1 if failures else 77

    # The budget on each synthetic machine.
    budgets = {}
    if not all(os.path.isfile(os.path.join(topo_dir, xml)) for xml in TOPOLOGIES):
        check(False, f"synthetic topologies in HCOPS_TOPOLOGY_DIR={topo_dir!r} (the checkout's tests/topologies): "
              "no budget on them, the recorded step planned under 16 GiB instead")
        budgets = {"16 GiB (no topology)": 16 * GiB}
    else:
        for xml, want in TOPOLOGIES.items():
            got, err = run_child("--child-topology", {"HWLOC_XMLFILE": os.path.join(topo_dir, xml),
                                                      "HWLOC_THISSYSTEM": "0", "LD_PRELOAD": lib})
            if got is None:
                check(False, f"{xml}: the child runs", err)
                continue
            warnings = [line for line in err.splitlines() if "warning" in line]
            check(not warnings, f"{xml}: no warning (the topology is used)", "; ".join(warnings))
            if want:
                budgets[xml] = got["budget"]
                check(got["budget"] == want and got["enabled"] and got["source"] == "the fast tier of this domain",
                      f"{xml}: budget {want / GiB:.0f} GiB from the fast tier of the domain, AutoMem enabled",
                      str(got))
            else:
                check(got["budget"] == 0 and not got["enabled"] and "no fast memory tier" in got["reason"],
                      f"{xml}: no fast tier, enable returns None", str(got))

    # The step AutoMem records here, against the one built from DiT's shape.
    rec, err = run_child("--child-record", {"HCOPS_MEM_FAST_NODES": "0", "HCOPS_AUTOMEM_FAST_BYTES": "1G",
                                            "LD_PRELOAD": lib})
    if rec is None:
        check(False, "DiT-mini's step recorded by AutoMem", err)
    else:
        for label, min_bytes in (("all", 1), ("default", MiB)):
            r = rec[label]
            check(r["min_bytes"] == min_bytes and r["budget"] == GiB and r["plan_events"] > 0,
                  f"recorded with min_bytes {min_bytes}: a plan made", str({k: r[k] for k in r if k != "events"}))
            built = dit_events(384, 2, min_bytes)
            same = r["events"] == built
            detail = ""
            if not same:
                diff = [(a, b) for a, b in zip(r["events"], built) if a != b][:3]
                detail = f"{len(r['events'])} vs {len(built)} events; first differences {diff}"
            check(same, f"DiT-mini's recorded step (tensors >= {min_bytes} B) is the one built from its "
                        f"shape ({len(built)} events)", detail)
        for xml, budget in budgets.items():
            check_model(f"DiT-mini recorded, {xml}", rec["default"]["events"], budget)

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child-topology"]:
        child_topology()
    elif sys.argv[1:2] == ["--child-record"]:
        child_record()
    else:
        sys.exit(main())
