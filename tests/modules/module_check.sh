# Sourced by test_module_lmod.sh and test_module_tcl.sh after they define
# `module` for their module system and set `system`: installs HCOps into a
# throw-away DESTDIR, then loads, uses and unloads the modulefile found there.
# The environment after `module unload` must be the one before `module load`,
# less the module system's own bookkeeping variables.
status=0
fail() { echo "FAIL ($system): $*"; status=1; }

. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
dest=$HCOPS_TEST_BUILDDIR/modules_$system
rm -rf "$dest"
tree_make -s -C .. install DESTDIR="$dest" >"modules_$system.install.log" 2>&1 ||
  { echo "FAIL: make install"; tail -30 "modules_$system.install.log"; exit 1; }
root=$dest$HCOPS_TEST_PREFIX
mfdir=$root/share/modulefiles
ls "$mfdir/hcops" || { echo "FAIL: no modulefiles installed in $mfdir/hcops"; exit 1; }

# A stand-in for a site's BLAS module, to see the conflict.
fake=$HCOPS_TEST_BUILDDIR/modules_${system}_fake
rm -rf "$fake" && mkdir -p "$fake/openblas"
printf '#%%Module1.0\nif {[info commands family] ne ""} { family blas }\nsetenv FAKE_OPENBLAS 1\n' > "$fake/openblas/0.3"

export MODULEPATH="$mfdir:$fake"
# Values that must come back as they were, set and unset. Lmod drops
# duplicate entries of any path variable it edits, so PATH starts without
# them (a site's PATH has none); an entry the module adds too is checked below.
PATH=$(printf '%s' "$PATH" | awk -v RS=: -v ORS=: '!seen[$0]++' | sed 's/:$//')
export CPATH=/opt/site/include
export LD_LIBRARY_PATH=/opt/site/lib
unset PKG_CONFIG_PATH MANPATH HCOPS_ROOT 2>/dev/null || true
snapshot() { env | grep -Ev "$bookkeeping" | LC_ALL=C sort; }
snapshot > "modules_$system.before"

echo "== module avail / whatis / help"
module avail 2>&1 | grep -q hcops || fail "module avail does not list hcops"
module whatis hcops > "modules_$system.whatis" 2>&1
grep -q 'BLAS/CBLAS and oneDNN' "modules_$system.whatis" || { fail "whatis"; cat "modules_$system.whatis"; }
module help hcops > "modules_$system.help" 2>&1
grep -q 'module conflicts\|blas.*family\|family' "modules_$system.help" && grep -q 'LD_LIBRARY_PATH' "modules_$system.help" ||
  { fail "help"; cat "modules_$system.help"; }

echo "== module load hcops"
module load hcops || fail "module load hcops"
env | grep -E '^(HCOPS_ROOT|PATH|LD_LIBRARY_PATH|PKG_CONFIG_PATH|PYTHONPATH|MANPATH|CPATH)=' | sed 's/^/  /'
[ "${HCOPS_ROOT:-}" = "$root" ] || fail "HCOPS_ROOT=${HCOPS_ROOT:-} (want $root: the root found from the modulefile's own location)"
case $PATH in "$root/bin:"*) ;; *) fail "PATH does not start with $root/bin" ;; esac
case $LD_LIBRARY_PATH in "$root/lib/hcops:$root/lib:/opt/site/lib"*) ;; *) fail "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" ;; esac
case ${PKG_CONFIG_PATH:-} in "$root/lib/pkgconfig"*) ;; *) fail "PKG_CONFIG_PATH" ;; esac
case ${PYTHONPATH:-} in "$root/share/hcops/python"*) ;; *) fail "PYTHONPATH" ;; esac
case ${MANPATH:-} in *"$root/share/man"*) ;; *) fail "MANPATH" ;; esac
case ${CPATH:-} in "$root/include:/opt/site/include") ;; *) fail "CPATH=${CPATH:-}" ;; esac
command -v hcops-info | grep -qx "$root/bin/hcops-info" || fail "hcops-info is not the module's"
hcops-info > "modules_$system.info" 2>&1 || { fail "hcops-info"; cat "modules_$system.info"; }
[ "$(pkg-config --variable=prefix hcops 2>/dev/null)" != "" ] || fail "pkg-config does not find hcops.pc"
[ -f "$root/include/hcops.h" ] || fail "no hcops.h under CPATH"

echo "== a program linked -lblas, and numpy, with HCOPS_VERBOSE=1"
HCOPS_VERBOSE=1 ./modules_blas_user > "modules_$system.blas.out" 2> "modules_$system.blas.err" ||
  { fail "modules_blas_user"; cat "modules_$system.blas.out" "modules_$system.blas.err"; }
grep -q '^hcops_verbose,exec,sgemm_,' "modules_$system.blas.err" ||
  { fail "the -lblas program's sgemm_ did not run in HCOps"; cat "modules_$system.blas.err"; }
# numpy is not needed by a BLAS-only build: without it that part is skipped,
# as it is for a cross build (the host's python cannot load its libraries).
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "  (numpy part skipped: a cross build, and /usr/bin/python3 is the build machine's)"
elif ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  echo "  (numpy part skipped: /usr/bin/python3 has no numpy)"
else
HCOPS_VERBOSE=1 /usr/bin/python3 -c '
import numpy as np
a = np.arange(96 * 80, dtype=np.float32).reshape(96, 80) / 1000
b = np.ones((80, 64), dtype=np.float32)
c = a @ b
assert abs(float(c[5, 7]) - float(a[5].sum())) < 1e-3
import hcops, os
print("hcops package from", os.path.dirname(hcops.__file__))
' > "modules_$system.numpy.out" 2> "modules_$system.numpy.err" ||
  { fail "numpy under the module"; cat "modules_$system.numpy.out" "modules_$system.numpy.err"; }
cat "modules_$system.numpy.out"
grep -q "^hcops package from $root/share/hcops/python/hcops" "modules_$system.numpy.out" || fail "import hcops is not the module's"
grep -Eq '^hcops_verbose,exec,(cblas_sgemm|sgemm_),' "modules_$system.numpy.err" ||
  { fail "numpy's sgemm_ did not run in HCOps"; cat "modules_$system.numpy.err"; }
fi

echo "== conflict with another module of the blas family"
module load openblas > "modules_$system.conflict" 2>&1
if [ "${FAKE_OPENBLAS:-}" = 1 ] && [ -n "${HCOPS_ROOT:-}" ]; then
  fail "openblas and hcops are loaded together"; cat "modules_$system.conflict"
fi
echo "  after 'module load openblas': FAKE_OPENBLAS=${FAKE_OPENBLAS:-} HCOPS_ROOT=${HCOPS_ROOT:-}"
module unload openblas > /dev/null 2>&1 || true

echo "== module unload hcops"
module unload hcops 2>/dev/null || true
module purge > /dev/null 2>&1 || true
snapshot > "modules_$system.after"
diff "modules_$system.before" "modules_$system.after" || fail "the environment after unload differs from before load"

echo "== an entry of LD_LIBRARY_PATH the module adds too stays after unload"
# (Lmod moves such an entry to the front and leaves it there; Environment
# Modules counts references. Either way the user's own entry survives.)
export LD_LIBRARY_PATH="/opt/site/lib:$root/lib"
module load hcops || fail "module load hcops (second time)"
module unload hcops 2>/dev/null || true
case ":$LD_LIBRARY_PATH:" in *":$root/lib:"*) ;; *) fail "unload removed the user's own $root/lib: $LD_LIBRARY_PATH" ;; esac
case ":$LD_LIBRARY_PATH:" in *":$root/lib/hcops:"*) fail "unload left $root/lib/hcops" ;; esac
export LD_LIBRARY_PATH=/opt/site/lib

echo "== a modulefile copied into a site tree uses the configured prefix"
site=$HCOPS_TEST_BUILDDIR/modules_${system}_site
rm -rf "$site" && mkdir -p "$site/hcops" && cp "$mfdir/hcops/"* "$site/hcops/"
MODULEPATH=$site
module load hcops || fail "module load of the site copy"
[ "${HCOPS_ROOT:-}" = "$HCOPS_TEST_PREFIX" ] || fail "the site copy's HCOPS_ROOT=${HCOPS_ROOT:-} (want $HCOPS_TEST_PREFIX)"
module unload hcops 2>/dev/null || true

[ $status = 0 ] && rm -rf "$dest" "$fake" "$site"
exit $status
