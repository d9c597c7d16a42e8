// The plans of the primitives HCOps claims, from the real primitive
// descriptor; nullptr for what it leaves to libdnnl.
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <memory>

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

std::unique_ptr<PrimitivePlan> matmul_plan(const_dnnl_primitive_desc_t pd);
std::unique_ptr<PrimitivePlan> inner_product_plan(const_dnnl_primitive_desc_t pd);

}  // namespace hcops::dnnl
