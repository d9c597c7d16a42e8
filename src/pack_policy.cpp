#include "pack_policy.h"

#include "env.h"

namespace hcops {

BPacking b_packing() {
  static const BPacking policy = [] {
    static const char *const choices[] = {"auto", "always", "never", nullptr};
    return static_cast<BPacking>(env_choice("HCOPS_PACK_B", choices, 0));
  }();
  return policy;
}

bool b_in_place_pays(long m, long mc) { return m <= 2 * mc; }

}  // namespace hcops
