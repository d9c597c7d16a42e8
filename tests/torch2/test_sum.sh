#!/bin/sh
# PyTorch 2.x's sum over leading dimensions on HCOps (tests/torch2/test_sum.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_sum.py"
