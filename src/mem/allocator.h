// The large-allocation side of libhcops_mem, below the malloc ABI: start-up,
// the policy stacks, and allocation into the arena (fresh or from the reuse
// cache). shim/mem/ turns the C allocation calls into these; the
// configuration, statistics, reuse cache and mover have their own files.
#pragma once

#include <atomic>
#include <cstddef>

#include "mem/arena.h"
#include "mem/policy.h"

namespace hcops {
namespace mem {

// Set while the calling thread runs libhcops_mem's own code: whatever that
// code allocates (hwloc, the policy maps) must go to glibc, not recurse.
extern thread_local bool inside __attribute__((tls_model("initial-exec")));
class Internal {
 public:
  Internal() : was_(inside) { inside = true; }
  ~Internal() { inside = was_; }
  Internal(const Internal &) = delete;
  Internal &operator=(const Internal &) = delete;

 private:
  bool was_;
};

// Sizes below this go to glibc untouched. SIZE_MAX until init() has run, so
// allocations made before the constructor are glibc's.
extern std::atomic<std::size_t> threshold;

// Reads HCOPS_MEM_* and reserves the arena. Called once, from the
// interposer's constructor; safe to call again.
void init();

// The rule for a `size`-byte allocation by the calling thread: its pushed
// policies, then the process's, then HCOPS_MEM_POLICY, then the default.
Rule rule_for(std::size_t size);

// Readable slack: at least this many bytes past the end of every block the
// allocator hands out (and past its usable size) are mapped and readable,
// whatever the path (fresh, reused, grown or shrunk in place) and page kind.
// Libraries our users run read past the end of their buffers: OpenBLAS
// 0.3.21's zgemv_n_HASWELL reads 1792 bytes past a matrix (OpenBLAS issue
// 4013), and vector kernels read ahead by a few vector blocks. Under glibc
// that memory is always mapped (a heap chunk has the top chunk or a
// neighbour after it; glibc itself guarantees at most a page minus the
// chunk header); a block that ended at the arena's PROT_NONE reservation
// turned those reads into SIGSEGV. One 4 KiB page covers the known cases
// with room to spare, and costs no memory: HCOps never writes it, so a read
// maps the kernel's shared zero page (after an in-place shrink it is a former
// data page, possibly dirty: one page per block at most). On a machine with larger base pages
// the slack is one of them.
constexpr std::size_t kMinSlack = 4096;
std::size_t slack_bytes();

// A new block of at least `size` bytes aligned to `align` (a power of two),
// or nullptr when it should come from glibc instead (rule "system", arena
// full, mapping refused). `zero`: the caller needs zeroes (calloc); fresh
// mappings are zero already, blocks reused from the cache are cleared.
void *allocate(std::size_t size, std::size_t align, bool zero);
// Releases a block of the arena.
void release(void *p);
// Grows or shrinks a block in place when it can; false when the caller must
// move it.
bool resize_in_place(void *p, std::size_t size);
std::size_t usable_size(const void *p);

// Policy stacks (hcops_mem_push/pop). Thread scope overrides process scope.
enum class Scope { thread, process };
bool push_policy(Scope s, const char *text, ParseError &err);
bool pop_policy(Scope s);

// pthread_atfork hooks for every lock of this module.
void before_fork();
void after_fork_parent();
void after_fork_child();

}  // namespace mem
}  // namespace hcops
