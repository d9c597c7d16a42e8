#include "progress.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../env.h"
#include "../log.h"
#include "../topology.h"

namespace hcops {
namespace mpi {

int app_thread_level = MPI_THREAD_SINGLE;

namespace {

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

struct Op {
  MPI_Request inner = MPI_REQUEST_NULL;  // the PMPI collective on the shadow communicator
  MPI_Request outer = MPI_REQUEST_NULL;  // the generalized request the application holds
  MPI_Comm shadow = MPI_COMM_NULL;
  std::atomic<bool> done{false};
  int error = MPI_SUCCESS;
  std::size_t bytes = 0;
  double t_start = 0;
};

struct Worker {
  pthread_t thread{};
  int cpu = -1;
  std::mutex mu;
  std::condition_variable wake;
  std::vector<Op *> inbox;
  bool stop = false;
};

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

  std::mutex reg_mu;                                // guards the two maps below
  std::unordered_map<MPI_Request, Op *> by_request;  // outer request -> op
  std::map<MPI_Comm, MPI_Comm> shadows;               // application comm -> duplicate
  std::map<MPI_Comm, int> pending;                    // shadow -> ops in flight

  std::atomic<long> n_nonblocking{0}, n_blocking{0};
  std::atomic<std::size_t> bytes{0};
  std::atomic<long long> in_flight_ns{0}, exposed_ns{0};
};
Engine *engine = new Engine;  // never destroyed: MPI_Finalize may run from atexit

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

// Runs when the request is both complete and freed by the application.
int free_fn(void *extra) {
  Op *op = static_cast<Op *>(extra);
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    engine->by_request.erase(op->outer);
  }
  delete op;
  return MPI_SUCCESS;
}

// A started collective cannot be cancelled (MPI_Cancel on one is erroneous).
int cancel_fn(void *, int) { return MPI_SUCCESS; }

void finish(Op *op, int error) {
  const double dt = now() - op->t_start;
  engine->in_flight_ns += static_cast<long long>(dt * 1e9);
  op->error = error;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    if (--engine->pending[op->shadow] == 0) engine->pending.erase(op->shadow);
  }
  const MPI_Request outer = op->outer;
  {
    std::lock_guard<std::mutex> g(engine->done_mu);
    op->done.store(true, std::memory_order_release);
  }
  engine->done_cv.notify_all();
  // May run free_fn (if the application already freed the request): op is
  // not touched after this.
  if (outer != MPI_REQUEST_NULL) PMPI_Grequest_complete(outer);
}

void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    warn_once("mpi pin", "cannot pin the MPI progress thread to CPU %d", cpu);
}

// Polls its ops with PMPI_Testsome. Open MPI advances nonblocking
// collectives only inside MPI calls, so this thread is what moves them while
// the application computes. It never spins idle: with nothing in flight it
// sleeps; while polling without progress it yields, then naps briefly, so a
// shared core (oversubscription) is not taken from compute.
void *worker_main(void *arg) {
  Worker *w = static_cast<Worker *>(arg);
  pin(w->cpu);
  std::vector<Op *> active;
  std::vector<MPI_Request> reqs;
  std::vector<int> idx;
  std::vector<MPI_Status> st;
  long idle = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(w->mu);
      if (active.empty()) w->wake.wait(lk, [&] { return !w->inbox.empty() || w->stop; });
      active.insert(active.end(), w->inbox.begin(), w->inbox.end());
      w->inbox.clear();
      if (active.empty() && w->stop) break;
    }
    if (active.empty()) continue;
    reqs.resize(active.size());
    idx.resize(active.size());
    st.resize(active.size());
    for (std::size_t i = 0; i < active.size(); ++i) reqs[i] = active[i]->inner;
    int outcount = 0;
    const int rc = PMPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, idx.data(), st.data());
    if (outcount == MPI_UNDEFINED) outcount = 0;
    for (int i = 0; i < outcount; ++i) {
      Op *op = active[idx[i]];
      op->inner = MPI_REQUEST_NULL;
      finish(op, rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc);
      active[idx[i]] = nullptr;
    }
    std::size_t kept = 0;
    for (Op *op : active)
      if (op) active[kept++] = op;
    active.resize(kept);
    if (outcount > 0) {
      idle = 0;
    } else if (++idle > 64) {
      if (idle < 4096) {
        sched_yield();
      } else {
        const timespec nap{0, 20000};
        nanosleep(&nap, nullptr);
      }
    }
  }
  return nullptr;
}

// CPUs for the progress threads: HCOPS_MPI_CORES, a list ("3", "6-7", "2,5")
// or "last" (default): the first PU of the last core of this rank's cpuset.
std::vector<int> progress_cpus(cpu_set_t &mask) {
  std::vector<int> cpus;
  const char *text = env_raw("HCOPS_MPI_CORES");
  engine->cores_text = text ? text : "last";
  if (!text || !strcasecmp(text, "last")) {
    const Topology &t = topology();
    int best = -1;
    if (t.this_system && t.hw) {
      for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(t.hw, HWLOC_OBJ_CORE, core));)
        for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu))
          if (pu < CPU_SETSIZE && CPU_ISSET(pu, &mask)) {
            best = pu;  // first allowed PU of the latest core seen
            break;
          }
    }
    if (best < 0)
      for (int c = CPU_SETSIZE - 1; c >= 0 && best < 0; --c)
        if (CPU_ISSET(c, &mask)) best = c;
    if (best >= 0) cpus.push_back(best);
    return cpus;
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_bitmap_list_sscanf(set, text) != 0 || hwloc_bitmap_iszero(set) || hwloc_bitmap_weight(set) < 0) {
    warn_once("HCOPS_MPI_CORES", "HCOPS_MPI_CORES=\"%s\" is not \"last\" or a CPU list (e.g. 7 or 6-7); using last",
              text);
    hwloc_bitmap_free(set);
    setenv("HCOPS_MPI_CORES", "last", 1);
    return progress_cpus(mask);
  }
  for (int c = hwloc_bitmap_first(set); c >= 0; c = hwloc_bitmap_next(set, c)) cpus.push_back(c);
  hwloc_bitmap_free(set);
  return cpus;
}

MPI_Comm shadow_of(MPI_Comm comm) {
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    auto it = engine->shadows.find(comm);
    if (it != engine->shadows.end()) return it->second;
  }
  // First offloaded collective on `comm`: every rank reaches this point in
  // the same place of comm's collective order, so the duplicate is safe.
  MPI_Comm dup = MPI_COMM_NULL;
  if (PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) return MPI_COMM_NULL;
  std::lock_guard<std::mutex> g(engine->reg_mu);
  engine->shadows[comm] = dup;
  return dup;
}

bool offload(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm,
             Op *op, int *rc) {
  if (comm == MPI_COMM_NULL) return false;
  MPI_Comm shadow = shadow_of(comm);
  if (shadow == MPI_COMM_NULL) return false;
  int size = 0;
  PMPI_Type_size(type, &size);
  op->bytes = static_cast<std::size_t>(count) * static_cast<std::size_t>(size);
  op->shadow = shadow;
  op->t_start = now();
  *rc = PMPI_Iallreduce(sendbuf, recvbuf, count, type, mop, shadow, &op->inner);
  if (*rc != MPI_SUCCESS) return true;
  engine->bytes += op->bytes;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    ++engine->pending[shadow];
  }
  return true;
}

void submit(Op *op) {
  Worker *w = engine->workers[engine->next_worker++ % engine->workers.size()];
  {
    std::lock_guard<std::mutex> g(w->mu);
    w->inbox.push_back(op);
  }
  w->wake.notify_one();
}

void wait_done(const std::vector<Op *> &ops, bool any) {
  if (ops.empty()) return;
  const double t0 = now();
  std::unique_lock<std::mutex> lk(engine->done_mu);
  engine->done_cv.wait(lk, [&] {
    for (Op *op : ops) {
      const bool d = op->done.load(std::memory_order_acquire);
      if (any && d) return true;
      if (!any && !d) return false;
    }
    return !any;
  });
  engine->exposed_ns += static_cast<long long>((now() - t0) * 1e9);
}

}  // namespace

bool start(int provided) {
  if (engine->on) return true;
  engine->verbose = static_cast<int>(env_long("HCOPS_MPI_VERBOSE", 0, 0, 2));
  engine->offload_min = static_cast<std::size_t>(env_long("HCOPS_MPI_OFFLOAD_MIN", 64 << 10, 0, 1L << 40));
  PMPI_Comm_rank(MPI_COMM_WORLD, &engine->rank);
  if (env_long("HCOPS_MPI", 1, 0, 1) == 0) return false;
  if (provided < MPI_THREAD_MULTIPLE) {
    warn_once("mpi level", "this MPI provides no MPI_THREAD_MULTIPLE (level %d); libhcops_mpi passes every call "
              "through", provided);
    return false;
  }
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) CPU_SET(0, &mask);
  std::vector<int> cpus = progress_cpus(mask);
  if (cpus.empty()) cpus.push_back(-1);
  // Keep later threads (OpenMP's) off the progress cores, if any core is left.
  if (env_long("HCOPS_MPI_EXCLUSIVE", 0, 0, 1) == 1) {
    cpu_set_t rest = mask;
    for (int c : cpus)
      if (c >= 0) CPU_CLR(c, &rest);
    if (CPU_COUNT(&rest) > 0) sched_setaffinity(0, sizeof rest, &rest);
    else warn_once("mpi exclusive", "HCOPS_MPI_EXCLUSIVE=1 would leave no CPU for computing; ignored");
  }
  for (int c : cpus) {
    Worker *w = new Worker;
    w->cpu = c;
    if (pthread_create(&w->thread, nullptr, worker_main, w) != 0) {
      delete w;
      continue;
    }
    engine->workers.push_back(w);
  }
  if (engine->workers.empty()) {
    warn_once("mpi thread", "cannot start an MPI progress thread; libhcops_mpi passes every call through");
    return false;
  }
  engine->on = true;
  return true;
}

bool running() { return engine->on; }

bool iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm,
                MPI_Request *request, int *rc) {
  if (!engine->on) return false;
  Op *op = new Op;
  if (!offload(sendbuf, recvbuf, count, type, mop, comm, op, rc)) {
    delete op;
    return false;
  }
  if (*rc != MPI_SUCCESS) {
    delete op;
    return true;
  }
  *rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, op, &op->outer);
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    engine->by_request[op->outer] = op;
  }
  ++engine->n_nonblocking;
  *request = op->outer;
  submit(op);
  return true;
}

bool allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op mop, MPI_Comm comm,
               int *rc) {
  if (!engine->on) return false;
  int size = 0;
  PMPI_Type_size(type, &size);
  if (static_cast<std::size_t>(count) * static_cast<std::size_t>(size) < engine->offload_min) return false;
  Op *op = new Op;
  if (!offload(sendbuf, recvbuf, count, type, mop, comm, op, rc)) {
    delete op;
    return false;
  }
  if (*rc == MPI_SUCCESS) {
    ++engine->n_blocking;
    submit(op);
    wait_done({op}, false);
    *rc = op->error;
  }
  delete op;
  return true;
}

void await(int n, const MPI_Request *reqs, bool any) {
  if (!engine->on || n <= 0) return;
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

void forget_comm(MPI_Comm comm) {
  if (!engine->on) return;
  MPI_Comm shadow = MPI_COMM_NULL;
  {
    std::lock_guard<std::mutex> g(engine->reg_mu);
    auto it = engine->shadows.find(comm);
    if (it == engine->shadows.end()) return;
    shadow = it->second;
    engine->shadows.erase(it);
  }
  for (;;) {  // the application may free a communicator with requests outstanding
    {
      std::lock_guard<std::mutex> g(engine->reg_mu);
      if (!engine->pending.count(shadow)) break;
    }
    std::unique_lock<std::mutex> lk(engine->done_mu);
    engine->done_cv.wait_for(lk, std::chrono::milliseconds(1));
  }
  PMPI_Comm_free(&shadow);
}

void stop() {
  if (!engine->on) return;
  const std::string cpus = describe();
  for (;;) {
    {
      std::lock_guard<std::mutex> g(engine->reg_mu);
      if (engine->pending.empty()) break;
    }
    std::unique_lock<std::mutex> lk(engine->done_mu);
    engine->done_cv.wait_for(lk, std::chrono::milliseconds(1));
  }
  for (Worker *w : engine->workers) {
    {
      std::lock_guard<std::mutex> g(w->mu);
      w->stop = true;
    }
    w->wake.notify_one();
    pthread_join(w->thread, nullptr);
    delete w;
  }
  engine->workers.clear();
  for (auto &kv : engine->shadows) PMPI_Comm_free(&kv.second);
  engine->shadows.clear();
  engine->on = false;
  if (engine->verbose) {
    const double flight = engine->in_flight_ns.load() * 1e-9, exposed = engine->exposed_ns.load() * 1e-9;
    print_line("hcops_mpi: rank %d: %ld allreduce offloaded (%ld nonblocking, %ld blocking), %.1f MiB; in flight "
               "%.3f s, waited for %.3f s (%.0f%% hidden); progress CPU(s) %s",
               engine->rank, engine->n_nonblocking.load() + engine->n_blocking.load(), engine->n_nonblocking.load(),
               engine->n_blocking.load(), engine->bytes.load() / 1048576.0, flight, exposed,
               flight > 0 ? 100.0 * std::max(0.0, flight - exposed) / flight : 0.0, cpus.c_str());
  }
}

std::string describe() {
  std::string s;
  for (Worker *w : engine->workers) s += (s.empty() ? "" : ",") + std::to_string(w->cpu);
  return (s.empty() ? std::string("none") : s) + " (HCOPS_MPI_CORES=" + engine->cores_text + ")";
}

}  // namespace mpi
}  // namespace hcops
