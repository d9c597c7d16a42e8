#!/bin/sh
# tests/torch/test_weight_cache.py under PyTorch 2.x, against libhcops_torch2.so.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch/test_weight_cache.py"
