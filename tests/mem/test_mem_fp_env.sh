#!/bin/sh
# libhcops_mem.so leaves its caller's floating-point environment as it found
# it (test_mem_fp_env.c) under every HWLOC_XMLFILE of abi/fp_env_xmls.sh,
# and says once when it cannot use the variable's file.
set -u
. "${srcdir:-..}/abi/fp_env_xmls.sh"
unset HCOPS_VERBOSE
fp_check_all ./test_mem_fp_env
exit $fp_failed
