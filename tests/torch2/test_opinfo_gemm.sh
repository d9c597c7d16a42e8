#!/bin/sh
# PyTorch 2.x's OpInfo samples of the GEMM ops (tests/torch2/test_opinfo_gemm.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_opinfo_gemm.py"
