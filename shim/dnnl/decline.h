// Why HCOps leaves a primitive, or one execute of it, to libdnnl: the
// claim table and the planners (claim_table.cpp, matmul.cpp,
// inner_product.cpp, attributes.cpp, plan.cpp) and
// run_plan name the condition that declined it, a short token as the
// PyTorch layer's fallback reasons (doc/environment.md, HCOPS_VERBOSE);
// dnnl_primitive_create and _execute print it (report.h). Per thread: a
// planner runs on the thread that creates the primitive.
#pragma once

#include <memory>

namespace hcops::dnnl {

struct PrimitivePlan;

// Records `why` as the reason of the plan or execute in progress on this
// thread; the first one recorded since take_decline() stands, so the
// innermost helper that saw the failure names it (plain_md's `datatype`
// inside matrix_of); false.
bool decline(const char *why);

// The same, for a planner that returns its plan: null.
std::unique_ptr<PrimitivePlan> declined(const char *why);

// The reason recorded on this thread ("unclaimed" if none), and forgets it.
const char *take_decline();

}  // namespace hcops::dnnl
