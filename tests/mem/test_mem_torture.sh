#!/bin/sh
# The torture run under LD_PRELOAD of libhcops_mem, as an unmodified program
# gets it. A 64 MiB reuse cache makes evictions frequent. A fixed 64 KiB
# mmap threshold makes glibc mmap often (no dynamic threshold), so its
# mappings come and go beside the arena's: a moment where part of the arena
# is not reserved shows as another thread's block overwritten. The timeout
# turns a deadlock into a failure (124) rather than a stuck make check.
. "${srcdir:-../../tests}/time_limits.sh"
lib=${HCOPS_MEM_LIB:?HCOPS_MEM_LIB must name the libhcops_mem.so to test}
exec timeout "$(time_limit 60)" env HCOPS_MEM_CACHE=64M MALLOC_MMAP_THRESHOLD_=65536 LD_PRELOAD="$lib" ./test_mem_torture
