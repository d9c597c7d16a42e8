#include "shim/torch/report.h"

#include <time.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/log.h"
#include "ops/family.h"

namespace hcops::torch_ops {

namespace {

constexpr const char *names[] = {
#define HCOPS_TORCH_OP_NAME(e, name) name,
    HCOPS_TORCH_OPS(HCOPS_TORCH_OP_NAME)
#undef HCOPS_TORCH_OP_NAME
};
static_assert(sizeof(names) / sizeof(names[0]) == size_t(Op::count), "a name for every op");

std::atomic<int64_t> taken[size_t(Op::count)];
std::atomic<int64_t> fallen[size_t(Op::count)];

struct Summary {
  double seconds = 0;
  std::map<std::string, int64_t> reasons;  // fallback reason -> calls
};
std::mutex lock;
Summary *summaries = nullptr;  // never destroyed: calls may come during exit

void print_summary() {
  std::lock_guard<std::mutex> g(lock);
  print_line("hcops_verbose,summary,op,calls,total_ms,fallbacks,fallback_reasons");
  for (size_t i = 0; i < size_t(Op::count); ++i) {
    const int64_t calls = taken[i].load(), falls = fallen[i].load();
    if (calls == 0 && falls == 0) continue;
    std::string reasons;
    for (const auto &[reason, n] : summaries[i].reasons)
      reasons += (reasons.empty() ? "" : ";") + reason + ":" + std::to_string(n);
    print_line("hcops_verbose,summary,%s,%lld,%.3f,%lld,%s", names[i], static_cast<long long>(calls),
               1e3 * summaries[i].seconds, static_cast<long long>(falls), reasons.c_str());
  }
}

// The legend before the first line, and at level 2 the summary's set-up.
void first_report() {
  static std::once_flag once;
  std::call_once(once, [] {
    print_line("hcops_verbose,info,operators,isa=%s", ops::ops_family());
    print_line("hcops_verbose,legend,op,dtype,shape,threads,ms,impl,details");
    print_line("hcops_verbose,legend,fallback,op,dtype,shape,reason");
    if (verbose_level() >= 2) {
      summaries = new Summary[size_t(Op::count)];
      std::atexit(print_summary);
    }
  });
}

}  // namespace

const char *op_name(Op op) { return names[size_t(op)]; }

Op op_named(const std::string &name) {
  size_t i = 0;
  while (i < size_t(Op::count) && name != names[i]) ++i;
  return Op(i);
}

bool timing() { return verbose_level() >= 1; }

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void report_taken(Op op, const char *dtype, const std::string &shape, int threads, double seconds,
                  const std::string &details) {
  taken[size_t(op)].fetch_add(1, std::memory_order_relaxed);
  if (verbose_level() < 1) return;
  first_report();
  print_line("hcops_verbose,exec,%s,%s,%s,%d,%.4f,hcops:%s,%s", names[size_t(op)], dtype, shape.c_str(), threads,
             1e3 * seconds, ops::ops_family(), details.c_str());
  if (verbose_level() < 2) return;
  std::lock_guard<std::mutex> g(lock);
  summaries[size_t(op)].seconds += seconds;
}

void report_info(const std::string &what) {
  if (verbose_level() < 1) return;
  first_report();
  print_line("hcops_verbose,info,%s", what.c_str());
}

void report_fallback(Op op, const char *dtype, const std::string &shape, const char *reason) {
  fallen[size_t(op)].fetch_add(1, std::memory_order_relaxed);
  if (verbose_level() < 1) return;
  first_report();
  print_line("hcops_verbose,fallback,%s,%s,%s,%s", names[size_t(op)], dtype, shape.c_str(), reason);
  if (verbose_level() < 2) return;
  std::lock_guard<std::mutex> g(lock);
  ++summaries[size_t(op)].reasons[reason];
}

void count_taken(Op op) { taken[size_t(op)].fetch_add(1, std::memory_order_relaxed); }
void count_fallback(Op op) { fallen[size_t(op)].fetch_add(1, std::memory_order_relaxed); }

int64_t taken_calls(Op op) { return taken[size_t(op)].load(); }
int64_t fallback_calls(Op op) { return fallen[size_t(op)].load(); }

}  // namespace hcops::torch_ops
