// The engine's packing memory comes from mmap (gemm/numa_buffer.cpp): while
// fail_mmap is set, mmap fails as on an exhausted machine (malloc falls back
// to the heap), so a test can reach the engine's unpacked path. The engine
// is linked into the test program, so its calls reach this definition.
// Included by one file of a program: it defines the interposer.
#pragma once

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>

std::atomic<bool> fail_mmap{false};
extern "C" void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (fail_mmap.load()) {
    errno = ENOMEM;
    return reinterpret_cast<void *>(-1);  // MAP_FAILED
  }
  return reinterpret_cast<void *>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
