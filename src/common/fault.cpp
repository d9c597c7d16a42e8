#include "common/fault.h"

#include <atomic>

namespace hcops::fault {

namespace {
std::atomic<long> countdown{-1};  // allocations to let through before one fails; < 0: none fails
std::atomic<long> failed{0};
}  // namespace

long allocations_failed() { return failed.load(std::memory_order_relaxed); }

void fail_allocation_after(long n) { countdown.store(n < 0 ? -1 : n, std::memory_order_relaxed); }

bool allocation_fails() {
  long c = countdown.load(std::memory_order_relaxed);
  while (c >= 0) {
    if (countdown.compare_exchange_weak(c, c - 1, std::memory_order_relaxed)) {
      if (c != 0) return false;
      failed.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace hcops::fault
