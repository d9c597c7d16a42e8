// MPI's datatype and reduction for a tensor's scalar type and a c10d
// ReduceOp, as gloo computes them (bf16 and fp16: 16-bit words reduced in
// float by user-defined ops, rounded once per pair; bool: the logical ops).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <torch/csrc/distributed/c10d/Types.hpp>

namespace hcops {
namespace dist {

// TORCH_CHECK fails for a type MPI cannot carry.
MPI_Datatype mpi_type(at::ScalarType t);
// TORCH_CHECK fails for a reduction the type does not have (AVG of
// integers, bitwise ops of floats); AVG is MPI_SUM, divided afterwards.
MPI_Op mpi_op(const c10d::ReduceOp &op, at::ScalarType t);

}  // namespace dist
}  // namespace hcops
