"""Runs oneDNN's own benchdnn correctness batches for one driver (matmul or
ip) without HCOps (the baseline: Debian's libdnnl.so.2 alone) and under each
way of loading HCOps, with each kernel family this CPU runs, and compares the
outcome of every case with the baseline's.

A configuration fails when a case that passes in the baseline (PASSED,
MISTRUSTED or SKIPPED) does not under it: FAILED, UNIMPLEMENTED, crashed
benchdnn, hung, or went missing. Each such case is printed with its
reproducer: the environment and the benchdnn command line. A configuration
in which HCOps ran none of the primitives, or not on the family asked for,
fails too: it would have tested libdnnl against itself.

The cases are benchdnn's own batches (inputs/<driver>/test_<driver>_ci,
_all, _bfloat16, matmul's _multidims), listed by benchdnn itself
(--mode=L), with their f32 and bf16 cases kept (HCOps computes only those;
int8 and f16 go to libdnnl whole, and tests/dnnl checks that forwarding) and
those of at most HCOPS_BENCHDNN_MAX_MACS multiply-adds (default 2^22:
benchdnn's reference computes about 10^8 a second here, and the larger
shapes, 10% of the f32/bf16 ones, would take most of the time). Duplicates are run once. HCOPS_BENCHDNN_SET=quick (the
default, make check) runs a fixed sample of them: the cases of every
combination of data types, direction, post-ops, scales, bias, tags and
runtime dimensions (the smallest problems) and a few larger shapes; full
(make check-external) runs them all.

The routes: preload (LD_PRELOAD=libhcops.so), libpath (LD_LIBRARY_PATH=
<pkglibdir> of HCOps installed into a throw-away DESTDIR: its libdnnl.so.2
copy), and hcops-run (run only where it would differ from preload for a
program that is not Python: another libhcops.so, another OMP_NUM_THREADS,
or a CPU binding). Each runs with HCOPS_ISA=<family> for every family
`hcops-info --families` lists, and with HCOPS_VERBOSE=2, whose exec lines
tell which cases HCOps computed and whose exit summary counts the primitive
executions it forwarded.

    HCOPS_LIB=... HCOPS_TEST_BUILDDIR=... HCOPS_TEST_TOP_BUILDDIR=... python3 benchdnn_suites.py DRIVER [CONFIG...]

CONFIG is ROUTE or ROUTE:FAMILY (preload, libpath, hcops-run; a family or
`default`, HCOPS_ISA unset: the family HCOps picks itself); by default those
HCOPS_BENCHDNN_CONFIGS lists (space-separated), else in the quick set every
family through preload and the default one through the other routes, in the
full set every route with every family. benchdnn itself is built by benchdnn_build.sh, whose status
file (HCOPS_TEST_BUILDDIR/benchdnn/status) says where it is, or why not:
exit 77 (skip) when the oneDNN source could not be fetched."""
import collections
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import linalg_suites
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = {
    "matmul": ["test_matmul_ci", "test_matmul_all", "test_matmul_bfloat16", "test_matmul_multidims"],
    "ip": ["test_ip_ci", "test_ip_all", "test_ip_bfloat16"],
}
ROUTES = ("preload", "libpath", "hcops-run")
# The quick set's configurations: the kernel families through LD_PRELOAD,
# the other routes with the family HCOps picks itself (no HCOPS_ISA).
QUICK_CONFIGS = "preload libpath:default hcops-run:default"
MAX_MACS = int(os.environ.get("HCOPS_BENCHDNN_MAX_MACS", 1 << 22))
QUICK_MAX_MACS = 1 << 20  # the sample's small problems: a few ms each
QUICK_PER_GROUP = 1  # cases of each combination of options in the sample
QUICK_LARGER = 8  # and this many of the larger ones (several cache blocks)
STALL_S = 300  # no case finishing for this long is a hang (the slowest take ~1 s here)
MAX_RESTARTS = 25  # crashes tolerated in one configuration before giving up
PASSING = {"PASSED", "MISTRUSTED", "SKIPPED"}
EXECUTED = {"PASSED", "MISTRUSTED", "FAILED"}  # the primitive ran
# benchdnn's global options keep their value from one case to the next
# (--reset restores only the driver's): each case starts from the defaults.
GLOBAL_DEFAULTS = "--reset --skip-impl= --allow-enum-tags-only= --mem-check= --attr-same-pd-check="
STATUS = re.compile(r"^\d+:([A-Z]+)(?: \(([^)]*)\))? __REPRO: (.*)$")

Run = collections.namedtuple("Run", "outcomes details taken impls executed forwarded seconds problems")


def fail_exit(message, code):
    print(message)
    if code == 1:
        print("0 passed, 1 failed")
    return code


def read_status():
    """(program, inputs folder) from benchdnn_build.sh's status file, or an exit code."""
    path = os.path.join(os.environ.get("HCOPS_TEST_BUILDDIR", "."), "benchdnn", "status")
    try:
        with open(path) as f:
            word, _, rest = f.readline().strip().partition(" ")
    except OSError:
        return None, None, fail_exit(f"ERROR: {path} is missing: benchdnn was not built (make -C tests "
                                     "benchdnn-build runs benchdnn_build.sh)", 99)
    if word == "skip":
        return None, None, fail_exit(f"SKIP: {rest}", 77)
    if word != "ok":
        return None, None, fail_exit(f"FAIL: benchdnn: {rest}", 1)
    program, inputs = rest.split(" ", 1)
    return program, inputs, None


def macs(repro):
    """The multiply-adds of a case, from its problem (the last word of its
    reproducer): matmul's [batch x]MxK:[batch x]KxN, ip's mbNicC[idD][ihH][iwW]ocO."""
    problem = re.sub(r'_?n".*$', "", repro.split()[-1])
    if ":" in problem:
        a, b = ([int(x) for x in part.split("x")] for part in problem.split(":")[:2])
        batch = 1
        for x, y in zip(a[:-2], b[:-2]):
            batch *= max(x, y)
        return batch * a[-2] * a[-1] * b[-1]
    d = dict(re.findall(r"(mb|ic|id|ih|iw|oc)(\d+)", problem))
    n = int(d.get("mb", 2)) * int(d["ic"]) * int(d["oc"])
    for s in ("id", "ih", "iw"):
        n *= int(d.get(s, 1))
    return n


def data_types_hcops_computes(repro):
    """f32 and bf16 configurations (matmul's and ip's default cfg is f32)."""
    cfg = re.search(r"--cfg=(\S+)", repro)
    return not cfg or re.fullmatch(r"(f32|bf16)+", cfg.group(1)) is not None


def signature(repro):
    """A case's combination of options, its problem and tag values left out."""
    sig = []
    for word in repro.split()[1:-1]:
        key, _, value = word.partition("=")
        if key in ("--cfg", "--dir", "--bia_dt", "--skip-impl"):
            sig.append(word)
        elif key == "--attr-post-ops":
            sig.append(key + "=" + "+".join(sorted(set(re.findall(r"(?:^|\+)([a-z_]+)", value)))))
        elif key == "--attr-oscale":
            sig.append(key + "=" + value.split(":")[0] + ("*" if "*" in value else ""))
        elif key in ("--runtime_dims_masks", "--stag", "--wtag", "--dtag", "--strides", "--bia_mask"):
            sig.append(key)
    return " ".join(sorted(sig))


def list_cases(program, inputs, driver):
    """benchdnn's own listing of every batch, deduplicated in order; and
    the counts of what was left out."""
    cases, seen, listed, other_types, larger = [], set(), 0, 0, 0
    for batch in BATCHES[driver]:
        out = subprocess.run([program, f"--{driver}", "--mode=L", f"--batch={os.path.join(inputs, driver, batch)}"],
                             capture_output=True, text=True, errors="replace")
        found = 0
        for line in out.stdout.splitlines():
            m = STATUS.match(line)
            if not m or m.group(1) != "LISTED":
                continue
            found += 1
            repro = " ".join(w for w in m.group(3).split() if w != "--mode=L")
            if repro in seen:
                continue
            seen.add(repro)
            if not data_types_hcops_computes(repro):
                other_types += 1
            elif macs(repro) > MAX_MACS:
                larger += 1
            else:
                cases.append(repro)
        if out.returncode != 0 or not found:
            raise RuntimeError(f"benchdnn --mode=L --batch={batch} listed nothing (exit {out.returncode}): "
                               + " ".join(out.stderr.splitlines()[-3:]))
        listed += found
    return cases, listed, len(seen), other_types, larger


def quick_sample(cases):
    """Every combination of options with its QUICK_PER_GROUP small problems
    that hash lowest, and QUICK_LARGER larger ones: the same cases every run."""
    def crc(c):
        return zlib.crc32(c.encode())
    groups = collections.defaultdict(list)
    for c in cases:
        if macs(c) <= QUICK_MAX_MACS:
            groups[signature(c)].append(c)
    chosen = set()
    for members in groups.values():
        chosen.update(sorted(members, key=crc)[:QUICK_PER_GROUP])
    chosen.update(sorted((c for c in cases if macs(c) > QUICK_MAX_MACS), key=crc)[:QUICK_LARGER])
    return [c for c in cases if c in chosen]


def families(top):
    out = subprocess.run([os.path.join(top, "tools", "hcops-info"), "--families"], capture_output=True, text=True)
    names = out.stdout.split()
    if out.returncode != 0 or not names:
        raise RuntimeError(f"hcops-info --families failed: {out.stderr.strip()}")
    return names


def base_env():
    env = dict(os.environ)
    # The runs see no HCOps setting of the caller's (or of make check's), and
    # no library path of theirs: only what the route under test sets.
    for var in [v for v in env if v.startswith("HCOPS_")] + ["LD_PRELOAD", "LD_LIBRARY_PATH"]:
        env.pop(var, None)
    return env


def install_copy(top, dest):
    """HCOps's shim installed into the DESTDIR `dest`: the folder of its libdnnl.so.2 copy."""
    shutil.rmtree(dest, ignore_errors=True)
    out = subprocess.run(linalg_suites.tree_make("-s", "-C", os.path.join(top, "shim"), "install", f"DESTDIR={dest}"),
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("make install into a DESTDIR failed: " + " ".join(out.stderr.splitlines()[-5:]))
    for root, _, files in os.walk(dest):
        if "libdnnl.so.2" in files and os.path.basename(root) == "hcops":
            return root
    raise RuntimeError(f"make install put no lib/hcops/libdnnl.so.2 under {dest}")


def hcops_run_differs(top, lib):
    """Why hcops-run would run a program that is not Python otherwise than
    LD_PRELOAD=lib does (its --dry-run line), or None."""
    tool = os.path.join(top, "tools", "hcops-run")
    out = subprocess.run([tool, "--dry-run", "true"], env=base_env(), capture_output=True, text=True)
    line = out.stdout.strip()
    if out.returncode != 0:
        return f"its --dry-run failed: {out.stderr.strip()}"
    preload = re.search(r"LD_PRELOAD=([^;]*);", line)
    threads = re.search(r"OMP_NUM_THREADS=(\d+)", line)
    reasons = []
    if not preload or preload.group(1).strip() != lib:
        reasons.append(f"it preloads {preload.group(1).strip() if preload else '?'}")
    if "OMP_NUM_THREADS" not in os.environ and (not threads or int(threads.group(1)) != len(os.sched_getaffinity(0))):
        reasons.append(f"OMP_NUM_THREADS={threads.group(1) if threads else '?'} (libgomp's default: "
                       f"{len(os.sched_getaffinity(0))})")
    if "bound here" in line:
        reasons.append("it binds the CPUs")
    return "; ".join(reasons) or None


def write_batch(path, cases):
    with open(path, "w") as f:
        for c in cases:
            f.write(GLOBAL_DEFAULTS + " " + " ".join(c.split()[1:]) + "\n")


def death(rc):
    if isinstance(rc, str):
        return rc
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited {rc} in the case"


def run_once(cmd, env, log):
    """One benchdnn process, stdout and stderr (HCOps's verbose lines) in
    order into `log`; its return code, or why it was killed. A process whose
    log has not grown for STALL_S is taken for hung."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        rc = linalg_suites.wait_growing(proc, log, STALL_S, poll_s=0.2)
        return f"hung: nothing printed in {STALL_S} s (killed)" if rc is None else rc


def run_cases(program, driver, cases, env, prefix, workdir, tag):
    """Every case under `env`, restarting after the case that crashed or hung."""
    outcomes, details, taken, impls = {}, {}, set(), collections.Counter()
    executed = forwarded = 0
    problems = []
    remaining = list(cases)
    start = time.monotonic()
    for attempt in range(MAX_RESTARTS + 1):
        batch, log = os.path.join(workdir, f"{tag}.batch"), os.path.join(workdir, f"{tag}.log")
        write_batch(batch, remaining)
        rc = run_once(prefix + [program, f"--{driver}", "--mode=C", "-v1", f"--batch={batch}"], env, log)
        current = None
        with open(log, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("run: "):
                    current = line[5:].strip()
                elif line.startswith("hcops_verbose,exec,cpu,"):
                    fields = line.split(",")
                    impls[fields[4]] += 1
                    if current:
                        taken.add(current)
                elif line.startswith("hcops_verbose,total,dnnl,"):
                    m = re.match(r"hcops_verbose,total,dnnl,(\d+) executed by hcops,(\d+) forwarded", line)
                    if m:
                        executed += int(m.group(1))
                        forwarded += int(m.group(2))
                else:
                    m = STATUS.match(line)
                    if m:
                        outcomes[m.group(3).strip()] = m.group(1)
                        if m.group(2):
                            details[m.group(3).strip()] = m.group(2)
                        current = None
        if current is not None:  # benchdnn died (or hung) in this case
            outcomes[current] = "HUNG" if str(rc).startswith("hung") else "CRASHED"
            details[current] = death(rc)
        remaining = [c for c in remaining if c not in outcomes]
        if current is None and (not isinstance(rc, int) or rc < 0):
            problems.append(f"benchdnn {death(rc)} outside any case")
        if current is None or not remaining:
            break
    else:
        problems.append(f"gave up after {MAX_RESTARTS} restarts")
    for c in remaining:
        outcomes.setdefault(c, "MISSING")
    return Run(outcomes, details, taken, impls, executed, forwarded, time.monotonic() - start, problems)


def summary(outcomes):
    counts = collections.Counter(outcomes.values())
    return ", ".join(f"{n} {o.lower()}" for o, n in sorted(counts.items())) or "no cases"


def compare(report, driver, name, reproducer, family, base, run):
    print(f"\n== {driver} under {name}: {summary(run.outcomes)} in {run.seconds:.0f} s")
    broken = [c for c, o in base.outcomes.items() if o in PASSING and run.outcomes.get(c, "MISSING") not in PASSING]
    for c in broken:
        detail = run.details.get(c)
        words = c.split()
        print(f"    {run.outcomes.get(c, 'MISSING')}{f' ({detail})' if detail else ''}: {reproducer} {words[0]} "
              f"--mode=C {' '.join(shlex.quote(w) for w in words[1:])}")
    changed = [c for c, o in run.outcomes.items() if c in base.outcomes and o != base.outcomes[c] and c not in broken]
    for c in changed[:10]:
        print(f"    note: {base.outcomes[c]} in the baseline, {run.outcomes[c]} here: {c}")
    if len(changed) > 10:
        print(f"    note: {len(changed) - 10} more cases changed between passing outcomes")
    ran = [c for c, o in run.outcomes.items() if o in EXECUTED]
    took = [c for c in ran if c in run.taken]
    share = 100.0 * len(took) / len(ran) if ran else 0.0
    print(f"    HCOps computed the {driver} primitive in {len(took)} of the {len(ran)} cases that ran it "
          f"({share:.0f}%), libdnnl in {len(ran) - len(took)}; implementations: "
          + ", ".join(f"{k} {v}" for k, v in sorted(run.impls.items())))
    print(f"    primitive executions (HCOPS_VERBOSE=2 totals, reorders and all): {run.executed} by HCOps, "
          f"{run.forwarded} forwarded to libdnnl")
    # The options of the forwarded cases that no computed case had: what
    # HCOps leaves to libdnnl (doc/dnnl.md), as benchdnn exercised it.
    seen = {o for c in took for o in signature(c).split()}
    alone = collections.Counter(o for c in ran if c not in run.taken for o in set(signature(c).split()) - seen)
    if alone:
        print("    options only forwarded cases had: " + ", ".join(f"{o} ({n})" for o, n in alone.most_common()))
    for line in run.problems:
        print(f"    {line}")
    report.check(not broken and not run.problems, f"{driver} under {name}: every case that passes without HCOps passes",
                 f"{len(broken)} regressed" if broken else "; ".join(run.problems[:1]))
    report.check(bool(took) and f"hcops:{family}" in run.impls,
                 f"{driver} under {name}: HCOps computed primitives, on {family}",
                 f"{len(took)} cases; " + ", ".join(sorted(run.impls)) if run.impls else "no hcops_verbose exec line")


def main(argv):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from integration.harness import Report, library_or_exit

    if not argv or argv[0] not in BATCHES:
        print(__doc__)
        return 99
    driver = argv[0]
    program, inputs, code = read_status()
    if code is not None:
        return code
    lib = library_or_exit()
    top = os.environ.get("HCOPS_TEST_TOP_BUILDDIR")
    if not top or not os.path.isdir(os.path.join(top, "shim")):
        print(f"ERROR: HCOPS_TEST_TOP_BUILDDIR must name the build tree (got {top!r})")
        return 99
    names = families(top)
    quick = os.environ.get("HCOPS_BENCHDNN_SET", "quick") != "full"
    wanted = argv[1:] or os.environ.get("HCOPS_BENCHDNN_CONFIGS", QUICK_CONFIGS if quick else " ".join(ROUTES)).split()
    configs = []
    for w in wanted:
        route, _, family = w.partition(":")
        if route not in ROUTES or (family and family not in names + ["default"]):
            print(f"ERROR: configurations are ROUTE or ROUTE:FAMILY, routes {', '.join(ROUTES)}, families "
                  f"{', '.join(names)} or default (got {w})")
            return 99
        configs += [(route, f) for f in ([family] if family else names)]

    report = Report()
    workdir = tempfile.mkdtemp(prefix=f"hcops-benchdnn-{driver}-")
    try:
        start = time.monotonic()
        cases, listed, distinct, other_types, larger = list_cases(program, inputs, driver)
        selected = quick_sample(cases) if quick else cases
        print(f"== benchdnn {driver}: {', '.join(BATCHES[driver])}: {listed} cases listed, {distinct} distinct; "
              f"{other_types} int8/f16 ones left to libdnnl, {larger} over {MAX_MACS} multiply-adds left out; "
              f"{'quick sample' if quick else 'full'}: {len(selected)} cases")
        base = run_cases(program, driver, selected, base_env(), [], workdir, "baseline")
        print(f"== {driver} without HCOps (the baseline): {summary(base.outcomes)} in {base.seconds:.0f} s")
        bad = [c for c, o in base.outcomes.items() if o not in PASSING]
        for c in bad[:20]:
            print(f"    baseline {base.outcomes[c]}{f' ({base.details[c]})' if c in base.details else ''}: {c}")
        for line in base.problems:
            print(f"    {line}")
        report.check(bool(base.outcomes) and not base.problems and not base.taken,
                     f"{driver} baseline ran without HCOps", f"{len(base.outcomes)} cases")

        # In the build tree and kept: the reproducers of the libpath route use it.
        dest = os.path.join(os.environ.get("HCOPS_TEST_BUILDDIR", "."), "benchdnn", f"destdir-{driver}")
        libdir = install_copy(top, dest) if any(r == "libpath" for r, _ in configs) else None
        differs = hcops_run_differs(top, lib) if any(r == "hcops-run" for r, _ in configs) else None
        if any(r == "hcops-run" for r, _ in configs) and not differs:
            print(f"== hcops-run: for a program that is not Python it sets LD_PRELOAD={lib} and the "
                  "OMP_NUM_THREADS libgomp would take, binding nothing: the preload configurations stand for it")
        for route, family in configs:
            env = base_env()
            env["HCOPS_VERBOSE"] = "2"
            isa = ""
            if family != "default":
                env["HCOPS_ISA"] = family
                isa = f"HCOPS_ISA={family} "
            prefix = []
            if route == "preload":
                env["LD_PRELOAD"] = lib
                shown = f"{isa}LD_PRELOAD={lib}"
            elif route == "libpath":
                env["LD_LIBRARY_PATH"] = libdir
                shown = f"{isa}LD_LIBRARY_PATH={libdir}"
            else:
                if not differs:
                    continue
                prefix = [os.path.join(top, "tools", "hcops-run")]
                shown = f"{isa}{prefix[0]}"
                print(f"== hcops-run differs from LD_PRELOAD here: {differs}")
            run = run_cases(program, driver, selected, env, prefix, workdir, f"{route}-{family}")
            name = f"{route}, HCOPS_ISA={family}" if family != "default" else f"{route}, no HCOPS_ISA"
            compare(report, driver, name, f"{shown} {program}", names[0] if family == "default" else family,
                    base, run)
        print(f"\n== benchdnn {driver}: {time.monotonic() - start:.0f} s in all")
    except RuntimeError as e:
        report.check(False, f"benchdnn {driver}", str(e))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
