/* See conf_util.h. */
#define _GNU_SOURCE
#include "conf_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int saved_stderr = -1;

void conf_die(const char *file, int line, const char *what, dnnl_status_t status) {
  if (saved_stderr >= 0) dup2(saved_stderr, 2); /* not into a capture */
  fprintf(stderr, "%s:%d: %s returned status %d\n", file, line, what, (int)status);
  exit(2);
}

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void) { CHECK_DNNL(dnnl_engine_create(&engine, dnnl_cpu, 0)); }
dnnl_engine_t conf_engine(void) {
  pthread_once(&engine_once, engine_init);
  return engine;
}

const char conf_no_bf16[] = "the real libdnnl has no bf16 matmul on this CPU";

static int has_bf16;
static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;
static void bf16_probe(void) {
  const dnnl_dims_t dims = {2, 2};
  dnnl_memory_desc_t s, w, d;
  CHECK_DNNL(dnnl_memory_desc_init_by_tag(&s, 2, dims, dnnl_bf16, dnnl_ab));
  CHECK_DNNL(dnnl_memory_desc_init_by_tag(&w, 2, dims, dnnl_bf16, dnnl_ab));
  CHECK_DNNL(dnnl_memory_desc_init_by_tag(&d, 2, dims, dnnl_f32, dnnl_ab));
  dnnl_matmul_desc_t desc;
  CHECK_DNNL(dnnl_matmul_desc_init(&desc, &s, &w, NULL, &d));
  dnnl_primitive_desc_t pd;
  has_bf16 = dnnl_primitive_desc_create(&pd, &desc, NULL, conf_engine(), NULL) == dnnl_success;
  if (has_bf16) CHECK_DNNL(dnnl_primitive_desc_destroy(pd));
}
int conf_library_has_bf16(void) {
  pthread_once(&bf16_once, bf16_probe);
  return has_bf16;
}

/* Each thread its own stream: a oneDNN stream is not to be shared. */
static __thread dnnl_stream_t stream;
dnnl_stream_t conf_stream(void) {
  if (!stream) CHECK_DNNL(dnnl_stream_create(&stream, conf_engine(), dnnl_stream_default_flags));
  return stream;
}

uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double rng_uniform(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * (double)(rng_next(s) >> 11) * 0x1p-53; }
long rng_int(uint64_t *s, long lo, long hi) { return lo + (long)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
double bf16_ulp(double x) {
  int e;
  x = fabs(x);
  if (x < 0x1p-126) return 0x1p-133;
  frexp(x, &e); /* x = f 2^e, f in [0.5, 1) */
  return ldexp(1.0, e - 8);
}

size_t dt_size(dnnl_data_type_t dt) {
  switch (dt) {
    case dnnl_f32:
    case dnnl_s32: return 4;
    case dnnl_bf16:
    case dnnl_f16: return 2;
    default: return 1;
  }
}
const char *dt_name(dnnl_data_type_t dt) {
  switch (dt) {
    case dnnl_f32: return "f32";
    case dnnl_bf16: return "bf16";
    case dnnl_s32: return "s32";
    case dnnl_s8: return "s8";
    case dnnl_u8: return "u8";
    default: return "?";
  }
}

dnnl_memory_desc_t md_strided(int ndims, const dnnl_dim_t *dims, dnnl_data_type_t dt, const dnnl_dim_t *strides) {
  dnnl_memory_desc_t md;
  dnnl_dims_t dense;
  if (!strides) {
    dnnl_dim_t s = 1;
    for (int d = ndims - 1; d >= 0; --d) {
      dense[d] = s;
      s *= dims[d] > 0 ? dims[d] : 1;
    }
    strides = dense;
  }
  CHECK_DNNL(dnnl_memory_desc_init_by_strides(&md, ndims, dims, dt, strides));
  return md;
}
dnnl_memory_desc_t md_tag(int ndims, const dnnl_dim_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
  dnnl_memory_desc_t md;
  CHECK_DNNL(dnnl_memory_desc_init_by_tag(&md, ndims, dims, dt, tag));
  return md;
}
dnnl_dim_t md_nelems(const dnnl_memory_desc_t *md) {
  dnnl_dim_t n = 1;
  for (int d = 0; d < md->ndims; ++d) n *= md->dims[d];
  return n;
}

static int md_plain(const dnnl_memory_desc_t *md) {
  return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0;
}

tensor tensor_new(const dnnl_memory_desc_t *md) {
  tensor t;
  t.md = *md;
  t.bytes = dnnl_memory_desc_get_size(md);
  /* 64 bytes past the end: a write past the last element shows too. */
  t.data = malloc(t.bytes + 64);
  if (!t.data) abort();
  memset(t.data, CONF_SENTINEL, t.bytes + 64);
  return t;
}
void tensor_free(tensor *t) {
  free(t->data);
  t->data = NULL;
}

static size_t elem_offset(const tensor *t, const dnnl_dim_t *idx) {
  dnnl_dim_t off = t->md.offset0;
  for (int d = 0; d < t->md.ndims; ++d) off += idx[d] * t->md.format_desc.blocking.strides[d];
  return (size_t)off * dt_size(t->md.data_type);
}

double tensor_get(const tensor *t, const dnnl_dim_t *idx) {
  const unsigned char *p = t->data + elem_offset(t, idx);
  switch (t->md.data_type) {
    case dnnl_f32: {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    case dnnl_bf16: {
      uint16_t b;
      memcpy(&b, p, 2);
      return bf16_to_f32(b);
    }
    case dnnl_s32: {
      int32_t i;
      memcpy(&i, p, 4);
      return i;
    }
    case dnnl_s8: return *(const int8_t *)p;
    case dnnl_u8: return *p;
    default: abort();
  }
}

static double sat_round(double v, double lo, double hi) {
  v = nearbyint(v);
  return v < lo ? lo : v > hi ? hi : v;
}
void tensor_set(tensor *t, const dnnl_dim_t *idx, double v) {
  unsigned char *p = t->data + elem_offset(t, idx);
  switch (t->md.data_type) {
    case dnnl_f32: {
      float f = (float)v;
      memcpy(p, &f, 4);
      break;
    }
    case dnnl_bf16: {
      uint16_t b = f32_to_bf16((float)v);
      memcpy(p, &b, 2);
      break;
    }
    case dnnl_s32: {
      int32_t i = (int32_t)sat_round(v, -2147483648.0, 2147483647.0);
      memcpy(p, &i, 4);
      break;
    }
    case dnnl_s8: *(int8_t *)p = (int8_t)sat_round(v, -128, 127); break;
    case dnnl_u8: *p = (uint8_t)sat_round(v, 0, 255); break;
    default: abort();
  }
}

int idx_next(int ndims, const dnnl_dim_t *dims, dnnl_dim_t *idx) {
  for (int d = ndims - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

void tensor_fill(tensor *t, uint64_t *rng, double lo, double hi) {
  if (md_nelems(&t->md) == 0) return;
  int integer = t->md.data_type == dnnl_s8 || t->md.data_type == dnnl_u8 || t->md.data_type == dnnl_s32;
  dnnl_dims_t idx = {0};
  do {
    tensor_set(t, idx, integer ? (double)rng_int(rng, (long)lo, (long)hi) : rng_uniform(rng, lo, hi));
  } while (idx_next(t->md.ndims, t->md.dims, idx));
}

/* The elements' bytes marked, then every other byte compared with the
 * sentinel. */
int tensor_gaps_intact(const tensor *t) {
  size_t n = t->bytes + 64, es = dt_size(t->md.data_type);
  unsigned char *mine = calloc(n, 1);
  if (!mine) abort();
  if (md_nelems(&t->md) > 0) {
    dnnl_dims_t idx = {0};
    do memset(mine + elem_offset(t, idx), 1, es);
    while (idx_next(t->md.ndims, t->md.dims, idx));
  }
  int ok = 1;
  for (size_t i = 0; i < n && ok; ++i)
    if (!mine[i] && t->data[i] != CONF_SENTINEL) ok = 0;
  free(mine);
  return ok;
}

uint64_t tensor_digest(const tensor *t) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t es = dt_size(t->md.data_type);
  if (!md_plain(&t->md)) {
    for (size_t i = 0; i < t->bytes; ++i) h = (h ^ t->data[i]) * 0x100000001b3ull;
    return h;
  }
  if (md_nelems(&t->md) == 0) return h;
  dnnl_dims_t idx = {0};
  do {
    const unsigned char *p = t->data + elem_offset(t, idx);
    for (size_t i = 0; i < es; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  } while (idx_next(t->md.ndims, t->md.dims, idx));
  return h;
}

dnnl_memory_t tensor_memory(const tensor *t) {
  dnnl_memory_t m;
  CHECK_DNNL(dnnl_memory_create(&m, &t->md, conf_engine(), t->data));
  return m;
}

static FILE *capture_file;
void capture_begin(void) {
  fflush(stderr);
  capture_file = tmpfile();
  if (!capture_file) abort();
  saved_stderr = dup(2);
  dup2(fileno(capture_file), 2);
}
char *capture_end(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  saved_stderr = -1;
  long n = ftell(capture_file);
  if (n < 0) n = 0;
  char *text = malloc((size_t)n + 1);
  rewind(capture_file);
  size_t got = fread(text, 1, (size_t)n, capture_file);
  text[got] = 0;
  fclose(capture_file);
  fputs(text, stderr);
  return text;
}

/* Whether the line at `k` (just past "hcops_verbose,exec,cpu,") is of kind
 * and prop. */
static int exec_line_matches(const char *k, const char *kind, const char *prop) {
  size_t n = strlen(kind);
  if (strncmp(k, kind, n) || strncmp(k + n, ",hcops:", 7)) return 0;
  if (!prop) return 1;
  const char *f = strchr(k + n + 7, ','); /* past the family */
  return f && !strncmp(f + 1, prop, strlen(prop)) && f[1 + strlen(prop)] == ',';
}

int count_hcops_fallback(const char *text, const char *kind, const char *when, char *reason, size_t cap) {
  const char *prefix = "hcops_verbose,fallback,dnnl,";
  int count = 0;
  if (reason && cap) reason[0] = 0;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (!strncmp(line, prefix, strlen(prefix))) {
      char buf[256];
      snprintf(buf, sizeof buf, "%.*s", (int)(len - strlen(prefix)), line + strlen(prefix));
      char *k = buf, *w = strchr(k, ','), *r = w ? strchr(w + 1, ',') : NULL;
      if (w && r) {
        *w++ = 0, *r++ = 0;
        if ((!kind || !strcmp(k, kind)) && (!when || !strcmp(w, when))) {
          if (count++ == 0 && reason && cap) snprintf(reason, cap, "%s", r);
        }
      }
    }
    line = end ? end + 1 : NULL;
  }
  return count;
}

int count_hcops_exec(const char *text, const char *kind, const char *prop) {
  const char *prefix = "hcops_verbose,exec,cpu,";
  int count = 0;
  for (const char *line = text; line && *line;) {
    if (!strncmp(line, prefix, strlen(prefix))) {
      const char *k = line + strlen(prefix);
      if (kind ? exec_line_matches(k, kind, prop)
               : exec_line_matches(k, "matmul", prop) || exec_line_matches(k, "inner_product", prop))
        ++count;
    }
    line = strchr(line, '\n');
    if (line) ++line;
  }
  return count;
}
