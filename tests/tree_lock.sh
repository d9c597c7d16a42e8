# Sourced by the tests that run make in the build tree (make install, dist,
# wheel, uninstall): `make check` runs its tests in parallel (the top
# Makefile's CHECK_JOBS), and two makes in one tree at once may relink or
# write the same file. tree_make runs make holding a lock on
# $HCOPS_TEST_BUILDDIR/.tree.lock, so that those makes take turns while the
# rest of each test runs beside the others; the Python tests take the same
# lock (external/benchdnn_suites.py, external/torch_suite.py). Without
# flock(1) (util-linux) make runs unlocked, as in a serial run.
tree_make() {
  if command -v flock >/dev/null 2>&1; then
    flock "${HCOPS_TEST_BUILDDIR:-.}/.tree.lock" make "$@"
  else
    make "$@"
  fi
}
