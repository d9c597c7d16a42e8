// Threads for one GEMM call. HCOps runs on the caller's OpenMP runtime (the
// libgomp PyTorch already uses) so both share one pool instead of two pools
// fighting for the cores.
#pragma once

#include "common/api.h"
#include "common/topology.h"

namespace hcops {

// The most threads a GEMM called now may use: 1 inside an OpenMP parallel
// region (the caller already parallelises), 1 in a child forked from a
// multi-threaded parent (libgomp's pool does not survive fork; a team there
// hangs), else HCOPS_NUM_THREADS, else omp_get_max_threads() (which follows
// OMP_NUM_THREADS and torch.set_num_threads).
HCOPS_API int allowed_threads();

// allowed_threads(), fewer while other work takes the CPU's cores
// (common/contention.h): the team a GEMM starts now.
int max_threads();

// Fits the calling thread's OpenMP team (omp_set_num_threads: the team of
// every parallel region it starts, PyTorch's own operators' included) to
// the cores the measurements say the process gets, and gives it back once
// they are free again. Called where the caller's code cannot be between a
// read of its team size and the region that uses it: once per training
// step, from the fused optimizer step (shim/torch/adam.cpp). A team size
// the caller sets meanwhile is theirs: it is kept, and fitted from then on.
// allowed_threads() keeps answering the caller's own team size.
HCOPS_API void fit_runtime_team();

// Why max_threads() is what it is, for HCOPS_VERBOSE and hcops-info.
const char *thread_policy();

// Pins the calling thread to `d` when the machine has several domains and
// HCOPS_BIND is not 0; once per thread and domain. A failure warns once.
void bind_to_domain(const Topology &topo, const Domain &d);

}  // namespace hcops
