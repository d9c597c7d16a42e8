#include "common/contention.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#include "common/env.h"
#include "common/log.h"
#include "common/topology.h"
#include "common/wait.h"

namespace hcops {

namespace {

// Regions shorter than this are mostly the runtime's fork and join, whose
// cost says nothing about the cores (2 threads, 50 us of work: 1.3 cores).
constexpr int64_t kMeasuredRegionNs = 2000000;
// The moving average's time constant: a region of this length replaces it.
constexpr int64_t kAverageNs = 50000000;

// Measurements older than this are forgotten (the full team again): the
// products long enough to measure may have stopped with the contention.
constexpr int64_t kStaleNs = 4 * kProbeNs;

// The process's involuntary context switches a second, a moving average
// over about kRateNs, and its last reading.
constexpr double kRateNs = 1e9;
std::atomic<double> g_preempt_rate{0};
std::atomic<long> g_preempt_seen{-1};
std::atomic<int64_t> g_preempt_at{0};

std::atomic<long> g_cores_milli{-1};
// Until when regions expected to be short read their threads' CPU times
// too (RegionTimer). Only ever moved later: of two threads' regions ending
// together, the one that asks for longer wins.
std::atomic<int64_t> g_measure_all_until{0};
void measure_all_until(int64_t t) {
  int64_t seen = g_measure_all_until.load(std::memory_order_relaxed);
  while (seen < t && !g_measure_all_until.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
  }
}
std::atomic<int64_t> g_last_full_ns{0};
std::atomic<int> g_last_team{0};

// On a synthetic topology (HWLOC_XMLFILE of another machine) the team size
// is part of what is simulated, on however few cores: kept as asked.
bool enabled() {
  static const bool on = env_long("HCOPS_ADAPT_THREADS", 1, 0, 1) != 0 && topology().this_system;
  return on;
}

// Involuntary context switches of the whole process so far: a thread that
// had to give its core to another task.
long process_preemptions() {
  rusage r;
  return getrusage(RUSAGE_SELF, &r) == 0 ? r.ru_nivcsw : 0;
}

// Whether other tasks are taking cores from the process now: the rate of
// its involuntary context switches since the last call, averaged (called
// at the end of each measured region).
bool cores_taken(int64_t now) {
  const long seen = process_preemptions();
  const long last = g_preempt_seen.exchange(seen, std::memory_order_relaxed);
  const int64_t at = g_preempt_at.exchange(now, std::memory_order_relaxed);
  double rate = g_preempt_rate.load(std::memory_order_relaxed);
  if (last >= 0 && now > at) {  // in double: no overflow, however long since the last reading
    const double dt = double(now - at), sample = double(std::max(0L, seen - last)) * 1e9 / dt;
    rate += (sample - rate) * std::min(dt, kRateNs) / kRateNs;
    g_preempt_rate.store(rate, std::memory_order_relaxed);
  }
  return rate >= double(kContendedRate);
}

}  // namespace

int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

long full_team_milli(int team) { return long(team) * 1000 - std::max(500L, long(team) * 250); }

int choose_team(int wanted, long cores_milli, int64_t since_probe_ns) {
  if (wanted <= 1 || cores_milli < 0) return std::max(wanted, 1);
  if (cores_milli >= full_team_milli(wanted) || since_probe_ns >= kProbeNs) return wanted;
  return static_cast<int>(std::clamp<long>((cores_milli + 500) / 1000, 1, wanted));
}

int contended_team(int wanted) {
  if (wanted <= 1 || !enabled()) return std::max(wanted, 1);
  const int team = choose_team(wanted, g_cores_milli.load(std::memory_order_relaxed),
                               now_ns() - g_last_full_ns.load(std::memory_order_relaxed));
  // Each change of the team, when HCOPS_VERBOSE asks (a decline of threads
  // is shown with its reason, as every fallback is).
  if (verbose_level() >= 1 && g_last_team.exchange(team, std::memory_order_relaxed) != team) {
    char buf[160];
    if (contention_note(wanted, buf, sizeof buf) && team < wanted)
      print_line("hcops_verbose,info,threads %d of %d: %s\n", team, wanted, buf);
    else
      print_line("hcops_verbose,info,threads %d of %d\n", team, wanted);
  }
  return team;
}

int settled_team(int wanted) {
  if (wanted <= 1 || !enabled()) return std::max(wanted, 1);
  if (now_ns() - g_last_full_ns.load(std::memory_order_relaxed) >= kStaleNs) return wanted;
  return choose_team(wanted, g_cores_milli.load(std::memory_order_relaxed), 0);
}

const char *contention_note(int wanted, char *buf, unsigned long size) {
  const long c = g_cores_milli.load(std::memory_order_relaxed);
  if (!enabled() || wanted <= 1 || c < 0 || c >= full_team_milli(wanted)) return nullptr;
  std::snprintf(buf, size, "the last full teams ran on %.2f cores (other work shares the CPU; HCOPS_ADAPT_THREADS=0 keeps %d)",
                c / 1000.0, wanted);
  return buf;
}

RegionTimer::RegionTimer(int team, int wanted, bool expect_short) : team_(team), wanted_(wanted), wall0_(now_ns()) {
  measuring_ = !expect_short || wall0_ < g_measure_all_until.load(std::memory_order_relaxed);
}

void RegionTimer::finish() {
  const int64_t end = now_ns(), wall = end - wall0_;
  // A short region (mostly fork and join) says nothing of the cores, nor
  // does it count as a try of the full team.
  if (team_ < 2 || wall < kMeasuredRegionNs || !enabled()) return;
  // Expected short, and it was not: measure them all for kProbeNs (the
  // process's first region, which starts the runtime's threads, is often
  // one), and for as long after as the measured ones lose cores.
  if (!measuring_) {
    measure_all_until(end + kProbeNs);
    return;
  }
  long cores = static_cast<long>(
      std::min<int64_t>(cpu_ns_.load(std::memory_order_relaxed) * 1000 / wall, int64_t(team_) * 1000));
  // Unless other tasks are taking the process's cores, the team had them,
  // whatever the count (contention.h).
  if (!cores_taken(end)) cores = std::max(cores, full_team_milli(team_));
  const bool got_its_cores = cores >= full_team_milli(team_);
  if (!got_its_cores) measure_all_until(end + kStaleNs);
  // A reduced team that got its cores says nothing of the full team's; one
  // that did not says there are fewer still.
  if (team_ < wanted_ && got_its_cores) return;
  if (team_ >= wanted_) g_last_full_ns.store(end, std::memory_order_relaxed);
  // Nothing measured yet counts as the full team: the process's first
  // regions (which start the runtime's threads) move the average only by
  // their share, like any other region.
  const long seen = g_cores_milli.load(std::memory_order_relaxed);
  const long old = seen >= 0 ? seen : long(wanted_) * 1000;
  // A full team that ran on its cores ends a reduction at once; otherwise the
  // average moves by the region's share of kAverageNs.
  const long next = got_its_cores ? cores
                                  : old + static_cast<long>((cores - old) * std::min<int64_t>(wall, kAverageNs) /
                                                            kAverageNs);
  g_cores_milli.store(next, std::memory_order_relaxed);
}

}  // namespace hcops
