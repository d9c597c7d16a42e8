// The fused bf16 attention on AMX tiles (ops/attention_tiles.h on the
// hardware's tiles), built with the amx family's flags where the compiler
// has the AMX intrinsics (HCOPS_HAVE_AMX). Called only where the amx family
// serves the bf16 GEMMs (its CPU features, Linux's permission for the tile
// state and HCOPS_ISA all allow it): ops/attention.cpp decides.
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace hcops::ops {

// Whether the fused kernel takes a slice of S keys (a multiple of 32).
bool amx_attention_takes(int64_t S);
void amx_attention_forward(const AttentionSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale, bool causal);
void amx_attention_backward(const AttentionGradSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale,
                            bool causal);

}  // namespace hcops::ops
