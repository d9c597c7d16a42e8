#!/usr/bin/env python3
"""numpy's own numpy.linalg test suite, unmodified, under libhcops_mem.so,
libhcops.so and both, each compared test by test with a run without them
(see linalg_suites.py).

  HCOPS_LIB=... HCOPS_MEM_LIB=... $PYTHON tests/external/test_numpy_linalg.py [mem|blas|both...]

Exit status: 0 all passed, 1 something failed, 77 pytest or numpy missing (skip),
99 a library not found."""
import sys

import linalg_suites

if __name__ == "__main__":
    sys.exit(linalg_suites.main(["numpy.linalg"] + sys.argv[1:]))
