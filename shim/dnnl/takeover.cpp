#include "shim/dnnl/takeover.h"

#include "common/env.h"

// A function-local static: read on the first oneDNN call, not at load, and
// once, so that a process's calls agree with one another.
extern "C" int hcops_dnnl_takeover(void) {
  static const int on = static_cast<int>(hcops::env_long("HCOPS_DNNL", 1, 0, 1));
  return on;
}
