// ops::column_sums (ops/reduce.h) on the kernel family ops::ops_table()
// chose (ops/test_ops_isa.sh runs this once per family with HCOPS_ISA),
// against sums in f64: f32 and bf16 data into f32 and bf16 results, one and
// three outer slices, row counts around the 16 summed at a time (1 to 33,
// 100, 2048: DiT's tokens x batch), column counts around every family's
// lane count and past a block of 1024, rows dense and wider than their
// data, slices apart, column ranges that start and end inside a vector;
// every element outside the block NaN, so that reading one shows.
//
// The same through the blocked calls (column_partial_sums, then
// combine_column_sums), the rows in 1 to 8 blocks.
//
// Bound (ops/reduce.h): |got - sum| <= 18 u sum|x| (u = 2^-24), plus the
// rounding of the result (u |sum| for f32, one bf16 ulp for bf16). NaN where
// a column holds a NaN or both infinities, the infinity where it holds one
// (or its finite sum overflows f32). Only columns [c0, c1) of the slice
// asked for are written.
#include "ops/reduce.h"

#include <cfloat>

#include "ops_check.h"

namespace {

using hcops::Dtype;
using opscheck::bf16;
using opscheck::Checker;
using opscheck::kU;

constexpr double kSentinel = -12288.0;

void test_family(void **) { opscheck::check_family(); }

template <typename T>
Dtype dtype_of() {
  return std::is_same<T, bf16>::value ? Dtype::bf16 : Dtype::f32;
}

// One call per slice: columns [c0, c1) of slice o of rows x cols, rows ld
// apart, slices ld_outer apart. With blocks > 0, through the blocked
// calls instead: each slice's rows cut into that many blocks (as the
// framework layer cuts them, rows * b / blocks; some empty when blocks >
// rows), summed last block first into partials, then combined; partials
// outside [c0, c1) must stay as they were.
template <typename Tx, typename To>
void check_case(Checker &chk, int64_t outer, int64_t rows, int64_t cols, int64_t ld, int64_t ld_outer, int64_t c0,
                int64_t c1, bool specials, unsigned seed, int64_t blocks = 0) {
  const int64_t n = (outer - 1) * ld_outer + (rows - 1) * ld + cols;
  // Values of mixed sign around an offset: columns whose sum cancels; NaN in
  // every element outside the block (between rows and slices, and 64 past
  // the last): a read of any of them makes a sum NaN.
  std::vector<Tx> x = opscheck::random_rows<Tx>(1, n + 64, 3.0, 0.25, seed);
  {
    std::vector<bool> inside(x.size(), false);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) inside[size_t(o * ld_outer + r * ld + c)] = true;
    for (size_t i = 0; i < x.size(); ++i)
      if (!inside[i]) x[i] = opscheck::from_float<Tx>(NAN);
  }
  if (specials && cols >= 6 && rows >= 2) {
    const int64_t r = rows / 2;
    for (int64_t o = 0; o < outer; ++o) {
      Tx *s = x.data() + o * ld_outer;
      s[r * ld + 0] = opscheck::from_float<Tx>(NAN);
      s[0 * ld + 1] = opscheck::from_float<Tx>(INFINITY);
      s[r * ld + 2] = opscheck::from_float<Tx>(-INFINITY);
      s[0 * ld + 3] = opscheck::from_float<Tx>(INFINITY);  // and -Inf: NaN
      s[(rows - 1) * ld + 3] = opscheck::from_float<Tx>(-INFINITY);
      for (int64_t q = 0; q < rows; ++q) s[q * ld + 4] = opscheck::from_float<Tx>(2e38f);  // overflows
      s[r * ld + 5] = opscheck::from_float<Tx>(1e-40f);  // a subnormal among normals
    }
  }
  opscheck::Guarded<To> out(size_t(outer * cols));
  const hcops::ops::ColumnSums s{dtype_of<Tx>(), dtype_of<To>(), x.data(), out.data(), rows, cols, ld, ld_outer};
  if (blocks == 0) {
    for (int64_t o = 0; o < outer; ++o) hcops::ops::column_sums(s, o, c0, c1);
  } else {
    opscheck::Guarded<float> total(size_t(blocks * cols)), comp(size_t(blocks * cols));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t b = blocks - 1; b >= 0; --b)
        hcops::ops::column_partial_sums(s, o, rows * b / blocks, rows * (b + 1) / blocks, c0, c1,
                                        total.data() + b * cols, comp.data() + b * cols);
      hcops::ops::combine_column_sums(s, o, c0, c1, total.data(), comp.data(), blocks);
    }
    chk.require(total.guard_intact() && comp.guard_intact(), "a partial sum stored past the last block");
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t c = 0; c < cols; ++c)
        if ((c < c0 || c >= c1) && (total[size_t(b * cols + c)] != float(kSentinel) ||
                                    comp[size_t(b * cols + c)] != float(kSentinel))) {
          chk.require(false, "a partial sum outside [c0, c1) written");
          return;
        }
  }
  chk.require(out.guard_intact(), "a store past the last slice");
  const bool b16 = std::is_same<To, bf16>::value;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < cols; ++c) {
      const double got = opscheck::to_double(out[size_t(o * cols + c)]);
      if (c < c0 || c >= c1) {
        if (got != kSentinel) {
          chk.require(false, "a column outside [c0, c1) written");
          return;
        }
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const double v = opscheck::to_double(x[size_t(o * ld_outer + r * ld + c)]);
        sum += v;
        mag += std::fabs(v);
      }
      // A finite sum beyond f32's range is an infinity in any f32 sum.
      if (std::isfinite(sum) && std::fabs(sum) > double(FLT_MAX)) sum = std::copysign(opscheck::kInf, sum);
      const double bound = 18 * kU * mag + (b16 ? 0.0 : kU * std::fabs(sum));
      chk.value(got, sum, bound, mag, b16, "slice %ld column %ld (%ld x %ld, ld %ld, columns %ld-%ld)", long(o),
                long(c), long(rows), long(cols), long(ld), long(c0), long(c1));
    }
}

template <typename Tx, typename To>
void run_types(void **) {
  Tx *tx = nullptr;
  To *to = nullptr;
  Checker chk(std::string("column_sums ") + opscheck::type_name(tx) + " -> " + opscheck::type_name(to));
  unsigned seed = 1;
  int dense = 0;  // every other case has rows ld = cols apart, the others cols + 5
  for (int64_t rows : {1, 2, 15, 16, 17, 32, 33, 100})
    for (int64_t cols : opscheck::test_cols()) {
      if (cols == 0 || cols > 4608) continue;
      for (int64_t outer : {1, 3}) {
        const int64_t ld = cols + (dense++ % 2 ? 0 : 5), ld_outer = rows * ld + 7;
        check_case<Tx, To>(chk, outer, rows, cols, ld, ld_outer, 0, cols, true, seed++);
        if (cols > 8)  // a range starting and ending inside a vector
          check_case<Tx, To>(chk, outer, rows, cols, ld, ld_outer, 3, cols - 2, false, seed++);
      }
    }
  // DiT's bias gradients: 2048 rows of 384 and 1536; and past a block.
  for (int64_t cols : {384, 1536, 2100}) check_case<Tx, To>(chk, 1, 2048, cols, cols, 0, 0, cols, true, seed++);
  check_case<Tx, To>(chk, 1, 2048, 1536, 1536, 0, 768, 1536, false, seed++);
  // In row blocks: DiT's proj bias gradient in 8, blocks that do not
  // divide the rows, blocks of fewer rows than are summed at a time, empty
  // ones, a block past 1024 columns, column ranges inside vectors, slices
  // apart.
  for (int64_t blocks : {1, 2, 3, 8}) {
    check_case<Tx, To>(chk, 3, 100, 37, 41, 100 * 41 + 7, 0, 37, true, seed++, blocks);
    check_case<Tx, To>(chk, 1, 317, 1040, 1045, 0, 3, 1030, blocks == 3, seed++, blocks);
  }
  check_case<Tx, To>(chk, 1, 2048, 384, 384, 0, 0, 384, true, seed++, 8);
  check_case<Tx, To>(chk, 1, 5, 33, 33, 0, 0, 33, true, seed++, 8);
  check_case<Tx, To>(chk, 2, 33, 20, 20, 33 * 20, 1, 19, true, seed++, 5);
  assert_int_equal(chk.failures(), 0);
}

void test_f32_f32(void **state) { run_types<float, float>(state); }
void test_f32_bf16(void **state) { run_types<float, bf16>(state); }
void test_bf16_f32(void **state) { run_types<bf16, float>(state); }
void test_bf16_bf16(void **state) { run_types<bf16, bf16>(state); }

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family),
      cmocka_unit_test(test_f32_f32),
      cmocka_unit_test(test_f32_bf16),
      cmocka_unit_test(test_bf16_f32),
      cmocka_unit_test(test_bf16_bf16),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
