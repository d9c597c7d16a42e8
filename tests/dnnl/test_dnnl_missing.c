/* What a C caller of oneDNN gets from the forwarder when there is no libdnnl
 * at all (dnnl_nowhere.c: libhcops's table with an unfindable candidate):
 * the functions that return a status say dnnl_runtime_error and leave their
 * outputs alone, since dnnl_success would make the caller use them; those
 * that return a size, count, pointer or kind return zero. The one error
 * line on stderr is test_dnnl_missing.sh's to check. */
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>

static int checks, failures;
#include "common/check.h"

int main(void) {
  fprintf(stderr, "-- first call\n");
  for (int round = 0; round < 2; ++round) {
    dnnl_engine_t eng = (dnnl_engine_t)&failures;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0) == dnnl_runtime_error);
    CHECK(eng == (dnnl_engine_t)&failures);
    dnnl_memory_desc_t md = {.ndims = -1};
    const dnnl_dims_t dims = {2, 3};
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab) == dnnl_runtime_error);
    CHECK(md.ndims == -1);
    CHECK(dnnl_set_verbose(1) == dnnl_runtime_error);
    CHECK(dnnl_version() == NULL);
    CHECK(dnnl_status2str(dnnl_success) == NULL);
    CHECK(dnnl_memory_desc_get_size(&md) == 0);
    CHECK(dnnl_engine_get_count(dnnl_cpu) == 0);
    CHECK(dnnl_post_ops_len(NULL) == 0);
    CHECK(dnnl_memory_desc_equal(&md, &md) == 0);
  }
  return failures != 0;
}
