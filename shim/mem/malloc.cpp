// The allocation ABI of glibc, interposed. Sizes below the threshold go
// straight to glibc's own entry points (__libc_*: no dlsym, so no bootstrap
// recursion) with one compare and no lock; larger ones to the arena of
// src/mem. Every pointer's owner is known from its address alone, so free,
// realloc and malloc_usable_size work on glibc's pointers and ours alike.
#include <dlfcn.h>
#include <atomic>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "mem/allocator.h"

extern "C" {
void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
}

namespace mem = hcops::mem;

namespace {

using UsableSizeFn = size_t (*)(void *);
std::atomic<UsableSizeFn> glibc_usable_size{nullptr};

// glibc's malloc_usable_size: found at start-up, or at first use when a
// pointer is asked about before the constructor ran (dlsym may calloc, which
// glibc serves then).
UsableSizeFn libc_usable_fn() {
  UsableSizeFn f = glibc_usable_size.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<UsableSizeFn>(dlsym(RTLD_NEXT, "malloc_usable_size"));
    glibc_usable_size.store(f, std::memory_order_release);
  }
  return f;
}

// glibc 2.33 and later keep errno across free(), and callers do not expect a
// successful allocation to leave one behind: the large path's system calls
// (mbind, madvise, a failed hugetlb map) must not show.
class KeepErrno {
 public:
  KeepErrno() : saved_(errno) {}
  ~KeepErrno() { errno = saved_; }

 private:
  int saved_;
};

inline bool large(size_t n) { return n >= mem::threshold.load(std::memory_order_relaxed); }

// nullptr: glibc serves it.
void *large_alloc(size_t n, size_t align, bool zero = false) {
  if (mem::inside) return nullptr;
  mem::Internal in;
  KeepErrno keep;  // on nullptr glibc answers, and sets errno itself
  return mem::allocate(n, align, zero);
}

bool power_of_two(size_t a) { return a && !(a & (a - 1)); }

size_t libc_usable(void *p) {
  const UsableSizeFn f = p ? libc_usable_fn() : nullptr;
  return f ? f(p) : 0;
}

__attribute__((constructor)) void start() {
  libc_usable_fn();
  pthread_atfork(mem::before_fork, mem::after_fork_parent, mem::after_fork_child);
  mem::Internal in;
  mem::init();
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void *malloc(size_t n) {
  if (__builtin_expect(!large(n), 1)) return __libc_malloc(n);
  void *p = large_alloc(n, 0);
  return p ? p : __libc_malloc(n);
}

__attribute__((visibility("default"))) void free(void *p) {
  if (__builtin_expect(!mem::Arena::owns(p), 1)) return __libc_free(p);
  mem::Internal in;
  KeepErrno keep;
  mem::release(p);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (__builtin_expect(!large(bytes), 1)) return __libc_calloc(n, size);
  void *p = large_alloc(bytes, 0, true);
  return p ? p : __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n) {
  if (!p) return malloc(n);
  if (!mem::Arena::owns(p)) {
    if (!large(n) || !libc_usable_fn()) return __libc_realloc(p, n);
    void *q = large_alloc(n, 0);
    if (!q) return __libc_realloc(p, n);
    const size_t have = libc_usable(p);
    memcpy(q, p, have < n ? have : n);
    __libc_free(p);
    return q;
  }
  if (n == 0) {  // glibc: realloc(p, 0) frees p and returns NULL
    free(p);
    return nullptr;
  }
  void *q = nullptr;
  size_t have;
  {
    mem::Internal in;
    KeepErrno keep;
    if (large(n) && mem::resize_in_place(p, n)) return p;
    have = mem::usable_size(p);  // the caller may have used all of it
  }
  q = large(n) ? large_alloc(n, 0) : nullptr;
  if (!q) q = __libc_malloc(n);
  if (!q) return nullptr;  // errno is ENOMEM; p is untouched
  memcpy(q, p, have < n ? have : n);
  free(p);
  return q;
}

__attribute__((visibility("default"))) void *reallocarray(void *p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t n) {
  if (__builtin_expect(!large(n), 1)) return __libc_memalign(align, n);
  // glibc rounds a non-power-of-two alignment up to the next power of two.
  if (!power_of_two(align)) {
    if (align > (SIZE_MAX >> 1) + 1) {
      errno = EINVAL;
      return nullptr;
    }
    size_t a = 1;
    while (a < align) a <<= 1;
    align = a;
  }
  void *p = large_alloc(n, align);
  return p ? p : __libc_memalign(align, n);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n) {
  if (!power_of_two(align) || align % sizeof(void *)) return EINVAL;
  const int saved = errno;
  void *p = large(n) ? large_alloc(n, align) : nullptr;
  if (!p) p = __libc_memalign(align, n);
  if (!p) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t n) {
  if (!power_of_two(align)) {  // glibc 2.36 and C11 DR 460
    errno = EINVAL;
    return nullptr;
  }
  return memalign(align, n);
}

__attribute__((visibility("default"))) void *valloc(size_t n) { return memalign(sysconf(_SC_PAGESIZE), n); }

__attribute__((visibility("default"))) void *pvalloc(size_t n) {
  const size_t page = sysconf(_SC_PAGESIZE);
  size_t rounded;
  if (__builtin_add_overflow(n, page - 1, &rounded)) {
    errno = ENOMEM;
    return nullptr;
  }
  rounded &= ~(page - 1);
  return memalign(page, rounded ? rounded : page);
}

__attribute__((visibility("default"))) size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  if (mem::Arena::owns(p)) return mem::usable_size(p);
  return libc_usable(p);
}

}  // extern "C"
