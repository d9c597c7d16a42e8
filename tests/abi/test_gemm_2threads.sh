#!/bin/sh
# test_gemm with a two-thread team, whatever the machine's default, and the
# thin products' paths as the library chooses them by default
# (HCOPS_SKINNY=auto; test_gemm itself takes always unless told).
HCOPS_NUM_THREADS=2
HCOPS_SKINNY=${HCOPS_SKINNY:-auto}
export HCOPS_NUM_THREADS HCOPS_SKINNY
exec "${HCOPS_TEST_BUILDDIR:-.}/test_gemm" "$@"
