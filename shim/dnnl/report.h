// HCOPS_VERBOSE for the oneDNN primitives: level 1, one line per execute
// HCOps ran, ONEDNN_VERBOSE 2.6's exec line with hcops_verbose as marker and
// hcops:<family> as implementation; level 2, at exit, the primitives HCOps
// ran (per kind and problem) and the count of executes handed to libdnnl.
// A matmul or inner product it leaves to libdnnl: one fallback line with
// the reason, when the primitive is made (or at an execute it declines).
// Silent at level 0.
#pragma once

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

void report_executed(const PrimitivePlan &plan, const char *family, double seconds);
// An execute handed to libdnnl (counted at level 2 only).
void report_forwarded();
// A matmul or inner product HCOps leaves to libdnnl, at level 1 and above:
// "hcops_verbose,fallback,dnnl,<kind>,create|execute,<reason>" (decline.h).
void report_declined(const char *kind, const char *when, const char *why);

}  // namespace hcops::dnnl
