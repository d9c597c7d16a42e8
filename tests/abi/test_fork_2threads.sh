#!/bin/sh
# test_fork needs a multithreaded parent: fork after a two-thread GEMM.
HCOPS_NUM_THREADS=2
export HCOPS_NUM_THREADS
exec "${HCOPS_TEST_BUILDDIR:-.}/test_fork" "$@"
