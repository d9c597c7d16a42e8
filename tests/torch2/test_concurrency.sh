#!/bin/sh
# HCOps' 2.x kernels from several threads, fork tasks, changing thread
# counts and forked DataLoader workers (tests/torch2/test_concurrency.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
exec "$PYTHON" "${srcdir:-../../tests}/torch2/test_concurrency.py"
