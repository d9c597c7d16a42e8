#include "ops/family.h"

#include <cstring>

#include "common/cpu_features.h"
#include "common/family_rows.h"
#include "common/log.h"

namespace hcops::ops {

#define HCOPS_OPS_FAMILY(name) extern const OpsTable ops_table_##name;
#define HCOPS_OPS_FAMILY_VL(name)                                                                           \
  extern const OpsTable ops_table_##name##_vl128, ops_table_##name##_vl256, ops_table_##name##_vl512,      \
      ops_table_##name##_vl1024, ops_table_##name##_vl2048;
#include "ops/families.def"
#undef HCOPS_OPS_FAMILY
#undef HCOPS_OPS_FAMILY_VL

namespace {

// A family's tables: one, or one per vector length (index log2(bits / 128)).
struct FamilyTables {
  const char *name;
  const OpsTable *const *by_length;  // null: `one` serves every length
  const OpsTable *one;
};

#define HCOPS_OPS_FAMILY(name)
#define HCOPS_OPS_FAMILY_VL(name)                                                                                   \
  const OpsTable *const name##_by_length[] = {&ops_table_##name##_vl128, &ops_table_##name##_vl256,                 \
                                             &ops_table_##name##_vl512, &ops_table_##name##_vl1024,                \
                                             &ops_table_##name##_vl2048};
#include "ops/families.def"
#undef HCOPS_OPS_FAMILY
#undef HCOPS_OPS_FAMILY_VL

const FamilyTables kTables[] = {
#define HCOPS_OPS_FAMILY(name) {#name, nullptr, &ops_table_##name},
#define HCOPS_OPS_FAMILY_VL(name) {#name, name##_by_length, nullptr},
#include "ops/families.def"
#undef HCOPS_OPS_FAMILY
#undef HCOPS_OPS_FAMILY_VL
};

// The table built for `bits` (a power of two from 128 to 2048, the lengths
// SVE allows since the architecture's 2021 revision), or null.
const OpsTable *for_length(const OpsTable *const *by_length, int bits) {
  for (int i = 0, b = 128; b <= 2048; ++i, b *= 2)
    if (b == bits) return by_length[i];
  return nullptr;
}

bool vector_length_family(const char *name) {
  for (const FamilyTables &t : kTables)
    if (t.by_length && std::strcmp(t.name, name) == 0) return true;
  return false;
}

}  // namespace

bool has_operators(const char *name) {
  for (const FamilyTables &t : kTables)
    if (std::strcmp(t.name, name) == 0) return true;
  return false;
}

const OpsTable *ops_table_of(const char *name) {
  for (const FamilyTables &t : kTables)
    if (std::strcmp(t.name, name) == 0) return t.by_length ? for_length(t.by_length, sve_vector_bits()) : t.one;
  return nullptr;
}

const OpsTable &ops_table() {
  static const OpsTable *const chosen = [] {
    for (int i = first_allowed_row(); i < family_row_count(); ++i) {
      // A row without operators (a GEMM-only family) passes to the next,
      // before asking whether it runs here (for amx that would ask Linux
      // for the tile state).
      const char *name = family_rows()[i].name;
      const OpsTable *t = ops_table_of(name);
      if (t && row_runs_here(i)) return t;
      if (!t && vector_length_family(name) && row_runs_here(i))
        note_once("ops-vl", "ops: %s has no operators built for this CPU's %d-bit vectors; the next family's serve",
                  name, sve_vector_bits());
    }
    return &ops_table_generic;  // every CPU runs it: the last row
  }();
  return *chosen;
}

}  // namespace hcops::ops
