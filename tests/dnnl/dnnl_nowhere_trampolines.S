/* The trampolines of dnnl_nowhere.c's table. */
#include "config.h" /* HCOPS_DNNL_GPU_OCL: forwarded.def's GPU functions */
#define HCOPS_FORWARD_TABLE dnnl
#define HCOPS_FORWARD_DEF "shim/dnnl/forwarded.def"
#include "shim/common/forward_trampolines.inc"
