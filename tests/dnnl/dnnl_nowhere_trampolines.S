/* The trampolines of dnnl_nowhere.c's table. */
#define HCOPS_FORWARD_TABLE dnnl
#define HCOPS_FORWARD_DEF "shim/dnnl/forwarded.def"
#include "shim/common/forward_trampolines.inc"
