/* Fail-fast oneDNN calls for the benchmark programs that drive oneDNN
 * (hcops-dnnl-ops, hcops-dnnl-bf16): CHECK(call) exits with status 2 and the
 * call's text when oneDNN returns anything but dnnl_success. A benchmark
 * must not time a peer that did not run. Define PROG (the program's name)
 * before including. */
#ifndef HCOPS_PERF_DNNL_CHECK_H
#define HCOPS_PERF_DNNL_CHECK_H

#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>

static void die(const char *what, dnnl_status_t s) {
  fprintf(stderr, PROG ": %s failed: oneDNN status %d\n", what, (int)s);
  exit(2);
}
#define CHECK(call)                         \
  do {                                      \
    dnnl_status_t s_ = (call);              \
    if (s_ != dnnl_success) die(#call, s_); \
  } while (0)

#endif
