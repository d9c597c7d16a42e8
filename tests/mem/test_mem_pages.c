/* Page kinds as /proc/self/smaps reports them: a touched "thp" block is
 * backed by transparent huge pages, a "base" one by none, and a "hugetlb"
 * one by the hugetlb pool while the pool lasts, then by THP (counted in
 * fallback.hugetlb_to_thp) rather than failing. The hugetlb part resizes the
 * pool, so it needs root; it restores the pool's size afterwards, pass or
 * fail (test_mem_pages.sh restores it too should this program crash).
 * Run with HCOPS_MEM_CACHE=0: freed blocks must go back to the system, or
 * the pool would not be whole again. Linked against libhcops_mem. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hcops.h"

#define MiB ((size_t)1 << 20)
#define HUGE_PAGE (2 * MiB)
#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

/* The smaps fields of the mapping holding `p`, in kB; -1 when absent. */
struct vma {
  long size, rss, anon_huge, private_hugetlb, shared_hugetlb;
};

static struct vma vma_of(const void *p) {
  struct vma v = {-1, -1, -1, -1, -1};
  FILE *f = fopen("/proc/self/smaps", "r");
  assert_non_null(f);
  char line[512];
  int inside = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char c;
    if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3 && strchr(line, '-') < strchr(line, ' ')) {
      if (inside) break; /* the next mapping */
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
      continue;
    }
    if (!inside) continue;
    sscanf(line, "Size: %ld kB", &v.size);
    sscanf(line, "Rss: %ld kB", &v.rss);
    sscanf(line, "AnonHugePages: %ld kB", &v.anon_huge);
    sscanf(line, "Private_Hugetlb: %ld kB", &v.private_hugetlb);
    sscanf(line, "Shared_Hugetlb: %ld kB", &v.shared_hugetlb);
  }
  fclose(f);
  if (v.size < 0) fail_msg("no mapping holds %p in /proc/self/smaps", p);
  return v;
}

static long meminfo(const char *field) {
  FILE *f = fopen("/proc/meminfo", "r");
  assert_non_null(f);
  char line[256];
  long v = -1;
  const size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
  fclose(f);
  return v;
}

static int thp_available(void) {
  char mode[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return 0;
  if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
  fclose(f);
  return strstr(mode, "[never]") == NULL && mode[0];
}

/* The 4 KiB past the end of a block read (libhcops_mem's readable slack,
 * here behind real hugetlb pages too); a fault fails the test. */
static void slack_reads(const char *p, size_t n) {
  unsigned sum = 0;
  for (size_t i = 0; i < 4096; ++i) sum += ((volatile const unsigned char *)p)[n + i];
  assert_int_equal(sum, 0); /* never written: zeroes */
}

static char *block_under(const char *policy, size_t n) {
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, policy), 0);
  char *p = malloc(n);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  assert_non_null(p);
  memset(p, 0x3c, n); /* fault every page in */
  return p;
}

static void thp_block_is_huge(void **state) {
  (void)state;
  if (!thp_available()) {
    printf("SKIP: transparent huge pages are disabled on this kernel\n");
    skip();
  }
  const size_t n = 64 * MiB;
  const size_t before = hcops_mem_stat("bytes.thp");
  char *p = block_under("thp", n);
  assert_int_equal(hcops_mem_stat("bytes.thp"), before + n);
  const struct vma v = vma_of(p);
  if (v.anon_huge < 60 * 1024) fail_msg("64 MiB thp block: AnonHugePages %ld kB (Rss %ld kB)", v.anon_huge, v.rss);
  free(p);
}

static void base_block_is_not(void **state) {
  (void)state;
  const size_t n = 64 * MiB;
  const size_t before = hcops_mem_stat("bytes.base");
  char *p = block_under("base", n);
  assert_int_equal(hcops_mem_stat("bytes.base"), before + n);
  const struct vma v = vma_of(p);
  assert_true(v.rss >= 64 * 1024);  /* touched... */
  assert_int_equal(v.anon_huge, 0); /* ... with small pages only */
  free(p);
}

/* ---- hugetlb: resizes the pool, restored by the teardown ---- */
static long saved_pool = -1;
static char *in_pool, *beyond_pool;

static long read_pool(void) {
  FILE *f = fopen(NR_HUGEPAGES, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

static int write_pool(long pages) {
  FILE *f = fopen(NR_HUGEPAGES, "w");
  if (!f) return -1;
  const int ok = fprintf(f, "%ld\n", pages) > 0;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

#define TEST_POOL 4
static int pool_busy; /* someone else's huge pages are in use: leave the pool alone */

/* A small pool of our own, sized exactly, so exhaustion happens at a known
 * point; only when nobody else uses the pool, whose size we change. */
static int pool_setup(void **state) {
  (void)state;
  if (geteuid() != 0) return 0; /* the test skips */
  saved_pool = read_pool();
  pool_busy = meminfo("HugePages_Total") != meminfo("HugePages_Free") || meminfo("HugePages_Rsvd") != 0;
  if (pool_busy) saved_pool = -1;
  else if (saved_pool < 0 || write_pool(TEST_POOL) != 0) saved_pool = -1;
  return 0;
}

static int pool_teardown(void **state) {
  (void)state;
  free(in_pool); /* HCOPS_MEM_CACHE=0: their pages go back now */
  free(beyond_pool);
  in_pool = beyond_pool = NULL;
  if (saved_pool >= 0 && write_pool(saved_pool) != 0) {
    fprintf(stderr, "cannot restore %s to %ld\n", NR_HUGEPAGES, saved_pool);
    return -1;
  }
  return 0;
}

static void hugetlb_pool_then_fallback(void **state) {
  (void)state;
  if (geteuid() != 0) {
    printf("SKIP: hugetlb needs root to size %s\n", NR_HUGEPAGES);
    skip();
  }
  if (pool_busy) {
    printf("SKIP: the hugetlb pool is in use by another process; not resizing it\n");
    skip();
  }
  if (saved_pool < 0) fail_msg("cannot resize the hugetlb pool through %s", NR_HUGEPAGES);
  const long free0 = meminfo("HugePages_Free");
  if (free0 < 2) {
    printf("SKIP: the kernel gave the pool only %ld free huge pages\n", free0);
    skip();
  }
  /* Two pages' worth: inside the pool. */
  size_t fallbacks = hcops_mem_stat("fallback.hugetlb_to_thp");
  const size_t bytes = hcops_mem_stat("bytes.hugetlb");
  in_pool = block_under("hugetlb", 2 * HUGE_PAGE);
  assert_int_equal(hcops_mem_stat("fallback.hugetlb_to_thp"), fallbacks);
  assert_int_equal(hcops_mem_stat("bytes.hugetlb"), bytes + 2 * HUGE_PAGE);
  struct vma v = vma_of(in_pool);
  if (v.private_hugetlb + v.shared_hugetlb < 4096)
    fail_msg("hugetlb block: Private_Hugetlb %ld kB, Shared_Hugetlb %ld kB", v.private_hugetlb, v.shared_hugetlb);
  assert_int_equal(meminfo("HugePages_Free"), free0 - 2);
  /* Its slack is a base page after the last huge page, not a third one. */
  slack_reads(in_pool, 2 * HUGE_PAGE);
  assert_int_equal(meminfo("HugePages_Free"), free0 - 2);

  /* One page more than is left: THP instead, still a working block. */
  const size_t n = (size_t)(free0 - 2 + 1) * HUGE_PAGE;
  beyond_pool = block_under("hugetlb", n);
  assert_int_equal(hcops_mem_stat("fallback.hugetlb_to_thp"), fallbacks + 1);
  v = vma_of(beyond_pool);
  assert_int_equal(v.private_hugetlb + v.shared_hugetlb, 0);
  for (size_t i = 0; i < n; i += 4096)
    if (beyond_pool[i] != 0x3c) fail_msg("fallback block: byte %zu lost", i);
  slack_reads(beyond_pool, n);
  assert_int_equal(meminfo("HugePages_Free"), free0 - 2);

  /* Freed, the pool is whole again. */
  free(in_pool);
  in_pool = NULL;
  assert_int_equal(meminfo("HugePages_Free"), free0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(thp_block_is_huge),
      cmocka_unit_test(base_block_is_not),
      cmocka_unit_test_setup_teardown(hugetlb_pool_then_fallback, pool_setup, pool_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
