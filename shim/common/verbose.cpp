#include "shim/common/verbose.h"

#include <time.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "common/log.h"
#include "gemm/team.h"
#include "common/topology.h"
#include "gemm/fp32_math.h"
#include "gemm/gemm.h"
#include "kernels/registry.h"

namespace hcops {

namespace {

struct CallStats {
  long calls = 0;
  double seconds = 0, flops = 0;
};

std::mutex lock;
std::set<std::string> *legends = nullptr;  // printed already
// (key legend, key, impl) -> totals
std::map<std::tuple<std::string, std::string, std::string>, CallStats> *summary = nullptr;

void print_summary() {
  std::lock_guard<std::mutex> g(lock);
  double total_s = 0, total_f = 0;
  long calls = 0;
  const std::string *legend = nullptr;
  for (const auto &[key, s] : *summary) {
    const auto &[key_legend, call, impl] = key;
    if (!legend || *legend != key_legend)
      print_line("hcops_verbose,summary,%s,impl,calls,total_ms,gflops", key_legend.c_str());
    legend = &key_legend;
    print_line("hcops_verbose,summary,%s,%s,%ld,%.3f,%.2f", call.c_str(), impl.c_str(), s.calls, 1e3 * s.seconds,
               s.seconds > 0 ? s.flops / s.seconds * 1e-9 : 0.0);
    total_s += s.seconds;
    total_f += s.flops;
    calls += s.calls;
  }
  print_line("hcops_verbose,total,%ld calls,%.3f ms,%.2f GFLOPS", calls, 1e3 * total_s,
             total_s > 0 ? total_f / total_s * 1e-9 : 0.0);
}

void print_info() {
  const Topology &t = topology();
  const ChosenKernel<Sgemm> &k = chosen_kernel<Sgemm>();
  print_line("hcops_verbose,info,isa=%s,domains=%zu,cores=%d,topology=%s,threads=%s,fp32_%s",
             k.family ? k.family->name : "none", t.domains.size(), t.total_cores(), t.source.c_str(), thread_policy(),
             fp32_math_detail().c_str());
}

}  // namespace

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void report_exec(const char *legend, const char *key_legend, const std::string &call, const std::string &key,
                 const std::string &impl, const std::string &details, int threads, double flops, double seconds) {
  static std::once_flag info;
  std::call_once(info, print_info);
  {
    std::lock_guard<std::mutex> g(lock);
    if (!legends) legends = new std::set<std::string>;  // never destroyed: calls may come at exit
    if (legends->insert(legend).second) print_line("hcops_verbose,legend,%s,threads,ms,gflops,impl,details", legend);
  }
  print_line("hcops_verbose,exec,%s,%d,%.4f,%.2f,%s,%s", call.c_str(), threads, 1e3 * seconds,
             seconds > 0 ? flops / seconds * 1e-9 : 0.0, impl.c_str(), details.c_str());
  if (verbose_level() < 2) return;
  std::lock_guard<std::mutex> g(lock);
  if (!summary) {
    summary = new std::map<std::tuple<std::string, std::string, std::string>, CallStats>;
    std::atexit(print_summary);
  }
  CallStats &s = (*summary)[{key_legend, key, impl}];
  ++s.calls;
  s.seconds += seconds;
  s.flops += flops;
}

}  // namespace hcops
