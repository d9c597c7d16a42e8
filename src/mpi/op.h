// An offloaded collective, as the engine (engine.cpp: starts it, hands its
// request to the application, accounts for it) and the worker (worker.cpp:
// drives it to completion) share it.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <string>

namespace hcops {
namespace mpi {

inline double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// The private duplicate of an application communicator (see adopt()).
struct Shadow {
  MPI_Comm comm = MPI_COMM_NULL;
  int pending = 0;  // offloaded operations not finished; guarded by the engine's reg_mu
  int client = 0;   // how many of them are a client's (offload())
};

// What HCOPS_MPI_VERBOSE=2 prints of an op (op_log.h); made only at that level.
struct OpLog {
  std::string call;
  int ranks = 0, count = 0;
  std::string type;
  const char *op = "";
  double launched = 0, done = 0;         // now() when the collective started and finished
  std::atomic<long long> exposed_ns{0};  // time the application was blocked on it (Watch)
};

// A client's operation (engine.h's offload()): what starts it on the
// shadow communicator, and what is told of its completion.
using StartFn = int (*)(void *arg, MPI_Comm shadow, MPI_Request *request);
using DoneFn = void (*)(void *arg, int error);

struct Op {
  MPI_Request inner = MPI_REQUEST_NULL;  // the PMPI collective on the shadow communicator
  MPI_Request outer = MPI_REQUEST_NULL;  // the generalized request the application holds
  Shadow *shadow = nullptr;
  std::atomic<bool> done{false};
  // Nonblocking ops are owned by finish() and by the generalized request
  // (free_fn): whichever lets go last deletes the op.
  std::atomic<int> refs{1};
  // free_fn is to run once, but an MPI may call it from both the freeing and
  // the completing thread (Open MPI 5's greq_user_freed path).
  std::atomic<bool> freed{false};
  std::atomic<bool> seen_running{false};  // a completion call found it unfinished (statistics)
  int error = MPI_SUCCESS;
  std::size_t bytes = 0;
  OpLog *log = nullptr;
  // A client's op: called by finish() instead of completing a request; the
  // op has no other owner and goes with it.
  DoneFn on_done = nullptr;
  void *done_arg = nullptr;

  Op() = default;
  Op(const Op &) = delete;
  Op &operator=(const Op &) = delete;
  ~Op() { delete log; }
};

// Called by the worker when the collective of `op` has completed with
// `error`: completes the application's request and wakes its waiters. `op`
// may be gone on return.
void finish(Op *op, int error);

}  // namespace mpi
}  // namespace hcops
