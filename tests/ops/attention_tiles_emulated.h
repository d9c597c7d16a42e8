// ops/attention_tiles.h instantiated on the emulated tiles
// (kernels/amx/tiles_emulated.h), in its own translation unit built with the
// AVX-512 BF16 flags (attention_tiles_emulated.cpp), so that the test
// program runs anywhere until it has checked the CPU.
#pragma once

#include <cstdint>

#include "ops/attention.h"

namespace attention_emulated {

// Whether the fused kernel takes a slice of S keys.
bool takes(int64_t S);
void forward(const hcops::ops::AttentionSlice<hcops::bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
             bool causal);
void backward(const hcops::ops::AttentionGradSlice<hcops::bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
              bool causal);
// TDPBF16PS the emulation has executed, over all threads.
long dpbf16ps_executed();

}  // namespace attention_emulated
