// The GEMM engine: column-major C = alpha * op(A) * op(B) + beta * C on
// already validated arguments. Knows nothing of Fortran, CBLAS or oneDNN:
// the ABI layers in shim/ check and translate their arguments, call gemm(),
// and report what it says it did.
#pragma once

#include "common/api.h"
#include "kernels/gemm_types.h"

namespace hcops {

// Who decides an f32 GEMM's compute mode: the engine (HCOPS_FP32_MATH,
// gemm/fp32_math.h), or the caller's own contract, strict f32 (a oneDNN
// primitive whose fpmath attribute is strict). Other datatypes: unused.
enum class F32Mode : unsigned char { engine, strict };

// A caller's promise about op(A) (gemm/packed_a_cache.h): `owner` names
// the storage holding it, `version` changes whenever the caller knows op(A)
// was written. The cache still checks op(A)'s contents before it reuses
// panels, so a write the version does not see is never served stale.
struct OperandTag {
  const void *owner;
  unsigned long long version;
};

struct HeldPackedA;  // gemm/held_a.h

template <typename Ty>
struct GemmArgs {
  Trans ta, tb;
  long m, n, k;
  typename Ty::acc_type alpha;
  const typename Ty::a_type *a;
  long lda;
  const typename Ty::b_type *b;
  long ldb;
  typename Ty::acc_type beta;
  typename Ty::c_type *c;
  long ldc;
  Epilogue<typename Ty::acc_type> epilogue{};  // none by default
  F32Mode f32_mode = F32Mode::engine;
  // Set: op(A)'s packed panels may be kept for later calls and read from
  // there (HCOPS_WEIGHT_CACHE); null: packed for this call only.
  const OperandTag *a_tag = nullptr;
  // Set: op(A) as the caller packed it for this product and others
  // (gemm/held_a.h), read instead of packing it when it matches.
  const HeldPackedA *a_held = nullptr;
};

// Products of fewer flops a thread than this last under the 2 ms a region
// must last for its cores to be counted (common/contention.h) at 8 GFLOPS
// a thread; the SIMD families run 30-200 (3 times the work in the
// HCOPS_FP32_MATH bf16x3 mode: still under). Their regions do not read the
// threads' CPU times (a region that runs long all the same makes the next
// ones read them).
constexpr long kShortRegionFlopsPerThread = 16'000'000;

// What gemm() did, for the ABI layer's verbose line.
struct GemmReport {
  const char *family = "none";    // kernel family (kernels/families.def); "none": C only scaled
  int mr = 0, nr = 0;             // microkernel tile
  const char *b = "none";         // op(B) "packed", "in-place", "unpacked" (no packing memory), or
                                  // "skinny" (kernels/skinny.h: neither operand packed)
  int threads = 1;                // threads that computed
  int domains = 1;                // compute domains the product was split over
  char split = 'n';               // across domains along 'n' or 'm'
  int grid_m = 1, grid_n = 1;     // thread grid inside the first domain
  const char *math = nullptr;     // f32: the HCOPS_FP32_MATH mode it ran in, "math=strict"
                                  // (fp32_math_detail()); null for the other datatypes
  const char *a_cache = nullptr;  // for a tagged op(A): what the packed-A cache did
                                  // (a_cache_use_name()); "held": the caller's panels
                                  // (gemm/held_a.h); null when untagged or not packed
  bool c_streamed = false;        // C written non-temporally (shallow products whose C
                                  // outgrows the writers' L2: gemm.cpp's shallow_streams_c)
  bool one_block = false;         // computed as one block by the calling thread, without
                                  // the planner and the team (gemm.cpp's single_block_gemm)
};

// f32 (Sgemm) runs in the engine's HCOPS_FP32_MATH mode (gemm/fp32_math.h),
// whichever layer calls (BLAS, CBLAS, dnnl_sgemm, the PyTorch dispatcher,
// attention), unless args.f32_mode fixes strict. The other datatypes run as
// typed.
template <typename Ty>
HCOPS_API GemmReport gemm(const GemmArgs<Ty> &args);

namespace testing {
// Called with the team thread's number and the domain part's before each
// unit of C a thread computes (gemm.cpp's run_part), to delay threads in the
// tests of the engine's work sharing; nullptr (the default) calls nothing.
using UnitHook = void (*)(int thread, int part);
void set_unit_hook(UnitHook hook);
}  // namespace testing

#define HCOPS_EXTERN_GEMM(Ty, name) extern template GemmReport gemm<Ty>(const GemmArgs<Ty> &);
HCOPS_GEMM_DATATYPES(HCOPS_EXTERN_GEMM)
#undef HCOPS_EXTERN_GEMM

}  // namespace hcops
