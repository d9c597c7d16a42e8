#!/bin/sh
# The test stages of `make check-aarch64`, run under QEMU in the cross build
# the Makefile has just made: the whole suite on QEMU's `max` CPU, the
# vector-length agnostic families at every other length, then the Python
# suites in the Debian arm64 root. The Makefile passes its variables in the
# environment (see the comments above check-aarch64 there).
#
# On 2 cores the stages take several hours, longer than a session, a batch
# job's time limit or a laptop's lid stays open. RESUME=yes continues an
# interrupted run instead of starting over: a stage that passed is not run
# again, and in the interrupted stage a test keeps its result unless it
# failed or did not finish (automake reruns a test whose .trs is missing).
# That is sound only while the tree under test is the one the interrupted
# run tested, so every run records an identity of it (the built libraries
# and programs, config.status, and the source tree's test scripts, Python
# package, tools and build scripts); a resume whose tree differs says so
# and starts over.
set -u

b=${BUILD_AARCH64:?}
src=${SRCDIR:?}
state=$b/check-aarch64.state
make=${MAKE:-make}

say() { echo "check-aarch64: $*"; }

# The libtool objects' directories hold what the tests run (the Makefile has
# built the test programs before this script runs; libtool's lt- wrappers'
# programs appear when a test first runs, so they are left out); the arm64
# root and the wheel's environment are inputs made once and checked by their
# own scripts, not part of the tree under test.
identity() {
  {
    find "$b" \( -path "$b/debian-arm64" -o -path "$b/torch2-aarch64" -o -path "$state" \) -prune \
      -o -path '*/.libs/*' -type f ! -name 'lt-*' -print
    echo "$b/config.status"
    find "$src/tests" "$src/python" "$src/tools" "$src/build-aux" "$src/perf" -type f \
      ! -name '*.pyc' ! -name '*.csv' ! -name '*.png'
  } | LC_ALL=C sort | xargs sha256sum | sed "s|  $src/|  src:|; s|  $b/|  build:|" | sha256sum | cut -d' ' -f1
}

elapsed() {
  s=$(( $(date +%s) - $1 ))
  printf '%d h %02d min' $((s / 3600)) $((s % 3600 / 60))
}

id=$(identity)
if [ "${RESUME:-no}" = yes ]; then
  if [ ! -f "$state/identity" ]; then
    say "RESUME=yes, but no interrupted run is recorded in $state; starting from the beginning"
    rm -rf "$state"
  elif [ "$(cat "$state/identity")" != "$id" ]; then
    say "RESUME=yes, but the tree has changed since the recorded run (rebuilt libraries, new tests or scripts); starting from the beginning"
    rm -rf "$state"
  fi
else
  rm -rf "$state"
fi
mkdir -p "$state"
echo "$id" > "$state/identity"

# The failed or unfinished tests of an interrupted main stage, to rerun; the
# others keep their logs (automake's RECHECK_LOGS, empty keeps them all).
failed_logs() {
  ( cd "$b/tests" && find . -name '*.trs' -exec grep -l '^:global-test-result: \(FAIL\|ERROR\|XPASS\)' {} + 2>/dev/null ) |
    sed 's|^\./||; s|\.trs$|.log|' | tr '\n' ' '
}

# run_stage NAME DESCRIPTION COMMAND...: runs a stage unless it passed in the
# run being resumed; records it when it passes.
run_stage() {
  name=$1 what=$2 resumed=; shift 2
  if [ -f "$state/$name.passed" ]; then
    say "$what: passed in the run being resumed ($(cat "$state/$name.passed")), not run again"
    return 0
  fi
  say "$what"
  t0=$(date +%s)
  if ! "$@"; then
    cat "$b/tests/test-suite.log"
    say "$what: FAILED after $(elapsed "$t0") (make check-aarch64 RESUME=yes reruns the failed tests and goes on)"
    exit 1
  fi
  summary=$(awk '/^# PASS:/ {p = $3} /^# SKIP:/ {s = $3} /^# (FAIL|ERROR|XPASS):/ {f += $3}
    END {printf "%d passed, %d failed, %d skipped", p, f, s}' "$b/tests/test-suite.log")
  echo "$summary in $(elapsed "$t0")$resumed, $(date -u '+%Y-%m-%d %H:%M UTC')" > "$state/$name.passed"
  say "$what: $(cat "$state/$name.passed")"
}

main_stage() {
  if [ -f "$state/main.started" ]; then
    resumed=", resumed: the time of this part"
    set -- RECHECK_LOGS="$(failed_logs)"
    say "resuming the whole suite: tests with a result keep it; rerunning the failed and unfinished ones"
  else
    set --
    : > "$state/main.started"
  fi
  QEMU_CPU=max DIT_FAMILIES_MODELS="$AARCH64_DIT_MODELS" DIT_STEPS=2 $make -C "$b" check "$@"
}

vl_stage() {
  QEMU_CPU=max,sve-default-vector-length=$1,sme-default-vector-length=$2 HCOPS_TEST_FAMILIES="sme sve_bf16 sve" \
    $make -C "$b/tests" check TESTS="$AARCH64_VL_TESTS"
}

python_stage() {
  sh "$src/build-aux/aarch64-root.sh" "$AARCH64_ROOT" || return 1
  tests=$AARCH64_PYTHON_TESTS
  [ ! -f "$b/shim/torch/.libs/libhcops_torch.so" ] || tests="$tests $AARCH64_TORCH_TESTS"
  AARCH64_ROOT="$AARCH64_ROOT" AARCH64_ROOT_BINDS="$AARCH64_ROOT_BINDS" QEMU_CPU=max \
    $make -C "$b/tests" check TESTS="$tests" PYTHON="$src/build-aux/python3-aarch64.sh"
}

run_stage main "the whole suite on QEMU's max CPU (SVE 512 bits, SME 256)" main_stage
for vl in $AARCH64_VECTOR_LENGTHS; do
  sve=${vl%:*} sme=${vl#*:}
  run_stage "vl-$sve-$sme" "sme, sve_bf16 and sve at SVE $((sve * 8)) bits, SME $((sme * 8)) bits" vl_stage "$sve" "$sme"
done
if [ "$AARCH64_PYTHON" = yes ]; then
  run_stage python "the Python suites in Debian's arm64 python3, numpy, scipy and PyTorch ($AARCH64_ROOT)" python_stage
fi
say "all stages passed:"
for name in main $(for vl in $AARCH64_VECTOR_LENGTHS; do echo "vl-${vl%:*}-${vl#*:}"; done) python; do
  [ ! -f "$state/$name.passed" ] || echo "  $name: $(cat "$state/$name.passed")"
done
