#include "ops/family.h"

#include <cstring>

#include "kernels/family_rows.h"

namespace hcops::ops {

namespace {

constexpr Family kFamilies[] = {Family::avx512, Family::avx2, Family::generic};

}  // namespace

const char *family_name(Family f) {
  switch (f) {
    case Family::avx512: return "avx512";
    case Family::avx2: return "avx2";
    case Family::generic: return "generic";
  }
  return "?";
}

Family family() {
  static const Family chosen = [] {
    for (int i = first_allowed_row(); i < family_row_count(); ++i) {
      // A row without operator kernels (a GEMM-only family) passes to the
      // next, before asking whether it runs here (for amx that would ask
      // Linux for the tile state).
      for (Family f : kFamilies)
        if (std::strcmp(family_rows()[i].name, family_name(f)) == 0 && row_runs_here(i)) return f;
    }
    return Family::generic;
  }();
  return chosen;
}

}  // namespace hcops::ops
