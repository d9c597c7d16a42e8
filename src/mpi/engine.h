// The asynchronous progress engine of libhcops_mpi: collectives are started
// by the application's thread (so every communicator keeps the application's
// order on every rank) on a shadow duplicate of the communicator, then driven
// to completion by progress threads pinned to dedicated cores, which call
// PMPI_Testsome until done. Shadows are made eagerly, inside the calls that
// create communicators (adopt), where every member already takes part in a
// blocking collective: made lazily at the first offloaded collective, a
// blocking duplicate could wait on ranks blocked elsewhere, and a
// nonblocking one (Comm_idup) runs its own rounds on the parent at times
// that differ from rank to rank, interleaving with the application's
// collectives there. Requests handed back to the application are MPI
// generalized requests, completed by the progress thread, so every MPI
// completion call works on them. This is the interface shim/mpi's wrappers
// call (engine.cpp); the threads are worker.h's, their CPUs cores.h's.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "mpi/op.h"

namespace hcops {
namespace mpi {

// Called from the wrapped MPI_Init/MPI_Init_thread after PMPI_Init_thread
// gave `provided`; returns false when the engine cannot run (then every call
// passes through untouched).
bool start(int provided);

// MPI_Iallreduce offloaded: the request for the application, or false when
// the call should pass through.
bool iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request *request, int *rc);
// MPI_Allreduce offloaded; the caller sleeps instead of spinning. False:
// pass through (engine off, or smaller than HCOPS_MPI_OFFLOAD_MIN).
bool allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, int *rc);

// An operation of a client in this process (the torch.distributed backend,
// through hcops_mpi.h): `start(arg, shadow, &request)` starts it on the
// private duplicate of `comm`, on the caller's thread (so every
// communicator keeps the caller's order on every rank); a progress thread
// drives the request to completion and then calls `done(arg, error)`.
// `call`, `count`, `type` and `mop` (MPI_OP_NULL: none) describe it in
// HCOPS_MPI_VERBOSE. False when the engine is off or `comm` was not
// adopted: the caller runs the operation itself. True with *rc the start's
// error (done is then never called) or MPI_SUCCESS.
bool offload(MPI_Comm comm, const char *call, int count, MPI_Datatype type, MPI_Op mop, StartFn start, DoneFn done,
             void *arg, int *rc);

// A client waited `seconds` for offloaded operations still running: exposed
// communication time in HCOPS_MPI_VERBOSE's account.
void exposed(double seconds);

// Blocks (without spinning) until every request of `reqs` that is one of
// ours has completed; `any`: until at least one has, if all active ones are
// ours (else returns at once). The caller then calls the PMPI completion
// function on the whole array.
void await(int n, const MPI_Request *reqs, bool any);

// Around an MPI completion call (Wait or Test family) on `reqs`: if one is
// an offloaded collective still running at entry, the call's duration is
// exposed communication time (HCOPS_MPI_VERBOSE), also each such
// collective's own at level 2.
class Watch {
 public:
  Watch(int n, const MPI_Request *reqs);
  ~Watch();
  Watch(const Watch &) = delete;
  Watch &operator=(const Watch &) = delete;

 private:
  double t0_ = -1;
  std::vector<Op *> ops_;  // HCOPS_MPI_VERBOSE=2: the running ones, each with a reference
};

// After a call that created `comm` (collective over its members): makes its
// shadow, so that its allreduces can be offloaded. Collectives on a
// communicator made otherwise (MPI_Comm_idup, spawn, connect/accept) pass
// through.
void adopt(MPI_Comm comm);

// Before PMPI_Comm_free or PMPI_Comm_disconnect: waits for the communicator's offloaded work and
// frees its shadow.
void forget_comm(MPI_Comm comm);
// Before PMPI_Finalize: drains everything, stops the threads, frees shadows,
// and prints HCOPS_MPI_VERBOSE statistics.
void stop();

// The application's requested thread level (MPI_Query_thread).
extern int app_thread_level;

}  // namespace mpi
}  // namespace hcops
