#!/bin/sh
# PyTorch 2.x's add and mul on HCOps (tests/torch2/test_binary.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_binary.py"
