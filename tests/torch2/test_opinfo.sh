#!/bin/sh
# PyTorch 2.x's OpInfo samples of the operators HCOps registers (tests/torch2/test_opinfo.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_opinfo.py"
