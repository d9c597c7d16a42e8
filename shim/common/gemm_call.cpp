#include "shim/common/gemm_call.h"

#include <cstdio>
#include <string>

#include "shim/common/verbose.h"

namespace hcops {

void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda, long ldb,
                 double beta, long ldc, const GemmReport &rep, double seconds, const char *extra, long batches) {
  char call[256], key[160];
  std::snprintf(key, sizeof key, "%s,%c,%c,%ld,%ld,%ld", routine, ta, tb, m, n, k);
  std::snprintf(call, sizeof call, "%s,%g,%ld,%ld,%g,%ld", key, alpha, lda, ldb, beta, ldc);
  report_exec("routine,transa,transb,m,n,k,alpha,lda,ldb,beta,ldc", "routine,transa,transb,m,n,k", call, key,
              std::string("hcops:") + rep.family, gemm_details(rep, alpha == 0 || k == 0, extra), rep.threads,
              2.0 * m * n * k * batches, seconds);
}

std::string gemm_details(const GemmReport &rep, bool scaled_only, const char *extra) {
  char details[160];
  if (rep.mr)
    std::snprintf(details, sizeof details, "tile=%dx%d b=%s domains=%d split=%c grid=%dx%d", rep.mr, rep.nr, rep.b,
                  rep.domains, rep.split, rep.grid_m, rep.grid_n);
  else std::snprintf(details, sizeof details, "%s", scaled_only ? "C scaled by beta only" : "unpacked");
  std::string all = details;
  if (rep.a_cache) all += std::string(" a=") + rep.a_cache;
  if (rep.c_streamed) all += " c=streamed";
  if (extra) all += std::string(" ") + extra;
  if (rep.math) all += std::string(" ") + rep.math;
  return all;
}

}  // namespace hcops
