// The contract between the GEMM driver and a kernel family: what one
// family provides for one combination of datatypes (GemmKernel), and how a
// family lists what it provides (KernelList, kernels/families.def).
#pragma once

#include "kernels/gemm_types.h"

namespace hcops {

// C[0:mr, 0:nr] = alpha * A~ * B~ + beta * C, C column-major with leading
// dimension ldc. A~ is a packed mr x kc panel (mr values per k step), B~ a
// packed kc x nr panel (nr values per k step), both aligned to 64 bytes.
// beta == 0 never reads C, so NaN there does not propagate.
template <typename Ty>
using MicroKernel = void (*)(long kc, typename Ty::acc_type alpha, const typename Ty::packed_a_type *a,
                             const typename Ty::packed_b_type *b, typename Ty::acc_type beta, typename Ty::c_type *c,
                             long ldc);

// The same for a partial tile: only C[0:m, 0:n] (m <= mr, n <= nr) is read or
// written; the packed panels are full size (zero-padded).
template <typename Ty>
using EdgeKernel = void (*)(long kc, typename Ty::acc_type alpha, const typename Ty::packed_a_type *a,
                            const typename Ty::packed_b_type *b, typename Ty::acc_type beta, typename Ty::c_type *c,
                            long ldc, int m, int n);

// The same two with B read in place: B(p, j) = b[p * rsb + j * csb], so op(B)
// needs no packing (rsb = 1, csb = ldb for B; rsb = ldb, csb = 1 for B^T).
template <typename Ty>
using DirectKernel = void (*)(long kc, typename Ty::acc_type alpha, const typename Ty::packed_a_type *a,
                              const typename Ty::b_type *b, long rsb, long csb, typename Ty::acc_type beta,
                              typename Ty::c_type *c, long ldc);
template <typename Ty>
using DirectEdgeKernel = void (*)(long kc, typename Ty::acc_type alpha, const typename Ty::packed_a_type *a,
                                  const typename Ty::b_type *b, long rsb, long csb, typename Ty::acc_type beta,
                                  typename Ty::c_type *c, long ldc, int m, int n);

// Packing into the panel layouts above (see pack.h, pack_pairs.h),
// converting to the packed types on the way. A family with k_align > 1 (or
// datatypes with splits > 1) writes panels packed_depth(k, kc) steps deep,
// the steps past the data zero, and its microkernels get that padded depth
// as kc. Each family supplies its own, compiled with its
// ISA flags: packing is plain copying, which the compiler vectorises only
// when it may use the family's registers.
template <typename Ty>
using PackA = void (*)(typename Ty::packed_a_type *dst, const typename Ty::a_type *a, long lda, Trans ta, long i0,
                       long mc, long p0, long kc);
template <typename Ty>
using PackB = void (*)(typename Ty::packed_b_type *dst, const typename Ty::b_type *b, long ldb, Trans tb, long p0,
                       long kc, long j0, long nc);

// C[0:m, 0:n] = alpha * op(A) * op(B) + beta * C for a skinny product (n <=
// kSkinnyMaxN), op(A) read in place (a[i + p * lda] for ta = N, a[p + i *
// lda] for T) and op(B) contiguous in k: op(B)(p, j) = b[p + j * csb] (the
// driver copies a strided op(B), n x k elements, beside m x k of A; the
// bf16 kernels read it a pair of k steps at a time). C is written once,
// from the sum over the whole of k. beta == 0 never reads C.
// kernels/skinny.h and avx512_bf16/skinny_bf16.h say why and how.
template <typename Ty>
using SkinnyKernel = void (*)(Trans ta, long m, long n, long k, typename Ty::acc_type alpha,
                              const typename Ty::a_type *a, long lda, const typename Ty::b_type *b, long csb,
                              typename Ty::acc_type beta, typename Ty::c_type *c, long ldc);
constexpr long kSkinnyMaxN = 16;

// C[0:m, 0:n] = alpha * op(A) * op(B) + beta * C for a shallow product (1 <=
// k <= kShallowMaxK), op(A) and op(B) read in place as the BLAS arguments
// say (a[i + p * lda] or a[p + i * lda]; b[p + j * ldb] or b[j + p * ldb]).
// C is written once. beta == 0 never reads C. `stream` (only with beta ==
// 0): C's whole, aligned lines may be written non-temporally (fenced before
// return). kernels/shallow.h says why and how.
template <typename Ty>
using ShallowKernel = void (*)(Trans ta, Trans tb, long m, long n, long k, typename Ty::acc_type alpha,
                               const typename Ty::a_type *a, long lda, const typename Ty::b_type *b, long ldb,
                               typename Ty::acc_type beta, typename Ty::c_type *c, long ldc, bool stream);
constexpr long kShallowMaxK = 16;

// The paths a thin product (n <= kSkinnyMaxN or k <= kShallowMaxK) can take
// where one block holds it (gemm.cpp's single_block_gemm): GemmKernel's
// thin_choice picks one.
enum class ThinPath { skinny, shallow, one_block };

template <typename Ty>
struct GemmKernel;

// One packed mc x kc block of A against the columns [j0, j1) of one kc-deep
// block of op(B): the jr/ir loops around the microkernel.
template <typename Ty>
struct MacroBlock {
  long kc, mc;
  long j0, j1;  // columns, relative to the block's first
  typename Ty::acc_type alpha, beta;
  const typename Ty::packed_a_type *a;         // ceil(mc / mr) panels of kc x mr
  const typename Ty::packed_b_type *b_packed;  // ceil(nc / nr) panels of kc x nr; null when read in place
  const typename Ty::b_type *b;                // op(B) in place at the block's first column
  long rsb, csb;                               // its strides
  typename Ty::c_type *c;                      // C at the block's first row and column
  long ldc;
  // Set on the last k block only, for a family that fuses_epilogue: the
  // GEMM's epilogue, which such a macro-kernel applies to each finished
  // tile's f32 values before it rounds and stores them, and the block's
  // first row and column in C (the epilogue's coordinates).
  Epilogue<typename Ty::acc_type> epilogue;
  long i_origin, j_origin;
};

// A family may replace the loops (an AMX family configures its tiles once
// per block there); macro_kernel.h has the default.
template <typename Ty>
using MacroKernel = void (*)(const GemmKernel<Ty> &k, const MacroBlock<Ty> &blk);

// What a family provides for the datatypes Ty, by name.
template <typename Ty>
struct GemmKernel {
  int mr, nr;   // microkernel tile
  int k_align;  // packed k is a multiple of this (bf16 pairs: 2); > 1 rules out B in place
  MicroKernel<Ty> full;
  EdgeKernel<Ty> edge;
  DirectKernel<Ty> full_direct;  // null: the family always packs B
  DirectEdgeKernel<Ty> edge_direct;
  // A family that pads k (k_align > 1) but whose own macro-kernel can read
  // op(B) in place for some products (an AMX tile loads 16 columns of op(B)
  // straight from B when they hold whole 32-step chunks of k): whether it
  // can for this one (op(B)'s transpose, n, k). Null: it packs B whenever
  // full_direct is null.
  bool (*b_in_place)(Trans tb, long n, long k) = nullptr;
  PackA<Ty> pack_a;
  PackB<Ty> pack_b;
  MacroKernel<Ty> macro;
  // The macro-kernel applies MacroBlock::epilogue itself. For a C narrower
  // than the accumulation (bf16), that is the only way a product of one k
  // block gets its epilogue before C is rounded without an f32 copy of C
  // (gemm.cpp's gemm_through_wide_c).
  bool fuses_epilogue = false;
  // With fuses_epilogue: the deepest k a bf16 C takes in one block
  // (gemm/blocking.h); deeper, C goes through the f32 copy. 0: blocking.h's
  // kNarrowCMaxKc. A family whose B micro-panel must stay in L1 sets less.
  long narrow_c_max_kc = 0;
  // Products of at most kSkinnyMaxN columns without packing; null: the
  // family packs them like any other.
  SkinnyKernel<Ty> skinny = nullptr;
  // Products of at most kShallowMaxK steps of k, written four columns at a time
  // without packing; null: packed.
  ShallowKernel<Ty> shallow = nullptr;
  // For a thin product, which of the skinny kernel (`skinny`: it could
  // take it, n <= kSkinnyMaxN), the shallow one (`shallow`: k <=
  // kShallowMaxK) or one packed block is fastest, by the family's own
  // measurements, from the shape alone. Asked for every thin product
  // (before the driver knows whether one block holds it: that costs the
  // blocking's divisions); the driver follows the answer only where one
  // block does (gemm/blocking.h's single_block_bytes, one thread's worth of
  // flops) and the answer is a path the product can take. Such products
  // take a few hundred ns, and which wins turns on the tiles' padding, the
  // skinny kernel's copy of a strided op(B) and its sums across lanes, more
  // than on streaming A. Null: the skinny kernel, then the shallow one,
  // take every product they apply to, as they do products larger than one
  // block.
  ThinPath (*thin_choice)(Trans ta, Trans tb, long m, long n, long k, bool skinny, bool shallow) = nullptr;
  // The planner gives a product one thread per this many flops (at most):
  // below it a thread's start and the team's waits cost more than its share
  // of the work. A family that computes much faster per thread (AMX) sets
  // more.
  long min_flops_per_thread = 2'000'000;
  // Units of C each thread of a packed product is given (gemm.cpp's
  // part_work): more, and a thread that runs late holds up less of the
  // product; fewer, and the A blocks are larger and each packed by fewer
  // units. 0: the driver's default.
  int units_per_thread = 0;
  // What hcops-info says of the tile beside its size, where a family has
  // more than one for these datatypes (null: nothing).
  const char *tile_note = nullptr;
  // A packed panel's size in packed type elements per row (A) or column
  // (B) and packed step: 2 for a family whose packers widen bf16 to f32 in
  // the panels (its tile then reads both with no integer work:
  // avx512/bf16_tile.h), so that the driver sizes and steps through A
  // blocks and B panels at twice the bytes.
  int panel_scale = 1;
  // Whether the tile multiplies bf16 operands on bf16 instructions (AMX's
  // tdpbf16ps, vdpbf16ps, SVE's BFDOT, SME's BFMOPA) rather than widening
  // them to f32 or emulating the pairs: attention (ops/attention.cpp) gives
  // bf16 slices bf16 products only where the bf16 GEMMs' kernels say so.
  bool bf16_instructions = false;
};

// The depth of a packed panel of kc logical k steps, in packed steps: kc
// itself for a family that takes k one step at a time (k_align = 1, splits =
// 1). A family that takes k in pairs (k_align even) packs round_up(kc, 2)
// steps per split (kernels/pack_pairs.h), rounded up to k_align: an AMX tile
// takes 32 packed steps at a time.
constexpr long packed_steps(long kc, int splits, int k_align) {
  if (k_align == 1 && splits == 1) return kc;
  const long steps = splits * ((kc + 1) / 2 * 2);
  return (steps + k_align - 1) / k_align * k_align;
}
template <typename Ty>
constexpr long packed_depth(const GemmKernel<Ty> &k, long kc) {
  return packed_steps(kc, Ty::splits, k.k_align);
}
// The elements a packed panel takes per row (A) or column (B), in its
// packed type: packed_depth, times panel_scale.
template <typename Ty>
constexpr long panel_elements(const GemmKernel<Ty> &k, long kc) {
  return packed_depth(k, kc) * k.panel_scale;
}

// A family's GEMM kernels, type-erased for the table: one entry per
// combination of datatypes it serves.
struct KernelRef {
  Dtype a, b, c, acc, packed_a, packed_b;
  int splits;
  const void *kernel;  // a GemmKernel<Ty> with those datatypes, or null and:
  // A function that makes it on first use, for a family whose tile depends
  // on the machine: a vector length known only at run time (SVE's, SME's
  // streaming one) sets mr. Called only once the family's row is known to
  // run here (its instructions would fault elsewhere); it returns a
  // function-local static, so it is thread-safe and never runs before it is
  // needed.
  const void *(*build)() = nullptr;
  // CPU features this kernel needs beyond its family's (CpuFeature bits):
  // an optional part of the family's extension (sme's f64 outer products,
  // FEAT_SME_F64F64). Without them the datatype goes to the next row.
  uint64_t needs = 0;
  // Whether this CPU is better served by a later row although it runs this
  // kernel: a reason to pass it over (said under HCOPS_VERBOSE), or null.
  // For what no CPUID bit tells, such as an instruction slower than another
  // route to the same result (avx512_bf16/dot_rate.h). Called once the
  // family is known to run here; HCOPS_ISA naming the family skips it.
  const char *(*declines)() = nullptr;

  template <typename Ty>
  static constexpr KernelRef of(const GemmKernel<Ty> &k) {
    return {Ty::a, Ty::b, Ty::c, Ty::acc, Ty::packed_a, Ty::packed_b, Ty::splits, &k};
  }
  // The same with `declines` set.
  template <typename Ty>
  static constexpr KernelRef unless(const GemmKernel<Ty> &k, const char *(*declines)()) {
    KernelRef r = of(k);
    r.declines = declines;
    return r;
  }
  template <typename Ty>
  static constexpr KernelRef built(const void *(*make)(), uint64_t needs = 0) {
    return {Ty::a, Ty::b, Ty::c, Ty::acc, Ty::packed_a, Ty::packed_b, Ty::splits, nullptr, make, needs};
  }
  template <typename Ty>
  constexpr bool serves() const {
    return a == Ty::a && b == Ty::b && c == Ty::c && acc == Ty::acc && packed_a == Ty::packed_a &&
           packed_b == Ty::packed_b && splits == Ty::splits;
  }
  // The kernel (serves<Ty>() must hold, and the family run here).
  template <typename Ty>
  const GemmKernel<Ty> *get() const {
    return static_cast<const GemmKernel<Ty> *>(kernel ? kernel : build());
  }
};

struct KernelList {
  const KernelRef *refs;
  int count;
};

// The KernelList of a family's GemmKernels (each a constexpr GemmKernel<Ty>),
// a constant: the registry may be read by a GEMM called from another
// library's constructor, before any dynamic initialisation of ours.
//   extern constexpr KernelList kernels = kernel_list<sgemm, dgemm>();
template <const auto &...K>
constexpr KernelRef kernel_refs[] = {KernelRef::of(K)...};
template <const auto &...K>
constexpr KernelList kernel_list() {
  return {kernel_refs<K...>, static_cast<int>(sizeof...(K))};
}

// A family with kernels made on first use lists its KernelRef::built refs
// in a constexpr array of its own:
//   constexpr KernelRef kRefs[] = {KernelRef::built<Sgemm>(&make_sgemm), ...};
//   extern constexpr KernelList kernels = kernel_list(kRefs);
template <int N>
constexpr KernelList kernel_list(const KernelRef (&refs)[N]) {
  return {refs, N};
}

}  // namespace hcops
