#!/bin/sh
# HCOps' 2.x kernels without memory and under SIGINT (tests/torch2/test_faults.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_faults.py"
