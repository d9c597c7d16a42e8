/* The real libdnnl behind the oneDNN layer (shim/dnnl/): its definitions of
 * the functions HCOps defines itself, for the calls it hands on. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* The real libdnnl's own definition of `name` (never HCOps's), looked up in
 * the library the forwarder found (underlying.c: one already loaded, else
 * HCOPS_UNDERLYING_DNNL, else the one configure found, else libdnnl.so.2);
 * NULL when there is none, reported once by the forwarder. Callers cache
 * the result: it is a dlsym. */
__attribute__((visibility("hidden"))) void *hcops_dnnl_real(const char *name);

/* The file of that libdnnl, NULL when there is none (triggers the search). */
const char *hcops_underlying_dnnl(void);

#ifdef __cplusplus
}

/* The real `fn`, typed as oneapi/dnnl/dnnl.h declares it. */
#define HCOPS_DNNL_REAL(fn) reinterpret_cast<decltype(&fn)>(hcops_dnnl_real(#fn))
#endif
