#!/bin/sh
# Run by make check only when configure left optional parts out (its
# summary): skips, naming each part whose tests were not run and why, so
# that a suite that passes says what it did not cover.
test -n "$HCOPS_PARTS_OUT" || { echo "configured_out.sh: HCOPS_PARTS_OUT is empty (set by tests/Makefile.am)"; exit 99; }
echo "configure left out (their tests were not run):"
printf '%s\n' "$HCOPS_PARTS_OUT" | tr ';' '\n' | sed 's/^/  /'
exit 77
