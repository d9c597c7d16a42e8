// Moving ranges between NUMA nodes after allocation (hcops_mem_move and its
// asynchronous form): now on the calling thread, or on a helper thread that
// takes jobs in order and files each result under a ticket.
#pragma once

#include <cstddef>

namespace hcops {
namespace mem {

// Moves [addr, addr + len) to `target` (a placement: fast, ddr, local,
// interleave[:n], bind:n); 0, or -1 with errno.
int move(void *addr, std::size_t len, const char *target);
// The same on the helper thread; returns a ticket > 0, or -1 with errno.
long move_async(void *addr, std::size_t len, const char *target);
// Waits for a ticket; its move's result (0, or -1 with errno set).
int wait_move(long ticket);

// Called once, by init().
void init_mover();

// pthread_atfork, in the order allocator.cpp's hooks give. The helper does
// not survive fork: in the child, waiting for its tickets fails with ECHILD.
void mover_before_fork();
void mover_after_fork_parent();
void mover_after_fork_child();

}  // namespace mem
}  // namespace hcops
