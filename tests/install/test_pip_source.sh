#!/bin/sh
# `pip install --no-build-isolation SOURCE` in a fresh venv that sees the
# PyTorch 2.x venv's torch, as a PyTorch user installs HCOps from a checkout
# or from the `make dist` tarball: pip's build backend (pyproject.toml,
# build-aux/hcops_wheel.py) checks the system, runs configure for that venv's
# python and torch, make, and packs the wheel pip installs. Then what
# test_wheel.sh checks of an installed wheel (wheel_venv.sh),
# and pip uninstall leaving the venv as it was. Each route builds HCOps once
# (~4 min on 2 cores): make check-external only.
if [ "${HCOPS_CHECK_EXTERNAL:-0}" != 1 ]; then
  echo "SKIP: two whole builds of HCOps (make check-external runs it; HCOPS_CHECK_EXTERNAL=1 here)"
  exit 77
fi
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/tree_lock.sh"  # tree_make: make in the build tree, in turn
. "${srcdir:-../../tests}/install/wheel_venv.sh"

echo "== make dist"
tree_make -s -C "$top_builddir" dist distdir="hcops-pip-test-$$" > "$scratch/dist.log" 2>&1 &&
  mv "$top_builddir/hcops-pip-test-$$.tar.gz" "$scratch/" ||
  { tail -20 "$scratch/dist.log"; echo "FAIL: make dist"; exit 1; }

for source in "$HCOPS_TEST_TOP_SRCDIR" "$scratch/hcops-pip-test-$$.tar.gz"; do
  echo "== pip install --no-build-isolation $source"
  venv=$scratch/venv
  rm -rf "$venv"
  make_venv "$venv" || exit 1
  tree "$venv" > "$scratch/before"
  start=$(date +%s)
  "$venv/bin/python" -m pip install -v --no-build-isolation --no-index --no-cache-dir --disable-pip-version-check "$source" \
    > "$scratch/pip.log" 2>&1 || { tail -60 "$scratch/pip.log"; fail "pip install $source"; continue; }
  grep '^ *hcops:' "$scratch/pip.log"
  echo "built and installed in $(( $(date +%s) - start )) s"
  check_installed "$venv" "$torch_version"
  "$venv/bin/python" -m pip uninstall -y --disable-pip-version-check hcops > "$scratch/pip.log" 2>&1 ||
    fail "pip uninstall hcops: $(tail -3 "$scratch/pip.log")"
  tree "$venv" > "$scratch/after"
  diff "$scratch/before" "$scratch/after" > "$scratch/left" ||
    fail "$source: pip uninstall left the venv changed: $(head -20 "$scratch/left")"
done
[ $status = 0 ] && echo "PASS: pip install from the checkout and from the tarball"
exit $status
