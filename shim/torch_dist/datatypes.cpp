// See datatypes.h.
#include "datatypes.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace hcops {
namespace dist {

namespace {


// bf16 and fp16 have no MPI datatype: 16-bit words with user-defined ops that
// compute in float and round once per pair, as gloo does.
template <class T, class F>
void reduce16(void *in, void *inout, int *len, F f) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<T>(f(static_cast<float>(a[i]), static_cast<float>(b[i])));
}
template <class T>
void sum16(void *in, void *io, int *len, MPI_Datatype *) { reduce16<T>(in, io, len, [](float x, float y) { return x + y; }); }
template <class T>
void prod16(void *in, void *io, int *len, MPI_Datatype *) { reduce16<T>(in, io, len, [](float x, float y) { return x * y; }); }
template <class T>
void min16(void *in, void *io, int *len, MPI_Datatype *) { reduce16<T>(in, io, len, [](float x, float y) { return y < x ? y : x; }); }
template <class T>
void max16(void *in, void *io, int *len, MPI_Datatype *) { reduce16<T>(in, io, len, [](float x, float y) { return y > x ? y : x; }); }

struct Ops16 {
  MPI_Op sum, prod, min, max;
};

template <class T>
Ops16 make_ops16() {
  Ops16 o;
  MPI_Op_create(sum16<T>, 1, &o.sum);
  MPI_Op_create(prod16<T>, 1, &o.prod);
  MPI_Op_create(min16<T>, 1, &o.min);
  MPI_Op_create(max16<T>, 1, &o.max);
  return o;
}

}  // namespace

MPI_Datatype mpi_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kShort: return MPI_INT16_T;
    case at::kChar: return MPI_INT8_T;
    case at::kByte: return MPI_UINT8_T;
    case at::kBool: return MPI_C_BOOL;
    case at::kBFloat16:
    case at::kHalf: return MPI_UINT16_T;
    default: TORCH_CHECK(false, "hcops: no MPI datatype for ", t);
  }
}

MPI_Op mpi_op(const c10d::ReduceOp &op, at::ScalarType t) {
  const bool is16 = t == at::kBFloat16 || t == at::kHalf;
  if (is16) {
    static const Ops16 bf = make_ops16<c10::BFloat16>(), hf = make_ops16<c10::Half>();
    const Ops16 &o = t == at::kBFloat16 ? bf : hf;
    switch (op) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::AVG: return o.sum;
      case c10d::ReduceOp::PRODUCT: return o.prod;
      case c10d::ReduceOp::MIN: return o.min;
      case c10d::ReduceOp::MAX: return o.max;
      default: break;
    }
    TORCH_CHECK(false, "hcops: reduction ", static_cast<int>(op.op_), " is not supported for ", t);
  }
  const bool boolean = t == at::kBool;
  switch (op) {
    case c10d::ReduceOp::SUM: return boolean ? MPI_LOR : MPI_SUM;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(at::isFloatingType(t), "hcops: ReduceOp.AVG needs a floating-point tensor, not ", t);
      return MPI_SUM;
    case c10d::ReduceOp::PRODUCT: return boolean ? MPI_LAND : MPI_PROD;
    case c10d::ReduceOp::MIN: return boolean ? MPI_LAND : MPI_MIN;
    case c10d::ReduceOp::MAX: return boolean ? MPI_LOR : MPI_MAX;
    // MPI defines the bitwise ops on integers only: bool takes the logical ones.
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(!at::isFloatingType(t), "hcops: bitwise reductions need an integer or bool tensor, not ", t);
      if (op == c10d::ReduceOp::BAND) return boolean ? MPI_LAND : MPI_BAND;
      if (op == c10d::ReduceOp::BOR) return boolean ? MPI_LOR : MPI_BOR;
      return boolean ? MPI_LXOR : MPI_BXOR;
    default: TORCH_CHECK(false, "hcops: reduction ", static_cast<int>(op.op_), " is not supported");
  }
}

}  // namespace dist
}  // namespace hcops
