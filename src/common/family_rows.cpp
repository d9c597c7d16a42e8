#include "common/family_rows.h"

#include "config.h"  // HCOPS_HAVE_AMX, for families.def

#include <strings.h>

#include <string>

#include "common/cpu_features.h"
#include "common/env.h"
#include "common/log.h"

namespace hcops {

namespace {

const FamilyRow kRows[] = {
#define HCOPS_KERNEL_FAMILY(ns, needs, summary) {#ns, (needs), summary},
#include "kernels/families.def"
#undef HCOPS_KERNEL_FAMILY
};
constexpr int kCount = sizeof kRows / sizeof *kRows;

int best_row() {
  for (int i = 0; i < kCount; ++i)
    if (row_runs_here(i)) return i;
  return kCount - 1;
}

}  // namespace

const FamilyRow *family_rows() { return kRows; }
int family_row_count() { return kCount; }

bool row_runs_here(int i) { return features_usable(kRows[i].needs); }

int first_allowed_row() {
  static const int first = [] {
    const char *asked = env_raw("HCOPS_ISA");
    if (!asked) return 0;
    for (int i = 0; i < kCount; ++i) {
      if (strcasecmp(asked, kRows[i].name) != 0) continue;
      if (row_runs_here(i)) return i;
      const std::string missing = feature_names(kRows[i].needs & ~cpu_features().mask());
      const std::string disabled =
          features_turned_off(kRows[i].needs) ? feature_names(kRows[i].needs & cpu_features().disabled) : "";
      if (missing.empty())  // the CPU has it all: Linux refused the AMX tile state
        warn_once("HCOPS_ISA", "HCOPS_ISA=%s cannot run: Linux refused the AMX tile state; using %s", kRows[i].name,
                  kRows[best_row()].name);
      else if (!disabled.empty())
        warn_once("HCOPS_ISA", "HCOPS_ISA=%s needs %s, which HCOPS_CPU_DISABLE turns off; using %s", kRows[i].name,
                  disabled.c_str(), kRows[best_row()].name);
      else
        warn_once("HCOPS_ISA", "HCOPS_ISA=%s is not supported by this CPU (it needs %s); using %s", kRows[i].name,
                  missing.c_str(), kRows[best_row()].name);
      return 0;
    }
    std::string names;
    for (int i = 0; i < kCount; ++i) names += (i ? "|" : "") + std::string(kRows[i].name);
    warn_once("HCOPS_ISA", "HCOPS_ISA=%s is not one of %s; ignored", quoted(asked).c_str(), names.c_str());
    return 0;
  }();
  return first;
}

bool isa_asked_for(int i) {
  const char *asked = env_raw("HCOPS_ISA");
  return asked && i >= 0 && i < kCount && strcasecmp(asked, kRows[i].name) == 0 && first_allowed_row() == i;
}

}  // namespace hcops
