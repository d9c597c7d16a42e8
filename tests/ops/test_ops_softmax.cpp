// Softmax and LogSoftmax kernels (ops/softmax.h), forward and backward, f32
// and bf16, on the kernel family HCOPS_ISA selects (test_ops_isa.sh runs it
// on each), against an f64 reference of PyTorch's formulas on the same
// inputs: rows of every length around the vector widths and DiT's, 0, 1
// and several rows, values of several scales, and NaN/Inf rows (all NaN
// where PyTorch gives all NaN, 0 and -Inf for -Inf elements).
//
// Bounds (u = 2^-24, K = reduction_k(cols), t = x - max, S = sum exp(t)):
//   softmax         |y - r| <= (K + 8 + |t|) u |r|      (|t|: x - max rounds, exp amplifies)
//   log_softmax     |y - r| <= (2|t| + 4|log S| + K + 4) u
//   softmax bwd     |dx - r| <= u |y| (3|dy| + (K + 3) sum|dy y|)
//   log_softmax bwd |dx - r| <= u (2|dy| + exp(y) (K + 7) sum|dy|)
// plus 2^-123 for results in or near the subnormal range; bf16 results may
// be one bf16 ulp further.
#include "ops_check.h"
#include "kernels/generic/vec.h"
#include "ops/softmax.h"
#include "ops/vmath.h"

namespace {

using namespace opscheck;

// f64 reference rows; NaN propagates through the max as PyTorch's
// vectorized maximum does.
void ref_forward(const double *x, double *y, int64_t n, bool log) {
  double m = -kInf;
  for (int64_t j = 0; j < n; ++j) m = std::isnan(x[j]) || std::isnan(m) ? kNaN : std::max(m, x[j]);
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
  for (int64_t j = 0; j < n; ++j) y[j] = log ? (x[j] - m) - std::log(s) : std::exp(x[j] - m) / s;
}

void ref_backward(const double *dy, const double *y, double *dx, int64_t n, bool log) {
  double s = 0;
  for (int64_t j = 0; j < n; ++j) s += log ? dy[j] : dy[j] * y[j];
  for (int64_t j = 0; j < n; ++j) dx[j] = log ? dy[j] - std::exp(y[j]) * s : y[j] * (dy[j] - s);
}

constexpr double kTiny = 0x1p-123;

template <typename T>
std::vector<double> widen(const T *p, size_t n) {
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = to_double(p[i]);
  return d;
}

// Forward on x (rows x cols) against the reference; also in place (x == y)
// with the same bits.
template <typename T>
void check_forward(Checker &c, const std::vector<T> &x, int64_t rows, int64_t cols, bool log, const char *label) {
  const size_t total = size_t(rows * cols);
  Guarded<T> y(total);
  hcops::ops::softmax_forward(x.data(), y.data(), rows, cols, log);
  c.require(y.guard_intact(), "store past the last row");
  const bool is_bf16 = std::is_same_v<T, bf16>;
  std::vector<double> xd = widen(x.data(), total), r(total);
  for (int64_t i = 0; i < rows; ++i) {
    const double *xi = xd.data() + i * cols;
    ref_forward(xi, r.data() + i * cols, cols, log);
    double m = -kInf, s = 0;
    for (int64_t j = 0; j < cols; ++j) m = std::max(m, xi[j]);
    for (int64_t j = 0; j < cols; ++j) s += std::exp(xi[j] - m);
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = size_t(i * cols + j);
      const double t = std::fabs(xi[j] - m), ref = r[k];
      double bound, mag;
      if (log) {
        mag = 2 * t + 4 * std::fabs(std::log(s)) + reduction_k(cols) + 4;
        bound = mag * kU;
      } else {
        mag = std::fabs(ref);  // 0 for -Inf elements (t infinite)
        bound = (mag > 0 ? (reduction_k(cols) + 8 + t) * kU * mag : 0.0) + kTiny;
      }
      c.value(to_double(y[k]), ref, bound, mag, is_bf16, "%s cols %ld row %ld col %ld", label, long(cols), long(i),
              long(j));
    }
  }
  std::vector<T> inplace(x);
  hcops::ops::softmax_forward(inplace.data(), inplace.data(), rows, cols, log);
  c.require(total == 0 || !std::memcmp(inplace.data(), y.data(), total * sizeof(T)), "in place differs");
}

template <typename T>
void check_backward(Checker &c, const std::vector<T> &dy, const std::vector<T> &y, int64_t rows, int64_t cols, bool log,
                    const char *label) {
  const size_t total = size_t(rows * cols);
  Guarded<T> dx(total);
  hcops::ops::softmax_backward(dy.data(), y.data(), dx.data(), rows, cols, log);
  c.require(dx.guard_intact(), "store past the last row");
  const bool is_bf16 = std::is_same_v<T, bf16>;
  std::vector<double> dyd = widen(dy.data(), total), yd = widen(y.data(), total), r(total);
  for (int64_t i = 0; i < rows; ++i) {
    const double *dyi = dyd.data() + i * cols, *yi = yd.data() + i * cols;
    ref_backward(dyi, yi, r.data() + i * cols, cols, log);
    double sabs = 0;
    for (int64_t j = 0; j < cols; ++j) sabs += log ? std::fabs(dyi[j]) : std::fabs(dyi[j] * yi[j]);
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = size_t(i * cols + j);
      const double mag = log ? 2 * std::fabs(dyi[j]) + std::exp(yi[j]) * (reduction_k(cols) + 7) * sabs
                             : std::fabs(yi[j]) * (3 * std::fabs(dyi[j]) + (reduction_k(cols) + 3) * sabs);
      c.value(to_double(dx[k]), r[k], mag * kU + kTiny, mag, is_bf16, "%s cols %ld row %ld col %ld", label, long(cols),
              long(i), long(j));
    }
  }
  std::vector<T> inplace(dy);
  hcops::ops::softmax_backward(inplace.data(), y.data(), inplace.data(), rows, cols, log);
  c.require(total == 0 || !std::memcmp(inplace.data(), dx.data(), total * sizeof(T)), "in place (dx = dy) differs");
}

struct Scale {
  double scale, offset;
  const char *label;
};
const Scale kScales[] = {
    {1, 0, "N(0,1)"}, {1e-3, 0, "1e-3 N(0,1)"}, {30, 0, "30 N(0,1)"}, {1, -1000, "N(-1000,1)"}, {1, 1e4, "N(1e4,1)"}};

template <typename T>
void run_forward(bool log) {
  Checker c(std::string(log ? "log_softmax" : "softmax") + " forward " + type_name<T>());
  std::vector<int64_t> cols_list = test_cols();
  cols_list.push_back(8200);  // past the bf16 row scratch: exp computed again
  for (int64_t cols : cols_list) {
    for (int64_t rows : {int64_t(0), int64_t(1), int64_t(cols > 1200 ? 3 : 7)}) {
      unsigned seed = unsigned(cols * 31 + rows);
      for (const Scale &s : kScales)
        check_forward(c, random_rows<T>(rows, cols, s.scale, s.offset, seed++), rows, cols, log, s.label);
    }
  }
  assert_int_equal(c.failures(), 0);
}

template <typename T>
void run_backward(bool log) {
  Checker c(std::string(log ? "log_softmax" : "softmax") + " backward " + type_name<T>());
  for (int64_t cols : test_cols()) {
    for (int64_t rows : {int64_t(0), int64_t(1), int64_t(cols > 1200 ? 3 : 7)}) {
      unsigned seed = unsigned(cols * 17 + rows);
      for (const Scale &s : {kScales[0], kScales[2]}) {
        // y as the forward made it (rounded to T), dy of another scale.
        const std::vector<T> x = random_rows<T>(rows, cols, s.scale, 0, seed++);
        std::vector<double> xd = widen(x.data(), size_t(rows * cols)), yd(xd.size());
        std::vector<T> y(x.size());
        for (int64_t i = 0; i < rows; ++i) ref_forward(xd.data() + i * cols, yd.data() + i * cols, cols, log);
        for (size_t k = 0; k < yd.size(); ++k) y[k] = from_float<T>(float(yd[k]));
        check_backward(c, random_rows<T>(rows, cols, 3, 0.5, seed++), y, rows, cols, log, s.label);
      }
    }
  }
  assert_int_equal(c.failures(), 0);
}

void test_family(void **) { check_family(); }
void test_forward_f32(void **) {
  run_forward<float>(false);
  run_forward<float>(true);
}
void test_forward_bf16(void **) {
  run_forward<bf16>(false);
  run_forward<bf16>(true);
}
void test_backward_f32(void **) {
  run_backward<float>(false);
  run_backward<float>(true);
}
void test_backward_bf16(void **) {
  run_backward<bf16>(false);
  run_backward<bf16>(true);
}

// Rows holding NaN or Inf give PyTorch's results: all NaN for a NaN, a +Inf
// or only -Inf; 0 (log: -Inf) for -Inf elements beside finite ones.
template <typename T>
void special_rows(bool log) {
  Checker c(std::string(log ? "log_softmax" : "softmax") + " NaN/Inf rows " + type_name<T>());
  for (int64_t cols : {int64_t(1), int64_t(3), int64_t(17), int64_t(100), int64_t(1152)}) {
    const int64_t rows = 7;
    std::vector<T> x = random_rows<T>(rows, cols, 1, 0, unsigned(cols));
    auto at = [&](int64_t i, int64_t j) -> T & { return x[size_t(i * cols + j)]; };
    at(0, cols / 2) = from_float<T>(NAN);
    at(1, cols - 1) = from_float<T>(INFINITY);
    for (int64_t j = 0; j < cols; ++j) at(2, j) = from_float<T>(-INFINITY);
    for (int64_t j = 0; j < cols; j += 2) at(3, j) = from_float<T>(-INFINITY);
    at(4, 0) = from_float<T>(INFINITY);
    at(4, cols - 1) = from_float<T>(-INFINITY);
    at(5, cols - 1) = from_float<T>(3e38f);
    at(6, 0) = from_float<T>(-3e38f);
    check_forward(c, x, rows, cols, log, "NaN/Inf");
    std::vector<T> y(x.size());
    hcops::ops::softmax_forward(x.data(), y.data(), rows, cols, log);
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t i : {0, 1, 2}) c.require(std::isnan(to_double(y[size_t(i * cols + j)])), "row not all NaN");
      if (cols > 1) c.require(std::isnan(to_double(y[size_t(4 * cols + j)])), "+Inf/-Inf row not all NaN");
    }
    if (cols > 1) {
      c.require(to_double(y[size_t(3 * cols)]) == (log ? -kInf : 0.0), "-Inf element beside finite ones");
      // Backward with NaN in dy: the row is NaN (sum(dy * y) is).
      std::vector<T> dy = random_rows<T>(rows, cols, 1, 0, 99), yok(x.size()), dx(x.size());
      hcops::ops::softmax_forward(random_rows<T>(rows, cols, 1, 0, 98).data(), yok.data(), rows, cols, log);
      dy[size_t(cols / 2)] = from_float<T>(NAN);
      hcops::ops::softmax_backward(dy.data(), yok.data(), dx.data(), rows, cols, log);
      for (int64_t j = 0; j < cols; ++j) c.require(std::isnan(to_double(dx[size_t(j)])), "dy NaN: dx not all NaN");
      c.require(!std::isnan(to_double(dx[size_t(cols)])), "dy NaN spilled into the next row");
    }
  }
  assert_int_equal(c.failures(), 0);
}

void test_special_rows(void **) {
  special_rows<float>(false);
  special_rows<float>(true);
  special_rows<bf16>(false);
  special_rows<bf16>(true);
}

// The softmax with each row's logsumexp (attention's forward): the same
// probabilities, bit for bit, as softmax_forward, and lse = max + log(sum
// exp(x - max)) within (K + 8) u (1 + |lse|) of the f64 value, written at
// lse[i * ld_lse] only; NaN where the row's softmax is NaN.
void test_forward_lse(void **) {
  Checker c("softmax forward with logsumexp");
  const double u = 0x1p-24;
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(256), int64_t(1152), int64_t(8200)}) {
    const int64_t rows = 9, ld_lse = 3;
    for (const Scale &sc : kScales) {
      std::vector<float> x = random_rows<float>(rows, cols, sc.scale, sc.offset, unsigned(cols));
      x[size_t(cols / 2)] = NAN;                                // row 0: NaN
      x[size_t(2 * cols - 1)] = INFINITY;                       // row 1: +Inf
      for (int64_t j = 0; j < cols; ++j) x[size_t(2 * cols + j)] = -INFINITY;  // row 2: all -Inf
      std::vector<float> y(x.size()), want(x.size()), lse(size_t(rows * ld_lse), 12345.0f);
      hcops::ops::softmax_forward(x.data(), y.data(), rows, cols, cols, lse.data(), ld_lse);
      hcops::ops::softmax_forward(x.data(), want.data(), rows, cols, false);
      c.require(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0, "probabilities differ");
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t g = 1; g < ld_lse; ++g) c.require(lse[size_t(i * ld_lse + g)] == 12345.0f, "written past lse");
        const float got = lse[size_t(i * ld_lse)];
        if (i < 3) {
          c.require(std::isnan(got), "NaN/Inf row: lse not NaN");
          continue;
        }
        double m = -kInf, sum = 0;
        for (int64_t j = 0; j < cols; ++j) m = std::max(m, double(x[size_t(i * cols + j)]));
        for (int64_t j = 0; j < cols; ++j) sum += std::exp(double(x[size_t(i * cols + j)]) - m);
        const double r = m + std::log(sum);
        c.value(got, r, (reduction_k(cols) + 8) * u * (1 + std::fabs(r)), 1 + std::fabs(r), false, "%s row %ld cols %ld",
                sc.label, long(i), long(cols));
      }
    }
  }
  assert_int_equal(c.failures(), 0);
}

// Attention's softmax rows (ops/attention.cpp), on the rows of
// test_forward_lse and one masked as causal attention masks (finite, then
// -Inf):
// - f32 scores into bf16 probabilities: bit for bit the f32 softmax rounded
//   to bf16, and the same logsumexp bits;
// - the softmax again from the logsumexp, p = exp(x - lse): within
//   (K + 8) u (1 + |lse|) + (|x - lse| + 4) u of the f64 softmax, relative
//   (the first term is the logsumexp's own f32 error, absolute in the
//   exponent), NaN on the rows whose softmax is NaN, and its bf16 copy bit
//   for bit p rounded;
// - the backward into bf16: bit for bit the f32 backward rounded;
// - with a scale (0.125, 0.3, 7.1) applied as the scores are read: bit for
//   bit the same as on the scores scaled first.
void test_attention_rows(void **) {
  Checker c("attention's softmax rows");
  const double u = 0x1p-24;
  auto rounded = [](const std::vector<float> &v) {
    std::vector<bf16> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = bf16(v[i]);
    return r;
  };
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(256), int64_t(1152), int64_t(8200)}) {
    const int64_t rows = 9, ld_lse = 3;
    for (const Scale &sc : kScales) {
      std::vector<float> x = random_rows<float>(rows, cols, sc.scale, sc.offset, unsigned(cols + 7));
      x[size_t(cols / 2)] = NAN;
      x[size_t(2 * cols - 1)] = INFINITY;
      for (int64_t j = 0; j < cols; ++j) x[size_t(2 * cols + j)] = -INFINITY;
      for (int64_t j = cols / 2 + 1; j < cols; ++j) x[size_t(3 * cols + j)] = -INFINITY;  // a causal row
      const size_t total = size_t(rows * cols);  // (random_rows pads past the rows)
      std::vector<float> y(total), lse(size_t(rows * ld_lse), 12345.0f), lse16 = lse;
      Guarded<bf16> y16(total);
      hcops::ops::softmax_forward(x.data(), y.data(), rows, cols, cols, lse.data(), ld_lse);
      hcops::ops::softmax_forward(x.data(), y16.data(), rows, cols, cols, lse16.data(), ld_lse);
      c.require(y16.guard_intact(), "bf16 softmax: store past the last row");
      c.require(std::memcmp(y16.data(), rounded(y).data(), total * sizeof(bf16)) == 0,
                "bf16 probabilities are not the f32 ones rounded");
      c.require(std::memcmp(lse16.data(), lse.data(), lse.size() * sizeof(float)) == 0, "bf16 softmax: lse differs");

      Guarded<float> p(total);
      Guarded<bf16> p16(total);
      std::vector<float> sums_p(static_cast<size_t>(rows), -1.0f);
      hcops::ops::softmax_from_lse(x.data(), 1.0f, lse.data(), ld_lse, p.data(), p16.data(), sums_p.data(), rows, cols, cols);
      c.require(p.guard_intact() && p16.guard_intact(), "softmax from lse: store past the last row");
      c.require(std::memcmp(p16.data(), rounded(std::vector<float>(p.data(), p.data() + total)).data(),
                            total * sizeof(bf16)) == 0,
                "softmax from lse: the bf16 copy is not p rounded");
      // A logsumexp 5 above the rows' own (a blockwise caller's): the rows
      // are exp(x - lse) as computed, e^-5 of the softmax, not renormalised.
      {
        std::vector<float> lse5 = lse, p5(total), sums5(static_cast<size_t>(rows));
        for (float &l : lse5) l += 5.0f;
        hcops::ops::softmax_from_lse(x.data(), 1.0f, lse5.data(), ld_lse, p5.data(), nullptr, sums5.data(), rows, cols, cols);
        for (int64_t i = 3; i < rows; ++i) {
          c.require(!hcops::ops::lse_is_rows(sums5[size_t(i)]), "from lse: a foreign lse taken for the row's own");
          for (int64_t j = 0; j < cols; ++j)
            c.value(p5[size_t(i * cols + j)], p.data()[i * cols + j] * std::exp(-5.0), 1e-5 * p.data()[i * cols + j] + kTiny,
                    p.data()[i * cols + j], false, "from a foreign lse: row %ld col %ld", long(i), long(j));
        }
      }
      Guarded<float> p_only(total);
      hcops::ops::softmax_from_lse(x.data(), 1.0f, lse.data(), ld_lse, p_only.data(), nullptr, nullptr, rows, cols, cols);
      c.require(std::memcmp(p_only.data(), p.data(), total * sizeof(float)) == 0, "softmax from lse: p differs without p16");
      std::vector<double> xd = widen(x.data(), total), r(total);
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t o = i * cols;
        if (i < 3) {
          bool all_nan = true;
          for (int64_t j = 0; j < cols; ++j) all_nan = all_nan && std::isnan(p.data()[o + j]);
          c.require(all_nan, "softmax from lse: a NaN row is not all NaN");
          continue;
        }
        ref_forward(xd.data() + o, r.data() + o, cols, false);
        const double l = lse[size_t(i * ld_lse)];
        // Each row is renormalised: its sum is 1 to the rounding of a sum,
        // whatever the rounding of lse (|lse| u, which scaled the whole row).
        double row_sum = 0;
        for (int64_t j = 0; j < cols; ++j) row_sum += p.data()[o + j];
        c.value(row_sum, 1.0, (reduction_k(cols) + 8) * u, 1.0, false, "from lse: %s row %ld of %ld sums to", sc.label,
                long(i), long(cols));
        c.require(hcops::ops::lse_is_rows(sums_p[size_t(i)]), "from lse: the row's own lse not recognised by its sum");
        for (int64_t j = 0; j < cols; ++j) {
          // A masked (-Inf) score's probability is exactly 0 (bound kTiny).
          const double t = std::isinf(xd[size_t(o + j)]) ? 0 : std::fabs(xd[size_t(o + j)] - l);
          const double bound = ((reduction_k(cols) + 8) * u * (1 + std::fabs(l)) + (t + 4) * u) * r[size_t(o + j)];
          c.value(p.data()[o + j], r[size_t(o + j)], bound + kTiny, r[size_t(o + j)], false,
                  "from lse: %s row %ld col %ld of %ld", sc.label, long(i), long(j), long(cols));
        }
      }

      // The backward with each row's sum given (attention's D): dx = y (dy -
      // sums[i]) exactly as f32 computes it, and its bf16 store that rounded.
      std::vector<float> dy = random_rows<float>(rows, cols, 1, 0, unsigned(cols + 99)), dx(total),
                         sums(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) sums[size_t(i)] = float(i) * 0.375f - 1.0f;
      Guarded<bf16> dx16(total);
      hcops::ops::softmax_backward(dy.data(), y.data(), sums.data(), dx.data(), rows, cols, cols);
      hcops::ops::softmax_backward(dy.data(), y.data(), sums.data(), dx16.data(), rows, cols, cols);
      c.require(dx16.guard_intact(), "bf16 backward: store past the last row");
      c.require(std::memcmp(dx16.data(), rounded(dx).data(), total * sizeof(bf16)) == 0,
                "bf16 backward is not the f32 one rounded");
      bool exact = true;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const size_t o = size_t(i * cols + j);
          const float want = y[o] * (dy[o] - sums[size_t(i)]);
          exact = exact && (std::memcmp(&want, &dx[o], sizeof want) == 0 || (std::isnan(want) && std::isnan(dx[o])));
        }
      c.require(exact, "backward with given sums: not y (dy - sum) as f32 computes it");

      // Scaled as read: the same bits as scaling the scores first, f32 and
      // bf16 probabilities, logsumexp, and the softmax from it.
      for (float scale : {0.125f, 0.3f, 7.1f}) {
        std::vector<float> xs(total), ys(total), want(total), ls(lse.size(), 12345.0f), lw = ls;
        for (size_t i = 0; i < total; ++i) xs[i] = scale * x[i];
        hcops::ops::softmax_forward(x.data(), ys.data(), rows, cols, cols, ls.data(), ld_lse, scale);
        hcops::ops::softmax_forward(xs.data(), want.data(), rows, cols, cols, lw.data(), ld_lse);
        c.require(std::memcmp(ys.data(), want.data(), total * sizeof(float)) == 0, "scaled softmax differs");
        c.require(std::memcmp(ls.data(), lw.data(), ls.size() * sizeof(float)) == 0, "scaled lse differs");
        std::vector<bf16> ys16(total);
        std::vector<float> ls16(lse.size(), 12345.0f);
        hcops::ops::softmax_forward(x.data(), ys16.data(), rows, cols, cols, ls16.data(), ld_lse, scale);
        c.require(std::memcmp(ys16.data(), rounded(want).data(), total * sizeof(bf16)) == 0,
                  "scaled bf16 softmax differs");
        c.require(std::memcmp(ls16.data(), lw.data(), ls16.size() * sizeof(float)) == 0, "scaled bf16 lse differs");
        std::vector<float> ps(total), pw(total);
        std::vector<bf16> ps16(total), pw16(total);
        hcops::ops::softmax_from_lse(x.data(), scale, lw.data(), ld_lse, ps.data(), ps16.data(), nullptr, rows, cols, cols);
        hcops::ops::softmax_from_lse(xs.data(), 1.0f, lw.data(), ld_lse, pw.data(), pw16.data(), nullptr, rows, cols, cols);
        c.require(std::memcmp(ps.data(), pw.data(), total * sizeof(float)) == 0 &&
                      std::memcmp(ps16.data(), pw16.data(), total * sizeof(bf16)) == 0,
                  "scaled softmax from lse differs");
      }
    }
  }
  assert_int_equal(c.failures(), 0);
}

// Attention's row operators on rows ld apart (its blocks' padded rows, ld
// unaligned and as attention pads them: a multiple of 32, plus 32; scores
// scaled as read and not): each row and logsumexp the same bits as the same
// rows contiguous, in place too, and the padding between the rows never
// written (nor read into a result: it holds NaN, which would spread through
// a row's max or sum).
template <typename T>
std::vector<T> padded(const std::vector<float> &x, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<T> y(size_t(rows * ld), from_float<T>(NAN));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y[size_t(i * ld + j)] = from_float<T>(x[size_t(i * cols + j)]);
  return y;
}
// The padded rows hold the contiguous ones' bits, and the padding is NaN still.
template <typename T>
bool same_rows(const std::vector<T> &got, const std::vector<T> &want, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < ld; ++j) {
      const T &g = got[size_t(i * ld + j)];
      if (j >= cols ? !std::isnan(to_double(g)) : std::memcmp(&g, &want[size_t(i * cols + j)], sizeof(T)) != 0)
        return false;
    }
  return true;
}

void test_attention_rows_strided(void **) {
  Checker c("attention's softmax rows, padded");
  for (int64_t cols : {int64_t(1), int64_t(17), int64_t(1024), int64_t(1152)}) {
    for (int64_t ld : {cols + 5, (cols + 31) / 32 * 32 + 32}) {
      const int64_t rows = 7, ld_lse = 2;
      std::vector<float> x = random_rows<float>(rows, cols, 4, 0, unsigned(cols + ld));
      x.resize(size_t(rows * cols));
      for (int64_t j = cols / 2 + 1; j < cols; ++j) x[size_t(cols + j)] = -INFINITY;  // a causal row
      std::vector<float> dy = random_rows<float>(rows, cols, 1, 0, unsigned(cols + 3));
      dy.resize(x.size());
      const float scale = ld == cols + 5 ? 0.3f : 1.0f;  // scaled as read, and not (attention's other branch)

      // Forward with the logsumexp: f32 out of place and in place, bf16.
      std::vector<float> y(x.size()), lse(size_t(rows * ld_lse)), lse_p(lse.size());
      std::vector<bf16> y16(x.size());
      hcops::ops::softmax_forward(x.data(), y.data(), rows, cols, cols, lse.data(), ld_lse, scale);
      hcops::ops::softmax_forward(x.data(), y16.data(), rows, cols, cols, lse.data(), ld_lse, scale);
      std::vector<float> xp = padded<float>(x, rows, cols, ld), yp(xp.size(), NAN), in_place = xp;
      hcops::ops::softmax_forward(xp.data(), yp.data(), rows, cols, ld, lse_p.data(), ld_lse, scale);
      c.require(same_rows(yp, y, rows, cols, ld) && lse_p == lse, "forward: padded rows differ");
      std::fill(lse_p.begin(), lse_p.end(), 0.0f);
      hcops::ops::softmax_forward(in_place.data(), in_place.data(), rows, cols, ld, lse_p.data(), ld_lse, scale);
      c.require(same_rows(in_place, y, rows, cols, ld) && lse_p == lse, "forward in place: padded rows differ");
      std::vector<bf16> y16p(xp.size(), bf16(NAN));
      std::fill(lse_p.begin(), lse_p.end(), 0.0f);
      hcops::ops::softmax_forward(xp.data(), y16p.data(), rows, cols, ld, lse_p.data(), ld_lse, scale);
      c.require(same_rows(y16p, y16, rows, cols, ld) && lse_p == lse, "bf16 forward: padded rows differ");

      // P again from the logsumexp, in place over the scores, with its bf16
      // copy and the rows' sums.
      std::vector<float> p = x, sums(static_cast<size_t>(rows)), sums_p(sums.size());
      std::vector<bf16> p16(x.size());
      hcops::ops::softmax_from_lse(p.data(), scale, lse.data(), ld_lse, p.data(), p16.data(), sums.data(), rows, cols,
                                   cols);
      std::vector<float> pp = xp;
      std::vector<bf16> p16p(xp.size(), bf16(NAN));
      hcops::ops::softmax_from_lse(pp.data(), scale, lse.data(), ld_lse, pp.data(), p16p.data(), sums_p.data(), rows,
                                   cols, ld);
      c.require(same_rows(pp, p, rows, cols, ld) && same_rows(p16p, p16, rows, cols, ld) && sums_p == sums,
                "softmax from lse: padded rows differ");

      // D = rowsum(dP P), and dS = P (dP - D): f32 in place over dP, bf16.
      std::vector<float> d(static_cast<size_t>(rows)), d_p(d.size());
      const std::vector<float> dyp = padded<float>(dy, rows, cols, ld);
      hcops::ops::row_dots(dy.data(), p.data(), d.data(), rows, cols, cols);
      hcops::ops::row_dots(dyp.data(), pp.data(), d_p.data(), rows, cols, ld);
      c.require(d_p == d, "row_dots: padded rows differ");
      std::vector<float> ds = dy, dsp = dyp;
      std::vector<bf16> ds16(x.size()), ds16p(xp.size(), bf16(NAN));
      hcops::ops::softmax_backward(ds.data(), p.data(), d.data(), ds16.data(), rows, cols, cols);
      hcops::ops::softmax_backward(ds.data(), p.data(), d.data(), ds.data(), rows, cols, cols);
      hcops::ops::softmax_backward(dsp.data(), pp.data(), d.data(), ds16p.data(), rows, cols, ld);
      hcops::ops::softmax_backward(dsp.data(), pp.data(), d.data(), dsp.data(), rows, cols, ld);
      c.require(same_rows(dsp, ds, rows, cols, ld) && same_rows(ds16p, ds16, rows, cols, ld),
                "backward with given sums: padded rows differ");
    }
  }
  assert_int_equal(c.failures(), 0);
}

// cols == 0 or rows == 0: nothing is read or written.
void test_empty(void **) {
  for (bool log : {false, true}) {
    Guarded<float> y(0);
    hcops::ops::softmax_forward(static_cast<const float *>(nullptr), y.data(), 5, 0, log);
    hcops::ops::softmax_forward(static_cast<const float *>(nullptr), y.data(), 0, 9, log);
    hcops::ops::softmax_backward(static_cast<const float *>(nullptr), nullptr, y.data(), 5, 0, log);
    hcops::ops::softmax_backward(static_cast<const float *>(nullptr), nullptr, y.data(), 0, 9, log);
    assert_true(y.guard_intact());
    Guarded<bf16> yb(0);
    hcops::ops::softmax_forward(static_cast<const bf16 *>(nullptr), yb.data(), 5, 0, log);
    hcops::ops::softmax_backward(static_cast<const bf16 *>(nullptr), nullptr, yb.data(), 0, 9, log);
    assert_true(yb.guard_intact());
  }
}

// The forward's lean exp (vmath::exp_nonpositive), on the generic traits
// (the same source every family compiles; generic on x86-64 has no fused
// multiply-add, so its error is the largest): within 1.5 ulp of exp on every 331st float
// of [-87.3, 0]; below 2^-126 the denormal exp(x) rounds to, within one
// denormal step (2^-149), on every 7th float of [-110, -87.3], as PyTorch's
// softmax keeps them; 0 below -104 and at -Inf; NaN kept.
void test_exp_nonpositive(void **) {
  using F = hcops::kernels::generic::F32;
  auto exp1 = [](float x) {
    float in[F::lanes], out[F::lanes];
    for (float &v : in) v = x;
    F::storeu(out, hcops::ops::vmath::exp_nonpositive<F>(F::loadu(in)));
    return out[0];
  };
  double worst = 0;
  long n = 0;
  for (uint32_t bits = 0x80000000u; bits <= 0xc2aeac4fu; bits += 331) {  // -0 .. -87.3365
    float x;
    std::memcpy(&x, &bits, sizeof x);
    const double ref = std::exp(double(x));
    const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
    worst = std::max(worst, std::fabs(exp1(x) - ref) / ulp);
    ++n;
  }
  double worst_denormal = 0;
  long denormals = 0;
  for (uint32_t bits = 0xc2aeac50u; bits <= 0xc2dc0000u; bits += 7) {  // -87.3366 .. -110
    float x;
    std::memcpy(&x, &bits, sizeof x);
    const float got = exp1(x);
    worst_denormal = std::max(worst_denormal, std::fabs(got - std::exp(double(x))) / 0x1p-149);
    denormals += got != 0;
  }
  std::printf("  exp_nonpositive: %ld arguments, worst %.3f ulp; below 2^-126 %ld nonzero, worst %.3f x 2^-149\n", n,
              worst, denormals, worst_denormal);
  assert_true(worst <= 1.5);
  assert_true(worst_denormal <= 1.0 && denormals > 0);
  assert_true(exp1(-87.5f) == float(std::exp(-87.5)) && exp1(-88.0f) == float(std::exp(-88.0)));
  assert_true(exp1(-100.0f) == float(std::exp(-100.0)) && exp1(-100.0f) > 0);
  assert_true(exp1(-104.0f) == 0.0f && exp1(-200.0f) == 0.0f && exp1(-INFINITY) == 0.0f);
  assert_true(std::isnan(exp1(NAN)));
}

// A row far longer than a block of the kernels' sums (blocked pairwise,
// ops/row_loops.h), against the bounds of reduction_k.
void test_long_rows(void **) {
  for (bool log : {false, true}) {
    Checker c(std::string(log ? "log_softmax" : "softmax") + " long rows");
    for (int64_t cols : {int64_t(4097), int64_t(300007)}) {
      check_forward(c, random_rows<float>(2, cols, 3, 0, unsigned(cols)), 2, cols, log, "N(0,9)");
      check_backward(c, random_rows<float>(2, cols, 1, 0, unsigned(cols) + 1),
                     random_rows<float>(2, cols, 1e-5, 1e-5, unsigned(cols) + 2), 2, cols, log, "N(0,1)");
    }
    assert_int_equal(c.failures(), 0);
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family),       cmocka_unit_test(test_forward_f32),     cmocka_unit_test(test_forward_bf16),
      cmocka_unit_test(test_backward_f32), cmocka_unit_test(test_backward_bf16),   cmocka_unit_test(test_special_rows),
      cmocka_unit_test(test_empty),        cmocka_unit_test(test_exp_nonpositive), cmocka_unit_test(test_long_rows),
      cmocka_unit_test(test_forward_lse),  cmocka_unit_test(test_attention_rows),
      cmocka_unit_test(test_attention_rows_strided),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
