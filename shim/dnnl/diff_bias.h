// Inner product backward_weights's diff_bias: the sum over the minibatch of
// diff_dst, accumulated in f32.
#pragma once

#include <oneapi/dnnl/dnnl_types.h>

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

// diff_dst (N x OC, f32 or bf16 as `dd_type`) summed over N into diff_bias
// (OC elements, contiguous, of `db_type`).
void reduce_diff_bias(const Matrix &diff_dst, dnnl_data_type_t dd_type, const void *dd, dnnl_data_type_t db_type,
                      void *db);

}  // namespace hcops::dnnl
