/* libhcops_mpi must leave its host's environment alone (a library that
 * calls setenv changes what the application and its children see, and races
 * with other threads' getenv). Run by test_mpi_environ.sh, under LD_PRELOAD
 * of libhcops_mpi.so and without it.
 *
 *   mpirun -np N ./test_mpi_environ
 *     Copies environ before MPI_Init, then compares it after MPI_Init, after
 *     offloaded MPI_Iallreduce and MPI_Allreduce, and after MPI_Finalize:
 *     - every HCOPS_* variable (names no MPI sets) must be unchanged, in
 *       environ and through getenv;
 *     - each rank prints every other difference, sorted, as
 *       "rank R: <stage>: +NAME=value" or "-NAME=value": the MPI library
 *       itself changes a few variables (Open MPI 4 adds OMPI_MCA_ess and
 *       PMIX_MCA_psec), so the script compares these lines with a run
 *       without the wrapper, which must print the same.
 * Rank 0 prints "test_mpi_environ on N ranks: C checks, F failed".
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"

extern char **environ;

static int rank;
static long checks, failures;

/* A copy of environ (strings included), sorted. */
typedef struct {
  char **vars;
  size_t n;
} Env;

static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static Env snapshot(void) {
  Env e = {NULL, 0};
  size_t n = 0;
  while (environ && environ[n]) ++n;
  e.vars = malloc((n + 1) * sizeof *e.vars);
  for (size_t i = 0; i < n; ++i) e.vars[i] = strdup(environ[i]);
  e.n = n;
  qsort(e.vars, n, sizeof *e.vars, by_text);
  return e;
}

static void release(Env *e) {
  for (size_t i = 0; i < e->n; ++i) free(e->vars[i]);
  free(e->vars);
}

static int is_hcops(const char *var) { return !strncmp(var, "HCOPS_", 6); }

/* `sign` and every entry of `a` missing from `b` (both sorted): HCOPS_ ones
 * fail, the others are printed for the script. */
static void missing(const char *stage, char sign, const Env *a, const Env *b) {
  for (size_t i = 0; i < a->n; ++i) {
    const bool found = bsearch(&a->vars[i], b->vars, b->n, sizeof *b->vars, by_text) != NULL;
    if (found) continue;
    if (is_hcops(a->vars[i])) CHECK(0, "%s: %c%s: a HCOPS_ variable changed", stage, sign, a->vars[i]);
    else printf("rank %d: %s: %c%s\n", rank, stage, sign, a->vars[i]);
  }
}

/* Compares environ now with `before`, through environ and through getenv. */
static void compare(const char *stage, const Env *before) {
  Env now = snapshot();
  ++checks;
  missing(stage, '-', before, &now);
  missing(stage, '+', &now, before);
  for (size_t i = 0; i < before->n; ++i) {
    if (!is_hcops(before->vars[i])) continue;
    const char *eq = strchr(before->vars[i], '=');
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - before->vars[i]), before->vars[i]);
    const char *value = getenv(name);
    CHECK(value && !strcmp(value, eq + 1), "%s: getenv(\"%s\") gives \"%s\", was \"%s\"", stage, name,
          value ? value : "(unset)", eq + 1);
  }
  release(&now);
  fflush(stdout);
}

int main(int argc, char **argv) {
  Env before = snapshot();
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  compare("MPI_Init", &before);

  /* Offloaded when the wrapper is there: every MPI_Iallreduce, and an
   * MPI_Allreduce above HCOPS_MPI_OFFLOAD_MIN (64 KiB by default). */
  enum { N = 1 << 16 };
  static double in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = rank + i;
  MPI_Request req;
  MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int nranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  CHECK(out[7] == nranks - 1 + 7, "MPI_Allreduce MAX gave %g, not %d", out[7], nranks - 1 + 7);
  compare("allreduce", &before);

  const long failed = mpi_check_summary("test_mpi_environ", checks, failures);
  MPI_Finalize();
  compare("MPI_Finalize", &before);
  release(&before);
  /* After MPI_Finalize, only this rank's own failures are known. */
  return failed > 0 || failures > 0;
}
