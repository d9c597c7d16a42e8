/* A program linked against the real libdnnl (-ldnnl) that calls a sample of
 * oneDNN's C functions, those HCOps forwards among them, and prints what
 * they return on stdout: test_dnnl_abi.sh runs it with and without
 * libhcops preloaded and requires the same output, and that the preloaded
 * run went through libhcops (the file dnnl_engine_create resolves to,
 * printed on stderr).
 *   test_dnnl_forwarded            the sample
 *   test_dnnl_forwarded names FILE every name in FILE (one a line) resolves
 *                                  in the process to libhcops (under the
 *                                  preload) and is defined by the real
 *                                  libdnnl, which is not libhcops */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW(call) printf("%s = %d\n", #call, (int)(call))

static const char *file_of(void *sym) {
  Dl_info info;
  return sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "(none)";
}

static int names(const char *list) {
  FILE *f = fopen(list, "r");
  void *real = dlopen("libdnnl.so.2", RTLD_NOLOAD | RTLD_LAZY);
  if (!f || !real) {
    fprintf(stderr, "cannot open %s or find the linked libdnnl.so.2\n", list);
    return 1;
  }
  char name[256];
  int bad = 0, n = 0;
  while (fscanf(f, "%255s", name) == 1) {
    ++n;
    void *here = dlsym(RTLD_DEFAULT, name), *there = dlsym(real, name);
    if (!here || !strstr(file_of(here), "libhcops") || !there || strstr(file_of(there), "libhcops")) {
      fprintf(stderr, "%s: resolves to %s, the real one in %s\n", name, file_of(here), file_of(there));
      ++bad;
    }
  }
  fclose(f);
  printf("%d names, %d not resolved through libhcops to the real libdnnl\n", n, bad);
  return bad != 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "names") == 0) return names(argv[2]);
  fprintf(stderr, "dnnl_engine_create in %s\n", file_of((void *)&dnnl_engine_create));

  const dnnl_version_t *v = dnnl_version();
  printf("version %d.%d.%d %s cpu_runtime %u\n", v->major, v->minor, v->patch, v->hash, v->cpu_runtime);
  printf("%s %s %s\n", dnnl_status2str(dnnl_invalid_arguments), dnnl_dt2str(dnnl_bf16), dnnl_fmt_tag2str(dnnl_ba));
  SHOW(dnnl_set_verbose(0));
  SHOW(dnnl_set_verbose(7));
  SHOW(dnnl_engine_get_count(dnnl_cpu));
  SHOW(dnnl_engine_create(NULL, dnnl_cpu, 0));

  dnnl_engine_t eng = NULL;
  SHOW(dnnl_engine_create(&eng, dnnl_cpu, 0));
  dnnl_engine_kind_t kind = dnnl_any_engine;
  SHOW(dnnl_engine_get_kind(eng, &kind));
  printf("kind %d\n", (int)kind);
  dnnl_stream_t stream = NULL;
  SHOW(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags));

  /* A memory descriptor and an eltwise (relu) primitive through the C API. */
  dnnl_memory_desc_t md;
  const dnnl_dims_t dims = {3, 5};
  SHOW(dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ba));
  printf("md ndims %d dims %ld %ld strides %ld %ld size %zu\n", md.ndims, (long)md.dims[0], (long)md.dims[1],
         (long)md.format_desc.blocking.strides[0], (long)md.format_desc.blocking.strides[1],
         dnnl_memory_desc_get_size(&md));
  dnnl_memory_t src = NULL, dst = NULL;
  SHOW(dnnl_memory_create(&src, &md, eng, DNNL_MEMORY_ALLOCATE));
  SHOW(dnnl_memory_create(&dst, &md, eng, DNNL_MEMORY_ALLOCATE));
  float *x = NULL, *y = NULL;
  SHOW(dnnl_memory_get_data_handle(src, (void **)&x));
  SHOW(dnnl_memory_get_data_handle(dst, (void **)&y));
  for (int i = 0; i < 15; ++i) x[i] = (float)(i - 7) * 0.5f;
  dnnl_eltwise_desc_t ed;
  SHOW(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_relu, &md, 0.0f, 0.0f));
  dnnl_primitive_desc_t pd = NULL;
  SHOW(dnnl_primitive_desc_create(&pd, &ed, NULL, eng, NULL));
  const dnnl_memory_desc_t *qmd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  SHOW(qmd && dnnl_memory_desc_equal(qmd, &md));
  dnnl_primitive_t prim = NULL;
  SHOW(dnnl_primitive_create(&prim, pd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
  SHOW(dnnl_primitive_execute(prim, stream, 2, args));
  SHOW(dnnl_stream_wait(stream));
  for (int i = 0; i < 15; ++i) printf("%g ", y[i]);
  printf("\n");
  SHOW(dnnl_primitive_destroy(prim));
  SHOW(dnnl_primitive_desc_destroy(pd));

  /* A bad call: the real library's status, through the trampoline. */
  SHOW(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_relu, NULL, 0.0f, 0.0f));

  /* The primitive attribute and post-op calls PyTorch makes. */
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  SHOW(dnnl_primitive_attr_create(&attr));
  SHOW(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  SHOW(dnnl_post_ops_create(&po));
  SHOW(dnnl_post_ops_append_sum(po, 1.0f));
  SHOW(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_tanh, 0.0f, 0.0f));
  SHOW(dnnl_post_ops_len(po));
  SHOW(dnnl_post_ops_get_kind(po, 1));
  SHOW(dnnl_primitive_attr_set_post_ops(attr, po));
  SHOW(dnnl_post_ops_destroy(po));
  SHOW(dnnl_primitive_attr_destroy(attr));

  /* dnnl_sgemm, HCOps's own (small integers: exact in both). */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, -1, 2, 0, 3, 1}, c[4] = {0, 0, 0, 0};
  SHOW(dnnl_sgemm('N', 'N', 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2));
  printf("%g %g %g %g\n", c[0], c[1], c[2], c[3]);

  SHOW(dnnl_memory_destroy(src));
  SHOW(dnnl_memory_destroy(dst));
  SHOW(dnnl_stream_destroy(stream));
  SHOW(dnnl_engine_destroy(eng));
  return 0;
}
