"""The kernel families, for the Python tests that run once per family
(forced with HCOPS_ISA): as tests/families.sh does for the shell tests."""
import os
import re
import subprocess

TESTS = os.path.dirname(os.path.abspath(__file__))


def ops_families():
    """The families with operators (src/ops/families.def)."""
    with open(os.path.join(TESTS, "..", "src", "ops", "families.def")) as f:
        found = re.findall(r"^HCOPS_OPS_FAMILY(?:_VL)?\((\w+)\)$", f.read(), re.M)
    if not found:
        raise RuntimeError("no HCOPS_OPS_FAMILY row in src/ops/families.def")
    return found


def families_here(hcops_info, check=False):
    """The families this CPU runs, in order of preference (hcops-info --families)."""
    return subprocess.run([hcops_info, "--families"], capture_output=True, text=True, check=check).stdout.split()
