#!/bin/sh
# build-aux/run-identity.sh, which lets `make check-aarch64 RESUME=yes` go on
# with an interrupted run only while what it tests is unchanged: on a
# scratch source tree and build, every change that must restart the run is
# named (a source file changed, added or removed; a recorded build product
# changed or removed; a parameter), and what tests leave in the build (a
# program unpacked with an old date, a library in a pruned folder) is not.
set -u
top=${HCOPS_TEST_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
id=$top/build-aux/run-identity.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

src="$t/src tree"
b=$src/build
state=$b/state
mkdir -p "$src/lib" "$src/.git" "$b/lib/.libs" "$b/tests" "$b/root/usr/bin"
echo 'int f(void) { return 1; }' > "$src/lib/f.c"
echo 'x' > "$src/README"
echo 'ref: HEAD' > "$src/.git/HEAD"
echo '#!/bin/sh' > "$b/config.status"
printf 'ELF1' > "$b/lib/.libs/libf.so.0.0.0"
printf 'OBJ1' > "$b/lib/f.o"
printf '#!/bin/sh\necho hi\n' > "$b/tests/prog"
chmod +x "$b/config.status" "$b/tests/prog"
echo 'not a product' > "$b/tests/prog.log"

record() { printf '%s\n' "$@" | sh "$id" record "$state" "$src" "$b" "$b/root" "$state"; }
compare() { printf '%s\n' "$@" | sh "$id" compare "$state" "$src" "$b" "$b/root" "$state"; }

# expect "WHAT" PARAMS...: compare must fail and print WHAT (or pass when
# WHAT is empty).
expect() {
  want=$1; shift
  out=$(compare "$@"); rc=$?
  if [ -z "$want" ]; then
    [ $rc = 0 ] && [ -z "$out" ] || fail "unchanged, yet compare said (exit $rc): $out"
  else
    [ $rc = 1 ] && echo "$out" | grep -qxF "$want" || fail "expected '$want', got (exit $rc): $out"
  fi
}

record "HCOPS_X=1" "qemu 7.2" || fail "record: exit $?"
[ -s "$state/identity.files" ] || fail "no manifest written"
grep -q ' build:lib/.libs/libf.so.0.0.0$' "$state/identity.files" || fail "the library is not in the manifest"
grep -q ' src:lib/f.c$' "$state/identity.files" || fail "the source is not in the manifest"
! grep -q 'prog.log\|\.git/\|build:state/' "$state/identity.files" || fail "a log, .git or the state is in the manifest"
expect "" "HCOPS_X=1" "qemu 7.2"

# What tests leave behind: programs and libraries, one with a date older
# than the record (unpacked from a package), one in a pruned folder; logs.
printf '#!/bin/sh\n' > "$b/tests/unpacked-tool"
chmod +x "$b/tests/unpacked-tool"
touch -d '2001-01-01' "$b/tests/unpacked-tool"
printf 'ELF' > "$b/root/usr/bin/libz.so"
echo 'PASS' > "$b/tests/prog.log"
mkdir -p "$src/python/__pycache__" && echo 'c' > "$src/python/__pycache__/m.cpython-311.pyc"
expect "" "HCOPS_X=1" "qemu 7.2"

# Sources.
echo 'int f(void) { return 2; }' > "$src/lib/f.c"
expect "changed: src:lib/f.c" "HCOPS_X=1" "qemu 7.2"
echo 'int f(void) { return 1; }' > "$src/lib/f.c"
echo 'new' > "$src/lib/g.c"
expect "new: src:lib/g.c" "HCOPS_X=1" "qemu 7.2"
rm "$src/lib/g.c"
mv "$src/README" "$t/README"
expect "gone: src:README" "HCOPS_X=1" "qemu 7.2"
mv "$t/README" "$src/README"

# The build's recorded products.
printf 'ELF2' > "$b/lib/.libs/libf.so.0.0.0"
expect "changed: build:lib/.libs/libf.so.0.0.0" "HCOPS_X=1" "qemu 7.2"
printf 'ELF1' > "$b/lib/.libs/libf.so.0.0.0"
mv "$b/lib/f.o" "$t/f.o"
expect "gone: build:lib/f.o" "HCOPS_X=1" "qemu 7.2"
mv "$t/f.o" "$b/lib/f.o"
echo '#!/bin/sh # reconfigured' > "$b/config.status"
expect "changed: build:config.status" "HCOPS_X=1" "qemu 7.2"
echo '#!/bin/sh' > "$b/config.status"

# Parameters: both values named.
expect "parameter was: HCOPS_X=1" "HCOPS_X=2" "qemu 7.2"
expect "parameter now: HCOPS_X=2" "HCOPS_X=2" "qemu 7.2"
expect "parameter now: OMP_NUM_THREADS=1" "HCOPS_X=1" "qemu 7.2" "OMP_NUM_THREADS=1"

# Many changes: five named, then a count.
for i in 1 2 3 4 5 6 7; do echo "$i" > "$src/lib/n$i.c"; done
expect "and 2 more" "HCOPS_X=1" "qemu 7.2"
rm -f "$src"/lib/n*.c
expect "" "HCOPS_X=1" "qemu 7.2"

# No record, bad use.
out=$(printf 'p\n' | sh "$id" compare "$t/none" "$src" "$b"); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "no record" || fail "compare without a record: exit $rc, '$out'"
sh "$id" check "$state" "$src" "$b" < /dev/null 2>/dev/null && fail "an unknown command was accepted"
sh "$id" record "$state" < /dev/null 2>/dev/null && fail "too few arguments were accepted"

[ $fails = 0 ] && echo "run-identity: all checks passed"
[ $fails = 0 ]
