#!/bin/sh
# test_dnnl_loaded.c: a libdnnl opened RTLD_LOCAL wins over
# HCOPS_UNDERLYING_DNNL, which is then never read (nothing on stderr).
set -u
err=$(LD_PRELOAD=$HCOPS_LIB HCOPS_UNDERLYING_DNNL=/nonexistent/libdnnl.so.2 ./test_dnnl_loaded 2>&1 >/dev/null)
rc=$?
LD_PRELOAD=$HCOPS_LIB HCOPS_UNDERLYING_DNNL=/nonexistent/libdnnl.so.2 ./test_dnnl_loaded 2>/dev/null
[ $rc = 0 ] || { echo "FAIL: test_dnnl_loaded exited $rc"; echo "$err"; exit 1; }
[ -z "$err" ] || { echo "FAIL: stderr:"; echo "$err"; exit 1; }
exit 0
