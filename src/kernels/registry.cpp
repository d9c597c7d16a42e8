#include "kernels/registry.h"

#include "config.h"  // HCOPS_HAVE_AMX, for families.def

#include "common/cpu_features.h"
#include "kernels/family_rows.h"

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

const KernelFamily kTable[] = {
#define HCOPS_KERNEL_FAMILY(ns, needs, summary) {#ns, (needs), summary, &kernels::ns::kernels},
#include "kernels/families.def"
#undef HCOPS_KERNEL_FAMILY
};
constexpr int kCount = sizeof kTable / sizeof *kTable;

}  // namespace

const KernelFamily *kernel_families() { return kTable; }
int kernel_family_count() { return kCount; }

bool family_runs_here(const KernelFamily &f) { return features_usable(f.needs); }

const KernelFamily &best_family() {
  for (int i = 0; i < kCount; ++i)
    if (family_runs_here(kTable[i])) return kTable[i];
  return kTable[kCount - 1];
}

int first_allowed_family() { return first_allowed_row(); }

template <typename Ty>
const ChosenKernel<Ty> &chosen_kernel() {
  static const ChosenKernel<Ty> chosen = [] {
    // Whether a family serves Ty first, whether it runs here second: asking
    // whether amx runs asks Linux for the tile state (tile_state_granted),
    // which an f32 GEMM must never do.
    for (int i = first_allowed_family(); i < kCount; ++i) {
      const KernelList &list = *kTable[i].kernels;
      for (int j = 0; j < list.count; ++j) {
        const KernelRef &r = list.refs[j];
        if (r.template serves<Ty>() && family_runs_here(kTable[i]))
          return ChosenKernel<Ty>{&kTable[i], static_cast<const GemmKernel<Ty> *>(r.kernel)};
      }
    }
    return ChosenKernel<Ty>{nullptr, nullptr};
  }();
  return chosen;
}

template const ChosenKernel<Sgemm> &chosen_kernel<Sgemm>();
template const ChosenKernel<Dgemm> &chosen_kernel<Dgemm>();
template const ChosenKernel<Bf16Gemm> &chosen_kernel<Bf16Gemm>();
template const ChosenKernel<Bf16Bf16Gemm> &chosen_kernel<Bf16Bf16Gemm>();
template const ChosenKernel<SgemmBf16> &chosen_kernel<SgemmBf16>();
template const ChosenKernel<SgemmBf16x3> &chosen_kernel<SgemmBf16x3>();

}  // namespace hcops
