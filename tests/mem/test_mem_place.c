/* Placement as the kernel sees it: the NUMA policy get_mempolicy() reports
 * for a large block is the one the pushed policy asked for, pages sit on the
 * nodes move_pages() reports, hcops_mem_move changes the policy, and a
 * thread's pushed policy stays with that thread. Every policy names node 0,
 * which every Linux machine has. Linked against libhcops_mem. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hcops.h"

#ifndef MPOL_LOCAL
#define MPOL_LOCAL 4
#endif

#define MiB ((size_t)1 << 20)
#define BLOCK (4 * MiB)
#define MAX_NODES 1024

struct mempolicy {
  int mode;
  int nodes; /* how many nodes the mask holds */
  int first; /* the lowest of them, -1 if none */
};

static struct mempolicy policy_at(void *p) {
  unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = {0};
  struct mempolicy m = {-1, 0, -1};
  if (get_mempolicy(&m.mode, mask, MAX_NODES, p, MPOL_F_ADDR) != 0) fail_msg("get_mempolicy: %s", strerror(errno));
  for (int i = MAX_NODES - 1; i >= 0; --i)
    if (mask[i / (8 * sizeof(unsigned long))] >> (i % (8 * sizeof(unsigned long))) & 1) {
      ++m.nodes;
      m.first = i;
    }
  return m;
}

#define ANY_NODE (-1) /* the mask is not checked (MPOL_LOCAL has none) */
#define ONE_NODE (-2) /* exactly one node, whichever is local */

static void expect_policy(void *p, int mode, int node) {
  const struct mempolicy m = policy_at(p);
  if (m.mode != mode) fail_msg("%p: mode %d, expected %d", p, m.mode, mode);
  if (node == ONE_NODE && m.nodes != 1) fail_msg("%p: %d nodes, expected one", p, m.nodes);
  if (node >= 0 && (m.nodes != 1 || m.first != node))
    fail_msg("%p: %d nodes (first %d), expected node %d alone", p, m.nodes, m.first, node);
}

/* 1 when node 0 is the only node online. */
static int one_node_machine(void) {
  char online[64] = "";
  FILE *f = fopen("/sys/devices/system/node/online", "r");
  if (f) {
    if (!fgets(online, sizeof online, f)) online[0] = 0;
    fclose(f);
  }
  return !strcmp(online, "0\n");
}

/* The default, "fast", on a machine without fast memory: the local DDR node
 * preferred, which on a one-node machine is node 0. */
static void expect_default(void *p) { expect_policy(p, MPOL_PREFERRED, one_node_machine() ? 0 : ONE_NODE); }

static void *block(void) {
  char *p = malloc(BLOCK);
  assert_non_null(p);
  memset(p, 1, BLOCK);
  return p;
}

/* Without this library nothing on this machine is fast; the tests below
 * would need other expectations if it were. */
static void default_is_preferred_ddr(void **state) {
  (void)state;
  void *p = block();
  expect_default(p);
  free(p);
}

static void pushed_policies(void **state) {
  (void)state;
  const struct {
    const char *policy;
    int mode, node;
  } cases[] = {{"bind:0", MPOL_BIND, 0},
               {"interleave:0", MPOL_INTERLEAVE, 0},
               {"local", MPOL_LOCAL, ANY_NODE},
               {"ddr", MPOL_PREFERRED, ONE_NODE},
               {"BIND:0,base", MPOL_BIND, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    const size_t before = hcops_mem_stat("allocations");
    assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, cases[i].policy), 0);
    void *p = block();
    assert_int_equal(hcops_mem_stat("allocations"), before + 1);
    expect_policy(p, cases[i].mode, cases[i].node);
    assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
    void *q = block(); /* popped: the default again */
    expect_default(q);
    free(p);
    free(q);
  }
  /* A size range limits the rule: a block below it takes the default. */
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "8M-:bind:0"), 0);
  void *p = block(), *q = malloc(8 * MiB);
  expect_default(p);
  expect_policy(q, MPOL_BIND, 0);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  free(p);
  free(q);
}

/* The kernel puts the touched pages of a bind:0 block on node 0, and the
 * per-node counter says so too. */
static void pages_on_node(void **state) {
  (void)state;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), npages = BLOCK / page;
  const size_t counted = hcops_mem_stat("bytes.thp.node0");
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "bind:0"), 0);
  char *p = block();
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  assert_true(hcops_mem_stat("bytes.thp.node0") >= counted + BLOCK);
  void **pages = malloc(npages * sizeof *pages);
  int *status = malloc(npages * sizeof *status);
  for (size_t i = 0; i < npages; ++i) {
    pages[i] = p + i * page;
    status[i] = -1;
  }
  assert_int_equal(move_pages(0, npages, pages, NULL, status, 0), 0);
  for (size_t i = 0; i < npages; ++i)
    if (status[i] != 0) fail_msg("page %zu of a bind:0 block: status %d", i, status[i]);
  free(pages);
  free(status);
  free(p);
}

static void moves(void **state) {
  (void)state;
  char *p = block();
  expect_default(p);
  assert_int_equal(hcops_mem_move(p, BLOCK, "interleave:0"), 0);
  expect_policy(p, MPOL_INTERLEAVE, 0);
  expect_policy(p + BLOCK - 1, MPOL_INTERLEAVE, 0);
  long t = hcops_mem_move_async(p, BLOCK, "bind:0");
  assert_true(t > 0);
  assert_int_equal(hcops_mem_wait(t), 0);
  expect_policy(p, MPOL_BIND, 0);
  t = hcops_mem_move_async(p, BLOCK, "local");
  assert_true(t > 0);
  assert_int_equal(hcops_mem_wait(t), 0);
  expect_policy(p + BLOCK / 2, MPOL_LOCAL, ANY_NODE);
  for (size_t i = 0; i < BLOCK; ++i)
    if (p[i] != 1) fail_msg("byte %zu changed by the moves", i);

  /* Not a placement, or more than one: EINVAL, the policy as it was. */
  const char *bad[] = {"thq", "2M-:bind:0", "system", "bind:0;ddr", "", NULL};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    errno = 0;
    assert_int_equal(hcops_mem_move(p, BLOCK, bad[i]), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(hcops_mem_move_async(p, BLOCK, bad[i]), -1);
    assert_int_equal(errno, EINVAL);
  }
  expect_policy(p, MPOL_LOCAL, ANY_NODE);
  /* A ticket never issued, or already collected. */
  for (long ticket = 0; ticket < 2; ++ticket) {
    errno = 0;
    assert_int_equal(hcops_mem_wait(ticket ? t : 999999), -1);
    assert_int_equal(errno, EINVAL);
  }
  free(p);
}

/* Another thread's view while main holds a thread-scope policy. */
static void *alloc_and_report(void *arg) {
  void *p = block();
  *(struct mempolicy *)arg = policy_at(p);
  free(p);
  return NULL;
}

static struct mempolicy in_other_thread(void) {
  struct mempolicy m;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, alloc_and_report, &m), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  return m;
}

static void thread_scope_stays_with_thread(void **state) {
  (void)state;
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "bind:0"), 0);
  const struct mempolicy other = in_other_thread();
  assert_int_equal(other.mode, MPOL_PREFERRED); /* the default, not main's bind */
  assert_int_equal(other.nodes, 1);
  void *p = block();
  expect_policy(p, MPOL_BIND, 0);

  /* A process-scope policy reaches other threads; a thread's own wins. */
  assert_int_equal(hcops_mem_push(HCOPS_MEM_PROCESS, "interleave:0"), 0);
  const struct mempolicy after = in_other_thread();
  assert_int_equal(after.mode, MPOL_INTERLEAVE);
  void *q = block();
  expect_policy(q, MPOL_BIND, 0);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  void *r = block();
  expect_policy(r, MPOL_INTERLEAVE, 0);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_PROCESS), 0);
  assert_int_equal(in_other_thread().mode, MPOL_PREFERRED);
  free(p);
  free(q);
  free(r);
}

static void stack_errors(void **state) {
  (void)state;
  for (int scope = HCOPS_MEM_THREAD; scope <= HCOPS_MEM_PROCESS; ++scope) {
    errno = 0;
    assert_int_equal(hcops_mem_pop(scope), -1);
    assert_int_equal(errno, EINVAL);
  }
  errno = 0;
  assert_int_equal(hcops_mem_push(7, "fast"), -1);
  assert_int_equal(errno, EINVAL);
  errno = 0;
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, NULL), -1);
  assert_int_equal(errno, EINVAL);
  /* Malformed policies (each printed once on stderr) push nothing. */
  const char *bad[] = {"fast,thq", "", "bind", "2M:fast"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    errno = 0;
    assert_int_equal(hcops_mem_push(HCOPS_MEM_PROCESS, bad[i]), -1);
    assert_int_equal(errno, EINVAL);
  }
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_PROCESS), -1);
  /* The thread stack holds 16; the 17th push is refused, the 16 pop. */
  for (int i = 0; i < 16; ++i) assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "local"), 0);
  errno = 0;
  assert_int_equal(hcops_mem_push(HCOPS_MEM_THREAD, "local"), -1);
  assert_int_equal(errno, EINVAL);
  for (int i = 0; i < 16; ++i) assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), 0);
  assert_int_equal(hcops_mem_pop(HCOPS_MEM_THREAD), -1);
}

int main(void) {
  /* Without the memory-policy system calls (QEMU's user-mode emulation
   * has none: make check-aarch64) there is no placement to check. */
  if (get_mempolicy(NULL, NULL, 0, NULL, 0) != 0 && errno == ENOSYS) {
    printf("SKIP: no memory-policy system calls here (get_mempolicy: %s)\n", strerror(errno));
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(default_is_preferred_ddr),
      cmocka_unit_test(pushed_policies),
      cmocka_unit_test(pages_on_node),
      cmocka_unit_test(moves),
      cmocka_unit_test(thread_scope_stays_with_thread),
      cmocka_unit_test(stack_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
