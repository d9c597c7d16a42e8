// The large-allocation side of libhcops_mem, below the malloc ABI: start-up,
// the policy stacks, and allocation into the arena (fresh or from the reuse
// cache). shim/mem/ turns the C allocation calls into these; the
// configuration, statistics, reuse cache and mover have their own files.
#pragma once

#include <atomic>
#include <cstddef>

#include "mem/arena.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

// Set while the calling thread runs libhcops_mem's own code: whatever that
// code allocates (hwloc, the policy maps) must go to glibc, not recurse.
extern thread_local bool inside __attribute__((tls_model("initial-exec")));
class Internal {
 public:
  Internal() : was_(inside) { inside = true; }
  ~Internal() { inside = was_; }
  Internal(const Internal &) = delete;
  Internal &operator=(const Internal &) = delete;

 private:
  bool was_;
};

// Sizes below this go to glibc untouched. SIZE_MAX until init() has run, so
// allocations made before the constructor are glibc's.
extern std::atomic<std::size_t> threshold;

// Reads HCOPS_MEM_* and reserves the arena. Called once, from the
// interposer's constructor; safe to call again.
void init();

// The rule for a `size`-byte allocation by the calling thread: its pushed
// policies, then the process's, then HCOPS_MEM_POLICY, then the default.
Rule rule_for(std::size_t size);

// A new block of at least `size` bytes aligned to `align` (a power of two),
// or nullptr when it should come from glibc instead (rule "system", arena
// full, mapping refused). `zero`: the caller needs zeroes (calloc); fresh
// mappings are zero already, blocks reused from the cache are cleared.
void *allocate(std::size_t size, std::size_t align, bool zero);
// Releases a block of the arena.
void release(void *p);
// Grows or shrinks a block in place when it can; false when the caller must
// move it.
bool resize_in_place(void *p, std::size_t size);
std::size_t usable_size(const void *p);

// Policy stacks (hcops_mem_push/pop). Thread scope overrides process scope.
enum class Scope { thread, process };
bool push_policy(Scope s, const char *text, ParseError &err);
bool pop_policy(Scope s);

// pthread_atfork hooks for every lock of this module.
void before_fork();
void after_fork_parent();
void after_fork_child();

}  // namespace mem
}  // namespace hcops
