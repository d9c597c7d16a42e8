/* A 2-D convolution forward (nchw, oihw, stride 1, padding 1), through the
 * oneDNN C API against an f64 reference: a primitive HCOps must forward. */
#pragma once

#include "conf_problem.h"

typedef struct {
  char name[96];
  dnnl_dim_t MB, IC, OC, H, W, KH, KW;
  int with_bias;
} conv_problem;

void run_conv(const conv_problem *p, uint64_t seed, conf_result *r);
