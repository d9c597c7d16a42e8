#include "gemm/workspace.h"

#include <pthread.h>

#include <mutex>

namespace hcops {

namespace {
// A plain mutex re-initialised in the child: a fork while another thread held
// it must not leave the child's first GEMM waiting forever.
pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
std::vector<Workspace *> *pool = new std::vector<Workspace *>;  // never destroyed: GEMM may run at exit
long created = 0;                                               // under pool_lock

void lock_pool() { pthread_mutex_lock(&pool_lock); }
void unlock_pool() { pthread_mutex_unlock(&pool_lock); }
void reinit_pool() { pthread_mutex_init(&pool_lock, nullptr); }

__attribute__((constructor)) void register_fork_handlers() { pthread_atfork(lock_pool, unlock_pool, reinit_pool); }
}  // namespace

void Workspace::shape(size_t parts, size_t threads) {
  while (b_panels.size() < parts) b_panels.emplace_back(new NumaBuffer);
  while (a_blocks.size() < threads) a_blocks.emplace_back(new NumaBuffer);
  if (nprogress < parts) {
    progress.reset(new PartProgress[parts]);
    nprogress = parts;
  }
}

Workspace *acquire_workspace() {
  lock_pool();
  Workspace *ws = nullptr;
  if (!pool->empty()) {
    ws = pool->back();
    pool->pop_back();
  }
  if (!ws) ++created;
  unlock_pool();
  return ws ? ws : new Workspace;
}

long workspaces_created() {
  lock_pool();
  const long n = created;
  unlock_pool();
  return n;
}

void release_workspace(Workspace *ws) {
  lock_pool();
  pool->push_back(ws);
  unlock_pool();
}

}  // namespace hcops
