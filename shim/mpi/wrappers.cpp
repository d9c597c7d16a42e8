// The MPI entry points libhcops_mpi.so interposes (PMPI profiling interface):
// thread-level negotiation, allreduce offload, completion calls that sleep
// instead of spinning on offloaded requests (and, with the Test family, time
// the application spends waiting on them), the calls that create
// communicators (their shadows are made there) and the teardown hooks.
// Every other MPI call goes straight to the MPI library.
#include "mpi/engine.h"

#include <climits>

namespace mpi = hcops::mpi;

#define HCOPS_EXPORT __attribute__((visibility("default")))

extern "C" {

// Set by MPI_Init_thread: from then on MPI_Query_thread reports the level the
// application was given, also when the engine is off (HCOPS_MPI=0), since
// the MPI library itself was asked for MPI_THREAD_MULTIPLE.
static bool levels_negotiated = false;

// The wrapper needs MPI_THREAD_MULTIPLE underneath (its progress thread calls
// MPI); the application is told the level it asked for.
HCOPS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int real = MPI_THREAD_SINGLE;
  const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &real);
  if (rc != MPI_SUCCESS) return rc;
  const bool on = mpi::start(real);
  mpi::app_thread_level = on ? required : (required < real ? required : real);
  levels_negotiated = true;
  if (provided) *provided = mpi::app_thread_level;
  return rc;
}

HCOPS_EXPORT int MPI_Init(int *argc, char ***argv) {
  int provided;
  return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

HCOPS_EXPORT int MPI_Query_thread(int *provided) {
  if (!levels_negotiated) return PMPI_Query_thread(provided);
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

#if MPI_VERSION >= 4
// MPI 4's large-count forms. The engine takes an int count: larger
// reductions go straight to MPI, on every rank alike (counts match).
HCOPS_EXPORT int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                                  MPI_Comm comm, MPI_Request *request) {
  int rc;
  if (count >= 0 && count <= INT_MAX &&
      mpi::iallreduce(sendbuf, recvbuf, static_cast<int>(count), type, op, comm, request, &rc))
    return rc;
  return PMPI_Iallreduce_c(sendbuf, recvbuf, count, type, op, comm, request);
}

HCOPS_EXPORT int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                                 MPI_Comm comm) {
  int rc;
  if (count >= 0 && count <= INT_MAX && mpi::allreduce(sendbuf, recvbuf, static_cast<int>(count), type, op, comm, &rc))
    return rc;
  return PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm);
}
#endif

HCOPS_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  mpi::Watch watch(request ? 1 : 0, request);
  if (request) mpi::await(1, request, false);
  return PMPI_Wait(request, status);
}

HCOPS_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  mpi::Watch watch(count, requests);
  if (requests) mpi::await(count, requests, false);
  return PMPI_Waitall(count, requests, statuses);
}

HCOPS_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
  mpi::Watch watch(count, requests);
  if (requests) mpi::await(count, requests, true);
  return PMPI_Waitany(count, requests, index, status);
}

HCOPS_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  mpi::Watch watch(incount, requests);
  if (requests) mpi::await(incount, requests, true);
  return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
}

// The Test family is wrapped only to count a polling loop's time as exposed.
HCOPS_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  mpi::Watch watch(request ? 1 : 0, request);
  return PMPI_Test(request, flag, status);
}

HCOPS_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
  mpi::Watch watch(count, requests);
  return PMPI_Testall(count, requests, flag, statuses);
}

HCOPS_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
  mpi::Watch watch(count, requests);
  return PMPI_Testany(count, requests, index, flag, status);
}

HCOPS_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[]) {
  mpi::Watch watch(incount, requests);
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

// Communicator constructors: the shadow of the new communicator is made at
// once, while its members are all in this collective call anyway. A rank
// that gets MPI_COMM_NULL (not a member) makes none.
static int adopted(int rc, MPI_Comm *newcomm) {
  if (rc == MPI_SUCCESS && newcomm) mpi::adopt(*newcomm);
  return rc;
}

HCOPS_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_dup(comm, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_dup_with_info(comm, info, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
  return adopted(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                                 MPI_Comm *newcomm) {
  return adopted(PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
  return adopted(PMPI_Cart_sub(comm, remain_dims, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
                                  MPI_Comm *newcomm) {
  return adopted(PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Dist_graph_create(MPI_Comm comm, int n, const int nodes[], const int degrees[],
                                       const int targets[], const int weights[], MPI_Info info, int reorder,
                                       MPI_Comm *newcomm) {
  return adopted(PMPI_Dist_graph_create(comm, n, nodes, degrees, targets, weights, info, reorder, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[],
                                                const int sourceweights[], int outdegree, const int destinations[],
                                                const int destweights[], MPI_Info info, int reorder,
                                                MPI_Comm *newcomm) {
  return adopted(PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                                 destweights, info, reorder, newcomm),
                 newcomm);
}

HCOPS_EXPORT int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm bridge_comm, int remote_leader,
                                      int tag, MPI_Comm *newcomm) {
  return adopted(PMPI_Intercomm_create(local_comm, local_leader, bridge_comm, remote_leader, tag, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newcomm) {
  return adopted(PMPI_Intercomm_merge(intercomm, high, newcomm), newcomm);
}

HCOPS_EXPORT int MPI_Comm_free(MPI_Comm *comm) {
  if (comm) mpi::forget_comm(*comm);
  return PMPI_Comm_free(comm);
}

HCOPS_EXPORT int MPI_Comm_disconnect(MPI_Comm *comm) {
  if (comm) mpi::forget_comm(*comm);
  return PMPI_Comm_disconnect(comm);
}

}  // extern "C"
