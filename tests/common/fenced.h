// FencedArray<T>(count): `count` elements of T ending exactly where an
// inaccessible page starts, so a kernel that reads (or writes) one element
// past its operand crashes the test instead of passing on whatever lies
// there. For the CMocka tests: include <cmocka.h> before this header.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

template <typename T>
struct FencedArray {
  char *map = nullptr;
  size_t bytes = 0;
  T *data = nullptr;
  explicit FencedArray(size_t count) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t need = (count * sizeof(T) + page - 1) / page * page;
    bytes = need + page;
    map = static_cast<char *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + need, page, PROT_NONE), 0);
    data = reinterpret_cast<T *>(map + need) - count;
  }
  FencedArray(const FencedArray &) = delete;
  FencedArray &operator=(const FencedArray &) = delete;
  ~FencedArray() { munmap(map, bytes); }
};
