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
fail() { printf 'FAIL: %s\n' "$*"; fails=$((fails + 1)); }

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
# Names that dash's echo or awk's fields would mangle.
printf 'OBJ2' > "$b/lib/we\\cird.o"
printf 'OBJ3' > "$b/lib/tab	bed.o"
printf 'OBJ4' > "$b/lib/sp aced.o"
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
    [ $rc = 1 ] && printf '%s\n' "$out" | grep -qxF "$want" || fail "expected '$want', got (exit $rc): $out"
  fi
}

record "HCOPS_X=1" "qemu 7.2" || fail "record: exit $?"
[ -s "$state/identity.files" ] || fail "no manifest written"
grep -q ' build:lib/.libs/libf.so.0.0.0$' "$state/identity.files" || fail "the library is not in the manifest"
grep -q ' src:lib/f.c$' "$state/identity.files" || fail "the source is not in the manifest"
grep -q ' build:config.status$' "$state/identity.files" || fail "config.status is not in the manifest"
[ "$(grep -c ' build:lib/.*\.o$' "$state/identity.files")" = 4 ] || fail "the four objects are not in the manifest"
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

printf 'OBJ5' > "$b/lib/we\\cird.o"
expect "changed: build:lib/we\\cird.o" "HCOPS_X=1" "qemu 7.2"
printf 'OBJ2' > "$b/lib/we\\cird.o"
printf 'OBJ5' > "$b/lib/tab	bed.o"
expect "changed: build:lib/tab	bed.o" "HCOPS_X=1" "qemu 7.2"
printf 'OBJ3' > "$b/lib/tab	bed.o"
expect "" "HCOPS_X=1" "qemu 7.2"

# Parameters: both values named.
expect "parameter was: HCOPS_X=1" "HCOPS_X=2" "qemu 7.2"
expect "parameter now: HCOPS_X=2" "HCOPS_X=2" "qemu 7.2"
expect "parameter now: OMP_NUM_THREADS=1" "HCOPS_X=1" "qemu 7.2" "OMP_NUM_THREADS=1"

# Many changes: five named, then a count.
for i in 1 2 3 4 5 6 7; do echo "$i" > "$src/lib/n$i.c"; done
expect "and 2 more" "HCOPS_X=1" "qemu 7.2"
rm -f "$src"/lib/n*.c
expect "" "HCOPS_X=1" "qemu 7.2"

# A record that could not list the build is no record: as a user who
# cannot read a folder of the source tree (skipped without such a user).
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null && id nobody > /dev/null 2>&1; then
  chmod 755 "$t"
  u=$t/as-nobody
  mkdir -p "$u/src/locked" "$u/src/build"
  echo x > "$u/src/a.c"
  echo '#!/bin/sh' > "$u/src/build/config.status"
  printf 'O' > "$u/src/build/f.o"
  cp "$id" "$u/run-identity.sh"  # the checkout may be closed to nobody
  chown -R nobody "$u"
  chmod 000 "$u/src/locked"
  out=$(echo p | setpriv --reuid=nobody --regid=nogroup --clear-groups sh "$u/run-identity.sh" record "$u/state" \
    "$u/src" "$u/src/build" 2>&1)
  rc=$?
  [ $rc = 2 ] && printf '%s\n' "$out" | grep -q "cannot list" || fail "a record that could not list a folder: exit $rc, '$out'"
  [ ! -f "$u/state/identity.files" ] || fail "a partial record was written"
  grep -v ' build:' "$state/identity.files" > "$state/identity.partial"
  cp "$state/identity.files" "$state/identity.full" && mv "$state/identity.partial" "$state/identity.files"
  out=$(compare "HCOPS_X=1" "qemu 7.2"); rc=$?
  [ $rc = 1 ] && printf '%s\n' "$out" | grep -q "no record" || fail "a record without the build passed: exit $rc, '$out'"
  mv "$state/identity.full" "$state/identity.files"
else
  echo "SKIP part: no root, setpriv or user nobody to make a folder unreadable"
fi

# No record, bad use.
out=$(printf 'p\n' | sh "$id" compare "$t/none" "$src" "$b"); rc=$?
[ $rc = 1 ] && printf '%s\n' "$out" | grep -q "no record" || fail "compare without a record: exit $rc, '$out'"
sh "$id" check "$state" "$src" "$b" < /dev/null 2>/dev/null && fail "an unknown command was accepted"
sh "$id" record "$state" < /dev/null 2>/dev/null && fail "too few arguments were accepted"

[ $fails = 0 ] && echo "run-identity: all checks passed"
[ $fails = 0 ]
