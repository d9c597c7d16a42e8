// Packing memory and barriers for one GEMM in flight. Workspaces are pooled
// and reused, so steady-state calls allocate nothing; concurrent calls (from
// several application threads, or serial calls inside their parallel region)
// each take their own.
#pragma once

#include <memory>
#include <vector>

#include "common/team.h"
#include "gemm/numa_buffer.h"

namespace hcops {

struct Workspace {
  std::vector<std::unique_ptr<NumaBuffer>> b_panels;  // one per domain part
  std::vector<std::unique_ptr<NumaBuffer>> a_blocks;  // one per team thread
  std::unique_ptr<DomainBarrier[]> barriers;          // one per domain part
  size_t nbarriers = 0;

  // Sizes the vectors for `parts` parts and `threads` threads.
  void shape(size_t parts, size_t threads);
};

Workspace *acquire_workspace();
// How many workspaces this process has made: a GEMM in flight holds one.
long workspaces_created();
void release_workspace(Workspace *ws);

// RAII holder.
class WorkspaceLease {
 public:
  WorkspaceLease() : ws_(acquire_workspace()) {}
  ~WorkspaceLease() { release_workspace(ws_); }
  WorkspaceLease(const WorkspaceLease &) = delete;
  WorkspaceLease &operator=(const WorkspaceLease &) = delete;
  Workspace *operator->() const { return ws_; }
  Workspace &operator*() const { return *ws_; }

 private:
  Workspace *ws_;
};

}  // namespace hcops
