#!/bin/sh
# No libdnnl at all (test_dnnl_missing.c): the calls fail as they must, and
# stderr has exactly one error, at the first forwarded call, naming
# HCOPS_UNDERLYING_DNNL.
set -u
status=0
err=$(env -u HCOPS_UNDERLYING_DNNL ./test_dnnl_missing 2>&1 >/dev/null) || status=1
env -u HCOPS_UNDERLYING_DNNL ./test_dnnl_missing 2>/dev/null
echo "$err"
expected='-- first call
hcops: no oneDNN library for the symbols HCOps forwards (none already loaded; tried /nonexistent/libdnnl.so.2); set HCOPS_UNDERLYING_DNNL to the real oneDNN, such as /usr/lib/x86_64-linux-gnu/libdnnl.so.2'
if [ "$err" != "$expected" ]; then
  echo "FAIL: stderr is not the one error expected:"
  echo "$expected"
  status=1
fi
exit $status
