/* What the oneDNN conformance programs share: failing fast on a C API
 * status, the engine and stream, a seeded generator, bf16 rounding, plain
 * tensors read and written by logical index (for the f64 references), the
 * digest of a result (for bit-for-bit comparisons between runs), and the
 * capture of our own stderr (to count the hcops_verbose lines a call
 * printed). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

/* A failing call is a failure of the test, not of the problem: exit 2. */
#define CHECK_DNNL(call)                                                  \
  do {                                                               \
    dnnl_status_t s_ = (call);                                       \
    if (s_ != dnnl_success) conf_die(__FILE__, __LINE__, #call, s_); \
  } while (0)
void conf_die(const char *file, int line, const char *what, dnnl_status_t status);

dnnl_engine_t conf_engine(void);

/* Whether the real libdnnl has a bf16 matmul on this CPU (oneDNN 2.6: on
 * x86-64 with AVX512_CORE or AMX; none on AArch64), probed once with a 2 x 2
 * one (primitive descriptors are always the real library's: HCOps takes
 * primitives over at dnnl_primitive_create). Without it the bf16 problems
 * are skipped, with conf_no_bf16 as the reason, and do not fail. */
int conf_library_has_bf16(void);
extern const char conf_no_bf16[];
/* The stream of the calling thread (each thread its own). */
dnnl_stream_t conf_stream(void);

/* splitmix64 */
uint64_t rng_next(uint64_t *state);
/* Uniform in [lo, hi). */
double rng_uniform(uint64_t *state, double lo, double hi);
/* Uniform integer in [lo, hi]. */
long rng_int(uint64_t *state, long lo, long hi);

uint16_t f32_to_bf16(float f); /* round to nearest even */
float bf16_to_f32(uint16_t b);
/* One bf16 ulp at |x| (2^(e-7) for x in [2^e, 2^(e+1))); the smallest
 * normal's ulp below it. */
double bf16_ulp(double x);

/* A plain (non-blocked) tensor, or any layout the library chose (then only
 * its bytes are used: no logical access). The buffer is `bytes` long, filled
 * with a sentinel byte before use so that writes outside the elements show. */
typedef struct {
  dnnl_memory_desc_t md;
  unsigned char *data;
  size_t bytes;
} tensor;

#define CONF_SENTINEL 0xA5

/* md must be fully defined; plain tensors: format_kind blocked, no inner
 * blocks. */
tensor tensor_new(const dnnl_memory_desc_t *md);
void tensor_free(tensor *t);
/* A plain md from dims and strides (strides NULL: dense row-major). */
dnnl_memory_desc_t md_strided(int ndims, const dnnl_dim_t *dims, dnnl_data_type_t dt, const dnnl_dim_t *strides);
dnnl_memory_desc_t md_tag(int ndims, const dnnl_dim_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag);
dnnl_dim_t md_nelems(const dnnl_memory_desc_t *md);
size_t dt_size(dnnl_data_type_t dt);
const char *dt_name(dnnl_data_type_t dt);

/* The element at a logical index (plain tensors only), as a double; and a
 * store that rounds to the datatype (nearest even for bf16, saturated and
 * rounded for integers). */
double tensor_get(const tensor *t, const dnnl_dim_t *idx);
void tensor_set(tensor *t, const dnnl_dim_t *idx, double v);
/* Every element (logical order): random in [lo, hi), rounded to the
 * datatype; integers uniform in [lo, hi]. */
void tensor_fill(tensor *t, uint64_t *rng, double lo, double hi);
/* Whether the bytes that hold no element still hold the sentinel. */
int tensor_gaps_intact(const tensor *t);
/* FNV-1a of the elements' bytes in logical order (plain), or of every byte. */
uint64_t tensor_digest(const tensor *t);
/* Advances idx (ndims dims) in row-major logical order; 0 at the end. */
int idx_next(int ndims, const dnnl_dim_t *dims, dnnl_dim_t *idx);

dnnl_memory_t tensor_memory(const tensor *t);

/* Redirects fd 2 into a temporary file until capture_end(), which puts the
 * captured text back on the real stderr and returns it (malloc'd). */
void capture_begin(void);
char *capture_end(void);
/* hcops_verbose,exec,cpu,<kind>,hcops:<family>,<prop>, lines in text
 * (ONEDNN_VERBOSE's exec fields); kind NULL: matmul or inner_product, prop
 * NULL: any. */
int count_hcops_exec(const char *text, const char *kind, const char *prop);
/* The "hcops_verbose,fallback,dnnl,<kind>,<when>,<reason>" lines in text
 * (kind, when: NULL for any); the first one's reason copied into `reason`
 * (cap bytes, "" when there is none). */
int count_hcops_fallback(const char *text, const char *kind, const char *when, char *reason, size_t cap);
