/* The allocation ABI as libhcops_mem interposes it: every entry point keeps
 * glibc's contract (alignment, NULL and zero sizes, errno, usable size) on
 * both sides of the threshold, and a pointer may cross the threshold through
 * realloc in either direction with its contents. Linked against
 * libhcops_mem, so its malloc serves the whole program as under LD_PRELOAD;
 * the library's counters (hcops_mem_stat) tell which side served a call.
 * Run with the default environment (reuse cache on: calloc must clear a
 * reused block). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hcops.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define SLOT (2 * MiB)

/* Sizes no one can serve, volatile so the compiler neither warns nor folds. */
static volatile size_t size_max = SIZE_MAX, half_max = SIZE_MAX / 2;

static size_t st(const char *name) { return hcops_mem_stat(name); }
static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* A byte pattern that differs per position and per `seed`. */
static unsigned char pat(size_t i, unsigned seed) { return (unsigned char)(i * 131 + (i >> 12) + seed); }
static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; ++i) c[i] = pat(i, seed);
}
/* Index of the first byte off the pattern, or n when all match. */
static size_t check(const void *p, size_t n, unsigned seed) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; ++i)
    if (c[i] != pat(i, seed)) return i;
  return n;
}

/* Exactly the threshold goes to the arena, one byte less to glibc. */
static void threshold_boundary(void **state) {
  (void)state;
  const size_t thr = st("threshold");
  assert_int_equal(thr, MiB); /* the default: this test runs without HCOPS_MEM_* */
  size_t a0 = st("allocations");
  void *small = malloc(thr - 1);
  assert_non_null(small);
  assert_int_equal(st("allocations"), a0);
  void *big = malloc(thr);
  assert_non_null(big);
  assert_int_equal(st("allocations"), a0 + 1);
  assert_true(aligned(big, SLOT));
  assert_true(malloc_usable_size(big) >= thr);
  const size_t f0 = st("frees");
  free(small);
  assert_int_equal(st("frees"), f0);
  free(big);
  assert_int_equal(st("frees"), f0 + 1);
}

static void null_and_zero_sizes(void **state) {
  (void)state;
  void *p = malloc(0); /* glibc: a unique pointer */
  assert_non_null(p);
  free(p);
  free(NULL);

  size_t a0 = st("allocations");
  p = realloc(NULL, 100); /* realloc(NULL, n) is malloc(n), on either side */
  assert_non_null(p);
  free(p);
  p = realloc(NULL, 3 * MiB);
  assert_non_null(p);
  assert_int_equal(st("allocations"), a0 + 1);
  assert_true(aligned(p, SLOT));

  /* realloc(p, 0) frees p and returns NULL (glibc 2.36), for our block... */
  const size_t f0 = st("frees");
  errno = 0;
  assert_null(realloc(p, 0));
  assert_int_equal(st("frees"), f0 + 1);
  /* ... and for glibc's. */
  p = malloc(100);
  assert_null(realloc(p, 0));

  p = calloc(0, 4 * MiB);
  assert_non_null(p);
  free(p);
  p = calloc(4 * MiB, 0);
  assert_non_null(p);
  free(p);
}

static void overflow_and_errno(void **state) {
  (void)state;
  errno = 0;
  assert_null(calloc(half_max, 4));
  assert_int_equal(errno, ENOMEM);
  errno = 0;
  assert_null(calloc(4, half_max + 1));
  assert_int_equal(errno, ENOMEM);

  /* reallocarray overflow: NULL, ENOMEM, the block untouched. */
  void *p = malloc(3 * MiB);
  fill(p, 3 * MiB, 1);
  errno = 0;
  assert_null(reallocarray(p, half_max / 4, 16));
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(check(p, 3 * MiB, 1), 3 * MiB);

  /* Too big for anyone: NULL and ENOMEM from every entry point, and a
   * failed realloc leaves the block as it was. (Rounding such sizes up to
   * slots once overflowed to 0 and returned a cached block.) */
  const size_t huge[] = {size_max, size_max - 3 * MiB, half_max + 1};
  for (size_t i = 0; i < 3; ++i) {
    errno = 0;
    assert_null(malloc(huge[i]));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(calloc(1, huge[i]));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(memalign(4 * MiB, huge[i]));
    assert_int_equal(errno, ENOMEM);
    errno = 0;
    assert_null(realloc(p, huge[i]));
    assert_int_equal(errno, ENOMEM);
    assert_true(malloc_usable_size(p) >= 3 * MiB);
    assert_int_equal(check(p, 3 * MiB, 1), 3 * MiB);
  }
  void *q = reallocarray(p, 3, 2 * MiB); /* no overflow: an ordinary realloc */
  assert_non_null(q);
  assert_int_equal(check(q, 3 * MiB, 1), 3 * MiB);
  free(q);

  /* posix_memalign reports through its return value and leaves errno alone. */
  void *out = (void *)&out;
  const size_t bad[] = {0, 3, 4, 24, 3 * MiB};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
    for (size_t n = 100; n <= 4 * MiB; n *= 200) {
      errno = 1234;
      assert_int_equal(posix_memalign(&out, bad[i], n), EINVAL);
      assert_int_equal(errno, 1234);
      assert_ptr_equal(out, (void *)&out);
    }
  errno = 1234;
  assert_int_equal(posix_memalign(&out, 64, size_max - 8 * MiB), ENOMEM);
  assert_ptr_equal(out, (void *)&out);
  assert_int_equal(errno, 1234);

  /* aligned_alloc: a non-power-of-two alignment is EINVAL (glibc 2.36, C11 DR 460). */
  for (size_t n = 100; n <= 4 * MiB; n *= 200) {
    errno = 0;
    assert_null(aligned_alloc(3, n));
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_null(aligned_alloc(3 * MiB, n));
    assert_int_equal(errno, EINVAL);
  }
}

/* One aligned allocation of each kind: aligned, writable to the end, and
 * large ones on a huge-page boundary. */
static void check_aligned(void *p, size_t align, size_t n) {
  assert_non_null(p);
  if (!aligned(p, align)) fail_msg("%p not aligned to %zu (size %zu)", p, align, n);
  if (n >= MiB && !aligned(p, SLOT)) fail_msg("large block %p not 2 MiB aligned", p);
  assert_true(malloc_usable_size(p) >= n);
  fill(p, n, 7);
  assert_int_equal(check(p, n, 7), n);
  free(p);
}

static void alignment(void **state) {
  (void)state;
  const size_t aligns[] = {64, 4096, 4 * MiB};
  const size_t sizes[] = {100, 5000, MiB, 3 * MiB + 1};
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      const size_t a = aligns[i], n = sizes[j];
      void *p = NULL;
      assert_int_equal(posix_memalign(&p, a, n), 0);
      check_aligned(p, a, n);
      check_aligned(aligned_alloc(a, n), a, n);
      check_aligned(memalign(a, n), a, n);
    }
  /* Alignments past the 2 MiB slot for large blocks: the arena's base is
   * only slot-aligned, so these fail (at least 511 times in 512) if slot
   * indexes rather than addresses get aligned. */
  const size_t wide[] = {8 * MiB, 64 * MiB, (size_t)1 << 30};
  for (size_t i = 0; i < 3; ++i) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, wide[i], 3 * MiB), 0);
    check_aligned(p, wide[i], 3 * MiB);
    check_aligned(aligned_alloc(wide[i], MiB), wide[i], MiB);
  }
  /* malloc, calloc and realloc of large sizes are 2 MiB aligned too. */
  check_aligned(malloc(5 * MiB + 3), SLOT, 5 * MiB + 3);
  check_aligned(calloc(3, MiB + 1), SLOT, 3 * MiB + 3);
  /* memalign rounds a non-power-of-two alignment up, as glibc does. */
  check_aligned(memalign(3000, 200), 4096, 200);
  check_aligned(memalign(3000, 3 * MiB), 4096, 3 * MiB);

  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  check_aligned(valloc(100), page, 100);
  check_aligned(valloc(3 * MiB), page, 3 * MiB);
  void *p = pvalloc(0); /* one whole page */
  assert_true(malloc_usable_size(p) >= page);
  check_aligned(p, page, page);
  p = pvalloc(page + 1); /* rounded up to whole pages */
  assert_true(malloc_usable_size(p) >= 2 * page);
  check_aligned(p, page, 2 * page);
  p = pvalloc(3 * MiB + 1);
  assert_true(malloc_usable_size(p) >= 3 * MiB + page);
  check_aligned(p, page, 3 * MiB + page);
}

static void usable_size(void **state) {
  (void)state;
  assert_int_equal(malloc_usable_size(NULL), 0);
  const size_t sizes[] = {1, 1000, MiB - 1, MiB, 3 * MiB + 5, 9 * MiB};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    void *p = malloc(sizes[i]);
    const size_t u = malloc_usable_size(p);
    assert_true(u >= sizes[i]);
    fill(p, u, 3); /* all of it is the caller's */
    free(p);
  }
}

/* A glibc block grown past the threshold moves into the arena with its
 * contents; shrunk below it, it moves back. */
static void realloc_across_threshold(void **state) {
  (void)state;
  const size_t n0 = 200 * KiB, n1 = 3 * MiB, n2 = 1000;
  unsigned char *p = malloc(n0);
  fill(p, n0, 11);
  const size_t a0 = st("allocations"), live0 = st("live"), f0 = st("frees");
  unsigned char *q = realloc(p, n1);
  assert_non_null(q);
  assert_int_equal(st("allocations"), a0 + 1);
  assert_true(st("live") >= live0 + n1);
  assert_true(aligned(q, SLOT));
  assert_int_equal(check(q, n0, 11), n0);
  memset(q + n0, 0x5a, n1 - n0); /* the new part is writable */

  unsigned char *r = realloc(q, n2);
  assert_non_null(r);
  assert_int_equal(st("frees"), f0 + 1);
  assert_int_equal(st("allocations"), a0 + 1);
  assert_int_equal(st("live"), live0);
  assert_int_equal(check(r, n2, 11), n2);
  free(r);
}

/* Large to larger, in place when the slots behind the block are free, moved
 * when they are not; contents survive both. Under "local,base", a kind no
 * other test frees, so no block comes from the reuse cache and the arena's
 * first fit decides where blocks go. */
static void realloc_large_in_place_and_moved(void **state) {
  (void)state;
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "local,base"), 0);
  /* Within the slots it already holds (3, with the readable slack past the
   * end): in place. */
  const size_t big = 6 * MiB - 512 * 1024;
  unsigned char *p = malloc(5 * MiB);
  fill(p, 5 * MiB, 21);
  unsigned char *q = realloc(p, big);
  assert_ptr_equal(q, p);
  assert_int_equal(check(q, 5 * MiB, 21), 5 * MiB);
  fill(q, big, 22);

  /* Shrinking returns its last slot; growing back takes it again. */
  const size_t live = st("live");
  q = realloc(p, SLOT);
  assert_ptr_equal(q, p);
  assert_int_equal(st("live"), live - (big - SLOT));
  assert_int_equal(check(q, SLOT, 22), SLOT);
  const size_t a0 = st("allocations");
  q = realloc(p, big);
  assert_ptr_equal(q, p);
  assert_int_equal(st("allocations"), a0);
  assert_int_equal(st("live"), live);
  assert_int_equal(check(q, SLOT, 22), SLOT);
  fill(q, big, 23);
  free(q);

  /* First fit put x at the start of the lowest free range, so y (one slot)
   * takes the slot right behind x unless something else already holds it:
   * either way x cannot grow in place. */
  unsigned char *x = malloc(SLOT), *y = malloc(SLOT);
  fill(x, SLOT, 24);
  fill(y, SLOT, 25);
  const size_t f0 = st("frees");
  unsigned char *z = realloc(x, 5 * MiB);
  assert_non_null(z);
  assert_ptr_not_equal(z, x);
  assert_int_equal(st("frees"), f0 + 1); /* x went back */
  assert_int_equal(check(z, SLOT, 24), SLOT);
  assert_int_equal(check(y, SLOT, 25), SLOT);
  fill(z, 5 * MiB, 26);
  free(y);
  free(z);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
}

/* calloc must clear a block the cache hands back dirty. */
/* Pages of [p, p + n) present in memory. */
static size_t resident_pages(void *p, size_t n) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t pages = (n + page - 1) / page;
  unsigned char *vec = malloc(pages);
  assert_int_equal(mincore(p, n, vec), 0);
  size_t in = 0;
  for (size_t i = 0; i < pages; ++i) in += vec[i] & 1;
  free(vec);
  return in;
}

static void calloc_large_is_zero(void **state) {
  (void)state;
  const size_t n = 6 * MiB + 12345; /* a size no other test uses */
  unsigned char *p = calloc(1, n);
  assert_non_null(p);
  /* A fresh mapping is zero already: clearing it would fault in every page. */
  assert_int_equal(resident_pages(p, n), 0);
  for (size_t i = 0; i < n; ++i)
    if (p[i]) fail_msg("first calloc: byte %zu is %d", i, p[i]);
  memset(p, 0xff, n);
  free(p);

  const size_t hits = st("cache_hits");
  unsigned char *q = calloc(n, 1);
  assert_ptr_equal(q, p); /* the same block, from the cache */
  assert_int_equal(st("cache_hits"), hits + 1);
  for (size_t i = 0; i < n; ++i)
    if (q[i]) fail_msg("reused calloc: byte %zu is %#x", i, q[i]);
  free(q);
}

/* glibc 2.33 keeps errno across free; a successful large allocation leaves
 * it as it was, whatever system calls placing the block made. */
static void errno_kept(void **state) {
  (void)state;
  const size_t sizes[] = {100, 3 * MiB, 9 * MiB + 1};
  for (size_t i = 0; i < 3; ++i) {
    errno = 4321;
    void *p = malloc(sizes[i]);
    assert_non_null(p);
    assert_int_equal(errno, 4321);
    p = realloc(p, sizes[i] * 2);
    assert_non_null(p);
    assert_int_equal(errno, 4321);
    p = realloc(p, sizes[i] / 2 + 1);
    assert_int_equal(errno, 4321);
    free(p);
    assert_int_equal(errno, 4321);
    void *q = NULL;
    assert_int_equal(posix_memalign(&q, 4 * MiB, sizes[i]), 0);
    assert_int_equal(errno, 4321);
    free(q);
    assert_int_equal(errno, 4321);
  }
  /* hugetlb from an empty pool: the failed MAP_HUGETLB leaves ENOMEM inside
   * the library, yet the THP block it falls back to is a success. */
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "hugetlb"), 0);
  const size_t fallbacks = st("fallback.hugetlb_to_thp");
  errno = 4321;
  void *h = malloc(4 * MiB + 3);
  assert_non_null(h);
  const int pool_was_empty = st("fallback.hugetlb_to_thp") == fallbacks + 1;
  assert_int_equal(errno, 4321);
  free(h);
  assert_int_equal(errno, 4321);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  if (!pool_was_empty) printf("note: the hugetlb pool was not empty; the failed-map case was not exercised\n");
}

/* A freed block is reused only for the policy its pages have: after a move
 * of part of it, it has none, and it goes back to the system instead. */
static void cache_files_blocks_by_policy(void **state) {
  (void)state;
  /* hcops_mem_move needs mbind (QEMU's user-mode emulation has none). */
  if (syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0) != 0 && errno == ENOSYS) skip();
  const size_t n = 10 * MiB + 777; /* a size no other test uses */
  size_t hits = st("cache_hits");
  char *p = malloc(n);
  free(p);
  char *q = malloc(n);
  assert_ptr_equal(q, p);
  assert_int_equal(st("cache_hits"), hits + 1);
  /* Moved whole to where it already is: still reusable. */
  assert_int_equal(hcops_mem_move(q, malloc_usable_size(q), "ddr"), 0);
  free(q);
  q = malloc(n);
  assert_ptr_equal(q, p);
  assert_int_equal(st("cache_hits"), hits + 2);
  /* Half of it moved: not reused. */
  assert_int_equal(hcops_mem_move(q, n / 2, "local"), 0);
  const size_t cached = st("cached");
  free(q);
  assert_int_equal(st("cached"), cached);
  q = malloc(n);
  assert_int_equal(st("cache_hits"), hits + 2);
  free(q);
}

/* A block that fell back (hugetlb from an empty pool: THP) is reused by the
 * next request of the same rule, which would fall back the same way: the
 * cache matches the kind asked for, not the kind obtained. */
static void fallen_back_block_is_reused(void **state) {
  (void)state;
  const size_t n = 12 * MiB + 999; /* a size no other test uses */
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "hugetlb"), 0);
  const size_t fallbacks = st("fallback.hugetlb_to_thp"), hits = st("cache_hits");
  char *p = malloc(n);
  assert_non_null(p);
  const int fell_back = st("fallback.hugetlb_to_thp") == fallbacks + 1;
  fill(p, n, 7);
  free(p);
  char *q = malloc(n);
  assert_ptr_equal(q, p);
  assert_int_equal(st("cache_hits"), hits + 1);
  assert_int_equal(st("fallback.hugetlb_to_thp"), fallbacks + (size_t)fell_back); /* no second fallback */
  free(q);
  /* The same block does not serve another kind. */
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "base"), 0);
  q = malloc(n);
  assert_ptr_not_equal(q, p);
  assert_int_equal(st("cache_hits"), hits + 1);
  free(q);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  if (!fell_back) printf("note: the hugetlb pool was not empty; reuse of a fallen-back block was not exercised\n");
}

/* Where mbind is always refused (EPERM: a container's seccomp profile without
 * CAP_SYS_NICE), blocks still go back to the cache and are reused: the next
 * request gets first-touch pages either way. In a child, which installs the
 * filter (irreversible) and exits 0 when every check passed. */
static int refused_policy_child(void) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mbind, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof *filter, filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return 77;
  const size_t n = 14 * MiB + 555; /* a size no other test uses */
  const size_t refused = st("policy_refused"), hits = st("cache_hits");
  char *p = malloc(n);
  if (!p || st("policy_refused") != refused + 1) return 2; /* the filter works */
  free(p);
  char *q = malloc(n);
  if (q != p) return 3;
  if (st("cache_hits") != hits + 1) return 4;
  free(q);
  return 0;
}

static void refused_policy_block_is_reused(void **state) {
  (void)state;
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(refused_policy_child());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    printf("SKIP: cannot install a seccomp filter here\n");
    skip();
  }
  /* 2: mbind not refused; 3: not the same block; 4: no cache hit counted. */
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* After a test that pushes policies: none left, even when it failed midway. */
static int pop_all(void **state) {
  (void)state;
  while (hcops_mem_pop(HCOPS_MEM_THREAD) == 0) {
  }
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(errno_kept),
      cmocka_unit_test(cache_files_blocks_by_policy),
      cmocka_unit_test_teardown(fallen_back_block_is_reused, pop_all),
      cmocka_unit_test(refused_policy_block_is_reused),
      cmocka_unit_test(threshold_boundary),
      cmocka_unit_test(null_and_zero_sizes),
      cmocka_unit_test(overflow_and_errno),
      cmocka_unit_test(alignment),
      cmocka_unit_test(usable_size),
      cmocka_unit_test(realloc_across_threshold),
      cmocka_unit_test(realloc_large_in_place_and_moved),
      cmocka_unit_test(calloc_large_is_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
