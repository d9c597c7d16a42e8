/* The loading rule the oneDNN layer adds to the BLAS one: a libdnnl already
 * in the process wins, even one opened RTLD_LOCAL (as python opens
 * PyTorch's libraries), over HCOPS_UNDERLYING_DNNL, so that the runtime is
 * never loaded twice. Links no libdnnl; run with libhcops preloaded and
 * HCOPS_UNDERLYING_DNNL naming nothing (test_dnnl_loaded.sh): the forwarded
 * calls must reach the copy it opened, without a word about the variable. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl_types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  const char *path = getenv("HCOPS_TEST_DNNL");
  void *real = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  typedef dnnl_status_t (*engine_create_fn)(dnnl_engine_t *, dnnl_engine_kind_t, size_t);
  typedef const char *(*reference_fn)(void);
  engine_create_fn create = (engine_create_fn)dlsym(RTLD_DEFAULT, "dnnl_engine_create");
  reference_fn reference = (reference_fn)dlsym(RTLD_DEFAULT, "hcops_underlying_dnnl");
  if (!real || !create || !reference || create == (engine_create_fn)dlsym(real, "dnnl_engine_create")) {
    fprintf(stderr, "run with libhcops preloaded and HCOPS_TEST_DNNL naming the real libdnnl\n");
    return 1;
  }
  dnnl_engine_t eng = NULL;
  const dnnl_status_t st = create(&eng, dnnl_cpu, 0);
  const char *used = reference();
  char resolved[4096];
  const int same = used && realpath(path, resolved) && strcmp(used, path) == 0;
  printf("status %d, engine %p, forwarding to %s\n", (int)st, (void *)eng, used ? used : "(none)");
  return st == dnnl_success && eng && (same || (used && strcmp(used, resolved) == 0)) ? 0 : 1;
}
