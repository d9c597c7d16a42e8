#include "gemm/fp32_math.h"

#include "common/env.h"
#include "kernels/registry.h"

namespace hcops {

namespace {

// The row of the family serving Ty (first fit over the allowed rows), or
// the table's length when none does: a larger row is less preferred.
template <typename Ty>
int serving_row() {
  const ChosenKernel<Ty> &c = chosen_kernel<Ty>();
  return c.kernel ? static_cast<int>(c.family - kernel_families()) : kernel_family_count();
}

template <typename Ty>
std::string refusal(Fp32Math asked) {
  if (serving_row<Ty>() <= serving_row<Sgemm>()) return "";
  const ChosenKernel<Sgemm> &f32 = chosen_kernel<Sgemm>();
  return std::string("no ") + fp32_math_name(asked) + " kernel at or above " + (f32.family ? f32.family->name : "none");
}

Fp32MathMode resolve() {
  static const char *const kChoices[] = {"strict", "bf16", "bf16x3", nullptr};
  Fp32MathMode m;
  m.asked = static_cast<Fp32Math>(env_choice("HCOPS_FP32_MATH", kChoices, 0));
  switch (m.asked) {
    case Fp32Math::strict: break;
    case Fp32Math::bf16: m.why = refusal<SgemmBf16>(m.asked); break;
    case Fp32Math::bf16x3: m.why = refusal<SgemmBf16x3>(m.asked); break;
  }
  m.used = m.why.empty() ? m.asked : Fp32Math::strict;
  m.detail = std::string("math=") + fp32_math_name(m.used);
  if (m.used != m.asked) m.detail += std::string("(") + fp32_math_name(m.asked) + " asked: " + m.why + ")";
  return m;
}

}  // namespace

const char *fp32_math_name(Fp32Math m) {
  switch (m) {
    case Fp32Math::strict: return "strict";
    case Fp32Math::bf16: return "bf16";
    case Fp32Math::bf16x3: return "bf16x3";
  }
  return "?";
}

const Fp32MathMode &fp32_math() {
  static const Fp32MathMode mode = resolve();
  return mode;
}

const std::string &fp32_math_detail() { return fp32_math().detail; }

}  // namespace hcops
