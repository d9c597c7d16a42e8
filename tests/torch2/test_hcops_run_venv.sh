#!/bin/sh
# hcops-run with a PyTorch 2.x venv's python (tests/torch2/test_hcops_run_venv.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_hcops_run_venv.py"
