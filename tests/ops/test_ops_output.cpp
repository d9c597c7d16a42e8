// The output operations' kernels (ops/output_ops.h: bias then activation on
// a column-major f32 block), on the kernel family ops::ops_table() chose
// (engine/test_ops_isa.sh runs this once per family with HCOPS_ISA), against
// the f64 reference and bounds of output_ops_ref.h: every bias kind (none,
// f32 or bf16, along rows or columns, bias_scale 1 or not), every activation
// with oneDNN's parameters (relu's alpha 0 and not, swish's 1 and not,
// act_scale 1 and not), block heights around every family's vector width
// (0, 1, lanes +- 1), leading dimensions beyond the height (rows past m
// untouched), offsets i0, j0 into the bias, and special values (NaN, +-Inf,
// +-0, huge, tiny, where sigmoid underflows) in C and in the bias.
#include "ops_check.h"
#include "output_ops_ref.h"

namespace {

using hcops::bf16;
using hcops::Dtype;
using hcops::ops::Activation;
using hcops::ops::OutputOps;

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();
constexpr float kSentinel = -12288.0f;

struct BiasKind {
  bool present;
  Dtype type;
  bool rows;
  float scale;
};
const BiasKind kBiases[] = {{false, Dtype::f32, false, 1.0f},
                            {true, Dtype::f32, true, 1.0f},
                            {true, Dtype::bf16, true, -0.75f},
                            {true, Dtype::f32, false, 0.5f},
                            {true, Dtype::bf16, false, 1.0f}};
struct ActKind {
  Activation act;
  float alpha;
};
const ActKind kActs[] = {{Activation::none, 0},     {Activation::relu, 0},      {Activation::relu, 0.1f},
                         {Activation::relu, -2.0f}, {Activation::gelu_tanh, 0}, {Activation::gelu_erf, 0},
                         {Activation::swish, 1.0f}, {Activation::swish, 1.7f},  {Activation::swish, -0.5f},
                         {Activation::swish, 0.0f}};
const float kActScales[] = {1.0f, -1.5f};

// One block: rows [i0, i0 + m), columns [j0, j0 + n) of a C whose bias
// vectors hold i0 + m (rows) or j0 + n (columns) values.
struct Block {
  long m, n, ldc, i0, j0;
};

// Runs `ops` on x (ldc x n, m rows used) and checks every value; returns
// false (after printing) at the first failure.
bool check_block(const OutputOps &ops, const Block &b, const std::vector<float> &x, const char *what) {
  std::vector<float> c(x);
  c.resize(x.size() + 16, kSentinel);  // a guard past the last column
  hcops::ops::apply_output_ops(ops, c.data(), b.ldc, b.i0, b.m, b.j0, b.n);
  for (long j = 0; j < b.n; ++j)
    for (long i = 0; i < b.ldc; ++i) {
      const float got = c[i + j * b.ldc], in = x[i + j * b.ldc];
      if (i >= b.m) {
        if (std::memcmp(&got, &in, sizeof got) != 0) {
          std::printf("FAIL %s: row %ld past m = %ld written (ldc %ld)\n", what, i, b.m, b.ldc);
          return false;
        }
        continue;
      }
      const outref::Value r = outref::apply(ops, in, 0, b.i0 + i, b.j0 + j);
      const bool ok = std::isnan(r.v)   ? std::isnan(got)
                      : std::isinf(r.v) ? double(got) == r.v
                                        : std::fabs(got - r.v) <= r.bound;
      if (!ok) {
        std::printf(
            "FAIL %s: act %s alpha %g scale %g, bias %s, (%ld,%ld) of %ldx%ld: x = %.9g -> %.9g, want %.9g within "
            "%.3g\n",
            what, outref::name(ops.act), ops.act_alpha, ops.act_scale,
            !ops.bias             ? "none"
            : ops.bias_along_rows ? "rows"
                                  : "columns",
            i, j, b.m, b.n, in, got, r.v, r.bound);
        return false;
      }
    }
  for (size_t i = x.size(); i < c.size(); ++i)
    if (c[i] != kSentinel) {
      std::printf("FAIL %s: written past the block\n", what);
      return false;
    }
  return true;
}

// Every bias kind, activation and scale on `x`, with bias values from `bias_value`.
template <typename BiasValue>
void check_all_ops(const Block &b, const std::vector<float> &x, BiasValue bias_value, const char *what) {
  const long nb = std::max(b.i0 + b.m, b.j0 + b.n) + 1;
  std::vector<float> bias_f32(nb);
  std::vector<bf16> bias_bf16(nb);
  for (long i = 0; i < nb; ++i) {
    bias_f32[i] = bias_value(i);
    bias_bf16[i] = bf16(bias_f32[i]);
  }
  for (const BiasKind &bk : kBiases)
    for (const ActKind &ak : kActs)
      for (float scale : kActScales) {
        OutputOps ops;
        if (bk.present) {
          ops.bias = bk.type == Dtype::bf16 ? static_cast<const void *>(bias_bf16.data()) : bias_f32.data();
          ops.bias_type = bk.type;
          ops.bias_along_rows = bk.rows;
          ops.bias_scale = bk.scale;
        }
        ops.act = ak.act;
        ops.act_alpha = ak.alpha;
        ops.act_beta = 0.25f;  // unused by these activations
        ops.act_scale = scale;
        if (!check_block(ops, b, x, what)) fail_msg("%s: see above", what);
      }
}

void test_family(void **) { opscheck::check_family(); }

void test_random_blocks(void **) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-6, 6);
  const long heights[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100};
  const long widths[] = {0, 1, 3};
  const long pads[] = {0, 3, 17};
  for (long m : heights)
    for (long n : widths)
      for (long pad : pads) {
        const Block b{m, n, m + pad, pad % 5, pad % 4};
        std::vector<float> x(std::max(1L, b.ldc * n));
        for (float &v : x) v = u(rng);
        check_all_ops(
            b, x, [&](long) { return u(rng); }, "random");
      }
}

void test_special_values(void **) {
  const float specials[] = {kNaNf,  kInff,  -kInff,  0.0f,  -0.0f,  1e30f,  -1e30f, 1e-30f, -1e-30f, 88.0f,
                            -88.0f, -90.0f, -100.0f, 20.0f, -20.0f, 1e-40f, 0.5f,   -0.5f,  3.0f,    -3.0f};
  const long ns = sizeof specials / sizeof specials[0];
  // In C, with a bias of ordinary values.
  const Block b{ns, 2, ns + 1, 0, 0};
  std::vector<float> x(b.ldc * b.n);
  for (long j = 0; j < b.n; ++j)
    for (long i = 0; i < b.ldc; ++i) x[i + j * b.ldc] = specials[(i + 7 * j) % ns];
  check_all_ops(
      b, x, [](long i) { return 0.25f * float(i % 5) - 0.5f; }, "special C");
  // In the bias, with ordinary values in C.
  const Block c{ns, ns, ns, 0, 0};
  std::vector<float> y(c.ldc * c.n);
  for (long i = 0; i < long(y.size()); ++i) y[i] = 0.125f * float(i % 17) - 1.0f;
  check_all_ops(
      c, y, [&](long i) { return specials[i % ns]; }, "special bias");
}

void test_empty_ops_touch_nothing(void **) {
  OutputOps ops;  // no bias, no activation: act_scale ignored
  ops.act_scale = 3.0f;
  float c[4] = {1, 2, kNaNf, -kInff};
  hcops::ops::apply_output_ops(ops, c, 2, 0, 2, 0, 2);
  assert_true(c[0] == 1 && c[1] == 2 && std::isnan(c[2]) && c[3] == -kInff);
  assert_null(hcops::ops::output_epilogue(ops).apply);
  ops.act = Activation::relu;
  const hcops::Epilogue<float> e = hcops::ops::output_epilogue(ops);
  assert_non_null(e.apply);
  assert_ptr_equal(e.ctx, &ops);
  e.apply(e.ctx, c, 2, 0, 2, 0, 2);
  assert_true(c[0] == 3 && c[1] == 6 && c[2] == 0 && c[3] == 0);  // relu(NaN) = 0, as oneDNN's
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family),
      cmocka_unit_test(test_random_blocks),
      cmocka_unit_test(test_special_values),
      cmocka_unit_test(test_empty_ops_touch_nothing),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
