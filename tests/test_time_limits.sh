#!/bin/sh
# tests/time_limits.sh, tests/time_limits.py and tests/common/time_limit.h
# (through ./time_limit_probe) scale the tests' limits alike: 1 natively, 8
# under emulation, HCOPS_TEST_TIME_SCALE when it is a number > 0 and below
# 10^6 (whether emulated or not), a malformed one warned about and ignored;
# whole seconds, at least 1.
set -u
dir=${srcdir:-../../tests}
. "$dir/time_limits.sh"
python=${PYTHON:-python3}
pass=0 fail=0
# case EMULATED SCALE SECONDS EXPECTED [warns]
case_() {
  emulated=$1 scale=$2 seconds=$3 want=$4 warns=${5:-}
  sh_err=$(mktemp) py_err=$(mktemp) c_err=$(mktemp)
  got_sh=$(HCOPS_TEST_EMULATED=$emulated HCOPS_TEST_TIME_SCALE=$scale time_limit "$seconds" 2>"$sh_err")
  got_py=$(HCOPS_TEST_EMULATED=$emulated HCOPS_TEST_TIME_SCALE=$scale "$python" -c \
    "import sys; sys.path.insert(0, '$dir'); import time_limits; print(time_limits.limit($seconds))" 2>"$py_err")
  got_c=$(HCOPS_TEST_EMULATED=$emulated HCOPS_TEST_TIME_SCALE=$scale ./time_limit_probe "$seconds" 2>"$c_err")
  what="emulated=$emulated scale='$scale' $seconds s"
  ok=yes
  [ "$got_sh" = "$want" ] && [ "$got_py" = "$want" ] && [ "$got_c" = "$want" ] || ok=no
  for e in "$sh_err" "$py_err" "$c_err"; do
    if [ -n "$warns" ]; then grep -q "^time_limits: HCOPS_TEST_TIME_SCALE=.* is not a number between 0 and 10^6; ignored$" "$e" || ok=no
    else [ ! -s "$e" ] || ok=no; fi
  done
  if [ $ok = yes ]; then pass=$((pass + 1)); echo "PASS: $what -> $want"
  else fail=$((fail + 1)); echo "FAIL: $what: want $want, sh $got_sh ($(cat "$sh_err")), py $got_py ($(cat "$py_err")), C $got_c ($(cat "$c_err"))"; fi
  rm -f "$sh_err" "$py_err" "$c_err"
}
case_ no "" 300 300
case_ yes "" 300 2400
case_ no 2.5 60 150
case_ yes 0.5 300 150
case_ no 4 180 720
case_ yes 1e1 120 1200
case_ no abc 60 60 warns
case_ yes -1 60 480 warns
case_ no 0 60 60 warns
case_ yes inf 60 480 warns
case_ no nan 60 60 warns
case_ no 2. 60 60 warns
case_ no +2 60 60 warns
case_ no 1e7 60 60 warns
case_ no .5 60 30
case_ no 0.001 60 1
case_ yes 1e-3 100 1
case_ no 0.0125 60 1
case_ no 0.025 60 2
case_ no '1\0632' 60 60 warns
case_ no 1e6 60 60 warns
case_ no 999999 2 1999998
echo "$pass passed, $fail failed"
[ $fail = 0 ]
