// HCOPS_FP32_MATH: the compute mode of every f32 GEMM of the engine
// (gemm<Sgemm>, whichever layer calls it), in the manner of
// MKL_BLAS_COMPUTE_MODE and oneDNN's fpmath mode. `strict` (the default) computes in f32; `bf16` rounds the inputs to
// bf16 while packing (SgemmBf16); `bf16x3` splits each input into two bf16
// parts and sums three products (SgemmBf16x3), close to f32. A mode is a
// permission, not an order: it applies only where a kernel family at least
// as preferred as the one serving strict f32 serves it, so the mode never
// falls to a lower family than strict's (HCOPS_ISA=avx512 on a bf16 CPU
// stays strict; HCOPS_ISA=generic runs generic's bf16 kernels). That is not
// a promise of speed: bf16x3 does three bf16 products per f32 one, which
// pays on AMX but not on AVX512_BF16 (doc/perf/bf16.md).
#pragma once

#include <string>

#include "gemm/gemm.h"

namespace hcops {

enum class Fp32Math { strict, bf16, bf16x3 };

const char *fp32_math_name(Fp32Math m);

// The mode HCOPS_FP32_MATH asks for and the one in effect, resolved once per
// process (a bad value warns once and means strict).
struct Fp32MathMode {
  Fp32Math asked, used;
  // Why `used` differs from `asked` ("no bf16x3 kernel at or above avx512"),
  // empty when they agree.
  std::string why;
  // "math=bf16x3", or "math=strict(bf16 asked: <why>)": the verbose lines'
  // detail; no commas (it is one CSV field with the rest of the details).
  std::string detail;
};
const Fp32MathMode &fp32_math();

// fp32_math().detail.
const std::string &fp32_math_detail();

}  // namespace hcops
