/* The problems of test_dnnl_conformance: the fixed edge cases, each marked
 * must-claim or must-forward by issue 16's rules, and the seeded random
 * set (all must-claim). */
#pragma once

#include "conf_conv.h"
#include "conf_ip.h"
#include "conf_matmul.h"

typedef enum { P_MATMUL, P_IP, P_CONV } problem_kind;

typedef struct {
  problem_kind kind;
  union {
    mm_problem mm;
    ip_problem ip;
    conv_problem conv;
  } u;
} problem;

/* malloc'd; *count problems. */
problem *conformance_list(uint64_t seed, int nrandom, int *count);
const char *problem_name(const problem *p);
claim_mark problem_mark(const problem *p);
