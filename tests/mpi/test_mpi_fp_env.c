/* libhcops_mpi.so must leave its caller's floating-point environment as it
 * found it (see abi/fp_env_check.h): MPI_Init (the wrapper loads the
 * topology through hwloc and starts its progress thread), offloaded
 * MPI_Allreduce and MPI_Iallreduce on small-integer data, MPI_Comm_dup (the
 * wrapper makes its shadow) and MPI_Finalize, each from a distinctive
 * environment. What the MPI library itself does to the environment is not
 * ours: test_fp_env.sh compares the lines of a run under LD_PRELOAD with
 * those of a run without the wrapper.
 * Every rank prints one line per call; "test_mpi_fp_env: N checks, F failed". */
#include <mpi.h>
#include <stdio.h>

#include "abi/fp_env_check.h"

int main(int argc, char **argv) {
  enum { kCount = 1 << 16 };
  static double in[kCount], out[kCount], out2[kCount];
  for (int i = 0; i < kCount; ++i) in[i] = i % 13;
  int rank = 0, size = 1;
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  setvbuf(stdout, NULL, _IOLBF, 0);

  FP_CHECK(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  FP_CHECK(MPI_Allreduce(in, out, kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  FP_CHECK(MPI_Iallreduce(in, out2, kCount, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req));
  FP_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  FP_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  FP_CHECK(MPI_Allreduce(in, out, kCount, MPI_DOUBLE, MPI_SUM, dup));
  FP_CHECK(MPI_Comm_free(&dup));
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) wrong |= out[i] != in[i] * size || out2[i] != in[i] * size;
  if (wrong) {
    printf("FAIL: wrong sums\n");
    ++fp_failures;
  }
  FP_CHECK(MPI_Finalize());
  return rank == 0 ? fp_summary("test_mpi_fp_env") : fp_failures != 0;
}
