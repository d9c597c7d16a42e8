/* A recorded sgemm_ trace (the CSV of perf/workloads, or HCOPS_VERBOSE exec
 * lines' fields 4-13) and the timed replay of it, shared by the replay
 * programs (tools/hcops-replay; perf/'s hcops-dnnl-bf16, hcops-fp32-error), so that
 * every peer reads the same calls, gets the same operand values and is timed
 * the same way. */
#ifndef HCOPS_PERF_TRACE_H
#define HCOPS_PERF_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* One call's arguments, column-major BLAS semantics. */
struct call {
  char ta, tb;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
};

struct trace {
  struct call *calls;
  size_t n;
  size_t max_a, max_b, max_c; /* elements the largest operand of each kind spans */
};

/* Reads path; 0 on success, else says why on stderr (prefixed prog) and returns 2. */
int trace_read(const char *prog, const char *path, struct trace *t);
size_t call_a_elems(const struct call *c);
size_t call_b_elems(const struct call *c);
size_t call_c_elems(const struct call *c);
/* The attention products (m, n, k <= 256), reported apart from the Linear layers. */
int call_is_attention(const struct call *c);
int call_same(const struct call *x, const struct call *y);

enum elem { ELEM_F32, ELEM_F64, ELEM_BF16 };
/* Values in [-0.5, 0.5) from the element index and stride: no overflow, no
 * denormals, whatever the shape; the same values in every precision (bf16:
 * the f32 value rounded). */
void trace_fill(void *x, size_t n, size_t stride, enum elem kind);

uint16_t to_bf16(float f); /* round to nearest even, NaN kept quiet */
float from_bf16(uint16_t h);

struct timing {
  double linear_s, attention_s;         /* of the fastest pass */
  double linear_gflop, attention_gflop; /* 2 m n k per call */
};
/* Replays t through run(call, ctx) once to warm up (page faults, thread pools,
 * packing buffers), then repeats times. */
struct timing trace_time(const struct trace *t, int repeats, void (*run)(const struct call *, void *), void *ctx);
/* The JSON line of the replay programs: calls and timing, then extra
 * (", \"key\": value" pairs, or NULL) before the closing brace. */
void timing_print(const struct trace *t, const struct timing *r, const char *extra);

#endif
