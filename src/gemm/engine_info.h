// The engine's description of itself, for hcops-info.
#pragma once

#include <string>

namespace hcops {

// CPU features and kernels, topology, blocking, threads, and the plan that an
// m x n x k SGEMM would get (omitted when a size is <= 0).
std::string engine_info(long m, long n, long k);

// The kernel families this CPU runs, one name per line, in table order:
// what `hcops-info --families` prints and the tests iterate over.
std::string runnable_families();

}  // namespace hcops
