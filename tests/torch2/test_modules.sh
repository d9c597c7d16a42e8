#!/bin/sh
# PyTorch 2.x's ModuleInfo inputs of the modules HCOps computes (tests/torch2/test_modules.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_modules.py"
