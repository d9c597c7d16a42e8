// A loop over independent pieces of work on the caller's OpenMP runtime,
// shared dynamically: each piece goes to whichever thread asks next, so a
// thread that is descheduled (a CPU shared with a DataLoader worker, a
// daemon, another job) holds up the piece it holds, not a fixed share of
// the loop. At the end the threads wait for each other (common/wait.h:
// spin briefly, then sleep) before they reach the runtime's own barrier, so
// that none spins there while a late thread still needs a core. A header:
// the OpenMP region is compiled into the layer that calls it, on the
// runtime that layer links (PyTorch's own libgomp, for libhcops_torch).
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>

#include "common/contention.h"
#include "common/wait.h"

namespace hcops {

// body(i) for every i in [0, count), on up to `wanted` threads, fewer while
// other work takes cores (common/contention.h's settled_team); inline, one thread, inside
// a parallel region. Returns the number of threads that took part. An
// exception from body (std::bad_alloc from a work buffer, a framework's
// error) must not leave the OpenMP region, where it would terminate the
// process: the first one is kept, the pieces not yet started are skipped,
// and it is thrown again after the region.
template <class Body>
int share_dynamically(long count, int wanted, const Body &body) {
  if (count <= 0) return 1;
  // settled_team: the GEMM engine's long regions measure the cores and try
  // the full team again (contended_team); these follow them. A loop of
  // fewer pieces than threads runs fewer threads, measured as a reduced team
  // (it can only lower the estimate).
  const int threads =
      omp_in_parallel() ? 1 : static_cast<int>(std::min<long>(settled_team(std::max(wanted, 1)), count));
  if (threads <= 1) {
    for (long i = 0; i < count; ++i) body(i);
    return 1;
  }
  std::atomic<long> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // the first exception, written by the thread that set `failed`
  WaitCounter arrived;
  RegionTimer timer(threads, std::max(wanted, 1));
  int team = 1;
#pragma omp parallel num_threads(threads)
  {
    const int n = omp_get_num_threads();  // the runtime may give fewer than asked
    if (omp_get_thread_num() == 0) team = n;
    {
      ThreadTimer cpu(&timer);
      for (long i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
        try {
          body(i);
        } catch (...) {
          if (!failed.exchange(true, std::memory_order_acq_rel)) error = std::current_exception();
        }
      }
    }
    arrived.add(1);
    arrived.wait_at_least(n);
  }
  if (error) std::rethrow_exception(error);
  if (team == threads) timer.finish();
  return team;
}

// Pieces per thread in share_range: a late thread's last piece is at most a
// quarter of an even share.
constexpr long kPiecesPerThread = 4;

// f(begin, end) over [0, n) in pieces of whole `grain`s of elements (the
// last one cut at n; about kPiecesPerThread per `wanted` thread), shared
// dynamically; returns the threads that took part. Every piece starts on a
// multiple of grain: a kernel's row block (the GEMM's skinny and shallow
// kernels), or a vector's worth of elements.
template <class F>
int share_range(long n, long grain, int wanted, const F &f) {
  if (n <= 0) return 1;
  grain = std::max(grain, 1L);
  const long units = (n + grain - 1) / grain;
  const long pieces = std::clamp<long>(long(std::max(wanted, 1)) * kPiecesPerThread, 1, units);
  return share_dynamically(pieces, wanted, [&](long p) {
    f(std::min(n, units * p / pieces * grain), std::min(n, units * (p + 1) / pieces * grain));
  });
}

}  // namespace hcops
