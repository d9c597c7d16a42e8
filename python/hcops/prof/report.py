"""The profile: records grouped by (part, name, shape, dtype, impl), with
calls, total time, share of the profiled time, rate (GFLOPS or GB/s) and
the fraction of the machine's peak or bandwidth; printed as tables (by
routine/operator/primitive, then by shape), written as CSV, drawn as PNG."""
import collections
import csv

from . import cost

PART_TITLE = {"gemm": "BLAS GEMM", "operator": "PyTorch operators", "dnnl": "oneDNN primitives", "mpi": "MPI"}
CSV_FIELDS = ["part", "name", "shape", "dtype", "impl", "calls", "total_ms", "share", "work", "work_per_call",
              "rate", "rate_unit", "peak", "peak_fraction"]


class Row:
    def __init__(self, part, name, shape, dtype, impl):
        self.part, self.name, self.shape, self.dtype, self.impl = part, name, shape, dtype, impl
        self.calls = 0
        self.ms = 0.0
        self.work_kind = "flops"
        self.work = 0.0  # flops or bytes, all calls
        self.threads = collections.Counter()
        self.records = []

    def add(self, rec):
        kind, amount = cost.work(rec)
        self.work_kind = kind
        self.calls += 1
        self.ms += rec.ms
        self.work += amount
        if rec.threads:
            self.threads[rec.threads] += 1
        self.records.append(rec)

    def rate(self):
        """GFLOPS or GB/s (both 1e9 per second), or None."""
        if self.ms <= 0 or self.work <= 0:
            return None
        return self.work / (self.ms * 1e-3) / 1e9

    def unit(self):
        return "GFLOPS" if self.work_kind == "flops" else "GB/s"


def precision_of(dtype):
    if "f64" in dtype:
        return "f64"
    if "bf16" in dtype:
        return "bf16"
    return "f32"


class Profile:
    def __init__(self, log, machine, threads):
        self.log = log
        self.threads = threads
        self.rows = {}
        for rec in log.records:
            key = (rec.part, rec.name, rec.shape, rec.dtype, rec.impl)
            if key not in self.rows:
                self.rows[key] = Row(*key)
            self.rows[key].add(rec)
        self.total_ms = sum(r.ms for r in self.rows.values())
        self.machine = machine
        for row in self.rows.values():
            row.peak = self.peak_of(row)

    def peak_of(self, row):
        if self.machine is None or row.rate() is None or row.part == "mpi":
            return None
        threads = row.threads.most_common(1)[0][0] if row.threads else self.threads
        if row.work_kind == "flops":
            return self.machine.peak(precision_of(row.dtype), threads)
        return self.machine.bandwidth(threads)

    def by_shape(self):
        return sorted(self.rows.values(), key=lambda r: -r.ms)

    def by_name(self):
        groups = {}
        for row in self.rows.values():
            key = (row.part, row.name)
            g = groups.get(key)
            if g is None:
                g = groups[key] = Row(row.part, row.name, f"{0} shapes", row.dtype, row.impl)
                g.shapes = 0
                g.impls = set()
                g.peak = None
            g.shapes += 1
            g.impls.add(row.impl)
            g.calls += row.calls
            g.ms += row.ms
            g.work += row.work
            g.work_kind = row.work_kind
            if row.peak and row.rate():
                # the peak of the group: its rows' peaks weighted by their time
                g.peak_time = getattr(g, "peak_time", 0.0) + row.peak * row.ms
        for g in groups.values():
            g.shape = f"{g.shapes} shape{'s' if g.shapes > 1 else ''}"
            g.impl = ",".join(sorted(g.impls))
            if getattr(g, "peak_time", 0) and g.ms:
                g.peak = g.peak_time / g.ms
        return sorted(groups.values(), key=lambda r: -r.ms)

    def share(self, row):
        return row.ms / self.total_ms if self.total_ms else 0.0


def _fmt_rate(row):
    rate = row.rate()
    return f"{rate:9.1f} {row.unit():<6}" if rate is not None else f"{'':9} {'':<6}"


def _fmt_peak(row):
    rate = row.rate()
    if rate is None or not row.peak:
        return f"{'':>6}"
    return f"{100 * rate / row.peak:5.0f}%"


def print_tables(profile, out, top):
    log = profile.log
    print(f"{len(log.records)} calls, {profile.total_ms:.1f} ms profiled ({log.lines} lines; "
          f"{log.skipped} not verbose lines skipped)", file=out)
    parts = collections.Counter()
    for row in profile.rows.values():
        parts[row.part] += row.ms
    for part, ms in parts.most_common():
        print(f"  {PART_TITLE.get(part, part):<20} {ms:10.1f} ms {100 * ms / profile.total_ms if profile.total_ms else 0:6.1f}%",
              file=out)
    head = f"{'part':<9} {'name':<28} {'calls':>7} {'total ms':>10} {'share':>6} {'rate':>16} {'%peak':>6}  impl"
    print("\nBy routine, operator and primitive", file=out)
    print(head, file=out)
    for row in profile.by_name():
        print(f"{row.part:<9} {row.name:<28} {row.calls:7d} {row.ms:10.2f} {100 * profile.share(row):5.1f}% "
              f"{_fmt_rate(row)} {_fmt_peak(row)}  {row.impl}  ({row.shape})", file=out)
    rows = profile.by_shape()
    shown = rows if top <= 0 else rows[:top]
    print(f"\nBy shape{'' if len(shown) == len(rows) else f' (the {len(shown)} longest of {len(rows)}; --top)'}",
          file=out)
    print(f"{'part':<9} {'name':<28} {'shape':<34} {'dtype':<9} {'calls':>6} {'total ms':>10} {'share':>6} "
          f"{'rate':>16} {'%peak':>6}", file=out)
    for row in shown:
        print(f"{row.part:<9} {row.name:<28} {row.shape[:34]:<34} {row.dtype[:9]:<9} {row.calls:6d} {row.ms:10.2f} "
              f"{100 * profile.share(row):5.1f}% {_fmt_rate(row)} {_fmt_peak(row)}", file=out)
    if log.fallbacks:
        print("\nOperators PyTorch ran itself, and primitives libdnnl ran (HCOps fallbacks)", file=out)
        for (op, dtype, shape, reason), n in sorted(log.fallbacks.items(), key=lambda x: -x[1]):
            print(f"  {op:<28} {dtype:<6} {shape:<24} {reason:<20} {n:6d} calls", file=out)
    if profile.machine is not None and profile.machine.sources:
        print(f"\n%peak: of {'; '.join(sorted(profile.machine.sources))} on {profile.machine.model}, "
              f"at each call's thread count ({profile.threads} where the log does not say)", file=out)
    print("rate: GFLOPS for GEMMs, matmul, inner product, convolution and attention (2 flops per multiply-add); "
          "GB/s for the other operators (each tensor read or written once) and MPI (bytes reduced)", file=out)


def flop_limit(profile):
    """(GFLOP, ms at the peak, ms the calls took) of the profiled calls that do
    flops and have a peak (each at the peak of its precision and threads)."""
    gflop = limit_ms = took_ms = 0.0
    for row in profile.rows.values():
        if row.work_kind == "flops" and row.work > 0 and row.peak:
            gflop += row.work / 1e9
            limit_ms += row.work / (row.peak * 1e9) * 1e3
            took_ms += row.ms
    return gflop, limit_ms, took_ms


def print_limit(profile, out, steps, skipped, step_seconds, stepped=None):
    """The FLOP limit of the profiled work: its flops (from the shapes) at the
    machine's peak; per step when the log's steps are known (from `stepped`,
    the profile of the complete steps alone), and as a fraction of the step's
    measured time when given."""
    gflop, limit_ms, took_ms = flop_limit(profile)
    if not gflop:
        print("\nFLOP limit: n/a (no call with flops and a peak: --no-peak, or no GEMM/primitive in the log)",
              file=out)
        return
    print(f"\nFLOP limit: {gflop:.4g} GFLOP of GEMMs, primitives and attention (from their shapes) take {limit_ms:.4g} ms at the "
          f"peak; those calls took {took_ms:.4g} ms ({100 * limit_ms / took_ms:.0f}% of the limit's rate)"
          + (f"; {skipped} warm-up step(s) left out" if skipped else ""), file=out)
    if steps and stepped is not None:
        s_gflop, s_limit_ms, _ = flop_limit(stepped)
        per = s_limit_ms / steps
        line = (f"per step ({steps} in the log): {s_gflop / steps:.4g} GFLOP, limit {per:.4g} ms, profiled calls "
                f"{stepped.total_ms / steps:.4g} ms")
        if step_seconds:
            line += (f"; the step ({1e3 * step_seconds:.4g} ms measured) runs at {100 * per / (1e3 * step_seconds):.0f}% "
                     "of its FLOP limit")
        print(line, file=out)
    elif step_seconds:
        print("--step-seconds: the log's steps are unknown (no optimizer lines), so no per-step fraction", file=out)


def write_csv(profile, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for row in profile.by_shape():
            rate = row.rate()
            w.writerow([row.part, row.name, row.shape, row.dtype, row.impl, row.calls, f"{row.ms:.6f}",
                        f"{profile.share(row):.6f}", row.work_kind, f"{row.work / row.calls:.17g}" if row.calls else 0,
                        "" if rate is None else f"{rate:.4f}", row.unit(), "" if not row.peak else f"{row.peak:.4f}",
                        "" if rate is None or not row.peak else f"{rate / row.peak:.6f}"])


def write_png(profile, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("matplotlib is not installed (Debian: apt-get install python3-matplotlib); "
                           "no PNG written") from None
    groups = profile.by_name()[:16]
    rest = profile.total_ms - sum(g.ms for g in groups)
    labels = [f"{g.name} ({g.part})" for g in groups] + (["other"] if rest > 1e-9 else [])
    values = [g.ms for g in groups] + ([rest] if rest > 1e-9 else [])
    colors = {"gemm": "#1f77b4", "operator": "#2ca02c", "dnnl": "#ff7f0e", "mpi": "#9467bd"}
    fig, ax = plt.subplots(figsize=(9, 0.38 * len(labels) + 1.6))
    bars = ax.barh(range(len(values)), values,
                   color=[colors.get(g.part, "#7f7f7f") for g in groups] + (["#c7c7c7"] if rest > 1e-9 else []))
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    for bar, v in zip(bars, values):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                f" {v:.1f} ms ({100 * v / profile.total_ms:.1f}%)", va="center", fontsize=7)
    ax.set_xlabel("total time in the log (ms)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(0, max(values) * 1.3 if values else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
