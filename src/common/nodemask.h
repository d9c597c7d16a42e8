// NUMA node sets and the bit masks the kernel's memory-policy calls take
// (mbind, get_mempolicy, set_mempolicy). One definition of the mask size and
// of `maxnode`, so every caller passes the kernel the same, sufficient width.
#pragma once

#include <bitset>

namespace hcops {

constexpr int kMaxNodes = 1024;  // node numbers 0 .. kMaxNodes - 1
using NodeSet = std::bitset<kMaxNodes>;

// A node mask in the kernel's layout. The kernel reads maxnode - 1 bits (the
// historical off-by-one of get_nodes()), so kMaxNodes + 1 covers every bit.
struct NodeMask {
  static constexpr unsigned long kMaxnode = kMaxNodes + 1;
  static constexpr int kBitsPerWord = 8 * sizeof(unsigned long);
  unsigned long bits[kMaxNodes / kBitsPerWord] = {};

  NodeMask() = default;
  explicit NodeMask(const NodeSet &set) {
    for (int i = 0; i < kMaxNodes; ++i)
      if (set.test(i)) bits[i / kBitsPerWord] |= 1UL << (i % kBitsPerWord);
  }
  // The mask of one node; empty when `node` is out of range.
  static NodeMask single(int node) {
    NodeMask m;
    if (node >= 0 && node < kMaxNodes) m.bits[node / kBitsPerWord] = 1UL << (node % kBitsPerWord);
    return m;
  }
  NodeSet to_set() const {
    NodeSet set;
    for (int i = 0; i < kMaxNodes; ++i)
      if (bits[i / kBitsPerWord] >> (i % kBitsPerWord) & 1) set.set(i);
    return set;
  }
};

}  // namespace hcops
