/* Inner-product problems through the oneDNN C API, against an f64
 * reference. */
#pragma once

#include "conf_problem.h"

typedef enum { IP_FWD_TRAINING, IP_FWD_INFERENCE, IP_BWD_DATA, IP_BWD_WEIGHTS } ip_dir;

typedef struct {
  char name[96];
  claim_mark mark;
  ip_dir dir;
  dnnl_dim_t MB, OC, IC, H, W; /* H = W = 0: 2-D src "nc", weights "oi"; else nchw, oihw */
  /* forward: src, weights, dst, bias; backward_data: diff_src, weights,
   * diff_dst; backward_weights: src, diff_weights, diff_dst, diff_bias.
   * bdt dnnl_data_type_undef: no bias. */
  dnnl_data_type_t sdt, wdt, ddt, bdt;
  post_op po[MAX_POST_OPS]; /* forward only */
  int npo;
  int use_iterator;
} ip_problem;

void run_ip(const ip_problem *p, uint64_t seed, conf_result *r);
