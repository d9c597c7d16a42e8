// The contract between the GEMM driver (gemm/) and the kernel families
// (kernels/): the datatypes of a product, the transposition flags, and the
// epilogue a kernel's caller may apply. Kernels, packers and operators see
// this header, never the driver's (as BLIS's kernels see bli_type_defs.h,
// never frame/3).
#pragma once

#include "common/api.h"
#include "common/dtype.h"

namespace hcops {

enum class Trans : char { N = 'N', T = 'T' };

// The datatypes of one GEMM: A, B and C as the caller stores them, the
// element types of the packed A and B panels, and the type alpha, beta and
// the accumulation use. bf16 inputs with f32 accumulation and an f32 or bf16
// C are GemmTypes<bf16, bf16, float|bf16, float>; f32 inputs rounded to bf16
// while packing are GemmTypes<float, float, float, float, bf16, bf16>.
// Splits = 3: each f32 input packed as two bf16 parts, hi = bf16(x) and
// lo = bf16(x - hi), and the product summed from three bf16 products
// (a_hi b_hi + a_hi b_lo + a_lo b_hi: "bf16x3", kernels/pack_pairs.h).
template <typename A, typename B, typename C, typename Acc = C, typename PackedA = A, typename PackedB = B,
          int Splits = 1>
struct HCOPS_API GemmTypes {  // default: the exported gemm<Ty> takes its visibility from Ty
  using a_type = A;
  using b_type = B;
  using c_type = C;
  using acc_type = Acc;
  using packed_a_type = PackedA;
  using packed_b_type = PackedB;
  static constexpr Dtype a = DtypeOf<A>::value, b = DtypeOf<B>::value, c = DtypeOf<C>::value;
  static constexpr Dtype acc = DtypeOf<Acc>::value;
  static constexpr Dtype packed_a = DtypeOf<PackedA>::value, packed_b = DtypeOf<PackedB>::value;
  static constexpr int splits = Splits;  // packed products per input product
};

using Sgemm = GemmTypes<float, float, float>;
using Dgemm = GemmTypes<double, double, double>;
// bf16 A and B, f32 accumulation, f32 or bf16 C (rounded to nearest even).
using Bf16Gemm = GemmTypes<bf16, bf16, float, float>;
using Bf16Bf16Gemm = GemmTypes<bf16, bf16, bf16, float>;
// f32 GEMM in a reduced-precision compute mode (HCOPS_FP32_MATH): inputs
// rounded to bf16 while packing, or split into two bf16 parts (bf16x3).
using SgemmBf16 = GemmTypes<float, float, float, float, bf16, bf16>;
using SgemmBf16x3 = GemmTypes<float, float, float, float, bf16, bf16, 3>;

// Work on finished blocks of C, done by the thread that computed each block
// while it is still in cache (oneDNN's bias and eltwise post-ops, ops/
// output_ops.h). `apply` gets rows [i0, i0 + m) and columns [j0, j0 + n) of
// the whole C (i0, j0: coordinates in C, for indexing a bias), at `c`, which
// points at C(i0, j0), column-major with leading dimension ldc, in the
// accumulation type: each element once, after the last k block, beta and
// alpha applied. A C narrower than the accumulation (bf16) goes through an
// f32 copy (gemm.cpp) so that the epilogue sees the f32 sum and the result
// is rounded once (without memory for that copy, C is rounded by the
// kernels, then again after the epilogue). Every path applies it, alpha = 0
// and k = 0 included; gemm<Sgemm> (HCOPS_FP32_MATH) hands it on.
//
// row_bias, when set, says that `apply` is exactly C(i, j) += row_bias[i]
// (i a row of the whole C) and nothing else: a kernel that writes C from
// its own registers may add it there instead of calling apply, the same
// f32 addition (nn.Linear's bias, 1152 of them, added to each column of
// C on the AMX tiles' store of C: no callback, no pass of its own over
// the block). Kernels that do not know it call apply, which stays right.
template <typename Acc>
struct Epilogue {
  void (*apply)(const void *ctx, Acc *c, long ldc, long i0, long m, long j0, long n) = nullptr;
  const void *ctx = nullptr;
  const Acc *row_bias = nullptr;
  explicit operator bool() const { return apply != nullptr; }
};

// Every datatype combination the engine is built for, as X(alias, name):
// the explicit instantiations and extern declarations of gemm<>,
// gemm_with<> and chosen_kernel<>, and hcops-info's kernel lines, expand
// this one list. A new combination: its GemmTypes alias above and one
// X(...) here.
#define HCOPS_GEMM_DATATYPES(X)                                                                             \
  X(Sgemm, "sgemm") X(Dgemm, "dgemm") X(Bf16Gemm, "bf16->f32") X(Bf16Bf16Gemm, "bf16->bf16")              \
  X(SgemmBf16, "sgemm bf16") X(SgemmBf16x3, "sgemm bf16x3")

}  // namespace hcops
