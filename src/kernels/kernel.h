// The contract between the GEMM driver and a microkernel family.
#pragma once

#include "common/cpu_features.h"
#include "gemm/gemm.h"

namespace hcops {

// C[0:mr, 0:nr] = alpha * A~ * B~ + beta * C, C column-major with leading
// dimension ldc. A~ is a packed mr x kc panel (mr values per k step), B~ a
// packed kc x nr panel (nr values per k step), both aligned to 64 bytes.
// beta == 0 never reads C, so NaN there does not propagate.
template <typename T>
using MicroKernel = void (*)(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc);

// The same for a partial tile: only C[0:m, 0:n] (m <= mr, n <= nr) is read or
// written; the packed panels are full size (zero-padded).
template <typename T>
using EdgeKernel = void (*)(long kc, T alpha, const T *a, const T *b, T beta, T *c, long ldc, int m, int n);

// The same two with B read in place: B(p, j) = b[p * rsb + j * csb], so op(B)
// needs no packing (rsb = 1, csb = ldb for B; rsb = ldb, csb = 1 for B^T).
template <typename T>
using DirectKernel = void (*)(long kc, T alpha, const T *a, const T *b, long rsb, long csb, T beta, T *c, long ldc);
template <typename T>
using DirectEdgeKernel = void (*)(long kc, T alpha, const T *a, const T *b, long rsb, long csb, T beta, T *c,
                                  long ldc, int m, int n);

// Packing into the panel layouts above (see pack.h). Each family supplies its
// own, compiled with its ISA flags: packing is plain copying, which the
// compiler vectorises only when it may use the family's registers.
template <typename T>
using PackA = void (*)(T *dst, const T *a, long lda, Trans ta, long i0, long mc, long p0, long kc);
template <typename T>
using PackB = void (*)(T *dst, const T *b, long ldb, Trans tb, long p0, long kc, long j0, long nc);

template <typename T>
struct KernelInfo {
  int mr, nr;
  MicroKernel<T> ukernel;
  EdgeKernel<T> edge;
  PackA<T> pack_a;
  PackB<T> pack_b;
  DirectKernel<T> ukernel_direct;  // null: the family always packs B
  DirectEdgeKernel<T> edge_direct;
};

struct KernelSet {
  Isa isa;
  KernelInfo<float> s;
  KernelInfo<double> d;
  template <typename T> const KernelInfo<T> &get() const;
};
template <> inline const KernelInfo<float> &KernelSet::get<float>() const { return s; }
template <> inline const KernelInfo<double> &KernelSet::get<double>() const { return d; }

// The family for `isa`; the caller guarantees the CPU can execute it.
const KernelSet &kernels_for(Isa isa);

namespace kernels {
namespace generic { extern const KernelSet set; }
namespace avx2 { extern const KernelSet set; }
namespace avx512 { extern const KernelSet set; }
}  // namespace kernels

}  // namespace hcops
