#!/bin/sh
# test_fork needs a multithreaded parent: fork after a two-thread GEMM.
# Under QEMU's user-mode emulation (make check-aarch64) a fork of a process
# with running threads can deadlock in QEMU itself (its own locks are copied
# held): the child hangs before main's code runs again, whatever it does.
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "SKIP: fork of a multithreaded process under QEMU user-mode emulation (QEMU's own locks)"
  exit 77
fi
HCOPS_NUM_THREADS=2
export HCOPS_NUM_THREADS
exec "${HCOPS_TEST_BUILDDIR:-.}/test_fork" "$@"
