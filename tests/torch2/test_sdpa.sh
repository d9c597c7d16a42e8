#!/bin/sh
# PyTorch 2.x's CPU flash attention on HCOps (tests/torch2/test_sdpa.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py"
