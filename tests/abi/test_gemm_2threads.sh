#!/bin/sh
# test_gemm with a two-thread team, whatever the machine's default.
HCOPS_NUM_THREADS=2
export HCOPS_NUM_THREADS
exec "${HCOPS_TEST_BUILDDIR:-.}/test_gemm" "$@"
