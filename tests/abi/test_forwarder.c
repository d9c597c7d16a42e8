/* The generic forwarder (shim/common/) on its own, without BLAS: a fake
 * foreign library (fake_foreign.c, built as copies A and B that answer
 * fake_probe() with 1 and 2), its symbol list (fake_foreign.def) and its
 * description (fake_forward.c). Resolution happens once per process, so each
 * case runs in a child process with its own environment and collects what
 * the child printed on stderr. */
#define _GNU_SOURCE

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shim/common/forward.h"

#define LIB_A FAKE_DIR "/libfake_foreign_a.so"
#define LIB_B FAKE_DIR "/libfake_foreign_b.so"
#define LIB_SELF FAKE_DIR "/libfake_foreign_self.so"
#define LIB_FILLER FAKE_DIR "/libfake_filler.so"
#define NOWHERE "/nonexistent/libfake_foreign.so"
#define ENV "HCOPS_TEST_FAKE"
#define NTHREADS 8

/* The trampolines, defined by fake_forward_trampolines.S. */
int fake_probe(void);
int fake_add(int a, int b);
double fake_fma(double a, double b, double c);
double fake_sum(int n, ...);
long fake_stack(long a, long b, long c, long d, long e, long f, long g, long h);
int fake_missing(void);

extern struct hcops_foreign hcops_forward_lib_fake;
#define LIB (&hcops_forward_lib_fake)

/* ---- in the child: checks print a line on stdout and make the child fail */

static int failures;

#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      printf("child: %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);               \
    }                                                                   \
  } while (0)

static int loaded(const char *path) {
  void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (h) dlclose(h);
  return h != NULL;
}

static void *open_local(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) printf("child: cannot open %s: %s\n", path, dlerror());
  return h;
}

/* Every forwarded call of the library copy `id` (0: none, all return zero). */
static void expect_calls(int id) {
  const int some = id != 0;
  EXPECT(fake_probe() == id);
  EXPECT(fake_add(2, 3) == (some ? 5 : 0));
  EXPECT(fake_fma(1.5, 2.0, 0.25) == (some ? 3.25 : 0.0));
  EXPECT(fake_sum(3, 1.0, 2.0, 3.5) == (some ? 6.5 : 0.0));
  EXPECT(fake_stack(1, 2, 3, 4, 5, 6, 7, 8) == (some ? 204 : 0));
}

static void marker(const char *what) { fprintf(stderr, "-- %s\n", what); }

/* ---- in the parent */

struct outcome {
  int status; /* the child's exit status, -1 when it did not exit */
  char err[16384];
};

/* Runs `body` in a child with `env_value` in ENV (unset when NULL). */
static void run(void (*body)(void), const char *env_value, struct outcome *out) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    if (env_value) setenv(ENV, env_value, 1);
    else unsetenv(ENV);
    body();
    fflush(NULL);
    _exit(failures ? 1 : 0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while ((r = read(fds[0], out->err + n, sizeof out->err - 1 - n)) > 0) n += (size_t)r;
  out->err[n] = '\0';
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  out->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (out->status != 0 || out->err[0]) printf("child stderr:\n%s", out->err);
}

/* run(), and the child must succeed and print nothing. */
static void run_clean(void (*body)(void), const char *env_value) {
  struct outcome o;
  run(body, env_value, &o);
  assert_int_equal(o.status, 0);
  assert_string_equal(o.err, "");
}

static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  size_t len = strlen(prefix);
  for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
    n += strncmp(line, prefix, len) == 0;
  return n;
}

/* ---- the cases */

/* Nothing is opened before the first forwarded call; the variable's library
 * then serves every call, whatever the signature, and the default is never
 * loaded. */
static void lazy_env_body(void) {
  for (unsigned i = 0; i < LIB->count; ++i) EXPECT(LIB->slots[i] == NULL);
  EXPECT(!loaded(LIB_A) && !loaded(LIB_B));
  expect_calls(2);
  EXPECT(LIB->slots[1] != NULL); /* fake_add's */
  EXPECT(!loaded(LIB_A));
  EXPECT(hcops_foreign_path(LIB) && strstr(hcops_foreign_path(LIB), "libfake_foreign_b.so"));
}

static void test_lazy_env(void **state) {
  (void)state;
  run_clean(lazy_env_body, LIB_B);
}

/* A copy loaded RTLD_LOCAL (invisible to RTLD_NEXT and to the global scope)
 * is used rather than opening the default: no second copy. */
static void loaded_local_body(void) {
  if (!open_local(LIB_B)) ++failures;
  expect_calls(2);
  EXPECT(!loaded(LIB_A));
}

static void test_loaded_local_preferred(void **state) {
  (void)state;
  run_clean(loaded_local_body, NULL);
}

/* The order between the variable and a loaded copy is the description's:
 * the variable first by default (BLAS), the loaded copy with loaded_first
 * (a runtime such as oneDNN that must not be loaded twice). */
static void env_first_body(void) {
  if (!open_local(LIB_B)) ++failures;
  EXPECT(fake_probe() == 1);
}

static void loaded_first_body(void) {
  LIB->loaded_first = 1;
  if (!open_local(LIB_B)) ++failures;
  EXPECT(fake_probe() == 2);
  EXPECT(!loaded(LIB_A));
}

static void test_order(void **state) {
  (void)state;
  run_clean(env_first_body, LIB_A);
  run_clean(loaded_first_body, LIB_A);
}

/* A variable naming nothing usable (a missing file, or HCOps itself) is
 * reported once, naming the variable, and the search goes on. */
static void fallback_body(void) { expect_calls(1); }

static void test_bad_env_falls_back(void **state) {
  (void)state;
  struct outcome o;
  run(fallback_body, NOWHERE, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(count_lines(o.err, "hcops: cannot use " ENV "=" NOWHERE " ("), 1);
  assert_int_equal(count_lines(o.err, ""), 1);

  run(fallback_body, LIB_SELF, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(count_lines(o.err, "hcops: cannot use " ENV "=" LIB_SELF " (it is HCOps itself)"), 1);
  assert_int_equal(count_lines(o.err, ""), 1);
}

/* No library anywhere: silent until the first forwarded call, then one
 * error naming the variable; every call returns zero, later ones quietly. */
static const char *const nowhere[] = {NOWHERE, NULL};

static void no_library_body(void) {
  LIB->defaults = nowhere;
  marker("first call");
  expect_calls(0);
  expect_calls(0);
  EXPECT(hcops_foreign_path(LIB) == NULL);
}

static void test_no_library(void **state) {
  (void)state;
  struct outcome o;
  run(no_library_body, NULL, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(strncmp(o.err, "-- first call\n", 14), 0);
  assert_int_equal(count_lines(o.err, "hcops: no fake foreign library for the symbols HCOps forwards"), 1);
  assert_non_null(strstr(o.err, "tried " NOWHERE "); set " ENV " to the fake library\n"));
  assert_int_equal(count_lines(o.err, "hcops"), 1);
}

/* A symbol the library lacks: the call returns zero, reported once; the
 * others still reach the library. */
static void missing_symbol_body(void) {
  EXPECT(fake_missing() == 0);
  EXPECT(fake_missing() == 0);
  expect_calls(1);
}

static void test_missing_symbol(void **state) {
  (void)state;
  struct outcome o;
  run(missing_symbol_body, LIB_A, &o);
  assert_int_equal(o.status, 0);
  assert_string_equal(o.err, "hcops: the fake foreign library " LIB_A " has no fake_missing; the call does nothing\n");
}

/* A description with a `missing` target (oneDNN's: a failure status): the
 * calls that cannot be forwarded return what it returns, except those in
 * `missing_zero`, which still return zero; with or without a library. */
static int failure_status(void) { return 5; }
static const char *const zero_ones[] = {"fake_probe", "fake_fma", NULL};

static void missing_target_body(void) {
  LIB->defaults = nowhere;
  LIB->missing = (void (*)(void))failure_status;
  LIB->missing_zero = zero_ones;
  EXPECT(fake_add(2, 3) == 5);
  EXPECT(fake_missing() == 5);
  EXPECT(fake_probe() == 0);
  EXPECT(fake_fma(1.5, 2.0, 0.25) == 0.0);
}

static void missing_target_found_body(void) {
  LIB->missing = (void (*)(void))failure_status;
  LIB->missing_zero = zero_ones;
  EXPECT(fake_missing() == 5);
  expect_calls(1);
}

static void test_missing_target(void **state) {
  (void)state;
  struct outcome o;
  run(missing_target_body, NULL, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(count_lines(o.err, "hcops: no fake foreign library for the symbols HCOps forwards"), 1);
  assert_int_equal(count_lines(o.err, "hcops"), 1);
  run(missing_target_found_body, LIB_A, &o);
  assert_int_equal(o.status, 0);
  assert_string_equal(o.err,
                      "hcops: the fake foreign library " LIB_A " has no fake_missing; the call does nothing and fails\n");
}

/* Threads that all make their first forwarded calls at once: every call
 * right, each report printed once. */
static pthread_barrier_t barrier;
static int expected_id;

static void *first_calls(void *arg) {
  int i = (int)(intptr_t)arg;
  pthread_barrier_wait(&barrier);
  EXPECT(fake_missing() == 0);
  EXPECT(fake_add(i, 1000) == (expected_id ? i + 1000 : 0));
  expect_calls(expected_id);
  return NULL;
}

static void concurrent_body(void) {
  pthread_t t[NTHREADS];
  pthread_barrier_init(&barrier, NULL, NTHREADS);
  for (int i = 0; i < NTHREADS; ++i) pthread_create(&t[i], NULL, first_calls, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; ++i) pthread_join(t[i], NULL);
}

static void concurrent_found_body(void) {
  expected_id = 1;
  concurrent_body();
}

static void concurrent_none_body(void) {
  LIB->defaults = nowhere;
  expected_id = 0;
  concurrent_body();
}

static void test_concurrent_first_calls(void **state) {
  (void)state;
  struct outcome o;
  run(concurrent_found_body, LIB_A, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(count_lines(o.err, "hcops: the fake foreign library " LIB_A " has no fake_missing;"), 1);
  assert_int_equal(count_lines(o.err, ""), 1);

  run(concurrent_none_body, NULL, &o);
  assert_int_equal(o.status, 0);
  assert_int_equal(count_lines(o.err, "hcops: no fake foreign library "), 1);
  assert_int_equal(count_lines(o.err, ""), 1);
}

/* A process with many libraries (python with PyTorch maps hundreds): the
 * loaded copy is found however many objects precede it. */
#define FILLERS 100

static void many_objects_body(void) {
  char dir[] = "/tmp/hcops-fwd-XXXXXX";
  if (!mkdtemp(dir)) {
    printf("child: mkdtemp failed\n");
    ++failures;
    return;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "for i in $(seq %d); do cp '%s' '%s'/filler$i.so || exit 1; done", FILLERS, LIB_FILLER,
           dir);
  EXPECT(system(cmd) == 0);
  for (int i = 1; i <= FILLERS; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/filler%d.so", dir, i);
    if (!open_local(path)) ++failures;
    unlink(path);
  }
  rmdir(dir);
  loaded_local_body();
}

static void test_many_loaded_objects(void **state) {
  (void)state;
  run_clean(many_objects_body, NULL);
}

/* fork: a child keeps the resolved slots and resolves the others itself. */
static void fork_body(void) {
  EXPECT(fake_add(1, 1) == 2);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    expect_calls(1);
    fflush(NULL);
    _exit(failures ? 1 : 0);
  }
  int status;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  expect_calls(1);
}

static void test_fork(void **state) {
  (void)state;
  run_clean(fork_body, LIB_A);
}

int main(void) {
  unsetenv(ENV);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lazy_env),
      cmocka_unit_test(test_loaded_local_preferred),
      cmocka_unit_test(test_order),
      cmocka_unit_test(test_bad_env_falls_back),
      cmocka_unit_test(test_no_library),
      cmocka_unit_test(test_missing_symbol),
      cmocka_unit_test(test_missing_target),
      cmocka_unit_test(test_concurrent_first_calls),
      cmocka_unit_test(test_many_loaded_objects),
      cmocka_unit_test(test_fork),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
