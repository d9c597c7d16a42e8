/* libhcops_mem under load, as an unmodified program gets it with LD_PRELOAD
 * (this program is not linked against it): four threads allocate, grow,
 * shrink and free blocks of random sizes around the threshold through every
 * entry point, each under its own policy and page kind, checking every
 * block's pattern before it is freed or moved; halfway, one thread forks
 * while the others keep going, and the child must allocate, free and move
 * pages on its own (no lock left held, the helper thread re-created). At the
 * end the library's counters must be back where they started.
 * test_mem_torture.sh runs it with a small reuse cache, so evictions happen,
 * and under a timeout, so a deadlock fails. Each thread's sequence is
 * seeded: a failure replays. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/time_limit.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define THREADS 4
#define SLOTS 24
#define OPS 1200
#define STRIDE 8 /* every word is checked, and every byte of the last 8 */
#define CHILD_TIMEOUT_S 20

typedef size_t (*stat_fn)(const char *);
typedef int (*push_fn)(int, const char *);
typedef int (*pop_fn)(int);
typedef long (*move_async_fn)(void *, size_t, const char *);
typedef int (*wait_fn)(long);
static stat_fn mem_stat;
static push_fn mem_push;
static pop_fn mem_pop;
static move_async_fn mem_move_async;
static wait_fn mem_wait;

/* Each thread's own placement, so blocks of every kind meet in the cache.
 * Two ask for hugetlb: with the pool empty (make check does not fill it)
 * every such block takes the fallback to THP, the path that once left a
 * hole in the arena for glibc's mmap to fall into. */
static const char *const thread_policy[THREADS] = {NULL, "local,base", "interleave,hugetlb", "hugetlb"};

struct block {
  unsigned char *p;
  size_t n;
  uint64_t tag;
};

struct worker {
  int id;
  uint64_t rng;
  struct block b[SLOTS];
  unsigned long ops;
  char error[256];
};

static struct worker workers[THREADS];
static atomic_int progress[THREADS]; /* ops done, for the fork's timing */
static atomic_int forked;            /* set once the fork is over */
static int child_status = -1;

static uint64_t next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* 30% small (glibc), 40% within 1/8 of the 1 MiB threshold, 30% up to 4 MiB. */
static size_t random_size(uint64_t *s) {
  const unsigned r = (unsigned)(next(s) % 10);
  if (r < 3) return KiB + next(s) % (255 * KiB);
  if (r < 7) return MiB - MiB / 8 + next(s) % (MiB / 4);
  return MiB + next(s) % (3 * MiB);
}

static uint64_t word(uint64_t tag, size_t i) { return (tag << 32) ^ (i * 0x9E3779B97F4A7C15ULL); }

/* The positions checked: a word every STRIDE bytes, then every byte of the
 * last STRIDE. */
static size_t tail_of(size_t n) { return n > STRIDE ? n - STRIDE : 0; }
static void fill(unsigned char *p, size_t n, uint64_t tag) {
  for (size_t i = 0; i + 8 <= tail_of(n); i += STRIDE) memcpy(p + i, &(uint64_t){word(tag, i)}, 8);
  for (size_t i = tail_of(n); i < n; ++i) p[i] = (unsigned char)word(tag, i);
}
/* 0 when the first `n` bytes hold the pattern of `tag` (or zeroes). */
static int verify(const unsigned char *p, size_t n, uint64_t tag, int zero, size_t *bad) {
  for (size_t i = 0; i + 8 <= tail_of(n); i += STRIDE) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    if (v != (zero ? 0 : word(tag, i))) return *bad = i, -1;
  }
  for (size_t i = tail_of(n); i < n; ++i)
    if (p[i] != (zero ? 0 : (unsigned char)word(tag, i))) return *bad = i, -1;
  return 0;
}
/* A block grown by realloc holds the old pattern only up to the old size,
 * and the fill's tail region moved: check the stride words below the tail. */
static int verify_prefix(const unsigned char *p, size_t old_n, size_t n, uint64_t tag, size_t *bad) {
  const size_t keep = old_n < n ? old_n : n;
  const size_t tail = tail_of(old_n);
  for (size_t i = 0; i + 8 <= keep && i + 8 <= tail; i += STRIDE) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    if (v != word(tag, i)) return *bad = i, -1;
  }
  for (size_t i = tail; i < keep; ++i)
    if (p[i] != (unsigned char)word(tag, i)) return *bad = i, -1;
  return 0;
}

#define FAIL(w, ...) (snprintf((w)->error, sizeof(w)->error, __VA_ARGS__), -1)

/* A new block by one of the entry points, checked for alignment and size. */
static int allocate(struct worker *w, struct block *b) {
  const size_t n = random_size(&w->rng);
  static const size_t aligns[] = {16, 64, 4096, 2 * MiB};
  const size_t a = aligns[next(&w->rng) % 4];
  void *p = NULL;
  int zero = 0;
  const int how = (int)(next(&w->rng) % 9);
  switch (how) {
    case 0: p = malloc(n); break;
    case 1: p = calloc(1, n), zero = 1; break;
    case 2: p = realloc(NULL, n); break;
    case 3:
      if (posix_memalign(&p, a, n)) p = NULL;
      break;
    case 4: p = aligned_alloc(a, n); break;
    case 5: p = memalign(a, n); break;
    case 6: p = valloc(n); break;
    case 7: p = pvalloc(n); break;
    default: p = reallocarray(NULL, n, 1); break;
  }
  if (!p) return FAIL(w, "allocation of %zu failed", n);
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t want = how >= 3 && how <= 5   ? a
                      : how == 6 || how == 7 ? page
                                             : 16; /* glibc's malloc alignment otherwise */
  if (how == 7 && malloc_usable_size(p) < (n + page - 1) / page * page)
    return FAIL(w, "pvalloc(%zu): usable size %zu not rounded to pages", n, malloc_usable_size(p));
  if ((uintptr_t)p % want) return FAIL(w, "%p not aligned to %zu", p, want);
  if (n >= MiB && (uintptr_t)p % (2 * MiB)) return FAIL(w, "large block %p not 2 MiB aligned", p);
  if (malloc_usable_size(p) < n) return FAIL(w, "usable size %zu < %zu", malloc_usable_size(p), n);
  size_t bad;
  if (zero && verify(p, n, 0, 1, &bad)) return FAIL(w, "calloc(%zu): byte %zu not zero", n, bad);
  b->p = p;
  b->n = n;
  b->tag = (uint64_t)w->id << 24 | w->ops;
  fill(b->p, n, b->tag);
  return 0;
}

static int check_block(struct worker *w, const struct block *b, const char *when) {
  size_t bad;
  if (verify(b->p, b->n, b->tag, 0, &bad))
    return FAIL(w, "%s: block %p (%zu bytes, tag %#llx) wrong at %zu", when, (void *)b->p, b->n,
                (unsigned long long)b->tag, bad);
  return 0;
}

static int one_op(struct worker *w) {
  struct block *b = &w->b[next(&w->rng) % SLOTS];
  ++w->ops;
  if (!b->p) return allocate(w, b);
  if (check_block(w, b, "before free/realloc")) return -1;
  if (next(&w->rng) % 2) {
    free(b->p);
    b->p = NULL;
    return 0;
  }
  const size_t n = random_size(&w->rng);
  unsigned char *q = next(&w->rng) % 2 ? realloc(b->p, n) : reallocarray(b->p, 1, n);
  if (!q) return FAIL(w, "realloc to %zu failed", n);
  size_t bad;
  if (verify_prefix(q, b->n, n, b->tag, &bad)) return FAIL(w, "realloc %zu -> %zu lost byte %zu", b->n, n, bad);
  if (n >= MiB && (uintptr_t)q % (2 * MiB)) return FAIL(w, "realloc: large block %p not 2 MiB aligned", (void *)q);
  b->p = q;
  b->n = n;
  b->tag = (uint64_t)w->id << 24 | w->ops;
  fill(q, n, b->tag);
  return 0;
}

static int free_all(struct worker *w) {
  for (int i = 0; i < SLOTS; ++i)
    if (w->b[i].p) {
      if (check_block(w, &w->b[i], "at the end")) return -1;
      free(w->b[i].p);
      w->b[i].p = NULL;
    }
  return 0;
}

/* The child of a fork taken while three other threads allocate: only this
 * thread's blocks are known consistent. It checks them, frees some, runs
 * its own allocations and a move on the helper thread, and reports by exit
 * status; an alarm ends it if anything left locked hangs it. */
static void child(struct worker *w) {
  alarm(test_time_limit(CHILD_TIMEOUT_S));
  int rc = free_all(w);
  w->rng ^= 0xC0FFEE;
  for (int i = 0; rc == 0 && i < 300; ++i) rc = one_op(w);
  if (rc == 0) {
    unsigned char *p = malloc(4 * MiB);
    memset(p, 7, 4 * MiB);
    const long t = mem_move_async(p, 4 * MiB, "local");
    /* ENOSYS: no memory-policy system calls (QEMU's user-mode emulation):
     * the block stays where it is, which the checks below still see. */
    if ((t <= 0 || mem_wait(t) != 0) && errno != ENOSYS) rc = FAIL(w, "move in the child: %s", strerror(errno));
    for (size_t i = 0; rc == 0 && i < 4 * MiB; i += 4096)
      if (p[i] != 7) rc = FAIL(w, "child's moved block lost byte %zu", i);
    free(p);
  }
  if (rc == 0) rc = free_all(w);
  if (rc) fprintf(stderr, "child of thread %d: %s\n", w->id, w->error);
  _exit(rc ? 1 : 0);
}

static void *run(void *arg) {
  struct worker *w = arg;
  if (thread_policy[w->id] && mem_push(0 /* thread */, thread_policy[w->id]) != 0) {
    FAIL(w, "push %s", thread_policy[w->id]);
    return (void *)1;
  }
  for (int op = 0; op < OPS; ++op) {
    if (w->id == 0 && op == OPS / 2) {
      /* Fork once every other thread is well into its run. */
      for (int t = 1; t < THREADS; ++t)
        while (atomic_load(&progress[t]) < OPS / 4) sched_yield();
      const pid_t pid = fork();
      if (pid == 0) child(w);
      if (pid < 0 || waitpid(pid, &child_status, 0) != pid) child_status = -1;
      atomic_store(&forked, 1);
    }
    /* The others keep allocating while the fork happens, and wait for it
     * before their last quarter so it cannot come after they are done. */
    if (w->id != 0 && op == 3 * OPS / 4)
      while (!atomic_load(&forked)) sched_yield();
    if (one_op(w)) {
      atomic_store(&forked, 1); /* never leave the others waiting */
      return (void *)1;
    }
    atomic_store(&progress[w->id], op + 1);
  }
  if (free_all(w)) return (void *)1;
  if (thread_policy[w->id]) mem_pop(0);
  return NULL;
}

static void torture(void **state) {
  (void)state;
  const size_t live0 = mem_stat("live"), alloc0 = mem_stat("allocations"), free0 = mem_stat("frees");
  const size_t fast0 = mem_stat("fast_in_use");
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    workers[i].id = i;
    workers[i].rng = 0x5EED0000ULL + 7919 * (uint64_t)(i + 1);
    assert_int_equal(pthread_create(&t[i], NULL, run, &workers[i]), 0);
  }
  int failed = 0;
  for (int i = 0; i < THREADS; ++i) {
    void *rc;
    assert_int_equal(pthread_join(t[i], &rc), 0);
    if (rc) {
      fprintf(stderr, "thread %d, op %lu: %s\n", i, workers[i].ops, workers[i].error);
      failed = 1;
    }
  }
  assert_false(failed);
  if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) {
    if (WIFSIGNALED(child_status))
      fail_msg("forked child killed by signal %d%s", WTERMSIG(child_status),
               WTERMSIG(child_status) == SIGALRM ? " (hung)" : "");
    fail_msg("forked child failed (status %#x)", child_status);
  }
  /* Every block went back, each counted once. */
  const size_t made = mem_stat("allocations") - alloc0;
  assert_true(made > 1000);
  assert_int_equal(mem_stat("frees") - free0, made);
  assert_int_equal(mem_stat("live"), live0);
  assert_int_equal(mem_stat("fast_in_use"), fast0);
}

int main(void) {
  mem_stat = (stat_fn)dlsym(RTLD_DEFAULT, "hcops_mem_stat");
  mem_push = (push_fn)dlsym(RTLD_DEFAULT, "hcops_mem_push");
  mem_pop = (pop_fn)dlsym(RTLD_DEFAULT, "hcops_mem_pop");
  mem_move_async = (move_async_fn)dlsym(RTLD_DEFAULT, "hcops_mem_move_async");
  mem_wait = (wait_fn)dlsym(RTLD_DEFAULT, "hcops_mem_wait");
  if (!mem_stat || !mem_push || !mem_pop || !mem_move_async || !mem_wait) {
    fprintf(stderr, "test_mem_torture: libhcops_mem.so is not preloaded (run test_mem_torture.sh)\n");
    return 99;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(torture)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
