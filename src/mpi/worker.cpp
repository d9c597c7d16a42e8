#include "mpi/worker.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "common/log.h"
#include "common/wait.h"

namespace hcops {
namespace mpi {

struct Worker {
  pthread_t thread{};
  int cpu = -1;
  std::mutex mu;
  std::condition_variable wake;
  std::vector<Op *> inbox;
  bool stop = false;
  // Its core was taken from the rest of the process (HCOPS_MPI_EXCLUSIVE):
  // polling flat out then costs nobody anything.
  bool own_core = false;
  long nap_max_ns = kNapMinNs;  // on a shared core: the longest nap between polls
};

namespace {

// Application threads waiting for an offloaded operation (wait_done).
std::atomic<int> waiters{0};

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
// the application computes. With nothing in flight it blocks on its
// condition variable and uses no CPU. With work in flight: on a core of its
// own it polls without pause; on a shared core, after a run of fruitless
// polls, it yields between polls for common/wait.h's spin_ns() (the wait
// of every HCOps thread: 50 us, none under OMP_WAIT_POLICY=passive), then
// naps between polls: 20 us, doubled after each fruitless poll up to
// HCOPS_MPI_NAP_MAX, back to 20 us once an operation completes or arrives.
// A nap is a wait on the thread's condition variable, which a new
// operation, stop, or an application thread that starts waiting for an
// operation (wait_done: its core is then idle, and the operation is all it
// waits for) cuts short; while one waits, the naps stay at 20 us.
// Without the naps, two ranks' progress threads on the CPU of an unbound
// 2-rank job took it from compute: mpi_overlap.py --bind none ran 4x slower
// than plain MPI. With 20 us naps alone, the thread still woke 40,000 times
// a second during a long allreduce, each wake taking the core from the
// compute thread (CFS gives a waking thread the CPU). A nap costs at most
// its length per step of a reduction (timer slack 1 ns); TCP's socket
// buffers keep the link busy meanwhile.
void *worker_main(void *arg) {
  Worker *w = static_cast<Worker *>(arg);
  // Any timed sleep inside MPI on this thread wakes when asked, not up to
  // the default 50 us later.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  pthread_setname_np(pthread_self(), "hcops-mpi");
  pin(w->cpu);
  std::vector<Op *> active;
  std::vector<MPI_Request> reqs;
  std::vector<int> idx;
  std::vector<MPI_Status> st;
  long fruitless = 0;
  int64_t fruitless_since = 0;
  long nap_ns = kNapMinNs;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(w->mu);
      if (active.empty()) w->wake.wait(lk, [&] { return !w->inbox.empty() || w->stop; });
      if (!w->inbox.empty()) {
        fruitless = 0;
        nap_ns = kNapMinNs;
      }
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
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
      // Which requests completed is then undefined. None is polled again;
      // all fail, or drain() and MPI_Finalize would wait for them forever.
      for (Op *op : active) {
        op->inner = MPI_REQUEST_NULL;
        finish(op, rc);
      }
      active.clear();
      continue;
    }
    if (outcount == MPI_UNDEFINED) outcount = 0;
    for (int i = 0; i < outcount; ++i) {
      Op *op = active[idx[i]];
      op->inner = MPI_REQUEST_NULL;
      active[idx[i]] = nullptr;
      finish(op, rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc);
    }
    std::size_t kept = 0;
    for (Op *op : active)
      if (op) active[kept++] = op;
    active.resize(kept);
    if (outcount > 0) {
      fruitless = 0;
      nap_ns = kNapMinNs;
    } else if (++fruitless > 64 && !w->own_core) {
      if (fruitless == 65) fruitless_since = now_ns();
      if (now_ns() - fruitless_since < spin_ns()) {
        sched_yield();
      } else {
        std::unique_lock<std::mutex> lk(w->mu);
        w->wake.wait_for(lk, std::chrono::nanoseconds(nap_ns),
                         [&] { return !w->inbox.empty() || w->stop || waiters.load(std::memory_order_relaxed) > 0; });
        nap_ns = waiters.load(std::memory_order_relaxed) > 0 ? kNapMinNs : std::min(2 * nap_ns, w->nap_max_ns);
      }
    }
  }
  return nullptr;
}

}  // namespace

Worker *start_worker(int cpu, bool own_core, long nap_max_ns) {
  Worker *w = new Worker;
  w->cpu = cpu;
  w->own_core = own_core;
  w->nap_max_ns = std::max(kNapMinNs, nap_max_ns);
  // The thread starts with every signal blocked: the application's handlers
  // (SIGINT, SIGALRM, SIGCHLD...) must not run there, in the middle of a
  // PMPI call, nor its sigwait() lose a signal to them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const bool started = pthread_create(&w->thread, nullptr, worker_main, w) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!started) {
    delete w;
    return nullptr;
  }
  return w;
}

void submit(Worker *w, Op *op) {
  {
    std::lock_guard<std::mutex> g(w->mu);
    w->inbox.push_back(op);
  }
  w->wake.notify_one();
}

int worker_cpu(const Worker *w) { return w->cpu; }

void waiting_begin(const std::vector<Worker *> &workers) {
  waiters.fetch_add(1, std::memory_order_relaxed);
  for (Worker *w : workers) {
    { std::lock_guard<std::mutex> g(w->mu); }  // a nap that checked before the add wakes now
    w->wake.notify_one();
  }
}

void waiting_end() { waiters.fetch_sub(1, std::memory_order_relaxed); }

void stop_worker(Worker *w) {
  {
    std::lock_guard<std::mutex> g(w->mu);
    w->stop = true;
  }
  w->wake.notify_one();
  pthread_join(w->thread, nullptr);
  delete w;
}

}  // namespace mpi
}  // namespace hcops
