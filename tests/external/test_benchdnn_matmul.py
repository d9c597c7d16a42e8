#!/usr/bin/env python3
"""oneDNN's own benchdnn matmul batches (Debian's source package of the
installed libdnnl2, built by benchdnn_build.sh), run without HCOps and under
each route and kernel family, compared case by case (see benchdnn_suites.py).

  HCOPS_LIB=... HCOPS_TEST_BUILDDIR=... HCOPS_TEST_TOP_BUILDDIR=... $PYTHON tests/external/test_benchdnn_matmul.py [ROUTE[:FAMILY]...]

HCOPS_BENCHDNN_SET=full runs every case rather than the quick sample.
Exit status: 0 all passed, 1 something failed, 77 the oneDNN source could
not be fetched (skip), 99 a library or the build tree not found."""
import sys

import benchdnn_suites

if __name__ == "__main__":
    sys.exit(benchdnn_suites.main(["matmul"] + sys.argv[1:]))
