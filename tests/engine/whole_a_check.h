// What the tests of op(A) packed whole share (test_packed_a_cache.cpp: the
// packed-A cache; test_held_a.cpp: panels held by the caller): random
// operands, bitwise comparison, the verbose line's word for op(A), and the
// walk over every kernel of every family this CPU runs, for every datatype
// combination (a kernel whose features the CPU lacks is skipped, and said).
#pragma once

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_features.h"
#include "common/dtype.h"
#include "gemm/gemm.h"
#include "kernels/registry.h"

namespace whole_a_check {

template <typename T>
std::vector<T> random_values(std::mt19937 &rng, size_t n) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (auto &x : v) x = T(d(rng));
  return v;
}

template <typename T>
bool same_bits(const std::vector<T> &x, const std::vector<T> &y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(T) * x.size()) == 0;
}

// What a product said it did with op(A) (GemmReport::a_cache), "(none)" for nothing.
inline std::string use_of(const hcops::GemmReport &r) { return r.a_cache ? r.a_cache : "(none)"; }

// check(kernel, family name) for each kernel of family f that serves Ty
// and runs on this CPU; returns how many.
template <typename Ty, class Check>
int each_kernel(const hcops::KernelFamily &f, const Check &check) {
  int checked = 0;
  for (int i = 0; i < f.kernels->count; ++i) {
    const hcops::KernelRef &ref = f.kernels->refs[i];
    if (!ref.serves<Ty>()) continue;
    if (!hcops::features_usable(ref.needs)) {
      std::printf("skipped: family %s's kernel for %s needs features this CPU lacks\n", f.name,
                  hcops::dtype_name(ref.a));
      continue;
    }
    check(*ref.get<Ty>(), f.name);
    ++checked;
  }
  return checked;
}

// check(kernel, family name) on every family this CPU runs and every
// datatype combination it serves (check takes a GemmKernel<Ty> of each Ty);
// says per family how many it checked, and returns the total.
template <class Check>
int every_family(const char *what, const Check &check) {
  using namespace hcops;
  int total = 0;
  for (int i = 0; i < kernel_family_count(); ++i) {
    const KernelFamily &f = kernel_families()[i];
    if (!family_runs_here(f)) {
      std::printf("skipped: family %s does not run on this CPU\n", f.name);
      continue;
    }
    const int n = each_kernel<Sgemm>(f, check) + each_kernel<Dgemm>(f, check) + each_kernel<Bf16Gemm>(f, check) +
                  each_kernel<Bf16Bf16Gemm>(f, check) + each_kernel<SgemmBf16>(f, check) +
                  each_kernel<SgemmBf16x3>(f, check);
    std::printf("family %s: %d datatype combinations %s\n", f.name, n, what);
    total += n;
  }
  return total;
}

}  // namespace whole_a_check
