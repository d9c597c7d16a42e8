#!/bin/sh
# The manual pages (doc/man/): each renders with man-db's `man -l` without a
# groff warning and has its sections; `make install` puts them where
# `man -w` finds them under MANPATH; hcops(7) documents every HCOPS_*
# variable the code reads and no other; each option a tool's --help lists
# is in its page.
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
status=0
fail() { echo "FAIL: $*"; status=1; }
mandir=$srcdir/../doc/man
top=$HCOPS_TEST_TOP_BUILDDIR
pages=$(ls "$mandir"/*.[1-8])
[ -n "$pages" ] || { echo "FAIL: no pages in $mandir"; exit 1; }

echo "== render"
for page in $pages; do
  name=$(basename "$page")
  LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" > "man_$name.txt" 2> "man_$name.err" ||
    fail "$name: man -l failed"
  if [ -s "man_$name.err" ]; then fail "$name: warnings"; cat "man_$name.err"; fi
  for section in NAME DESCRIPTION "SEE ALSO"; do
    grep -q "^$section" "man_$name.txt" || fail "$name: no $section section"
  done
  case $name in *.1) for section in SYNOPSIS OPTIONS "EXIT STATUS" EXAMPLES; do
    grep -q "^$section" "man_$name.txt" || fail "$name: no $section section"
  done ;; esac
  echo "  $name: $(wc -l < "man_$name.txt") lines"
done

echo "== install"
dest=$HCOPS_TEST_BUILDDIR/man_install
rm -rf "$dest"
tree_make -s -C "$top/doc" install DESTDIR="$dest" > man_install.log 2>&1 || { fail "make install in doc/"; cat man_install.log; }
for page in $pages; do
  name=$(basename "$page")
  section=${name##*.}
  found=$(MANPATH="$dest$HCOPS_TEST_MANDIR" man -w "$section" "${name%.*}" 2>/dev/null)
  [ "$found" = "$dest$HCOPS_TEST_MANDIR/man$section/$name" ] || fail "$name installed: man -w found '$found'"
done
tree_make -s -C "$top/doc" uninstall DESTDIR="$dest" >> man_install.log 2>&1 || fail "make uninstall in doc/"
[ -z "$(find "$dest" -type f 2>/dev/null)" ] || fail "uninstall left $(find "$dest" -type f | head -3)"
rm -rf "$dest"

echo "== every variable the code reads is in hcops(7), and no other"
# Names in quotes (getenv/secure_getenv/os.environ), ${NAME} in scripts,
# setenv in the modulefiles: the code's variables.
(cd "$srcdir/.." && grep -rhoE "['\"]HCOPS_[A-Z0-9_]+['\"]|\\\$\{?HCOPS_[A-Z0-9_]+|setenv[ (]\"?HCOPS_[A-Z0-9_]+" \
   src shim tools python --include='*.c' --include='*.cpp' --include='*.h' --include='*.py' --include='*.in') |
  grep -oE 'HCOPS_[A-Z0-9_]+' | LC_ALL=C sort -u > man_vars_code.txt
# A variable is documented where a .TP tag line names it.
sed -n '/^\.TP/{n;p}' "$mandir/hcops.7" | grep -oE 'HCOPS_[A-Z0-9_]+' | LC_ALL=C sort -u > man_vars_page.txt
[ "$(wc -l < man_vars_code.txt)" -ge 20 ] || fail "found only $(wc -l < man_vars_code.txt) variables in the code"
missing=$(LC_ALL=C comm -23 man_vars_code.txt man_vars_page.txt)
[ -z "$missing" ] || fail "hcops.7 does not document:" $missing
stale=$(LC_ALL=C comm -13 man_vars_code.txt man_vars_page.txt)
[ -z "$stale" ] || fail "hcops.7 documents variables the code does not read:" $stale
echo "  $(wc -l < man_vars_code.txt) variables"

echo "== every option of each tool's --help is in its page"
for tool in hcops-run hcops-info hcops-prof; do
  "$top/tools/$tool" --help > "man_$tool.help" 2>&1 || fail "$tool --help"
  for opt in $(grep -oE '(^|[[ ,])--[a-z][a-z0-9-]*' "man_$tool.help" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    grep -q -- "^$opt\b\|[^-]$opt\b" "man_$tool.1.txt" || fail "$tool.1 does not document $opt"
  done
done
exit $status
