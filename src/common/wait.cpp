#include "common/wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "common/env.h"

namespace hcops {

namespace {

// Unset OMP_WAIT_POLICY: 50 us, about a scheduler wake-up's latency a few
// times over, so that the threads of a quiet team meet without a syscall,
// and short against the 3-4 ms time slice a waiter whose partner lost its
// core would otherwise spin away. A choice, not a tuned optimum: with it the
// quiet GEMM trace replay ran at 0.99-1.02x the engine before the change
// (doc/perf/shared_cpu.md); other values were not measured.
constexpr long kDefaultSpinNs = 50000;
constexpr long kActiveSpinNs = 10000000;

struct Policy {
  long ns;
  const char *why;
};

Policy read_policy() {
  const long us = env_long("HCOPS_SPIN_US", -1, 0, 1000000);
  if (us >= 0) return {us * 1000, "HCOPS_SPIN_US"};
  static const char *const kPolicies[] = {"passive", "active", nullptr};
  switch (env_choice("OMP_WAIT_POLICY", kPolicies, -1)) {
    case 0: return {0, "OMP_WAIT_POLICY=passive"};
    case 1: return {kActiveSpinNs, "OMP_WAIT_POLICY=active"};
    default: return {kDefaultSpinNs, "default"};
  }
}

const Policy &policy() {
  static const Policy p = read_policy();
  return p;
}

int *futex_word(std::atomic<int32_t> &a) { return reinterpret_cast<int *>(&a); }

}  // namespace

long spin_ns() { return policy().ns; }
const char *spin_policy() { return policy().why; }

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void WaitCounter::add(int32_t d) {
  // seq_cst on both sides (here and in wait_at_least's sleep path): either
  // the sleeper sees the new value before it sleeps, or this sees the sleeper.
  value_.fetch_add(d, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) wake();
}

void WaitCounter::wake() {
  syscall(SYS_futex, futex_word(value_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void WaitCounter::wait_at_least(int32_t target) {
  if (load() >= target) return;
  if (const long budget = spin_ns(); budget > 0) {
    const int64_t t0 = now_ns();
    for (unsigned i = 1;; ++i) {
      cpu_relax();
      if (load() >= target) return;
      if ((i & 63) == 0 && now_ns() - t0 >= budget) break;
    }
  }
  for (;;) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const int32_t v = value_.load(std::memory_order_seq_cst);
    // The kernel sleeps only while the word still holds v: an add() between
    // this load and the sleep makes it return at once.
    if (v < target) syscall(SYS_futex, futex_word(value_), FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    if (v >= target || load() >= target) return;
  }
}

}  // namespace hcops
