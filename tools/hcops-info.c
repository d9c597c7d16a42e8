/* hcops-info: what HCOps detected and what it would do.
 *   hcops-info [M N K]   also show the partition of an M x N x K SGEMM */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcops.h"

static long parse(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return (*s && !*end && v > 0) ? v : -1;
}

int main(int argc, char **argv) {
  long m = 0, n = 0, k = 0;
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: hcops-info [M N K]\n"
           "Prints the HCOps version, CPU features and kernels, topology (HWLOC_XMLFILE is honoured),\n"
           "the reference BLAS and the environment in effect; with M N K, the partition of that SGEMM.\n");
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
  return 0;
}
