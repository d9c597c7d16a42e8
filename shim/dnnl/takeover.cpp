#include "shim/dnnl/takeover.h"

#include "common/env.h"

extern "C" int hcops_dnnl_takeover(void) {
  // A function-local static: read once, thread-safe, never again after fork.
  static const int on = static_cast<int>(hcops::env_long("HCOPS_DNNL", 1, 0, 1));
  return on;
}
