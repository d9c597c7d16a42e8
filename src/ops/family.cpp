#include "ops/family.h"

#include <cstring>

#include "common/family_rows.h"

namespace hcops::ops {

#define HCOPS_OPS_FAMILY(name) extern const OpsTable ops_table_##name;
#include "ops/families.def"
#undef HCOPS_OPS_FAMILY

namespace {

const OpsTable *const kTables[] = {
#define HCOPS_OPS_FAMILY(name) &ops_table_##name,
#include "ops/families.def"
#undef HCOPS_OPS_FAMILY
};

}  // namespace

const OpsTable *ops_table_of(const char *name) {
  for (const OpsTable *t : kTables)
    if (std::strcmp(t->family, name) == 0) return t;
  return nullptr;
}

const OpsTable &ops_table() {
  static const OpsTable *const chosen = [] {
    for (int i = first_allowed_row(); i < family_row_count(); ++i) {
      // A row without operators (a GEMM-only family) passes to the next,
      // before asking whether it runs here (for amx that would ask Linux
      // for the tile state).
      const OpsTable *t = ops_table_of(family_rows()[i].name);
      if (t && row_runs_here(i)) return t;
    }
    return &ops_table_generic;  // every x86-64 runs it: the last row
  }();
  return *chosen;
}

}  // namespace hcops::ops
