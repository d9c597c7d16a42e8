#!/usr/bin/env python3
"""PyTorch's own tests of the operators HCOps replaces and of the GEMMs it
takes, stock and under hcops-run, LD_PRELOAD and the lib/hcops copies, each
compared test by test with the stock run (see torch_suite.py).
HCOPS_TORCH_SUITE picks the selection: `quick` (make check, the default) or
`full` (make check-external: every group, every route, every kernel family).

  HCOPS_TORCH_SUITE=full ... $PYTHON tests/external/test_torch_suite.py [GROUP...] [ROUTE...]

Exit status: 0 all passed, 1 something failed, 77 PyTorch's source package
cannot be had or pytest, torch or hypothesis missing (skip), 99 the build tree
incomplete."""
import os
import sys

import torch_suite

if __name__ == "__main__":
    sys.exit(torch_suite.main([os.environ.get("HCOPS_TORCH_SUITE", "quick")] + sys.argv[1:]))
