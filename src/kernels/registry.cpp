#include "kernels/registry.h"

#include "config.h"  // HCOPS_HAVE_AMX, for families.def

#include <cassert>
#include <string>

#include "common/cpu_features.h"
#include "common/dtype.h"
#include "common/log.h"

namespace hcops {

namespace kernels {
#define HCOPS_KERNEL_FAMILY(ns, needs, summary) \
  namespace ns {                                \
  extern const KernelList kernels;              \
  }
#include "kernels/families.def"
#undef HCOPS_KERNEL_FAMILY
}  // namespace kernels

namespace {

// families.def's rows' kernel lists; the rows themselves (name, features,
// summary) are common/family_rows.cpp's, in the same order.
const KernelList *const kLists[] = {
#define HCOPS_KERNEL_FAMILY(ns, needs, summary) &kernels::ns::kernels,
#include "kernels/families.def"
#undef HCOPS_KERNEL_FAMILY
};
constexpr int kCount = sizeof kLists / sizeof *kLists;

struct Table {
  KernelFamily rows[kCount];
  Table() {
    assert(family_row_count() == kCount);  // both expand families.def
    for (int i = 0; i < kCount; ++i) rows[i] = KernelFamily{family_rows()[i], kLists[i]};
  }
};

const KernelFamily *table() {
  static const Table t;
  return t.rows;
}

}  // namespace

const KernelFamily *kernel_families() { return table(); }
int kernel_family_count() { return kCount; }

bool family_runs_here(const KernelFamily &f) { return features_usable(f.needs); }

template <typename Ty>
const ChosenKernel<Ty> &chosen_kernel() {
  static const ChosenKernel<Ty> chosen = [] {
    // Whether a family serves Ty first, whether it runs here second: asking
    // whether amx runs asks Linux for the tile state (tile_state_granted),
    // which an f32 GEMM must never do.
    const KernelFamily *families = table();
    for (int i = first_allowed_row(); i < kCount; ++i) {
      const KernelList &list = *families[i].kernels;
      for (int j = 0; j < list.count; ++j) {
        const KernelRef &r = list.refs[j];
        if (!r.template serves<Ty>() || !family_runs_here(families[i])) continue;
        if (features_usable(r.needs)) {
          // A kernel this CPU runs, but slower than a later row's: passed
          // over with its reason, unless HCOPS_ISA asked for this family.
          const char *why = r.declines && !isa_asked_for(i) ? r.declines() : nullptr;
          if (!why) return ChosenKernel<Ty>{&families[i], r.template get<Ty>()};
          const std::string key = std::string("kernel declines ") + families[i].name + " " + dtype_name(r.a) +
                                  ":" + dtype_name(r.b) + ":" + dtype_name(r.c);
          note_once(key.c_str(), "kernel family %s: its %s:%s:%s kernel passed over: %s (HCOPS_ISA=%s keeps it)",
                    families[i].name, dtype_name(r.a), dtype_name(r.b), dtype_name(r.c), why, families[i].name);
          continue;
        }
        // The family runs, this kernel's optional part of its extension
        // does not: said once under HCOPS_VERBOSE, the next row serves.
        const uint64_t missing = r.needs & ~cpu_features().mask();
        const std::string key = std::string("kernel needs ") + families[i].name + " " + dtype_name(r.a) + ":" +
                                dtype_name(r.b) + ":" + dtype_name(r.c);
        note_once(key.c_str(), "kernel family %s: its %s:%s:%s kernel needs %s (%s); passed over",
                  families[i].name, dtype_name(r.a), dtype_name(r.b), dtype_name(r.c),
                  feature_names(missing).c_str(),
                  features_turned_off(r.needs) ? "turned off by HCOPS_CPU_DISABLE" : "not on this CPU");
      }
    }
    return ChosenKernel<Ty>{nullptr, nullptr};
  }();
  return chosen;
}

#define HCOPS_INSTANTIATE_CHOSEN(Ty, name) template const ChosenKernel<Ty> &chosen_kernel<Ty>();
HCOPS_GEMM_DATATYPES(HCOPS_INSTANTIATE_CHOSEN)
#undef HCOPS_INSTANTIATE_CHOSEN

}  // namespace hcops
