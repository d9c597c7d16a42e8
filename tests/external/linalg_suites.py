"""Runs a library's own pytest suite (numpy.linalg, scipy.linalg) as its user
would, once without HCOps (the baseline) and once under each preload, and
compares the outcome of every test with the baseline's. torch_suite.py runs
PyTorch's suite through the same functions: test files of a source tree with
-k selections (a Suite), each under a command prefix (hcops-run) and
variables of its own (a Config).

A configuration fails when a test that passes in the baseline (passed,
xfailed, or skipped) does not under it: fails, errors, crashes the
interpreter, hangs, or goes missing. Tests that already fail in the baseline
are listed but are not HCOps's to answer for.

Each run is `python3 -m pytest --pyargs SUITE -p no:cacheprovider` in a
temporary directory (nothing written beside the installed package; a Suite of
files runs in their folder), with the outcome_log plugin recording each test
as it runs. When the interpreter dies
(signal, hang), the test that was running is named as crashed, with the
fatal error pytest's faulthandler printed, and the run goes on in a new
interpreter after it, deselecting what is already done.

    HCOPS_LIB=... HCOPS_MEM_LIB=... python3 linalg_suites.py SUITE [CONFIG...]

CONFIG is any of: mem (libhcops_mem.so), blas (libhcops.so), both (the two
preloads), mem4k (libhcops_mem.so with HCOPS_MEM_THRESHOLD=4K); by default
those HCOPS_EXTERNAL_CONFIGS lists (space-separated), else all four. Prints PASS/FAIL lines, the lists, the time
each configuration took, and "N passed, M failed"."""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
STALL_S = 900  # no test finishing for this long is a hang (the slowest take ~20 s here)
MAX_RESTARTS = 25  # crashes tolerated in one configuration before giving up
PASSING = {"passed", "xfailed", "skipped", "xpassed"}

Run = collections.namedtuple("Run", "outcomes messages crashed seconds problems")
# What pytest runs: `args` choose the tests (["--pyargs", "numpy.linalg"], or
# test files and -k); `cwd` is where it runs (None: the run's temporary
# directory, so nothing is written beside an installed package); `pythonpath`
# lists folders the tests import from, besides outcome_log's.
Suite = collections.namedtuple("Suite", "name args cwd pythonpath")
# How a run differs from the baseline: `label` names it in the report, `tag`
# names its files; pytest runs under the command `prefix` (hcops-run), with
# the variables `env` set (LD_LIBRARY_PATH's value goes before the caller's).
Config = collections.namedtuple("Config", "label tag prefix env")
BASELINE = Config("no preload", "baseline", [], {})


def tree_make(*args):
    """The command of a make in the build tree (make install into a
    DESTDIR), holding tests/tree_lock.sh's lock: `make check` runs its tests
    in parallel, and two makes in one tree may write the same file."""
    lock = os.path.join(os.environ.get("HCOPS_TEST_BUILDDIR", "."), ".tree.lock")
    return (["flock", lock] if shutil.which("flock") else []) + ["make", *args]


def pyargs_suite(module):
    """An installed package's suite, run as `pytest --pyargs MODULE`."""
    return Suite(module, ["--pyargs", module], None, [])


def preload_config(items):
    """A Config from libraries to preload and HCOPS_* settings ("HCOPS_X=V")."""
    settings = [p for p in items if p.startswith("HCOPS_") and "=" in p]
    libs = [p for p in items if p not in settings]
    env = dict(s.split("=", 1) for s in settings)
    if libs:
        env["LD_PRELOAD"] = " ".join(libs)
    tag = "-".join(os.path.basename(p).split(".")[0] for p in items)
    return Config(" + ".join(os.path.basename(p) for p in items), tag, [], env)


def preload_sets():
    """The configurations by name (their libraries checked to exist)."""
    blas, mem = os.environ.get("HCOPS_LIB"), os.environ.get("HCOPS_MEM_LIB")
    for var, lib in (("HCOPS_LIB", blas), ("HCOPS_MEM_LIB", mem)):
        if not lib or not os.path.isfile(lib):
            print(f"ERROR: {var} must name the library to test (got {lib!r})")
            sys.exit(99)
    blas, mem = os.path.abspath(blas), os.path.abspath(mem)
    # mem4k: every block of 4 KiB or more on libhcops_mem (the issue 13
    # crashes of lstsq, cossin and ldl on complex data showed only there).
    sets = {"mem": [mem], "blas": [blas], "both": [blas, mem], "mem4k": [mem, "HCOPS_MEM_THRESHOLD=4K"]}
    return {name: preload_config(items) for name, items in sets.items()}


def child_env(config, log, skip, pythonpath=()):
    env = dict(os.environ)
    # The suites run as the user would: no HCOps setting of the caller's (or
    # of make check's) leaks in, and only the preloads under test are loaded.
    # PyTorch's switches (PYTORCH_TEST_WITH_SLOW, ..._SKIP_FAST, ...) would
    # change which of its tests run.
    for var in [v for v in env if v.startswith(("HCOPS_", "PYTORCH_TEST"))] + ["LD_PRELOAD"]:
        env.pop(var, None)
    paths = [HERE] + list(pythonpath) + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no .pyc written into the installed package
    env["HCOPS_OUTCOME_LOG"] = log
    env["HCOPS_OUTCOME_SKIP"] = skip
    for var, value in config.env.items():
        if var == "LD_LIBRARY_PATH" and env.get(var):
            value += os.pathsep + env[var]
        env[var] = value
    return env


def read_log(path):
    outcomes, messages, started = {}, {}, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "start" in r:
                started.append(r["start"])
            else:
                outcomes[r["id"]] = r["outcome"]
                if r["message"]:
                    messages[r["id"]] = r["message"]
    running = started[-1] if started and started[-1] not in outcomes else None
    return outcomes, messages, running


def fatal_error(stderr):
    """The faulthandler block ("Fatal Python error: ..." and the stack) without
    pytest's own frames; the end of stderr if there is none."""
    lines = stderr.splitlines()
    first = next((i for i, s in enumerate(lines) if s.startswith("Fatal Python error")), None)
    if first is None:
        return lines[-12:]
    block = []
    for line in lines[first:]:
        if line.startswith("Extension modules"):
            break
        if line.strip() and not any(f"/{m}/" in line for m in ("_pytest", "pluggy")):
            block.append(line)
    return block[:20]


def death(rc):
    if isinstance(rc, str):
        return rc
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def wait_growing(proc, log, stall_s, poll_s=0.5):
    """Waits for `proc`; its return code, or None when the file `log` has not
    grown for `stall_s` seconds (the process is then killed: taken for hung).
    Shared with benchdnn_suites.py."""
    size, since = -1, time.monotonic()
    while proc.poll() is None:
        time.sleep(poll_s)
        now = os.path.getsize(log)
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since > stall_s:
            proc.kill()
            proc.wait()
            return None
    return proc.returncode


def run_once(cmd, workdir, env, log):
    """One pytest session; (returncode or why it was killed, stdout, stderr).
    A session whose log has not grown for STALL_S is taken for hung."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=out, stderr=err, text=True, errors="replace")
        rc = wait_growing(proc, log, STALL_S)
        if rc is None:
            rc = f"hung: no test finished in {STALL_S} s (killed)"
        out.seek(0)
        err.seek(0)
        return rc, out.read(), err.read()


def run_suite(suite, config, workdir):
    """Every test of `suite` under `config`, restarting after each crash."""
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{suite.name}-{config.tag}")
    log, skip = os.path.join(workdir, f"{stem}.jsonl"), os.path.join(workdir, f"{stem}.skip")
    open(log, "w").close()
    open(skip, "w").close()
    env = child_env(config, log, skip, suite.pythonpath)
    cmd = list(config.prefix) + [PYTHON, "-m", "pytest", *suite.args, "-p", "no:cacheprovider", "-p",
                                 "outcome_log", "-q", "--color=no"]
    crashed, problems = {}, []
    start = time.monotonic()
    for attempt in range(MAX_RESTARTS + 1):
        rc, stdout, stderr = run_once(cmd, suite.cwd or workdir, env, log)
        outcomes, messages, running = read_log(log)
        if rc in (0, 1, 5):  # all passed, some failed, none collected: a finished session
            break
        if running is None:  # died outside any test: collection, import, usage
            problems.append(f"pytest {death(rc)} outside any test; its output ends:")
            problems += ["    " + s for s in (stdout.splitlines() + stderr.splitlines())[-15:]]
            break
        crashed[running] = [death(rc)] + fatal_error(stderr)
        with open(skip, "w") as f:
            f.write("".join(t + "\n" for t in list(outcomes) + list(crashed)))
    else:
        problems.append(f"gave up after {MAX_RESTARTS} restarts")
    outcomes, messages, _ = read_log(log)
    for test in crashed:
        outcomes[test] = "crashed"
        messages[test] = crashed[test][0]
    return Run(outcomes, messages, crashed, time.monotonic() - start, problems)


def summary(outcomes):
    counts = collections.Counter(outcomes.values())
    return ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no tests"


def compare(report, suite, base, config, run):
    """Prints `run` against the baseline `base`, and checks that nothing that
    passes there does not under `config`."""
    name = f"{suite.name} under {config.label}"
    print(f"\n== {name}: {summary(run.outcomes)} in {run.seconds:.0f} s")
    broken = sorted(t for t, o in base.outcomes.items() if o in PASSING and run.outcomes.get(t, "missing")
                    not in PASSING)
    for test in broken:
        outcome = run.outcomes.get(test, "missing")
        print(f"    {outcome.upper()}: {test}: {run.messages.get(test, '')}")
        for line in run.crashed.get(test, [])[1:]:
            print(f"        {line}")
    changed = sorted(t for t, o in run.outcomes.items() if t in base.outcomes and o != base.outcomes[t] and
                     t not in broken)
    for test in changed:
        print(f"    note: {test}: {base.outcomes[test]} in the baseline, {run.outcomes[test]} here")
    for line in run.problems:
        print(f"    {line}")
    report.check(not broken and not run.problems, f"{name}: every test that passes in the baseline passes",
                 f"{len(broken)} regressed" if broken else "; ".join(run.problems[:1]))
    return broken


def baseline(report, suite, workdir, config=BASELINE):
    """The run that the others are compared with, printed with the tests that
    do not pass in it; checks that it ran."""
    base = run_suite(suite, config, workdir)
    print(f"== {suite.name} with {config.label} (the baseline): {summary(base.outcomes)} in {base.seconds:.0f} s")
    for test in sorted(t for t, o in base.outcomes.items() if o not in PASSING):
        print(f"    baseline {base.outcomes[test]}: {test}: {base.messages.get(test, '')}")
    for line in base.problems:
        print(f"    {line}")
    report.check(bool(base.outcomes) and not base.problems, f"{suite.name} baseline ran",
                 f"{len(base.outcomes)} tests")
    return base


def main(argv):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from integration.harness import Report

    if len(argv) < 1:
        print(__doc__)
        return 99
    suite = pyargs_suite(argv[0])
    wanted = argv[1:] or os.environ.get("HCOPS_EXTERNAL_CONFIGS", "mem blas both mem4k").split()
    configs = preload_sets()
    if any(w not in configs for w in wanted):
        print(f"ERROR: configurations are {', '.join(configs)} (got {' '.join(wanted)})")
        return 99
    probe = subprocess.run([PYTHON, "-c", f"import pytest, {suite.name}"], env=child_env(BASELINE, "", ""),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: {PYTHON} cannot import pytest and {suite.name}: {probe.stderr.strip().splitlines()[-1:]}")
        return 77
    report = Report()
    workdir = tempfile.mkdtemp(prefix="hcops-external-")
    try:
        base = baseline(report, suite, workdir)
        for w in wanted:
            compare(report, suite, base, configs[w], run_suite(suite, configs[w], workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
