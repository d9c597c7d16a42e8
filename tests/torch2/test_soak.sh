#!/bin/sh
# A small DiT trained under HCOps beside stock PyTorch, batch sizes changing
# (tests/torch2/test_soak.py): SOAK_STEPS steps, 300 in make check, 2000 in
# make check-external.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_soak.py"
