/* libhcops_mpi gives the results of plain MPI. Linked against
 * libhcops_mpi.la, so its MPI_Iallreduce/MPI_Allreduce/MPI_Wait* interpose on
 * the program's, while PMPI_Allreduce/PMPI_Iallreduce (called directly) are
 * the MPI library's own: every result of the wrapper is compared with them on
 * the same input.
 *
 *   mpirun -np N ./test_mpi_allreduce LEVEL [big|quick]
 *
 * LEVEL (none = MPI_Init, single, funneled, serialized, multiple) is the
 * thread level asked for; MPI_Init_thread's provided and MPI_Query_thread
 * must both be it. "big" adds 16 Mi-element reductions; "quick" runs the
 * predefined ops on MPI_COMM_WORLD at 3 sizes instead of 8.
 *
 * Checked: every predefined op (SUM PROD MIN MAX LAND LOR LXOR BAND BOR BXOR
 * MINLOC MAXLOC) on every predefined C type it is defined for (the integers
 * of every width and sign, float, double, long double, C_BOOL, BYTE, the C
 * complex types, and the MINLOC/MAXLOC pair types), at 0, 1, 7, 1000
 * elements, both sides of the 64 KiB offload threshold and 1 MiB, through
 * MPI_Iallreduce (completed by MPI_Wait, an MPI_Test loop, MPI_Waitall,
 * MPI_Waitany, MPI_Waitsome or an MPI_Testall loop) and MPI_Allreduce, each
 * also with MPI_IN_PLACE, against PMPI_Allreduce (inputs are small integers,
 * so every order of reduction gives the same bits); random floats against
 * PMPI_Iallreduce bit for bit; user ops (commutative, and a non-commutative
 * 2x2 matrix product on a contiguous type); a strided vector type with a user
 * op; MPI_COMM_SELF, MPI_Comm_dup and MPI_Comm_split communicators freed
 * while idle (and their handles reused); an error (predefined op on a derived
 * type) returned as plain MPI returns it under MPI_ERRORS_RETURN. The send
 * buffer must be left untouched and every rank must get the same bits.
 *
 * Each rank ends with "rank R: expect N nonblocking, M blocking": the
 * allreduces the wrapper should have offloaded (every MPI_Iallreduce, every
 * MPI_Allreduce of at least rank 0's HCOPS_MPI_OFFLOAD_MIN bytes), which
 * test_mpi_allreduce.sh compares with HCOPS_MPI_VERBOSE's line.
 */
#include <mpi.h>

#include "mpi_check.h"

#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static long checks, failures;
static long expect_nonblocking, expect_blocking;
static size_t offload_min = 64 << 10;
static double t_phase;

/* HCOPS_TEST_TIMING=1: seconds per phase on stderr (rank 0). */
static void phase(const char *name) {
  const double t = MPI_Wtime();
  if (rank == 0 && getenv("HCOPS_TEST_TIMING")) fprintf(stderr, "phase %s: %.2f s\n", name, t - t_phase);
  t_phase = t;
}

static uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* ---- predefined types ---- */
enum { K_SIGNED, K_UNSIGNED, K_FLOAT, K_COMPLEX, K_BOOL, K_BYTE, K_PAIR };
enum {
  T_INT,
  T_LONG,
  T_FLOAT,
  T_DOUBLE,
  T_CHAR,
  T_SCHAR,
  T_UNSIGNED,
  T_INT64,
  T_BOOL,
  T_BYTE,
  T_SHORT,
  T_USHORT,
  T_ULONG,
  T_LLONG,
  T_ULLONG,
  T_UCHAR,
  T_LDOUBLE,
  T_INT8,
  T_INT16,
  T_INT32,
  T_UINT8,
  T_UINT16,
  T_UINT32,
  T_UINT64,
  T_CFLOAT,
  T_CDOUBLE,
  T_2INT,
  T_DOUBLE_INT,
  T_FLOAT_INT,
  T_LONG_INT,
  T_SHORT_INT,
  T_LDOUBLE_INT,
  NTYPES
};
struct tinfo {
  MPI_Datatype type;
  const char *name;
  int kind;
};
static struct tinfo types[NTYPES];

struct d_int {
  double v;
  int i;
};
struct f_int {
  float v;
  int i;
};
struct l_int {
  long v;
  int i;
};
struct i_int {
  int v;
  int i;
};
struct s_int {
  short v;
  int i;
};
struct ld_int {
  long double v;
  int i;
};

static void init_types(void) {
  const struct tinfo t[NTYPES] = {
      [T_INT] = {MPI_INT, "MPI_INT", K_SIGNED},
      [T_LONG] = {MPI_LONG, "MPI_LONG", K_SIGNED},
      [T_FLOAT] = {MPI_FLOAT, "MPI_FLOAT", K_FLOAT},
      [T_DOUBLE] = {MPI_DOUBLE, "MPI_DOUBLE", K_FLOAT},
      [T_CHAR] = {MPI_CHAR, "MPI_CHAR", K_SIGNED},
      [T_SCHAR] = {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", K_SIGNED},
      [T_UNSIGNED] = {MPI_UNSIGNED, "MPI_UNSIGNED", K_UNSIGNED},
      [T_INT64] = {MPI_INT64_T, "MPI_INT64_T", K_SIGNED},
      [T_BOOL] = {MPI_C_BOOL, "MPI_C_BOOL", K_BOOL},
      [T_BYTE] = {MPI_BYTE, "MPI_BYTE", K_BYTE},
      [T_SHORT] = {MPI_SHORT, "MPI_SHORT", K_SIGNED},
      [T_USHORT] = {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", K_UNSIGNED},
      [T_ULONG] = {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", K_UNSIGNED},
      [T_LLONG] = {MPI_LONG_LONG, "MPI_LONG_LONG", K_SIGNED},
      [T_ULLONG] = {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", K_UNSIGNED},
      [T_UCHAR] = {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", K_UNSIGNED},
      [T_LDOUBLE] = {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", K_FLOAT},
      [T_INT8] = {MPI_INT8_T, "MPI_INT8_T", K_SIGNED},
      [T_INT16] = {MPI_INT16_T, "MPI_INT16_T", K_SIGNED},
      [T_INT32] = {MPI_INT32_T, "MPI_INT32_T", K_SIGNED},
      [T_UINT8] = {MPI_UINT8_T, "MPI_UINT8_T", K_UNSIGNED},
      [T_UINT16] = {MPI_UINT16_T, "MPI_UINT16_T", K_UNSIGNED},
      [T_UINT32] = {MPI_UINT32_T, "MPI_UINT32_T", K_UNSIGNED},
      [T_UINT64] = {MPI_UINT64_T, "MPI_UINT64_T", K_UNSIGNED},
      [T_CFLOAT] = {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_COMPLEX},
      [T_CDOUBLE] = {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_COMPLEX},
      [T_2INT] = {MPI_2INT, "MPI_2INT", K_PAIR},
      [T_DOUBLE_INT] = {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", K_PAIR},
      [T_FLOAT_INT] = {MPI_FLOAT_INT, "MPI_FLOAT_INT", K_PAIR},
      [T_LONG_INT] = {MPI_LONG_INT, "MPI_LONG_INT", K_PAIR},
      [T_SHORT_INT] = {MPI_SHORT_INT, "MPI_SHORT_INT", K_PAIR},
      [T_LDOUBLE_INT] = {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", K_PAIR},
  };
  memcpy(types, t, sizeof t);
}

static size_t extent_of(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  return (size_t)ext;
}
static size_t size_of(MPI_Datatype t) {
  int s;
  MPI_Type_size(t, &s);
  return (size_t)s;
}

static void put(int tid, void *buf, size_t i, long v, int loc) {
  switch (tid) {
    case T_INT: ((int *)buf)[i] = (int)v; break;
    case T_LONG: ((long *)buf)[i] = v; break;
    case T_FLOAT: ((float *)buf)[i] = (float)v; break;
    case T_DOUBLE: ((double *)buf)[i] = (double)v; break;
    case T_CHAR: ((char *)buf)[i] = (char)v; break;
    case T_SCHAR: ((signed char *)buf)[i] = (signed char)v; break;
    case T_UNSIGNED: ((unsigned *)buf)[i] = (unsigned)v; break;
    case T_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case T_BOOL: ((bool *)buf)[i] = v != 0; break;
    case T_BYTE: ((unsigned char *)buf)[i] = (unsigned char)v; break;
    case T_SHORT: ((short *)buf)[i] = (short)v; break;
    case T_USHORT: ((unsigned short *)buf)[i] = (unsigned short)v; break;
    case T_ULONG: ((unsigned long *)buf)[i] = (unsigned long)v; break;
    case T_LLONG: ((long long *)buf)[i] = (long long)v; break;
    case T_ULLONG: ((unsigned long long *)buf)[i] = (unsigned long long)v; break;
    case T_UCHAR: ((unsigned char *)buf)[i] = (unsigned char)v; break;
    case T_LDOUBLE: ((long double *)buf)[i] = (long double)v; break;
    case T_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case T_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case T_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case T_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case T_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case T_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case T_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    /* Gaussian integers (imaginary part -1, 0 or 1): sums and products of a
     * few are exact in any order. */
    case T_CFLOAT: ((float _Complex *)buf)[i] = (float)v + (float)(loc % 3 - 1) * I; break;
    case T_CDOUBLE: ((double _Complex *)buf)[i] = (double)v + (double)(loc % 3 - 1) * I; break;
    case T_2INT: ((struct i_int *)buf)[i] = (struct i_int){(int)v, loc}; break;
    case T_DOUBLE_INT: ((struct d_int *)buf)[i] = (struct d_int){(double)v, loc}; break;
    case T_FLOAT_INT: ((struct f_int *)buf)[i] = (struct f_int){(float)v, loc}; break;
    case T_LONG_INT: ((struct l_int *)buf)[i] = (struct l_int){v, loc}; break;
    case T_SHORT_INT: ((struct s_int *)buf)[i] = (struct s_int){(short)v, loc}; break;
    case T_LDOUBLE_INT: ((struct ld_int *)buf)[i] = (struct ld_int){(long double)v, loc}; break;
  }
}

/* Equal as MPI defines the result: pair types field by field and long
 * double by value (their padding is not part of the type), complex by value
 * (a product's zero may have either sign). Returns the first differing
 * element or -1. */
static long differs(int tid, const void *a, const void *b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    bool same;
    switch (tid) {
      case T_2INT: {
        const struct i_int *x = (const struct i_int *)a + i, *y = (const struct i_int *)b + i;
        same = x->v == y->v && x->i == y->i;
        break;
      }
      case T_DOUBLE_INT: {
        const struct d_int *x = (const struct d_int *)a + i, *y = (const struct d_int *)b + i;
        same = !memcmp(&x->v, &y->v, sizeof x->v) && x->i == y->i;
        break;
      }
      case T_FLOAT_INT: {
        const struct f_int *x = (const struct f_int *)a + i, *y = (const struct f_int *)b + i;
        same = !memcmp(&x->v, &y->v, sizeof x->v) && x->i == y->i;
        break;
      }
      case T_LONG_INT: {
        const struct l_int *x = (const struct l_int *)a + i, *y = (const struct l_int *)b + i;
        same = x->v == y->v && x->i == y->i;
        break;
      }
      case T_SHORT_INT: {
        const struct s_int *x = (const struct s_int *)a + i, *y = (const struct s_int *)b + i;
        same = x->v == y->v && x->i == y->i;
        break;
      }
      case T_LDOUBLE_INT: {
        const struct ld_int *x = (const struct ld_int *)a + i, *y = (const struct ld_int *)b + i;
        same = x->v == y->v && x->i == y->i;
        break;
      }
      case T_LDOUBLE: same = ((const long double *)a)[i] == ((const long double *)b)[i]; break;
      case T_CFLOAT: same = ((const float _Complex *)a)[i] == ((const float _Complex *)b)[i]; break;
      case T_CDOUBLE: same = ((const double _Complex *)a)[i] == ((const double _Complex *)b)[i]; break;
      default: {
        const size_t s = size_of(types[tid].type);
        same = !memcmp((const char *)a + i * s, (const char *)b + i * s, s);
      }
    }
    if (!same) return (long)i;
  }
  return -1;
}

/* ---- predefined ops ---- */
enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MINLOC, O_MAXLOC, NOPS };
static const struct {
  MPI_Op op;
  const char *name;
} ops[NOPS] = {{MPI_SUM, "SUM"},   {MPI_PROD, "PROD"}, {MPI_MIN, "MIN"},       {MPI_MAX, "MAX"},
               {MPI_LAND, "LAND"}, {MPI_LOR, "LOR"},   {MPI_LXOR, "LXOR"},     {MPI_BAND, "BAND"},
               {MPI_BOR, "BOR"},   {MPI_BXOR, "BXOR"}, {MPI_MINLOC, "MINLOC"}, {MPI_MAXLOC, "MAXLOC"}};

static bool valid(int oid, int tid) {
  const int k = types[tid].kind;
  switch (oid) {
    case O_SUM:
    case O_PROD: return k == K_SIGNED || k == K_UNSIGNED || k == K_FLOAT || k == K_COMPLEX;
    case O_MIN:
    case O_MAX: return k == K_SIGNED || k == K_UNSIGNED || k == K_FLOAT;
    case O_LAND:
    case O_LOR:
    case O_LXOR: return (k == K_SIGNED && tid != T_CHAR) || k == K_UNSIGNED || k == K_BOOL;
    case O_BAND:
    case O_BOR:
    case O_BXOR: return (k == K_SIGNED && tid != T_CHAR) || k == K_UNSIGNED || k == K_BYTE;
    default: return k == K_PAIR;
  }
}

/* Element i of this rank's input: values whose reduction fits the type and is
 * exact in any order. */
static void fill(int tid, int oid, void *buf, size_t count, int seed) {
  const bool narrow = tid == T_CHAR || tid == T_SCHAR || tid == T_BOOL || tid == T_BYTE || tid == T_UCHAR ||
                      tid == T_INT8 || tid == T_UINT8;
  const bool unsig = types[tid].kind == K_UNSIGNED || tid == T_BYTE;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(((uint64_t)seed << 40) ^ ((uint64_t)rank << 32) ^ i);
    long v;
    switch (oid) {
      case O_SUM: v = unsig ? (long)(h % 21) : (long)(h % 21) - 10; break;
      case O_PROD: {
        static const long f[] = {1, -1, 2, 1, -2, 1, 1, -1};
        v = f[h % 8];
        if (unsig) v = v < 0 ? -v : v;
        break;
      }
      case O_MIN:
      case O_MAX: v = unsig ? (long)(h % 201) : (long)(h % 201) - 100; break;
      case O_LAND:
      case O_LOR:
      case O_LXOR: v = (long)(h % 3); break;  // 0, 1 or 2 (true, not 1)
      case O_BAND:
      case O_BOR:
      case O_BXOR:
        v = narrow ? (long)(h & 0x7f) : unsig ? (long)(h & 0xffffffffu) : (long)(h >> 2);
        if (tid == T_INT) v = (int)(h >> 33);
        if (tid == T_BYTE) v = (long)(h & 0xff);
        break;
      default: v = (long)(h % 11) - 5;  // MINLOC/MAXLOC: many ties, so the index rule matters
    }
    put(tid, buf, i, v, (int)((rank * 7919 + i * 31) % 100003));
  }
}

/* ---- completion ---- */
static int complete(MPI_Request *req, int how) {
  int rc = MPI_SUCCESS, flag = 0, idx = -1, outcount = 0, indices[1];
  MPI_Status st;
  switch (how % 6) {
    case 0: rc = MPI_Wait(req, &st); break;
    case 1:
      while (!flag && rc == MPI_SUCCESS) rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
      break;
    case 2: rc = MPI_Waitall(1, req, MPI_STATUSES_IGNORE); break;
    case 3:
      rc = MPI_Waitany(1, req, &idx, &st);
      CHECK(idx == 0, "MPI_Waitany index %d", idx);
      break;
    case 4:
      rc = MPI_Waitsome(1, req, &outcount, indices, MPI_STATUSES_IGNORE);
      CHECK(outcount == 1 && indices[0] == 0, "MPI_Waitsome outcount %d", outcount);
      break;
    case 5:
      while (!flag && rc == MPI_SUCCESS) rc = MPI_Testall(1, req, &flag, MPI_STATUSES_IGNORE);
      break;
  }
  CHECK(*req == MPI_REQUEST_NULL, "request not freed by completion method %d", how % 6);
  return rc;
}
static int completions;

/* Same bits on every rank: compare a hash of the result with rank 0's. */
static void check_same_everywhere(MPI_Comm comm, const void *buf, size_t bytes, const char *what) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ ((const unsigned char *)buf)[i]) * 1099511628211ull;
  uint64_t root = h;
  PMPI_Bcast(&root, 1, MPI_UINT64_T, 0, comm);
  CHECK(root == h, "%s: result differs between ranks", what);
}

static void count_offloads(MPI_Datatype type, int count, bool blocking) {
  if (!blocking) ++expect_nonblocking;
  else if ((size_t)count * size_of(type) >= offload_min) ++expect_blocking;
}

/* Padding bytes hold whatever each algorithm left there. */
static bool has_padding(int tid) { return tid == T_LDOUBLE || types[tid].kind == K_PAIR; }

/* One reduction through the wrapper four ways, each against PMPI_Allreduce. */
static void run_case(MPI_Comm comm, int tid, int oid, int count, int seed, const char *where) {
  const MPI_Datatype type = types[tid].type;
  const MPI_Op op = ops[oid].op;
  const size_t bytes = (size_t)(count > 0 ? count : 1) * extent_of(type);
  unsigned char *send = malloc(bytes), *pristine = malloc(bytes), *ref = malloc(bytes), *out = malloc(bytes);
  char what[160];
  memset(send, 0x3c, bytes);
  fill(tid, oid, send, (size_t)count, seed);
  memcpy(pristine, send, bytes);
  memset(ref, 0xa5, bytes);
  int rc = PMPI_Allreduce(send, ref, count, type, op, comm);
  CHECK(rc == MPI_SUCCESS, "PMPI_Allreduce rc %d", rc);

  for (int way = 0; way < 4; ++way) {
    const bool in_place = way >= 2, blocking = way % 2;
    snprintf(what, sizeof what, "%s %s %s count %d %s%s", where, ops[oid].name, types[tid].name, count,
             blocking ? "MPI_Allreduce" : "MPI_Iallreduce", in_place ? " in place" : "");
    memset(out, 0x5a, bytes);
    if (in_place) memcpy(out, send, bytes);
    const void *sbuf = in_place ? MPI_IN_PLACE : send;
    if (blocking) {
      rc = MPI_Allreduce(sbuf, out, count, type, op, comm);
    } else {
      MPI_Request req = MPI_REQUEST_NULL;
      rc = MPI_Iallreduce(sbuf, out, count, type, op, comm, &req);
      CHECK(rc == MPI_SUCCESS && req != MPI_REQUEST_NULL, "%s: start rc %d", what, rc);
      if (rc == MPI_SUCCESS) rc = complete(&req, completions++);
    }
    count_offloads(type, count, blocking);
    CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    const long d = differs(tid, out, ref, (size_t)count);
    CHECK(d < 0, "%s: element %ld differs from PMPI_Allreduce", what, d);
    CHECK(!memcmp(send, pristine, bytes), "%s: send buffer modified", what);
    if (way == 0 && !has_padding(tid)) check_same_everywhere(comm, out, (size_t)count * extent_of(type), what);
  }
  free(send);
  free(pristine);
  free(ref);
  free(out);
}

static int counts_for(int tid, int *counts) {
  const int s = (int)size_of(types[tid].type);
  const int b = (int)(offload_min / (size_t)s);
  int n = 0;
  counts[n++] = 0;
  counts[n++] = 1;
  counts[n++] = 7;
  counts[n++] = 1000;
  counts[n++] = b - 1;  // just under the offload threshold (in bytes)
  counts[n++] = b;
  counts[n++] = b + 1;
  counts[n++] = (1 << 20) / s;  // 1 MiB
  return n;
}

static void all_predefined(MPI_Comm comm, const char *where, bool sizes_all) {
  int counts[8];
  for (int oid = 0; oid < NOPS; ++oid)
    for (int tid = 0; tid < NTYPES; ++tid) {
      if (!valid(oid, tid)) continue;
      const int n = counts_for(tid, counts);
      for (int c = 0; c < n; ++c)
        if (sizes_all || c == 1 || c == 3 || c == 6) run_case(comm, tid, oid, counts[c], oid * 100 + tid, where);
    }
}

/* A few cases on a communicator other than MPI_COMM_WORLD. */
static void some_cases(MPI_Comm comm, const char *where) {
  run_case(comm, T_INT, O_SUM, 1000, 1, where);
  run_case(comm, T_DOUBLE, O_MAX, (int)(offload_min / sizeof(double)) + 5, 2, where);
  run_case(comm, T_FLOAT, O_SUM, (1 << 20) / 4, 3, where);
  run_case(comm, T_DOUBLE_INT, O_MINLOC, 300, 4, where);
  run_case(comm, T_BOOL, O_LXOR, 77, 5, where);
  run_case(comm, T_UNSIGNED, O_BXOR, 0, 6, where);
}

/* ---- random floats: bit for bit what plain MPI's Iallreduce gives ---- */
static void random_floats(MPI_Comm comm, MPI_Datatype type, int count, int seed) {
  const size_t s = size_of(type), bytes = (size_t)(count > 0 ? count : 1) * s;
  unsigned char *send = malloc(bytes), *iref = malloc(bytes), *ref = malloc(bytes), *out = malloc(bytes);
  for (int i = 0; i < count; ++i) {
    const double v =
        (double)(mix(((uint64_t)seed << 40) ^ ((uint64_t)rank << 32) ^ (uint64_t)i) >> 11) / 9007199254740992.0 - 0.5;
    if (type == MPI_FLOAT) ((float *)send)[i] = (float)v;
    else ((double *)send)[i] = v * 1e3;
  }
  char what[120];
  snprintf(what, sizeof what, "random %s count %d", type == MPI_FLOAT ? "float" : "double", count);
  MPI_Request req;
  PMPI_Iallreduce(send, iref, count, type, MPI_SUM, comm, &req);
  PMPI_Wait(&req, MPI_STATUS_IGNORE);
  PMPI_Allreduce(send, ref, count, type, MPI_SUM, comm);

  memset(out, 0, bytes);
  MPI_Iallreduce(send, out, count, type, MPI_SUM, comm, &req);
  complete(&req, completions++);
  count_offloads(type, count, false);
  CHECK(!memcmp(out, iref, (size_t)count * s), "%s: MPI_Iallreduce differs from PMPI_Iallreduce", what);
  check_same_everywhere(comm, out, (size_t)count * s, what);

  /* MPI_Allreduce offloaded is an Iallreduce underneath: its bits are those of
   * PMPI_Iallreduce (offloaded) or PMPI_Allreduce (passed through). Open MPI's
   * two algorithms may round differently (e.g. 3 ranks, 64 KiB), so the two
   * references need not agree with each other, only closely. */
  memset(out, 0, bytes);
  MPI_Allreduce(send, out, count, type, MPI_SUM, comm);
  count_offloads(type, count, true);
  CHECK(!memcmp(out, iref, (size_t)count * s) || !memcmp(out, ref, (size_t)count * s),
        "%s: MPI_Allreduce is neither PMPI_Iallreduce's nor PMPI_Allreduce's result", what);
  check_same_everywhere(comm, out, (size_t)count * s, what);
  double worst = 0;
  for (int i = 0; i < count; ++i) {
    const double a = type == MPI_FLOAT ? ((float *)out)[i] : ((double *)out)[i];
    const double b = type == MPI_FLOAT ? ((float *)ref)[i] : ((double *)ref)[i];
    const double e = fabs(a - b) / (type == MPI_FLOAT ? 1e-6 : 1e-12);
    if (e > worst) worst = e;
  }
  CHECK(worst <= 4 * nranks, "%s: MPI_Allreduce off PMPI_Allreduce by %g (scaled)", what, worst);
  free(send);
  free(iref);
  free(ref);
  free(out);
}

/* ---- user-defined ops ---- */
static void sum_u32(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((uint32_t *)inout)[i] += ((uint32_t *)in)[i];
}

/* 2x2 matrices mod 65521 (one MPI_Type_contiguous(4, MPI_INT) each):
 * inout = in x inout, in coming from the lower ranks. Associative, not
 * commutative: the result is M_0 M_1 ... M_{n-1}. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int e = 0; e < *len; ++e) {
    const int *a = (const int *)in + 4 * e;
    int *b = (int *)inout + 4 * e;
    const long r0 = ((long)a[0] * b[0] + (long)a[1] * b[2]) % 65521,
               r1 = ((long)a[0] * b[1] + (long)a[1] * b[3]) % 65521;
    const long r2 = ((long)a[2] * b[0] + (long)a[3] * b[2]) % 65521,
               r3 = ((long)a[2] * b[1] + (long)a[3] * b[3]) % 65521;
    b[0] = (int)r0, b[1] = (int)r1, b[2] = (int)r2, b[3] = (int)r3;
  }
}

static void matrix_of(int r, int e, int *m) {
  for (int k = 0; k < 4; ++k) m[k] = (int)(mix(((uint64_t)r << 32) ^ (uint64_t)(4 * e + k)) % 65521);
}

/* MPI_Type_vector(3, 2, 4, MPI_FLOAT): the floats at 0,1,4,5,8,9 of each
 * 10-float extent; the user op adds them and leaves the gaps alone. */
static void vec_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int e = 0; e < *len; ++e)
    for (int b = 0; b < 3; ++b)
      for (int j = 0; j < 2; ++j) ((float *)inout)[10 * e + 4 * b + j] += ((float *)in)[10 * e + 4 * b + j];
}

static void user_ops(MPI_Comm comm, const char *where) {
  int csize, crank;
  MPI_Comm_size(comm, &csize);
  MPI_Comm_rank(comm, &crank);
  char what[160];
  /* commutative */
  MPI_Op usum;
  MPI_Op_create(sum_u32, 1, &usum);
  const int ncounts[] = {0, 1, 1000, 16384, 16385, 300000};
  for (int c = 0; c < 6; ++c) {
    const int n = ncounts[c];
    uint32_t *send = malloc(4 * (size_t)(n + 1)), *ref = malloc(4 * (size_t)(n + 1)),
             *out = malloc(4 * (size_t)(n + 1));
    for (int i = 0; i < n; ++i) send[i] = (uint32_t)mix((uint64_t)rank * 1000003 + (uint64_t)i);
    PMPI_Allreduce(send, ref, n, MPI_UINT32_T, usum, comm);
    for (int way = 0; way < 3; ++way) {
      snprintf(what, sizeof what, "%s commutative user op count %d way %d", where, n, way);
      memset(out, 0, 4 * (size_t)(n + 1));
      MPI_Request req;
      if (way == 0) {
        MPI_Iallreduce(send, out, n, MPI_UINT32_T, usum, comm, &req);
        complete(&req, completions++);
      } else if (way == 1) {
        MPI_Allreduce(send, out, n, MPI_UINT32_T, usum, comm);
      } else {
        memcpy(out, send, 4 * (size_t)n);
        MPI_Iallreduce(MPI_IN_PLACE, out, n, MPI_UINT32_T, usum, comm, &req);
        complete(&req, completions++);
      }
      count_offloads(MPI_UINT32_T, n, way == 1);
      CHECK(!memcmp(out, ref, 4 * (size_t)n), "%s: differs from PMPI_Allreduce", what);
    }
    free(send);
    free(ref);
    free(out);
  }
  MPI_Op_free(&usum);

  /* non-commutative, on a contiguous derived type */
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_INT, &mat);
  MPI_Type_commit(&mat);
  MPI_Op mm;
  MPI_Op_create(matmul, 0, &mm);
  int world_rank_of[64];
  {
    MPI_Group g, wg;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ranks[64];
    for (int i = 0; i < csize; ++i) ranks[i] = i;
    MPI_Group_translate_ranks(g, csize, ranks, wg, world_rank_of);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
  }
  const int mcounts[] = {1, 5, 4096, 4097, 70000};
  for (int c = 0; c < 5; ++c) {
    const int n = mcounts[c];
    int *send = malloc(16 * (size_t)n), *ref = malloc(16 * (size_t)n), *out = malloc(16 * (size_t)n);
    int *expect = malloc(16 * (size_t)n);
    for (int e = 0; e < n; ++e) matrix_of(rank, e, send + 4 * e);
    for (int e = 0; e < n; ++e) {  // M_0 M_1 ... in communicator rank order
      int acc[4] = {1, 0, 0, 1}, m[4];
      for (int r = csize - 1; r >= 0; --r) {
        int len = 1;
        matrix_of(world_rank_of[r], e, m);
        matmul(m, acc, &len, NULL);  // acc = M_r acc
      }
      memcpy(expect + 4 * e, acc, sizeof acc);
    }
    PMPI_Allreduce(send, ref, n, mat, mm, comm);
    snprintf(what, sizeof what, "%s non-commutative matrix op count %d", where, n);
    CHECK(!memcmp(ref, expect, 16 * (size_t)n), "%s: PMPI_Allreduce itself is not M_0 M_1 ...", what);
    for (int way = 0; way < 3; ++way) {
      MPI_Request req;
      memset(out, 0, 16 * (size_t)n);
      if (way == 0) {
        MPI_Iallreduce(send, out, n, mat, mm, comm, &req);
        complete(&req, completions++);
      } else if (way == 1) {
        MPI_Allreduce(send, out, n, mat, mm, comm);
      } else {
        memcpy(out, send, 16 * (size_t)n);
        MPI_Allreduce(MPI_IN_PLACE, out, n, mat, mm, comm);
      }
      count_offloads(mat, n, way != 0);
      CHECK(!memcmp(out, expect, 16 * (size_t)n), "%s way %d: not M_0 M_1 ... in rank order", what, way);
    }
    free(send);
    free(ref);
    free(out);
    free(expect);
  }
  MPI_Op_free(&mm);
  MPI_Type_free(&mat);

  /* strided vector of floats with a user op */
  MPI_Datatype vec;
  MPI_Type_vector(3, 2, 4, MPI_FLOAT, &vec);
  MPI_Type_commit(&vec);
  MPI_Op vs;
  MPI_Op_create(vec_sum, 1, &vs);
  const int vcounts[] = {1, 3, 2731, 50000};
  for (int c = 0; c < 4; ++c) {
    const int n = vcounts[c];
    float *send = malloc(40 * (size_t)n), *ref = malloc(40 * (size_t)n), *out = malloc(40 * (size_t)n);
    for (int i = 0; i < 10 * n; ++i) send[i] = (float)((int)(mix((uint64_t)rank * 7777 + (uint64_t)i) % 1001) - 500);
    for (int i = 0; i < 10 * n; ++i) ref[i] = -1;
    PMPI_Allreduce(send, ref, n, vec, vs, comm);
    for (int way = 0; way < 2; ++way) {
      MPI_Request req;
      for (int i = 0; i < 10 * n; ++i) out[i] = -1;
      if (way == 0) {
        MPI_Iallreduce(send, out, n, vec, vs, comm, &req);
        complete(&req, completions++);
      } else {
        MPI_Allreduce(send, out, n, vec, vs, comm);
      }
      count_offloads(vec, n, way == 1);
      long bad = -1;
      for (int e = 0; e < n && bad < 0; ++e)
        for (int b = 0; b < 3; ++b)
          for (int j = 0; j < 2; ++j) {
            const int k = 10 * e + 4 * b + j;
            if (out[k] != ref[k]) bad = k;
          }
      CHECK(bad < 0, "%s vector user op count %d way %d: float %ld differs", where, n, way, bad);
    }
    free(send);
    free(ref);
    free(out);
  }
  MPI_Op_free(&vs);
  MPI_Type_free(&vec);
}

/* An erroneous call returns plain MPI's error under MPI_ERRORS_RETURN, also
 * when the handler was set after the communicator was first used. */
static void errors_returned(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6];
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Iallreduce(a, b, 6, MPI_FLOAT, MPI_SUM, comm, &req);  // first use, handler still fatal
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  count_offloads(MPI_FLOAT, 6, false);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Datatype t;
  MPI_Type_contiguous(3, MPI_FLOAT, &t);
  MPI_Type_commit(&t);
  const int pref = PMPI_Allreduce(a, b, 2, t, MPI_SUM, comm);  // Open MPI: MPI_ERR_OP
  req = MPI_REQUEST_NULL;
  int rc = MPI_Iallreduce(a, b, 2, t, MPI_SUM, comm, &req);
  if (rc == MPI_SUCCESS) {
    count_offloads(t, 2, false);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  int cls_ref = pref, cls = rc;
  if (pref != MPI_SUCCESS) MPI_Error_class(pref, &cls_ref);
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  CHECK(cls == cls_ref, "MPI_Iallreduce of a predefined op on a derived type: error class %d, plain MPI %d", cls,
        cls_ref);
  float big[40000];
  for (int i = 0; i < 40000; ++i) big[i] = (float)i;
  rc = MPI_Allreduce(big, big + 20000, 20000 / 3, t, MPI_SUM, comm);
  if (rc == MPI_SUCCESS) count_offloads(t, 20000 / 3, true);
  cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  CHECK(cls == cls_ref, "MPI_Allreduce of a predefined op on a derived type: error class %d, plain MPI %d", cls,
        cls_ref);
  MPI_Type_free(&t);
  MPI_Comm_free(&comm);
}

static void big(void) {
  const int n = 16 << 20;
  float *send = malloc(4 * (size_t)n), *ref = malloc(4 * (size_t)n), *out = malloc(4 * (size_t)n);
  for (int i = 0; i < n; ++i) send[i] = (float)((i + rank) % 17);
  PMPI_Allreduce(send, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Request req;
  MPI_Iallreduce(send, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  count_offloads(MPI_FLOAT, n, false);
  CHECK(!memcmp(out, ref, 4 * (size_t)n), "16 Mi floats MPI_Iallreduce differs from PMPI_Allreduce");
  memcpy(out, send, 4 * (size_t)n);
  MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  count_offloads(MPI_FLOAT, n, true);
  CHECK(!memcmp(out, ref, 4 * (size_t)n), "16 Mi floats MPI_Allreduce in place differs from PMPI_Allreduce");
  free(send);
  free(ref);
  free(out);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int level;
  } levels[] = {{"none", MPI_THREAD_SINGLE},
                {"single", MPI_THREAD_SINGLE},
                {"funneled", MPI_THREAD_FUNNELED},
                {"serialized", MPI_THREAD_SERIALIZED},
                {"multiple", MPI_THREAD_MULTIPLE}};
  int want = -1, lvl = 0;
  for (int i = 0; i < 5; ++i)
    if (argc > 1 && !strcmp(argv[1], levels[i].name)) want = levels[i].level, lvl = i;
  if (want < 0) {
    fprintf(stderr, "usage: %s none|single|funneled|serialized|multiple [big|quick]\n", argv[0]);
    return 2;
  }
  int provided = -1;
  if (lvl == 0) MPI_Init(&argc, &argv);
  else MPI_Init_thread(&argc, &argv, want, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  init_types();
  const char *m = getenv("HCOPS_MPI_OFFLOAD_MIN");
  if (m && *m) offload_min = strtoull(m, NULL, 10);
  unsigned long long agreed = offload_min;  // the wrapper uses rank 0's threshold on every rank
  PMPI_Bcast(&agreed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  offload_min = (size_t)agreed;

  int queried = -1;
  MPI_Query_thread(&queried);
  if (lvl > 0) CHECK(provided == want, "MPI_Init_thread(%s) provided %d", levels[lvl].name, provided);
  CHECK(queried == want, "MPI_Query_thread after %s gives %d, not %d", levels[lvl].name, queried, want);

  const bool quick = argc > 2 && !strcmp(argv[2], "quick");
  t_phase = MPI_Wtime();
  all_predefined(MPI_COMM_WORLD, "world", !quick);
  phase("predefined");
  for (int c = 0; c < 6; ++c) {
    random_floats(MPI_COMM_WORLD, MPI_FLOAT, (int[]){1, 1000, 16383, 16385, 262144, 0}[c], c);
    random_floats(MPI_COMM_WORLD, MPI_DOUBLE, (int[]){1, 1000, 8191, 8193, 131072, 0}[c], c + 10);
  }
  phase("random floats");
  user_ops(MPI_COMM_WORLD, "world");
  phase("user ops");

  some_cases(MPI_COMM_SELF, "self");
  user_ops(MPI_COMM_SELF, "self");
  phase("self");

  /* Communicators made and freed while idle, several times so that a handle
   * is reused: a stale shadow would reduce over the wrong group. */
  for (int round = 0; round < 3; ++round) {
    MPI_Comm dup, split, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    some_cases(dup, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nranks - rank, &split);  // reversed order
    some_cases(split, "split");
    if (round == 0) user_ops(split, "split");
    MPI_Comm_free(&dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank < nranks / 2, rank, &half);
    MPI_Comm_free(&split);
    some_cases(half, "half");
    if (round == 1) all_predefined(half, "half", false);
    MPI_Comm_free(&half);
  }
  phase("communicators");
  errors_returned();
  if (argc > 2 && !strcmp(argv[2], "big")) big();
  phase("errors, big");

  printf("rank %d: expect %ld nonblocking, %ld blocking\n", rank, expect_nonblocking, expect_blocking);
  fflush(stdout);
  PMPI_Barrier(MPI_COMM_WORLD);
  char what[64];
  snprintf(what, sizeof what, "test_mpi_allreduce %s", levels[lvl].name);
  const long failed = mpi_check_summary(what, checks, failures);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
