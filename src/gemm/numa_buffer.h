// Reusable, grow-only memory for packed panels, requested on one NUMA node.
#pragma once

#include <cstddef>

namespace hcops {

class NumaBuffer {
 public:
  NumaBuffer() = default;
  NumaBuffer(const NumaBuffer &) = delete;
  NumaBuffer &operator=(const NumaBuffer &) = delete;
  ~NumaBuffer();

  // At least `bytes`, 64-byte aligned, placed on `node` (-1: anywhere). Keeps
  // the current memory when it is big enough and on the same node.
  void *ensure(std::size_t bytes, int node);
  void *data() const { return ptr_; }

 private:
  void *ptr_ = nullptr;
  std::size_t size_ = 0;
  int node_ = -1;
};

// Placement bookkeeping, for tests and hcops-info: how often memory was
// requested on a node, and how often the kernel actually accepted the binding
// (never, on an XML topology that is not this machine).
long numa_requests(int node);
long numa_bindings_applied();
void numa_reset_counters();

}  // namespace hcops
