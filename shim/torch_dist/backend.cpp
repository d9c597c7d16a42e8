// See backend.h: the backend's state, its completion threads, its launch
// of an operation, its teardown.
#include "backend.h"

#include <cxxabi.h>

#include <cstdlib>

#include <Python.h>

#include "hcops_mpi.h"

namespace hcops {
namespace dist {

namespace {

// The State of the backend whose thread this is (none on others' threads):
// such a thread cannot wait for the operations in flight, being one of
// those that complete them, and what it launches is nested.
thread_local const State *completer_of = nullptr;

}  // namespace

bool on_backend_thread() { return completer_of != nullptr; }

// ---- the backend ----

namespace {

// More finishers than this only if that many callbacks each wait for a
// nested operation at once.
constexpr int kMaxFinishers = 16;

// Completes a future (running its callbacks); one that throws must not end
// the thread, which every other operation needs.
void complete_future(MpiWork &work) {
  try {
    work.complete_future();
  } catch (abi::__forced_unwind &) {  // pthread_exit (a callback taking the GIL at interpreter exit)
    throw;
  } catch (const std::exception &e) {
    TORCH_WARN("hcops: a callback of ", work.name(), " threw: ", e.what());
  } catch (...) {
    TORCH_WARN("hcops: a callback of ", work.name(), " threw");
  }
}

void count_out(State &s) {
  std::lock_guard<std::mutex> g(s.mu);
  --s.inflight;
  s.cv.notify_all();
}

// Stage one, on a finisher: p->after, the Work; then the future, here or
// by the runner (see State).
void finish(State &s, Pending *p) {
  std::unique_ptr<Pending> owned(p);
  int error = p->error;
  std::string what = p->name;
  if (error == MPI_SUCCESS && p->after) {
    try {
      p->after();
    } catch (const std::exception &e) {
      error = MPI_ERR_OTHER;
      what += std::string(" (") + e.what() + ")";
    }
  }
  p->work->complete(error, what);
  if (p->ordered) {
    std::lock_guard<std::mutex> g(s.mu);
    s.ordered.emplace(p->seq, p->work);
    s.cv.notify_all();
    return;
  }
  complete_future(*p->work);
  count_out(s);
}

// The declined operations' requests, tested once; the finished ones leave
// `polled` for `finished` (completed by the caller once it has stopped
// polling: their callbacks may wait for another declined operation).
void poll(std::vector<std::pair<MPI_Request, Pending *>> &polled, std::vector<Pending *> &finished) {
  std::vector<MPI_Request> reqs;
  for (auto &r : polled) reqs.push_back(r.first);
  std::vector<int> idx(reqs.size());
  std::vector<MPI_Status> st(reqs.size());
  int n = 0;
  const int rc = MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &n, idx.data(), st.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {  // which completed is unknown: all fail
    for (auto &r : polled) {
      r.second->error = rc;
      finished.push_back(r.second);
    }
    polled.clear();
    return;
  }
  if (n == MPI_UNDEFINED) n = 0;
  for (int i = 0; i < n; ++i) {
    Pending *p = polled[idx[i]].second;
    p->error = rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : MPI_SUCCESS;
    polled[idx[i]].second = nullptr;
    finished.push_back(p);
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < polled.size(); ++i)
    if (polled[i].second) polled[kept++] = {reqs[i], polled[i].second};
  polled.resize(kept);
}

void start_thread(const std::shared_ptr<State> &s, void (*loop)(std::shared_ptr<State>));
void finisher_loop(std::shared_ptr<State> s);

// Called under s.mu before a finisher may run callbacks: if no other would
// be left waiting, one more starts.
// (Also once stopped: threads end only when nothing is in flight.)
void keep_one_waiting(const std::shared_ptr<State> &s) {
  if (s->idle > 0 || s->threads >= kMaxFinishers + 1) return;
  try {
    start_thread(s, finisher_loop);
  } catch (const std::system_error &e) {  // at the process's thread limit: go on with those there are
    TORCH_WARN_ONCE("hcops: no more completion threads for the torch.distributed backend: ", e.what());
  }
}

void end_thread(State &s, std::unique_lock<std::mutex> &lk) {
  --s.threads;
  s.cv.notify_all();
  lk.unlock();
  // The caller's reference to the State, released as the thread returns,
  // may be the last one (the backend destroyed from a callback): ~State
  // then runs on this thread, completer_of still set.
}

void finisher_loop(std::shared_ptr<State> s) {
  pthread_setname_np(pthread_self(), "hcops-c10d");
  completer_of = s.get();
  std::unique_lock<std::mutex> lk(s->mu);
  for (;;) {
    auto ready = [&] { return !s->done.empty() || (s->stop && s->inflight == 0); };
    ++s->idle;
    if (!s->polled.empty() && !s->polling) s->cv.wait_for(lk, std::chrono::microseconds(50), ready);  // polled
    else s->cv.wait(lk, [&] { return ready() || (!s->polled.empty() && !s->polling); });
    --s->idle;
    if (!s->done.empty()) {
      Pending *p = s->done.front();
      s->done.pop_front();
      keep_one_waiting(s);
      lk.unlock();
      finish(*s, p);
      lk.lock();
      continue;
    }
    if (!s->polled.empty() && !s->polling) {
      std::vector<std::pair<MPI_Request, Pending *>> polled;
      std::vector<Pending *> finished;
      polled.swap(s->polled);
      s->polling = true;
      lk.unlock();
      poll(polled, finished);
      lk.lock();
      s->polled.insert(s->polled.end(), polled.begin(), polled.end());
      s->polling = false;
      if (finished.empty()) continue;
      keep_one_waiting(s);
      lk.unlock();
      for (Pending *p : finished) finish(*s, p);
      lk.lock();
      continue;
    }
    if (s->stop && s->inflight == 0) break;
  }
  end_thread(*s, lk);
}

// The application's collectives' futures, in launch order.
void runner_loop(std::shared_ptr<State> s) {
  pthread_setname_np(pthread_self(), "hcops-c10d-cb");
  completer_of = s.get();
  std::unique_lock<std::mutex> lk(s->mu);
  for (;;) {
    s->cv.wait(lk, [&] {
      return (!s->ordered.empty() && s->ordered.begin()->first == s->next_future) || (s->stop && s->inflight == 0);
    });
    if (s->ordered.empty() || s->ordered.begin()->first != s->next_future) break;  // stopped, nothing in flight
    auto next = s->ordered.begin();
    c10::intrusive_ptr<MpiWork> work = std::move(next->second);
    s->ordered.erase(next);
    ++s->next_future;
    if (!work) continue;  // a launch that failed
    lk.unlock();
    complete_future(*work);
    work.reset();
    lk.lock();
    --s->inflight;
    s->cv.notify_all();
  }
  end_thread(*s, lk);
}

void start_thread(const std::shared_ptr<State> &s, void (*loop)(std::shared_ptr<State>)) {
  ++s->threads;
  try {
    std::thread(loop, s).detach();
  } catch (...) {
    --s->threads;
    throw;
  }
}

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && Py_IsFinalizing();
#else
  return Py_IsInitialized() && _Py_IsFinalizing();
#endif
}

}  // namespace

State::~State() {
  // Last released by a completion thread (the backend destroyed from a
  // callback) or by the backend: the communicator goes with it, unless MPI
  // is gone or operations were left in flight at interpreter exit. Below
  // MPI_THREAD_MULTIPLE a completion thread may not call MPI: left too.
  if (leak_comm || comm == MPI_COMM_NULL) return;
  if (completer_of == nullptr || multiple) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm);
  }
}

Backend::Backend(MPI_Comm comm, int rank, int size) : BackendBase(rank, size), s_(std::make_shared<State>()) {
  s_->comm = comm;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  s_->multiple = level == MPI_THREAD_MULTIPLE;
  std::lock_guard<std::mutex> g(s_->mu);
  start_thread(s_, finisher_loop);
  start_thread(s_, runner_loop);
}

bool Backend::drain() {
  State &s = *s_;
  // At interpreter exit a callback on a completion thread could never get
  // the GIL back: the operations in flight are left as they are, and the
  // communicator with them (freeing it would wait for them).
  if (interpreter_finalizing()) {
    std::lock_guard<std::mutex> g(s.mu);
    s.stop = true;
    s.cv.notify_all();
    if (s.inflight > 0) {
      s.leak_comm = true;
      return false;
    }
  }
  // Called from one of this backend's callbacks: its threads finish what is
  // in flight, then end; the last of them frees the State.
  if (completer_of == &s) {
    std::lock_guard<std::mutex> g(s.mu);
    s.stop = true;
    s.cv.notify_all();
    return false;
  }
  // A future's callback (on a completion thread) may need the GIL that a
  // Python caller of destroy_process_group holds.
  PyThreadState *saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  {
    std::unique_lock<std::mutex> lk(s.mu);
    s.stop = true;
    s.cv.notify_all();
    s.cv.wait(lk, [&] { return s.inflight == 0 && s.threads == 0; });
  }
  if (saved) PyEval_RestoreThread(saved);
  return true;
}

Backend::~Backend() {
  // Drained here, the communicator is freed on this thread (below
  // MPI_THREAD_MULTIPLE, the thread that called MPI all along); otherwise
  // by the State's last owner.
  if (!drain()) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  std::lock_guard<std::mutex> g(s_->mu);
  if (!finalized && s_->comm != MPI_COMM_NULL) MPI_Comm_free(&s_->comm);
  s_->comm = MPI_COMM_NULL;
}

void Backend::init_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // Below MPI_THREAD_MULTIPLE the backend still works: libhcops_mpi then
  // declines, and each operation is waited for on the calling thread.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  // Initialized here, finalized at exit: C's atexit handlers run after
  // Python's finalization, which destroys the process groups (and their
  // communicators); an MPI the application initialized is its own.
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

MPI_Comm Backend::make_comm(const std::vector<uint64_t> &ranks) {
  init_mpi();
  MPI_Comm comm = MPI_COMM_NULL;
  if (ranks.empty()) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  } else {
    std::vector<int> r(ranks.begin(), ranks.end());
    MPI_Group world, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(r.size()), r.data(), &group);
    MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return comm;
}

// A backend operation finished by MPI (on a progress thread, or here after a
// declined operation ran on the caller's): queued for the completion threads.
struct Owned {
  std::shared_ptr<State> s;
  Pending *p;
};

void done_trampoline(void *arg, int error) {
  std::unique_ptr<Owned> o(static_cast<Owned *>(arg));
  State *s = o->s.get();
  o->p->error = error;
  std::lock_guard<std::mutex> g(s->mu);
  // This reference goes before the operation is queued: until then it
  // counts in `inflight`, so the State's threads (owners too) are alive.
  // Dropped after, it could be the last, and ~State would free the
  // communicator here, on a progress core (hcops_mpi.h forbids that).
  o->s.reset();
  s->done.push_back(o->p);
  s->cv.notify_all();
}

c10::intrusive_ptr<c10d::Work> Backend::launch(std::unique_ptr<Pending> owned) {
  State &s = *s_;
  Pending *p = owned.get();
  c10::intrusive_ptr<c10d::Work> work = p->work;
  // A callback's operation would call MPI on this backend's thread beside
  // the application's: MPI_THREAD_MULTIPLE only.
  TORCH_CHECK(s.multiple || completer_of != &s, "hcops: ", p->name,
              " from a callback of the backend's own needs MPI_THREAD_MULTIPLE (MPI was initialized below it)");
  p->ordered = !p->point_to_point && completer_of != &s;
  {
    std::lock_guard<std::mutex> g(s.mu);
    TORCH_CHECK(!s.stop, "hcops: ", p->name, " on a process group that was shut down");
    ++s.inflight;
    if (p->ordered) p->seq = s.next_launch++;
  }
  // Until the operation is handed off, a throw (bad_alloc, a failed start)
  // must give its count back, or drain() would wait for it forever, and
  // leave its place in the runner's order empty.
  struct Undo {
    State &s;
    const Pending &p;
    bool armed = true;
    ~Undo() {
      if (!armed) return;
      std::lock_guard<std::mutex> g(s.mu);
      --s.inflight;
      if (p.ordered) s.ordered.emplace(p.seq, c10::intrusive_ptr<MpiWork>());
      s.cv.notify_all();
    }
  } undo{s, *p};
  auto o = std::make_unique<Owned>(Owned{s_, p});
  int rc = MPI_SUCCESS;
  if (hcops_mpi_offload(s.comm, p->name, p->count, p->type, p->op,
                        [](void *a, MPI_Comm c, MPI_Request *r) { return static_cast<Owned *>(a)->p->start(c, r); },
                        done_trampoline, o.get(), &rc)) {
    if (rc == MPI_SUCCESS) {
      o.release();  // done_trampoline's now
      owned.release();
      undo.armed = false;
      return work;
    }
  } else {
    // Declined (libhcops_mpi off): started here; the completion threads poll
    // it (with MPI_THREAD_MULTIPLE), or it is waited for here. Collectives
    // run in the same order on every rank, so waiting for each in turn is
    // safe; a send waited for before its peer's matching receive is started
    // (an exchange of isend then irecv) would never complete.
    TORCH_CHECK(s.multiple || !p->point_to_point, "hcops: ", p->name,
                " needs MPI_THREAD_MULTIPLE when libhcops_mpi does not take the operation (HCOPS_MPI=0, or MPI "
                "initialized at a lower level by the application)");
    MPI_Request req = MPI_REQUEST_NULL;
    rc = p->start(s.comm, &req);
    if (rc == MPI_SUCCESS) {
      if (s.multiple) {
        std::lock_guard<std::mutex> g(s.mu);
        s.polled.push_back({req, owned.release()});
        s.cv.notify_all();
      } else {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        done_trampoline(o.release(), rc);  // queued, even on error: the Work reports it
        owned.release();
      }
      undo.armed = false;
      return work;
    }
  }
  // The start failed: nothing in flight (undo gives the count back).
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  TORCH_CHECK(false, "hcops: ", p->name, " could not start: ", std::string(msg, len));
}

}  // namespace dist
}  // namespace hcops
