/* The forwarder's description of the real libdnnl, given the candidates
 * opened when none is loaded: underlying.c passes configure's file and
 * "libdnnl.so.2"; tests/dnnl/test_dnnl_missing.c a table of its own whose
 * candidates do not exist, to see what a process without libdnnl gets.
 * Include after forward_table.h (HCOPS_FORWARD_TABLE dnnl). */
#pragma once

#include <oneapi/dnnl/dnnl_types.h>

/* What a forwarded call returns when there is no libdnnl (or it lacks the
 * symbol): a failure status, since dnnl_success (0) would tell a C caller
 * that an output it then reads (an engine, a descriptor) was set. */
static dnnl_status_t hcops_dnnl_missing(void) { return dnnl_runtime_error; }

/* The forwarded functions that return no status (a size, a count, a
 * pointer, a kind, an int or a bool): zero, that is 0, NULL or false, says
 * "nothing" in each of them. dnnl_impl_gpu_* are the GPU build's internals,
 * exported by a CPU library built with the OpenCL GPU runtime too (Debian's
 * amd64 one; forwarded.def's HCOPS_DNNL_GPU_OCL). */
static const char *const hcops_dnnl_missing_zero[] = {"dnnl_alg_kind2str",
                                                      "dnnl_cpu_isa2str",
                                                      "dnnl_cpu_isa_hints2str",
                                                      "dnnl_dt2str",
                                                      "dnnl_engine_kind2str",
                                                      "dnnl_fmt_kind2str",
                                                      "dnnl_fmt_tag2str",
                                                      "dnnl_fpmath_mode2str",
                                                      "dnnl_prim_kind2str",
                                                      "dnnl_prop_kind2str",
                                                      "dnnl_rnn_direction2str",
                                                      "dnnl_rnn_flags2str",
                                                      "dnnl_runtime2str",
                                                      "dnnl_scratchpad_mode2str",
                                                      "dnnl_status2str",
                                                      "dnnl_primitive_desc_query_md",
                                                      "dnnl_version",
                                                      "dnnl_get_cpu_isa_hints",
                                                      "dnnl_get_effective_cpu_isa",
                                                      "dnnl_primitive_desc_iterator_fetch",
                                                      "dnnl_post_ops_get_kind",
                                                      "dnnl_memory_desc_equal",
                                                      "dnnl_post_ops_len",
                                                      "dnnl_primitive_desc_query_s32",
                                                      "dnnl_data_type_size",
                                                      "dnnl_engine_get_count",
                                                      "dnnl_memory_desc_get_size",
                                                      "dnnl_impl_gpu_mayiuse_ngen_kernels",
                                                      "dnnl_impl_gpu_conv_wino_should_silence_unimplemented",
                                                      NULL};

#define HCOPS_DNNL_DESCRIPTION(...)                                                                                   \
  HCOPS_FOREIGN_DESCRIPTION_MISSING(1, (void (*)(void))hcops_dnnl_missing, hcops_dnnl_missing_zero, "oneDNN library", \
                                    "HCOPS_UNDERLYING_DNNL", "dnnl_primitive_desc_iterator_create",                    \
                                    "the real oneDNN, such as /usr/lib/x86_64-linux-gnu/libdnnl.so.2", __VA_ARGS__)
