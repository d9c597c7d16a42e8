// The claim table (claim.h): every key HCOps computes.
#include "shim/dnnl/claim.h"
#include "shim/dnnl/decline.h"

namespace hcops::dnnl {

namespace {

// f32; bf16 inputs accumulated in f32, written as f32 or rounded to bf16.
#define HCOPS_DNNL_CLAIM_TYPES(kind, prop)                 \
  {kind, prop, dnnl_f32, dnnl_f32, Types::f32},            \
      {kind, prop, dnnl_bf16, dnnl_f32, Types::bf16_f32},  \
      {kind, prop, dnnl_bf16, dnnl_bf16, Types::bf16_bf16}

constexpr Claim kClaims[] = {
    HCOPS_DNNL_CLAIM_TYPES(dnnl_matmul, dnnl_prop_kind_undef),
    HCOPS_DNNL_CLAIM_TYPES(dnnl_inner_product, dnnl_forward_training),
    HCOPS_DNNL_CLAIM_TYPES(dnnl_inner_product, dnnl_forward_inference),
    HCOPS_DNNL_CLAIM_TYPES(dnnl_inner_product, dnnl_backward_data),
    HCOPS_DNNL_CLAIM_TYPES(dnnl_inner_product, dnnl_backward_weights),
};

#undef HCOPS_DNNL_CLAIM_TYPES

}  // namespace

const Claim *find_claim(dnnl_primitive_kind_t kind, dnnl_prop_kind_t prop, dnnl_data_type_t ab,
                        dnnl_data_type_t c) {
  for (const Claim &row : kClaims)
    if (row.kind == kind && row.prop == prop && row.ab == ab && row.c == c) return &row;
  decline("datatypes");
  return nullptr;
}

}  // namespace hcops::dnnl
