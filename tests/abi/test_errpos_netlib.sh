#!/bin/sh
# The reports of every bad argument of sgemm_, dgemm_, cblas_sgemm and
# cblas_dgemm (both layouts) must be netlib's: errpos_probe, linked once with
# the reference BLAS and once with libhcops, must print the same lines
# (handler, routine name, position, RowMajorStrg and CBLAS_CallFromC); so
# must the pair built to define cblas_xerbla only (_cx), where each library's
# own xerbla_ passes the Fortran checks' reports on. One difference is
# HCOps's on purpose and compared away: netlib's xerbla_ names the routine
# "cblas_sgemm " (the blank of "SGEMM "), HCOps's "cblas_sgemm".
# Runs from build/tests, where the probes are built.
passed=0
failed=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT

compare() { # $1: probe suffix, $2: what it checks
    if ! "./errpos_probe_netlib$1" >"$tmp/netlib" 2>"$tmp/netlib.err"; then
        echo "ERROR: errpos_probe_netlib$1 (linked with netlib's BLAS) did not run:"
        cat "$tmp/netlib.err"
        exit 99
    fi
    total=$(wc -l <"$tmp/netlib")
    if [ "$total" -lt 1000 ]; then
        echo "ERROR: errpos_probe_netlib$1 printed $total lines, not the whole set of calls"
        exit 99
    fi
    sed -i 's/"\(cblas_[a-z]*\) "/"\1"/g' "$tmp/netlib"
    if ! "./errpos_probe_hcops$1" >"$tmp/hcops" 2>"$tmp/hcops.err"; then
        echo "FAIL: errpos_probe_hcops$1 did not run:"
        cat "$tmp/hcops.err"
        failed=$((failed + 1))
        return
    fi
    # One line per call: the lines that differ are the calls reported differently.
    differ=$(paste -d '\n' "$tmp/netlib" "$tmp/hcops" |
        awk 'NR % 2 { n = $0; next } $0 != n { print "  netlib: " n; print "  hcops:  " $0 }')
    if [ -n "$differ" ] || [ "$(wc -l <"$tmp/hcops")" -ne "$total" ]; then
        echo "FAIL: $2: calls HCOps reports differently from netlib (first 10):"
        echo "$differ" | head -20
        failed=$((failed + 1))
    else
        echo "PASS: $2: $total calls reported as netlib reports them"
        passed=$((passed + 1))
    fi
}

compare "" "the application defines xerbla_ and cblas_xerbla"
compare "_cx" "the application defines cblas_xerbla only"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
