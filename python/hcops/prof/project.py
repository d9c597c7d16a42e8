"""--project: every distinct call of the log replayed through HCOps and the
installed peers, one process per library and call, libraries alternated
round by round; per call the median over rounds of its time per call, and
per part and for the whole log what each library would take (calls × time
per call).

  GEMM calls: hcops-replay (tools/replay.c) with a trace of the call repeated
    so that one pass lasts about 5 ms; the fastest of its passes, divided by
    the repetitions. Leading dimensions the call had are kept where they are
    valid column-major ones (a cblas row-major call's may not be): otherwise
    the smallest valid. Peers: HCOps's libhcops.so, Debian's OpenBLAS and BLIS
    (their libblas.so.3 files, not the libblas.so.3 alternative, which may be
    HCOps), oneDNN's dnnl_sgemm; each where it serves the precision. With
    --anchors DIR (or $HCOPS_ANCHORS_VENV), a venv holding the package index's
    mkl and onednn (perf/gemm_replay.py sets one up in build/anchors-venv):
    MKL's sgemm_/dgemm_/cblas_gemm_bf16bf16f32 and oneDNN 3.x's dnnl_sgemm
    and dnnl_gemm_bf16bf16f32 too.
  oneDNN primitives: hcops-dnnl-replay (tools/dnnl_replay.c) rebuilds them from
    their verbose fields; run with libdnnl alone (oneDNN) and with libhcops.so
    preloaded (HCOps). What it cannot rebuild is said and kept at the log's time.
  Operators and MPI calls are not replayed: their measured time is carried
    into every library's total, and said so.
"""
import json
import os
import statistics
import subprocess
import tempfile

MULTIARCH = "/usr/lib/x86_64-linux-gnu"
GEMM_PEERS = {  # name: (library for hcops-replay, precisions it serves)
    "openblas": (f"{MULTIARCH}/openblas-pthread/libblas.so.3", "sd"),
    "blis": (f"{MULTIARCH}/blis-openmp/libblas.so.3", "sd"),
    "onednn": (f"dnnl:{MULTIARCH}/libdnnl.so.2", "s"),
}
# The anchors in a venv of the package index's mkl and onednn: name ->
# (library under its lib/, precisions served).
ANCHOR_PEERS = {"mkl": ("libmkl_rt.so.3", "sdb"), "onednn3": ("dnnl:libdnnl.so.3", "sb")}
PASS_SECONDS = 0.005
MAX_REPEAT = 4096


class ProjectError(Exception):
    pass


def _precision(rec):
    return {"f64": "d", "bf16": "b"}.get(rec.dtype, "s")


def _valid_call(raw):
    ta, tb, m, n, k, alpha, lda, ldb, beta, ldc = raw.split(",")
    m, n, k, lda, ldb, ldc = int(m), int(n), int(k), int(lda), int(ldb), int(ldc)
    rows_a = m if ta in "Nn" else k
    rows_b = k if tb in "Nn" else n
    lda = lda if lda >= max(1, rows_a) else max(1, rows_a)
    ldb = ldb if ldb >= max(1, rows_b) else max(1, rows_b)
    ldc = ldc if ldc >= max(1, m) else max(1, m)
    return f"{ta},{tb},{m},{n},{k},{alpha},{lda},{ldb},{beta},{ldc}"


def _run(cmd, env):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        raise ProjectError(f"{os.path.basename(cmd[0])}: {e}") from None
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ProjectError(f"{os.path.basename(cmd[0])} exited with {p.returncode}: {tail}")
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ProjectError(f"{os.path.basename(cmd[0])} printed no result")


def _env(threads, extra=None):
    env = dict(os.environ)
    for var in ("LD_PRELOAD", "HCOPS_VERBOSE", "ONEDNN_VERBOSE", "DNNL_VERBOSE"):
        env.pop(var, None)
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), BLIS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), HCOPS_NUM_THREADS=str(threads))
    env.update(extra or {})
    return env


class Projector:
    def __init__(self, find, libhcops, threads, rounds, quick, progress, anchors=None):
        self.find = find
        self.anchors = anchors  # the anchors' venv, or None
        self.libhcops = libhcops
        self.threads = threads
        self.rounds = max(1, rounds)
        self.quick = quick
        self.progress = progress
        self.replay = find("hcops-replay")
        self.dnnl_replay = find("hcops-dnnl-replay")
        self.absent = []
        self.notes = []
        self.anchors_found = []

    def _peers(self):
        peers = dict(GEMM_PEERS)
        if self.anchors:
            lib = os.path.join(self.anchors, "lib")
            for name, (file, serves) in ANCHOR_PEERS.items():
                dnnl = file.startswith("dnnl:")
                peers[name] = (("dnnl:" if dnnl else "") + os.path.join(lib, file.removeprefix("dnnl:")), serves)
        return peers

    def _extra_env(self, name):
        """The anchors' libraries find their runtimes through the loader path."""
        if name not in ANCHOR_PEERS:
            return {}
        old = os.environ.get("LD_LIBRARY_PATH")
        return {"LD_LIBRARY_PATH": os.path.join(self.anchors, "lib") + (":" + old if old else "")}

    def gemm_libraries(self, precisions):
        libs = {"hcops": (self.libhcops, "sdb")}
        for name, (path, serves) in self._peers().items():
            if os.path.exists(path.removeprefix("dnnl:")):
                libs[name] = (path, serves)
                if name in ANCHOR_PEERS:
                    self.anchors_found.append(name)
            else:
                self.absent.append(f"{name} ({path.removeprefix('dnnl:')})")
        return {n: v for n, v in libs.items() if any(p in v[1] for p in precisions)}

    def _gemm_time(self, name, lib, precision, call, estimate_ms, tmp):
        repeat = 1 if self.quick else max(1, min(MAX_REPEAT, int(PASS_SECONDS / max(estimate_ms * 1e-3, 1e-7))))
        path = os.path.join(tmp, "call.csv")
        with open(path, "w") as f:
            f.write("transa,transb,m,n,k,alpha,lda,ldb,beta,ldc\n")
            f.write((call + "\n") * repeat)
        cmd = [self.replay] + (["--precision", precision] if precision != "s" else []) + [lib, path,
                                                                                          "2" if self.quick else "3"]
        cpus = sorted(os.sched_getaffinity(0))
        if name == "onednn3" and self.threads < len(cpus):
            # the onednn wheel threads with TBB, which keeps to the CPU mask:
            # the first `threads` CPUs of this process's own
            cmd = ["taskset", "-c", ",".join(map(str, cpus[:self.threads]))] + cmd
        r = _run(cmd, _env(self.threads, self._extra_env(name)))
        return (r["attention_s"] + r["linear_s"]) / repeat

    def project_gemm(self, rows):
        """{call key: {library: seconds per call}} for the GEMM rows."""
        if not rows:
            return {}, {}
        if not self.replay:
            self.notes.append("GEMM calls not replayed: hcops-replay not found")
            return {}, {}
        calls = {}
        for row in rows:
            for rec in row.records:
                key = (_precision(rec), _valid_call(rec.raw))
                c = calls.setdefault(key, {"calls": 0, "ms": [], "rows": set()})
                c["calls"] += 1
                c["ms"].append(rec.ms)
                c["rows"].add(id(row))
        libs = self.gemm_libraries({p for p, _ in calls})
        times = {key: {} for key in calls}
        order = list(libs)
        with tempfile.TemporaryDirectory(prefix="hcops-prof.") as tmp:
            total = len(calls) * self.rounds
            done = 0
            for rnd in range(self.rounds):
                order = order[1:] + order[:1]
                for key, c in calls.items():
                    precision, call = key
                    for name in order:
                        lib, serves = libs[name]
                        if precision not in serves:
                            continue
                        t = self._gemm_time(name, lib, precision, call, statistics.median(c["ms"]), tmp)
                        times[key].setdefault(name, []).append(t)
                    done += 1
                    self.progress(f"GEMM replay: round {rnd + 1}/{self.rounds}, call {done}/{total}")
        return calls, {key: {n: statistics.median(v) for n, v in t.items()} for key, t in times.items()}

    def project_dnnl(self, rows):
        if not rows:
            return {}, {}
        if not self.dnnl_replay:
            self.notes.append("oneDNN primitives not replayed: hcops-dnnl-replay not found")
            return {}, {}
        prims = {}
        for row in rows:
            for rec in row.records:
                p = prims.setdefault(rec.raw, {"calls": 0, "ms": []})
                p["calls"] += 1
                p["ms"].append(rec.ms)
        keys = list(prims)
        times = {k: {} for k in keys}
        with tempfile.TemporaryDirectory(prefix="hcops-prof.") as tmp:
            path = os.path.join(tmp, "primitives.csv")
            with open(path, "w") as f:
                f.write("calls,stock_ms,kind,prop,mds,attrs,aux,problem\n")
                for k in keys:
                    f.write(f"{prims[k]['calls']},{statistics.median(prims[k]['ms']):.4f},{k}\n")
            configs = [("onednn", {}), ("hcops", {"LD_PRELOAD": self.libhcops})]
            for rnd in range(self.rounds):
                if rnd % 2:
                    configs = configs[::-1]
                for name, extra in configs:
                    self.progress(f"oneDNN replay: round {rnd + 1}/{self.rounds}, {name}")
                    cmd = [self.dnnl_replay] + (["--quick"] if self.quick else []) + [path]
                    r = _run(cmd, _env(self.threads, extra))
                    for p in r["primitives"]:
                        k = keys[p["index"]]
                        if "skipped" in p:
                            times[k]["skipped"] = p["skipped"]
                        else:
                            if p.get("err", 0) > 1:
                                raise ProjectError(f"hcops-dnnl-replay: {name} computed primitive {p['index']} "
                                                   f"off the reference ({p['err']} ulps)")
                            times[k].setdefault(name, []).append(p["ms"] * 1e-3)
        out = {}
        for k, t in times.items():
            out[k] = {n: statistics.median(v) for n, v in t.items() if n != "skipped"}
            if "skipped" in t:
                out[k]["skipped"] = t["skipped"]
        return prims, out
