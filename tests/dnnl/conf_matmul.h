/* Matmul problems through the oneDNN C API, against an f64 reference. */
#pragma once

#include "conf_problem.h"

/* Dims known only at execution (DNNL_RUNTIME_DIM_VAL in the primitive's
 * descriptors, the values in the memories'). */
enum { RT_M = 1, RT_K = 2, RT_N = 4, RT_BATCH = 8 };

/* Output scales: none, one constant, one given at execution
 * (DNNL_RUNTIME_F32_VAL), one per column of dst (mask on the N dim). */
enum { OSCALE_NONE, OSCALE_COMMON, OSCALE_RUNTIME, OSCALE_PER_N };

typedef struct {
  char name[96];
  claim_mark mark;
  int nbatch;                            /* batch dims in front of M, N: 0, 1 or 2 */
  dnnl_dim_t src_batch[2], wei_batch[2]; /* each the batch size or 1 (broadcast) */
  dnnl_dim_t M, K, N;
  dnnl_dim_t M2, K2, N2;               /* runtime problems: a second execution at these */
  int batch0_2;                        /* RT_BATCH: the second execution's batch dims 0 (the broadcast ones stay 1) */
  int src_trans, wei_trans;            /* the last two dims swapped in memory ("ba") */
  dnnl_dim_t ld_pad;                   /* added to every leading dimension (dst's too) */
  dnnl_dim_t batch_pad;                /* added to the innermost batch stride */
  dnnl_data_type_t sdt, wdt, ddt, bdt; /* bdt dnnl_data_type_undef: no bias */
  unsigned bias_mask;                  /* the dst dims the bias spans (bit d: dim d) */
  unsigned runtime;                    /* RT_* */
  int oscale_kind;                     /* OSCALE_* */
  float oscale;
  post_op po[MAX_POST_OPS];
  int npo;
  int src_zp;  /* s8/u8 src: its zero point (0: none) */
  int wei_any; /* weights dnnl_format_tag_any: the layout the library chooses */
  int use_iterator;
} mm_problem;

/* prepare + execute + release. */
void run_matmul(const mm_problem *p, uint64_t seed, conf_result *r);

/* The primitive of a problem, executed apart (the threads test shares one
 * between threads): mm_prepare returns 0 with `skipped` set when the library
 * refuses the problem; mm_execute runs it (twice for runtime dims) on fresh
 * memories from seed and accounts into r (result_init'ed by the caller). */
typedef struct {
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t wei_layout;
  const char *skipped;
} mm_prepared;
int mm_prepare(const mm_problem *p, mm_prepared *out);
void mm_execute(const mm_problem *p, const mm_prepared *pp, uint64_t seed, conf_result *r);
void mm_release(mm_prepared *pp);
