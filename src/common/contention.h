// The team a parallel region should start on a CPU that other work shares.
// When other processes take cores (a DataLoader worker, a daemon, another
// job in its own session, whose group the scheduler then weighs as much as
// this whole process), a team of as many threads as the process may use
// gets fewer cores than threads: its threads take turns on a core, each
// fork and join waits for a thread that is not running, and every OpenMP
// runtime thread that spins at a barrier takes time from the thread it
// waits for. A smaller team is then faster (DiT-S/2 with one core busy, on
// 2 cores: 2 threads 5.4-10.6 s a step, 1 thread 3.2-3.5 s).
//
// So the regions measure how much CPU their threads actually got: the sum
// of the team's thread CPU times over the region's wall time, the cores the
// team effectively ran on. A short count means lost cores only while the
// scheduler is taking cores from the process's threads for other tasks:
// its involuntary context switches (getrusage), at kContendedRate a second
// or more over the last second. Otherwise the short count is the team's
// own imbalance and waits, or a hypervisor running other guests on this
// one's virtual CPUs (steal time), neither of which a smaller team helps.
// (2-core KVM guest, DiT-S/2 bf16: quiet, 15 involuntary switches a second
// and regions measured at 1.0-1.49 cores, which cut the team to 1 for half
// a second at a time; beside a busy loop, 90 a second, and 1.8 s steps
// against 8.1 s with the full team.) A moving average over regions of at least
// kMeasuredRegionNs (shorter ones are mostly fork and join) decides: the
// full team while it ran on at least team - max(0.5, team / 4) cores (the
// rest is waiting and imbalance, not lost cores), else the rounded number
// of cores it got; once every kProbeNs the full team again, to see whether
// the cores are back; measurements older than 4 kProbeNs are forgotten.
// HCOPS_ADAPT_THREADS=0 keeps the full team.
#pragma once

#include "common/api.h"
#include <atomic>
#include <cstdint>

namespace hcops {

// How often a reduced team tries the full team again.
constexpr int64_t kProbeNs = 500000000;

// Involuntary context switches of the process a second, at and above which
// a region's short count of cores is taken as cores lost to other work.
constexpr long kContendedRate = 40;

// CPU time of the calling thread, in nanoseconds.
HCOPS_API int64_t thread_cpu_ns();

// The team to start now for a region that could use `wanted` threads.
int contended_team(int wanted);

// The same without the periodic full team: what the measurements alone
// say (for the OpenMP runtime's own team, gemm/team.h's fit_runtime_team).
HCOPS_API int settled_team(int wanted);

// Why contended_team() gives fewer than `wanted`, or nullptr (for the
// verbose output and hcops-info).
const char *contention_note(int wanted, char *buf, unsigned long size);

// The decision alone (for the tests): `cores_milli` the moving average of
// the cores the full team ran on, times 1000 (negative: none measured yet);
// `since_probe_ns` the time since the last full-team region.
int choose_team(int wanted, long cores_milli, int64_t since_probe_ns);

// The cores (times 1000) at and above which a team of `team` counts as
// having its cores: team - max(0.5, team / 4).
long full_team_milli(int team);

// Measures one region of `team` threads (of `wanted`): construct before the
// region, each thread adds its own CPU time with ThreadTimer, finish() after.
//
// A thread's CPU time is a system call (the vDSO serves no thread clock):
// two a thread, 1-2 us a region on a KVM guest, a fifth of a 64^3 sgemm's
// time on 2 threads (2-core Zen 3 guest: 70 against 104 GFLOPS without
// them). A region its caller expects to end well within the 2 ms a region
// must last to be counted (contention.cpp's kMeasuredRegionNs) skips them
// (`expect_short`). If such a region runs that long all the same (its
// threads waited for cores that other work took), every region is measured
// for the next 0.5 s, and on for as long as they lose cores, so that a
// process of short regions still sees the contention: one region late.
class HCOPS_API RegionTimer {
 public:
  RegionTimer(int team, int wanted, bool expect_short = false);
  bool measuring() const { return measuring_; }
  void add_thread_cpu(int64_t ns) { cpu_ns_.fetch_add(ns, std::memory_order_relaxed); }
  void finish();

 private:
  int team_, wanted_;
  bool measuring_;
  int64_t wall0_;
  std::atomic<int64_t> cpu_ns_{0};
};

// A team thread's share of a RegionTimer: CPU time from construction to
// destruction (nothing when the timer is null or not measuring).
class ThreadTimer {
 public:
  explicit ThreadTimer(RegionTimer *r) : r_(r && r->measuring() ? r : nullptr), t0_(r_ ? thread_cpu_ns() : 0) {}
  ~ThreadTimer() {
    if (r_) r_->add_thread_cpu(thread_cpu_ns() - t0_);
  }
  ThreadTimer(const ThreadTimer &) = delete;
  ThreadTimer &operator=(const ThreadTimer &) = delete;

 private:
  RegionTimer *r_;
  int64_t t0_;
};

}  // namespace hcops
