/* Primitives' lifetimes, threads and fork through oneDNN's C API, each
 * result checked against its f64 reference (conf_matmul.c, conf_ip.c):
 *  1. create/execute/destroy cycles alternating a primitive HCOps must
 *     claim and one it must forward, of the same shapes, so that a new
 *     primitive takes the address of the one just destroyed (reported):
 *     under the preload the forwarded one must not run as the old plan (no
 *     hcops line, the real library's result) nor the claimed one as
 *     forwarded;
 *  2. threads creating, executing and destroying their own primitives, and
 *     executing two shared ones (one claimed, one forwarded) at once, each
 *     on its own stream and memories;
 *  3. fork() after all that: the child creates and executes primitives and
 *     exits 0 (an alarm ends a hung child: a failure). The child first
 *     asks OpenMP for one thread: GNU libgomp cannot start a team in the
 *     child of a process whose team ran (stock oneDNN hangs there, seen
 *     with 2 threads), which every oneDNN program must respect; HCOps's
 *     own engine goes serial in such a child by itself.
 *   --expect=claims  under the preload with HCOPS_VERBOSE=1: an hcops exec
 *                    line per claimed execution and none for the others;
 *   --expect=none    no hcops exec line at all (stock, HCOPS_DNNL=0). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/time_limit.h"
#include "conf_ip.h"

/* libgomp's (omp.h is not on the C compiler's default path everywhere). */
void omp_set_num_threads(int n);
#include "conf_matmul.h"

typedef enum { EXPECT_NOTHING, EXPECT_CLAIMS, EXPECT_NONE } expectation;
static expectation expect = EXPECT_NOTHING;
static int failures;

static mm_problem matmul(const char *name, claim_mark mark, dnnl_dim_t M, dnnl_dim_t K, dnnl_dim_t N,
                         dnnl_data_type_t dt) {
  mm_problem p;
  memset(&p, 0, sizeof p);
  snprintf(p.name, sizeof p.name, "%s", name);
  p.mark = mark;
  p.M = M, p.K = K, p.N = N;
  p.sdt = p.wdt = p.ddt = dt;
  p.bdt = dnnl_data_type_undef;
  return p;
}

/* The claimed and forwarded pair of the cycles, and the threads' set. */
static mm_problem claimed_relu, forwarded_tanh, claimed_bf16_sum, forwarded_int8, claimed_rt, forwarded_per_n;
static ip_problem claimed_ip;

static void make_problems(void) {
  claimed_relu = matmul("claimed_f32_bias_relu", MUST_CLAIM, 48, 64, 40, dnnl_f32);
  claimed_relu.bdt = dnnl_f32, claimed_relu.bias_mask = 2;
  claimed_relu.po[claimed_relu.npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_relu, 0, 0, 1};
  forwarded_tanh = matmul("forwarded_f32_bias_tanh", MUST_FORWARD, 48, 64, 40, dnnl_f32);
  forwarded_tanh.bdt = dnnl_f32, forwarded_tanh.bias_mask = 2;
  forwarded_tanh.po[forwarded_tanh.npo++] = (post_op){PO_ELTWISE, dnnl_eltwise_tanh, 0, 0, 1};
  /* bf16 where the real library has it (the primitive descriptor is its
   * own), else the same problem in f32 (AArch64: conf_library_has_bf16). */
  const int bf16 = conf_library_has_bf16();
  if (!bf16) printf("NOTE: %s: claimed_bf16_ab_ba_sum runs in f32\n", conf_no_bf16);
  claimed_bf16_sum = matmul(bf16 ? "claimed_bf16_ab_ba_sum" : "claimed_f32_ab_ba_sum", MUST_CLAIM, 33, 70, 45,
                            bf16 ? dnnl_bf16 : dnnl_f32);
  claimed_bf16_sum.wei_trans = 1;
  claimed_bf16_sum.po[claimed_bf16_sum.npo++] = (post_op){PO_SUM, 0, 0, 0, 1};
  forwarded_int8 = matmul("forwarded_u8s8_f32", MUST_FORWARD, 24, 40, 32, dnnl_u8);
  forwarded_int8.wdt = dnnl_s8, forwarded_int8.ddt = dnnl_f32, forwarded_int8.src_zp = 2;
  claimed_rt = matmul("claimed_f32_runtime_MNK", MUST_CLAIM, 30, 20, 25, dnnl_f32);
  claimed_rt.runtime = RT_M | RT_K | RT_N, claimed_rt.M2 = 17, claimed_rt.K2 = 9, claimed_rt.N2 = 40;
  forwarded_per_n = matmul("forwarded_f32_per_n_scales", MUST_FORWARD, 30, 20, 25, dnnl_f32);
  forwarded_per_n.oscale_kind = OSCALE_PER_N;
  memset(&claimed_ip, 0, sizeof claimed_ip);
  snprintf(claimed_ip.name, sizeof claimed_ip.name, "claimed_ip_fwd_f32_bias");
  claimed_ip.mark = MUST_CLAIM;
  claimed_ip.dir = IP_FWD_TRAINING;
  claimed_ip.MB = 16, claimed_ip.OC = 24, claimed_ip.IC = 40;
  claimed_ip.sdt = claimed_ip.wdt = claimed_ip.ddt = claimed_ip.bdt = dnnl_f32;
}

/* The hcops exec lines that `text` must hold for `claimed` executions. */
static int verbose_ok(const char *what, const char *text, int claimed) {
  if (expect == EXPECT_NOTHING) return 1;
  int want = expect == EXPECT_CLAIMS ? claimed : 0, got = count_hcops_exec(text, NULL, NULL);
  if (got == want) return 1;
  printf("FAIL %s: %d hcops exec lines, want %d\n", what, got, want);
  return 0;
}

static void report(const char *what, const conf_result *r) {
  if (r->ok) return;
  ++failures;
  printf("FAIL %s: max_err %.3e bound %.3e%s%s\n", what, r->max_err, r->bound, r->gaps_ok ? "" : " (wrote outside)",
         r->skipped ? r->skipped : "");
}

/* One problem run and checked, its verbose lines counted. */
static const void *run_checked(const char *phase, const mm_problem *p, uint64_t seed) {
  conf_result r;
  if (expect != EXPECT_NOTHING) capture_begin();
  run_matmul(p, seed, &r);
  if (expect != EXPECT_NOTHING) {
    char *text = capture_end();
    char what[160];
    snprintf(what, sizeof what, "%s %s", phase, p->name);
    if (!verbose_ok(what, text, p->mark == MUST_CLAIM ? r.executions : 0)) ++failures;
    free(text);
  }
  char what[160];
  snprintf(what, sizeof what, "%s %s", phase, p->name);
  report(what, &r);
  return r.primitive;
}

static void lifetimes(void) {
  const int cycles = 12;
  int reused = 0;
  const void *last = NULL;
  for (int i = 0; i < cycles; ++i) {
    const mm_problem *first = i % 2 ? &forwarded_tanh : &claimed_relu;
    const mm_problem *second = i % 2 ? &claimed_relu : &forwarded_tanh;
    const void *a = run_checked("cycle", first, 100 + (uint64_t)i);
    if (a == last) ++reused;
    const void *b = run_checked("cycle", second, 200 + (uint64_t)i);
    if (b == a) ++reused;
    last = b;
  }
  printf("lifetimes: %d create/execute/destroy cycles, a primitive at its predecessor's address %d times\n", 2 * cycles,
         reused);
}

/* Threads. Each runs its own problems and executes the shared ones. */
enum { NTHREADS = 4, ROUNDS = 5 };
static mm_prepared shared_claimed, shared_forwarded;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static int claimed_executions;
typedef struct {
  int index;
  int failures;
  char first_failure[200];
} worker;

static void worker_account(worker *w, const char *what, const conf_result *r, claim_mark mark) {
  if (!r->ok && !w->failures++)
    snprintf(w->first_failure, sizeof w->first_failure, "%s: max_err %.3e bound %.3e%s", what, r->max_err, r->bound,
             r->skipped ? r->skipped : "");
  if (mark == MUST_CLAIM) {
    pthread_mutex_lock(&count_lock);
    claimed_executions += r->executions;
    pthread_mutex_unlock(&count_lock);
  }
}

static void *work(void *arg) {
  worker *w = arg;
  const mm_problem *own[] = {&claimed_relu,   &forwarded_tanh, &claimed_bf16_sum,
                             &forwarded_int8, &claimed_rt,     &forwarded_per_n};
  const int nown = (int)(sizeof own / sizeof *own);
  for (int round = 0; round < ROUNDS; ++round) {
    uint64_t seed = 1000 * (uint64_t)w->index + (uint64_t)round;
    conf_result r;
    const mm_problem *p = own[(w->index + round) % nown];
    run_matmul(p, seed, &r);
    worker_account(w, p->name, &r, p->mark);
    result_init(&r);
    mm_execute(&claimed_bf16_sum, &shared_claimed, seed + 7, &r);
    worker_account(w, "shared claimed", &r, MUST_CLAIM);
    result_init(&r);
    mm_execute(&forwarded_int8, &shared_forwarded, seed + 11, &r);
    worker_account(w, "shared forwarded", &r, MUST_FORWARD);
    if (round == w->index % ROUNDS) {
      run_ip(&claimed_ip, seed + 13, &r);
      worker_account(w, claimed_ip.name, &r, MUST_CLAIM);
    }
  }
  return NULL;
}

static void threads(void) {
  if (!mm_prepare(&claimed_bf16_sum, &shared_claimed) || !mm_prepare(&forwarded_int8, &shared_forwarded)) {
    printf("FAIL threads: the library refused a shared problem\n");
    ++failures;
    return;
  }
  pthread_t tid[NTHREADS];
  worker w[NTHREADS];
  if (expect != EXPECT_NOTHING) capture_begin();
  for (int i = 0; i < NTHREADS; ++i) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].index = i;
    if (pthread_create(&tid[i], NULL, work, &w[i])) abort();
  }
  for (int i = 0; i < NTHREADS; ++i) pthread_join(tid[i], NULL);
  if (expect != EXPECT_NOTHING) {
    char *text = capture_end();
    if (!verbose_ok("threads", text, claimed_executions)) ++failures;
    free(text);
  }
  for (int i = 0; i < NTHREADS; ++i)
    if (w[i].failures) {
      printf("FAIL thread %d: %d wrong results, first %s\n", i, w[i].failures, w[i].first_failure);
      ++failures;
    }
  mm_release(&shared_claimed);
  mm_release(&shared_forwarded);
  printf("threads: %d threads x %d rounds, %d executions of claimed primitives\n", NTHREADS, ROUNDS,
         claimed_executions);
}

/* The child of a process that used oneDNN (its OpenMP pool, HCOps's
 * threads) creates and executes primitives of its own. */
static void forked(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    ++failures;
    return;
  }
  if (pid == 0) {
    alarm(test_time_limit(60));
    omp_set_num_threads(1);
    failures = 0;
    run_checked("child", &claimed_relu, 7);
    run_checked("child", &forwarded_tanh, 8);
    run_checked("child", &claimed_rt, 9);
    fflush(stdout);
    _exit(failures ? 1 : 0);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) {
    perror("waitpid");
    ++failures;
    return;
  }
  if (WIFSIGNALED(status)) {
    printf("FAIL fork: the child died of signal %d%s\n", WTERMSIG(status),
           WTERMSIG(status) == SIGALRM ? " (hung for 60 s)" : "");
    ++failures;
  } else if (WEXITSTATUS(status) != 0) {
    printf("FAIL fork: the child exited %d\n", WEXITSTATUS(status));
    ++failures;
  } else {
    printf("fork: the child created and executed its primitives\n");
  }
  /* And the parent goes on. */
  run_checked("after fork", &claimed_bf16_sum, 10);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--expect=claims")) expect = EXPECT_CLAIMS;
    else if (!strcmp(argv[i], "--expect=none")) expect = EXPECT_NONE;
    else {
      fprintf(stderr, "usage: %s [--expect=claims|none]\n", argv[0]);
      return 2;
    }
  }
  make_problems();
  lifetimes();
  threads();
  forked();
  printf("threads and lifetimes: %s\n", failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
