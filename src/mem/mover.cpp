#include "mem/mover.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <cstdint>
#include <deque>
#include <map>
#include <utility>

#include "common/log.h"
#include "mem/arena.h"
#include "mem/cache.h"
#include "mem/config.h"
#include "mem/place.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

namespace {

struct MoveJob {
  long ticket;
  void *addr;
  std::size_t len;
  Target target;
};
pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t helper_wake = PTHREAD_COND_INITIALIZER, helper_done = PTHREAD_COND_INITIALIZER;
std::deque<MoveJob> *helper_queue = nullptr;
// ticket -> (rc, errno) for every ticket issued and not yet waited for;
// rc is kPending until the helper has run the move.
std::map<long, std::pair<int, int>> *helper_results = nullptr;
constexpr int kPending = 1;
long helper_next_ticket = 1;
bool helper_running = false;

// A move gives the blocks it covers whole the target's policy; a block it
// covers in part (or a failed move) has no single policy any more.
int move_and_file(void *addr, std::size_t len, const Target &t) {
  const int rc = move_range(addr, len, t);
  const uint64_t where = rc == 0 ? where_of(t) : 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  arena().for_each_block(addr, len, [&](char *start, Block &b) {
    const uintptr_t s = reinterpret_cast<uintptr_t>(start);
    b.where = s >= a && s + b.mapped <= a + len ? where : 0;
  });
  return rc;
}

bool target_from(const char *text, std::size_t len, Target &t) {
  Policy p;
  ParseError err;
  if (!text || !parse_policy(text, p, err) || p.rules.size() != 1 || p.rules[0].has_lo || p.rules[0].hi != SIZE_MAX ||
      p.rules[0].place == Place::system) {
    errno = EINVAL;
    return false;
  }
  t = resolve(p.rules[0], len, 0, 0);
  return true;
}

void pin_helper() {
  const Config *c = config();
  const int core = c ? c->helper_core : -1;
  if (core < 0 || core >= CPU_SETSIZE) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    note_once("helper core", "libhcops_mem: cannot pin the memory helper thread to CPU %d", core);
}

void *helper_main(void *) {
  pin_helper();
  pthread_mutex_lock(&helper_lock);
  for (;;) {
    while (helper_queue->empty()) pthread_cond_wait(&helper_wake, &helper_lock);
    MoveJob job = helper_queue->front();
    helper_queue->pop_front();
    pthread_mutex_unlock(&helper_lock);
    const int rc = move_and_file(job.addr, job.len, job.target);
    const int err = rc ? errno : 0;
    pthread_mutex_lock(&helper_lock);
    (*helper_results)[job.ticket] = {rc, err};
    pthread_cond_broadcast(&helper_done);
  }
  return nullptr;
}

}  // namespace

int move(void *addr, std::size_t len, const char *target) {
  Target t;
  if (!target_from(target, len, t)) return -1;
  return move_and_file(addr, len, t);
}

long move_async(void *addr, std::size_t len, const char *target) {
  Target t;
  if (!target_from(target, len, t)) return -1;
  pthread_mutex_lock(&helper_lock);
  if (!helper_running) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    // Signals are for the application's threads: the helper starts with all
    // of them blocked.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    const int rc = pthread_create(&th, &attr, helper_main, nullptr);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      pthread_mutex_unlock(&helper_lock);
      errno = rc;
      return -1;
    }
    helper_running = true;
  }
  const long ticket = helper_next_ticket++;
  (*helper_results)[ticket] = {kPending, 0};
  helper_queue->push_back(MoveJob{ticket, addr, len, t});
  pthread_cond_signal(&helper_wake);
  pthread_mutex_unlock(&helper_lock);
  return ticket;
}

int wait_move(long ticket) {
  pthread_mutex_lock(&helper_lock);
  std::map<long, std::pair<int, int>>::iterator it;
  // Never issued, or already waited for: waiting would never end.
  while ((it = helper_results->find(ticket)) == helper_results->end() || it->second.first == kPending) {
    if (it == helper_results->end()) {
      pthread_mutex_unlock(&helper_lock);
      errno = EINVAL;
      return -1;
    }
    if (!helper_running) {  // forked child: the helper is gone, and its jobs with it
      helper_results->erase(it);
      pthread_mutex_unlock(&helper_lock);
      errno = ECHILD;
      return -1;
    }
    pthread_cond_wait(&helper_done, &helper_lock);
  }
  const auto [rc, err] = it->second;
  helper_results->erase(it);
  pthread_mutex_unlock(&helper_lock);
  if (rc) errno = err;
  return rc;
}

void init_mover() {
  helper_queue = new std::deque<MoveJob>;
  helper_results = new std::map<long, std::pair<int, int>>;
}

void mover_before_fork() { pthread_mutex_lock(&helper_lock); }
void mover_after_fork_parent() { pthread_mutex_unlock(&helper_lock); }
void mover_after_fork_child() {
  pthread_mutex_init(&helper_lock, nullptr);
  pthread_cond_init(&helper_wake, nullptr);
  pthread_cond_init(&helper_done, nullptr);
  helper_running = false;  // threads do not survive fork
  if (helper_queue) helper_queue->clear();
}

}  // namespace mem
}  // namespace hcops
