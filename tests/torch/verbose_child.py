"""What the dispatcher tests of tests/torch share: the library to test
(HCOPS_TORCH_LIB, set by tests/torch/torch.am and tests/torch2/torch2_env.sh)
and running the test's own file again as a child with HCOPS_VERBOSE=1, whose
standard error the parent reads."""
import os
import subprocess
import sys

SKIP = 77


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
    text."""
    env = dict(os.environ, HCOPS_VERBOSE="1")
    for name in ("HCOPS_OPS",) + tuple(drop):
        env.pop(name, None)
    return subprocess.run([sys.executable, script, "--child"], env=env, capture_output=True, text=True,
                          timeout=timeout)
