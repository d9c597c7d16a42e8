"""perf/automem: layer_traffic.py's accounting on a small model built here
(a module called twice appears twice, its parameters counted once in the
total, a Linear's FLOPs 2 m n k, what ReLU saves for backward) and on
DiT-tiny (parameter bytes = sum(p.numel() * 4), the attention cores'
FLOPs); projection.py's invariants (DDR >= AutoMem >= all-fast, AutoMem =
all-fast when migration is free and everything fits, the stall grows as the
migration bandwidth drops, DiT-XL/2 does not fit a 16 GiB tier at a large
batch and DiT-tiny does), both presets end to end with CSV and PNG, and
clear errors on bad inputs. No timing is judged."""
import copy
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

PERF = os.path.join(os.environ.get("srcdir", "."), "..", "perf")
sys.path.insert(0, os.path.join(PERF, "automem"))
sys.path.insert(0, os.path.join(PERF, "dit"))
import torch  # noqa: E402
from torch import nn  # noqa: E402

import dit  # noqa: E402
import layer_traffic as lt  # noqa: E402
import projection as pj  # noqa: E402

torch.set_num_threads(1)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def close(x, y, rel=1e-9):
    return abs(x - y) <= rel * max(abs(x), abs(y), 1e-300)


# ---- layer_traffic on a small model: lin1 is called twice
class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(8, 8)
        self.act = nn.ReLU()
        self.lin2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin2(self.lin1(self.act(self.lin1(x))))


torch.manual_seed(0)
small = Twice()
x = torch.randn(3, 5, 8)
res = lt.trace(small, lambda: small(x).square().sum(), None, steps=1, warmup=0)
calls = [e for e in res["layers"] if e["kind"] != "glue"]
check([e["name"] for e in calls] == ["lin1", "act", "lin1", "lin2"], f"calls in forward order, lin1 twice: "
      f"{[e['name'] for e in calls]}")
check([e["param_bytes"] for e in calls] == [288, 0, 288, 144], "each call carries its parameters' bytes")
check([e["param_first_use"] for e in calls] == [288, 0, 0, 144], "a parameter's first use only once")
check(res["param_bytes_total"] == sum(p.numel() * 4 for p in small.parameters()) == 432, "parameter bytes total")
check(calls[0]["flops"] == 2 * 15 * 8 * 8 and calls[3]["flops"] == 2 * 15 * 4 * 8, "Linear FLOPs 2 m n k")
check(calls[0]["fwd_op_flops"] == calls[0]["flops"], "the addmm the Linear dispatches has the FLOPs counted")
check(calls[1]["saved_bytes"] == 15 * 8 * 4, f"ReLU saves its output ({calls[1]['saved_bytes']} bytes)")
check(calls[0]["in_bytes"] == calls[0]["out_bytes"] == 480 and calls[3]["out_bytes"] == 240, "in/out bytes")
check(all(e["bwd_source"] in ("measured", "estimated", "residual") and e["bwd_s"] >= 0 for e in res["layers"]),
      "every entry has a backward time and its source")
check(res["optimizer"]["bytes"] == 7 * 432, "AdamW traffic 7 x the parameter bytes")

# ---- layer_traffic on DiT-tiny, end to end (CLI)
with tempfile.TemporaryDirectory(prefix="hcops-automem.") as tmp:
    py = sys.executable
    tj = os.path.join(tmp, "tiny.json")
    p = subprocess.run([py, os.path.join(PERF, "automem", "layer_traffic.py"), "--model", "tiny", "--batch", "2",
                        "--threads", "1", "--steps", "1", "--warmup", "1", "--out", tj], capture_output=True, text=True)
    print(p.stdout, p.stderr[-2000:])
    check(p.returncode == 0 and os.path.exists(tj), "layer_traffic.py on DiT-tiny")
    tiny = json.load(open(tj))
    torch.manual_seed(0)
    model = dit.DiT(*dit.CONFIGS["tiny"])
    want = sum(p.numel() * 4 for p in model.parameters())
    check(tiny["param_bytes_total"] == want == sum(e["param_first_use"] for e in tiny["layers"]),
          f"DiT-tiny parameter bytes {tiny['param_bytes_total']} = sum(p.numel() * 4) = {want}")
    hidden, depth, heads = dit.CONFIGS["tiny"]
    att = [e for e in tiny["layers"] if e["kind"] == "attention"]
    n = tiny["config"]["tokens"]
    check(len(att) == depth and all(e["flops"] == 4 * 2 * heads * n * n * (hidden // heads) == e["fwd_op_flops"]
                                    for e in att), "one attention core per block, 4 b h n^2 d FLOPs")
    lin = [e for e in tiny["layers"] if e["name"] == "blocks.0.mlp.0"][0]
    check(lin["flops"] == 2 * (2 * n) * (4 * hidden) * hidden, "fc1's FLOPs 2 (b n) (4h) h")
    names = [e["name"] for e in tiny["layers"] if e["kind"] != "glue"]
    check(names.index("blocks.0.attn.qkv") < names.index("blocks.0.attn.core") < names.index("blocks.0.attn.proj")
          < names.index("blocks.1.attn.qkv"), "forward order: qkv, core, proj, next block")

    # ---- projection invariants
    if not os.path.isdir(pj.TOPOLOGIES):  # tests/topologies is in every checkout
        print(f"FAIL (the rest not run): no synthetic NUMA topologies in {pj.TOPOLOGIES} (HCOPS_TOPOLOGY_DIR, "
              "else the checkout's tests/topologies)")
        sys.exit(1)
    topo = {p: pj.read_topology(os.path.join(pj.TOPOLOGIES, pj.PRESETS[p]["topology"])) for p in pj.PRESETS}
    lx2 = topo["lx2"]
    check(len(lx2["ranks"]) == 16 and all(r["cores"] == 16 and r["fast_bytes"] == 16 << 30 and r["ddr_sharers"] == 4
                                          for r in lx2["ranks"]), "LX2: 16 clusters of 16 cores, 16 GiB OPM, DDR per die x 4")
    rel = [r for _, r in pj.opm_distances(lx2)]
    check((rel.count("local"), rel.count("same-die"), rel.count("cross-die"), rel.count("cross-cpu")) == (1, 3, 4, 8),
          f"LX2: OPM nodes local/same-die/cross-die/cross-CPU from rank 0 {rel}")
    xm = topo["xeon-max"]
    check(len(xm["ranks"]) == 8 and all(r["cores"] == 14 and r["ddr_sharers"] == 1 for r in xm["ranks"]),
          "Xeon Max SNC4: 8 quadrants of 14 cores, each its own DDR node")

    G = 1e9
    # a hand-built trace: 12 layers of 64 MiB parameters, little compute, 1 GiB of activations
    layers = []
    for i in range(12):
        layers.append({"name": f"l{i}", "kind": "Linear", "param_bytes": 64 << 20, "param_first_use": 64 << 20,
                       "in_bytes": 4 << 20, "out_bytes": 4 << 20, "saved_bytes": 64 << 20, "flops": 2e9,
                       "fwd_op_bytes": (64 << 20) + (8 << 20)})
        layers.append({"name": f"g{i}", "kind": "glue", "param_bytes": 0, "param_first_use": 0, "in_bytes": 0,
                       "out_bytes": 0, "saved_bytes": 16 << 20, "flops": 0, "fwd_op_bytes": 32 << 20})
    hand = {"model": "hand", "batch": 1, "layers": layers, "param_bytes_total": 12 * (64 << 20),
            "peak_activation_bytes": 12 * (80 << 20) + (8 << 20), "optimizer": {"bytes": 7 * 12 * (64 << 20)}}
    fast_cap = 16 << 30

    def mach(mig=20, fast_bytes=fast_cap, ddr=25, fast=400, gflops=500):
        return pj.Machine(fast * G, ddr * G, gflops * 1e9, mig * G, fast_bytes, 15)

    for name, inp in (("hand-built", hand), ("DiT-tiny", tiny)):
        for batch in (1, 16, 256):
            for mig in (0.5, 5, 50, 500):
                for policy in ("always", "worthwhile"):
                    r = pj.project(inp, mach(mig), batch, policy)
                    d, a, f = r["ddr"]["step_s"], r["automem"]["step_s"], r["fast"]["step_s"]
                    if policy == "worthwhile":
                        check(d >= a * (1 - 1e-12) and a >= f * (1 - 1e-12),
                              f"{name} batch {batch}, migration {mig} GB/s, worthwhile: DDR {d:.4g} >= AutoMem "
                              f"{a:.4g} >= all-fast {f:.4g}")
                    else:
                        check(a >= f * (1 - 1e-12), f"{name} batch {batch}, {mig} GB/s: AutoMem {a:.4g} >= all-fast")
        for preset in pj.PRESETS:
            args = pj.argparse.Namespace(preset=preset, fast_gbs=None, ddr_gbs=None, core_gflops=None,
                                         migration_gbs=None, efficiency=None, compute_cores=None, fast_gib=None,
                                         opm_node="local")
            m = pj.machine_from_args(args, topo[preset])[0]
            for policy in ("always", "worthwhile"):
                r = pj.project(inp, m, 8, policy)
                d, a, f = r["ddr"]["step_s"], r["automem"]["step_s"], r["fast"]["step_s"]
                # the paper's policy (always) can lose to DDR when the helper copies slower than DDR reads
                # parameter-bound layers (the hand-built trace on Xeon Max's figures): not an invariant there
                if policy == "worthwhile" or name == "DiT-tiny":
                    check(d >= a >= f, f"{name} on {preset}'s figures, batch 8, {policy}: DDR {d:.4g} >= AutoMem "
                          f"{a:.4g} >= all-fast {f:.4g}")
        r = pj.project(inp, mach(math.inf), 4)
        check(r["fast"]["fits"] and close(r["automem"]["step_s"], r["fast"]["step_s"]) and r["automem"]["stall_s"] == 0,
              f"{name}: free migration, everything fits: AutoMem {r['automem']['step_s']:.6g} = all-fast "
              f"{r['fast']['step_s']:.6g}")

    # one layer, by hand: P parameter bytes, I + O activation bytes, F FLOPs, at batch 2 (activations and FLOPs x 2)
    P, I, O, F = 1e8, 1e7, 1e7, 1e9
    one = {"model": "one", "batch": 1, "param_bytes_total": P, "peak_activation_bytes": I + O,
           "optimizer": {"bytes": 7 * P, "flops": 3 * P},
           "layers": [{"name": "l", "kind": "Linear", "param_bytes": P, "param_first_use": P, "in_bytes": I,
                       "out_bytes": O, "saved_bytes": I, "flops": F, "fwd_op_bytes": P + I + O}]}
    r = pj.project(one, mach(20), 2)
    want = {"ddr": (max(2 * F / 500e9, (P + 2 * (I + O)) / 25e9), max(4 * F / 500e9, (2 * P + 4 * (I + O)) / 25e9),
                    max(3 * P / 500e9, 7 * P / 25e9)),
            "fast": (max(2 * F / 500e9, (P + 2 * (I + O)) / 400e9), max(4 * F / 500e9, (2 * P + 4 * (I + O)) / 400e9),
                     max(3 * P / 500e9, 7 * P / 400e9))}
    for k in ("ddr", "fast"):
        got = (r[k]["forward_s"], r[k]["backward_s"], r[k]["optimizer_s"])
        check(all(close(g, w) for g, w in zip(got, want[k])), f"one layer, {k}: forward, backward, optimizer {got} = {want[k]}")
    a = r["automem"]
    check(close(a["forward_s"], P / 20e9 + want["fast"][0]) and close(a["backward_s"], want["fast"][1] + P / 20e9) and
          close(a["stall_s"], 2 * P / 20e9) and close(a["optimizer_s"], min(want["ddr"][2], 7 * P / 20e9)),
          f"one layer, AutoMem: the first prefetch and the last offload exposed ({a['forward_s']}, {a['backward_s']}, "
          f"{a['stall_s']}, {a['optimizer_s']})")

    stalls = [pj.automem(hand, mach(bw), 4)["stall_s"] for bw in (1000, 100, 30, 10, 3, 1)]
    check(all(b >= a for a, b in zip(stalls, stalls[1:])) and stalls[-1] > stalls[0],
          f"stall grows as migration bandwidth drops: {['%.3g' % s for s in stalls]}")
    r = pj.automem(hand, mach(1), 4)
    check(r["stall_s"] >= 11 * (64 << 20) / G - 1e-9, "at 1 GB/s each 64 MiB prefetch but the first is mostly exposed")
    small_tier = pj.automem(hand, mach(5, fast_bytes=200 << 20), 4)
    check(not small_tier["fits"] and "does not fit" in small_tier["note"], "window larger than the tier refused")
    part = pj.automem(hand, mach(5, fast_bytes=1 << 30), 4)
    check(part["fits"] and 0 < part["activations_in_fast"] < part["activations_saved"],
          "activations partly in the fast tier when it is too small for all")

    # --policy hcops: hcops.automem.plan's placement
    for batch in (1, 16):
        r = pj.project(hand, mach(20), batch, "hcops")
        a, d, f = r["automem"], r["ddr"]["step_s"], r["fast"]["step_s"]
        check(a["migrated_bytes"] == 0 and a["stall_s"] == 0 and d >= a["step_s"] >= f * (1 - 1e-12),
              f"hcops plan, batch {batch}: the parameters fit the tier, nothing moves, DDR {d:.4g} >= "
              f"AutoMem {a['step_s']:.4g} >= all-fast {f:.4g}")
    budget = 200 << 20  # three of the twelve 64 MiB layers
    runs = [pj.automem_hcops(hand, mach(bw), 4, budget) for bw in (math.inf, 100, 10, 1)]
    check(all(r["window_bytes"] <= budget for r in runs) and all(r["migrated_bytes"] > 0 for r in runs),
          f"hcops plan, 200 MiB budget: pinned {runs[0]['window_bytes'] / 2**20:.0f} MiB within it, layers move")
    check(runs[0]["stall_s"] == 0 and all(b["stall_s"] >= a["stall_s"] for a, b in zip(runs, runs[1:]))
          and runs[-1]["stall_s"] > 0, f"hcops plan: no stall with free migration, growing as it slows: "
          f"{[round(r['stall_s'], 4) for r in runs]}")
    slow0 = pj.automem_hcops(hand, mach(1), 4, 0)["stall_s"]
    check(runs[-1]["stall_s"] > slow0 + 10 * (64 << 20) / G,
          f"hcops plan at 1 GB/s: the window's prefetches are exposed on top of the gradients' offload "
          f"({runs[-1]['stall_s']:.3f} s against {slow0:.3f} s with budget 0)")
    tight = pj.automem_hcops(hand, mach(20), 4, 0)
    check(tight["window_bytes"] == 0 and tight["migrated_bytes"] == hand["param_bytes_total"]
          and tight["activations_in_fast"] == tight["activations_saved"],
          f"hcops plan, budget 0: no parameter moves, only the gradients' offload "
          f"({tight['migrated_bytes'] / 2**20:.0f} MiB), activations in the fast tier")

    # DiT-XL/2's size: parameters counted from the blocks (the formula checked on tiny, mini and S), activations
    # bounded below by the inputs the 4 Linears of a block save (7 h floats per token)
    def dit_params(h, depth, heads):
        block = 6 * h * h + 6 * h + 3 * h * h + 3 * h + h * h + h + 4 * h * h + 4 * h + 4 * h * h + h
        emb = (4 * 4 * h + h) + (256 * h + h + h * h + h) + 1001 * h
        final = (h * 2 * h + 2 * h) + (h * 32 + 32)
        return depth * block + emb + final
    for cfg in ("tiny", "mini", "S"):
        torch.manual_seed(0)
        count = sum(p.numel() for p in dit.DiT(*dit.CONFIGS[cfg]).parameters())
        check(dit_params(*dit.CONFIGS[cfg]) == count, f"DiT-{cfg} parameter formula ({count})")
    h, depth, heads = dit.CONFIGS["XL"]
    xl = {"model": "DiT-XL/2 (sizes only)", "batch": 1, "layers": tiny["layers"],
          "param_bytes_total": 4 * dit_params(h, depth, heads),
          "peak_activation_bytes": depth * 256 * 7 * h * 4, "optimizer": {"bytes": 0}}
    check(dit_params(h, depth, heads) + 256 * h == 675129632,
          "DiT-XL/2: 675,129,632 parameters with the authors' frozen position embedding (a buffer here)")
    m16 = mach(20)
    check(not pj.project(xl, m16, 64)["fast"]["fits"], "DiT-XL/2 at batch 64 does not fit a 16 GiB tier")
    check(pj.project(tiny, m16, 64)["fast"]["fits"], "DiT-tiny at batch 64 fits")

    # ---- projection CLI, both presets
    script = os.path.join(PERF, "automem", "projection.py")
    xj = os.path.join(tmp, "xl.json")
    json.dump(xl, open(xj, "w"))
    for preset in ("lx2", "xeon-max"):
        out_csv, out_png = os.path.join(tmp, preset + ".csv"), os.path.join(tmp, preset + ".png")
        p = subprocess.run([py, script, "--inputs", tj, "--preset", preset, "--batch", "32", "--csv", out_csv,
                            "--png", out_png], capture_output=True, text=True)
        print(p.stdout[-2500:], p.stderr[-2000:])
        check(p.returncode == 0, f"projection on {preset}")
        check("assumed" in p.stdout and "per-core peak" in p.stdout and "migration" in p.stdout,
              f"{preset}: assumptions printed")
        if preset == "lx2":
            check("50%" in p.stdout and "37%" in p.stdout and "10%" in p.stdout, "LX2: the paper's remote OPM figures")
        else:
            check("public" in p.stdout and "1 TB/s" in p.stdout, "Xeon Max: public figures marked public")
        rows = [r for r in csv.DictReader(line for line in open(out_csv) if not line.startswith("#"))]
        check([r["placement"] for r in rows[:3]] == ["DDR", "AutoMem", "all-fast"] and
              any(r["placement"] == "AutoMem-sweep" for r in rows), f"{preset}: CSV placements and sweep")
        check(open(out_png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"{preset}: PNG written")
        p = subprocess.run([py, script, "--inputs", xj, "--preset", preset, "--batch", "64"],
                           capture_output=True, text=True)
        check(p.returncode == 0 and "does not fit" in p.stdout, f"{preset}: DiT-XL/2 batch 64 'does not fit' printed")
    p = subprocess.run([py, script, "--inputs", tj, "--opm-node", "cross-cpu"], capture_output=True, text=True)
    check(p.returncode == 0 and "x 0.1 (cross-cpu OPM) = 40 GB/s" in p.stdout, "remote OPM: 10% across CPUs")

    bad = os.path.join(tmp, "bad.json")
    for text, what in (("{not json", "not JSON"), ('{"layers": []}', "no 'batch'"),
                       (json.dumps(dict(copy.deepcopy(tiny), layers=[{"name": "x"}])), "without a valid")):
        open(bad, "w").write(text)
        p = subprocess.run([py, script, "--inputs", bad], capture_output=True, text=True)
        check(p.returncode == 2 and what in p.stderr and "Traceback" not in p.stderr,
              f"bad input ({what}): {p.stderr.strip()!r}")
    p = subprocess.run([py, script, "--inputs", tj, "--efficiency", "1.5"], capture_output=True, text=True)
    check(p.returncode == 2 and "not within" in p.stderr, "efficiency outside (0, 1] refused")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
