# Sourced by shell tests: time_limit SECONDS prints SECONDS scaled for where
# the test runs, for timeout(1), in whole seconds, at least 1 (0 would mean
# no limit), as tests/time_limits.py's limit() does (its
# docstring says why): by HCOPS_TEST_TIME_SCALE when that is a number > 0,
# otherwise by 8 under emulation (HCOPS_TEST_EMULATED=yes) and 1 natively;
# a value it cannot read (not a decimal number > 0, below 10^6) is warned
# about and ignored.
time_limit() {
  # ENVIRON, not awk -v: -v would expand backslash escapes in the value.
  awk -v s="$1" 'BEGIN {
    given = ENVIRON["HCOPS_TEST_TIME_SCALE"]
    scale = (ENVIRON["HCOPS_TEST_EMULATED"] == "yes") ? 8 : 1
    if (given != "") {
      if (given ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ && given + 0 > 0 && given + 0 < 1e6) scale = given + 0
      else print "time_limits: HCOPS_TEST_TIME_SCALE=" given " is not a number between 0 and 10^6; ignored" > "/dev/stderr"
    }
    v = int(s * scale + 0.5)
    printf "%d\n", v < 1 ? 1 : v
  }'
}
