#!/bin/sh
# Every entry point and variable of the reference BLAS/CBLAS ABI must be
# exported by the library under test ($HCOPS_LIB), and no C++ symbol may leak
# from it beyond libhcops.so.0's engine interface.
#
# The API list is read from the netlib reference library installed on this
# machine, so the check follows the platform's ABI; the checked-in
# reference-api.syms is the fallback where that library is absent.
# netlib's *sub_ names are its internal Fortran-function wrappers, not API.

REFERENCE_LIB=${HCOPS_SYMS_REFERENCE:-/usr/lib/x86_64-linux-gnu/blas/libblas.so.3}
FALLBACK_LIST=$(dirname "$0")/reference-api.syms

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ -z "$HCOPS_LIB" ] || [ ! -r "$HCOPS_LIB" ]; then
    fail "HCOPS_LIB must name the library under test (got '${HCOPS_LIB}')"
    finish
fi
if ! command -v nm >/dev/null 2>&1; then
    fail "nm (binutils) is needed"
    finish
fi

# Names only: drop symbol versions (sgemm_@@HCOPS_1) that a version script adds.
defined_names() {
    nm -D --defined-only "$1" |
        awk -v types="$2" 'NF >= 3 && index(types, $2) { sub(/@.*/, "", $3); print $3 }' |
        sort -u
}

if [ -r "$REFERENCE_LIB" ] && defined_names "$REFERENCE_LIB" TW | grep -v 'sub_$' >"$tmp/api" &&
    [ -s "$tmp/api" ]; then
    echo "API list: $(wc -l <"$tmp/api") names exported by $REFERENCE_LIB"
    if [ -r "$FALLBACK_LIST" ] && ! sort -u "$FALLBACK_LIST" | cmp -s - "$tmp/api"; then
        echo "note: $FALLBACK_LIST differs from $REFERENCE_LIB:"
        sort -u "$FALLBACK_LIST" | diff - "$tmp/api" | grep '^[<>]'
    fi
elif [ -r "$FALLBACK_LIST" ]; then
    sort -u "$FALLBACK_LIST" >"$tmp/api"
    echo "API list: $(wc -l <"$tmp/api") names from $FALLBACK_LIST ($REFERENCE_LIB unavailable)"
else
    fail "no API list: neither $REFERENCE_LIB nor $FALLBACK_LIST is readable"
    finish
fi

# T/W: ordinary and weak functions; i: GNU indirect functions, which are
# also callable entry points (a CPU-dispatching library may use them).
if ! defined_names "$HCOPS_LIB" TWi >"$tmp/exported"; then
    fail "nm cannot read $HCOPS_LIB"
    finish
fi

comm -23 "$tmp/api" "$tmp/exported" >"$tmp/missing"
passed=$((passed + $(wc -l <"$tmp/api") - $(wc -l <"$tmp/missing")))
while IFS= read -r name; do
    fail "$name is not exported by $HCOPS_LIB"
done <"$tmp/missing"

# The reference's exported variables (netlib CBLAS's RowMajorStrg and
# CBLAS_CallFromC, read by error handlers written for it) must be exported
# as variables too.
if [ -r "$REFERENCE_LIB" ]; then
    defined_names "$REFERENCE_LIB" BDG >"$tmp/data_api"
    defined_names "$HCOPS_LIB" BDG >"$tmp/data_exported"
    while IFS= read -r name; do
        if grep -qx "$name" "$tmp/data_exported"; then
            pass
        else
            fail "variable $name is not exported by $HCOPS_LIB"
        fi
    done <"$tmp/data_api"
fi

# C++: only the engine interface libhcops.so.0 exports to HCOps's own torch
# layers (src/common/api.h, shim/libhcops.map): names of namespace hcops,
# none of the ABI layers' own (hcops::dnnl::, gemm_batched); none at all
# from a library of another SONAME (the thin copies).
soname=$(readelf -d "$HCOPS_LIB" | sed -n 's/.*Library soname: \[\(.*\)\]$/\1/p')
nm -D --defined-only "$HCOPS_LIB" | awk 'NF >= 3 { print $3 }' | grep '^_Z' >"$tmp/cxx_all"
if [ "$soname" = libhcops.so.0 ]; then
    c++filt <"$tmp/cxx_all" | grep -Ev '^hcops::GemmReport hcops::gemm<' |
        grep -Ev '^hcops::[A-Za-z0-9_]+(::[A-Za-z0-9_~]+)?(\[abi:cxx11\])?\(' | grep . >"$tmp/cxx"
    c++filt <"$tmp/cxx_all" | grep -E '^hcops::(dnnl|blas|cblas)::|gemm_batched' >>"$tmp/cxx"
else
    cp "$tmp/cxx_all" "$tmp/cxx"
fi
if [ -s "$tmp/cxx" ]; then
    fail "$(wc -l <"$tmp/cxx") C++ symbols exported beyond the engine interface, e.g.:"
    head -n 20 "$tmp/cxx" | sed 's/^/    /'
else
    pass
fi

finish
