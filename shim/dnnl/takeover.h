// HCOPS_DNNL: whether the oneDNN layer takes over what HCOps computes
// (1, the default) or forwards everything to the real libdnnl (0).
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Read once (secure_getenv); a value other than 0 or 1 warns once and means 1.
__attribute__((visibility("hidden"))) int hcops_dnnl_takeover(void);

#ifdef __cplusplus
}
#endif
