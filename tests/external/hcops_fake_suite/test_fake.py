"""Known outcomes with and without a preload (see __init__.py); run in file order."""
import os
import signal

import pytest

PRELOADED = bool(os.environ.get("LD_PRELOAD"))


def test_passes():
    pass


def test_fails_in_baseline_too():
    assert False, "fails with and without a preload"


def test_fails_under_preload():
    assert not PRELOADED, "fails under a preload"


def test_crashes_under_preload():
    if PRELOADED:
        os.kill(os.getpid(), signal.SIGSEGV)


def test_after_the_crash():
    pass


@pytest.mark.skip(reason="skipped with and without a preload")
def test_skipped():
    pass
