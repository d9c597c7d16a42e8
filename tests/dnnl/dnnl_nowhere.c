/* A test-only copy of libhcops's oneDNN forward table (the same symbol list
 * and description as shim/dnnl/underlying.c) whose only candidate does not
 * exist: a process without any libdnnl, without hiding the system's. */
#include "config.h"
#define HCOPS_FORWARD_TABLE dnnl
#define HCOPS_FORWARD_DEF "shim/dnnl/forwarded.def"
#include "shim/common/forward_table.h"
#include "shim/dnnl/description.h"

HCOPS_DNNL_DESCRIPTION("/nonexistent/libdnnl.so.2");
