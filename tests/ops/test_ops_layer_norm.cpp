// LayerNorm kernels (ops/layer_norm.h), forward and backward, all three
// type combinations (f32; bf16 data with bf16 or f32 parameters), with and
// without gamma and beta, on the kernel family HCOPS_ISA selects
// (test_ops_isa.sh runs it on each), against an f64 reference: rows of every
// length around the vector widths and DiT's, 0, 1 and several rows, values
// of several scales and a large offset (mean 1e4, std 1), constant rows,
// NaN/Inf rows; the parameter gradients accumulated over two calls on the
// halves of the rows equal to one call, bit for bit.
//
// Long rows (4097 to 9.4 M elements, PyTorch's test_LayerNorm_numeric
// shape among them) against the same bounds, which grow with log2 of the
// length, as the kernels' blocked pairwise sums do. Rows whose range or
// variance overflows f32, or whose mean is near FLT_MAX, as PyTorch gives them.
//
// Bounds (u = 2^-24, K = reduction_k(cols), per row: mu, var the f64
// moments, A1 = mean|x - mu|, A0 = mean|x|, delta = (K + 2) u A0):
//   mean   |m - mu| <= u |mu| + (K + 2) u (A1 + delta)
//   rstd   relative (var_err / (var + eps)) / 2 + 3u, with
//          var_err = (K + 4) u (var + delta^2) + 3 (K + 2) u delta (A1 + delta)
//   y      from the saved mean and the f64 rstd, with e_r the rstd bound:
//          |y - r| <= |xhat g| (e_r + 3u) + 2u |r|
//   dx     (K + 6) u rstd (|g dy| + mean|g dy| + |xhat| mean|g dy xhat|), the
//          reference computed in f64 from the same dy, x, mean, rstd, gamma
//   dgamma (rows + 3) u (|acc0| + sum_i |dy xhat|);  dbeta (rows + 1) u (|acc0| + sum_i |dy|)
// plus 2^-123 near the subnormal range; bf16 data may be one bf16 ulp further.
#include <cfloat>

#include "ops_check.h"
#include "ops/layer_norm.h"

namespace {

using namespace opscheck;

constexpr double kTiny = 0x1p-123;
constexpr float kEps = 1e-5f;

template <typename T>
std::vector<double> widen(const T *p, size_t n) {
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = p ? to_double(p[i]) : 0.0;
  return d;
}

struct Moments {
  double mu, var, a1, a0;
};
Moments moments(const double *x, int64_t n) {
  Moments m{0, 0, 0, 0};
  for (int64_t j = 0; j < n; ++j) m.mu += x[j];
  m.mu /= double(n);
  for (int64_t j = 0; j < n; ++j) {
    m.var += (x[j] - m.mu) * (x[j] - m.mu);
    m.a1 += std::fabs(x[j] - m.mu);
    m.a0 += std::fabs(x[j]);
  }
  m.var /= double(n);
  m.a1 /= double(n);
  m.a0 /= double(n);
  return m;
}

enum class Affine { none, both, gamma, beta };
const char *affine_name(Affine a) {
  switch (a) {
    case Affine::none: return "no affine";
    case Affine::both: return "gamma+beta";
    case Affine::gamma: return "gamma only";
    case Affine::beta: return "beta only";
  }
  return "?";
}

// Forward of x with gamma/beta of type P (null as `affine` says): mean,
// rstd and y against the reference.
template <typename T, typename P>
void check_forward(Checker &c, const std::vector<T> &x, int64_t rows, int64_t cols, Affine affine, const char *label) {
  const size_t total = size_t(rows * cols);
  const std::vector<P> gv = random_rows<P>(1, cols, 0.5, 1, unsigned(cols) + 5),
                       bv = random_rows<P>(1, cols, 1, 0, unsigned(cols) + 6);
  const P *g = affine == Affine::both || affine == Affine::gamma ? gv.data() : nullptr;
  const P *b = affine == Affine::both || affine == Affine::beta ? bv.data() : nullptr;
  Guarded<T> y(total);
  Guarded<float> mean{size_t(rows)}, rstd{size_t(rows)};
  hcops::ops::layer_norm_forward(x.data(), g, b, y.data(), mean.data(), rstd.data(), rows, cols, kEps);
  c.require(y.guard_intact() && mean.guard_intact() && rstd.guard_intact(), "store past the end");
  const bool is_bf16 = std::is_same_v<T, bf16>;
  const std::vector<double> xd = widen(x.data(), total), gd = widen(g, size_t(cols)), bd = widen(b, size_t(cols));
  for (int64_t i = 0; i < rows; ++i) {
    const double *xi = xd.data() + i * cols;
    const Moments m = moments(xi, cols);
    const double K = reduction_k(cols), delta = (K + 2) * kU * m.a0;
    const double mean_bound = kU * std::fabs(m.mu) + (K + 2) * kU * (m.a1 + delta);
    c.value(mean[size_t(i)], m.mu, mean_bound, std::fabs(m.mu) + m.a1, false, "%s cols %ld row %ld mean", label,
            long(cols), long(i));
    const double rref = 1 / std::sqrt(m.var + double(kEps));
    const double var_err = (K + 4) * kU * (m.var + delta * delta) + 3 * (K + 2) * kU * delta * (m.a1 + delta);
    const double e_r = var_err / (m.var + double(kEps)) / 2 + 3 * kU;
    c.value(rstd[size_t(i)], rref, e_r * rref, rref, false, "%s cols %ld row %ld rstd", label, long(cols), long(i));
    const double ms = mean[size_t(i)];
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = size_t(i * cols + j);
      const double xhg = (xi[j] - ms) * rref * (g ? gd[size_t(j)] : 1.0);
      const double ref = xhg + (b ? bd[size_t(j)] : 0.0);
      const double mag = std::fabs(xhg) + std::fabs(ref);
      c.value(to_double(y[k]), ref, std::fabs(xhg) * (e_r + 3 * kU) + 2 * kU * std::fabs(ref) + kTiny, mag, is_bf16,
              "%s %s cols %ld row %ld col %ld", label, affine_name(affine), long(cols), long(i), long(j));
    }
  }
  std::vector<T> inplace(x);
  std::vector<float> mean2(rows + 1), rstd2(rows + 1);
  hcops::ops::layer_norm_forward(inplace.data(), g, b, inplace.data(), mean2.data(), rstd2.data(), rows, cols, kEps);
  c.require(total == 0 || !std::memcmp(inplace.data(), y.data(), total * sizeof(T)), "in place differs");
}

// Backward against the reference: dx, and the parameter gradients added to
// random accumulators; the same bits with dx null, and over two calls.
template <typename T, typename P>
void check_backward(Checker &c, const std::vector<T> &x, int64_t rows, int64_t cols, bool with_gamma,
                    const char *label) {
  const size_t total = size_t(rows * cols);
  const std::vector<P> gv = random_rows<P>(1, cols, 0.5, 1, unsigned(cols) + 7);
  const P *g = with_gamma ? gv.data() : nullptr;
  std::vector<float> mean(rows + 1), rstd(rows + 1);
  {
    std::vector<T> y(x.size());
    hcops::ops::layer_norm_forward(x.data(), g, static_cast<const P *>(nullptr), y.data(), mean.data(), rstd.data(),
                                   rows, cols, kEps);
  }
  const std::vector<T> dy = random_rows<T>(rows, cols, 2, 0.25, unsigned(rows * cols) + 8);
  const std::vector<float> acc0 = random_rows<float>(2, cols, 1, 0, unsigned(cols) + 9);
  Guarded<T> dx(total);
  Guarded<float> dgamma{size_t(cols)}, dbeta{size_t(cols)};
  std::copy(acc0.begin(), acc0.begin() + cols, dgamma.data());
  std::copy(acc0.begin() + cols, acc0.begin() + 2 * cols, dbeta.data());
  hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g, dx.data(), dgamma.data(),
                                  dbeta.data(), rows, cols);
  c.require(dx.guard_intact() && dgamma.guard_intact() && dbeta.guard_intact(), "store past the end");
  const bool is_bf16 = std::is_same_v<T, bf16>;
  const std::vector<double> xd = widen(x.data(), total), dyd = widen(dy.data(), total), gd = widen(g, size_t(cols));
  std::vector<double> dg_ref(acc0.begin(), acc0.begin() + cols), db_ref(acc0.begin() + cols, acc0.begin() + 2 * cols);
  std::vector<double> dg_abs(cols), db_abs(cols);
  for (int64_t j = 0; j < cols; ++j) dg_abs[size_t(j)] = std::fabs(dg_ref[size_t(j)]);
  for (int64_t j = 0; j < cols; ++j) db_abs[size_t(j)] = std::fabs(db_ref[size_t(j)]);
  const double K = reduction_k(cols);
  for (int64_t i = 0; i < rows; ++i) {
    const double *xi = xd.data() + i * cols, *dyi = dyd.data() + i * cols;
    const double mu = mean[size_t(i)], rs = rstd[size_t(i)];
    std::vector<double> xh(cols), gdy(cols);
    double a = 0, bsum = 0, a_abs = 0, b_abs = 0;
    for (int64_t j = 0; j < cols; ++j) {
      xh[size_t(j)] = (xi[j] - mu) * rs;
      gdy[size_t(j)] = (g ? gd[size_t(j)] : 1.0) * dyi[j];
      a += gdy[size_t(j)];
      bsum += gdy[size_t(j)] * xh[size_t(j)];
      a_abs += std::fabs(gdy[size_t(j)]);
      b_abs += std::fabs(gdy[size_t(j)] * xh[size_t(j)]);
      dg_ref[size_t(j)] += dyi[j] * xh[size_t(j)];
      db_ref[size_t(j)] += dyi[j];
      dg_abs[size_t(j)] += std::fabs(dyi[j] * xh[size_t(j)]);
      db_abs[size_t(j)] += std::fabs(dyi[j]);
    }
    a /= double(cols), bsum /= double(cols), a_abs /= double(cols), b_abs /= double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const size_t k = size_t(i * cols + j);
      const double ref = rs * (gdy[size_t(j)] - a - xh[size_t(j)] * bsum);
      const double mag = rs * (std::fabs(gdy[size_t(j)]) + a_abs + std::fabs(xh[size_t(j)]) * b_abs);
      c.value(to_double(dx[k]), ref, (K + 6) * kU * mag + kTiny, mag, is_bf16, "%s %s cols %ld row %ld col %ld dx",
              label, with_gamma ? "gamma" : "no gamma", long(cols), long(i), long(j));
    }
  }
  for (int64_t j = 0; j < cols; ++j) {
    const size_t k = size_t(j);
    c.value(dgamma[k], dg_ref[k], (double(rows) + 3) * kU * dg_abs[k] + kTiny, dg_abs[k], false,
            "%s cols %ld rows %ld dgamma col %ld", label, long(cols), long(rows), long(j));
    c.value(dbeta[k], db_ref[k], (double(rows) + 1) * kU * db_abs[k] + kTiny, db_abs[k], false,
            "%s cols %ld rows %ld dbeta col %ld", label, long(cols), long(rows), long(j));
  }
  // Without dx: the same gradients. Over the two halves of the rows: the same
  // gradients and dx. Only dgamma, only dbeta: the same each.
  const size_t pb = size_t(cols) * sizeof(float);
  std::vector<float> dg2(acc0.begin(), acc0.begin() + cols + 1), db2(acc0.begin() + cols, acc0.begin() + 2 * cols);
  db2.push_back(0);
  hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g, static_cast<T *>(nullptr),
                                  dg2.data(), db2.data(), rows, cols);
  c.require(!std::memcmp(dg2.data(), dgamma.data(), pb) && !std::memcmp(db2.data(), dbeta.data(), pb),
            "gradients without dx differ");
  std::vector<float> dg3(acc0.begin(), acc0.begin() + cols + 1), db3(acc0.begin() + cols, acc0.begin() + 2 * cols);
  db3.push_back(0);
  std::vector<T> dx3(x.size());
  const int64_t h = rows / 2;
  hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g, dx3.data(), dg3.data(), db3.data(),
                                  h, cols);
  hcops::ops::layer_norm_backward(dy.data() + h * cols, x.data() + h * cols, mean.data() + h, rstd.data() + h, g,
                                  dx3.data() + h * cols, dg3.data(), db3.data(), rows - h, cols);
  c.require(!std::memcmp(dg3.data(), dgamma.data(), pb) && !std::memcmp(db3.data(), dbeta.data(), pb),
            "gradients over two calls differ from one call");
  c.require(total == 0 || !std::memcmp(dx3.data(), dx.data(), total * sizeof(T)), "dx over two calls differs");
  std::vector<float> dg4(acc0.begin(), acc0.begin() + cols + 1), db4(acc0.begin() + cols, acc0.begin() + 2 * cols);
  db4.push_back(0);
  std::vector<T> dx4(x.size());
  hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g, dx4.data(), dg4.data(),
                                  static_cast<float *>(nullptr), rows, cols);
  hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g, static_cast<T *>(nullptr),
                                  static_cast<float *>(nullptr), db4.data(), rows, cols);
  c.require(!std::memcmp(dg4.data(), dgamma.data(), pb) && !std::memcmp(db4.data(), dbeta.data(), pb),
            "dgamma alone or dbeta alone differ");
  c.require(total == 0 || !std::memcmp(dx4.data(), dx.data(), total * sizeof(T)), "dx without dbeta differs");
}

struct Scale {
  double scale, offset;
  const char *label;
};
const Scale kScales[] = {
    {1, 0, "N(0,1)"}, {1e-3, 0, "1e-3 N(0,1)"}, {100, 0, "100 N(0,1)"}, {1, 1e4, "N(1e4,1)"}, {0, 0.1, "constant 0.1"}};

template <typename T, typename P>
void run_forward() {
  Checker c(std::string("layer_norm forward ") + type_name<T>() + " params " + type_name<P>());
  for (int64_t cols : test_cols()) {
    if (cols == 0) continue;  // test_empty
    for (int64_t rows : {int64_t(0), int64_t(1), int64_t(cols > 1200 ? 3 : 7)}) {
      unsigned seed = unsigned(cols * 13 + rows);
      for (const Scale &s : kScales)
        for (Affine a : {Affine::both, Affine::none, Affine::gamma, Affine::beta})
          check_forward<T, P>(c, random_rows<T>(rows, cols, s.scale, s.offset, seed++), rows, cols, a, s.label);
    }
  }
  assert_int_equal(c.failures(), 0);
}

template <typename T, typename P>
void run_backward() {
  Checker c(std::string("layer_norm backward ") + type_name<T>() + " params " + type_name<P>());
  for (int64_t cols : test_cols()) {
    if (cols == 0) continue;
    for (int64_t rows : {int64_t(0), int64_t(1), int64_t(cols > 1200 ? 3 : 7)}) {
      unsigned seed = unsigned(cols * 19 + rows);
      for (const Scale &s : kScales)
        for (bool with_gamma : {true, false})
          check_backward<T, P>(c, random_rows<T>(rows, cols, s.scale, s.offset, seed++), rows, cols, with_gamma,
                               s.label);
    }
  }
  assert_int_equal(c.failures(), 0);
}

// Rows far longer than a block of the kernels' sums: uniform [0, 1) data
// as PyTorch's test_LayerNorm_numeric (2 rows of 256 x 256 x 144), where
// summing along the row in 64 accumulators erred by 1.4e-5 in rstd.
void test_long_rows(void **) {
  Checker c("layer_norm long rows");
  for (int64_t cols : {int64_t(4097), int64_t(100003), int64_t(256 * 256 * 144)}) {
    const int64_t rows = cols > 200000 ? 2 : 3;
    check_forward<float, float>(c, random_rows<float>(rows, cols, 0.5, 0.5, unsigned(cols)), rows, cols, Affine::both,
                                "N(0.5,0.5)");
    if (cols < 200000) {
      check_backward<float, float>(c, random_rows<float>(rows, cols, 1, 0, unsigned(cols) + 1), rows, cols, true,
                                   "N(0,1)");
      check_forward<bf16, bf16>(c, random_rows<bf16>(rows, cols, 1, 1e4, unsigned(cols) + 2), rows, cols,
                                Affine::both, "N(1e4,1)");
    }
  }
  assert_int_equal(c.failures(), 0);
}

void test_family(void **) { check_family(); }
void test_forward(void **) {
  run_forward<float, float>();
  run_forward<bf16, bf16>();
  run_forward<bf16, float>();
}
void test_backward(void **) {
  run_backward<float, float>();
  run_backward<bf16, bf16>();
  run_backward<bf16, float>();
}

// A NaN or an Inf in a row: its y, mean and rstd are NaN (PyTorch's y and
// rstd are; its mean is NaN or +-Inf depending on the Inf's lane), the other
// rows untouched by it. A NaN in dy: that row's dx and the gradients of its
// column are NaN.
template <typename T, typename P>
void special_rows() {
  Checker c(std::string("layer_norm NaN/Inf rows ") + type_name<T>());
  for (int64_t cols : {int64_t(1), int64_t(5), int64_t(17), int64_t(384), int64_t(1000)}) {
    const int64_t rows = 5;
    std::vector<T> x = random_rows<T>(rows, cols, 1, 0, unsigned(cols));
    x[size_t(cols / 2)] = from_float<T>(NAN);
    x[size_t(cols + cols - 1)] = from_float<T>(INFINITY);
    x[size_t(2 * cols)] = from_float<T>(-INFINITY);
    x[size_t(3 * cols)] = from_float<T>(INFINITY);
    x[size_t(3 * cols + cols - 1)] = from_float<T>(-INFINITY);
    const std::vector<P> gv = random_rows<P>(1, cols, 0.5, 1, 3), bv = random_rows<P>(1, cols, 1, 0, 4);
    std::vector<T> y(x.size());
    std::vector<float> mean(rows), rstd(rows);
    hcops::ops::layer_norm_forward(x.data(), gv.data(), bv.data(), y.data(), mean.data(), rstd.data(), rows, cols,
                                   kEps);
    for (int64_t i = 0; i < 4; ++i) {
      c.require(std::isnan(mean[size_t(i)]) && std::isnan(rstd[size_t(i)]), "mean or rstd not NaN");
      for (int64_t j = 0; j < cols; ++j) c.require(std::isnan(to_double(y[size_t(i * cols + j)])), "y not NaN");
    }
    c.require(!std::isnan(rstd[4]) && !std::isnan(to_double(y[size_t(4 * cols)])), "a NaN row spilled over");
    // dy NaN at (4, 0): row 4's dx all NaN, dgamma[0] and dbeta[0] NaN, no other.
    std::vector<T> dy = random_rows<T>(rows, cols, 1, 0, 5), dx(x.size());
    dy[size_t(4 * cols)] = from_float<T>(NAN);
    std::vector<float> dg(cols), db(cols);
    hcops::ops::layer_norm_backward(dy.data() + 4 * cols, x.data() + 4 * cols, mean.data() + 4, rstd.data() + 4,
                                    gv.data(), dx.data(), dg.data(), db.data(), 1, cols);
    for (int64_t j = 0; j < cols; ++j) c.require(std::isnan(to_double(dx[size_t(j)])), "dx not NaN");
    c.require(std::isnan(dg[0]) && std::isnan(db[0]), "dgamma/dbeta not NaN");
    for (int64_t j = 1; j < cols; ++j)
      c.require(!std::isnan(dg[size_t(j)]) && !std::isnan(db[size_t(j)]), "NaN spilled");
  }
  assert_int_equal(c.failures(), 0);
}

// Finite rows at the edge of f32 (layer_norm_impl.h):
// row 0, range > FLT_MAX ([3e38, -3e38, 1, 2, ...]): mean, rstd, y NaN (PyTorch's);
// row 1, every element 3e38: mean 3e38, rstd 1 / sqrt(eps), y = beta (PyTorch: rstd NaN);
// row 2, +-1e19 alternating: var 1e38 (its f32 sum of squares overflows), rstd 1e-19;
// row 3, +-2e19 alternating: var 4e38 > FLT_MAX: rstd and y NaN, mean finite (PyTorch's);
// under VarianceOverflow::zero_rstd (PyTorch 2.x) rstd 0 and y = beta there,
// rows 0 to 2 as before.
template <typename T, typename P>
void edge_rows(hcops::ops::VarianceOverflow policy) {
  const bool zero = policy == hcops::ops::VarianceOverflow::zero_rstd;
  hcops::ops::set_variance_overflow(policy);
  Checker c(std::string("layer_norm rows at the edge of f32 ") + type_name<T>() + (zero ? " (rstd 0)" : ""));
  for (int64_t cols : {int64_t(4), int64_t(17), int64_t(384), int64_t(5000)}) {
    const int64_t rows = 4;
    std::vector<T> x = random_rows<T>(rows, cols, 1, 0, unsigned(cols));
    x[0] = from_float<T>(3e38f);
    x[1] = from_float<T>(-3e38f);
    for (int64_t j = 0; j < cols; ++j) {
      x[size_t(cols + j)] = from_float<T>(3e38f);
      x[size_t(2 * cols + j)] = from_float<T>(j % 2 ? -1e19f : 1e19f);
      x[size_t(3 * cols + j)] = from_float<T>(j % 2 ? -2e19f : 2e19f);
    }
    const std::vector<P> gv = random_rows<P>(1, cols, 0.5, 1, 3), bv = random_rows<P>(1, cols, 1, 0, 4);
    std::vector<T> y(x.size());
    std::vector<float> mean(rows), rstd(rows);
    hcops::ops::layer_norm_forward(x.data(), gv.data(), bv.data(), y.data(), mean.data(), rstd.data(), rows, cols,
                                   kEps);
    c.require(std::isnan(mean[0]) && std::isnan(rstd[0]), "range overflow: mean or rstd not NaN");
    c.require(double(mean[1]) == to_double(x[size_t(cols)]) && rstd[1] == 1 / std::sqrt(kEps),
              "constant 3e38 row: mean or rstd");
    // The f64 moments of rows 2 and 3 (odd lengths do not cancel).
    for (int64_t i : {2, 3}) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < cols; ++j) mu += to_double(x[size_t(i * cols + j)]) / double(cols);
      for (int64_t j = 0; j < cols; ++j) var += std::pow(to_double(x[size_t(i * cols + j)]) - mu, 2) / double(cols);
      const double r = var > FLT_MAX ? (zero ? 0.0 : kNaN) : 1 / std::sqrt(double(float(var)) + kEps);
      c.value(rstd[size_t(i)], r, 4 * kU * r, r, false, "cols %ld row %ld rstd", long(cols), long(i));
      c.value(mean[size_t(i)], mu, 4 * kU * 2e19, 2e19, false, "cols %ld row %ld mean", long(cols), long(i));
    }
    for (int64_t j = 0; j < cols; ++j) {
      c.require(std::isnan(to_double(y[size_t(j)])), "range overflow: y not NaN");
      if (zero)
        c.require(to_double(y[size_t(3 * cols + j)]) == to_double(bv[size_t(j)]), "variance overflow: y is not beta");
      else c.require(std::isnan(to_double(y[size_t(3 * cols + j)])), "variance overflow: y not NaN");
      c.require(to_double(y[size_t(cols + j)]) == to_double(bv[size_t(j)]), "constant row: y is not beta");
      const double want = (to_double(x[size_t(2 * cols + j)]) - mean[2]) * rstd[2] * to_double(gv[size_t(j)]) +
                          to_double(bv[size_t(j)]);
      c.value(to_double(y[size_t(2 * cols + j)]), want, 1e-5 * (std::fabs(want) + 1), 1, std::is_same_v<T, bf16>,
              "cols %ld row 2 y", long(cols));
    }
  }
  hcops::ops::set_variance_overflow(hcops::ops::VarianceOverflow::nan_rstd);
  assert_int_equal(c.failures(), 0);
}

void test_special_rows(void **) {
  for (auto policy : {hcops::ops::VarianceOverflow::nan_rstd, hcops::ops::VarianceOverflow::zero_rstd}) {
    edge_rows<float, float>(policy);
    edge_rows<bf16, bf16>(policy);
  }
  special_rows<float, float>();
  special_rows<bf16, bf16>();
  special_rows<bf16, float>();
}

// cols == 0: every row's mean 0 and rstd NaN (PyTorch's), nothing else
// written; the backward writes nothing. rows == 0: nothing at all.
void test_empty(void **) {
  Guarded<float> y(0), mean(3), rstd(3), dg(0);
  hcops::ops::layer_norm_forward(static_cast<const float *>(nullptr), nullptr, nullptr, y.data(), mean.data(),
                                 rstd.data(), 3, 0, kEps);
  for (int i = 0; i < 3; ++i) {
    assert_true(mean[size_t(i)] == 0.0f);
    assert_true(std::isnan(rstd[size_t(i)]));
  }
  assert_true(y.guard_intact() && mean.guard_intact() && rstd.guard_intact());
  Guarded<float> m0(0), r0(0);
  hcops::ops::layer_norm_forward(static_cast<const float *>(nullptr), nullptr, nullptr, y.data(), m0.data(), r0.data(),
                                 0, 7, kEps);
  assert_true(m0.guard_intact() && r0.guard_intact());
  Guarded<bf16> yb(0);
  hcops::ops::layer_norm_forward(static_cast<const bf16 *>(nullptr), static_cast<const float *>(nullptr), nullptr,
                                 yb.data(), mean.data(), rstd.data(), 3, 0, kEps);
  assert_true(yb.guard_intact());
  hcops::ops::layer_norm_backward(static_cast<const float *>(nullptr), nullptr, mean.data(), rstd.data(), nullptr,
                                  y.data(), dg.data(), dg.data(), 3, 0);
  hcops::ops::layer_norm_backward(static_cast<const bf16 *>(nullptr), nullptr, nullptr, nullptr,
                                  static_cast<const bf16 *>(nullptr), yb.data(), dg.data(), dg.data(), 0, 7);
  assert_true(y.guard_intact() && dg.guard_intact() && yb.guard_intact());
}

// x with its rows and columns swapped (the _swapped calls: DiT's residual
// stream under PyTorch 2.x, read in place): the same bits as the same rows
// contiguous, forward (y, mean, rstd) and backward (dx, and the parameter
// gradients added to the same accumulators; with gamma and without, dx
// absent), for row counts across the 32-row bands and the 16 x 16 and 8 x 8
// blocks of the transposing copy (edges of rows and columns), columns
// spaced wider than the rows (ld > rows), NaN and Inf included.
template <typename T, typename P>
void swapped_same_bits() {
  Checker c(std::string("layer_norm swapped ") + type_name<T>() + " params " + type_name<P>());
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{1, 17}, {16, 16}, {33, 5}, {40, 384}, {69, 33}, {64, 1000}, {7, 1}};
  unsigned seed = 77;
  for (const Shape &sh : shapes) {
    const int64_t rows = sh.rows, cols = sh.cols, ld = rows + 3;
    std::vector<T> x = random_rows<T>(rows, cols, 1, 0.5, seed++);
    if (rows > 4 && cols > 3) {
      x[size_t(2 * cols + 1)] = from_float<T>(NAN);
      x[size_t(3 * cols + 2)] = from_float<T>(INFINITY);
    }
    std::vector<T> xs(size_t(cols * ld), from_float<T>(-7.0f));  // the gaps between columns: never read into rows
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) xs[size_t(i + j * ld)] = x[size_t(i * cols + j)];
    const std::vector<P> gv = random_rows<P>(1, cols, 0.5, 1, seed++), bv = random_rows<P>(1, cols, 1, 0, seed++);
    const size_t total = size_t(rows * cols), pb = size_t(cols) * sizeof(float);
    std::vector<T> y(total);
    std::vector<float> mean(rows), rstd(rows), mean2(rows), rstd2(rows);
    for (bool affine : {false, true}) {  // DiT's LayerNorms have no weight and bias
      const P *g = affine ? gv.data() : nullptr, *b = affine ? bv.data() : nullptr;
      hcops::ops::layer_norm_forward(x.data(), g, b, y.data(), mean.data(), rstd.data(), rows, cols, kEps);
      Guarded<T> ys(total);
      hcops::ops::layer_norm_forward_swapped(xs.data(), ld, g, b, ys.data(), mean2.data(), rstd2.data(), rows, cols,
                                             kEps);
      c.require(ys.guard_intact(), "swapped forward stored past the end");
      c.require(!std::memcmp(ys.data(), y.data(), total * sizeof(T)) &&
                    !std::memcmp(mean2.data(), mean.data(), size_t(rows) * sizeof(float)) &&
                    !std::memcmp(rstd2.data(), rstd.data(), size_t(rows) * sizeof(float)),
                "swapped forward differs from contiguous");
    }
    const std::vector<T> dy = random_rows<T>(rows, cols, 2, 0.25, seed++);
    const std::vector<float> acc0 = random_rows<float>(2, cols, 1, 0, seed++);
    for (bool with_gamma : {true, false})
      for (bool with_dx : {true, false}) {
        const P *g = with_gamma ? gv.data() : nullptr;
        std::vector<T> dx(total);
        Guarded<T> dxs(total);
        std::vector<float> dg(acc0.begin(), acc0.begin() + cols), db(acc0.begin() + cols, acc0.end());
        std::vector<float> dgs(dg), dbs(db);
        hcops::ops::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g,
                                        with_dx ? dx.data() : nullptr, dg.data(), db.data(), rows, cols);
        hcops::ops::layer_norm_backward_swapped(dy.data(), xs.data(), ld, mean.data(), rstd.data(), g,
                                                with_dx ? dxs.data() : nullptr, dgs.data(), dbs.data(), rows, cols);
        c.require(dxs.guard_intact(), "swapped backward stored past the end");
        c.require((!with_dx || !std::memcmp(dxs.data(), dx.data(), total * sizeof(T))) &&
                      !std::memcmp(dgs.data(), dg.data(), pb) && !std::memcmp(dbs.data(), db.data(), pb),
                  "swapped backward differs from contiguous");
      }
  }
  assert_int_equal(c.failures(), 0);
}

void test_swapped(void **) {
  swapped_same_bits<float, float>();
  swapped_same_bits<bf16, bf16>();
  swapped_same_bits<bf16, float>();
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family),       cmocka_unit_test(test_forward), cmocka_unit_test(test_backward),
      cmocka_unit_test(test_special_rows), cmocka_unit_test(test_empty),    cmocka_unit_test(test_long_rows),
      cmocka_unit_test(test_swapped),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
