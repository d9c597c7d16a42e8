#!/bin/sh
# The build-time checks of a forward table (shim/common/forward_table.h for
# the C side, forward_trampolines.inc for the trampolines): a symbol list whose
# indexes are used twice or skip a number must not compile on either side,
# and a C table and trampolines built from lists of different lengths must
# not link. A correct list builds and links, so a failure below is the check
# and not a broken setup. Compiles with $CC (cc by default).
set -u
top=$(cd "${srcdir:-.}/.." && pwd)
cc=${CC:-cc}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# One table "t" from the list $1: the C side, the trampolines, and a shared
# object of both with the resolver (its log stubbed: no engine needed).
c_side() {
  printf '#define HCOPS_FORWARD_TABLE t\n#define HCOPS_FORWARD_DEF "%s"\n#include "shim/common/forward_table.h"\n' "$1" >"$tmp/t.c"
  printf 'struct hcops_foreign HCOPS_FORWARD_LIB = {.what = "t", HCOPS_FORWARD_TABLE_FIELDS};\n' >>"$tmp/t.c"
  $cc -c -fPIC -I"$top" -I"$top/src" "$tmp/t.c" -o "$tmp/t.o" 2>"$tmp/err"
}
asm_side() {
  printf '#define HCOPS_FORWARD_TABLE t\n#define HCOPS_FORWARD_DEF "%s"\n#include "shim/common/forward_trampolines.inc"\n' "$1" >"$tmp/t_tramp.S"
  $cc -c -fPIC -I"$top" "$tmp/t_tramp.S" -o "$tmp/t_tramp.o" 2>"$tmp/err"
}
link() {
  printf 'void hcops_log_error(const char *fmt, ...) { (void)fmt; }\nconst char *hcops_log_escaped(const char *v, char *b, unsigned long n) { (void)v; (void)n; return b; }\n' >"$tmp/log.c"
  $cc -shared -fPIC -I"$top" -I"$top/src" -o "$tmp/t.so" "$tmp/t.o" "$tmp/t_tramp.o" \
    "$top/shim/common/forward.c" "$top/shim/common/forward_x86_64.S" "$top/shim/common/forward_aarch64.S" "$tmp/log.c" -ldl -lpthread 2>"$tmp/err"
}
list() { # list FILE IDX... : one symbol per index, in the order given
  f=$1; shift; : >"$f"
  for i in "$@"; do echo "HCOPS_FORWARD($i, sym$i)" >>"$f"; done
}

list "$tmp/good.def" 2 0 1
if c_side "$tmp/good.def" && asm_side "$tmp/good.def" && link; then ok "a dense list in any order builds and links"
else ko "a dense list does not build: $(cat "$tmp/err")"; fi

list "$tmp/dup.def" 0 1 1
c_side "$tmp/dup.def"
[ $? != 0 ] && grep -q 'duplicate case value' "$tmp/err" && ok "C: an index used twice fails" || ko "C accepts an index used twice: $(cat "$tmp/err")"
asm_side "$tmp/dup.def"
[ $? != 0 ] && grep -q 'index 1 is used twice' "$tmp/err" && ok "asm: an index used twice fails" || ko "asm accepts an index used twice: $(cat "$tmp/err")"

list "$tmp/gap.def" 0 1 3
c_side "$tmp/gap.def"
[ $? != 0 ] && grep -q 'the index of sym3 is not below the count' "$tmp/err" && ok "C: a skipped index fails" || ko "C accepts a skipped index: $(cat "$tmp/err")"
asm_side "$tmp/gap.def"
[ $? != 0 ] && grep -q 'indexes skip a number' "$tmp/err" && ok "asm: a skipped index fails" || ko "asm accepts a skipped index: $(cat "$tmp/err")"

list "$tmp/longer.def" 0 1 2 3
if c_side "$tmp/good.def" && asm_side "$tmp/longer.def"; then
  link
  [ $? != 0 ] && grep -q 'hcops_forward_lib_t_4' "$tmp/err" && ok "C and trampolines from lists of different lengths do not link" ||
    ko "C (3 symbols) and trampolines (4) link together: $(cat "$tmp/err")"
else
  ko "the two valid lists do not compile: $(cat "$tmp/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
