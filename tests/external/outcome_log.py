"""A pytest plugin (`-p outcome_log`) that records each test's progress as it
happens, for linalg_suites.py: junit XML and the terminal summary are written
at the end of a session, so a test that kills the interpreter (SIGSEGV in a
BLAS) leaves neither, while this log names it.

HCOPS_OUTCOME_LOG: the file to append to, one JSON object a line, written
    unbuffered: {"start": nodeid} before a test's setup, then
    {"id": nodeid, "outcome": ..., "message": ...} after its teardown, the
    outcome being passed, failed, error (setup or teardown failed), skipped,
    xfailed or xpassed.
HCOPS_OUTCOME_SKIP: optional file of node ids (one a line) to deselect: the
    tests a previous run already finished or crashed in, so a rerun goes on
    after a crash instead of starting over."""
import json
import os

_fd = None
_phases = {}  # nodeid -> list of (when, outcome, wasxfail, message)


def _write(record):
    if _fd is not None:
        os.write(_fd, (json.dumps(record) + "\n").encode())


def pytest_configure(config):
    global _fd
    path = os.environ.get("HCOPS_OUTCOME_LOG")
    if path:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("HCOPS_OUTCOME_SKIP")
    if not path:
        return
    with open(path) as f:
        skip = {line.rstrip("\n") for line in f if line.strip()}
    kept = [item for item in items if item.nodeid not in skip]
    gone = [item for item in items if item.nodeid in skip]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = kept


def pytest_runtest_logstart(nodeid, location):
    _phases[nodeid] = []
    _write({"start": nodeid})


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[2])
    text = str(report.longrepr or "").strip().splitlines()
    return text[-1] if text else ""


def pytest_runtest_logreport(report):
    message = _message(report) if report.outcome != "passed" else ""
    _phases.setdefault(report.nodeid, []).append(
        (report.when, report.outcome, bool(getattr(report, "wasxfail", None) is not None), message))


def _outcome(phases):
    for when, outcome, xfail, message in phases:
        if outcome == "failed":
            return ("failed" if when == "call" else "error"), message
        if outcome == "skipped":
            return ("xfailed" if xfail else "skipped"), message
    xpass = any(xfail for when, outcome, xfail, _ in phases if when == "call")
    return ("xpassed" if xpass else "passed"), ""


def pytest_runtest_logfinish(nodeid, location):
    outcome, message = _outcome(_phases.pop(nodeid, []))
    _write({"id": nodeid, "outcome": outcome, "message": message})
