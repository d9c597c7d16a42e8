/* libhcops_mpi's progress thread itself, run under LD_PRELOAD of
 * libhcops_mpi.so by test_mpi_async.sh.
 *
 *   mpirun -np N ./test_mpi_async thread
 *     The progress thread ("hcops-mpi") has a timer slack of 1 ns, blocks
 *     every signal and uses no CPU while idle. With HCOPS_MPI_EXCLUSIVE=1 the
 *     main thread may not run on any PU of the progress thread's core.
 *   mpirun -np N ./test_mpi_async async
 *     An MPI_Iallreduce of 4 MiB completes while the application makes no
 *     MPI call: after 1 s asleep one MPI_Test must find it done (failing
 *     that, after 4 s more, one last MPI_Test). Plain Open MPI advances it
 *     only inside MPI calls, so this fails without the wrapper on 3 or more
 *     ranks (on 2, its two MPI_Test calls can be enough).
 *   mpirun -np N ./test_mpi_async poll
 *     MPI_Test loops on 16 MiB MPI_Iallreduce: the application waits the whole
 *     time, which HCOPS_MPI_VERBOSE must report as exposed, not hidden.
 * Each prints "test_mpi_async MODE on N ranks: C checks, F failed" (rank 0).
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static int rank, nranks;
static long checks, failures;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The first line of FILE starting with KEY (after it), or "" if none. */
static void read_field(const char *file, const char *key, char *out, size_t n) {
  out[0] = 0;
  FILE *f = fopen(file, "r");
  if (!f) return;
  char line[512];
  const size_t k = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, k)) {
      snprintf(out, n, "%s", line + k);
      out[strcspn(out, "\n")] = 0;
      break;
    }
  fclose(f);
}

/* The thread ids of this process whose name is "hcops-mpi". */
static int progress_threads(int *tids, int max) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
    if (e->d_name[0] == '.') continue;
    char path[64], name[32];
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    read_field(path, "", name, sizeof name);
    if (!strcmp(name, "hcops-mpi")) tids[n++] = atoi(e->d_name);
  }
  if (d) closedir(d);
  return n;
}

static double cpu_seconds(int tid) {  // time on CPU, from the scheduler's accounting
  char path[64], text[128];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  read_field(path, "", text, sizeof text);
  return strtod(text, NULL) * 1e-9;
}

static bool sigmask_has(const char *hex, int sig) {  // SigBlk: hex, bit sig-1
  const size_t len = strlen(hex);
  const int bit = sig - 1;
  if ((size_t)(bit / 4) >= len) return false;
  const char c = hex[len - 1 - (size_t)(bit / 4)];
  const int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  return (v >> (bit % 4)) & 1;
}

/* The PUs of the core holding `cpu` (the kernel's siblings list). */
static void core_of(int cpu, cpu_set_t *set) {
  char path[96], text[256];
  CPU_ZERO(set);
  CPU_SET(cpu, set);
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
  read_field(path, "", text, sizeof text);
  for (char *p = text; *p;) {
    char *end;
    const long a = strtol(p, &end, 10);
    long b = a;
    if (end == p) break;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    for (long c = a; c <= b && c < CPU_SETSIZE; ++c) CPU_SET((int)c, set);
    p = *end == ',' ? end + 1 : end;
  }
}

static int run_thread(void) {
  /* Start the thread's work once, then let it go idle. */
  float a[1024], b[1024];
  for (int i = 0; i < 1024; ++i) a[i] = (float)i;
  MPI_Request r;
  MPI_Iallreduce(a, b, 1024, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  int tids[16];
  const int n = progress_threads(tids, 16);
  CHECK(n >= 1, "no thread named hcops-mpi");
  sleep_s(0.2);
  double before[16];
  for (int t = 0; t < n; ++t) before[t] = cpu_seconds(tids[t]);
  sleep_s(1.0);
  for (int t = 0; t < n; ++t) {
    const double used = cpu_seconds(tids[t]) - before[t];
    CHECK(used < 0.005, "idle progress thread %d used %.3f s of CPU in 1 s", tids[t], used);
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%d/timerslack_ns", tids[t]);
    read_field(path, "", text, sizeof text);
    CHECK(!strcmp(text, "1"), "progress thread %d: timer slack '%s' ns, not 1", tids[t], text);
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tids[t]);
    read_field(path, "SigBlk:", text, sizeof text);
    const char *mask = text + strspn(text, " \t");
    const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGCHLD, SIGWINCH};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; ++i)
      CHECK(sigmask_has(mask, sigs[i]), "progress thread %d: signal %d not blocked (SigBlk %s)", tids[t], sigs[i],
            mask);
    read_field(path, "Cpus_allowed_list:", text, sizeof text);
    const int cpu = atoi(text + strspn(text, " \t"));
    const char *x = getenv("HCOPS_MPI_EXCLUSIVE");
    if (x && !strcmp(x, "1")) {
      cpu_set_t mine, core;
      sched_getaffinity(0, sizeof mine, &mine);
      core_of(cpu, &core);
      CPU_AND(&core, &core, &mine);
      CHECK(CPU_COUNT(&core) == 0, "HCOPS_MPI_EXCLUSIVE=1: the main thread may still run on the core of CPU %d", cpu);
    }
  }
  return 0;
}

/* n floats, each rank's input rank + i % 7: the sum is exact. */
static float *reduction_input(int n) {
  float *a = malloc(sizeof(float) * (size_t)n);
  for (int i = 0; i < n; ++i) a[i] = (float)(rank + i % 7);
  return a;
}

static void check_sum(const float *b, int n, const char *what) {
  const float ranks = (float)nranks * (float)(nranks - 1) / 2;
  int bad = -1;
  for (int i = 0; i < n && bad < 0; ++i)
    if (b[i] != ranks + (float)nranks * (float)(i % 7)) bad = i;
  CHECK(bad < 0, "%s: element %d wrong", what, bad);
}

static int run_async(void) {
  const int n = 1 << 20;
  float *a = reduction_input(n), *b = malloc(sizeof(float) * (size_t)n);
  MPI_Request r;
  MPI_Iallreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
  sleep_s(1.0);
  int done = 0;
  MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  if (!done) {
    sleep_s(4.0);
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
  CHECK(done, "4 MiB MPI_Iallreduce not done after 5 s without MPI calls (and 2 MPI_Test)");
  if (!done) MPI_Wait(&r, MPI_STATUS_IGNORE);
  check_sum(b, n, "asynchronous MPI_Iallreduce");
  free(a);
  free(b);
  return 0;
}

static int run_poll(void) {
  const int n = 4 << 20;
  float *a = reduction_input(n), *b = malloc(sizeof(float) * (size_t)n);
  for (int k = 0; k < 3; ++k) {
    MPI_Request r;
    MPI_Iallreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    for (int flag = 0; !flag;) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    check_sum(b, n, "MPI_Test loop");
  }
  free(a);
  free(b);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (!strcmp(mode, "thread")) {
    run_thread();
  } else if (!strcmp(mode, "async")) {
    run_async();
  } else if (!strcmp(mode, "poll")) {
    run_poll();
  } else {
    if (rank == 0) fprintf(stderr, "usage: %s thread|async|poll\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  char what[64];
  snprintf(what, sizeof what, "test_mpi_async %s", mode);
  const long failed = mpi_check_summary(what, checks, failures);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
