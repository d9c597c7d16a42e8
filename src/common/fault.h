// Allocation failures on demand, for the tests of what HCOps does when the
// system has no memory left (tests/torch2/test_faults.py, through the hcops
// torch library's fail_allocation_after): every allocation of HCOps' own
// buffers (the GEMM's packing buffers and f32 copy of C, the operators' work
// buffers) asks allocation_fails() first and, when it says so, fails as if
// the system had refused it. Off unless a caller turns it on: one relaxed
// atomic load per allocation.
#pragma once

#include "common/api.h"
namespace hcops::fault {

// The allocation after the next n ones fails (n = 0: the next one); n < 0:
// none (the default).
HCOPS_API void fail_allocation_after(long n);
// For one allocation: whether it must fail.
bool allocation_fails();
// How many allocations have been made to fail so far.
HCOPS_API long allocations_failed();

}  // namespace hcops::fault
