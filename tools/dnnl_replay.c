/* hcops-dnnl-replay: times oneDNN matmul primitives rebuilt from their
 * ONEDNN_VERBOSE=1 exec lines, as perf/dnnl_replay.py records them from a
 * DiT training step; run once stock and once with libhcops.so preloaded, it
 * compares HCOps' primitives with oneDNN's on the very calls PyTorch made.
 *
 *   hcops-dnnl-replay [--warmup N] [--repeats N] [--quick] PRIMITIVES.csv
 *
 * PRIMITIVES.csv: a header, then one row per distinct primitive,
 *   calls,stock_ms,kind,prop,mds,attrs,aux,problem
 * the last five the fields of oneDNN 2.6's exec line (none holds a comma):
 *   12,0.52,matmul,undef,src_bf16::blocked:ab:f0 wei_bf16::blocked:ba:f0 dst_bf16::blocked:ab:f0,
 *   attr-scratchpad:user attr-post-ops:sum ,,2048x384:384x1152:2048x1152
 * Rebuilt: plain layouts (the tag's letters, outermost first, give dense
 * strides: a verbose line does not say when PyTorch passed a larger leading
 * dimension), f32/bf16 data, a bias (its _mask, else along the last
 * dimension), attributes attr-scratchpad:user (a scratchpad is then passed),
 * attr-oscale:0:<v>, attr-post-ops sum[:scale] and eltwise_<alg>[:alpha[:beta
 * [:scale]]] (linear, relu, gelu_tanh, gelu_erf, swish, logistic, tanh). Each
 * primitive is created with dnnl_primitive_desc_create and
 * dnnl_primitive_create, its memory filled with values in [-1, 1]; executed
 * once and checked, then --warmup untimed and --repeats timed executions
 * (each followed by dnnl_stream_wait). Other kinds, blocked layouts, runtime
 * dims and other attributes are skipped and said so, as are primitives the
 * library has no implementation of on this CPU.
 *
 * The check: up to 64 elements of dst, spread over it, against a double
 * reference from the same inputs: dst within one ulp of its type (the final
 * rounding) of the interval a correct f32 computation can give: the exact
 * value +- (k + 2) 2^-24 S (f32 accumulation of products exact in f32; S the
 * sum of |terms|, the bias among them), carried through the post-ops (see
 * check()). A wrong result is reported, not timed away: "err" is the worst
 * distance outside the interval in ulps (<= 1 passes), 1e9 for NaN.
 *
 * Prints, last, one JSON line: {"threads": OMP_NUM_THREADS, "warmup", "repeats",
 * "primitives": [{"index", "calls", "ms" (median of the timed executions),
 * "min_ms", "impl" (oneDNN's implementation of the pd; under the preload still
 * oneDNN's: HCOps' verbose lines say which it ran), "err"} or {"index",
 * "skipped": reason}]}. --quick: 1 warm-up, 3 repeats. */
#define _GNU_SOURCE
#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h" /* to_bf16, from_bf16 */

#define PROG "hcops-dnnl-replay"
#include "dnnl_check.h"
#include "bench_util.h"

#define MAX_POST_OPS 4
#define CHECKED_ELEMS 64

/* ---- one recorded primitive ------------------------------------------------ */

struct tensor {
  int present;
  dnnl_data_type_t dt;
  int ndims;
  dnnl_dims_t dims, strides;
  int mask; /* bias: the dimensions it varies along (-1: not given) */
  char tag[DNNL_MAX_NDIMS + 1];
};

struct post_op {
  int is_sum;
  dnnl_alg_kind_t alg;
  float scale, alpha, beta;
};

struct primitive {
  long calls;
  struct tensor src, wei, bia, dst;
  int user_scratchpad;
  float oscale;
  int n_post;
  struct post_op post[MAX_POST_OPS];
};

static int parse_dt(const char *s, dnnl_data_type_t *dt) {
  static const struct {
    const char *name;
    dnnl_data_type_t dt;
  } types[] = {{"f32", dnnl_f32}, {"bf16", dnnl_bf16}};
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i)
    if (!strcmp(s, types[i].name)) return *dt = types[i].dt, 0;
  return -1;
}

/* "src_bf16::blocked:ab:f0" (bias: "...:f0_mask2"): the argument, its type and
 * a plain tag (lowercase letters, one per dimension; ndims is checked later). */
static const char *parse_md(char *tok, struct primitive *p) {
  char *fields[6] = {0};
  int n = 0;
  for (char *f = tok; n < 6; ++n) {
    fields[n] = f;
    char *colon = strchr(f, ':');
    if (!colon) {
      ++n;
      break;
    }
    *colon = 0;
    f = colon + 1;
  }
  if (n < 4) return "memory descriptor not understood";
  char *under = strchr(fields[0], '_');
  if (!under) return "memory descriptor without a data type";
  *under = 0;
  struct tensor *t = !strcmp(fields[0], "src")   ? &p->src
                     : !strcmp(fields[0], "wei") ? &p->wei
                     : !strcmp(fields[0], "bia") ? &p->bia
                     : !strcmp(fields[0], "dst") ? &p->dst
                                                 : NULL;
  if (!t) return "unknown memory argument";
  if (parse_dt(under + 1, &t->dt)) return "data type other than f32 and bf16";
  if (strcmp(fields[2], "blocked")) return "format kind other than blocked";
  if (strlen(fields[3]) >= sizeof t->tag) return "tag too long";
  for (const char *c = fields[3]; *c; ++c)
    if (*c < 'a' || *c > 'l') return "blocked (non-plain) layout";
  strcpy(t->tag, fields[3]);
  t->present = 1;
  t->mask = -1;
  const char *m = n > 4 ? strstr(fields[4], "_mask") : NULL;
  if (m) t->mask = atoi(m + 5);
  return NULL;
}

static int parse_dims(char *s, struct tensor *t) {
  t->ndims = 0;
  for (char *save = NULL, *d = strtok_r(s, "x", &save); d; d = strtok_r(NULL, "x", &save)) {
    char *end;
    const long v = strtol(d, &end, 10);
    if (*end || end == d || v < 0 || t->ndims == DNNL_MAX_NDIMS) return -1;
    t->dims[t->ndims++] = v;
  }
  return t->ndims ? 0 : -1;
}

/* Dense strides from a plain tag: its letters name the dimensions from the
 * outermost to the innermost ("ba": dimension 1 outermost, a column-major
 * matrix). */
static int strides_from_tag(struct tensor *t, const char *tag) {
  if ((int)strlen(tag) != t->ndims) return -1;
  dnnl_dim_t stride = 1;
  for (int i = t->ndims - 1; i >= 0; --i) {
    const int d = tag[i] - 'a';
    if (d >= t->ndims) return -1;
    t->strides[d] = stride;
    stride *= t->dims[d] > 0 ? t->dims[d] : 1;
  }
  return 0;
}

static int parse_alg(const char *name, dnnl_alg_kind_t *alg) {
  static const struct {
    const char *name;
    dnnl_alg_kind_t alg;
  } algs[] = {{"linear", dnnl_eltwise_linear},     {"relu", dnnl_eltwise_relu},   {"gelu_tanh", dnnl_eltwise_gelu_tanh},
              {"gelu_erf", dnnl_eltwise_gelu_erf}, {"swish", dnnl_eltwise_swish}, {"logistic", dnnl_eltwise_logistic},
              {"tanh", dnnl_eltwise_tanh}};
  for (size_t i = 0; i < sizeof algs / sizeof *algs; ++i)
    if (!strcmp(name, algs[i].name)) return *alg = algs[i].alg, 0;
  return -1;
}

static const char *parse_attrs(char *s, struct primitive *p) {
  for (char *save = NULL, *tok = strtok_r(s, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    if (!strcmp(tok, "attr-scratchpad:user")) {
      p->user_scratchpad = 1;
    } else if (!strncmp(tok, "attr-oscale:0:", 14)) {
      p->oscale = strtof(tok + 14, NULL);
    } else if (!strncmp(tok, "attr-post-ops:", 14)) {
      for (char *s2 = NULL, *e = strtok_r(tok + 14, "+", &s2); e; e = strtok_r(NULL, "+", &s2)) {
        if (p->n_post == MAX_POST_OPS) return "too many post-ops";
        struct post_op *po = &p->post[p->n_post++];
        *po = (struct post_op){.scale = 1};
        char *arg[4] = {0};
        int n = 0;
        for (char *s3 = NULL, *a = strtok_r(e, ":", &s3); a && n < 4; a = strtok_r(NULL, ":", &s3)) arg[n++] = a;
        if (!strcmp(arg[0], "sum")) {
          if (n > 2) return "sum post-op with a zero point or data type";
          po->is_sum = 1;
          if (n > 1) po->scale = strtof(arg[1], NULL);
        } else if (!strncmp(arg[0], "eltwise_", 8) && !parse_alg(arg[0] + 8, &po->alg)) {
          po->alpha = n > 1 ? strtof(arg[1], NULL) : 0;
          po->beta = n > 2 ? strtof(arg[2], NULL) : 0;
          po->scale = n > 3 ? strtof(arg[3], NULL) : 1;
        } else {
          return "post-op not rebuilt";
        }
      }
    } else if (strcmp(tok, "attr-scratchpad:library")) {
      return "attribute not rebuilt";
    }
  }
  return NULL;
}

/* One CSV row into p; NULL, or why it is skipped. */
static const char *parse_row(char *line, struct primitive *p) {
  memset(p, 0, sizeof *p);
  p->oscale = 1;
  char *f[8];
  int n = 0;
  for (char *c = line; n < 8; ++n) {
    f[n] = c;
    char *comma = strchr(c, ',');
    if (!comma) {
      ++n;
      break;
    }
    *comma = 0;
    c = comma + 1;
  }
  if (n != 8) return "not 8 fields";
  p->calls = atol(f[0]);
  if (strcmp(f[2], "matmul")) return "primitive kind other than matmul";
  for (char *save = NULL, *tok = strtok_r(f[4], " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    const char *why = parse_md(tok, p);
    if (why) return why;
  }
  if (!p->src.present || !p->wei.present || !p->dst.present) return "src, wei or dst missing";
  const char *why = parse_attrs(f[5], p);
  if (why) return why;
  if (strchr(f[7], '*')) return "runtime dimensions";
  char *dims[3];
  int nd = 0;
  for (char *save = NULL, *d = strtok_r(f[7], ":", &save); d && nd < 3; d = strtok_r(NULL, ":", &save)) dims[nd++] = d;
  if (nd != 3 || parse_dims(dims[0], &p->src) || parse_dims(dims[1], &p->wei) || parse_dims(dims[2], &p->dst))
    return "problem dimensions not understood";
  if (p->bia.present) {
    p->bia.ndims = p->dst.ndims;
    for (int d = 0; d < p->dst.ndims; ++d) {
      const int along = p->bia.mask >= 0 ? (p->bia.mask >> d) & 1 : d == p->dst.ndims - 1;
      p->bia.dims[d] = along ? p->dst.dims[d] : 1;
    }
  }
  struct tensor *all[4] = {&p->src, &p->wei, &p->bia, &p->dst};
  for (int i = 0; i < 4; ++i)
    if (all[i]->present && strides_from_tag(all[i], all[i]->tag)) return "tag does not match the dimensions";
  if (p->dst.ndims < 2 || p->src.ndims != p->dst.ndims || p->wei.ndims != p->dst.ndims)
    return "src, wei and dst of different ranks";
  return NULL;
}

/* ---- memory and the reference --------------------------------------------- */

static size_t elem_size(dnnl_data_type_t dt) { return dt == dnnl_f32 ? 4 : 2; }

static double load(const void *base, dnnl_data_type_t dt, size_t i) {
  if (dt == dnnl_f32) return ((const float *)base)[i];
  return from_bf16(((const uint16_t *)base)[i]);
}

static void fill(void *base, dnnl_data_type_t dt, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = (float)bench_uniform(-1, 1);
    if (dt == dnnl_f32) ((float *)base)[i] = v;
    else ((uint16_t *)base)[i] = to_bf16(v);
  }
}

static size_t elems(const struct tensor *t) {
  size_t n = 1;
  for (int d = 0; d < t->ndims; ++d) n *= (size_t)t->dims[d];
  return n;
}

/* The offset of t's element at the dst-shaped index (batch..., row, col):
 * dimensions of size 1 (broadcast, the bias's) read at 0. */
static size_t offset(const struct tensor *t, const dnnl_dim_t *batch, int nbatch, dnnl_dim_t row, dnnl_dim_t col) {
  size_t off = 0;
  for (int d = 0; d < nbatch + 2; ++d) {
    const dnnl_dim_t i = d < nbatch ? batch[d] : d == nbatch ? row : col;
    off += (size_t)((t->dims[d] == 1 ? 0 : i) * t->strides[d]);
  }
  return off;
}

static double eltwise(const struct post_op *po, double x) {
  double y;
  switch (po->alg) {
    case dnnl_eltwise_linear: y = po->alpha * x + po->beta; break;
    case dnnl_eltwise_relu: y = x > 0 ? x : po->alpha * x; break;
    case dnnl_eltwise_gelu_tanh: y = 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); break;
    case dnnl_eltwise_gelu_erf: y = 0.5 * x * (1 + erf(x / sqrt(2.0))); break;
    case dnnl_eltwise_swish: y = x / (1 + exp(-po->alpha * x)); break;
    case dnnl_eltwise_logistic: y = 1 / (1 + exp(-x)); break;
    default: y = tanh(x); break;
  }
  return po->scale * y;
}

/* One ulp of dt at |x| (f32: 2^-23 |x|, an upper bound). */
static double ulp_of(dnnl_data_type_t dt, double x) {
  if (x == 0) return 0x1p-126;
  int e;
  frexp(fabs(x), &e); /* 2^(e-1) <= |x| < 2^e */
  return ldexp(1.0, e - 1 - (dt == dnnl_f32 ? 23 : 7));
}

/* The worst distance of dst outside the interval a correct computation can
 * give, in ulps of the dst type, over up to CHECKED_ELEMS elements of dst. The
 * interval: acc +- (k + 2) 2^-24 S after the accumulation; a sum post-op adds
 * its term (+- 2^-24 of the result's size for the f32 addition); an eltwise
 * maps the interval (its ends and middle) and widens it by 2^-20 of the
 * sizes of its input and output (oneDNN's f32 approximations of tanh, erf,
 * exp have absolute errors near 1e-7 where the result is tiny). */
static double check(const struct primitive *p, const void *src, const void *wei, const void *bia, const void *dst0,
                    const void *dst) {
  const int nb = p->dst.ndims - 2;
  const dnnl_dim_t k = p->src.dims[nb + 1];
  const size_t total = elems(&p->dst);
  double worst = 0;
  for (int s = 0; s < CHECKED_ELEMS && (size_t)s < total; ++s) {
    size_t flat = total <= CHECKED_ELEMS ? (size_t)s : (size_t)((double)s * (total - 1) / (CHECKED_ELEMS - 1));
    dnnl_dim_t idx[DNNL_MAX_NDIMS];
    for (int d = p->dst.ndims - 1; d >= 0; --d) {
      idx[d] = (dnnl_dim_t)(flat % (size_t)p->dst.dims[d]);
      flat /= (size_t)p->dst.dims[d];
    }
    const dnnl_dim_t i = idx[nb], j = idx[nb + 1];
    double acc = 0, mag = 0;
    for (dnnl_dim_t q = 0; q < k; ++q) {
      const double x = load(src, p->src.dt, offset(&p->src, idx, nb, i, q));
      const double y = load(wei, p->wei.dt, offset(&p->wei, idx, nb, q, j));
      acc += x * y;
      mag += fabs(x * y);
    }
    if (p->bia.present) { /* oneDNN 2: the output scale applies to the bias too */
      const double b = load(bia, p->bia.dt, offset(&p->bia, idx, nb, i, j));
      acc += b, mag += fabs(b);
    }
    acc *= p->oscale, mag *= fabs(p->oscale);
    const size_t at = offset(&p->dst, idx, nb, i, j);
    double lo = acc - (k + 2) * 0x1p-24 * mag, hi = acc + (k + 2) * 0x1p-24 * mag;
    for (int e = 0; e < p->n_post; ++e) {
      const struct post_op *po = &p->post[e];
      if (po->is_sum) {
        const double c = po->scale * load(dst0, p->dst.dt, at);
        const double slack = 0x1p-24 * (fmax(fabs(lo), fabs(hi)) + fabs(c));
        lo += c - slack, hi += c + slack;
      } else {
        const double a = eltwise(po, lo), b = eltwise(po, hi), m = eltwise(po, 0.5 * (lo + hi));
        const double slack = 0x1p-20 * (fmax(fabs(a), fmax(fabs(b), fabs(m))) + fmax(fabs(lo), fabs(hi))) + 0x1p-40;
        lo = fmin(a, fmin(b, m)) - slack, hi = fmax(a, fmax(b, m)) + slack;
      }
    }
    const double got = load(dst, p->dst.dt, at);
    const double outside = got < lo ? lo - got : got > hi ? got - hi : 0;
    const double ratio = isnan(got) ? 1e9 : outside / ulp_of(p->dst.dt, fmax(fabs(got), fmax(fabs(lo), fabs(hi))));
    if (ratio > worst) worst = ratio;
  }
  return worst;
}

/* ---- building, checking and timing ---------------------------------------- */

static dnnl_memory_desc_t md_of(const struct tensor *t) {
  dnnl_memory_desc_t md;
  CHECK(dnnl_memory_desc_init_by_strides(&md, t->ndims, t->dims, t->dt, t->strides));
  return md;
}

struct result {
  double ms, min_ms, err;
  char impl[64];
};

/* NULL, or why the library cannot create the primitive on this CPU (oneDNN
 * 2.6 has no bf16 matmul without AVX-512): the row is then skipped. */
static const char *measure(const struct primitive *p, dnnl_engine_t engine, dnnl_stream_t stream, int warmup,
                           int repeats, struct result *r) {
  dnnl_memory_desc_t src = md_of(&p->src), wei = md_of(&p->wei), dst = md_of(&p->dst), bia;
  if (p->bia.present) bia = md_of(&p->bia);
  dnnl_matmul_desc_t desc;
  CHECK(dnnl_matmul_desc_init(&desc, &src, &wei, p->bia.present ? &bia : NULL, &dst));
  dnnl_primitive_attr_t attr;
  CHECK(dnnl_primitive_attr_create(&attr));
  if (p->user_scratchpad) CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (p->oscale != 1) CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &p->oscale));
  if (p->n_post) {
    dnnl_post_ops_t po;
    CHECK(dnnl_post_ops_create(&po));
    for (int i = 0; i < p->n_post; ++i) {
      const struct post_op *e = &p->post[i];
      if (e->is_sum) CHECK(dnnl_post_ops_append_sum(po, e->scale));
      else CHECK(dnnl_post_ops_append_eltwise(po, e->scale, e->alg, e->alpha, e->beta));
    }
    CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    CHECK(dnnl_post_ops_destroy(po));
  }
  dnnl_primitive_desc_t pd;
  const dnnl_status_t created = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
  if (created == dnnl_unimplemented) {
    dnnl_primitive_attr_destroy(attr);
    return "no implementation on this CPU (oneDNN status unimplemented)";
  }
  CHECK(created);
  const char *impl = NULL;
  CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
  snprintf(r->impl, sizeof r->impl, "%s", impl ? impl : "");
  dnnl_primitive_t prim;
  CHECK(dnnl_primitive_create(&prim, pd));

  const dnnl_memory_desc_t *mds[5] = {
      &src, &wei, p->bia.present ? &bia : NULL, &dst,
      p->user_scratchpad ? dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) : NULL};
  const int args_of[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD};
  const struct tensor *ts[4] = {&p->src, &p->wei, &p->bia, &p->dst};
  void *buf[5] = {0};
  dnnl_memory_t mem[5] = {0};
  dnnl_exec_arg_t args[5];
  int nargs = 0;
  for (int i = 0; i < 5; ++i) {
    if (!mds[i]) continue;
    const size_t bytes = dnnl_memory_desc_get_size(mds[i]);
    buf[i] = aligned_alloc(64, (bytes + 64) / 64 * 64);
    if (i < 4) fill(buf[i], ts[i]->dt, bytes / elem_size(ts[i]->dt));
    CHECK(dnnl_memory_create(&mem[i], mds[i], engine, buf[i]));
    args[nargs++] = (dnnl_exec_arg_t){args_of[i], mem[i]};
  }
  const size_t dst_bytes = dnnl_memory_desc_get_size(&dst);
  void *dst0 = malloc(dst_bytes);
  memcpy(dst0, buf[3], dst_bytes);
  CHECK(dnnl_primitive_execute(prim, stream, nargs, args));
  CHECK(dnnl_stream_wait(stream));
  r->err = check(p, buf[0], buf[1], buf[2], dst0, buf[3]);
  free(dst0);

  for (int i = 0; i < warmup; ++i) CHECK(dnnl_primitive_execute(prim, stream, nargs, args));
  CHECK(dnnl_stream_wait(stream));
  double *t = malloc(repeats * sizeof *t);
  for (int i = 0; i < repeats; ++i) {
    const double t0 = 1e3 * bench_now_s();
    CHECK(dnnl_primitive_execute(prim, stream, nargs, args));
    CHECK(dnnl_stream_wait(stream));
    t[i] = 1e3 * bench_now_s() - t0;
  }
  qsort(t, repeats, sizeof *t, bench_cmp_double);
  r->min_ms = t[0];
  r->ms = repeats % 2 ? t[repeats / 2] : 0.5 * (t[repeats / 2 - 1] + t[repeats / 2]);
  free(t);

  for (int i = 0; i < 5; ++i) {
    if (mem[i]) dnnl_memory_destroy(mem[i]);
    free(buf[i]);
  }
  dnnl_primitive_destroy(prim);
  dnnl_primitive_desc_destroy(pd);
  dnnl_primitive_attr_destroy(attr);
  return NULL;
}

static void usage(void) { fprintf(stderr, "usage: " PROG " [--warmup N] [--repeats N] [--quick] PRIMITIVES.csv\n"); }

int main(int argc, char **argv) {
  int warmup = 3, repeats = 20;
  const char *path = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) {
      warmup = 1, repeats = 3;
    } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
      warmup = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = atoi(argv[++i]);
    } else if (argv[i][0] != '-' && !path) {
      path = argv[i];
    } else {
      usage();
      return 2;
    }
  }
  if (!path || warmup < 0 || repeats < 1) {
    usage();
    return 2;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, PROG ": cannot open %s\n", path);
    return 2;
  }
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  const char *threads = getenv("OMP_NUM_THREADS");
  char *out = NULL;
  size_t out_len = 0;
  FILE *json = open_memstream(&out, &out_len);
  fprintf(json, "{\"threads\": %s, \"warmup\": %d, \"repeats\": %d, \"primitives\": [", threads ? threads : "null",
          warmup, repeats);
  char line[4096];
  int index = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#' || !strncmp(line, "calls,", 6)) continue;
    struct primitive p;
    const char *why = parse_row(line, &p);
    struct result r;
    if (!why) why = measure(&p, engine, stream, warmup, repeats, &r);
    fprintf(json, "%s{\"index\": %d, ", index ? ", " : "", index);
    if (why) {
      fprintf(stderr, PROG ": row %d skipped: %s\n", index, why);
      fprintf(json, "\"calls\": %ld, \"skipped\": \"%s\"}", p.calls, why);
    } else {
      if (!(r.err <= 1)) {
        fprintf(stderr, PROG ": row %d: result off the reference (worst %.3g of the bound)\n", index, r.err);
        bad = 1;
      }
      fprintf(json, "\"calls\": %ld, \"ms\": %.6f, \"min_ms\": %.6f, \"impl\": \"%s\", \"err\": %.4g}", p.calls, r.ms,
              r.min_ms, r.impl, r.err);
    }
    ++index;
  }
  fclose(f);
  fprintf(json, "]}");
  fclose(json);
  printf("%s\n", out);
  free(out);
  dnnl_stream_destroy(stream);
  dnnl_engine_destroy(engine);
  return bad;
}
