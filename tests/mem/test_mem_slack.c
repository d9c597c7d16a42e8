/* Readable slack under LD_PRELOAD of libhcops_mem: the SLACK bytes past the
 * requested end of every block, and past malloc_usable_size, must be mapped
 * and readable, as they are under glibc, on every path: malloc, calloc,
 * realloc (grow, shrink, move, from a glibc pointer), the aligned calls,
 * blocks reused from the cache. OpenBLAS 0.3.21's zgemv reads 1792 bytes past
 * a matrix (OpenBLAS issue 4013); a block ending at the arena's PROT_NONE
 * reservation made that a SIGSEGV. test_mem_slack.sh runs this under every
 * page-kind policy. A fault is caught and reported with the call, size and
 * offset, then the run goes on; the exit status is the number of failures. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
/* What doc/environment.md promises: at least 4 KiB past the end. */
#define SLACK (4 * KiB)

static sigjmp_buf on_fault;
static volatile const char *fault_at;
static int failures, checked;

static void segv(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  (void)ctx;
  fault_at = si->si_addr;
  siglongjmp(on_fault, 1);
}

/* Reads [p + from, p + from + SLACK); false (and a FAIL line) on a fault. */
static int readable(const char *what, size_t n, size_t align, const char *p, size_t from) {
  ++checked;
  if (sigsetjmp(on_fault, 1)) {
    printf("FAIL: %s(%zu, align %zu): byte %zu past the end of %p faults (size %zu, usable %zu)\n", what, n, align,
           (size_t)(fault_at - (p + from)), (const void *)p, n, malloc_usable_size((void *)p));
    ++failures;
    return 0;
  }
  unsigned sum = 0;
  for (size_t i = 0; i < SLACK; ++i) sum += ((volatile const unsigned char *)p)[from + i];
  (void)sum;
  return 1;
}

/* The block `p` of `n` requested bytes: everything up to the usable size is
 * writable, and SLACK bytes are readable past both ends. */
static void check(const char *what, size_t n, size_t align, void *p) {
  if (!p) {
    printf("FAIL: %s(%zu, align %zu) returned NULL\n", what, n, align);
    ++failures;
    return;
  }
  if (align && (uintptr_t)p % align) {
    printf("FAIL: %s(%zu, align %zu) = %p is misaligned\n", what, n, align, p);
    ++failures;
  }
  const size_t usable = malloc_usable_size(p);
  if (usable < n) {
    printf("FAIL: %s(%zu): usable size %zu\n", what, n, usable);
    ++failures;
    return;
  }
  if (!readable(what, n, align, p, n)) return;
  if (sigsetjmp(on_fault, 1)) {
    printf("FAIL: %s(%zu): usable size %zu, but byte %zu is not writable\n", what, n, usable,
           (size_t)(fault_at - (char *)p));
    ++failures;
    return;
  }
  /* The last bytes of the usable size are the caller's to write. */
  const size_t tail = usable - n < 2 * SLACK ? usable - n : 2 * SLACK;
  memset((char *)p + usable - tail, 0x5a, tail);
  readable(what, n, align, p, usable);
}

static size_t (*mem_stat)(const char *);

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  mem_stat = (size_t(*)(const char *))dlsym(RTLD_DEFAULT, "hcops_mem_stat");
  if (!mem_stat) {
    printf("FAIL: hcops_mem_stat not found: run under LD_PRELOAD of libhcops_mem.so\n");
    return 1;
  }
  const size_t thr = mem_stat("threshold"), page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t allocations0 = mem_stat("allocations");

  /* Threshold-crossing, page multiples +-1, 2 MiB multiples +-1, odd sizes. */
  size_t sizes[64];
  int ns = 0;
  const size_t bases[] = {thr, 256 * page, 511 * page, 2 * MiB, 4 * MiB, 6 * MiB, 10 * MiB};
  for (size_t b = 0; b < sizeof bases / sizeof *bases; ++b)
    for (int d = -1; d <= 1; ++d) sizes[ns++] = bases[b] + (size_t)d;
  sizes[ns++] = 2 * MiB - SLACK;
  sizes[ns++] = 2 * MiB - SLACK + 1;
  sizes[ns++] = 1440000; /* the scipy case: a 300x300 complex matrix */
  sizes[ns++] = 1234567;
  sizes[ns++] = 3333333;
  sizes[ns++] = 8 * MiB - 17;

  for (int i = 0; i < ns; ++i) {
    const size_t n = sizes[i];
    if (n < thr) continue; /* glibc's */
    void *p = malloc(n);
    check("malloc", n, 0, p);
    free(p);
    p = malloc(n); /* the block just freed, from the cache when it is on */
    check("malloc after free", n, 0, p);
    free(p);
    p = malloc(n + n / 16); /* a slightly larger block taken back for less */
    free(p);
    p = malloc(n);
    check("malloc of a larger cached block", n, 0, p);
    free(p);
    p = calloc(1, n);
    check("calloc", n, 0, p);
    free(p);

    /* realloc: grow, shrink, move (a neighbour in the way), from glibc. */
    p = malloc(n);
    p = realloc(p, n + 3 * MiB + 1);
    check("realloc grow", n + 3 * MiB + 1, 0, p);
    p = realloc(p, n);
    check("realloc shrink", n, 0, p);
    void *in_the_way = malloc(n);
    p = realloc(p, 2 * n + 1);
    check("realloc past a neighbour", 2 * n + 1, 0, p);
    free(in_the_way);
    free(p);
    p = malloc(64);
    p = realloc(p, n);
    check("realloc of a glibc block", n, 0, p);
    free(p);

    const size_t aligns[] = {16, 64, page, 64 * KiB, 2 * MiB, 4 * MiB};
    for (size_t a = 0; a < sizeof aligns / sizeof *aligns; ++a) {
      const size_t al = aligns[a];
      p = NULL;
      if (posix_memalign(&p, al, n) != 0) p = NULL;
      check("posix_memalign", n, al, p);
      free(p);
      p = aligned_alloc(al, n);
      check("aligned_alloc", n, al, p);
      free(p);
      p = memalign(al, n);
      check("memalign", n, al, p);
      free(p);
    }
    p = valloc(n);
    check("valloc", n, page, p);
    free(p);
    p = pvalloc(n);
    check("pvalloc", (n + page - 1) / page * page, page, p);
    free(p);
  }
  /* The test means nothing if the blocks were glibc's. */
  const size_t arena_blocks = mem_stat("allocations") - allocations0;
  if (arena_blocks < 100) {
    printf("FAIL: only %zu blocks came from libhcops_mem's arena\n", arena_blocks);
    ++failures;
  }
  printf("%d of %d blocks' slack readable (%zu from the arena, cache hits %zu, hugetlb->thp %zu, fast->ddr %zu)\n",
         checked - failures, checked, arena_blocks, mem_stat("cache_hits"), mem_stat("fallback.hugetlb_to_thp"),
         mem_stat("fallback.fast_to_ddr"));
  return failures ? 1 : 0;
}
