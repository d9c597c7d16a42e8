// One kernel family's operators: a table of function pointers, built once
// per family from ops/family_table.cpp with that family's -m flags (as BLIS
// compiles its reference kernels once per configuration and registers them
// in a context; memkind's ops tables). The dispatch (ops/family.h) takes the
// table of the family chosen from the CPU and HCOPS_ISA, and each operator's
// entry points (ops/<op>.h) call through it.
//
// HCOPS_OPS_ENTRIES(X) lists every entry once, as
//   X(member, implementation template, (parameters), (arguments))
// which gives the table's members here and each family's definitions in
// ops/family_table.cpp (where F is the family's f32 vector traits). A new
// operator kernel: one line here, its entry point calling ops_table().member.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "ops/eltwise.h"
#include "ops/reduce.h"

namespace hcops::ops {

struct AdamScalars;  // ops/adam_impl.h
struct OutputOps;    // ops/output_ops.h

// clang-format off
#define HCOPS_OPS_ENTRIES(X)                                                                                          \
  X(gelu_forward_f32, eltwise::gelu_forward<F>, (const float *x, float *y, int64_t n, GeluApprox a), (x, y, n, a))    \
  X(gelu_forward_bf16, eltwise::gelu_forward<F>, (const bf16 *x, bf16 *y, int64_t n, GeluApprox a), (x, y, n, a))    \
  X(gelu_backward_f32, eltwise::gelu_backward<F>,                                                                     \
    (const float *dy, const float *x, float *dx, int64_t n, GeluApprox a), (dy, x, dx, n, a))                         \
  X(gelu_backward_bf16, eltwise::gelu_backward<F>,                                                                    \
    (const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n, GeluApprox a), (dy, x, dx, n, a))                            \
  X(silu_forward_f32, eltwise::silu_forward<F>, (const float *x, float *y, int64_t n), (x, y, n))                     \
  X(silu_forward_bf16, eltwise::silu_forward<F>, (const bf16 *x, bf16 *y, int64_t n), (x, y, n))                      \
  X(silu_backward_f32, eltwise::silu_backward<F>, (const float *dy, const float *x, float *dx, int64_t n),            \
    (dy, x, dx, n))                                                                                                   \
  X(silu_backward_bf16, eltwise::silu_backward<F>, (const bf16 *dy, const bf16 *x, bf16 *dx, int64_t n),              \
    (dy, x, dx, n))                                                                                                   \
  X(to_bf16, eltwise::to_bf16<F>, (const float *x, bf16 *y, int64_t n), (x, y, n))                                    \
  X(from_bf16, eltwise::from_bf16<F>, (const bf16 *x, float *y, int64_t n), (x, y, n))                                \
  X(binary_rows, eltwise::binary_rows<F>, (const BinaryRows &b, int64_t r0, int64_t r1), (b, r0, r1))                \
  X(transpose_f32, transposing::transpose_copy<F>,                                                                  \
    (const float *src, int64_t ld_src, float *dst, int64_t ld_dst, int64_t rows, int64_t cols),                       \
    (src, ld_src, dst, ld_dst, rows, cols))                                                                           \
  X(transpose_bf16, transposing::transpose_copy<F>,                                                                 \
    (const bf16 *src, int64_t ld_src, bf16 *dst, int64_t ld_dst, int64_t rows, int64_t cols),                         \
    (src, ld_src, dst, ld_dst, rows, cols))                                                                           \
  X(column_sums, reduce::column_sums<F>, (const ColumnSums &s, int64_t o, int64_t c0, int64_t c1), (s, o, c0, c1))    \
  X(column_partial_sums, reduce::column_partial_sums<F>,                                                              \
    (const ColumnSums &s, int64_t o, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *total, float *comp),       \
    (s, o, r0, r1, c0, c1, total, comp))                                                                              \
  X(combine_column_sums, reduce::combine_column_sums<F>,                                                              \
    (const ColumnSums &s, int64_t o, int64_t c0, int64_t c1, const float *total, const float *comp, int64_t blocks),  \
    (s, o, c0, c1, total, comp, blocks))                                                                              \
  X(softmax_forward_f32, rows::softmax_forward<F>, (const float *x, float *y, int64_t rows, int64_t cols, bool log),  \
    (x, y, rows, cols, log))                                                                                          \
  X(softmax_forward_bf16, rows::softmax_forward<F>, (const bf16 *x, bf16 *y, int64_t rows, int64_t cols, bool log),   \
    (x, y, rows, cols, log))                                                                                          \
  X(softmax_forward_lse, rows::softmax_forward_lse<F>,                                                                \
    (const float *x, float *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse, float scale),      \
    (x, y, rows, cols, ld, lse, ld_lse, scale))                                                                       \
  X(softmax_forward_lse_bf16, rows::softmax_forward_lse<F>,                                                           \
    (const float *x, bf16 *y, int64_t rows, int64_t cols, int64_t ld, float *lse, int64_t ld_lse, float scale),       \
    (x, y, rows, cols, ld, lse, ld_lse, scale))                                                                       \
  X(softmax_from_lse, rows::softmax_from_lse<F>,                                                                      \
    (const float *x, float scale, const float *lse, int64_t ld_lse, float *p, bf16 *p16, float *sums, int64_t rows,    \
     int64_t cols, int64_t ld),                                                                                       \
    (x, scale, lse, ld_lse, p, p16, sums, rows, cols, ld))                                                            \
  X(row_dots, rows::row_dots<F>, (const float *a, const float *b, float *out, int64_t rows, int64_t cols, int64_t ld), \
    (a, b, out, rows, cols, ld))                                                                                      \
  X(softmax_backward_given_f32, rows::softmax_backward_given<F>,                                                     \
    (const float *dy, const float *y, const float *sums, float *dx, int64_t rows, int64_t cols, int64_t ld),          \
    (dy, y, sums, dx, rows, cols, ld))                                                                                \
  X(softmax_backward_given_bf16, rows::softmax_backward_given<F>,                                                    \
    (const float *dy, const float *y, const float *sums, bf16 *dx, int64_t rows, int64_t cols, int64_t ld),           \
    (dy, y, sums, dx, rows, cols, ld))                                                                                \
  X(softmax_backward_f32, rows::softmax_backward<F>,                                                                  \
    (const float *dy, const float *y, float *dx, int64_t rows, int64_t cols, bool log), (dy, y, dx, rows, cols, log)) \
  X(softmax_backward_bf16, rows::softmax_backward<F>,                                                                 \
    (const bf16 *dy, const bf16 *y, bf16 *dx, int64_t rows, int64_t cols, bool log), (dy, y, dx, rows, cols, log))    \
  X(layer_norm_forward_f32, rows::layer_norm_forward<F>,                                                              \
    (const float *x, int64_t ld_x, const float *gamma, const float *beta, float *y, float *mean, float *rstd,         \
     int64_t rows, int64_t cols, float eps),                                                                          \
    (x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps))                                                           \
  X(layer_norm_forward_bf16, rows::layer_norm_forward<F>,                                                             \
    (const bf16 *x, int64_t ld_x, const bf16 *gamma, const bf16 *beta, bf16 *y, float *mean, float *rstd,             \
     int64_t rows, int64_t cols, float eps),                                                                          \
    (x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps))                                                           \
  X(layer_norm_forward_bf16_f32, rows::layer_norm_forward<F>,                                                         \
    (const bf16 *x, int64_t ld_x, const float *gamma, const float *beta, bf16 *y, float *mean, float *rstd,           \
     int64_t rows, int64_t cols, float eps),                                                                          \
    (x, ld_x, gamma, beta, y, mean, rstd, rows, cols, eps))                                                           \
  X(layer_norm_backward_f32, rows::layer_norm_backward<F>,                                                            \
    (const float *dy, const float *x, int64_t ld_x, const float *mean, const float *rstd, const float *gamma,         \
     float *dx, float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols),                                     \
    (dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols))                                          \
  X(layer_norm_backward_bf16, rows::layer_norm_backward<F>,                                                           \
    (const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd, const bf16 *gamma, bf16 *dx,  \
     float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols),                                                \
    (dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols))                                          \
  X(layer_norm_backward_bf16_f32, rows::layer_norm_backward<F>,                                                       \
    (const bf16 *dy, const bf16 *x, int64_t ld_x, const float *mean, const float *rstd, const float *gamma, bf16 *dx, \
     float *dgamma_acc, float *dbeta_acc, int64_t rows, int64_t cols),                                                \
    (dy, x, ld_x, mean, rstd, gamma, dx, dgamma_acc, dbeta_acc, rows, cols))                                          \
  X(adam_step_f32, adam_step_impl<F>,                                                                                 \
    (float *param, const float *grad, float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, int64_t n,            \
     const AdamScalars &s),                                                                                           \
    (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s))                                                         \
  X(adam_step_bf16, adam_step_impl<F>,                                                                                \
    (bf16 *param, const bf16 *grad, bf16 *exp_avg, bf16 *exp_avg_sq, bf16 *max_exp_avg_sq, int64_t n,                 \
     const AdamScalars &s),                                                                                           \
    (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s))                                                         \
  X(apply_output_ops, output::apply<F>, (const OutputOps &ops, float *c, long ldc, long i0, long m, long j0, long n), \
    (ops, c, ldc, i0, m, j0, n))
// clang-format on

struct OpsTable {
  const char *family;  // its row of kernels/families.def (HCOPS_ISA's spelling)
#define HCOPS_OPS_MEMBER(member, impl, params, args) void(*member) params;
  HCOPS_OPS_ENTRIES(HCOPS_OPS_MEMBER)
#undef HCOPS_OPS_MEMBER
};

}  // namespace hcops::ops
