#!/usr/bin/env python3
"""linalg_suites.py on a suite whose outcomes are known (hcops_fake_suite):
under a preload, a test killed by SIGSEGV is reported as crashed, by name,
with faulthandler's fatal error, and the run goes on after it; a test that
fails only under the preload is reported as failed with its message; one
that fails in the baseline too is listed but not counted against HCOps.
Guards the runner's crash handling now that the real suites stop crashing.

Then the same suite as torch_suite.py runs PyTorch's: a test file in its
folder with a -k selection, under a route that is a command prefix (as
hcops-run is); the variables a route sets (LD_LIBRARY_PATH before the
caller's, HCOPS_ISA) and those dropped (the caller's HCOPS_*, PyTorch's
PYTORCH_TEST_*); and debian_source.py's deb-src entries derived from one-line
and deb822 sources, and its one-line error when the source cannot be reached.
Prints "N passed, M failed"."""
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from integration.harness import PYTHON, Report  # noqa: E402

import debian_source  # noqa: E402
import linalg_suites  # noqa: E402

SUITE = "hcops_fake_suite"
FILE = "test_fake.py::"


def check_files_and_prefix(r, mem):
    """test_fake.py run from its folder with -k, stock and under the route
    `env LD_PRELOAD=libhcops_mem.so` (a prefix, as hcops-run is)."""
    suite = linalg_suites.Suite("fake files", ["test_fake.py", "-k", "not after_the_crash"],
                                os.path.join(HERE, SUITE), [])
    route = linalg_suites.Config("env LD_PRELOAD", "prefixed", ["env", f"LD_PRELOAD={mem}"], {})
    workdir = tempfile.mkdtemp(prefix="hcops-runner-")
    quiet = Report()
    with contextlib.redirect_stdout(io.StringIO()):
        base = linalg_suites.baseline(quiet, suite, workdir)
        run = linalg_suites.run_suite(suite, route, workdir)
        broken = linalg_suites.compare(quiet, suite, base, route, run)
    shutil.rmtree(workdir, ignore_errors=True)
    want = [f"{FILE}test_crashes_under_preload", f"{FILE}test_fails_under_preload"]
    r.check(broken == want, "files and -k under a command prefix: the crash and the failure are named",
            ", ".join(broken) or "nothing regressed")
    r.check(f"{FILE}test_after_the_crash" not in base.outcomes and f"{FILE}test_after_the_crash" not in run.outcomes
            and f"{FILE}test_passes" in run.outcomes, "-k deselects in every run and restart",
            ", ".join(sorted(run.outcomes)))


def check_route_env(r):
    """What a route's variables do to the caller's environment."""
    route = linalg_suites.Config("r", "r", [], {"LD_LIBRARY_PATH": "/opt/route/lib", "HCOPS_ISA": "generic"})
    caller = {"LD_LIBRARY_PATH": "/opt/site/lib", "HCOPS_VERBOSE": "1", "PYTORCH_TEST_WITH_SLOW": "1",
              "LD_PRELOAD": "/x.so"}
    saved = {k: os.environ.get(k) for k in caller}
    os.environ.update(caller)
    try:
        env = linalg_suites.child_env(route, "log", "skip", ["/src/support"])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    r.check(env.get("LD_LIBRARY_PATH") == "/opt/route/lib:/opt/site/lib" and env.get("HCOPS_ISA") == "generic",
            "a route's LD_LIBRARY_PATH goes before the caller's; its HCOPS_ISA is set",
            f"LD_LIBRARY_PATH={env.get('LD_LIBRARY_PATH')} HCOPS_ISA={env.get('HCOPS_ISA')}")
    r.check(not {"HCOPS_VERBOSE", "PYTORCH_TEST_WITH_SLOW", "LD_PRELOAD"} & set(env),
            "the caller's HCOPS_*, PYTORCH_TEST_* and LD_PRELOAD do not reach the tests")
    r.check(env["PYTHONPATH"].split(os.pathsep)[:2] == [HERE, "/src/support"], "the suite's import folders are on PYTHONPATH",
            env["PYTHONPATH"])


def check_debian_source(r):
    """deb-src entries from a system's deb ones, and an unreachable mirror."""
    tmp = tempfile.mkdtemp(prefix="hcops-apt-")
    parts = os.path.join(tmp, "sources.list.d")
    os.makedirs(parts)
    with open(os.path.join(tmp, "sources.list"), "w") as f:
        f.write("# a comment\ndeb [signed-by=/k.gpg] http://127.0.0.1:9/debian bookworm main # here\n"
                "deb-src http://127.0.0.1:9/debian bookworm main\n")
    with open(os.path.join(parts, "a.sources"), "w") as f:
        f.write("Types: deb\nURIs: http://127.0.0.1:9/debian-security\nSuites: bookworm-security\n"
                "Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n\n"
                "# off\nTypes: deb\nEnabled: no\nURIs: http://127.0.0.1:9/off\nSuites: x\nComponents: main\n")
    with open(os.path.join(parts, "b.list.disabled"), "w") as f:
        f.write("deb http://127.0.0.1:9/disabled x main\n")
    oneline, deb822 = debian_source.source_entries(os.path.join(tmp, "sources.list"), parts)
    r.check(oneline == "deb-src [signed-by=/k.gpg] http://127.0.0.1:9/debian bookworm main\n",
            "one-line deb entries become deb-src ones, options kept", repr(oneline))
    r.check(deb822.startswith("Types: deb-src\nURIs: http://127.0.0.1:9/debian-security\n") and
            "\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n ." in deb822 and "/off" not in deb822,
            "deb822 stanzas become deb-src ones, an embedded key kept, a disabled one left out", repr(deb822))
    # Nothing listens on port 9: apt-get update fetches no index.
    debian_source._system_source_paths = lambda: (os.path.join(tmp, "sources.list"), parts)
    try:
        debian_source.fetch("python3-torch", os.path.join(tmp, "cache"), ["test"])
        error = None
    except debian_source.FetchError as e:
        error = str(e)
    shutil.rmtree(tmp, ignore_errors=True)
    r.check(error is not None and "\n" not in error, "an unreachable source is one line of error", error or "no error")


def main():
    r = Report()
    proc = subprocess.run([PYTHON, os.path.join(HERE, "linalg_suites.py"), SUITE, "mem"], capture_output=True,
                          text=True, timeout=600)
    out = proc.stdout.splitlines()
    if proc.returncode == 77:
        print("SKIP: " + " ".join(out[-1:]))
        return 77

    def line(prefix, test):
        return next((s.strip() for s in out if s.strip().startswith(prefix) and f"{FILE}{test}" in s), None)

    r.check(proc.returncode == 1, "the run fails (a test regressed)", f"exit {proc.returncode}")
    crash = line("CRASHED:", "test_crashes_under_preload")
    r.check(crash is not None and crash.endswith("killed by SIGSEGV"), "the crashing test is named, with its signal",
            crash or "no CRASHED line")
    r.check(any(s.strip() == "Fatal Python error: Segmentation fault" for s in out),
            "faulthandler's report of the crash is shown")
    failed = line("FAILED:", "test_fails_under_preload")
    r.check(failed is not None and "fails under a preload" in failed, "a failure under the preload, with its message",
            failed or "no FAILED line")
    r.check(line("baseline failed:", "test_fails_in_baseline_too") is not None and
            line("FAILED:", "test_fails_in_baseline_too") is None,
            "a baseline failure is listed, not counted as a regression")
    under = next((s for s in out if s.startswith(f"== {SUITE} under")), "")
    r.check("1 crashed" in under and "1 skipped" in under and "2 failed" in under and "2 passed" in under,
            "the tests after the crash ran (2 passed, 2 failed, 1 crashed, 1 skipped)", under.strip())
    r.check(f"FAIL: {SUITE} under libhcops_mem.so" in proc.stdout and "[2 regressed]" in proc.stdout,
            "the configuration fails with 2 regressions")
    if r.failed:
        print("runner output:\n" + proc.stdout + proc.stderr)
    check_files_and_prefix(r, os.path.abspath(os.environ["HCOPS_MEM_LIB"]))
    check_route_env(r)
    check_debian_source(r)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
