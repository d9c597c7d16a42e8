# Sourced by the tests that run make in the build tree (make install, dist,
# wheel, uninstall): `make check` runs its tests in parallel (the top
# Makefile's CHECK_JOBS), and two makes in one tree at once may relink or
# write the same file. Each of these tests holds this lock for its whole
# run, so they run one after another while the other tests go on beside
# them. Without flock(1) (util-linux) they run unlocked, as in a serial run.
if command -v flock >/dev/null 2>&1; then
  exec 9>>"${HCOPS_TEST_BUILDDIR:-.}/.tree.lock" && flock 9
fi
