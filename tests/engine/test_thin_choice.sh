#!/bin/sh
# Runs test_thin_choice under each HCOPS_SKINNY: auto (the family's measured
# choice for thin products one block holds), always (the thin kernels take
# all they apply to) and never (none).
set -u
# Two threads: the products' A (at most (mc + 40) x 300) asks the skinny
# kernel for at most two, which its rows (96 a thread) always give it, so
# that "the skinny kernel takes it" holds for every one; on more threads a
# tall product can be refused for want of rows (gemm.cpp's
# skinny_rows_suffice).
export HCOPS_NUM_THREADS=2
status=0
for mode in auto always never; do
  echo "== HCOPS_SKINNY=$mode"
  HCOPS_SKINNY=$mode ./test_thin_choice || status=1
done
exit $status
