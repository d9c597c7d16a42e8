// The MPI entry points libhcops_mpi.so interposes (PMPI profiling interface):
// thread-level negotiation, allreduce offload, completion calls that sleep
// instead of spinning on offloaded requests, and the teardown hooks. Every
// other MPI call goes straight to the MPI library.
#include "mpi/progress.h"

namespace mpi = hcops::mpi;

#define HCOPS_EXPORT __attribute__((visibility("default")))

extern "C" {

// The wrapper needs MPI_THREAD_MULTIPLE underneath (its progress thread calls
// MPI); the application is told the level it asked for.
HCOPS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int real = MPI_THREAD_SINGLE;
  const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &real);
  if (rc != MPI_SUCCESS) return rc;
  const bool on = mpi::start(real);
  mpi::app_thread_level = on ? required : (required < real ? required : real);
  if (provided) *provided = mpi::app_thread_level;
  return rc;
}

HCOPS_EXPORT int MPI_Init(int *argc, char ***argv) {
  int provided;
  return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

HCOPS_EXPORT int MPI_Query_thread(int *provided) {
  if (!mpi::running()) return PMPI_Query_thread(provided);
  *provided = mpi::app_thread_level;
  return MPI_SUCCESS;
}

HCOPS_EXPORT int MPI_Finalize(void) {
  mpi::stop();
  return PMPI_Finalize();
}

HCOPS_EXPORT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                                MPI_Comm comm, MPI_Request *request) {
  int rc;
  if (mpi::iallreduce(sendbuf, recvbuf, count, type, op, comm, request, &rc)) return rc;
  return PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request);
}

HCOPS_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                               MPI_Comm comm) {
  int rc;
  if (mpi::allreduce(sendbuf, recvbuf, count, type, op, comm, &rc)) return rc;
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

HCOPS_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  if (request) mpi::await(1, request, false);
  return PMPI_Wait(request, status);
}

HCOPS_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (requests) mpi::await(count, requests, false);
  return PMPI_Waitall(count, requests, statuses);
}

HCOPS_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  if (requests) mpi::await(count, requests, true);
  return PMPI_Waitany(count, requests, index, status);
}

HCOPS_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  if (requests) mpi::await(incount, requests, true);
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}

HCOPS_EXPORT int MPI_Comm_free(MPI_Comm *comm) {
  if (comm) mpi::forget_comm(*comm);
  return PMPI_Comm_free(comm);
}

}  // extern "C"
