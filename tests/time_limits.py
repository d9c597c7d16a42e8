"""Wall-clock limits for the children the Python tests start (tests/time_limits.sh
for the shell tests). A limit is there so that a hang is reported rather than
waited out, and each is sized for a native run on a quiet machine. Elsewhere
wall time passes without the child's work being slow: under QEMU (a cross
build's tests, make check-aarch64: HCOPS_TEST_EMULATED=yes) the same child runs
ten to fifty times slower, and on a machine the run shares, or while the run is
stopped (SIGSTOP, a suspended batch job), it makes no progress at all. Each
limit is therefore multiplied by HCOPS_TEST_TIME_SCALE when that is set (a
number > 0, below 10^6), otherwise by 8 under emulation and 1 natively. The C
tests' own alarms scale the same way (common/time_limit.h)."""
import functools
import os
import re
import sys

EMULATED = 8


@functools.lru_cache(maxsize=None)  # said once
def scale():
    given = os.environ.get("HCOPS_TEST_TIME_SCALE", "")
    if given:
        # The grammar time_limits.sh accepts, so that both scale alike.
        if re.fullmatch(r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?", given) and 0 < float(given) < 1e6:
            return float(given)
        print(f"time_limits: HCOPS_TEST_TIME_SCALE={given} is not a number between 0 and 10^6; ignored", file=sys.stderr)
    return EMULATED if os.environ.get("HCOPS_TEST_EMULATED") == "yes" else 1


def limit(seconds):
    """`seconds`, a native limit, scaled for where the test runs: whole
    seconds, rounded half up, at least 1 (as time_limits.sh and
    common/time_limit.h give it)."""
    return max(1, int(seconds * scale() + 0.5))
