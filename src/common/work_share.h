// A loop over independent pieces of work on the caller's OpenMP runtime,
// shared dynamically: a thread that is descheduled (a CPU shared with a
// DataLoader worker, a daemon, another job) holds up the piece it holds,
// not a fixed share of the loop. Each thread starts on a run of its own,
// the t-th of `threads` equal runs of the pieces, front to back, and when
// it is done takes pieces from the back of the others' runs. So with every
// thread running, thread t works on the t-th part of the data, as
// PyTorch's parallel_for splits it and as the operator before left it in
// that core's cache. Handed out in turn instead (0, 1, 0, 1, ...), each
// thread read half its data from the other core: on a 2-core Zen 4 guest,
// inputs just written by an in-place multiply, against PyTorch's kernel in
// the same run, LayerNorm's f32 backward went from 0.72x to 0.86x
// (contiguous) and 1.17x to 1.50x (DiT's swapped input), the bias-gradient
// sums from 0.78-1.22x to 0.73-1.34x (7 of 8 faster; doc/perf/torch2.md).
// At the end the threads wait for each other (common/wait.h:
// spin briefly, then sleep) before they reach the runtime's own barrier, so
// that none spins there while a late thread still needs a core. A header:
// the OpenMP region is compiled into the layer that calls it, on the
// runtime that layer links (PyTorch's own libgomp, for libhcops_torch).
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

#include "common/contention.h"
#include "common/wait.h"

namespace hcops {

// One thread's run of pieces [next, end), packed in one word so that its
// owner can take from the front and the others from the back, each piece
// once (a compare-and-swap of the pair). Runs of at most 2^31 pieces.
struct alignas(64) PieceRun {
  std::atomic<uint64_t> range{0};

  void set(long begin, long end) {
    range.store(uint64_t(begin) << 32 | uint64_t(end), std::memory_order_relaxed);
  }
  // The next piece from the front (the owner) or the back (a helper); -1 when none is left.
  long take(bool front) {
    uint64_t v = range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t b = v >> 32, e = v & 0xffffffffu;
      if (b >= e) return -1;
      const uint64_t w = front ? (b + 1) << 32 | e : b << 32 | (e - 1);
      if (range.compare_exchange_weak(v, w, std::memory_order_relaxed)) return long(front ? b : e - 1);
    }
  }
};

// Claims a call shares in runs (PieceRun's 32-bit halves). A longer loop
// (no caller makes one) is claimed in groups of consecutive pieces.
constexpr long kMaxClaims = 0x7fffffffL;

// body(i) for every i in [0, count), on up to `wanted` threads, fewer while
// other work takes cores (common/contention.h's settled_team); inline, one thread, inside
// a parallel region. Returns the number of threads that took part. An
// exception from body (std::bad_alloc from a work buffer, a framework's
// error) must not leave the OpenMP region, where it would terminate the
// process: the first one is kept, the pieces not yet started are skipped,
// and it is thrown again after the region. `max_claims` is for the tests.
template <class Body>
int share_dynamically(long count, int wanted, const Body &body, long max_claims = kMaxClaims) {
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
  // A claim is `group` consecutive pieces: one, unless count > max_claims.
  const long group = (count + max_claims - 1) / max_claims, claims = (count + group - 1) / group;
  std::unique_ptr<PieceRun[]> runs(new PieceRun[size_t(threads)]);
  for (int t = 0; t < threads; ++t) runs[size_t(t)].set(claims * t / threads, claims * (t + 1) / threads);
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
      // Its own run first, then the others' (those of threads the runtime
      // did not start among them), from their backs.
      const int me = omp_get_thread_num();
      for (int k = 0; k < threads; ++k) {
        PieceRun &run = runs[size_t((me + k) % threads)];
        for (long c; !failed.load(std::memory_order_relaxed) && (c = run.take(k == 0)) >= 0;) {
          try {
            for (long i = c * group, end = std::min(count, i + group); i < end; ++i) body(i);
          } catch (...) {
            if (!failed.exchange(true, std::memory_order_acq_rel)) error = std::current_exception();
          }
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
// A caller whose pieces should be long (each reads strided memory in runs
// as long as the piece: the skinny kernels with op(A) = A) gives the most
// pieces per thread it wants; at least one each.
template <class F>
int share_range(long n, long grain, int wanted, const F &f, long pieces_per_thread = kPiecesPerThread) {
  if (n <= 0) return 1;
  grain = std::max(grain, 1L);
  const long units = (n + grain - 1) / grain;
  const long pieces = std::clamp<long>(long(std::max(wanted, 1)) * std::max(pieces_per_thread, 1L), 1, units);
  return share_dynamically(pieces, wanted, [&](long p) {
    f(std::min(n, units * p / pieces * grain), std::min(n, units * (p + 1) / pieces * grain));
  });
}

}  // namespace hcops
