#include "gemm/gemm_verbose.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "common/cpu_features.h"
#include "common/log.h"
#include "common/team.h"
#include "common/topology.h"

namespace hcops {

namespace {

using ShapeKey = std::tuple<std::string, char, char, long, long, long>;
struct ShapeStats {
  long calls = 0;
  double seconds = 0, flops = 0;
};

std::mutex summary_lock;
std::map<ShapeKey, ShapeStats> *summary = nullptr;

void print_summary() {
  std::lock_guard<std::mutex> g(summary_lock);
  print_line("hcops_verbose,summary,routine,transa,transb,m,n,k,calls,total_ms,gflops");
  double total_s = 0, total_f = 0;
  long calls = 0;
  for (const auto &[key, s] : *summary) {
    print_line("hcops_verbose,summary,%s,%c,%c,%ld,%ld,%ld,%ld,%.3f,%.2f", std::get<0>(key).c_str(),
               std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key), std::get<5>(key),
               s.calls, 1e3 * s.seconds, s.seconds > 0 ? s.flops / s.seconds * 1e-9 : 0.0);
    total_s += s.seconds;
    total_f += s.flops;
    calls += s.calls;
  }
  print_line("hcops_verbose,total,%ld calls,%.3f ms,%.2f GFLOPS", calls, 1e3 * total_s,
             total_s > 0 ? total_f / total_s * 1e-9 : 0.0);
}

void print_header() {
  const Topology &t = topology();
  print_line("hcops_verbose,info,isa=%s,domains=%zu,cores=%d,topology=%s,threads=%s",
             isa_name(selected_isa()), t.domains.size(), t.total_cores(), t.source.c_str(), thread_policy());
  print_line("hcops_verbose,legend,routine,transa,transb,m,n,k,alpha,lda,ldb,beta,ldc,threads,ms,gflops");
}

}  // namespace

void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda,
                 long ldb, double beta, long ldc, int threads, double seconds) {
  static std::once_flag header;
  std::call_once(header, print_header);
  const double flops = 2.0 * m * n * k;
  print_line("hcops_verbose,exec,%s,%c,%c,%ld,%ld,%ld,%g,%ld,%ld,%g,%ld,%d,%.4f,%.2f", routine, ta, tb, m, n, k,
             alpha, lda, ldb, beta, ldc, threads, 1e3 * seconds, seconds > 0 ? flops / seconds * 1e-9 : 0.0);
  if (verbose_level() < 2) return;
  std::lock_guard<std::mutex> g(summary_lock);
  if (!summary) {
    summary = new std::map<ShapeKey, ShapeStats>;
    std::atexit(print_summary);
  }
  ShapeStats &s = (*summary)[ShapeKey(routine, ta, tb, m, n, k)];
  ++s.calls;
  s.seconds += seconds;
  s.flops += flops;
}

}  // namespace hcops
