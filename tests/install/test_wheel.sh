#!/bin/sh
# `make wheel` on this build (configured for the PyTorch 2.x venv), and the
# wheel in a fresh venv, as a PyTorch user installs HCOps:
# - the wheel: `auditwheel show` passes (make wheel's check: the wheel's
#   libraries find each other inside it, torch's are the venv's torch's);
#   its metadata pins the torch the build is for; its tag is that python's;
# - `pip install` into a fresh venv (seeing the 2.x venv's torch, no
#   download): hcops-run, hcops-info and hcops-prof on its PATH, a DiT step
#   under the installed hcops-run runs its dispatcher GEMMs in HCOps from the
#   libraries inside the venv's hcops package, another torch gets one
#   warning line and stock PyTorch (wheel_venv.sh);
# - `pip uninstall` leaves the venv as it was, file for file.
# The same from the source (pip's build backend running configure and make)
# is tests/install/test_pip_source.sh, in make check-external.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
# A cross build (make check-aarch64): its torch 2.x is the aarch64 wheel
# installed into a folder of the QEMU root, not a venv, and the root has no
# make for make wheel's install step nor a venv for the user's pip install.
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "SKIP: a cross build: the wheel is packed and installed on the machine it is for (here, x86-64's make check)"
  exit 77
fi
. "${srcdir:-../../tests}/install/wheel_venv.sh"

echo "== make wheel"
tree_make -s -C "$top_builddir" wheel WHEEL_DIR="$scratch/wheels" > "$scratch/wheel.log" 2>&1 ||
  { cat "$scratch/wheel.log"; echo "FAIL: make wheel"; exit 1; }
grep '^hcops:' "$scratch/wheel.log"
set -- "$scratch"/wheels/hcops-*.whl
[ $# = 1 ] && [ -f "$1" ] || { echo "FAIL: make wheel made no wheel (or several): $*"; exit 1; }
wheel=$1
echo "$wheel: $(wc -c < "$wheel") bytes"
tag=$("$HCOPS_TORCH2_PYTHON" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
case $(basename "$wheel") in "hcops-"*"-$tag-$tag-linux_"*.whl) ;; *) fail "wheel name: $(basename "$wheel")" ;; esac
"$HCOPS_TORCH2_PYTHON" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())' "$wheel" > "$scratch/METADATA"
grep -qx "Requires-Dist: torch==$torch_version" "$scratch/METADATA" ||
  fail "the metadata does not pin torch==$torch_version: $(grep Requires "$scratch/METADATA")"

echo "== the build's check of the system (pip's backend runs it first)"
# A requirement that is never met: the check stops, naming it (and, on
# Debian, the apt-get line with its package).
"$HCOPS_TORCH2_PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1] + "/build-aux"); import hcops_wheel
hcops_wheel.REQUIREMENTS.append(("a test'"'"'s missing thing", lambda: False, "hcops-test-no-such-package"))
hcops_wheel.check_system(sys.argv[1])' "$HCOPS_TEST_TOP_SRCDIR" > "$scratch/deps.out" 2>&1
rc=$?
cat "$scratch/deps.out"
[ $rc = 1 ] && grep -q "^hcops: the build needs a test's missing thing" "$scratch/deps.out" || fail "a missing requirement: exit $rc"
if command -v dpkg-query > /dev/null; then
  grep -q '^hcops: install them first, as root: apt-get install -y hcops-test-no-such-package$' "$scratch/deps.out" ||
    fail "a missing requirement: not the apt-get line"
  "$HCOPS_TORCH2_PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1] + "/build-aux"); import hcops_wheel
hcops_wheel.check_system(sys.argv[1])' "$HCOPS_TEST_TOP_SRCDIR" > "$scratch/deps.out" 2>&1 ||
    fail "this machine (which builds HCOps) fails the check: $(cat "$scratch/deps.out")"
fi

echo "== pip install into a fresh venv"
venv=$scratch/venv
make_venv "$venv" || exit 1
tree "$venv" > "$scratch/before"
"$venv/bin/python" -m pip install --no-index --disable-pip-version-check "$wheel" > "$scratch/pip.log" 2>&1 ||
  { cat "$scratch/pip.log"; echo "FAIL: pip install $wheel"; exit 1; }
tail -1 "$scratch/pip.log"
check_installed "$venv" "$torch_version"

echo "== pip uninstall"
"$venv/bin/python" -m pip uninstall -y --disable-pip-version-check hcops > "$scratch/pip.log" 2>&1 ||
  fail "pip uninstall hcops: $(tail -3 "$scratch/pip.log")"
tree "$venv" > "$scratch/after"
diff "$scratch/before" "$scratch/after" > "$scratch/left" || fail "pip uninstall left the venv changed: $(head -20 "$scratch/left")"
[ $status = 0 ] && echo "PASS: wheel made, installed, run and uninstalled"
exit $status
