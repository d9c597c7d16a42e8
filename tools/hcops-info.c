/* hcops-info: what HCOps detected and what it would do.
 *   hcops-info [M N K]   also show the partition of an M x N x K SGEMM
 *   hcops-info --families  the kernel families this CPU runs, one per line */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcops.h"

/* libhcops_mem's view (threshold, policy, fast nodes): from the copy already
 * preloaded, else the build tree's, else the installed one. dlopen'ed
 * RTLD_LOCAL, its malloc interposes nothing here. */
static void print_mem_info(void) {
  typedef void (*info_fn)(FILE *);
  info_fn info = (info_fn)dlsym(RTLD_DEFAULT, "hcops_mem_print_info");
  const char *const candidates[] = {HCOPS_MEM_BUILD_LIB, HCOPS_MEM_INSTALLED_LIB, "libhcops_mem.so.0"};
  for (size_t i = 0; !info && i < sizeof candidates / sizeof *candidates; ++i) {
    void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (h) info = (info_fn)dlsym(h, "hcops_mem_print_info");
  }
  printf("memory placement (libhcops_mem):");
  if (!info) {
    printf(" libhcops_mem.so not found\n");
    return;
  }
  printf("\n");
  fflush(stdout);
  info(stdout);
}

static long parse(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return (*s && !*end && v > 0) ? v : -1;
}

int main(int argc, char **argv) {
  long m = 0, n = 0, k = 0;
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf(
        "usage: hcops-info [M N K]\n"
        "       hcops-info --families\n"
        "Prints the HCOps version, CPU features and kernels, topology (HWLOC_XMLFILE is honoured),\n"
        "the reference BLAS and the environment in effect; with M N K, the partition of that SGEMM.\n"
        "--families lists the kernel families this CPU runs (valid HCOPS_ISA values), best first.\n");
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--families")) {
    fputs(hcops_kernel_families(), stdout);
    return 0;
  }
  if (argc == 4) {
    m = parse(argv[1]);
    n = parse(argv[2]);
    k = parse(argv[3]);
    if (m < 0 || n < 0 || k < 0) {
      fprintf(stderr, "hcops-info: M N K must be positive integers\n");
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "usage: hcops-info [M N K]\n");
    return 2;
  }
  hcops_print_info(stdout, m, n, k);
  print_mem_info();
  return 0;
}
