# Sourced by the tests that run a perf/ benchmark (its quick mode): the
# build the benchmark's tools come from (HCOPS_BUILD), a scratch directory
# $tmp removed at exit, `fail MESSAGE` (prints FAIL: and sets status=1), and
# `run_quick SCRIPT ARGS...`: perf/SCRIPT --quick ARGS under $PYTHON, its
# output kept in $tmp/out.txt and printed, a failure if it exits non-zero.
HCOPS_BUILD=$(cd "${HCOPS_TOOLS_BUILDDIR:?set by tests/perf/perf.am}/.." && pwd)
export HCOPS_BUILD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
run_quick() {
  script=$1
  shift
  "$PYTHON" "${srcdir:-../../tests}/../perf/$script" --quick "$@" >"$tmp/out.txt" 2>&1
  rc=$?
  cat "$tmp/out.txt"
  [ $rc = 0 ] || fail "$script --quick exited $rc"
}
