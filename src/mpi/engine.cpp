// The engine of libhcops_mpi: starts offloaded allreduces on shadow
// communicators, hands the application generalized requests for them, waits
// on them without spinning, keeps the statistics of HCOPS_MPI_VERBOSE, and
// tears everything down at MPI_Finalize. Which CPUs the progress threads
// take is cores.cpp's business; what they do, worker.cpp's.
#include "mpi/engine.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/env.h"
#include "common/fp_env.h"
#include "common/log.h"
#include "mpi/cores.h"
#include "mpi/op.h"
#include "mpi/op_log.h"
#include "mpi/worker.h"

namespace hcops {
namespace mpi {

int app_thread_level = MPI_THREAD_SINGLE;

namespace {

// HCOPS_MPI_NAP_MAX's default, in microseconds (worker.cpp; measured in
// doc/mpi.md).
constexpr long kDefaultNapMaxUs = 1000;

struct Engine {
  bool on = false;
  std::vector<Worker *> workers;
  std::atomic<unsigned> next_worker{0};
  std::size_t offload_min = 64 << 10;
  int verbose = 0, rank = 0;
  std::string cores_text;

  // Completion: ops are marked done under `done_mu` and waiters woken.
  std::mutex done_mu;
  std::condition_variable done_cv;

  std::mutex reg_mu;  // guards the maps below, Shadow::pending and the in-flight interval
  std::unordered_map<MPI_Request, Op *> by_request;  // outer request -> op
  std::map<MPI_Comm, Shadow *> shadows;              // application comm -> duplicate

  // Statistics (HCOPS_MPI_VERBOSE). In flight: wall time with at least one
  // offloaded op running. Exposed: time the application spent blocked on
  // running offloaded ops (completion calls, blocking allreduce, draining).
  int running = 0;
  double running_since = 0;
  std::atomic<long> n_nonblocking{0}, n_blocking{0}, n_unadopted{0}, n_seen_running{0}, n_client{0};
  std::atomic<std::size_t> client_bytes{0};
  std::atomic<std::size_t> bytes{0};
  std::atomic<long long> in_flight_ns{0}, exposed_ns{0};
};
Engine *engine = new Engine;  // never destroyed: MPI_Finalize may run from atexit

void expose(double since) { engine->exposed_ns += static_cast<long long>((now() - since) * 1e9); }

// ---- generalized-request callbacks ----
int query_fn(void *extra, MPI_Status *status) {
  const Op *op = static_cast<const Op *>(extra);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = op->error;
  return MPI_SUCCESS;
}

// Nonblocking ops only; the last reference prints the op's line at
// HCOPS_MPI_VERBOSE=2, its exposure then complete.
void release(Op *op) {
  if (op->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (op->log && op->log->launched > 0) log_op(engine->rank, op, op->log->exposed_ns.load() * 1e-9);
  delete op;
}

// Runs when the request is both complete and freed by the application.
int free_fn(void *extra) {
  Op *op = static_cast<Op *>(extra);
  if (op->freed.exchange(true, std::memory_order_acq_rel)) return MPI_SUCCESS;
  {
    // The handle may already name a newer request of ours (MPI reuses
    // handles, and may run free_fn late, from the completing thread).
    std::lock_guard<std::mutex> g(engine->reg_mu);
    auto it = engine->by_request.find(op->outer);
    if (it != engine->by_request.end() && it->second == op) engine->by_request.erase(it);
  }
  release(op);
  return MPI_SUCCESS;
}

// A started collective cannot be cancelled (MPI_Cancel on one is erroneous).
int cancel_fn(void *, int) { return MPI_SUCCESS; }

}  // namespace

void finish(Op *op, int error) {
  if (op->log) op->log->done = now();
  op->error = error;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    --op->shadow->pending;
    if (op->on_done) --op->shadow->client;
    if (--engine->running == 0) engine->in_flight_ns += static_cast<long long>((now() - engine->running_since) * 1e9);
  }
  if (op->on_done) {  // a client's: nobody waits on it here
    if (op->log) log_op(engine->rank, op, -1);
    op->on_done(op->done_arg, error);
    delete op;
    return;
  }
  const MPI_Request outer = op->outer;
  // The generalized request is completed before the waiters wake: a waiter
  // whose PMPI_Wait found it still pending would spin in opal_progress and,
  // on a core it shares with this thread, hold it off until the next tick
  // (milliseconds per MPI_Wait). May run free_fn (the application may have
  // freed the request, or be testing it): our reference keeps op alive.
  if (outer != MPI_REQUEST_NULL) PMPI_Grequest_complete(outer);
  {
    std::lock_guard<std::mutex> g(engine->done_mu);
    op->done.store(true, std::memory_order_release);
  }
  engine->done_cv.notify_all();
  // A blocking op belongs to its caller, who deletes it once done is set.
  if (outer != MPI_REQUEST_NULL) release(op);
}

namespace {

void hand_off(Op *op) { submit(engine->workers[engine->next_worker++ % engine->workers.size()], op); }

Shadow *shadow_of(MPI_Comm comm) {
  std::lock_guard<std::mutex> g(engine->reg_mu);
  auto it = engine->shadows.find(comm);
  return it == engine->shadows.end() ? nullptr : it->second;
}

// An error of the collective on the shadow, handled as the application's
// communicator says (MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns).
int raise_on(MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

std::size_t bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) size = 0;
  return static_cast<std::size_t>(count < 0 ? 0 : count) * static_cast<std::size_t>(size);
}

struct Iallreduce {
  const void *sendbuf;
  void *recvbuf;
  int count;
  MPI_Datatype type;
  MPI_Op op;
};

int start_iallreduce(void *arg, MPI_Comm comm, MPI_Request *request) {
  const Iallreduce *a = static_cast<const Iallreduce *>(arg);
  return PMPI_Iallreduce(a->sendbuf, a->recvbuf, a->count, a->type, a->op, comm, request);
}

// Starts the operation on `sh` in the caller's thread (so the shadow sees
// the application's order) and hands it to a progress thread, which may
// finish it (and, for a client's, delete it) before this returns.
int launch(Op *op, Shadow *sh, StartFn start, void *arg) {
  op->shadow = sh;
  const int rc = start(arg, sh->comm, &op->inner);
  if (rc != MPI_SUCCESS) return rc;
  if (op->log) op->log->launched = now();
  (op->on_done ? engine->client_bytes : engine->bytes) += op->bytes;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    ++sh->pending;
    if (op->on_done) ++sh->client;
    if (engine->running++ == 0) engine->running_since = now();
  }
  hand_off(op);
  return MPI_SUCCESS;
}

void wait_done(const std::vector<Op *> &ops, bool any) {
  if (ops.empty()) return;
  // This thread's core is idle meanwhile: the progress threads stop napping
  // long (worker.cpp).
  waiting_begin(engine->workers);
  {
    std::unique_lock<std::mutex> lk(engine->done_mu);
    engine->done_cv.wait(lk, [&] {
      for (Op *op : ops) {
        const bool d = op->done.load(std::memory_order_acquire);
        if (any && d) return true;
        if (!any && !d) return false;
      }
      return !any;
    });
  }
  waiting_end();
}

// Until no offloaded collective of `sh` is left unfinished.
void drain(Shadow *sh) {
  const double t0 = now();
  for (bool first = true;; first = false) {
    {
      std::lock_guard<std::mutex> g(engine->reg_mu);
      if (first) engine->n_seen_running += sh->pending - sh->client;  // the application's only
      if (sh->pending == 0) break;
    }
    std::unique_lock<std::mutex> lk(engine->done_mu);
    engine->done_cv.wait_for(lk, std::chrono::milliseconds(1));
  }
  expose(t0);
}

// A forked child has no progress threads, and the parent's locks may have
// been held at the fork: it starts over with the engine off (MPI is not
// usable in such a child anyway, but its MPI_Finalize must not hang).
void forked_child() { engine = new Engine; }

bool start_threads(int provided) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) CPU_SET(0, &mask);
  const int sharer = rank_among_sharers(mask);  // collective: before any rank may return
  if (env_long("HCOPS_MPI", 1, 0, 1) == 0) return false;
  if (provided < MPI_THREAD_MULTIPLE) {
    warn_once("mpi level",
              "this MPI provides no MPI_THREAD_MULTIPLE (level %d); libhcops_mpi passes every call through", provided);
    return false;
  }
  std::vector<int> cpus = progress_cpus(mask, sharer, &engine->cores_text);
  if (cpus.empty()) cpus.push_back(-1);
  // Keep this thread, and the threads it creates later (OpenMP's), off the
  // progress cores, SMT siblings included, if any core is left. Threads
  // that exist already keep their affinity.
  bool own_core = false;
  if (env_long("HCOPS_MPI_EXCLUSIVE", 0, 0, 1) == 1) {
    cpu_set_t rest = mask;
    for (int c : cpus)
      if (c >= 0) clear_core(c, rest);
    if (CPU_COUNT(&rest) > 0) own_core = sched_setaffinity(0, sizeof rest, &rest) == 0;
    else warn_once("mpi exclusive", "HCOPS_MPI_EXCLUSIVE=1 would leave no CPU for computing; ignored");
  }
  const long nap_max_ns = 1000 * env_long("HCOPS_MPI_NAP_MAX", kDefaultNapMaxUs, kNapMinNs / 1000, 100000);
  for (int c : cpus)
    if (Worker *w = start_worker(c, own_core && c >= 0, nap_max_ns)) engine->workers.push_back(w);
  if (engine->workers.empty()) {
    warn_once("mpi thread", "cannot start an MPI progress thread; libhcops_mpi passes every call through");
    return false;
  }
  return true;
}

void stop_threads() {
  for (Worker *w : engine->workers) stop_worker(w);
  engine->workers.clear();
}

std::string describe() {
  std::string s;
  for (const Worker *w : engine->workers) s += (s.empty() ? "" : ",") + std::to_string(worker_cpu(w));
  return (s.empty() ? std::string("none") : s) + " (HCOPS_MPI_CORES=" + engine->cores_text + ")";
}

}  // namespace

bool start(int provided) {
  if (engine->on) return true;
  KeepFpEnv keep;
  engine->verbose = static_cast<int>(env_long("HCOPS_MPI_VERBOSE", 0, 0, 2));
  engine->offload_min = static_cast<std::size_t>(env_long("HCOPS_MPI_OFFLOAD_MIN", 64 << 10, 0, 1L << 40));
  PMPI_Comm_rank(MPI_COMM_WORLD, &engine->rank);
  int up = start_threads(provided) ? 1 : 0;
  // Every rank runs with the engine or none does: adopt() is collective,
  // and a rank whose environment or MPI said otherwise would leave the
  // others waiting in it.
  int all_up = up;
  if (PMPI_Allreduce(&up, &all_up, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) all_up = 0;
  if (up && !all_up) {
    warn_once("mpi ranks",
              "libhcops_mpi is off on another rank (HCOPS_MPI, thread level or threads); it passes "
              "every call through on all ranks");
    stop_threads();
  }
  if (!all_up) return false;
  // Whether an MPI_Allreduce is offloaded (run on the shadow) or passed
  // through (run on the original) depends on this threshold: ranks that
  // disagreed would wait in different collectives forever.
  unsigned long long min = engine->offload_min, agreed = min;
  PMPI_Bcast(&agreed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  if (agreed != min)
    warn_once("mpi offload min", "HCOPS_MPI_OFFLOAD_MIN differs between ranks; rank %d uses rank 0's %llu bytes",
              engine->rank, agreed);
  engine->offload_min = static_cast<std::size_t>(agreed);
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, [] { pthread_atfork(nullptr, nullptr, forked_child); });
  engine->on = true;
  if (engine->verbose >= 2) log_legend();
  adopt(MPI_COMM_WORLD);
  adopt(MPI_COMM_SELF);
  return true;
}

// The shadow is made with PMPI_Comm_create over the communicator's whole
// group rather than PMPI_Comm_dup, which would run the application's
// attribute copy callbacks (and, at free, its delete callbacks) on a
// communicator it never sees; an intercommunicator, which Comm_create would
// cut to its local side's view, is duplicated.
void adopt(MPI_Comm comm) {
  if (!engine->on || comm == MPI_COMM_NULL) return;
  KeepFpEnv keep;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Comm dup = MPI_COMM_NULL;
  int rc;
  if (inter) {
    rc = PMPI_Comm_dup(comm, &dup);
  } else {
    MPI_Group group;
    PMPI_Comm_group(comm, &group);
    rc = PMPI_Comm_create(comm, group, &dup);
    PMPI_Group_free(&group);
  }
  if (rc != MPI_SUCCESS || dup == MPI_COMM_NULL) return;  // collectives on comm pass through
  PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);       // raised on the application's communicator (raise_on)
  Shadow *sh = new Shadow;
  sh->comm = dup;
  std::lock_guard<std::mutex> g(engine->reg_mu);
  engine->shadows[comm] = sh;
}

// An op for a call on `comm` and the shadow it runs on; nullptr when the
// communicator was not adopted (the call then goes to MPI unchanged).
static Op *new_op(MPI_Comm comm, bool blocking, int count, MPI_Datatype type, MPI_Op mop, Shadow *&sh) {
  sh = shadow_of(comm);
  if (!sh) {
    ++engine->n_unadopted;
    return nullptr;
  }
  Op *op = new Op;
  op->bytes = bytes_of(count, type);
  if (engine->verbose >= 2) log_describe(op, blocking ? "allreduce" : "iallreduce", count, type, mop, sh->comm);
  return op;
}

static bool iallreduce_guarded(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop,
                               MPI_Comm comm, MPI_Request *request, int *rc) {
  if (!engine->on || comm == MPI_COMM_NULL) return false;
  KeepFpEnv keep;
  Shadow *sh = nullptr;
  Op *op = new_op(comm, false, count, type, mop, sh);
  if (!op) return false;
  // The generalized request exists before the progress thread can finish
  // the collective: finish() completes it.
  *rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, op, &op->outer);
  if (*rc != MPI_SUCCESS) {
    delete op;
    return true;
  }
  op->refs.store(2, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    engine->by_request[op->outer] = op;
  }
  Iallreduce args{sendbuf, recvbuf, count, type, mop};
  *rc = launch(op, sh, start_iallreduce, &args);
  if (*rc != MPI_SUCCESS) {  // nothing started: the request goes, as if never made
    MPI_Request outer = op->outer;
    PMPI_Grequest_complete(outer);
    PMPI_Request_free(&outer);  // free_fn drops its reference
    release(op);
    return true;
  }
  ++engine->n_nonblocking;
  *request = op->outer;
  return true;
}

static bool allreduce_guarded(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop,
                              MPI_Comm comm, int *rc) {
  if (!engine->on || comm == MPI_COMM_NULL) return false;
  KeepFpEnv keep;
  int size = 0;
  PMPI_Type_size(type, &size);
  if (static_cast<std::size_t>(count) * static_cast<std::size_t>(size) < engine->offload_min) return false;
  Shadow *sh = nullptr;
  Op *op = new_op(comm, true, count, type, mop, sh);
  if (!op) return false;
  Iallreduce args{sendbuf, recvbuf, count, type, mop};
  *rc = launch(op, sh, start_iallreduce, &args);
  if (*rc == MPI_SUCCESS) {
    const double t0 = now();  // in flight from here (launch)
    ++engine->n_blocking;
    ++engine->n_seen_running;
    wait_done({op}, false);
    expose(t0);
    *rc = op->error;
    if (op->log) log_op(engine->rank, op, op->log->done - op->log->launched);  // the caller waited throughout
  }
  delete op;
  return true;
}

// The application's error handler (raise_on) runs outside the guard: what
// it does to the floating-point environment is the application's.
bool iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm,
                MPI_Request *request, int *rc) {
  *rc = MPI_SUCCESS;
  if (!iallreduce_guarded(sendbuf, recvbuf, count, type, mop, comm, request, rc)) return false;
  raise_on(comm, *rc);
  return true;
}

bool allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm, int *rc) {
  *rc = MPI_SUCCESS;
  if (!allreduce_guarded(sendbuf, recvbuf, count, type, mop, comm, rc)) return false;
  raise_on(comm, *rc);
  return true;
}

bool offload(MPI_Comm comm, const char *call, int count, MPI_Datatype type, MPI_Op mop, StartFn start, DoneFn done,
             void *arg, int *rc) {
  *rc = MPI_SUCCESS;
  if (!engine->on || comm == MPI_COMM_NULL || !start || !done) return false;
  KeepFpEnv keep;
  Shadow *sh = shadow_of(comm);
  if (!sh) return false;  // (n_unadopted counts the application's allreduces)
  Op *op = new Op;
  op->on_done = done;
  op->done_arg = arg;
  op->bytes = bytes_of(count, type);
  if (engine->verbose >= 2) log_describe(op, call ? call : "client", count, type, mop, sh->comm);
  *rc = launch(op, sh, start, arg);  // on success op may be gone already
  if (*rc != MPI_SUCCESS) {
    delete op;
    return true;
  }
  ++engine->n_client;
  return true;
}

void exposed(double seconds) {
  if (engine->on && seconds > 0) engine->exposed_ns += static_cast<long long>(seconds * 1e9);
}

void await(int n, const MPI_Request *reqs, bool any) {
  if (!engine->on || n <= 0) return;
  KeepFpEnv keep;
  std::vector<Op *> ours;
  int active = 0;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    for (int i = 0; i < n; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      ++active;
      auto it = engine->by_request.find(reqs[i]);
      if (it != engine->by_request.end()) ours.push_back(it->second);
    }
  }
  if (any && static_cast<int>(ours.size()) != active) return;  // a native one may finish first
  wait_done(ours, any);
}

namespace {
thread_local double last_exposed_end = -1;
}

Watch::Watch(int n, const MPI_Request *reqs) {
  if (!engine->on || n <= 0 || !reqs) return;
  KeepFpEnv keep;
  // Taken first: in a tight MPI_Test loop the lookup below is a good part
  // of each call.
  const double t0 = now();
  bool running = false;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    if (engine->by_request.empty()) return;
    for (int i = 0; i < n; ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      auto it = engine->by_request.find(reqs[i]);
      if (it == engine->by_request.end() || it->second->done.load(std::memory_order_acquire)) continue;
      running = true;
      Op *op = it->second;
      if (!op->seen_running.exchange(true, std::memory_order_relaxed)) ++engine->n_seen_running;
      if (op->log) {  // free_fn, which drops a reference, erases it from by_request first
        op->refs.fetch_add(1, std::memory_order_relaxed);
        ops_.push_back(op);
      }
    }
  }
  // A gap of a few microseconds since this thread's last exposed call is
  // the polling loop's own overhead (a sizable share of a cheap MPI_Test),
  // not computation: it counts too.
  if (running) t0_ = t0 - last_exposed_end < 10e-6 ? last_exposed_end : t0;
}

Watch::~Watch() {
  if (t0_ < 0) return;
  KeepFpEnv keep;
  last_exposed_end = now();
  engine->exposed_ns += static_cast<long long>((last_exposed_end - t0_) * 1e9);
  // Each op's share: the part of this call during which it was in flight.
  for (Op *op : ops_) {
    const double from = std::max(t0_, op->log->launched);
    const double to =
        op->done.load(std::memory_order_acquire) ? std::min(last_exposed_end, op->log->done) : last_exposed_end;
    if (to > from) op->log->exposed_ns += static_cast<long long>((to - from) * 1e9);
    release(op);
  }
}

void forget_comm(MPI_Comm comm) {
  if (!engine->on) return;
  KeepFpEnv keep;
  Shadow *sh = nullptr;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    auto it = engine->shadows.find(comm);
    if (it == engine->shadows.end()) return;
    sh = it->second;
    engine->shadows.erase(it);
  }
  drain(sh);  // the application may free a communicator with requests outstanding
  PMPI_Comm_free(&sh->comm);
  delete sh;
}

void stop() {
  if (!engine->on) return;
  KeepFpEnv keep;
  const std::string cpus = describe();
  std::map<MPI_Comm, Shadow *> all;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    all.swap(engine->shadows);
  }
  for (auto &kv : all) drain(kv.second);
  stop_threads();
  for (auto &kv : all) {
    PMPI_Comm_free(&kv.second->comm);
    delete kv.second;
  }
  engine->on = false;
  if (engine->verbose) {
    // Several application threads may be blocked at once: exposure is capped
    // at the in-flight time it overlaps.
    const double flight = engine->in_flight_ns.load() * 1e-9;
    const double exposed = std::min(flight, engine->exposed_ns.load() * 1e-9);
    const long total = engine->n_nonblocking.load() + engine->n_blocking.load();
    print_line(
        "hcops_mpi: rank %d: %ld allreduce offloaded (%ld nonblocking, %ld blocking), %.1f MiB; in flight "
        "%.3f s, exposed %.3f s (%.0f%% hidden); %ld done before the application waited for them; %ld "
        "passed through on communicators made without the wrapper; progress CPU(s) %s",
        engine->rank, total, engine->n_nonblocking.load(), engine->n_blocking.load(), engine->bytes.load() / 1048576.0,
        flight, exposed, flight > 0 ? 100.0 * (flight - exposed) / flight : 0.0,
        std::max(0L, total - engine->n_seen_running.load()), engine->n_unadopted.load(), cpus.c_str());
    if (engine->n_client.load() > 0)
      print_line("hcops_mpi: rank %d: %ld operations offloaded for torch.distributed, %.1f MiB", engine->rank,
                 engine->n_client.load(), engine->client_bytes.load() / 1048576.0);
  }
}

}  // namespace mpi
}  // namespace hcops
