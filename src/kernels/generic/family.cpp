// Portable register-blocked microkernels in GCC vector extensions: the
// `generic` family, baseline x86-64 (SSE2), for CPUs without AVX2+FMA. The
// intrinsics families are in simd_tile.h. It also serves every bf16
// combination (pair_ukernel.h), so that each bf16 entry point runs,
// and is tested, on any CPU.
#include "kernels/family_flags.h"
#include "kernels/generic/pair_ukernel.h"
#include "kernels/generic/vec.h"
#include "kernels/kernel.h"
#include "kernels/macro_kernel.h"
#include "kernels/pack.h"

HCOPS_FAMILY_FLAGS_MATCH(generic);

namespace hcops::kernels::generic {
namespace {

// 16 xmm registers: two vectors of A per k step and 4 broadcast columns of B
// keep 8 accumulators live.
constexpr int kNr = 4;

template <typename T>
struct Shape {
  static constexpr int vl = Vec<T>::lanes;
  static constexpr int mr = 2 * vl;
  static constexpr int nr = kNr;
};

template <typename T>
void ukernel(long kc, T alpha, const T *__restrict a, const T *__restrict b, T beta, T *__restrict c, long ldc) {
  constexpr int VL = Shape<T>::vl, MR = Shape<T>::mr, NR = Shape<T>::nr;
  using V = typename Vec<T>::V;
  using U = typename Vec<T>::U;  // unaligned C

  V acc0[NR], acc1[NR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) acc0[j] = acc1[j] = V{};

  a = static_cast<const T *>(__builtin_assume_aligned(a, 64));
  for (long p = 0; p < kc; ++p, a += MR, b += NR) {
    const V a0 = *reinterpret_cast<const V *>(a);
    const V a1 = *reinterpret_cast<const V *>(a + VL);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const V bj = Vec<T>::set1(b[j]);
      acc0[j] = Vec<T>::fmadd(a0, bj, acc0[j]);
      acc1[j] = Vec<T>::fmadd(a1, bj, acc1[j]);
    }
  }

#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    U *c0 = reinterpret_cast<U *>(c + j * ldc);
    U *c1 = reinterpret_cast<U *>(c + j * ldc + VL);
    if (beta == T(0)) {
      *c0 = alpha * acc0[j];
      *c1 = alpha * acc1[j];
    } else {
      *c0 = alpha * acc0[j] + beta * *c0;
      *c1 = alpha * acc1[j] + beta * *c1;
    }
  }
}

// A full tile into aligned scratch, then only the m x n corner to C.
template <typename T>
void edge(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc, int m, int n) {
  constexpr int MR = Shape<T>::mr;
  alignas(64) T tile[MR * Shape<T>::nr];
  ukernel<T>(kc, alpha, a, b, T(0), tile, MR);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {  // as the full tile: alpha * acc, then + beta * C (not + 0: -0 stays -0)
      T &cij = c[i + j * ldc];
      cij = beta == T(0) ? tile[i + j * MR] : tile[i + j * MR] + beta * cij;
    }
}

template <typename Ty, typename T = typename Ty::c_type>
constexpr GemmKernel<Ty> kernel_for() {
  return {
      .mr = Shape<T>::mr,
      .nr = Shape<T>::nr,
      .k_align = 1,
      .full = &ukernel<T>,
      .edge = &edge<T>,
      .full_direct = nullptr,  // always packs B
      .edge_direct = nullptr,
      .pack_a = &pack_a<T, Shape<T>::mr>,
      .pack_b = &pack_b<T, Shape<T>::nr>,
      .macro = &macro_kernel<Ty>,
  };
}

constexpr GemmKernel<Sgemm> sgemm = kernel_for<Sgemm>();
constexpr GemmKernel<Dgemm> dgemm = kernel_for<Dgemm>();
constexpr GemmKernel<Bf16Gemm> bf16_f32 = pair_kernel_for<Bf16Gemm>();
constexpr GemmKernel<Bf16Bf16Gemm> bf16_bf16 = pair_kernel_for<Bf16Bf16Gemm>();
constexpr GemmKernel<SgemmBf16> f32_as_bf16 = pair_kernel_for<SgemmBf16>();
constexpr GemmKernel<SgemmBf16x3> f32_as_bf16x3 = pair_kernel_for<SgemmBf16x3>();

}  // namespace

extern constexpr KernelList kernels =
    kernel_list<sgemm, dgemm, bf16_f32, bf16_bf16, f32_as_bf16, f32_as_bf16x3>();

}  // namespace hcops::kernels::generic
