"""This machine's measured peaks, which make a call's GFLOPS or GB/s a
fraction: the FMA peak per precision and thread count (hcops-peak: the best
of the ISA families that run the precision), and the STREAM triad bandwidth
(hcops-stream). Measured once per machine, boot and thread count, then
cached in $XDG_CACHE_HOME/hcops/prof-machine.json (~/.cache/...), keyed by
the CPU's model name, its flags, the number of CPUs and the boot: another
CPU (sessions on clouds change them) measures again, and so does the same
model after a reboot, which may be a guest on another host or at another
clock (a 2-core "AMD EPYC" guest measured 263 f32 GFLOPS on one thread in
one session and 287 in the next). Only the current boot's entry for a CPU
is kept. A measuring program built for another architecture, run under
QEMU (a cross build's tests), has entries of its own, keyed also by its ELF
machine and QEMU_CPU: an emulated peak is not this CPU's, nor the other way
round.

A measurement taken while other processes ran is not cached: a 2-thread
peak measured beside a busy core is half the machine's, and, cached, it
made every later figure of that boot say 130-160 % of the "peak" (a 2-core
Zen 4, bf16 234 GFLOPS cached for 456, measured during `make check`).
/proc/stat tells how much of the CPUs' time went elsewhere (other
processes, and steal: the host's other guests) while the program ran;
above QUIET_SHARE it is measured again, up to MEASURE_ATTEMPTS times, and
if no attempt was quiet the best values are used for this run only, with
a warning."""
import hashlib
import json
import os
import resource
import subprocess
import sys


class MachineError(Exception):
    pass


def cpu_identity():
    model, flags = "unknown", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].strip()
    except OSError:
        pass
    key = hashlib.sha1(f"{model}|{flags}|{os.cpu_count()}".encode()).hexdigest()[:16]
    return model, key


def _elf_machine(path):
    """The e_machine of the ELF file at path, or None (not ELF, unreadable)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def program_key(prog):
    """"" for a program of this process's own architecture; for another one
    (run through binfmt_misc and QEMU), its ELF machine and QEMU_CPU."""
    own, theirs = _elf_machine("/proc/self/exe"), _elf_machine(prog) if prog else None
    if own is None or theirs is None or own == theirs:
        return ""
    return f"|elf-machine-{theirs}|QEMU_CPU={os.environ.get('QEMU_CPU', '')}"


def boot_id():
    """The kernel's identifier of this boot ("" where there is none)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _cache_path():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hcops", "prof-machine.json")


def _load():
    try:
        with open(_cache_path()) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _store(cache):
    """None when written, else why not (a read-only home: measured again
    next time, and the source line says so)."""
    path = _cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(cache, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
        return None
    except OSError as e:
        return f"{path}: {e.strerror or e}"


def _run_json(cmd, env=None):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise MachineError(f"{os.path.basename(cmd[0])} failed: {e}") from None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise MachineError(f"{os.path.basename(cmd[0])} printed no result")


# The share of the CPUs' time that other processes (or other guests) may
# take while a measurement runs for it to be cached, and the attempts.
QUIET_SHARE = 0.10
MEASURE_ATTEMPTS = 3
# Ticks of others' time not counted: /proc/stat is kept in clock ticks per
# CPU, and a run of a few ticks (a test's stand-in program) would be "busy"
# with one kernel thread's tick.
NOISE_TICKS = 5


def cpu_ticks():
    """(busy, all) clock ticks so far of the CPUs this process may run on
    (its affinity: a job's cgroup or taskset share of a node), from
    /proc/stat's cpuN lines; busy counts steal. None where it cannot be
    read. Load on the node's other CPUs is not ours to count."""
    try:
        mine = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        mine = None
    busy = total = 0
    seen = False
    try:
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu"):
                    break
                fields = line.split()
                name = fields[0][3:]
                if not name or (mine is not None and int(name) not in mine):
                    continue
                v = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
                if len(v) < 4:
                    return None
                busy += sum(v) - sum(v[3:5])
                total += sum(v)
                seen = True
    except (OSError, ValueError):
        return None
    return (busy, total) if seen else None


def own_ticks():
    """The measuring programs' CPU time (this process's waited-for
    children) and the calling thread's, in clock ticks. The caller's other
    threads (an OpenMP pool still spinning) are others: they compete."""
    c, t = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_THREAD)
    return (c.ru_utime + c.ru_stime + t.ru_utime + t.ru_stime) * os.sysconf("SC_CLK_TCK")


def others_share(run, ticks=cpu_ticks, own=own_ticks):
    """(run(), the share of our CPUs' time that went to other processes,
    threads or guests while it ran: 0..1, or None where /proc/stat cannot
    tell)."""
    before, own0 = ticks(), own()
    result = run()
    after, own1 = ticks(), own()
    if before is None or after is None or after[1] <= before[1]:
        return result, None
    others = (after[0] - before[0]) - (own1 - own0) - NOISE_TICKS
    return result, min(1.0, max(0.0, others / (after[1] - before[1])))


def _best_of(best, values):
    """Each figure's best so far: values is a number or {key: number}."""
    if best is None:
        return values
    if isinstance(values, dict):
        return {k: max(v, best.get(k, v)) for k, v in {**best, **values}.items()}
    return max(best, values)


def measure_quietly(run, what, ticks=cpu_ticks, own=own_ticks):
    """run() -> a number or {key: number}, repeated until one run was quiet
    (at most MEASURE_ATTEMPTS); returns (each figure's best over the runs,
    whether one was quiet). Not quiet: a warning on stderr. A failing
    attempt after a busy one ends the attempts with what they measured."""
    best, shares = None, []
    for _ in range(MEASURE_ATTEMPTS):
        try:
            values, share = others_share(run, ticks, own)
        except MachineError:
            if best is None:
                raise
            break
        best = _best_of(best, values)
        shares.append(share)
        if share is None or share <= QUIET_SHARE:
            return best, True
    lo, hi = round(min(shares) * 100), round(max(shares) * 100)
    print(f"hcops: {what} ran {len(shares)} times while other processes took "
          f"{lo if lo == hi else f'{lo}-{hi}'} % of the CPUs' time; its best figures are "
          f"used for this run only, not cached: measure on a quiet machine for figures to compare with",
          file=sys.stderr)
    return best, False


class Machine:
    """peak(precision, threads) in GFLOPS and bandwidth(threads) in GB/s,
    measured with the programs found by find(name), or given."""

    def __init__(self, find, peak_gflops=None, bandwidth=None, measure=True, ticks=cpu_ticks):
        self.find = find
        self.ticks = ticks  # the CPUs' time, to tell a quiet measurement (tests give their own)
        self.unsaved = {}   # measured on a busy machine: this object's alone
        self.model, self.key = cpu_identity()
        self.boot = boot_id()
        self.given_peak = peak_gflops
        self.given_bw = bandwidth
        self.measure = measure
        self.cache = _load() if measure else {}
        self.sources = set()

    def _entry(self, prog):
        key = self.key + program_key(prog)
        entry = self.cache.get(key)
        if entry is None or entry.get("boot", "") != self.boot:
            entry = self.cache[key] = {"model": self.model, "boot": self.boot, "peak": {}, "triad": {}}
        return entry

    def _measured(self, store, key, run, what):
        """(value, how), how for the source line: store[key] where the cache
        has it ("cached"); else run() measured (measure_quietly), stored and
        cached if quiet, else kept by this object alone for its next calls
        ("busy machine: not cached"). A cache that cannot be written says so
        ("not cached: PATH: reason")."""
        if store.get(key):
            return store[key], "cached"
        slot = (what, key)
        if slot not in self.unsaved:
            got, quiet = measure_quietly(run, what, self.ticks)
            why = "busy machine: not cached"
            if quiet:
                store[key] = got
                unwritten = _store(self.cache)
                if unwritten is None:
                    return got, "cached"
                del store[key]  # not on disk: kept by this object alone, as a busy one's
                why = f"not cached: {unwritten}"
            self.unsaved[slot] = got, why
        return self.unsaved[slot]

    def peak(self, precision, threads):
        if self.given_peak:
            self.sources.add("peak given with --peak-gflops")
            return self.given_peak
        if not self.measure:
            return None
        prog = self.find("hcops-peak")
        entry = self._entry(prog)
        if not prog and not entry["peak"]:
            return None

        def run():
            best = {}
            for name, isa in _run_json([prog, "--json"]).items():
                for prec, by_threads in isa.items():
                    for t, g in by_threads.items():
                        k = f"{prec}:{t}"
                        best[k] = max(g, best.get(k, 0))
                        if name == "avx2" and prec == "f32":
                            best[f"avx2_f32:{t}"] = g
            return best
        peaks, how = self._measured(entry, "peak", run, "hcops-peak")
        self.sources.add(f"peak measured by hcops-peak ({how})")
        value = peaks.get(f"{precision}:{threads}")
        if value is None:  # more threads than CPUs: the whole machine's
            counts = [int(k.split(":")[1]) for k in peaks if k.startswith(precision + ":")]
            value = peaks.get(f"{precision}:{max(counts)}") if counts else None
        if value is None and precision == "bf16" and not any(k.startswith("bf16:") for k in peaks):
            # A CPU without bf16 instructions (hcops-peak measures none):
            # bf16 products run there on the avx2 family's f32 FMAs
            # (kernels/avx2/bf16_tile.h), so its f32 peak is their limit (the
            # f32 one of an older record, which lacks it).
            value = peaks.get(f"avx2_f32:{threads}") or self.peak("f32", threads)
            if value is not None:
                self.sources.add("no bf16 units: bf16 read against the AVX2 f32 FMA peak")
        elif value is not None and precision == "bf16":
            # A CPU whose vdpbf16ps does fewer flops than its FMAs (an Intel
            # Xeon without AMX: 83 against 170 GFLOPS a core): HCOps widens
            # bf16 onto the FMAs there (kernels/avx512_bf16/dot_rate.h), so
            # the faster of the two is a bf16 product's limit.
            f32 = self.peak("f32", threads)
            if f32 is not None and f32 > value:
                value = f32
                self.sources.add("bf16 read against the f32 FMA peak: above the bf16 instructions' on this CPU")
        return value

    def bandwidth(self, threads):
        if self.given_bw:
            self.sources.add("bandwidth given with --bandwidth")
            return self.given_bw
        if not self.measure:
            return None
        prog = self.find("hcops-stream")
        entry = self._entry(prog)
        key = str(threads)
        if not prog and key not in entry["triad"]:
            return None
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        gbs, how = self._measured(entry["triad"], key, lambda: _run_json([prog], env)["triad_gbs_best"],
                                  "hcops-stream")
        self.sources.add(f"bandwidth: hcops-stream triad ({how})")
        return gbs
