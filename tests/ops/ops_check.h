// What the row operators' tests (test_ops_softmax, test_ops_layer_norm) share:
// the kernel family check, random rows, guarded output buffers, and the
// comparison of a result with its f64 reference under a stated error bound.
//
// Bounds are in units of u = 2^-24 (f32's unit roundoff) times a magnitude
// the test names: |result| for a product of few roundings, the sum of the
// |terms| for a reduction. A reduction of n terms in f32 is bounded by
// reduction_k(n) * u * sum|terms|: the kernels add at least 16 partial sums
// (4 accumulators of >= 4 lanes), each of at most min(ceil(n / 16), 32)
// terms (a block is 128 vectors, ops/row_loops.h), combine blocks of at
// least 512 elements pairwise, then the partial sums. A bf16 result may add one bf16 ulp of the reference (its
// rounding from the f32 result). NaN and Inf must match the reference
// exactly (NaN where it is NaN, the same infinity).
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>  // 1.1 has no C++ guard of its own
}

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/family_rows.h"
#include "ops/family.h"

namespace opscheck {

using hcops::bf16;

constexpr double kU = 0x1p-24;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

inline double reduction_k(int64_t n) {
  double k = double(std::min<int64_t>((n + 15) / 16, 32)) + 8;
  for (int64_t blocks = (n + 511) / 512; blocks > 1; blocks = (blocks + 1) / 2) k += 1;
  return k;
}

// The spacing of bf16 numbers at |r| (its normal range; 2^-133 below).
inline double bf16_ulp(double r) {
  const double a = std::fabs(r);
  if (!(a >= 0x1p-126)) return 0x1p-133;
  return std::ldexp(1.0, std::ilogb(a) - 7);
}

template <typename T>
inline double to_double(T v) {
  return double(float(v));
}
template <typename T>
inline T from_float(float v) {
  return T(v);
}

// Lengths of the rows under test: short ones around every family's lane
// count (4, 8, 16; SVE's 4 to 64) and its multiples of four (the accumulators), DiT's,
// and one past every family's first block of a pairwise sum (row_loops.h:
// 128 vectors, 8192 floats at SVE 2048).
inline std::vector<int64_t> test_cols() {
  return {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 256, 384, 1000, 1152, 4608, 10001};
}

// HCOPS_ISA, when it names an operator family, must be the one in use; when
// it names a row without operator kernels (amx, GEMM only), the next
// operator family of the table this CPU runs (the wrapper script runs this
// program once per family the CPU can run).
// (families.def's rows: a family with operators but no table for this CPU's
// vector length fails here rather than passing on to the next.)
inline bool is_operator_family(const char *name) { return hcops::ops::has_operators(name); }
inline void check_family() {
  const char *chosen = hcops::ops::ops_family();
  std::printf("ops family: %s\n", chosen);
  const char *isa = std::getenv("HCOPS_ISA");
  if (!isa) return;
  if (is_operator_family(isa)) {
    assert_string_equal(chosen, isa);
    return;
  }
  const hcops::FamilyRow *rows = hcops::family_rows();
  int row = 0;
  while (row < hcops::family_row_count() && std::strcmp(rows[row].name, isa)) ++row;
  if (row == hcops::family_row_count() || !hcops::row_runs_here(row)) return;  // warned, from the top
  for (; row < hcops::family_row_count(); ++row)
    if (hcops::row_runs_here(row) && is_operator_family(rows[row].name)) break;
  assert_true(row < hcops::family_row_count());
  std::printf("HCOPS_ISA=%s has no operator kernels: expected %s\n", isa, rows[row].name);
  assert_string_equal(chosen, rows[row].name);
}

// An output array with a guard zone after it (and the whole array filled
// with a sentinel first), to catch stores past the end of the last row.
template <typename T>
struct Guarded {
  static constexpr int kGuard = 32;
  std::vector<T> v;
  explicit Guarded(size_t n) : v(n + kGuard, from_float<T>(-12288.0f)) {}
  T *data() { return v.data(); }
  size_t size() const { return v.size() - kGuard; }
  T &operator[](size_t i) { return v[i]; }
  bool guard_intact() const {
    for (size_t i = size(); i < v.size(); ++i)
      if (to_double(v[i]) != -12288.0) return false;
    return true;
  }
};

// Compares results with references, counts, keeps the worst error relative
// to its bound and to its magnitude, prints the first failures.
class Checker {
 public:
  explicit Checker(std::string what) : what_(std::move(what)) {}
  ~Checker() {
    if (n_) {
      std::printf("  %-40s %8ld values, worst %.3f of the bound; %.2f u x magnitude (f32), %.2f bf16 ulp%s\n",
                  what_.c_str(), long(n_), worst_ratio_, worst_u_, worst_bf16_ulp_, failures_ ? "  FAILED" : "");
      if (std::getenv("HCOPS_TEST_VERBOSE")) std::printf("    (worst of the bound at %s)\n", worst_where_);
    }
  }
  // got against ref: |got - ref| <= bound (+ one bf16 ulp of ref for bf16
  // results); `magnitude` (> 0) is what the bound scales, for the report.
  void value(double got, double ref, double bound, double magnitude, bool is_bf16, const char *fmt, ...)
      __attribute__((format(printf, 7, 8))) {
    ++n_;
    bool ok;
    double err = 0;
    if (std::isnan(ref)) ok = std::isnan(got);
    else if (std::isinf(ref)) ok = got == ref;
    else {
      err = std::fabs(got - ref);
      const double allowed = bound + (is_bf16 ? bf16_ulp(ref) : 0.0);
      ok = err <= allowed;  // false for a NaN got
      // Away from the subnormal range, where the bounds' floor rules: the
      // error in units of u x magnitude (f32) or of a bf16 ulp of ref (bf16).
      // (bf16: where the f32 bound is below half an ulp, the check is on the ulp.)
      if (ok && magnitude > 0x1p-100 && std::fabs(ref) > 0x1p-100) {
        if (!is_bf16) worst_u_ = std::max(worst_u_, err / (kU * magnitude));
        else if (bound < bf16_ulp(ref) / 2) worst_bf16_ulp_ = std::max(worst_bf16_ulp_, err / bf16_ulp(ref));
      }
      if (ok && allowed > 0 && err / allowed > worst_ratio_) {
        worst_ratio_ = err / allowed;
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(worst_where_, sizeof worst_where_, fmt, ap);
        va_end(ap);
      }
    }
    if (ok) return;
    if (failures_++ < 10) {
      char where[256];
      va_list ap;
      va_start(ap, fmt);
      std::vsnprintf(where, sizeof where, fmt, ap);
      va_end(ap);
      std::printf("FAIL %s %s: got %.9g, reference %.9g, error %.3g, bound %.3g%s\n", what_.c_str(), where, got, ref,
                  err, bound, is_bf16 ? " + 1 bf16 ulp" : "");
    }
  }
  void require(bool cond, const char *msg) {
    ++n_;
    if (!cond) {
      ++failures_;
      std::printf("FAIL %s: %s\n", what_.c_str(), msg);
    }
  }
  long failures() const { return failures_; }

 private:
  std::string what_;
  long n_ = 0, failures_ = 0;
  double worst_ratio_ = 0, worst_u_ = 0, worst_bf16_ulp_ = 0;
  char worst_where_[256] = "";
};

// Random rows of `cols`: scale * N(0, 1) + offset, rounded to T.
template <typename T>
std::vector<T> random_rows(int64_t rows, int64_t cols, double scale, double offset, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<T> v(size_t(rows * cols) + 1);  // + 1: never an empty vector's null data()
  for (auto &e : v) e = from_float<T>(float(scale * nd(rng) + offset));
  return v;
}

inline const char *type_name(float *) { return "f32"; }
inline const char *type_name(bf16 *) { return "bf16"; }
template <typename T>
const char *type_name() {
  return type_name(static_cast<T *>(nullptr));
}

}  // namespace opscheck
