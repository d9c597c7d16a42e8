// Waiting for the other threads of a team without taking the cores they
// need. On a shared CPU (a DataLoader worker, a daemon, another job, an SMT
// sibling) a thread of the team may be descheduled at any moment; a waiter
// that spins keeps its core from the very thread it waits for, and a
// sched_yield() under Linux's CFS gives the core up for a moment only. So a
// waiter spins for a short, bounded time (covering the usual case: a team of
// its own cores, finishing together) and then sleeps on a futex; whoever
// moves the counter wakes it. The spin is HCOPS_SPIN_US, else follows the
// caller's OMP_WAIT_POLICY: passive spins not at all, active 10 ms, unset
// kDefaultSpinNs (wait.cpp says why that value).
#pragma once

#include "common/api.h"
#include <atomic>
#include <cstdint>

namespace hcops {

// The spin before sleeping, in nanoseconds, and what set it (for
// HCOPS_VERBOSE and hcops-info).
long spin_ns();
const char *spin_policy();

// Monotonic time in nanoseconds (CLOCK_MONOTONIC, from the vDSO).
int64_t now_ns();

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A counter threads add to and wait on. add() is one atomic add, plus a
// futex wake when some waiter sleeps; wait_at_least() spins for spin_ns(),
// then sleeps until the counter reaches its target.
class HCOPS_API WaitCounter {
 public:
  void reset(int32_t v = 0) { value_.store(v, std::memory_order_relaxed); }
  int32_t load() const { return value_.load(std::memory_order_acquire); }
  void add(int32_t d);
  void wait_at_least(int32_t target);

 private:
  void wake();
  std::atomic<int32_t> value_{0};
  std::atomic<int32_t> sleepers_{0};
  static_assert(sizeof(std::atomic<int32_t>) == 4 && std::atomic<int32_t>::is_always_lock_free,
                "a futex word is a plain 32-bit integer");
};

// The end of a team's work: each of `n` threads arrives once it has nothing
// left to do and waits for the others, so that none of them spins in the
// OpenMP runtime's own barrier while a late thread still needs a core.
class TeamBarrier {
 public:
  void reset(int n) {
    n_ = n;
    arrived_.reset(0);
  }
  void arrive_and_wait() {
    arrived_.add(1);
    arrived_.wait_at_least(n_);
  }

 private:
  int n_ = 1;
  WaitCounter arrived_;
};

}  // namespace hcops
