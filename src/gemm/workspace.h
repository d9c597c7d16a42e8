// Packing memory and work counters for one GEMM in flight. Workspaces are pooled
// and reused, so steady-state calls allocate nothing; concurrent calls (from
// several application threads, or serial calls inside their parallel region)
// each take their own.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "common/wait.h"
#include "gemm/numa_buffer.h"

namespace hcops {

// How far the work of one domain part has got (gemm.cpp's run_part): the
// next task to hand out, and how many B packing tasks and C units are done.
// Each on a cache line of its own: every claim writes `next`.
struct PartProgress {
  alignas(64) std::atomic<long> next{0};
  alignas(64) WaitCounter packed;
  alignas(64) WaitCounter done;
  void reset() {
    next.store(0, std::memory_order_relaxed);
    packed.reset();
    done.reset();
  }
};

struct Workspace {
  std::vector<std::unique_ptr<NumaBuffer>> b_panels;  // one per domain part
  std::vector<std::unique_ptr<NumaBuffer>> a_blocks;  // one per team thread
  std::unique_ptr<PartProgress[]> progress;           // one per domain part
  size_t nprogress = 0;
  TeamBarrier finish;                                 // the team's end

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
