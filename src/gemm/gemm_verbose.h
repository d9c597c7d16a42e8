// HCOPS_VERBOSE output for native GEMM calls, in the spirit of MKL_VERBOSE and
// ONEDNN_VERBOSE. Level 1: one CSV line per call,
//   hcops_verbose,exec,<routine>,<transa>,<transb>,<m>,<n>,<k>,<alpha>,<lda>,<ldb>,<beta>,<ldc>,<threads>,<ms>,<gflops>
// whose fields 4-13 are the column-major sgemm_ arguments: the trace format of
// shared/workloads, so a user's run can be replayed. Level 2 adds a table per
// shape at exit.
#pragma once

namespace hcops {

void report_gemm(const char *routine, char ta, char tb, long m, long n, long k, double alpha, long lda,
                 long ldb, double beta, long ldc, int threads, double seconds);

}  // namespace hcops
