/* HCOPS_DNNL: whether the oneDNN layer computes anything itself. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/* HCOPS_DNNL=0 makes libhcops a pure forwarder of the oneDNN C ABI (every
 * call, dnnl_sgemm and primitive executions included, goes to the real
 * libdnnl); 1, the default, lets HCOps take over what it computes. Read
 * once, with secure_getenv; any other value warns once and means 1. */
__attribute__((visibility("hidden"))) int hcops_dnnl_takeover(void);

#ifdef __cplusplus
}
#endif
