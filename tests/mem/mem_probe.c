/* A program that knows nothing of libhcops_mem, for test_mem_env.sh to run
 * under LD_PRELOAD: it allocates on both sides of the threshold, checks its
 * data and exits 0, printing nothing. Arguments ask it to report afterwards
 * (finding hcops_mem_* with dlsym, as a preloaded program would):
 *   stat:NAME  prints NAME=<hcops_mem_stat(NAME)>
 *   info       hcops_mem_print_info(stdout)
 *   fast3      three 4 MiB blocks under "fast", printing fast_in_use and
 *              fallback.fast_to_ddr (since the first) after each; freed,
 *              and three again */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static volatile size_t too_big = SIZE_MAX; /* volatile: no compiler warning, no folding */

static void *fn(const char *name) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (!f) {
    fprintf(stderr, "mem_probe: %s not found: is libhcops_mem.so preloaded?\n", name);
    exit(2);
  }
  return f;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(i * 7 + seed);
}
static void verify(const unsigned char *p, size_t n, unsigned seed, const char *what) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (unsigned char)(i * 7 + seed)) {
      fprintf(stderr, "mem_probe: %s: byte %zu wrong\n", what, i);
      exit(1);
    }
}

/* Four large blocks (malloc, calloc, realloc across the threshold,
 * posix_memalign) and two small ones, all checked and freed. */
static void workload(void) {
  unsigned char *small = malloc(100), *mid = malloc(64 << 10);
  unsigned char *big = malloc(4 * MiB), *zero = calloc(3, MiB);
  unsigned char *grown = malloc(200 << 10);
  void *aligned = NULL;
  if (!small || !mid || !big || !zero || !grown || posix_memalign(&aligned, 64, 2 * MiB)) {
    fprintf(stderr, "mem_probe: allocation failed\n");
    exit(1);
  }
  fill(small, 100, 1);
  fill(mid, 64 << 10, 2);
  fill(big, 4 * MiB, 3);
  fill(grown, 200 << 10, 4);
  fill(aligned, 2 * MiB, 5);
  for (size_t i = 0; i < 3 * MiB; ++i)
    if (zero[i]) {
      fprintf(stderr, "mem_probe: calloc byte %zu not zero\n", i);
      exit(1);
    }
  grown = realloc(grown, 3 * MiB);
  if (!grown) exit(1);
  verify(grown, 200 << 10, 4, "realloc");
  verify(small, 100, 1, "small");
  verify(mid, 64 << 10, 2, "64 KiB");
  verify(big, 4 * MiB, 3, "4 MiB");
  verify(aligned, 2 * MiB, 5, "posix_memalign");
  if (malloc(too_big) != NULL) { /* fails quietly, as without the library */
    fprintf(stderr, "mem_probe: malloc(SIZE_MAX) succeeded\n");
    exit(1);
  }
  free(small);
  free(mid);
  free(big);
  free(zero);
  free(grown);
  free(aligned);
}

int main(int argc, char **argv) {
  workload();
  for (int i = 1; i < argc; ++i) {
    size_t (*stat)(const char *) = (size_t(*)(const char *))fn("hcops_mem_stat");
    if (!strncmp(argv[i], "stat:", 5)) {
      printf("%s=%zu\n", argv[i] + 5, stat(argv[i] + 5));
    } else if (!strcmp(argv[i], "info")) {
      ((void (*)(FILE *))fn("hcops_mem_print_info"))(stdout);
    } else if (!strcmp(argv[i], "fast3")) {
      int (*push)(int, const char *) = (int (*)(int, const char *))fn("hcops_mem_push");
      if (push(0 /* HCOPS_MEM_THREAD */, "fast") != 0) return 1;
      /* Twice: the second round reuses the first's blocks, freed last first. */
      const size_t fell0 = stat("fallback.fast_to_ddr");
      for (int round = 1; round <= 2; ++round) {
        void *b[3];
        for (int k = 0; k < 3; ++k) {
          b[k] = malloc(4 * MiB);
          if (!b[k]) return 1;
          memset(b[k], k, 4 * MiB);
          printf("round%d fast%d fast_in_use=%zu fast_to_ddr=%zu\n", round, k + 1, stat("fast_in_use"),
                 stat("fallback.fast_to_ddr") - fell0);
        }
        for (int k = 2; k >= 0; --k) free(b[k]);
        printf("round%d freed fast_in_use=%zu\n", round, stat("fast_in_use"));
      }
    } else {
      fprintf(stderr, "mem_probe: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  return 0;
}
