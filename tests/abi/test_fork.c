/* fork() after the library has run multithreaded GEMM: the child has only
 * the forking thread, so a thread pool that is not re-created (or a lock
 * held by a vanished worker) hangs or breaks the child's next call. The
 * parent's pool must keep working too. Thread count comes from
 * HCOPS_NUM_THREADS as given (make check sets 2). Hangs are bounded: the
 * parent kills a child that runs past the timeout, and an alarm ends the
 * whole program should the parent itself hang. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "blas_test_util.h"
#include "common/time_limit.h"

#define CHILD_TIMEOUT_S 60
#define PROGRAM_TIMEOUT_S 240
#define GEMV_N 2048

/* Large enough to be split across threads. */
static const bt_gemm_case big_gemm = {.api = BT_F77, .ta = 'N', .tb = 'T', .m = 512, .n = 512, .k = 512, .alpha = 1.0};

/* A forwarded routine big enough for the reference to use its own threads,
 * checked against a naive loop so the check does not depend on them. */
static bool forwarded_sgemv_ok(void) {
  static float a[GEMV_N * GEMV_N], x[GEMV_N], y[GEMV_N];
  for (int i = 0; i < GEMV_N * GEMV_N; ++i) a[i] = (float)bt_rand_unit();
  for (int i = 0; i < GEMV_N; ++i) x[i] = (float)bt_rand_unit();
  const int n = GEMV_N, one = 1;
  const float alpha = 1.0f, beta = 0.0f;
  sgemv_("N", &n, &n, &alpha, a, &n, x, &one, &beta, y, &one);
  for (int i = 0; i < GEMV_N; ++i) {
    double s = 0.0, abs_s = 0.0;
    for (int j = 0; j < GEMV_N; ++j) {
      s += (double)a[i + (size_t)j * GEMV_N] * x[j];
      abs_s += fabs((double)a[i + (size_t)j * GEMV_N] * x[j]);
    }
    if (!(fabs(y[i] - s) <= 4.0 * (GEMV_N + 2) * 1.2e-7 * abs_s)) {
      fprintf(stderr, "  [pid %ld] forwarded sgemv_: y[%d] = %g, expected %g\n", (long)getpid(), i, y[i], s);
      return false;
    }
  }
  return true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Exit status of `pid`, or -1 (after killing it) if it outlives the timeout. */
static int wait_with_timeout(pid_t pid, int timeout_s) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  double deadline = now_s() + timeout_s;
  int status;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) {
      perror("waitpid");
      return -1;
    }
    if (now_s() > deadline) {
      fprintf(stderr, "  child %ld still running after %d s: killed (hang after fork?)\n", (long)pid, timeout_s);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    nanosleep(&tick, NULL);
  }
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "  child %ld died of signal %d\n", (long)pid, WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

/* The child's work; `depth` > 0 forks once more from inside the child, as
 * a pool re-created after fork must itself survive the next fork. */
static int child_work(int depth) {
  bt_rng_reset("child");
  bool ok = bt_gemm_check(&big_gemm);
  ok = forwarded_sgemv_ok() && ok;
  if (depth > 0) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child_work(depth - 1));
    ok = pid > 0 && wait_with_timeout(pid, test_time_limit(CHILD_TIMEOUT_S)) == 0 && ok;
  }
  if (!ok) fprintf(stderr, "  [pid %ld] child checks failed\n", (long)getpid());
  return ok ? 0 : 1;
}

static void gemm_survives_fork(void **state) {
  (void)state;
  bt_rng_reset(__func__);
  /* Start both thread pools before the first fork. */
  assert_true(bt_gemm_check(&big_gemm));
  assert_true(forwarded_sgemv_ok());
  for (int round = 0; round < 2; ++round) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child_work(1));
    /* The parent computes while the child does: its pool must still work. */
    bool parent_ok = bt_gemm_check(&big_gemm);
    int child_status = wait_with_timeout(pid, test_time_limit(CHILD_TIMEOUT_S));
    if (child_status != 0) fprintf(stderr, "  round %d: child exit status %d\n", round, child_status);
    assert_int_equal(child_status, 0);
    assert_true(parent_ok);
  }
  assert_true(bt_gemm_check(&big_gemm));
}

int main(void) {
  const char *threads = getenv("HCOPS_NUM_THREADS");
  printf("# test_fork: HCOPS_NUM_THREADS=%s\n", threads ? threads : "<unset>");
  /* Default SIGALRM action ends the process: a hung parent fails the test
   * instead of stalling CI. */
  alarm(test_time_limit(PROGRAM_TIMEOUT_S));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gemm_survives_fork),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
