// The side table of the oneDNN layer: primitive -> the plan HCOps runs for
// it. Every handle stays libdnnl's own object; a primitive HCOps claimed is
// only a key here, inserted after the real dnnl_primitive_create and erased
// before the real dnnl_primitive_destroy (ideep caches primitives, and a
// freed address comes back for another primitive).
//
// Thread-safe: lookups share a reader lock, held only for the lookup (the
// plan is immutable and lives until the primitive's destroy, which a caller
// must not race with its own execute, as with libdnnl). Fork-safe: the lock
// is taken around fork(), so a child never inherits it held by a thread it
// does not have.
#pragma once

#include <memory>

#include <oneapi/dnnl/dnnl_types.h>

namespace hcops::dnnl {

struct PrimitivePlan;

// Takes ownership; replaces a plan left under the same key.
void side_table_insert(const_dnnl_primitive_t prim, std::unique_ptr<const PrimitivePlan> plan);
// The plan of `prim`, nullptr when HCOps did not claim it.
const PrimitivePlan *side_table_find(const_dnnl_primitive_t prim);
// Drops the plan of `prim`, if any.
void side_table_erase(const_dnnl_primitive_t prim);

}  // namespace hcops::dnnl
