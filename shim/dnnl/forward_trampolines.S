/* The trampolines of every oneDNN C function forwarded to the real libdnnl
 * (forwarded.def; the table and its description: underlying.c). */
#define HCOPS_FORWARD_TABLE dnnl
#define HCOPS_FORWARD_DEF "shim/dnnl/forwarded.def"
#include "shim/common/forward_trampolines.inc"
