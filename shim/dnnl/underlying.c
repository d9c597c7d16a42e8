/* The underlying oneDNN: the real libdnnl that the oneDNN C functions HCOps
 * does not implement are forwarded to (the list: forwarded.def; the trampolines: forward_trampolines.S;
 * the search: shim/common/forward.c). In order:
 *   1. a libdnnl already loaded in the process, even one loaded RTLD_LOCAL
 *      (PyTorch's under python): oneDNN is a runtime with global state (its
 *      primitive cache, its thread pool), never to be loaded twice;
 *   2. HCOPS_UNDERLYING_DNNL=path (HCOPS_REFERENCE_DNNL, its earlier name,
 *      when it is unset);
 *   3. the libdnnl configure found, then "libdnnl.so.2" by soname.
 * A candidate that is HCOps itself (installed as lib/hcops/libdnnl.so.2,
 * opening "libdnnl.so.2" finds us) is skipped. None at all: one error naming
 * HCOPS_UNDERLYING_DNNL at the first forwarded call, which returns
 * dnnl_runtime_error (description.h); dnnl_sgemm still computes. */
#include "config.h"

#include <dlfcn.h>

#include "shim/dnnl/real.h"

#define HCOPS_FORWARD_TABLE dnnl
#define HCOPS_FORWARD_ENV_ALIAS "HCOPS_REFERENCE_DNNL"
#define HCOPS_FORWARD_DEF "shim/dnnl/forwarded.def"
#include "shim/common/forward_table.h"

#include "shim/dnnl/description.h"

HCOPS_DNNL_DESCRIPTION(HCOPS_DEFAULT_UNDERLYING_DNNL, "libdnnl.so.2");

const char *hcops_underlying_dnnl(void) { return hcops_foreign_path(&HCOPS_FORWARD_LIB); }
/* Its earlier name, still exported. */
const char *hcops_reference_dnnl(void) __attribute__((alias("hcops_underlying_dnnl")));

void *hcops_dnnl_real(const char *name) {
  if (!hcops_foreign_path(&HCOPS_FORWARD_LIB)) return NULL;
  return dlsym(HCOPS_FORWARD_LIB.handle, name);
}
