#!/bin/bash
# packaging/easybuild/HCOps-<version>.eb under EasyBuild, as an HPC centre
# installs HCOps: EasyBuild from the package index (pip, in a venv in the
# build tree, made once: ~30 s), Debian's Lmod as its modules tool, the SYSTEM
# toolchain with the OS dependencies, the `make dist` tarball as the source.
# eb builds, installs, runs the sanity checks and writes the module; then the
# module is loaded and a program linked -lblas (nothing of HCOps) runs its
# sgemm_ in HCOps (HCOPS_VERBOSE=1), hcops-info and the Python package are
# the module's, and unloading restores LD_LIBRARY_PATH. A whole build of
# HCOps (~3 min on 2 cores): make check-external only.
set -u
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
if [ "${HCOPS_CHECK_EXTERNAL:-0}" != 1 ]; then
  echo "SKIP: a whole build of HCOps under EasyBuild (make check-external runs it; HCOPS_CHECK_EXTERNAL=1 here)"
  exit 77
fi
status=0
fail() { echo "FAIL: $*"; status=1; }
top_builddir=$HCOPS_TEST_TOP_BUILDDIR
top_srcdir=$HCOPS_TEST_TOP_SRCDIR
init=/usr/share/lmod/lmod/init/bash
[ -f "$init" ] || { echo "FAIL: Lmod is not installed ($init): apt-get install lmod (make check installs it)"; exit 1; }
scratch=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/hcops-eb.XXXXXX")" && pwd -P) || exit 1
trap 'rm -rf "$scratch"' EXIT

# EasyBuild from the index, once, in the build tree.
venv=$top_builddir/easybuild-venv
if ! [ -x "$venv/bin/eb" ]; then
  python=
  for p in python3.13 python3.12 python3.11 python3.10 python3 /usr/bin/python3; do
    command -v "$p" > /dev/null 2>&1 && "$p" -c 'import venv, ensurepip' > /dev/null 2>&1 && { python=$p; break; }
  done
  [ -n "$python" ] || { echo "SKIP: no python3 with venv and ensurepip to install EasyBuild into (apt-get install python3-venv)"; exit 77; }
  rm -rf "$venv"
  if ! { "$python" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check easybuild; } \
       > "$scratch/pip.log" 2>&1; then
    rm -rf "$venv"
    echo "SKIP: pip install easybuild failed (the package index cannot be reached?): $(grep -E '^ERROR' "$scratch/pip.log" | head -1)"
    exit 77
  fi
fi
export EB_PYTHON=$venv/bin/python
echo "== $("$venv/bin/eb" --version)"

version=$(sed -n "s/^PACKAGE_VERSION = //p" "$top_builddir/Makefile")
easyconfig=$top_srcdir/packaging/easybuild/HCOps-$version.eb
[ -f "$easyconfig" ] || { echo "FAIL: no easyconfig for version $version ($easyconfig)"; exit 1; }

echo "== make dist"
mkdir -p "$scratch/sources/h/HCOps"
# A name of its own in the build tree (a user's hcops-<version>.tar.gz stays).
tree_make -s -C "$top_builddir" dist distdir="hcops-eb-test-$$" > "$scratch/dist.log" 2>&1 &&
  mv "$top_builddir/hcops-eb-test-$$.tar.gz" "$scratch/sources/h/HCOps/hcops-$version.tar.gz" ||
  { tail -20 "$scratch/dist.log"; echo "FAIL: make dist"; exit 1; }

# shellcheck disable=SC1090
unset MODULEPATH LOADEDMODULES _LMFILES_
. "$init"
echo "== eb $(basename "$easyconfig")"
start=$(date +%s)
# CI runs as root; EasyBuild refuses that unless told.
"$venv/bin/eb" --prefix="$scratch/eb" --sourcepath="$scratch/sources" --modules-tool=Lmod --module-syntax=Lua \
  --allow-use-as-root-and-accept-consequences --detect-loaded-modules=ignore --trace "$easyconfig" \
  > "$scratch/eb.log" 2>&1 || { tail -40 "$scratch/eb.log"; cat "$scratch"/eb/*/easybuild-*.log 2>/dev/null | tail -40; echo "FAIL: eb"; exit 1; }
grep -E '^== (COMPLETED|sanity)|^  >> (running|command)' "$scratch/eb.log" | head -20
echo "built and installed in $(( $(date +%s) - start )) s"
root=$scratch/eb/software/HCOps/$version
[ -x "$root/bin/hcops-run" ] || fail "no $root/bin/hcops-run"

echo "== module load HCOps/$version"
ld_before=/opt/site/lib
export LD_LIBRARY_PATH=$ld_before
module use "$scratch/eb/modules/all"
module load "HCOps/$version" || fail "module load HCOps/$version"
echo "  LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
case $LD_LIBRARY_PATH in "$root/lib/hcops:$root/lib:"*) ;; *) fail "LD_LIBRARY_PATH does not start with $root/lib/hcops:$root/lib" ;; esac
command -v hcops-info | grep -qx "$root/bin/hcops-info" || fail "hcops-info is not the module's: $(command -v hcops-info)"
hcops-info > "$scratch/info.out" 2>&1 || fail "hcops-info: $(tail -3 "$scratch/info.out")"
head -1 "$scratch/info.out"
cc -o "$scratch/blas_user" "$top_srcdir/tests/modules/blas_user.c" -lblas -lm || fail "cc blas_user.c -lblas"
HCOPS_VERBOSE=1 "$scratch/blas_user" > "$scratch/blas.out" 2> "$scratch/blas.err" ||
  fail "the -lblas program: $(cat "$scratch/blas.out" "$scratch/blas.err" | tail -5)"
grep -q '^hcops_verbose,exec,sgemm_,' "$scratch/blas.err" ||
  fail "the -lblas program's sgemm_ did not run in HCOps: $(tail -3 "$scratch/blas.err")"
grep '^hcops_verbose,exec,sgemm_,' "$scratch/blas.err" | head -1
py=$(/usr/bin/python3 -c 'import os, hcops; print(os.path.dirname(hcops.__file__))' 2>&1)
[ "$py" = "$root/share/hcops/python/hcops" ] || fail "import hcops: $py"
module unload "HCOps/$version"
[ "$LD_LIBRARY_PATH" = "$ld_before" ] || fail "after module unload: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

[ $status = 0 ] && echo "PASS: eb built and installed HCOps $version; its module runs a -lblas program on HCOps"
exit $status
