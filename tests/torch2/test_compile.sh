#!/bin/sh
# hcops-run with torch.compile (default and max-autotune), f32 and bf16 (tests/torch2/test_compile.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_compile.py"
