#!/bin/sh
# test_gemm on the serial path: one thread must agree with the reference too.
HCOPS_NUM_THREADS=1
export HCOPS_NUM_THREADS
exec "${HCOPS_TEST_BUILDDIR:-.}/test_gemm" "$@"
