#include "gemm/pack_policy.h"

#include "common/env.h"

namespace hcops {

BPacking b_packing() {
  static const BPacking policy = [] {
    static const char *const choices[] = {"auto", "always", "never", nullptr};
    return static_cast<BPacking>(env_choice("HCOPS_PACK_B", choices, 0));
  }();
  return policy;
}

bool b_in_place_pays(Trans tb, long m, long mc, size_t span_bytes, size_t l2_bytes) {
  return tb == Trans::N || (m <= 2 * mc && span_bytes <= l2_bytes / 2);
}

SkinnyMode skinny_mode() {
  static const SkinnyMode mode = [] {
    static const char *const choices[] = {"auto", "always", "never", nullptr};
    return static_cast<SkinnyMode>(env_choice("HCOPS_SKINNY", choices, 0));
  }();
  return mode;
}

bool skinny_allowed() { return skinny_mode() != SkinnyMode::never; }
bool thin_choice_allowed() { return skinny_mode() == SkinnyMode::automatic; }

}  // namespace hcops
