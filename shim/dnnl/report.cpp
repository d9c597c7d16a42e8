#include "shim/dnnl/report.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "common/log.h"

namespace hcops::dnnl {

namespace {

struct Totals {
  long calls = 0;
  double seconds = 0;
};

std::mutex lock;
std::map<std::string, Totals> *executed = nullptr;  // never destroyed: executes may come at exit
std::atomic<long> forwarded{0};

// A child of fork() never inherits the lock held by a thread it lacks.
__attribute__((constructor)) void register_fork_handlers() {
  pthread_atfork([] { lock.lock(); }, [] { lock.unlock(); }, [] { lock.unlock(); });
}

void print_summary() {
  std::lock_guard<std::mutex> g(lock);
  long calls = 0;
  print_line("hcops_verbose,summary,dnnl,primitive,problem,impl,calls,total_ms");
  for (const auto &[key, t] : *executed) {
    print_line("hcops_verbose,summary,dnnl,%s,%ld,%.3f", key.c_str(), t.calls, 1e3 * t.seconds);
    calls += t.calls;
  }
  print_line("hcops_verbose,total,dnnl,%ld executed by hcops,%ld forwarded to libdnnl", calls,
             forwarded.load(std::memory_order_relaxed));
}

// The summary's table, made (and the summary registered) on first use.
std::map<std::string, Totals> &table() {
  if (!executed) {
    executed = new std::map<std::string, Totals>;
    std::atexit(print_summary);
  }
  return *executed;
}

}  // namespace

void report_executed(const PrimitivePlan &plan, const char *family, double seconds) {
  print_line("hcops_verbose,exec,cpu,%s,hcops:%s,%s,%g", plan.verbose.kind.c_str(), family, plan.verbose.tail.c_str(),
             1e3 * seconds);
  if (verbose_level() < 2) return;
  std::lock_guard<std::mutex> g(lock);
  Totals &t = table()[plan.verbose.summary_key + ",hcops:" + family];
  ++t.calls;
  t.seconds += seconds;
}

void report_declined(const char *kind, const char *when, const char *why) {
  if (verbose_level() < 1) return;
  print_line("hcops_verbose,fallback,dnnl,%s,%s,%s", kind, when, why);
}

void report_forwarded() {
  if (verbose_level() < 2) return;
  forwarded.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(lock);
  table();
}

}  // namespace hcops::dnnl
