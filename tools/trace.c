/* The trace reader and timed replay of trace.h. */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

size_t call_a_elems(const struct call *c) { return (size_t)c->lda * (c->ta == 'N' ? c->k : c->m); }
size_t call_b_elems(const struct call *c) { return (size_t)c->ldb * (c->tb == 'N' ? c->n : c->k); }
size_t call_c_elems(const struct call *c) { return (size_t)c->ldc * c->n; }
int call_is_attention(const struct call *c) { return c->m <= 256 && c->n <= 256 && c->k <= 256; }

int call_same(const struct call *x, const struct call *y) {
  return x->ta == y->ta && x->tb == y->tb && x->m == y->m && x->n == y->n && x->k == y->k && x->lda == y->lda &&
         x->ldb == y->ldb && x->ldc == y->ldc && x->alpha == y->alpha && x->beta == y->beta;
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

int trace_read(const char *prog, const char *path, struct trace *t) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot open %s\n", prog, path);
    return 2;
  }
  size_t cap = 1024;
  memset(t, 0, sizeof *t);
  t->calls = malloc(cap * sizeof *t->calls);
  t->max_a = t->max_b = t->max_c = 1;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    struct call c;
    if (sscanf(line, " %c,%c,%d,%d,%d,%f,%d,%d,%f,%d", &c.ta, &c.tb, &c.m, &c.n, &c.k, &c.alpha, &c.lda, &c.ldb,
               &c.beta, &c.ldc) != 10)
      continue; /* header */
    if (t->n == cap) t->calls = realloc(t->calls, (cap *= 2) * sizeof *t->calls);
    t->calls[t->n++] = c;
    t->max_a = max_size(t->max_a, call_a_elems(&c));
    t->max_b = max_size(t->max_b, call_b_elems(&c));
    t->max_c = max_size(t->max_c, call_c_elems(&c));
  }
  fclose(f);
  if (!t->n) {
    fprintf(stderr, "%s: %s has no call (expected lines transa,transb,m,n,k,alpha,lda,ldb,beta,ldc)\n", prog, path);
    return 2;
  }
  return 0;
}

uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void trace_fill(void *x, size_t n, size_t stride, enum elem kind) {
  for (size_t i = 0; i < n; ++i) {
    const double v = (double)((i * stride) % 1000) / 1000.0 - 0.5;
    if (kind == ELEM_F64) ((double *)x)[i] = v;
    else if (kind == ELEM_F32) ((float *)x)[i] = (float)v;
    else ((uint16_t *)x)[i] = to_bf16((float)v);
  }
}

struct timing trace_time(const struct trace *t, int repeats, void (*run)(const struct call *, void *), void *ctx) {
  double flops[2] = {0, 0}, best[2] = {1e30, 1e30};
  for (size_t i = 0; i < t->n; ++i)
    flops[call_is_attention(&t->calls[i])] += 2.0 * t->calls[i].m * t->calls[i].n * t->calls[i].k;
  for (int r = 0; r <= repeats; ++r) {
    double part[2] = {0, 0};
    for (size_t i = 0; i < t->n; ++i) {
      const double t0 = bench_now_s();
      run(&t->calls[i], ctx);
      part[call_is_attention(&t->calls[i])] += bench_now_s() - t0;
    }
    if (r == 0) continue; /* warm-up */
    if (part[0] + part[1] < best[0] + best[1]) {
      best[0] = part[0];
      best[1] = part[1];
    }
  }
  return (struct timing){best[0], best[1], flops[0] * 1e-9, flops[1] * 1e-9};
}

void timing_print(const struct trace *t, const struct timing *r, const char *extra) {
  printf(
      "{\"calls\": %zu, \"linear_s\": %.6f, \"attention_s\": %.6f, \"linear_gflop\": %.3f, "
      "\"attention_gflop\": %.3f%s}\n",
      t->n, r->linear_s, r->attention_s, r->linear_gflop, r->attention_gflop, extra ? extra : "");
}
