// What HCOps claims of oneDNN's primitives, and the planners that build the
// plan of one it claims from the real primitive descriptor.
//
// The claim table declares what is taken, as oneDNN's implementation lists
// (cpu_matmul_list.cpp, cpu_inner_product_list.cpp) declare theirs: one row
// per (primitive kind, propagation, datatype of A and B, datatype of C) that
// the engine computes, with the engine's datatypes for it. A primitive of
// a kind HCOps computes whose key has no row is left to libdnnl, with the
// reason "datatypes" in verbose; the planners then check the rest (layouts,
// attributes, geometry) and name what they decline (decline.h).
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <memory>

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

struct Claim {
  dnnl_primitive_kind_t kind;
  dnnl_prop_kind_t prop;  // dnnl_prop_kind_undef for a matmul, which has none
  dnnl_data_type_t ab, c;
  Types types;
};

// The row of this key, else nullptr with the reason "datatypes" recorded.
const Claim *find_claim(dnnl_primitive_kind_t kind, dnnl_prop_kind_t prop, dnnl_data_type_t ab,
                        dnnl_data_type_t c);

// The plan of a matmul or inner product HCOps claims; nullptr (the reason
// recorded) for one it leaves to libdnnl.
std::unique_ptr<PrimitivePlan> matmul_plan(const_dnnl_primitive_desc_t pd);
std::unique_ptr<PrimitivePlan> inner_product_plan(const_dnnl_primitive_desc_t pd);

}  // namespace hcops::dnnl
