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
# again; in an interrupted whole-suite stage a test keeps its result unless
# it failed or did not finish (its log does not end in a result line, or
# it has no .trs: automake reruns those); an interrupted later stage runs
# again whole.
#
# That is sound only while what is tested is what the interrupted run
# tested, so every run records an identity of it, and a resume whose
# identity differs says what changed and starts over: every file of the
# source tree (build trees and caches left out), every object, library and
# program the build held when the run began, with config.status (not those
# the tests leave there: build-aux/run-identity.sh), the stages' parameters (the Makefile's
# variables, make's command-line variables, the HCOPS_*, QEMU_*, OMP_* and
# DIT_* environment), QEMU's version, the arm64 root's package list and the
# wheel environment's packages. Tests run by hand between the interruption
# and the resume overwrite their results unseen: do not.
set -u

b=${BUILD_AARCH64:?}
src=${SRCDIR:?}
root=${AARCH64_ROOT:?}
state=$b/check-aarch64.state
make=${MAKE:-make}

say() { echo "check-aarch64: $*"; }

case ${RESUME:-no} in
  yes | no | "") ;;
  *) say "RESUME=${RESUME}: yes or no"; exit 2 ;;
esac

# make -n, -t and -q still run this script (its recipe line names $(MAKE)),
# with the flags in MAKEFLAGS: its sub-makes would then pretend, and a stage
# would pass without a test run. Say what would run, and touch nothing. -i
# would let a failing stage pass.
flags=$(set -f; set -- ${MAKEFLAGS:-}; case ${1:-} in -* | "") ;; *) echo "$1" ;; esac)
case $flags in
  *[ntq]*)
    say "make -n/-t/-q: would run the whole suite, the vector lengths $AARCH64_VECTOR_LENGTHS$([ "$AARCH64_PYTHON" != yes ] || echo ", the Python suites") (RESUME=${RESUME:-no}); nothing run, nothing recorded"
    exit 0 ;;
  *i*) say "make -i would let a failing stage pass; run it without -i"; exit 2 ;;
esac

# One run at a time in a build: a second would share its logs and state.
exec 9> "$b/check-aarch64.lock"
if ! flock -n 9; then
  say "another make check-aarch64 is running in $b"
  exit 1
fi

# What make was told (but how many jobs) and the environment tests read.
parameters() {
  printf '%s\n' "$AARCH64_DIT_MODELS" "$AARCH64_VECTOR_LENGTHS" "$AARCH64_VL_TESTS" "$AARCH64_PYTHON" \
    "$AARCH64_PYTHON_TESTS" "$AARCH64_TORCH_TESTS"
  (set -f; printf '%s\n' ${MAKEFLAGS:-}) |
    grep -v -e '^-j' -e '^--jobserver' -e '^--no-print-directory$' -e '^-*[kswr]*$' -e '^RESUME=' -e '^JOBS=' || true
  env | grep -E '^(HCOPS_|QEMU_|OMP_|DIT_)' | LC_ALL=C sort
  qemu-aarch64-static --version 2>/dev/null | head -1
  [ ! -f "$root/var/lib/dpkg/status" ] || sha256sum < "$root/var/lib/dpkg/status"
  ls -d "$b"/torch2-aarch64/*/*.dist-info "$b"/torch2-aarch64/*.dist-info 2>/dev/null | sed "s|^$b/||"
}

elapsed() {
  s=$(( $(date +%s) - $1 ))
  printf '%d h %02d min' $((s / 3600)) $((s % 3600 / 60))
}

# The identity of what is tested (build-aux/run-identity.sh): the source
# tree, the build's products as they were when the run began, and the
# parameters; the arm64 root and the wheel's environment through their
# package lists (in the parameters), this script's state not at all.
identity() {
  parameters | sh "$src/build-aux/run-identity.sh" "$1" "$state" "$src" "$b" "$root" "$b/torch2-aarch64" "$state"
}

fresh=yes
if [ "${RESUME:-no}" = yes ]; then
  if [ -f "$state/identity" ] && [ ! -f "$state/identity.files" ]; then
    say "RESUME=yes, but the interrupted run was recorded by an older check-aarch64 (one hash, not a list); starting from the beginning"
  elif [ ! -f "$state/identity.files" ]; then
    say "RESUME=yes, but no interrupted run is recorded in $state; starting from the beginning"
  elif ! why=$(identity compare); then
    say "RESUME=yes, but what is tested has changed since the recorded run; starting from the beginning. What changed:"
    printf '%s\n' "${why:-(nothing listed: the comparison itself failed, said above)}" | sed 's/^/  /'
  else
    fresh=no
  fi
fi
if [ $fresh = yes ]; then
  # No result of an earlier run, or of a test run by hand, may pass for this one's.
  rm -rf "$state"
  find "$b/tests" \( -name '*.log' -o -name '*.trs' \) -type f -delete
  identity record || { say "what is tested could not be recorded (above); a resume could not tell whether it changed"; exit 1; }
fi

# The tests of an interrupted whole-suite stage to run again: those that
# failed, and those whose log does not end in the harness's result line (a
# run killed part way, with an older result beside it). The others keep
# their logs (automake's RECHECK_LOGS; empty keeps them all).
rerun_logs() {
  ( cd "$b/tests" && find . -name '*.trs' | while read -r trs; do
      log=${trs%.trs}.log
      if grep -q '^:global-test-result: \(FAIL\|ERROR\|XPASS\)' "$trs" ||
         ! tail -n 1 "$log" 2>/dev/null | grep -q '^\(PASS\|SKIP\|XFAIL\|FAIL\|XPASS\|ERROR\) .* (exit status: '; then
        echo "${log#./}"
      fi
    done ) | tr '\n' ' '
}

# The stage's test-suite.log, if it was written by this stage and reports
# at least one test and no failure: its summary line.
stage_summary() {
  log=$b/tests/test-suite.log
  [ -f "$log" ] && [ "$log" -nt "$state/stage-start" ] || return 1
  awk '/^# TOTAL:/ {t = $3} /^# PASS:/ {p = $3} /^# SKIP:/ {s = $3} /^# (FAIL|ERROR|XPASS):/ {f += $3}
    END {if (t == 0 || f > 0) exit 1; printf "%d passed, %d failed, %d skipped", p, f, s}' "$log"
}

# The stage's five longest tests: the tests run one at a time, so each one's
# time is from the previous log written (or the stage's start) to its own.
slowest() {
  ( cd "$b/tests" && find . -name '*.log' ! -name test-suite.log -newer "$state/stage-start" -printf '%T@ %P\n' ) |
    LC_ALL=C sort -n | awk -v t="$(stat -c %Y "$state/stage-start")" '{d = $1 - t; t = $1; printf "%d %s\n", d, $2}' |
    sort -rn | head -5 | awk '{sub(/\.log$/, "", $2); printf "%s %s (%d min %02d s)", (NR > 1 ? "," : ""), $2, $1 / 60, $1 % 60}'
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
  : > "$state/stage-start"
  sleep 1  # test-suite.log must be newer than the mark, to the second
  if ! "$@"; then
    [ ! "$b/tests/test-suite.log" -nt "$state/stage-start" ] || cat "$b/tests/test-suite.log"
    if [ "$name" = main ]; then
      say "$what: FAILED after $(elapsed "$t0") (make check-aarch64 RESUME=yes reruns the failed tests and goes on)"
    else
      say "$what: FAILED after $(elapsed "$t0") (make check-aarch64 RESUME=yes runs this stage again and goes on)"
    fi
    exit 1
  fi
  if ! summary=$(stage_summary); then
    say "$what: make said it passed, but its test-suite.log reports no test or a failure; not recorded"
    exit 1
  fi
  echo "$summary in $(elapsed "$t0")$resumed, $(date -u '+%Y-%m-%d %H:%M UTC')" > "$state/$name.passed"
  say "$what: $(cat "$state/$name.passed"); longest:$(slowest)"
}

main_stage() {
  if [ -f "$state/main.started" ]; then
    resumed=", resumed: the time of this part"
    set -- RECHECK_LOGS="$(rerun_logs)"
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
  if ! sh "$src/build-aux/aarch64-root.sh" "$root"; then
    say "the Debian arm64 root could not be made ($root)"
    return 1
  fi
  tests=$AARCH64_PYTHON_TESTS
  [ ! -f "$b/shim/torch/.libs/libhcops_torch.so" ] || tests="$tests $AARCH64_TORCH_TESTS"
  AARCH64_ROOT="$root" AARCH64_ROOT_BINDS="$AARCH64_ROOT_BINDS" QEMU_CPU=max \
    $make -C "$b/tests" check TESTS="$tests" PYTHON="$src/build-aux/python3-aarch64.sh"
}

run_stage main "the whole suite on QEMU's max CPU (SVE 512 bits, SME 256)" main_stage
for vl in $AARCH64_VECTOR_LENGTHS; do
  sve=${vl%:*} sme=${vl#*:}
  run_stage "vl-$sve-$sme" "sme, sve_bf16 and sve at SVE $((sve * 8)) bits, SME $((sme * 8)) bits" vl_stage "$sve" "$sme"
done
if [ "$AARCH64_PYTHON" = yes ]; then
  run_stage python "the Python suites in Debian's arm64 python3, numpy, scipy and PyTorch ($root)" python_stage
fi
say "all stages passed:"
for name in main $(for vl in $AARCH64_VECTOR_LENGTHS; do echo "vl-${vl%:*}-${vl#*:}"; done) python; do
  [ ! -f "$state/$name.passed" ] || echo "  $name: $(cat "$state/$name.passed")"
done
