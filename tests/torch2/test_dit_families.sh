#!/bin/sh
# DiT training under hcops-run on each kernel family against stock PyTorch 2.x
# (tests/torch2/test_dit_families.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
HCOPS_INFO=../tools/hcops-info
export HCOPS_INFO
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_dit_families.py"
