#!/usr/bin/env python3
"""hcops.automem on this machine, with PyTorch: children under LD_PRELOAD of
the built libhcops_mem.so ($HCOPS_MEM_LIB), a fast tier forced on node 0
(HCOPS_MEM_FAST_NODES=0) and slow="interleave:0", so that the kernel tells the
two tiers apart: MPOL_PREFERRED node 0 for what AutoMem holds on the fast
tier, MPOL_INTERLEAVE for what it offloaded.

- DiT-mini, 5 AdamW steps of batch 2, without AutoMem, with a budget that
  forces moves (8 MiB of its 21.7 MiB) and with one that holds everything:
  losses and the parameters' SHA-256 identical; at every layer event of the
  planned steps (forward pre-hooks and gradient hooks of our own, run after
  AutoMem's) what AutoMem holds is what the plan says for that event, within
  the budget, and the kernel's policy of every tracked tensor's pages is
  MPOL_PREFERRED node 0 if held, MPOL_INTERLEAVE if not; after the steps the
  same, gradients offloaded (small budget) or kept on the fast tier, Adam's
  state (allocated outside every layer) interleaved; statistics: moves in the
  small-budget run, none but the first prefetch in the large one, the high
  water within the budget.
- A model with a tied parameter (one nn.Parameter in two Linear layers), a
  module called twice per forward and a torch.no_grad() evaluation before
  the first step (while AutoMem records) and between the steps: losses, evaluations and parameters identical to those without
  AutoMem, one tensor for the tied parameter, both calls planned, the budget
  held at every event; the output of a layer (allocated inside its forward)
  and an input's gradient (inside the backward) on the fast policy, an
  activation computed between two layers and a tensor allocated after the
  steps interleaved.
- The budget: HCOPS_MEM_FAST_LIMIT caps it, HCOPS_AUTOMEM_FAST_BYTES sets
  it, and is ignored without a fast tier; a layer larger than the budget is
  said once (`hcops: warning: automem:`) and stays on the slow tier.
- No fast tier (no HCOPS_MEM_FAST_NODES): enable() returns None, installs no
  hook, and one `hcops_verbose,info,automem:` line under HCOPS_VERBOSE=1.
- HCOPS_MEM_STATS=1: the `hcops_automem:` lines at exit, before
  libhcops_mem's; a file pattern (%p): both in the pid's file; a missing
  directory: both on stderr; a malformed HCOPS_AUTOMEM_FAST_BYTES: one `hcops: warning:
  automem:` line, the default budget; the sizes it takes.

Prints ok/FAIL lines; exit 1 on a failure, 77 without torch, 99 without
HCOPS_MEM_LIB.
"""
import hashlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
DIT_DIR = os.path.join(HERE, "..", "..", "perf", "dit")
sys.path.insert(0, SRC_PYTHON)
sys.path.insert(0, HERE)
from automem_harness import check, failures, run_child as harness_run  # noqa: E402

MiB = 1 << 20
SMALL, LARGE = 8 * MiB, 64 * MiB  # DiT-mini: 21.7 MiB of tensors >= 1 MiB, its largest layer 3.4 MiB
TIED_BUDGET = 6 * MiB             # the tied model: 12 MiB, its largest layer 4 MiB
STEPS, BATCH = 5, 2
SLOW = "interleave:0"
CHILD_TIMEOUT_S = 150


# ------------------------------------------------------------------ children
class Watcher:
    """Hooks of ours on every layer AutoMem moves, registered after its own (so
    they run after): at each layer event of a planned step, waits for the
    queued moves and compares what AutoMem holds with the plan, the budget and
    the kernel's policies of the tracked tensors (under no_grad: the budget and
    the policies only)."""

    def __init__(self, am, model, exact):
        import torch
        self.am, self.exact, self.torch = am, exact, torch
        self.on = False
        self.events = 0
        self.problems = []
        self.max_pinned = 0
        for unit, (module, keys) in enumerate(zip(unit_modules(am, model), am.unit_keys)):
            if keys:
                module.register_forward_pre_hook(self._pre(unit))
                module.register_forward_hook(self._post(unit))

    def _pre(self, unit):
        def pre(module, inputs):
            self.look("F", unit)
        return pre

    def _post(self, unit):
        def post(module, inputs, output):
            if not self.torch.is_grad_enabled() or not isinstance(output, self.torch.Tensor):
                return
            if output.requires_grad:
                output.register_hook(lambda grad: self.look("B", unit))
        return post

    def look(self, kind, unit):
        am = self.am
        if not self.on or am.plan is None:
            return
        self.events += 1
        am.shared.drain()
        where = f"{kind} {am.unit_names[unit]}"
        self.max_pinned = max(self.max_pinned, am.shared.pinned)
        if am.shared.pinned > am.shared.budget:
            self.problems.append(f"{where}: {am.shared.pinned} B pinned > budget {am.shared.budget}")
        if not self.torch.is_grad_enabled():
            # An evaluation: whether AutoMem follows its plan there or leaves
            # the tensors as they are, the kernel's policies follow what it holds.
            self.problems += placement_problems(am, where + " (no_grad)")
            return
        if am.cursor == 0 or am.plan.events[am.cursor - 1].unit != unit or am.plan.events[am.cursor - 1].kind != kind:
            self.problems.append(f"{where}: AutoMem's cursor {am.cursor} is not at this event")
            return
        want = set(am.plan.actions[am.cursor - 1].resident)
        held = set(am.resident)
        if (held != want) if self.exact else not held <= want:
            self.problems.append(f"{where}: holds {sorted(held)}, the plan says {sorted(want)}")
        if not set(am.unit_keys[unit]) <= held:
            self.problems.append(f"{where}: its own tensors {sorted(set(am.unit_keys[unit]) - held)} not held")
        self.problems += placement_problems(am, where)


def unit_modules(am, model):
    """The module of each of AutoMem's units, found by the names it gives them
    (the model's own: its class name)."""
    modules = dict(model.named_modules())
    return [modules[n] if n in modules else model for n in am.unit_names]


def placement_problems(am, where):
    from hcops import automem
    out = []
    for key, slot in enumerate(am.slots):
        mode, nodes, pages = automem.placement(slot.tensor())
        want = ("preferred", [0]) if key in am.resident else ("interleave", [0])
        if (mode, nodes) != want or pages != [0]:
            out.append(f"{where}: {slot.name} of key {key} is {mode} {nodes} pages on {pages}, not {want}")
    return out


def child_dit(mode):
    """DiT-mini, STEPS steps; mode "off" (no AutoMem) or "on"."""
    sys.path.insert(0, DIT_DIR)
    import torch
    import dit
    from hcops import automem
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = dit.DiT(*dit.CONFIGS["mini"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    am = automem.enable(model, slow=SLOW) if mode == "on" else None
    watcher = Watcher(am, model, exact=True) if am else None
    gen = torch.Generator().manual_seed(0)
    abar = dit.alphas_cumprod()
    losses = []
    for step in range(STEPS):
        if watcher:
            watcher.on = step >= 1  # the first step is recorded, the plan made at its end
        losses.append(dit.train_step(model, opt, abar, dit.make_batch(gen, BATCH)))
    out = {"losses": losses, "digest": dit.param_digest(model)[1], "enabled": am is not None}
    if am:
        watcher.on = False
        am.shared.drain()
        grads, states = [], []
        for slot in am.slots:
            t = slot.tensor()
            if slot.is_param:
                grads.append(automem.placement(t.grad)[:2] if t.grad is not None else None)
                st = opt.state.get(t, {})
                if "exp_avg" in st:
                    states.append(automem.placement(st["exp_avg"])[:2])
        out.update(events=watcher.events, problems=watcher.problems[:8], n_problems=len(watcher.problems),
                   final=placement_problems(am, "after the steps"), resident=sorted(am.resident),
                   keys=len(am.slots), tensor_bytes=sum(s.nbytes for s in am.slots), keep_grads=am.keep_grads,
                   grads=grads, states=states, stats=automem.statistics(), max_pinned=watcher.max_pinned)
    print(json.dumps(out))


class Tied:
    """Factory of the tied model (so that torch is imported in the child only)."""

    @staticmethod
    def make():
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(512, 1024)     # 2 MiB weight
                self.d = nn.Linear(1024, 1024)    # 4 MiB, called twice
                self.b = nn.Linear(1024, 512)     # 2 MiB
                self.c = nn.Linear(512, 1024)
                self.c.weight = self.a.weight     # tied: the same nn.Parameter
                self.e = nn.Linear(1024, 1024)    # 4 MiB
                self.out = nn.Linear(1024, 16)    # small: not moved
                # A buffer of the model itself (as DiT's pos_embed): the model
                # becomes a layer for its moves, but its forward is not one
                # layer, so it sets no allocation phase.
                self.register_buffer("shift", torch.zeros(1024))

            probe = None  # called with an activation computed between layers

            def forward(self, x):
                h = torch.tanh(self.a(x) + self.shift)
                if self.probe is not None:
                    self.probe(h)
                h = torch.tanh(self.d(h))
                h = torch.tanh(self.d(h))
                h = torch.tanh(self.b(h))
                h = torch.tanh(self.c(h))
                return self.out(torch.tanh(self.e(h)))
        return Net()


def run_tied(automem_on):
    import torch
    from hcops import automem
    torch.manual_seed(1)
    model = Tied.make()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    x_eval = torch.randn(256, 512, generator=gen)
    am = watcher = None
    seen = {}
    if automem_on:
        am = automem.enable(model, slow=SLOW)
        watcher = Watcher(am, model, exact=False)

        def on_e(module, inputs, output):  # the output: allocated inside e's forward
            if torch.is_grad_enabled():
                seen.setdefault("output", automem.placement(output)[:2])
        model.e.register_forward_hook(on_e)

        def between(h):  # tanh's output: allocated outside every layer (the model itself is not one)
            if torch.is_grad_enabled():
                seen.setdefault("between", automem.placement(h)[:2])
        model.probe = between
    losses, evals = [], []

    def evaluate():
        with torch.no_grad():
            evals.append(hashlib.sha256(model(x_eval).numpy().tobytes()).hexdigest())
    evaluate()  # before the first step: while AutoMem records, not a step of the plan
    for step in range(STEPS):
        x = torch.randn(768, 512, generator=gen)  # its gradient: 1.5 MiB, a libhcops_mem block
        y = torch.randn(768, 16, generator=gen)
        if watcher:
            watcher.on = step >= 1
        if am and step == STEPS - 1:  # an input's gradient: allocated in the backward
            x.requires_grad_(True)

            def on_grad(g):
                seen.setdefault("input_grad", automem.placement(g)[:2])
            x.register_hook(on_grad)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        evaluate()
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    out = {"losses": losses, "evals": evals, "digest": digest}
    if am:
        outside = torch.ones(MiB // 2)  # 2 MiB, outside every layer
        unit_of = {n: u for u, n in enumerate(am.unit_names)}
        out.update(keys=len(am.slots), tied_keys=[list(am.unit_keys[unit_of["a"]]), list(am.unit_keys[unit_of["c"]])],
                   d_calls=[len(am.positions.get((k, unit_of["d"]), [])) for k in "FB"],
                   events=watcher.events, problems=watcher.problems[:8], n_problems=len(watcher.problems),
                   max_pinned=watcher.max_pinned, stats=automem.statistics(), seen=seen,
                   outside=automem.placement(outside)[:2])
    return out


def child_tied():
    import torch
    torch.set_num_threads(1)
    print(json.dumps({"off": run_tied(False), "on": run_tied(True)}))


def child_nofast():
    import torch
    from hcops import automem
    models = [torch.nn.Linear(1024, 1024), torch.nn.Linear(1024, 512)]
    got = [automem.enable(m) for m in models]
    hooks = sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in models)
    print(json.dumps({"none": all(a is None for a in got), "hooks": hooks, "stats": automem.statistics(),
                      "tier": automem.fast_tier()}))


def child_stats():
    import torch
    from hcops import automem, mem
    torch.set_num_threads(1)
    torch.manual_seed(0)
    models = [torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.Linear(1024, 512)) for _ in range(2)]
    ams = [automem.enable(m) for m in models]
    tier = automem.fast_tier()
    for m in models:
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            loss = m(torch.randn(64, 512)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(json.dumps({"enabled": all(a is not None for a in ams), "tier": tier, "stats": automem.statistics(),
                      "capacity": mem.stat("fast_capacity"), "limit": mem.stat("fast_limit")}), flush=True)


def child_tier():
    """fast_tier() alone: no torch needed."""
    from hcops import automem
    print(json.dumps({"tier": automem.fast_tier()}))


def child_too_large():
    """A layer of 4 MiB under a 3 MiB budget, 3 steps."""
    import torch
    from torch import nn
    from hcops import automem
    torch.set_num_threads(1)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(512, 1024), nn.Tanh(), nn.Linear(1024, 1024), nn.Tanh(), nn.Linear(1024, 512))
    am = automem.enable(m, slow=SLOW)
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    for _ in range(3):
        loss = m(torch.randn(256, 512)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    am.shared.drain()
    print(json.dumps({"too_large": [am.unit_names[u] for u in am.plan.too_large], "stats": automem.statistics(),
                      "big": automem.placement(m[2].weight)[:2], "final": placement_problems(am, "after")}))


CHILDREN = {"--child-dit": lambda: child_dit(sys.argv[2]), "--child-tied": child_tied,
            "--child-nofast": child_nofast, "--child-stats": child_stats, "--child-tier": child_tier,
            "--child-too-large": child_too_large}


def run_child(mode, args, env_extra):
    return harness_run(__file__, [mode, *args], env_extra, CHILD_TIMEOUT_S, tail=3000)


# ------------------------------------------------------------------- parent
def check_dit(lib):
    fast = {"LD_PRELOAD": lib, "HCOPS_MEM_FAST_NODES": "0"}
    base, err = run_child("--child-dit", ["off"], fast)
    if base is None:
        check(False, "DiT-mini without AutoMem runs", err)
        return
    for label, budget in (("small budget", SMALL), ("large budget", LARGE)):
        got, err = run_child("--child-dit", ["on"], dict(fast, HCOPS_AUTOMEM_FAST_BYTES=str(budget)))
        if got is None or not got["enabled"]:
            check(False, f"DiT-mini with AutoMem, {label}: runs, AutoMem enabled", err if got is None else "")
            continue
        name = f"DiT-mini, {label} ({budget // MiB} MiB of {got['tensor_bytes'] / MiB:.1f})"
        check(got["losses"] == base["losses"] and got["digest"] == base["digest"],
              f"{name}: {STEPS} losses and the parameters' SHA-256 identical to without AutoMem",
              f"{got['losses']} {got['digest'][:12]} vs {base['losses']} {base['digest'][:12]}")
        check(got["events"] >= 20 * (STEPS - 1) and not got["n_problems"],
              f"{name}: at each of {got['events']} layer events, held = the plan's, within the budget, "
              f"kernel policies preferred/interleave accordingly",
              f"{got['n_problems']} problems: {got['problems']}")
        check(not got["final"], f"{name}: after the steps, the {got['keys']} tensors' policies follow what "
                                f"AutoMem holds ({len(got['resident'])} held)", "; ".join(got["final"][:4]))
        s = got["stats"]
        check(s["high_water"] <= budget and got["max_pinned"] <= budget and s["budget"] == budget
              and s["failed_moves"] == 0 and s["refused"] == 0,
              f"{name}: high-water {s['high_water'] / MiB:.1f} MiB within the budget, no move failed or refused",
              str(s))
        want_state = ["interleave", [0]]
        check(got["states"] and all(st == want_state for st in got["states"]),
              f"{name}: Adam's state (allocated outside the layers) interleaved", str(got["states"]))
        if budget == SMALL:
            check(s["prefetched"] > 0 and s["offloaded"] > 0 and s["grads_offloaded"] > 0 and s["fetched"] == 0
                  and len(got["resident"]) < got["keys"],
                  f"{name}: moves: prefetched {s['prefetched'] / MiB:.1f} MiB, offloaded {s['offloaded'] / MiB:.1f} "
                  f"MiB (gradients {s['grads_offloaded'] / MiB:.1f}), no miss", str(s))
            check(not got["keep_grads"] and all(g == want_state for g in got["grads"]),
                  f"{name}: gradients offloaded", str(got["grads"]))
        else:
            check(s["offloaded"] == 0 and s["fetched"] == 0 and s["prefetched"] == got["tensor_bytes"]
                  and len(got["resident"]) == got["keys"],
                  f"{name}: every tensor held, moved once (prefetched {s['prefetched'] / MiB:.1f} MiB), "
                  f"nothing offloaded", str(s))
            check(got["keep_grads"] and all(g == ["preferred", [0]] for g in got["grads"]),
                  f"{name}: gradients (allocated in the backward) kept on the fast tier", str(got["grads"]))


def check_tied(lib):
    env = {"LD_PRELOAD": lib, "HCOPS_MEM_FAST_NODES": "0", "HCOPS_AUTOMEM_FAST_BYTES": str(TIED_BUDGET)}
    got, err = run_child("--child-tied", [], env)
    if got is None:
        check(False, "the tied model runs with and without AutoMem", err)
        return
    off, on = got["off"], got["on"]
    check(on["losses"] == off["losses"] and on["evals"] == off["evals"] and on["digest"] == off["digest"],
          f"tied model: {STEPS} losses, no_grad evaluations and parameters identical to without AutoMem",
          f"{on['losses']} vs {off['losses']}")
    a, c = on["tied_keys"]
    check(on["keys"] == 4 and a == c and len(a) == 1, "tied model: the shared weight is one tensor for both layers",
          str(on["tied_keys"]))
    check(on["d_calls"] == [2, 2], "tied model: both calls of the module used twice are planned, forward and backward",
          str(on["d_calls"]))
    s = on["stats"]
    check(on["events"] > 0 and not on["n_problems"] and s["high_water"] <= TIED_BUDGET
          and on["max_pinned"] <= TIED_BUDGET and s["offloaded"] > 0 and s["prefetched"] > 0,
          f"tied model: budget {TIED_BUDGET // MiB} MiB held at {on['events']} events (high-water "
          f"{s['high_water'] / MiB:.1f} MiB), held within the plan, kernel policies accordingly, moves made",
          f"{on['n_problems']} problems: {on['problems']}; {s}")
    seen = on["seen"]
    check(seen.get("output") == ["preferred", [0]], "a layer's output (allocated in its forward) on the fast policy",
          str(seen))
    check(seen.get("input_grad") == ["preferred", [0]], "an input's gradient (allocated in the backward) on the "
                                                        "fast policy", str(seen))
    check(seen.get("between") == ["interleave", [0]], "an activation computed between two layers in the model's "
                                                       "forward on the slow policy", str(seen))
    check(on["outside"] == ["interleave", [0]], "a tensor allocated outside the layers on the slow policy",
          str(on["outside"]))


def check_messages(lib):
    got, err = run_child("--child-nofast", [], {"LD_PRELOAD": lib, "HCOPS_VERBOSE": "1"})
    if got is None:
        check(False, "no fast tier: the child runs", err)
    else:
        lines = [line for line in err.splitlines() if line.startswith("hcops_verbose,info,automem:")]
        check(got["none"] and got["hooks"] == 0 and not got["stats"]["active"] and got["tier"][0] == 0,
              "no fast tier: enable returns None and installs no hook", str(got))
        check(len(lines) == 1 and "no fast memory tier" in lines[0],
              "no fast tier: one hcops_verbose,info,automem: line says so", str(lines))
        warnings = [line for line in err.splitlines() if "warning" in line]
        check(not warnings, "no fast tier: no warning", str(warnings))

    env = {"LD_PRELOAD": lib, "HCOPS_MEM_FAST_NODES": "0", "HCOPS_MEM_STATS": "1",
           "HCOPS_AUTOMEM_FAST_BYTES": "12X"}
    got, err = run_child("--child-stats", [], env)
    if got is None:
        check(False, "HCOPS_MEM_STATS=1, a malformed budget: the child runs", err)
        return
    lines = err.splitlines()
    warnings = [line for line in lines if line.startswith("hcops: warning: automem:")]
    check(len(warnings) == 1 and "HCOPS_AUTOMEM_FAST_BYTES='12X'" in warnings[0],
          "HCOPS_AUTOMEM_FAST_BYTES=12X: one hcops: warning: automem: line for two models", str(warnings))
    default = min(got["capacity"], got["limit"]) if got["limit"] else got["capacity"]
    s = got["stats"]
    check(got["enabled"] and default > 0 and s["budget"] == default and got["tier"][0] == default
          and s["budget_source"] != "HCOPS_AUTOMEM_FAST_BYTES",
          f"HCOPS_AUTOMEM_FAST_BYTES=12X: the default budget ({default / MiB:.0f} MiB, {s['budget_source']})",
          str(got))
    am_lines = [i for i, line in enumerate(lines) if line.startswith("hcops_automem:")]
    mem_lines = [i for i, line in enumerate(lines) if line.startswith("hcops_mem:")]
    text = "\n".join(lines[i] for i in am_lines)
    check(len(am_lines) == 3 and "2 model(s)" in text and f"budget {default / MiB:.1f} MiB" in text
          and "prefetched" in text and "compute waited" in text,
          "HCOPS_MEM_STATS=1: the three hcops_automem: lines at exit (models, budget, moves, waits)", text)
    check(am_lines and mem_lines and max(am_lines) < min(mem_lines),
          "HCOPS_MEM_STATS=1: AutoMem's lines before libhcops_mem's", f"{am_lines} {mem_lines}")

    # A file pattern: both reports appended to the pid's file; a directory
    # that cannot take it: both on stderr, as libhcops_mem says it does.
    with tempfile.TemporaryDirectory() as tmp:
        env = {"LD_PRELOAD": lib, "HCOPS_MEM_FAST_NODES": "0", "HCOPS_MEM_STATS": os.path.join(tmp, "stats.%p")}
        got, err = run_child("--child-stats", [], env)
        files = os.listdir(tmp)
        lines = open(os.path.join(tmp, files[0])).read().splitlines() if len(files) == 1 else []
        kinds = [line.split(":")[0] for line in lines]
        check(got is not None and len(files) == 1 and files[0].startswith("stats.") and files[0][6:].isdigit()
              and kinds == ["hcops_automem"] * 3 + ["hcops_mem"] * kinds.count("hcops_mem") and "hcops_mem" in kinds
              and not [line for line in err.splitlines() if line.startswith(("hcops_automem:", "hcops_mem:"))],
              "HCOPS_MEM_STATS=dir/stats.%p: AutoMem's lines then libhcops_mem's in the pid's file, none on stderr",
              f"{files} {lines} {err[-500:]}")
        env["HCOPS_MEM_STATS"] = os.path.join(tmp, "missing", "stats")
        got, err = run_child("--child-stats", [], env)
        lines = err.splitlines()
        am_lines = [line for line in lines if line.startswith("hcops_automem:")]
        mem_lines = [line for line in lines if line.startswith("hcops_mem:")]
        check(got is not None and len(am_lines) == 3 and mem_lines and not os.path.exists(os.path.join(tmp, "missing")),
              "HCOPS_MEM_STATS naming a missing directory: AutoMem's lines on stderr, as libhcops_mem's",
              err[-800:])


def check_budget(lib):
    fast = {"LD_PRELOAD": lib, "HCOPS_MEM_FAST_NODES": "0"}
    got, err = run_child("--child-tier", [], dict(fast, HCOPS_MEM_FAST_LIMIT="64M"))
    check(got is not None and got["tier"] == [64 * MiB, "HCOPS_MEM_FAST_LIMIT"],
          "HCOPS_MEM_FAST_LIMIT=64M: the budget is 64 MiB, from it", str(got or err))
    got, err = run_child("--child-tier", [], dict(fast, HCOPS_MEM_FAST_LIMIT="64M", HCOPS_AUTOMEM_FAST_BYTES="512MiB"))
    check(got is not None and got["tier"] == [512 * MiB, "HCOPS_AUTOMEM_FAST_BYTES"],
          "HCOPS_AUTOMEM_FAST_BYTES=512MiB overrides it", str(got or err))
    got, err = run_child("--child-tier", [], {"LD_PRELOAD": lib, "HCOPS_AUTOMEM_FAST_BYTES": "512M"})
    check(got is not None and got["tier"][0] == 0, "HCOPS_AUTOMEM_FAST_BYTES without a fast tier: no budget",
          str(got or err))

    got, err = run_child("--child-too-large", [], dict(fast, HCOPS_AUTOMEM_FAST_BYTES="3M"))
    if got is None:
        check(False, "a layer larger than the budget: the child runs", err)
        return
    warnings = [line for line in err.splitlines() if line.startswith("hcops: warning: automem:")]
    check(got["too_large"] == ["2"] and got["stats"]["in_ddr"] == 1 and len(warnings) == 1
          and "layer 2 uses 4.0 MiB, more than the budget (3.0 MiB): it stays in DDR" in warnings[0],
          "a 4 MiB layer under a 3 MiB budget: too large, said once", f"{got} {warnings}")
    check(got["big"] == ["interleave", [0]] and not got["final"] and got["stats"]["high_water"] <= 3 * MiB,
          "a 4 MiB layer under a 3 MiB budget: its weight stays on the slow tier, the others follow the plan",
          f"{got['big']} {got['final']}")


def check_sizes():
    from hcops.automem import config
    cases = {"16G": 16 << 30, "512M": 512 * MiB, "512MiB": 512 * MiB, "64KB": 64 << 10, "1073741824": 1 << 30,
             " 2g ": 2 << 30, "12X": None, "1.5G": None, "": None, "G": None, "-1M": None, "B": None}
    got = {t: config.parse_size(t) for t in cases}
    check(got == cases, "HCOPS_AUTOMEM_FAST_BYTES sizes: binary units, optional B/iB, malformed ones refused",
          str({t: v for t, v in got.items() if v != cases[t]}))


def main():
    if sys.argv[1:2] and sys.argv[1] in CHILDREN:
        CHILDREN[sys.argv[1]]()
        return 0
    lib = os.environ.get("HCOPS_MEM_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_MEM_LIB must name the libhcops_mem.so to test (got {lib!r})")
        return 99
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {e}")
        return 77
    lib = os.path.abspath(lib)
    check_sizes()
    check_budget(lib)
    check_messages(lib)
    check_tied(lib)
    check_dit(lib)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
