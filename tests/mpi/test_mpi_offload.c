/* hcops_mpi.h: a client's nonblocking operations offloaded to libhcops_mpi's
 * progress threads (the interface of the torch.distributed backend). Linked
 * against libhcops_mpi, run by test_mpi_offload.sh.
 *
 *   mpirun -np N ./test_mpi_offload [passthrough]
 *
 * Rounds of operations of every kind the backend uses (broadcast, allgather,
 * alltoall, reduce_scatter, reduce, allreduce, barrier, send and receive
 * around a ring), 1 MiB and more, launched together and then left alone:
 * the main thread makes no MPI call until each one's completion callback has
 * run (so only the progress threads can have moved them), with a deadline.
 * Every result is checked against values computed locally; the callbacks
 * must run on another thread than main's, once each; a start that fails
 * (a broadcast's root out of range) must return its error and never call
 * back. "passthrough" (with HCOPS_MPI=0): hcops_mpi_offload must decline
 * every operation, which the program then runs itself, as a client does.
 * Prints "test_mpi_offload on N ranks: C checks, F failed" (rank 0).
 */
#define _GNU_SOURCE
#include "hcops_mpi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_check.h"

static int rank, nranks;
static long checks, failures;
static pthread_t main_thread;
static atomic_long callbacks; /* every callback, late or repeated ones included */

enum kind { BCAST, ALLGATHER, ALLTOALL, REDUCE_SCATTER, REDUCE, ALLREDUCE, BARRIER, SEND, RECV, KINDS };
static const char *kind_names[KINDS] = {"broadcast", "allgather", "alltoall", "reduce_scatter", "reduce",
                                        "allreduce", "barrier",   "send",     "recv"};

/* One operation: its buffers, and what its callback recorded. */
struct op {
  enum kind kind;
  int n;    /* elements per rank (per block) */
  int root; /* broadcast and reduce; the tag of send/recv */
  int seed;
  int64_t *send, *recv;
  MPI_Request req; /* declined: the request the program runs itself */
  atomic_int calls;
  atomic_int error;
  atomic_int on_main;
};

static int peer_next(void) { return (rank + 1) % nranks; }
static int peer_prev(void) { return (rank + nranks - 1) % nranks; }

/* The value rank r contributes at index i of operation seed s. */
static int64_t value(int r, long i, int s) { return (int64_t)(r + 1) * 1000003 + i * 7 + s; }

/* The PMPI entry points, as a client calls them: through MPI_Iallreduce the
 * wrapper would see a call on a communicator it did not make (the shadow). */
static int start(void *arg, MPI_Comm comm, MPI_Request *req) {
  struct op *o = arg;
  switch (o->kind) {
    case BCAST: return PMPI_Ibcast(o->recv, o->n, MPI_INT64_T, o->root, comm, req);
    case ALLGATHER: return PMPI_Iallgather(o->send, o->n, MPI_INT64_T, o->recv, o->n, MPI_INT64_T, comm, req);
    case ALLTOALL: return PMPI_Ialltoall(o->send, o->n, MPI_INT64_T, o->recv, o->n, MPI_INT64_T, comm, req);
    case REDUCE_SCATTER: return PMPI_Ireduce_scatter_block(o->send, o->recv, o->n, MPI_INT64_T, MPI_SUM, comm, req);
    case REDUCE: return PMPI_Ireduce(o->send, o->recv, o->n, MPI_INT64_T, MPI_MAX, o->root, comm, req);
    case ALLREDUCE: return PMPI_Iallreduce(MPI_IN_PLACE, o->recv, o->n, MPI_INT64_T, MPI_SUM, comm, req);
    case BARRIER: return PMPI_Ibarrier(comm, req);
    case SEND: return PMPI_Isend(o->send, o->n, MPI_INT64_T, peer_next(), o->root, comm, req);
    case RECV: return PMPI_Irecv(o->recv, o->n, MPI_INT64_T, peer_prev(), o->root, comm, req);
    default: return MPI_ERR_OTHER;
  }
}

static void done(void *arg, int error) {
  struct op *o = arg;
  atomic_store(&o->error, error);
  atomic_store(&o->on_main, pthread_equal(pthread_self(), main_thread) ? 1 : 0);
  atomic_fetch_add(&o->calls, 1);
  atomic_fetch_add(&callbacks, 1);
}

static void prepare(struct op *o, enum kind kind, int n, int seed) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->n = n;
  o->seed = seed;
  o->req = MPI_REQUEST_NULL;
  o->root = kind == SEND || kind == RECV ? seed : seed % nranks;
  const long total = (long)n * nranks;
  o->send = malloc(sizeof(int64_t) * (size_t)total);
  o->recv = malloc(sizeof(int64_t) * (size_t)total);
  for (long i = 0; i < total; ++i) {
    o->send[i] = value(rank, i, seed);
    o->recv[i] = kind == ALLREDUCE ? value(rank, i, seed) : (kind == BCAST && rank == o->root ? value(rank, i, seed) : -1);
  }
}

/* The result of operation o (seed s) on this rank, checked element by
 * element (first mismatch reported). */
static void verify(const struct op *o) {
  const int s = o->seed;
  long bad = -1;
  int64_t want = 0;
  for (long i = 0; i < o->n && bad < 0; ++i) {
    switch (o->kind) {
      case BCAST:
        want = value(o->root, i, s);
        if (o->recv[i] != want) bad = i;
        break;
      case ALLGATHER:
        for (int r = 0; r < nranks && bad < 0; ++r)
          if (o->recv[(long)r * o->n + i] != (want = value(r, i, s))) bad = (long)r * o->n + i;
        break;
      case ALLTOALL: /* block r of the result: rank r's block `rank` */
        for (int r = 0; r < nranks && bad < 0; ++r)
          if (o->recv[(long)r * o->n + i] != (want = value(r, (long)rank * o->n + i, s))) bad = (long)r * o->n + i;
        break;
      case REDUCE_SCATTER:
        want = 0;
        for (int r = 0; r < nranks; ++r) want += value(r, (long)rank * o->n + i, s);
        if (o->recv[i] != want) bad = i;
        break;
      case REDUCE:
        if (rank != o->root) return;
        want = value(nranks - 1, i, s); /* the largest rank's values are the largest */
        if (o->recv[i] != want) bad = i;
        break;
      case ALLREDUCE:
        want = 0;
        for (int r = 0; r < nranks; ++r) want += value(r, i, s);
        if (o->recv[i] != want) bad = i;
        break;
      case RECV:
        want = value(peer_prev(), i, s);
        if (o->recv[i] != want) bad = i;
        break;
      default: return;
    }
  }
  CHECK(bad < 0, "%s (seed %d, %d elements): element %ld is %lld, expected %lld", kind_names[o->kind], s, o->n, bad,
        bad < 0 ? 0LL : (long long)o->recv[bad], (long long)want);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Launches `count` operations of every kind in turn on comm, then waits for
 * their callbacks without any MPI call (offloaded) or runs them itself
 * (declined), and checks them. */
static long expected_callbacks;

static void round_of(MPI_Comm comm, int count, int n, int seed, int passthrough) {
  expected_callbacks += count;
  struct op *ops = calloc((size_t)count, sizeof *ops);
  int offloaded = 0, declined = 0;
  for (int i = 0; i < count; ++i) {
    struct op *o = &ops[i];
    const enum kind kind = (enum kind)(i % KINDS);
    /* A receive takes the size, seed and tag of the send before it. */
    const int j = kind == RECV ? i - 1 : i;
    prepare(o, kind, n + j, seed + j);
    int rc = -1;
    const int took = hcops_mpi_offload(comm, kind_names[kind], o->n, MPI_INT64_T, MPI_OP_NULL, start, done, o, &rc);
    if (took) {
      ++offloaded;
      CHECK(rc == MPI_SUCCESS, "%s: offloaded with error %d", kind_names[kind], rc);
    } else {
      ++declined;
      CHECK(start(o, comm, &o->req) == MPI_SUCCESS, "%s: declined, then failed to start", kind_names[kind]);
    }
  }
  /* The declined ones, run by the program as a client would. */
  for (int i = 0; i < count; ++i)
    if (ops[i].req != MPI_REQUEST_NULL) {
      MPI_Wait(&ops[i].req, MPI_STATUS_IGNORE);
      done(&ops[i], MPI_SUCCESS);
    }
  CHECK(passthrough ? offloaded == 0 : declined == 0, "%d offloaded, %d declined (passthrough %d)", offloaded,
        declined, passthrough);
  /* No MPI call here: only the progress threads can complete them. */
  const double deadline = now() + 30;
  for (int i = 0; i < count; ++i)
    while (atomic_load(&ops[i].calls) == 0 && now() < deadline) {
      const struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  for (int i = 0; i < count; ++i) {
    const struct op *o = &ops[i];
    CHECK(atomic_load(&o->calls) == 1, "%s (seed %d): its callback ran %d times within 30 s", kind_names[o->kind],
          seed + i, atomic_load(&o->calls));
    CHECK(atomic_load(&o->error) == MPI_SUCCESS, "%s: completed with error %d", kind_names[o->kind],
          atomic_load(&o->error));
    if (!passthrough) CHECK(!atomic_load(&o->on_main), "%s: its callback ran on the main thread", kind_names[o->kind]);
    if (atomic_load(&o->calls) == 1) verify(o);
  }
  for (int i = 0; i < count; ++i) {
    free(ops[i].send);
    free(ops[i].recv);
  }
  free(ops);
}

int main(int argc, char **argv) {
  const int passthrough = argc > 1 && strcmp(argv[1], "passthrough") == 0;
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  main_thread = pthread_self();
  /* A communicator of the client's own, as the backend makes one per group. */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

  /* A receive on comm itself for the first round's send (tag 1 + SEND):
   * offloaded, that send goes over the shadow and must not match it. */
  int64_t stray = 0;
  MPI_Request stray_req = MPI_REQUEST_NULL;
  if (!passthrough) MPI_Irecv(&stray, 1, MPI_INT64_T, peer_prev(), 1 + SEND, comm, &stray_req);

  /* Whole rounds of every kind, large (128 Ki elements: 1 MiB a rank) and
   * small, and one of many operations in flight at once. */
  round_of(comm, KINDS, 128 << 10, 1, passthrough);
  round_of(comm, KINDS, 3, 100, passthrough);
  round_of(comm, 12 * KINDS, 4096, 1000, passthrough);

  if (!passthrough) {
    int matched = 1;
    MPI_Test(&stray_req, &matched, MPI_STATUS_IGNORE);
    CHECK(!matched, "an offloaded send matched a receive posted on the application's communicator");
    /* The client's waits, reported: the summary's exposed time (checked by
     * test_mpi_offload.sh) is then not zero. */
    hcops_mpi_exposed(0.002);
    /* A start that fails: its error, and no callback. */
    struct op o;
    prepare(&o, BCAST, 16, 0);
    o.root = nranks; /* out of range */
    int rc = MPI_SUCCESS;
    const int took = hcops_mpi_offload(comm, "broadcast", 16, MPI_INT64_T, MPI_OP_NULL, start, done, &o, &rc);
    CHECK(took == 1 && rc != MPI_SUCCESS, "a broadcast from root %d: offload gave %d, error %d", nranks, took, rc);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(atomic_load(&o.calls) == 0, "the failed broadcast called back %d times", atomic_load(&o.calls));
    free(o.send);
    free(o.recv);
    /* A communicator made behind the wrapper's back is declined. */
    MPI_Comm raw;
    PMPI_Comm_dup(MPI_COMM_WORLD, &raw);
    CHECK(hcops_mpi_offload(raw, "barrier", 0, MPI_DATATYPE_NULL, MPI_OP_NULL, start, done, &o, &rc) == 0,
          "an operation on a communicator made with PMPI_Comm_dup was offloaded");
    PMPI_Comm_free(&raw);
  }

  if (stray_req != MPI_REQUEST_NULL) {
    MPI_Cancel(&stray_req);
    MPI_Wait(&stray_req, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&comm); /* waits for the offloaded operations */
  CHECK(atomic_load(&callbacks) == expected_callbacks, "%ld callbacks for %ld operations", atomic_load(&callbacks),
        expected_callbacks);
  const long failed = mpi_check_summary("test_mpi_offload", checks, failures);
  MPI_Finalize();
  return failed ? 1 : 0;
}
