/* Checks for the libhcops_mpi test programs: every rank counts its checks
 * and failures with CHECK (common/check.h: the first failures as single
 * lines, so ranks' lines do not interleave), and mpi_check_summary() sums
 * them over the ranks for one "<what> on N ranks: C checks, F failed" line.
 * The programs define `rank`, `checks` and `failures`; a threaded one wraps
 * CHECK in its lock. */
#pragma once

#include <mpi.h>
#include <stdio.h>

/* CHECK (common/check.h) prefixes each line with the rank. */
#define CHECK_RANK rank
#include "common/check.h"

/* Sums checks and failures over MPI_COMM_WORLD with PMPI (never offloaded,
 * so never counted by the wrapper); rank 0 prints the line. Collective.
 * Returns the total number of failures. */
static inline long mpi_check_summary(const char *what, long checks_, long failures_) {
  long totals[2] = {checks_, failures_}, sums[2] = {0, 0};
  int me = 0, n = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  PMPI_Comm_size(MPI_COMM_WORLD, &n);
  PMPI_Allreduce(totals, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) {
    printf("%s on %d ranks: %ld checks, %ld failed\n", what, n, sums[0], sums[1]);
    fflush(stdout);
  }
  return sums[1];
}
