"""perf/scaling_model.py: the network formulas against hand-computed values,
DDP's bucket formation, the projection's invariants (efficiency 1 at one
node, async never slower than blocking, weak efficiency non-increasing), the
single-node prediction equal to the measured step, measure -> project end to
end on DiT-tiny with its CSV and PNG, and clear errors on bad inputs."""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

PERF = os.path.join(os.environ.get("srcdir", "."), "..", "perf")
sys.path.insert(0, PERF)
import scaling_model as sm  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def close(x, y, rel=1e-12):
    return abs(x - y) <= rel * max(abs(x), abs(y), 1e-300)


# ---- formulas
a, b, n = 2e-6, 10e9, 8e6
check(sm.allreduce_time(n, 1, a, b) == 0.0, "one node: no allreduce")
check(close(sm.allreduce_time(n, 2, a, b, "ring"), 2 * a + n / b), "ring, p=2: 2a + n/b")
check(close(sm.allreduce_time(n, 4, a, b, "ring"), 6 * a + 1.5 * n / b), "ring, p=4: 6a + 1.5 n/b")
check(close(sm.allreduce_time(n, 1024, a, b, "ring"), 2046 * a + 2 * 1023 / 1024 * n / b), "ring, p=1024")
check(close(sm.allreduce_time(n, 4, a, b, "recursive-doubling"), 2 * (a + n / b)), "recursive doubling, p=4")
check(close(sm.allreduce_time(n, 1024, a, b, "recursive-doubling"), 10 * (a + n / b)), "recursive doubling, p=1024")
check(close(sm.allreduce_time(n, 1024, a, b, "rabenseifner"), 20 * a + 2 * 1023 / 1024 * n / b), "Rabenseifner")
check(close(sm.allreduce_time(1, 8, a, 1e30, "ring"), 14 * a, 1e-9), "alpha only: ring 2(p-1) alpha")
check(close(sm.allreduce_time(n, 8, 0.0, b, "ring"), 1.75 * n / b), "beta only: ring 2(p-1)/p n/beta")

t = {n: 2 * 3e-6 + n / 5e9 for n in (4096, 65536, 1 << 20, 16 << 20)}
fa, fb = sm.fit_alpha_beta(t)
check(close(fa, 3e-6, 1e-6) and close(fb, 5e9, 1e-6), f"alpha/beta fit of exact 2-rank ring times ({fa}, {fb})")

# ---- buckets: reverse order, first cap 1 MiB, then 25 MiB
MB = 1 << 20
got = sm.ddp_buckets([10 * MB, 20 * MB, 2 * MB, MB // 2, MB // 2])
check(got == [[4, 3], [2, 1, 0]], f"DDP buckets {got}")  # 1 MiB reached at [4, 3]; 25 MiB only with 0
got = sm.ddp_buckets([4] * 10, first_cap=8, cap=12)
check(got == [[9, 8], [7, 6, 5], [4, 3, 2], [1, 0]], f"DDP buckets with small caps {got}")

got = sm.capped_buckets([3, 3, 3, 5, 1], 6)
check(got == [[4, 3], [2, 1], [0]], f"ddp.py's buckets (closed before the cap is passed) {got}")

# ---- projection invariants on a hand-built input
inp = {"model": "test", "gradient_bytes": 100 * MB,
       "steps": [{"batch": 4, "forward": 0.1, "backward": 0.2, "optimizer": 0.02},
                 {"batch": 8, "forward": 0.2, "backward": 0.4, "optimizer": 0.02}],
       "timeline": {"batch": 8, "backward_s": 0.4, "ready_s": []},
       "buckets": [{"bytes": MB, "ready_s": 0.05}, {"bytes": 25 * MB, "ready_s": 0.2},
                   {"bytes": 25 * MB, "ready_s": 0.3}, {"bytes": 49 * MB, "ready_s": 0.4}]}
rows = sm.project(inp, 1.5e-6, 25e9, "ring", 0.9, 1.0, 64)
check(all(rows[0][k] == 1.0 for k in ("weak_sync_eff", "weak_async_eff", "strong_sync_eff", "strong_async_eff")),
      "efficiency 1 at one node")
check(close(rows[0]["weak_sync_s"], 0.62), "one node: the measured step (0.1 + 0.4 + 0.02 s)")
check(all(r["weak_async_s"] <= r["weak_sync_s"] + 1e-15 for r in rows), "async never slower than blocking")
eff = [r["weak_async_eff"] for r in rows]
check(all(x >= y - 1e-15 for x, y in zip(eff, eff[1:])), "weak efficiency non-increasing with nodes")
c = sm.compute_at(inp, 6, 1.0)
check(close(c["forward"], 0.15) and close(c["backward"], 0.3), "compute linear between measured batches")
c = sm.compute_at(inp, 16, 1.0)
check(close(c["backward"], 0.8), "compute proportional above the largest batch")
check(sm.compute_at(inp, 2, 1.0) is None, "no extrapolation below the smallest batch")
# sync exposure at p=2 is the sum of the buckets' ring times
t, exposed = sm.step_time(inp, sm.compute_at(inp, 8, 1.0), 2, 1.5e-6, 25e9, "ring", 0.9, False)
want = sum(2 * 1.5e-6 + bk["bytes"] / 25e9 for bk in inp["buckets"])
check(close(exposed, want), "blocking: every bucket exposed")
t, exposed = sm.step_time(inp, sm.compute_at(inp, 8, 1.0), 2, 1.5e-6, 25e9, "ring", 1.0, True)
last = 2 * 1.5e-6 + 49 * MB / 25e9
check(close(exposed, last, 1e-9), "async, full overlap: only the last bucket (ready at backward's end) exposed")

# ---- end to end, and bad inputs
with tempfile.TemporaryDirectory(prefix="hcops-scaling.") as tmp:
    py = sys.executable
    script = os.path.join(PERF, "scaling_model.py")
    j = os.path.join(tmp, "in.json")
    p = subprocess.run([py, script, "measure", "--model", "tiny", "--batches", "1,2", "--threads", "1",
                        "--steps", "1", "--warmup", "1", "--out", j], capture_output=True, text=True)
    print(p.stdout, p.stderr)
    check(p.returncode == 0 and os.path.exists(j), "measure on DiT-tiny")
    inputs = json.load(open(j))
    check(len(inputs["timeline"]["ready_s"]) == len(inputs["timeline"]["ready_s"]) > 0 and
          all(0 <= r <= inputs["timeline"]["backward_s"] + 1e-6 for r in inputs["timeline"]["ready_s"]),
          "every gradient ready within backward")
    check(sum(bk["bytes"] for bk in inputs["buckets"]) == inputs["gradient_bytes"] == sum(inputs["param_bytes"]),
          "buckets hold every gradient")
    out_csv, out_png = os.path.join(tmp, "s.csv"), os.path.join(tmp, "s.png")
    p = subprocess.run([py, script, "project", "--inputs", j, "--network", "dit-hc", "--global-batch", "64",
                        "--csv", out_csv, "--png", out_png], capture_output=True, text=True)
    print(p.stdout[-1500:], p.stderr)
    check(p.returncode == 0, "project")
    check("DiT-HC paper: 90.6%" in p.stdout and "48.0 GB/s" in p.stdout, "assumptions printed")
    rows = [r for r in csv.DictReader(line for line in open(out_csv) if not line.startswith("#"))]
    check([int(r["nodes"]) for r in rows] == [2**i for i in range(11)], "CSV: 1 to 1024 nodes")
    check(open(out_png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "PNG written")
    bad = os.path.join(tmp, "bad.json")
    for text, what in (("{not json", "not JSON"), ('{"steps": []}', "no 'timeline'"),
                       (json.dumps(dict(inputs, steps=[{"batch": 1}])), "a step without")):
        open(bad, "w").write(text)
        p = subprocess.run([py, script, "project", "--inputs", bad], capture_output=True, text=True)
        check(p.returncode == 2 and what in p.stderr and "Traceback" not in p.stderr,
              f"bad input ({what}): {p.stderr.strip()!r}")
    # The overlap of a DDP step measured by perf/dit/torch_ddp_bench.py, per backend.
    ddp = os.path.join(tmp, "ddp.csv")
    open(ddp, "w").write("# a comment line\nlink,model,batch,backend,step_s,exposed_s,allreduce_alone_s,overlap\n"
                         "1gbit,S,4,gloo,2.3,0.3,1.1,0.7\n1gbit,S,4,hcops,2.5,0.5,1.1,0.5\n"
                         "10gbit,S,4,hcops,2.0,0.06,0.12,0.4\n1gbit,S,4,none,2.0,0.0,,\n")
    ov, note = sm.overlap_from_ddp_csv(ddp, "hcops")
    check(close(ov, 0.45) and "1gbit DiT-S batch 4" in note and "10gbit" in note, f"DDP overlap: {ov}, {note}")
    check(close(sm.overlap_from_ddp_csv(ddp, "gloo")[0], 0.7), "DDP overlap of gloo's rows")
    p = subprocess.run([py, script, "project", "--inputs", j, "--overlap-ddp", ddp, "--overlap-backend", "gloo"],
                       capture_output=True, text=True)
    check(p.returncode == 0 and "70% of what backward could hide" in p.stdout and "'gloo'" in p.stdout,
          f"project --overlap-ddp: {p.stdout[-600:]} {p.stderr}")
    p = subprocess.run([py, script, "project", "--inputs", j, "--overlap-ddp", ddp, "--overlap-backend", "nccl"],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "no row of backend 'nccl'" in p.stderr, f"unknown backend refused: {p.stderr!r}")
    p = subprocess.run([py, script, "project", "--inputs", j, "--overlap", "1.5"], capture_output=True, text=True)
    check(p.returncode == 2 and "not within" in p.stderr, "overlap outside [0, 1] refused")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
