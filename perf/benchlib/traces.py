"""The recorded DiT traces of perf/workloads (sgemm_ calls of one training
step) that the replay benchmarks run, and the short subsets of --quick."""
import glob
import os

from .build import PERF

# The four DiT traces, smallest model first (as doc/perf's tables list them).
NAMES = ("dit-s2-bs8-step", "dit-b2-bs4-depth2-step", "dit-l2-bs2-depth2-step", "dit-xl2-bs2-depth2-step")
LABELS = {"dit-s2-bs8-step": "DiT-S/2", "dit-b2-bs4-depth2-step": "DiT-B/2, 2 blocks",
          "dit-l2-bs2-depth2-step": "DiT-L/2, 2 blocks", "dit-xl2-bs2-depth2-step": "DiT-XL/2, 2 blocks"}
HEADER = "transa,transb,m,n,k,alpha,lda,ldb,beta,ldc\n"


def workloads_dir():
    """$HCOPS_WORKLOADS, else perf/workloads (README.md there); None if
    neither exists."""
    for d in (os.environ.get("HCOPS_WORKLOADS"), os.path.join(PERF, "workloads")):
        if d and os.path.isdir(d):
            return os.path.normpath(d)
    return None


def default_traces():
    """The paths of the four DiT traces found (see workloads_dir)."""
    d = workloads_dir()
    if not d:
        return []
    found = {os.path.basename(p).removesuffix(".sgemm.csv"): p for p in glob.glob(os.path.join(d, "*.sgemm.csv"))}
    return [found[n] for n in NAMES if n in found]


def label(path):
    name = os.path.basename(path).removesuffix(".sgemm.csv")
    return LABELS.get(name, name)


def subset(path, folder, calls=12, max_flop=5e7):
    """A trace of the first `calls` calls of path of at most max_flop each (for
    --quick: a check that everything runs, on the slowest path too), written in
    folder under the same name; its path."""
    out = os.path.join(folder, os.path.basename(path))
    kept = []
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) != 10 or not fields[2].isdigit():
                continue
            m, n, k = map(int, fields[2:5])
            if 2.0 * m * n * k <= max_flop:
                kept.append(line if line.endswith("\n") else line + "\n")
            if len(kept) == calls:
                break
    with open(out, "w") as f:
        f.write(HEADER + "".join(kept))
    return out
