#include "shim/dnnl/side_table.h"

#include <pthread.h>

#include <unordered_map>

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

namespace {

pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
// Never destroyed: primitives may be destroyed from other libraries' exit code.
auto *table = new std::unordered_map<const_dnnl_primitive_t, std::unique_ptr<const PrimitivePlan>>;

// The forking thread holds the write lock across fork(): no other thread is
// then inside the table. The child gets a fresh lock: glibc's rwlock knows
// its writer by thread id, which the child's thread does not have, so an
// unlock there would be taken for a reader's and leave it locked.
void before_fork() { pthread_rwlock_wrlock(&lock); }
void in_parent() { pthread_rwlock_unlock(&lock); }
void in_child() { pthread_rwlock_init(&lock, nullptr); }
__attribute__((constructor)) void register_fork_handlers() { pthread_atfork(before_fork, in_parent, in_child); }

struct WriteLock {
  WriteLock() { pthread_rwlock_wrlock(&lock); }
  ~WriteLock() { pthread_rwlock_unlock(&lock); }
};

}  // namespace

void side_table_insert(const_dnnl_primitive_t prim, std::unique_ptr<const PrimitivePlan> plan) {
  std::unique_ptr<const PrimitivePlan> old;  // freed outside the lock
  WriteLock g;
  auto &slot = (*table)[prim];
  old = std::move(slot);
  slot = std::move(plan);
}

const PrimitivePlan *side_table_find(const_dnnl_primitive_t prim) {
  pthread_rwlock_rdlock(&lock);
  auto it = table->find(prim);
  const PrimitivePlan *p = it == table->end() ? nullptr : it->second.get();
  pthread_rwlock_unlock(&lock);
  return p;
}

void side_table_erase(const_dnnl_primitive_t prim) {
  std::unique_ptr<const PrimitivePlan> old;
  WriteLock g;
  auto it = table->find(prim);
  if (it == table->end()) return;
  old = std::move(it->second);
  table->erase(it);
}

}  // namespace hcops::dnnl
