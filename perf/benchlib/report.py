"""Tables, CSV files, plots, and the machine the figures were measured on."""
import csv
import os
import sys

PROG = os.path.basename(sys.argv[0])


def error(message):
    """A message on stderr, prefixed with the script's name."""
    print(f"{PROG}: {message}", file=sys.stderr)


def preloaded_hcops_warning():
    """A line to print when LD_PRELOAD holds libhcops: the wheel's own calls
    to the BLAS symbols it exports (its MKL sgemm_, which PyTorch reaches
    through the PLT) then run HCOps' GEMM, so a "stock" column is not the
    wheel's (its f32 GEMMs and the flash kernel's products). None otherwise.
    Compare two HCOps builds in separate processes by swapping the build's
    library, or in one process through BLAS with dlopen."""
    if "libhcops" not in os.environ.get("LD_PRELOAD", ""):
        return None
    return ("warning: LD_PRELOAD holds libhcops, which interposes the wheel's own BLAS calls: the 'stock' "
            "column below is partly HCOps, not the wheel's MKL")


def size_label(n):
    """1 MiB, 64 KiB, 8 B: byte counts (int or a JSON key) as the tables show them."""
    n = int(n)
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def not_installed(wanted, found):
    """The configurations asked for but skipped, for the heading line."""
    return ", ".join(n for n in wanted if n not in found) or "none"


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_records(path, records, notes=()):
    """Dicts as CSV rows, the first one's keys as the header (later dicts may
    leave fields out), then each note as a `# ` line (a projection's
    assumptions)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(records[0]))
        w.writeheader()
        w.writerows(records)
        for n in notes:
            f.write(f"# {n}\n")


def read_csv_rows(path):
    """The rows of a CSV this package's write_csv wrote, without its header (for --replot)."""
    with open(path) as f:
        return list(csv.reader(f))[1:]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")


def cpu_label():
    """The CPU's model name and the vector/matrix units the figures depend on."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    units = "AMX" if "amx_bf16" in flags else "AVX512_BF16, no AMX" if "avx512_bf16" in flags else \
        "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{cpu_model()} ({units}), {os.cpu_count()} CPUs"


def load_average():
    """The 1-minute load average (other work on the machine skews a run), to the
    2 decimals the kernel shows."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def pyplot():
    """matplotlib.pyplot drawing to files, or None (said on stderr) if it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        error("matplotlib missing, so no plot: install the Debian package python3-matplotlib")
        return None
    return plt


def plot_here_or_replot(script, plot, rows, columns, png, csv=None):
    """plot() (rows -> png) here when this python has matplotlib (a venv
    often has none), else Debian's python3 runs `script --replot CSV --png
    PNG` on the rows (csv, or a temporary one holding them)."""
    try:
        import matplotlib  # noqa: F401 - only whether it is there
        plot()
        return
    except ImportError:
        pass
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = csv or os.path.join(tmp, "rows.csv")
        if not csv:
            write_csv(path, columns, rows)
        subprocess.run(["/usr/bin/python3", os.path.abspath(script), "--replot", path, "--png", png], check=False)


def write_outputs(script, args, columns, rows, plot):
    """A run's --csv (the rows) and --png (plot(), here or by Debian's python3)."""
    if args.csv:
        write_csv(args.csv, columns, rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot_here_or_replot(script, plot, rows, columns, args.png, args.csv)


def save_plot(fig, path, **savefig_args):
    fig.tight_layout()
    fig.savefig(path, **savefig_args)
    print(f"wrote {path}")


def paired_panels(path, title, rows, columns, group_by, value, tick, ylabel, stock_label, width=10, tick_args=None):
    """HCOps against the wheel's own kernel per CSV row, in one panel per
    value of group_by(row) (sorted): for each row a grey bar, value(row,
    "stock"), beside a blue one, value(row, "hcops"), labelled with the row's
    stock_over_hcops; tick(row) names it, ylabel(group) the panel's axis.
    (torch2_gemm.py, torch2_attention.py, torch2_sum.py.)"""
    plt = pyplot()
    if not plt:
        return
    col = {c: i for i, c in enumerate(columns)}
    groups = sorted({group_by(r) for r in rows})
    fig, axes = plt.subplots(len(groups), 1, figsize=(width, 2.7 * len(groups)), squeeze=False)
    for ax, group in zip(axes[:, 0], groups):
        mine = [r for r in rows if group_by(r) == group]
        x = range(len(mine))
        ax.bar([i - 0.2 for i in x], [value(r, "stock") for r in mine], 0.4, color="tab:gray", label=stock_label)
        ax.bar([i + 0.2 for i in x], [value(r, "hcops") for r in mine], 0.4, color="tab:blue", label="HCOps")
        for i, r in enumerate(mine):
            ax.text(i, max(value(r, "stock"), value(r, "hcops")), f"{float(r[col['stock_over_hcops']]):.2f}x",
                    ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(x), [tick(r) for r in mine], fontsize=7, **(tick_args or {}))
        ax.set_ylabel(ylabel(group), fontsize=8)
        ax.legend(fontsize=7)
    axes[0, 0].set_title(title, fontsize=9)
    save_plot(fig, path)
