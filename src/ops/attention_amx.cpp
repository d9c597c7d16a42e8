// ops/attention_amx.h: attention_tiles.h on the hardware's tiles.
#include "ops/attention_amx.h"

#include "kernels/amx/tiles_hw.h"
#include "ops/attention_tiles.h"

namespace hcops::ops {

bool amx_attention_takes(int64_t S) { return attention_tiles::takes(S); }

void amx_attention_forward(const AttentionSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale, bool causal) {
  attention_tiles::forward<kernels::amx::HwTiles>(s, L, S, E, scale, causal);
}

void amx_attention_backward(const AttentionGradSlice<bf16> &s, int64_t L, int64_t S, int64_t E, float scale,
                            bool causal) {
  attention_tiles::backward<kernels::amx::HwTiles>(s, L, S, E, scale, causal);
}

}  // namespace hcops::ops
