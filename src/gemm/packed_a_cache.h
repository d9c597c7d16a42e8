// The packed form of a GEMM's op(A) kept between calls (HCOPS_WEIGHT_CACHE).
//
// A framework layer that knows op(A) is a weight used again unchanged (the
// PyTorch layer, for a Linear's weight in a forward without autograd: the
// denoising steps of DiT sampling, evaluation) tags it (GemmArgs::a_tag); the
// driver then packs the whole of op(A) once, in the family's own panel
// layout, and later calls with the same operand read the panels instead of
// packing again.
//
// Never stale. An entry is used only when the caller's version (PyTorch's
// version counter) is the one it was packed at AND op(A)'s contents hash to
// the same 64-bit value: writes that bypass the version counter (through
// `.data`, numpy, DLPack, a collective writing into the storage, another
// tensor at a reused address) change the hash. Hashing reads op(A) once,
// where packing reads it and writes the panels. The hash is 4 lanes of a
// multiply-rotate round over the bytes in the order the matrix is stored, so
// a change goes unnoticed only if two different matrices give the same 64
// bits (about 2^-64 for a change that is not chosen to collide).
//
// Memory: at most HCOPS_WEIGHT_CACHE MiB of panels. When a new operand does
// not fit, entries unused for two cycles are dropped, a cycle being the
// operands the callers have been asking for (kept or not: a forward pass
// cycles through all its weights); otherwise the new operand is not cached.
// Least-recently-used eviction would drop each weight of a model larger
// than the limit just before its next use, and none would ever hit; this
// way the first ones to fit keep hitting.
//
// A weight that has changed at every call since it was packed (never read
// back: a forward without autograd inside training, as reentrant activation
// checkpointing runs) is not packed again while it keeps changing: its
// panels are freed and a marker remembers its last version, so such a call
// costs neither the hash nor the whole-matrix packing. The first call that
// finds it unchanged packs it again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "gemm/numa_buffer.h"
#include "kernels/gemm_types.h"

namespace hcops {

// What identifies one packed op(A): the operand as addressed, and the layout
// (the family's pack_a and tile rows, the k blocks).
struct PackedAKey {
  const void *a = nullptr;
  long lda = 0;
  Trans ta = Trans::N;
  long m = 0, k = 0;
  const void *pack = nullptr;  // the family's pack_a
  int mr = 0;
  long kc = 0;                 // k block depth (the last may be shorter)
  size_t elem = 0;             // bytes per element of A
  const void *owner = nullptr;  // the caller's storage identity
  bool operator==(const PackedAKey &o) const;
};

struct PackedAEntry {
  PackedAKey key;
  unsigned long long version = 0;
  uint64_t hash = 0;
  size_t bytes = 0;      // 0: a marker of a weight that changes at every call (no panels)
  NumaBuffer panels;
  bool ready = false;    // packed completely (set under the cache's lock)
  uint64_t last_use = 0;
  long hits = 0;         // since packed
};

// What a lookup found, for the verbose line (GemmReport::a_cache).
enum class ACacheUse {
  hit,        // packed panels read; op(A) not packed
  packed,     // not cached before: packed whole and kept
  repacked,   // the version changed: packed again
  changed,    // same version, different contents (a write the version did not see): packed again
  volatile_,  // changed at every call since it was packed: packed as usual, not kept
  busy,       // another call is packing the same operand: packed as usual
  full,       // no room in HCOPS_WEIGHT_CACHE: packed as usual
  off,        // HCOPS_WEIGHT_CACHE=0
  unaligned,  // the product's units start rows inside a panel: packed as usual
};
const char *a_cache_use_name(ACacheUse u);

// The 64-bit hash of a rows x cols column-major matrix of `elem`-byte
// elements with leading dimension ld (elements), on up to `threads` threads
// (the value does not depend on them: columns are hashed in fixed groups,
// then the groups' values in order).
uint64_t matrix_hash(const void *a, size_t elem, long rows, long cols, long ld, int threads = 1);

// Looks `key` up at `version`. Returns the entry to read (use == hit), an
// entry to pack into and then publish (packed, repacked, changed), or
// nullptr (busy, full, off). `node`: where new panels go.
std::shared_ptr<PackedAEntry> acquire_packed_a(const PackedAKey &key, unsigned long long version, size_t bytes,
                                               int node, int threads, ACacheUse *use);
// Marks an entry acquire_packed_a returned to be packed as complete.
void publish_packed_a(const std::shared_ptr<PackedAEntry> &e);

// The cache's size limit in bytes (HCOPS_WEIGHT_CACHE, MiB; 0 = off), and
// what it holds now, for hcops-info and the tests.
size_t packed_a_cache_limit();
size_t packed_a_cache_bytes();
long packed_a_cache_entries();
// Drops every entry (the tests; entries in use live on until released).
void packed_a_cache_clear();
namespace testing {
// Replaces HCOPS_WEIGHT_CACHE's limit (bytes), for the tests.
void set_packed_a_cache_limit(size_t bytes);
}  // namespace testing

}  // namespace hcops
