// One kernel family's operator table (ops/ops_table.h), compiled once per
// family with its -m flags and -DHCOPS_OPS_FAMILY=<name> (ops/ops.am): every
// operator's implementation template, instantiated on the family's f32
// vector traits (kernels/<name>/vec.h).
#ifndef HCOPS_OPS_FAMILY
#error "build with -DHCOPS_OPS_FAMILY=<family> (ops/ops.am)"
#endif
#ifdef __AVX512F__
// GCC 12 reports the _mm512_undefined_* placeholders inside its own AVX-512
// intrinsics (max, min, compare, cvtps, roundscale, bf16 widening) as "used
// uninitialized" once inlined (GCC bug 105593): a false positive of its
// headers, silenced where they are used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define HCOPS_OPS_STR_(x) #x
#define HCOPS_OPS_STR(x) HCOPS_OPS_STR_(x)
#define HCOPS_OPS_CAT_(a, b) a##b
#define HCOPS_OPS_CAT(a, b) HCOPS_OPS_CAT_(a, b)

#include HCOPS_OPS_STR(kernels/HCOPS_OPS_FAMILY/vec.h)
#include "kernels/family_flags.h"
#include "ops/adam_impl.h"
#include "ops/eltwise_impl.h"
#include "ops/layer_norm_impl.h"
#include "ops/ops_table.h"
#include "ops/output_ops_impl.h"
#include "ops/reduce_impl.h"
#include "ops/softmax_impl.h"
#include "ops/transpose_impl.h"

HCOPS_FAMILY_FLAGS_MATCH(HCOPS_OPS_FAMILY);

namespace hcops::ops {

namespace {
using F = kernels::HCOPS_OPS_FAMILY::F32;
}  // namespace

// A family built per vector length (ops/families.def's HCOPS_OPS_FAMILY_VL,
// -msve-vector-bits) names its table by the length.
#if defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS > 0  // (0: SVE, length open)
#define HCOPS_OPS_TABLE HCOPS_OPS_CAT(HCOPS_OPS_CAT(ops_table_, HCOPS_OPS_FAMILY), HCOPS_OPS_CAT(_vl, __ARM_FEATURE_SVE_BITS))
#else
#define HCOPS_OPS_TABLE HCOPS_OPS_CAT(ops_table_, HCOPS_OPS_FAMILY)
#endif

#define HCOPS_OPS_DEFINE(member, impl, params, args) [] params { impl args; },
extern const OpsTable HCOPS_OPS_TABLE;
const OpsTable HCOPS_OPS_TABLE = {HCOPS_OPS_STR(HCOPS_OPS_FAMILY), HCOPS_OPS_ENTRIES(HCOPS_OPS_DEFINE)};
#undef HCOPS_OPS_DEFINE

}  // namespace hcops::ops
