/* HCOPS_MPI_VERBOSE=2's line per offloaded operation, run under LD_PRELOAD
 * of libhcops_mpi.so by test_mpi_verbose.sh.
 *
 *   mpirun -np N ./test_mpi_verbose
 *     A known sequence of allreduces: nonblocking ones completed by
 *     MPI_Wait, MPI_Waitall and an MPI_Test loop, in place, on a split
 *     communicator, with a user-defined op, a blocking one above
 *     HCOPS_MPI_OFFLOAD_MIN (offloaded) and one below it (passed through).
 *     For each operation the wrapper offloads, every rank prints
 *       "rank R: expect <call>,<ranks>,<count>,<type>,<op>,<bytes>",
 *     which the script matches (in any order: two may finish together) with the wrapper's lines
 *       "hcops_verbose,mpi,R,<call>,<ranks>,<count>,<type>,<op>,<bytes>,<in_flight_ms>,<exposed_ms>".
 * Rank 0 prints "test_mpi_verbose on N ranks: C checks, F failed".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#include "mpi_check.h"

static int rank, nranks;
static long checks, failures;

static void expect(const char *call, MPI_Comm comm, int count, const char *type, const char *op, long bytes) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  printf("rank %d: expect %s,%d,%d,%s,%s,%ld\n", rank, call, size, count, type, op, bytes);
  fflush(stdout);
}

/* Commutative: the largest absolute value. */
static void max_abs(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const long *a = in;
  long *b = inout;
  for (int i = 0; i < *len; ++i) b[i] = labs(a[i]) > labs(b[i]) ? labs(a[i]) : labs(b[i]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  enum { BIG = 1 << 15 };
  static float f[1000], fsum[1000];
  static double d[BIG], dmax[BIG];
  static int bits[4096], bxor[4096], small[10], ssum[10];
  static long l[100];

  for (int i = 0; i < 1000; ++i) f[i] = (float)(rank + i);
  MPI_Request req[2];
  MPI_Iallreduce(f, fsum, 1000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[0]);
  expect("iallreduce", MPI_COMM_WORLD, 1000, "MPI_FLOAT", "MPI_SUM", 4000);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  CHECK(fsum[3] == (float)(nranks * (nranks - 1) / 2 + 3 * nranks), "MPI_SUM gave %g", fsum[3]);

  for (int i = 0; i < BIG; ++i) d[i] = rank * 0.5 + i;
  MPI_Allreduce(d, dmax, BIG, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  expect("allreduce", MPI_COMM_WORLD, BIG, "MPI_DOUBLE", "MPI_MAX", BIG * 8L);
  CHECK(dmax[5] == (nranks - 1) * 0.5 + 5, "MPI_MAX gave %g", dmax[5]);

  /* Below HCOPS_MPI_OFFLOAD_MIN: straight to MPI, no line. */
  for (int i = 0; i < 10; ++i) small[i] = 1;
  MPI_Allreduce(small, ssum, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(ssum[9] == nranks, "small MPI_SUM gave %d", ssum[9]);

  /* Two at once on a communicator of the even or the odd ranks. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  for (int i = 0; i < 4096; ++i) bits[i] = 1 << (rank % 31);
  for (int i = 0; i < 1000; ++i) f[i] = 1;
  MPI_Iallreduce(bits, bxor, 4096, MPI_INT, MPI_BXOR, half, &req[0]);
  expect("iallreduce", half, 4096, "MPI_INT", "MPI_BXOR", 4096 * 4L);
  MPI_Iallreduce(MPI_IN_PLACE, f, 1000, MPI_FLOAT, MPI_PROD, half, &req[1]);
  expect("iallreduce", half, 1000, "MPI_FLOAT", "MPI_PROD", 4000);
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  CHECK(f[0] == 1.0f, "in place MPI_PROD gave %g", f[0]);
  MPI_Comm_free(&half);

  /* A user-defined op, completed by polling. */
  MPI_Op op;
  MPI_Op_create(max_abs, 1, &op);
  for (int i = 0; i < 100; ++i) l[i] = -(long)rank;
  MPI_Iallreduce(MPI_IN_PLACE, l, 100, MPI_LONG, op, MPI_COMM_WORLD, &req[0]);
  expect("iallreduce", MPI_COMM_WORLD, 100, "MPI_LONG", "user", 800);
  for (int done = 0; !done;) MPI_Test(&req[0], &done, MPI_STATUS_IGNORE);
  CHECK(l[99] == nranks - 1, "user op gave %ld", l[99]);
  MPI_Op_free(&op);

  const long failed = mpi_check_summary("test_mpi_verbose", checks, failures);
  MPI_Finalize();
  return failed > 0;
}
