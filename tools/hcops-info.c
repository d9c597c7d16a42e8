/* hcops-info: what HCOps detected and what it would do.
 *   hcops-info [M N K]   also show the partition of an M x N x K SGEMM
 *   hcops-info --families  the kernel families this CPU runs, one per line */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcops.h"

/* libhcops_mem's view (threshold, policy, fast nodes): from the copy already
 * preloaded, else the one beside the libhcops.so.0 this program runs on (an
 * installation keeps both in libdir; the build tree keeps it in
 * shim/mem/.libs beside shim/.libs), else any the loader finds. Found from
 * libhcops's own place, so that the program names no directory and an
 * installation finds its own, wherever `make install prefix=` put it.
 * dlopen'ed RTLD_LOCAL, its malloc interposes nothing here. */
static void *open_beside_libhcops(const char *relative) {
  /* dlsym, not &hcops_version: in a non-PIE program that is the PLT entry. */
  void *fn = dlsym(RTLD_DEFAULT, "hcops_version");
  Dl_info self;
  if (!fn || !dladdr(fn, &self) || !self.dli_fname) return NULL;
  const char *slash = strrchr(self.dli_fname, '/');
  if (!slash) return NULL;
  char path[4096];
  int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname, relative);
  return n > 0 && (size_t)n < sizeof path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
}

static void print_mem_info(void) {
  typedef void (*info_fn)(FILE *);
  info_fn info = (info_fn)dlsym(RTLD_DEFAULT, "hcops_mem_print_info");
  void *h = NULL;
  if (!info && !(h = open_beside_libhcops("libhcops_mem.so.0")) &&
      !(h = open_beside_libhcops("../mem/.libs/libhcops_mem.so.0")))
    h = dlopen("libhcops_mem.so.0", RTLD_NOW | RTLD_LOCAL);
  if (h) info = (info_fn)dlsym(h, "hcops_mem_print_info");
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
        "the underlying BLAS and the environment in effect; with M N K, the partition of that SGEMM.\n"
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
