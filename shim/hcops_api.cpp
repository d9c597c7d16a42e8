// include/hcops.h: the library's own small C API.
#include "hcops.h"

#include <string>

#include "common/fp_env.h"
#include "config.h"
#include "gemm/engine_info.h"
#include "ops/interface.h"

uint64_t hcops::engine_interface_tag() { return interface_tag(PACKAGE_VERSION); }

extern "C" {

const char *hcops_version(void) { return PACKAGE_VERSION; }

const char *hcops_kernel_families(void) {
  // Never destroyed: callers may hold the pointer until exit.
  static const std::string *names = new std::string(hcops::runnable_families());
  return names->c_str();
}

void hcops_print_info(FILE *out, long m, long n, long k) {
  hcops::KeepFpEnv keep;  // a report, not a computation: it leaves no flag
  const char *ref = hcops_underlying_blas();
  std::fprintf(out, "hcops %s\n", hcops_version());
  std::fprintf(out, "%s", hcops::engine_info(m, n, k).c_str());
  std::fprintf(out, "underlying BLAS (forwarded routines): %s\n", ref ? ref : "none found (set HCOPS_UNDERLYING_BLAS)");
}

}  // extern "C"
