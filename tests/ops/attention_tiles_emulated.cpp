// attention_tiles_emulated.h: the fused attention's code on emulated tiles.
#include "attention_tiles_emulated.h"

#include "kernels/amx/tiles_emulated.h"
#include "ops/attention_tiles.h"

namespace attention_emulated {

using hcops::kernels::amx::EmulatedTiles;
namespace at = hcops::ops::attention_tiles;

bool takes(int64_t S) { return at::takes(S); }
void forward(const hcops::ops::AttentionSlice<hcops::bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
             bool causal) {
  at::forward<EmulatedTiles>(a, L, S, E, scale, causal);
}
void backward(const hcops::ops::AttentionGradSlice<hcops::bf16> &a, int64_t L, int64_t S, int64_t E, float scale,
              bool causal) {
  at::backward<EmulatedTiles>(a, L, S, E, scale, causal);
}
long dpbf16ps_executed() { return hcops::kernels::amx::emulated_dpbf16ps_count.load(); }

}  // namespace attention_emulated
