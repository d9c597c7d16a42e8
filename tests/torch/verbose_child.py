"""What the dispatcher tests of tests/torch share: the library to test
(HCOPS_TORCH_LIB, set by tests/torch/torch.am and tests/torch2/torch2_env.sh)
and running the test's own file again as a child with HCOPS_VERBOSE=1, whose
standard error the parent reads."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # time_limits
import time_limits  # noqa: E402

SKIP = 77
# The hcops package of this source tree, for the children's `import hcops.torch`.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def library_or_skip():
    """True when HCOPS_TORCH_LIB names a built library; otherwise says why the
    test skips and returns False."""
    lib = os.environ.get("HCOPS_TORCH_LIB", "")
    if not lib or not os.path.isfile(lib):
        print(f"SKIP: libhcops_torch not built (HCOPS_TORCH_LIB={lib!r})")
        return False
    return True


def run_child(script, timeout, drop=()):
    """`script --child` in this interpreter, with HCOPS_VERBOSE=1 and without
    HCOPS_OPS (every operator group) or the variables in drop; its output as
    text. `timeout`: the native limit, scaled by time_limits."""
    env = dict(os.environ, HCOPS_VERBOSE="1")
    for name in ("HCOPS_OPS",) + tuple(drop):
        env.pop(name, None)
    return subprocess.run([sys.executable, script, "--child"], env=env, capture_output=True, text=True,
                          timeout=time_limits.limit(timeout))


def run_test(parent, child):
    """The test's exit status: SKIP without a library; child() in the child
    (`--child`), parent() otherwise."""
    if not library_or_skip():
        return SKIP
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    return parent()
