/* A conformance problem's attributes, its result, and the f64 reference's
 * error bounds.
 *
 * Bounds (u = 2^-24, f32's unit roundoff). The reference carries each
 * element as a pair (x, e): x the exact value in f64 (bf16 and integer
 * inputs are exact in f64, so are their products), e a bound on the error
 * of any order of f32 operations that computes it:
 *   sum over k of a*b:   e = k u sum|a||b|       (f32 accumulation, k terms)
 *   times a scale s:     e = |s| e + u |x|
 *   plus bias/sum/src1:  e = e + u (|x| + |added|)
 *   act (scale s):       e = |s| (L e + 2^-18 |x_in|) + u |x|
 *                        L: the activation's Lipschitz constant (relu:
 *                        max(1, |alpha|); gelu_tanh, gelu_erf, swish: 1.2;
 *                        tanh: 1); 2^-18 |x_in| covers a vectorised
 *                        tanh/erf/exp good to 32 f32 ulps of its argument's
 *                        size (gelu(x) = x (1 + tanh(..)) / 2 and the like)
 *   stored in f32:       e = e + u |x|
 *   stored in bf16:      e = e + one bf16 ulp of |x|
 *   stored as integer:   e = e + 1 (rounding; values never saturate)
 * The result passes when |got - x| <= e for every element, and no byte
 * outside the elements (ld and batch gaps, past the end) changed. */
#pragma once

#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

#include "conf_util.h"

typedef enum { PO_NONE, PO_SUM, PO_ELTWISE, PO_BINARY_ADD } po_kind;
typedef struct {
  po_kind kind;
  dnnl_alg_kind_t alg; /* eltwise */
  float alpha, beta;   /* eltwise */
  float scale;         /* sum, eltwise */
} post_op;

#define MAX_POST_OPS 3

/* Whether HCOps must run the problem (an hcops_verbose exec line per
 * execution under the preload) or must hand it to the real library (no
 * line, and the result equal to stock's bit for bit). */
typedef enum { MUST_CLAIM, MUST_FORWARD } claim_mark;

typedef struct {
  double max_err, bound; /* at the element with the largest err / bound */
  double worst_ratio;
  int ok;
  int gaps_ok;
  uint64_t digest;       /* of the output(s) */
  const char *skipped;   /* the library refused the problem: why */
  int executions;        /* dnnl_primitive_execute calls made */
  int empty_executions;  /* of them, on an empty dst: nothing to compute, HCOps may run them or hand them on */
  const void *primitive; /* the primitive's address (the lifetime test) */
} conf_result;

/* (x, e) of conf_problem.h's header comment. */
typedef struct {
  double x, e;
} refval;

static const double CONF_U = 0x1p-24;

refval ref_scale(refval v, double s);
refval ref_add(refval v, double added);
/* The bias added to an accumulator v, allowing either order of bias and
 * output scale s / sum beta*d. Scaled first: fl(fl(s t) + beta d) then
 * + fl(s b), with t = fl(acc): roundings u(|s t| + |s t + beta d| + |s b| +
 * |r|) <= u(2|s t| + |beta d| + |s b| + |r|); ref_add then ref_scale and the
 * sum's ref_add give at least u(|s b| + |beta d| + |r|): the difference is
 * at most 2u|s acc|, added here before the scale (which multiplies it by
 * |s|). */
refval ref_add_bias(refval v, double bias);
refval ref_eltwise(refval v, dnnl_alg_kind_t alg, double alpha, double beta, double scale);
/* The store into dt. */
refval ref_store(refval v, dnnl_data_type_t dt);

/* Compares the element `got` with its reference into r. */
void result_account(conf_result *r, double got, refval want);
void result_init(conf_result *r);

/* Attributes from the post-op list and output scales (count 0: none;
 * runtime: DNNL_RUNTIME_F32_VAL); binary post-ops get src1 descriptors
 * from src1_md (each one). */
dnnl_primitive_attr_t make_attr(const post_op *po, int npo, int nscales, int scale_mask, const float *scales,
                                const dnnl_memory_desc_t *src1_md);

/* The primitive descriptor through dnnl_primitive_desc_create, or through
 * the iterator as PyTorch's dnnl.hpp does (iterator_create, then _fetch);
 * NULL with *status when the library has no implementation. */
dnnl_primitive_desc_t make_pd(const void *op_desc, const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint,
                              int use_iterator, dnnl_status_t *status);
