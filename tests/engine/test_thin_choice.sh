#!/bin/sh
# Runs test_thin_choice under each HCOPS_SKINNY: auto (the family's measured
# choice for thin products one block holds), always (the thin kernels take
# all they apply to) and never (none).
set -u
status=0
for mode in auto always never; do
  echo "== HCOPS_SKINNY=$mode"
  HCOPS_SKINNY=$mode ./test_thin_choice || status=1
done
exit $status
