#!/usr/bin/env python3
"""linalg_suites.py on a suite whose outcomes are known (hcops_fake_suite):
under a preload, a test killed by SIGSEGV is reported as crashed, by name,
with faulthandler's fatal error, and the run goes on after it; a test that
fails only under the preload is reported as failed with its message; one
that fails in the baseline too is listed but not counted against HCOps.
Guards the runner's crash handling now that the real suites stop crashing.
Prints "N passed, M failed"."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from integration.harness import PYTHON, Report  # noqa: E402

SUITE = "hcops_fake_suite"
FILE = "test_fake.py::"


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
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
