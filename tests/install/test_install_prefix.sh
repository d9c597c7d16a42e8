#!/bin/sh
# `make install PREFIX=X` (README, "On a cluster") into a prefix other than the one
# configure was given, from an already built tree: everything lands in X,
# and every installed file that names a directory names X's, never the
# configured prefix's nor the build or source tree's (ELF files are checked
# without their debug sections, which rightly name the sources). The
# installed hcops-info, hcops-run, hcops-prof and hcops.pc work from X, and
# the programs and the Python package still find theirs when X is moved
# (they name X's directories relative to their own); DESTDIR staging puts the same files under DESTDIR, naming X; `make
# uninstall PREFIX=X` removes them all.
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
status=0
fail() { echo "FAIL: $*"; status=1; }

configured=$HCOPS_TEST_PREFIX
top_srcdir=$HCOPS_TEST_TOP_SRCDIR
top_builddir=$HCOPS_TEST_TOP_BUILDDIR
# Outside the build tree: a path under it would contain the build tree's.
# Resolved: the loader's $ORIGIN and hcops-run report resolved paths.
scratch=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/hcops-prefix.XXXXXX")" && pwd -P) || exit 1
case $scratch in "$top_builddir"/* | "$top_srcdir"/*) echo "FAIL: TMPDIR is inside the tree"; exit 1 ;; esac
prefix=$scratch/opt/hcops
stage=$scratch/stage
[ "$prefix" != "$configured" ] || { echo "FAIL: the test prefix is the configured one"; exit 1; }

# The README's command is the top Makefile's (it drives the build in
# build/); without it (a tree configured by hand), the build's own.
run_make() {  # target, then VAR=value...
  if [ -f "$top_srcdir/Makefile" ] && grep -q '^BUILD *?=' "$top_srcdir/Makefile"; then
    tree_make -s -C "$top_srcdir" BUILD="$top_builddir" PREFIX="$prefix" "$@"
  else
    tree_make -s -C "$top_builddir" prefix="$prefix" "$@"
  fi
}

# What the configured prefix holds of HCOps's before: nothing may change there.
lib0=$configured/lib/libhcops.so.0
before=$(ls -lL --time-style=full-iso "$lib0" 2>/dev/null)

# Strings that no installed file may hold. A configured prefix of / or /usr
# is a prefix of the system libraries' paths too (the reference BLAS and
# libdnnl, which files rightly name): then only HCOps's own directories there.
case $configured in
  / | /usr) forbidden="$configured/lib/hcops $configured/lib/libhcops $configured/share/hcops $configured/share/modulefiles $configured/libexec/hcops $configured/bin/hcops" ;;
  *) forbidden=$configured ;;
esac
forbidden="$forbidden $top_builddir $top_srcdir $stage"

# check_tree ROOT: the files installed under ROOT (= X, or DESTDIR/X).
check_tree() {
  root=$1
  echo "== files under $root that name a forbidden directory ($forbidden)"
  n=0
  for f in $(find "$root" -type f | sort); do
    n=$((n + 1))
    text=$f
    if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      text=$scratch/stripped
      ${OBJCOPY:-objcopy} --strip-debug "$f" "$text" 2>/dev/null || cp "$f" "$text"
    fi
    for s in $forbidden; do
      grep -aqF "$s" "$text" && fail "${f#"$root"/} names $s: $(grep -aoF "$s[^'\" ]*" "$text" | head -3 | tr '\n' ' ')"
    done
  done
  for l in $(find "$root" -type l); do
    t=$(readlink "$l")
    for s in $forbidden; do
      case $t in "$s"/* | "$s") fail "${l#"$root"/} links to $t" ;; esac
    done
  done
  echo "  $n files checked"
  [ "$n" -gt 20 ] || fail "only $n files installed under $root"

  echo "== the files that name directories name $prefix, or its directories from their own"
  grep -qF "libdir=\$(CDPATH= cd \"\$here\"/'../lib' 2>/dev/null && pwd; :)" "$root/bin/hcops-run" || fail "hcops-run: $(grep '^libdir=' "$root/bin/hcops-run")"
  grep -q "^LIBDIR = os.path.normpath(os.path.join(HERE, '../lib'))\$" "$root/bin/hcops-prof" ||
    fail "hcops-prof: $(grep '^LIBDIR' "$root/bin/hcops-prof")"
  grep -q "^prefix=$prefix\$" "$root/lib/pkgconfig/hcops.pc" || fail "hcops.pc: $(head -1 "$root/lib/pkgconfig/hcops.pc")"
  grep -q "^set configured {$prefix}\$" "$root/share/modulefiles/hcops/"[0-9]*[0-9] || fail "the Tcl modulefile's prefix"
  grep -q "^local configured = \"$prefix\"\$" "$root/share/modulefiles/hcops/"*.lua || fail "the Lua modulefile's prefix"
  grep -q "^LIBDIR = '../../../../../lib'\$" "$root/share/hcops/python/hcops/torch/_paths.py" ||
    fail "hcops.torch's _paths.py: $(grep '^LIBDIR' "$root/share/hcops/python/hcops/torch/_paths.py")"
  for la in "$root/lib/"*.la "$root/lib/hcops/"*.la; do
    grep -q "^libdir='$prefix/lib[/a-z]*'\$" "$la" || fail "${la#"$root"/}: $(grep '^libdir=' "$la")"
  done
  readelf -d "$root/bin/hcops-info" | grep -q "R.*PATH.*\[\$ORIGIN/../lib\]" || fail "hcops-info's RUNPATH: $(readelf -d "$root/bin/hcops-info" | grep PATH)"
}

# The tree under `root` is uninstalled: nothing but empty folders is left.
check_empty() {
  left=$(find "$1" ! -type d 2>/dev/null)
  [ -z "$left" ] || fail "uninstall left: $(echo "$left" | head -10 | tr '\n' ' ')"
}

echo "== make install PREFIX=$prefix (configured: $configured)"
run_make install > "$scratch/install.log" 2>&1 || { fail "make install"; tail -30 "$scratch/install.log"; }
[ -x "$prefix/bin/hcops-info" ] && [ -f "$prefix/lib/libhcops.so.0" ] && [ -f "$prefix/lib/hcops/libblas.so.3" ] ||
  fail "not installed in $prefix: $(tail -5 "$scratch/install.log")"
after=$(ls -lL --time-style=full-iso "$lib0" 2>/dev/null)
[ "$before" = "$after" ] || fail "$lib0 changed: the install went to the configured prefix"
if [ -x "$prefix/bin/hcops-info" ]; then
  check_tree "$prefix"

  echo "== the installed tools, from $prefix, with no LD_LIBRARY_PATH"
  env -u LD_LIBRARY_PATH -u LD_PRELOAD "$prefix/bin/hcops-info" > "$scratch/info.out" 2>&1 || fail "hcops-info: $(cat "$scratch/info.out")"
  head -1 "$scratch/info.out"
  grep -q '^memory placement (libhcops_mem):$' "$scratch/info.out" || fail "hcops-info did not find libhcops_mem: $(grep '^memory' "$scratch/info.out")"
  # The libraries it runs on are the installation's.
  loaded=$(env -u LD_LIBRARY_PATH LD_TRACE_LOADED_OBJECTS=1 "$prefix/bin/hcops-info" | grep 'libhcops.so.0 =>')
  echo "  $loaded"
  case $loaded in *"=> $prefix/bin/../lib/libhcops.so.0 "*) ;; *) fail "hcops-info loads $loaded" ;; esac
  pre=$(env -u LD_PRELOAD "$prefix/bin/hcops-run" --no-ops --mem /bin/sh -c 'echo "$LD_PRELOAD"')
  echo "  hcops-run's LD_PRELOAD: $pre"
  [ "$pre" = "$prefix/lib/libhcops.so.0 $prefix/lib/libhcops_mem.so.0" ] || fail "hcops-run preloads $pre"
  hook=$(env -u PYTHONPATH "$prefix/bin/hcops-run" --no-blas /usr/bin/python3 -c 'import os; print(os.environ["PYTHONPATH"])')
  [ "$hook" = "$prefix/share/hcops/startup:$prefix/share/hcops/python" ] || fail "hcops-run's PYTHONPATH: $hook"
  "$prefix/bin/hcops-prof" --help > /dev/null 2>&1 || fail "hcops-prof --help"
  PYTHONPATH= /usr/bin/python3 - "$prefix/bin/hcops-prof" <<'EOF' > "$scratch/prof.out" 2>&1 || fail "hcops-prof's package: $(cat "$scratch/prof.out")"
import runpy, sys
script = sys.argv[1]
sys.argv = [script, "--help"]
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit:
    pass
import hcops.prof.cli
print(hcops.prof.cli.__file__)
EOF
  grep -q "^$prefix/share/hcops/python/hcops/prof/cli.py\$" "$scratch/prof.out" || fail "hcops-prof runs the package at $(tail -1 "$scratch/prof.out")"

  echo "== the same, the prefix moved to $scratch/moved"
  moved=$scratch/moved
  mv "$prefix" "$moved"
  loaded=$(env -u LD_LIBRARY_PATH LD_TRACE_LOADED_OBJECTS=1 "$moved/bin/hcops-info" | grep 'libhcops.so.0 =>')
  case $loaded in *"=> $moved/bin/../lib/libhcops.so.0 "*) ;; *) fail "moved: hcops-info loads $loaded" ;; esac
  env -u LD_LIBRARY_PATH -u LD_PRELOAD "$moved/bin/hcops-info" > "$scratch/info.out" 2>&1 &&
    grep -q '^memory placement (libhcops_mem):$' "$scratch/info.out" || fail "moved: hcops-info: $(tail -3 "$scratch/info.out")"
  pre=$(env -u LD_PRELOAD "$moved/bin/hcops-run" --no-ops --mem /bin/sh -c 'echo "$LD_PRELOAD"')
  [ "$pre" = "$moved/lib/libhcops.so.0 $moved/lib/libhcops_mem.so.0" ] || fail "moved: hcops-run preloads $pre"
  hook=$(env -u PYTHONPATH "$moved/bin/hcops-run" --no-blas /usr/bin/python3 -c 'import os; print(os.environ["PYTHONPATH"])')
  [ "$hook" = "$moved/share/hcops/startup:$moved/share/hcops/python" ] || fail "moved: hcops-run's PYTHONPATH: $hook"
  "$moved/bin/hcops-prof" --help > /dev/null 2>&1 || fail "moved: hcops-prof --help"
  dirs=$(PYTHONPATH="$moved/share/hcops/python" /usr/bin/python3 -c 'from hcops import _builds; print(_builds.search_dirs("torch")[0])')
  [ "$dirs" = "$moved/lib" ] || fail "moved: hcops.torch looks for its library in $dirs"
  echo "  hcops-info, hcops-run (LD_PRELOAD $pre), hcops-prof and hcops.torch ($dirs) from $moved"
  mv "$moved" "$prefix"

  echo "== pkg-config from $prefix"
  pc_libdir=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --variable=libdir hcops)
  pc_cflags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags hcops | sed 's/ *$//')
  echo "  libdir=$pc_libdir cflags=$pc_cflags"
  [ "$pc_libdir" = "$prefix/lib" ] || fail "pkg-config --variable=libdir: $pc_libdir"
  [ "$pc_cflags" = "-I$prefix/include -I$prefix/include/hcops" ] || fail "pkg-config --cflags: $pc_cflags"
fi

echo "== make uninstall PREFIX=$prefix"
run_make uninstall > "$scratch/uninstall.log" 2>&1 || { fail "make uninstall"; tail -30 "$scratch/uninstall.log"; }
check_empty "$prefix"

echo "== make install PREFIX=$prefix DESTDIR=$stage"
run_make install DESTDIR="$stage" > "$scratch/stage.log" 2>&1 || { fail "make install DESTDIR"; tail -30 "$scratch/stage.log"; }
[ ! -e "$prefix" ] || [ -z "$(find "$prefix" ! -type d)" ] || fail "the staged install wrote into $prefix itself"
if [ -x "$stage$prefix/bin/hcops-info" ]; then
  check_tree "$stage$prefix"
else
  fail "nothing staged in $stage$prefix"
fi
run_make uninstall DESTDIR="$stage" > "$scratch/unstage.log" 2>&1 || { fail "make uninstall DESTDIR"; tail -30 "$scratch/unstage.log"; }
check_empty "$stage"

[ $status = 0 ] && rm -rf "$scratch"
exit $status
