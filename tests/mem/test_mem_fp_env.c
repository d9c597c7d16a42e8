/* libhcops_mem.so must leave its caller's floating-point environment as it
 * found it (see abi/fp_env_check.h): large allocations (the first one loads
 * the topology and builds the memory tiers through hwloc, then places pages
 * with libnuma's mbind), realloc, free, and every hcops_mem_* call, each from
 * a distinctive environment. Linked with libhcops_mem, as an application
 * using -lhcops_mem. Run by test_fp_env.sh with HWLOC_XMLFILE unset, set to
 * this machine's XML and to tests/topologies files.
 * Prints one line per call and "test_mem_fp_env: N checks, F failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/fp_env_check.h"
#include "hcops.h"

int main(void) {
  enum { kLarge = 8 << 20 };
  void *p = NULL, *q = NULL;
  long ticket = -1;
  int rc = 0, moved = 0;
  size_t stat = 0;
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) return 2;

  FP_CHECK(p = malloc(kLarge));
  if (p) memset(p, 1, kLarge);
  FP_CHECK(q = malloc(kLarge + 4096));
  FP_CHECK(p = realloc(p, 2 * kLarge));
  FP_CHECK(free(q));
  FP_CHECK(rc |= hcops_mem_push(HCOPS_MEM_THREAD, "fast,thp"));
  FP_CHECK(q = malloc(kLarge));
  FP_CHECK(rc |= hcops_mem_pop(HCOPS_MEM_THREAD));
  FP_CHECK(rc |= hcops_mem_push(HCOPS_MEM_PROCESS, "interleave"));
  FP_CHECK(rc |= hcops_mem_pop(HCOPS_MEM_PROCESS));
  /* Moves may fail under an XML of another machine (no such node here). */
  FP_CHECK(moved = hcops_mem_move(p, kLarge, "ddr"));
  FP_CHECK(ticket = hcops_mem_move_async(p, kLarge, "local"));
  FP_CHECK(moved = hcops_mem_wait(ticket));
  FP_CHECK(stat = hcops_mem_stat("allocations"));
  FP_CHECK(hcops_mem_print_info(devnull));
  FP_CHECK(free(q));
  FP_CHECK(free(p));
  fclose(devnull);
  if (rc != 0 || ticket <= 0 || p == NULL || q == NULL) {
    printf("FAIL: a call failed (rc %d, ticket %ld)\n", rc, ticket);
    ++fp_failures;
  }
  (void)stat;
  (void)moved;
  return fp_summary("test_mem_fp_env");
}
