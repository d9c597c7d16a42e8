#!/bin/sh
# The build-time checks of a forward table (shim/common/forward_table.h for
# the C side, forward_trampolines.inc for the trampolines): each symbol's
# index is its line's position on both sides (the trampoline of the third
# line reads slot 2); a symbol list with a name twice must not compile on
# either side, and a C table and trampolines built from lists of different
# lengths must not link. A correct list builds and links, so a failure below
# is the check and not a broken setup. Compiles with $CC (cc by default).
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
list() { # list FILE NAME... : one line per name, in the order given
  f=$1; shift; : >"$f"
  for n in "$@"; do echo "HCOPS_FORWARD($n)" >>"$f"; done
}

list "$tmp/good.def" syma symb symc
if c_side "$tmp/good.def" && asm_side "$tmp/good.def" && link; then ok "a list builds and links"
else ko "a list does not build: $(cat "$tmp/err")"; fi
# The third line's trampoline reads slot 2 (bytes 16..23 of the slots):
# x86-64 addresses it PC-relative (slot + 16 - 4, the rest of the
# instruction), AArch64 by page and offset (slot + 16).
objdump -dr "$tmp/t_tramp.o" | awk '/<symc>:/ { on = 1; next } /^$/ { on = 0 } on' >"$tmp/symc.dis"
if grep -Eq 'hcops_forward_slots_t\+0x(c|10)$' "$tmp/symc.dis" && ! grep -Eq 'hcops_forward_slots_t(\+0x(4|8|14|18))?$' "$tmp/symc.dis"; then
  ok "the third line's trampoline reads slot 2"
else
  ko "the third line's trampoline does not read slot 2: $(cat "$tmp/symc.dis")"
fi

list "$tmp/dup.def" syma symb symb
c_side "$tmp/dup.def"
[ $? != 0 ] && grep -Eq 'redeclaration of enumerator|redefinition of enumerator' "$tmp/err" && ok "C: a name twice fails" ||
  ko "C accepts a name twice: $(cat "$tmp/err")"
asm_side "$tmp/dup.def"
[ $? != 0 ] && grep -q 'symb.* is already defined' "$tmp/err" && ok "asm: a name twice fails" ||
  ko "asm accepts a name twice: $(cat "$tmp/err")"

list "$tmp/longer.def" syma symb symc symd
if c_side "$tmp/good.def" && asm_side "$tmp/longer.def"; then
  link
  [ $? != 0 ] && grep -q 'hcops_forward_lib_t_4' "$tmp/err" && ok "C and trampolines from lists of different lengths do not link" ||
    ko "C (3 symbols) and trampolines (4) link together: $(cat "$tmp/err")"
else
  ko "the two valid lists do not compile: $(cat "$tmp/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
