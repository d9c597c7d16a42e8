/* libhcops_mpi under load: run under LD_PRELOAD of libhcops_mpi.so (the
 * program is not linked with it), by test_mpi_stress.sh.
 *
 *   mpirun -np N ./test_mpi_stress mix [OPS [SEED]]
 *     OPS (default 2000) MPI_Iallreduce outstanding at once on 3
 *     communicators (MPI_COMM_WORLD, a duplicate, a split in reversed order),
 *     interleaved with ring MPI_Isend/MPI_Irecv pairs and blocking
 *     MPI_Allreduce (offloaded and not), then completed in an order of each
 *     rank's own by MPI_Wait, MPI_Test loops, MPI_Waitany, MPI_Waitsome,
 *     MPI_Testall loops, MPI_Waitall, MPI_Testany and MPI_Testsome on arrays
 *     mixing offloaded and native requests (and MPI_REQUEST_NULL), with
 *     MPI_Request_get_status peeks; some sends are MPI_Request_free'd, and
 *     under the wrapper (HCOPS_MPI not 0) some MPI_Iallreduce requests too
 *     (generalized requests may be freed; a native collective's may not).
 *     Every request must complete exactly once with the right result;
 *     freed reductions on the duplicate and the split are checked after
 *     MPI_Comm_free, which waits for the communicator's offloaded work.
 *   mpirun -np N ./test_mpi_stress threads T
 *     MPI_THREAD_MULTIPLE; T threads each issue collectives concurrently on
 *     a communicator of their own (made, and so shadowed by the wrapper,
 *     before the threads start), complete them in several ways, check the
 *     results, and free the communicator while the others still work.
 *   mpirun -np N ./test_mpi_stress order
 *     Correct MPI that a blocking step inside MPI_Iallreduce would hang:
 *     nonblocking collectives issued on two new communicators in opposite
 *     orders by even and odd ranks; a chain where each rank starts its
 *     MPI_Iallreduce before sending to the next, which receives first; and
 *     the first collectives on a communicator, while the other ranks come
 *     late, with their user op (non-commutative) and datatype freed at once;
 *     a split and an MPI_Ibcast right after an offloaded reduction on the
 *     same communicator; attribute copy/delete callbacks run only for the
 *     application's communicators; an MPI_Comm_idup'd communicator.
 *   mpirun -np N ./test_mpi_stress finalize
 *     MPI_Finalize with offloaded MPI_Iallreduce still outstanding (never
 *     waited, some freed): must neither hang nor crash.
 * Each prints "test_mpi_stress MODE: N checks, M failed" (rank 0).
 */
#include <mpi.h>

#include "mpi_check.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, nranks;
static long checks, failures;
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;

// Threads check concurrently: the shared counters under a lock.
#define LOCKED_CHECK(cond, ...)      \
  do {                               \
    const bool ok_ = (cond);         \
    pthread_mutex_lock(&check_mu);   \
    CHECK(ok_, __VA_ARGS__);         \
    pthread_mutex_unlock(&check_mu); \
  } while (0)

static uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A rank's private random stream (completion order, methods). */
static uint64_t rng_state;
static unsigned rnd(unsigned n) { return (unsigned)(mix(rng_state++) % n); }

/* Input element i of collective `k` on world rank r. */
static int input(int r, int k, int i) {
  return (int)(mix(((uint64_t)k << 40) ^ ((uint64_t)r << 32) ^ (uint64_t)i) & 0xfffff);
}

static const MPI_Op the_ops[3] = {MPI_SUM, MPI_MAX, MPI_BXOR};

/* The result every member of a communicator (world ranks `members`) must get. */
static int expected(const int *members, int n, int k, int op, int i) {
  int acc = input(members[0], k, i);
  for (int m = 1; m < n; ++m) {
    const int v = input(members[m], k, i);
    acc = op == 0 ? acc + v : op == 1 ? (v > acc ? v : acc) : acc ^ v;
  }
  return acc;
}

struct comm_info {
  MPI_Comm comm;
  int size, members[64];
};

static void describe(struct comm_info *c) {
  MPI_Group g, wg;
  int ranks[64];
  MPI_Comm_size(c->comm, &c->size);
  for (int i = 0; i < c->size; ++i) ranks[i] = i;
  MPI_Comm_group(c->comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_translate_ranks(g, c->size, ranks, wg, c->members);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
}

static int check_result(const struct comm_info *c, int k, int op, const int *buf, int count) {
  for (int i = 0; i < count; ++i)
    if (buf[i] != expected(c->members, c->size, k, op, i)) return i;
  return -1;
}

/* ---- mix ---- */
enum { K_COLL, K_SEND, K_RECV };
struct entry {
  MPI_Request req;
  int kind, k, comm, op, count, peer;
  int *send, *buf;
  bool done, freed;
  int peeked;  // MPI_Request_get_status said complete
};
static struct entry *pool;
static int npool;
static struct comm_info comms[3];
static long n_completed;

static int sizes(unsigned h) {
  static const int s[] = {1, 3, 64, 1000, 4000, 16384, 20000, 0};
  const unsigned w = h % 100;
  return w < 20   ? s[0]
         : w < 35 ? s[1]
         : w < 55 ? s[2]
         : w < 75 ? s[3]
         : w < 88 ? s[4]
         : w < 93 ? s[5]
         : w < 98 ? s[6]
                  : s[7];
}

static void verify(struct entry *e, const char *how) {
  if (e->kind == K_COLL) {
    const int bad = check_result(&comms[e->comm], e->k, e->op, e->buf, e->count);
    LOCKED_CHECK(bad < 0, "collective %d (comm %d, count %d) completed by %s: element %d wrong", e->k, e->comm,
                 e->count, how, bad);
  } else if (e->kind == K_RECV) {
    int bad = -1;
    for (int i = 0; i < e->count && bad < 0; ++i)
      if (e->buf[i] != input(e->peer, e->k, i)) bad = i;
    LOCKED_CHECK(bad < 0, "message %d from %d received by %s: element %d wrong", e->k, e->peer, how, bad);
  }
}

static void completed(int idx, const char *how) {
  struct entry *e = &pool[idx];
  LOCKED_CHECK(!e->done, "request %d (kind %d) completed twice (by %s)", idx, e->kind, how);
  e->done = true;
  e->req = MPI_REQUEST_NULL;
  ++n_completed;
  verify(e, how);
}

/* Up to n outstanding pool entries, at random (the caller may add nulls). */
static int pick(int *idx, int n) {
  int m = 0;
  for (int tries = 0; tries < 8 * n && m < n; ++tries) {
    const int j = (int)rnd((unsigned)npool);
    if (pool[j].done || pool[j].freed) continue;
    bool dup = false;
    for (int q = 0; q < m; ++q) dup |= idx[q] == j;
    if (!dup) idx[m++] = j;
  }
  return m;
}

static void complete_some(void) {
  int idx[24];           // at most 20 picked
  MPI_Request reqs[48];  // the picked ones and up to 20 nulls
  MPI_Status st[48];
  int outidx[48];
  const int want = 1 + (int)rnd(20);
  int m = pick(idx, want);
  if (m == 0) return;
  const int method = (int)rnd(10);
  if (method == 0 || method == 1) {  // one request: MPI_Wait or an MPI_Test loop
    struct entry *e = &pool[idx[0]];
    MPI_Request r = e->req;
    if (method == 0) {
      LOCKED_CHECK(MPI_Wait(&r, &st[0]) == MPI_SUCCESS, "MPI_Wait failed");
    } else {
      int flag = 0;
      while (!flag) MPI_Test(&r, &flag, &st[0]);
    }
    LOCKED_CHECK(r == MPI_REQUEST_NULL, "completed request not MPI_REQUEST_NULL");
    completed(idx[0], method == 0 ? "MPI_Wait" : "MPI_Test");
    return;
  }
  if (method == 2) {  // MPI_Request_get_status: never frees
    struct entry *e = &pool[idx[0]];
    int flag = 0;
    MPI_Request r = e->req;
    MPI_Request_get_status(r, &flag, &st[0]);
    LOCKED_CHECK(r == e->req, "MPI_Request_get_status changed the handle");
    if (flag) {
      e->peeked = 1;
      int f2 = 0;
      MPI_Test(&r, &f2, MPI_STATUS_IGNORE);  // complete already: must be done now
      LOCKED_CHECK(f2 && r == MPI_REQUEST_NULL, "MPI_Test after get_status said complete: flag %d", f2);
      if (f2) completed(idx[0], "MPI_Request_get_status+MPI_Test");
      else e->req = r;
    }
    return;
  }
  /* arrays: pad with a few MPI_REQUEST_NULL at random places */
  int n = 0, map[48];
  for (int q = 0; q < m; ++q) {
    if (rnd(6) == 0) map[n] = -1, reqs[n++] = MPI_REQUEST_NULL;
    map[n] = idx[q], reqs[n++] = pool[idx[q]].req;
  }
  switch (method) {
    case 3: {
      int i = -1;
      LOCKED_CHECK(MPI_Waitany(n, reqs, &i, &st[0]) == MPI_SUCCESS, "MPI_Waitany failed");
      LOCKED_CHECK(i >= 0 && i < n && map[i] >= 0, "MPI_Waitany index %d of %d", i, n);
      if (i >= 0 && i < n && map[i] >= 0) {
        LOCKED_CHECK(reqs[i] == MPI_REQUEST_NULL, "MPI_Waitany left its request");
        completed(map[i], "MPI_Waitany");
      }
      break;
    }
    case 4: {
      int out = 0;
      LOCKED_CHECK(MPI_Waitsome(n, reqs, &out, outidx, st) == MPI_SUCCESS, "MPI_Waitsome failed");
      LOCKED_CHECK(out >= 1 && out <= n, "MPI_Waitsome outcount %d of %d", out, n);
      for (int q = 0; q < out && q < n; ++q)
        if (outidx[q] >= 0 && outidx[q] < n && map[outidx[q]] >= 0) completed(map[outidx[q]], "MPI_Waitsome");
        else LOCKED_CHECK(0, "MPI_Waitsome index %d", outidx[q]);
      break;
    }
    case 5: {
      int flag = 0;
      while (!flag) MPI_Testall(n, reqs, &flag, st);
      for (int q = 0; q < n; ++q)
        if (map[q] >= 0) completed(map[q], "MPI_Testall");
      break;
    }
    case 6:
    case 7: {
      LOCKED_CHECK(MPI_Waitall(n, reqs, st) == MPI_SUCCESS, "MPI_Waitall failed");
      for (int q = 0; q < n; ++q) {
        LOCKED_CHECK(reqs[q] == MPI_REQUEST_NULL, "MPI_Waitall left request %d", q);
        if (map[q] >= 0) completed(map[q], "MPI_Waitall");
      }
      break;
    }
    case 8: {
      int i = -1, flag = 0;
      MPI_Testany(n, reqs, &i, &flag, &st[0]);
      if (flag && i != MPI_UNDEFINED) {
        LOCKED_CHECK(i >= 0 && i < n && map[i] >= 0, "MPI_Testany index %d", i);
        if (i >= 0 && i < n && map[i] >= 0) completed(map[i], "MPI_Testany");
      }
      break;
    }
    default: {
      int out = 0;
      MPI_Testsome(n, reqs, &out, outidx, st);
      for (int q = 0; q < out && out != MPI_UNDEFINED; ++q)
        if (outidx[q] >= 0 && outidx[q] < n && map[outidx[q]] >= 0) completed(map[outidx[q]], "MPI_Testsome");
        else LOCKED_CHECK(0, "MPI_Testsome index %d", outidx[q]);
      break;
    }
  }
}

static int run_mix(int nops, int seed) {
  const bool wrapped = !(getenv("HCOPS_MPI") && !strcmp(getenv("HCOPS_MPI"), "0"));
  comms[0].comm = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1].comm);
  MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - rank, &comms[2].comm);
  for (int c = 0; c < 3; ++c) describe(&comms[c]);
  pool = calloc((size_t)nops * 3 + 32, sizeof *pool);
  rng_state = mix(0xabcdef + (uint64_t)seed * 1000 + (uint64_t)rank);  // completion order: each rank its own
  const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  long blocking = 0;
  for (int k = 0; k < nops; ++k) {
    const uint64_t h = mix(((uint64_t)seed << 32) + (uint64_t)k);  // issue order: the same on every rank
    struct entry *e = &pool[npool];
    e->kind = K_COLL, e->k = k, e->comm = (int)(h % 3), e->op = (int)((h >> 8) % 3);
    e->count = sizes((unsigned)(h >> 16));
    e->send = malloc(sizeof(int) * (size_t)(e->count + 1));
    e->buf = malloc(sizeof(int) * (size_t)(e->count + 1));
    for (int i = 0; i < e->count; ++i) e->send[i] = input(rank, k, i);
    const bool in_place = (h >> 24) % 4 == 0;
    if (in_place) memcpy(e->buf, e->send, sizeof(int) * (size_t)e->count);
    MPI_Iallreduce(in_place ? MPI_IN_PLACE : e->send, e->buf, e->count, MPI_INT, the_ops[e->op], comms[e->comm].comm,
                   &e->req);
    ++npool;
    /* MPI_Request_free on a nonblocking collective's request is erroneous
     * MPI (MPI-3.1 5.12), but the wrapper's are generalized requests, which
     * may be freed: done only under the wrapper. */
    if (wrapped && (h >> 32) % 20 == 0 && e->comm != 0) {  // freed: checked after MPI_Comm_free
      MPI_Request_free(&e->req);
      LOCKED_CHECK(e->req == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
      e->freed = true;
    }
    if ((h >> 40) % 10 == 0) {  // a native message pair around the ring
      struct entry *s = &pool[npool++], *r = &pool[npool++];
      s->kind = K_SEND, r->kind = K_RECV, s->k = r->k = k, r->peer = left;
      s->count = r->count = 1 + (int)((h >> 48) % 3000);
      s->send = malloc(sizeof(int) * (size_t)s->count);
      r->buf = malloc(sizeof(int) * (size_t)r->count);
      for (int i = 0; i < s->count; ++i) s->send[i] = input(rank, k, i);
      MPI_Irecv(r->buf, r->count, MPI_INT, left, k, MPI_COMM_WORLD, &r->req);
      MPI_Isend(s->send, s->count, MPI_INT, right, k, MPI_COMM_WORLD, &s->req);
      if ((h >> 56) % 4 == 0) {  // a send freed at once (legal MPI; its buffer stays)
        MPI_Request_free(&s->req);
        s->freed = true;
      }
    }
    if ((h >> 44) % 50 == 0) {  // a blocking one in between, big or small
      const int n = (h >> 50) % 2 ? 40000 : 10;
      int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
      for (int i = 0; i < n; ++i) a[i] = input(rank, -k, i);
      const int c = (int)((h >> 52) % 3);
      MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, comms[c].comm);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; ++i)
        if (b[i] != expected(comms[c].members, comms[c].size, -k, 0, i)) bad = i;
      LOCKED_CHECK(bad < 0, "blocking MPI_Allreduce %d (count %d) with requests outstanding: element %d", k, n, bad);
      free(a);
      free(b);
      ++blocking;
    }
    if ((h >> 36) % 64 == 0) {  // one waited for at once, the others still outstanding
      const int n = 50000, kk = k + (1 << 24);
      int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
      for (int i = 0; i < n; ++i) a[i] = input(rank, kk, i);
      MPI_Request r;
      MPI_Iallreduce(a, b, n, MPI_INT, MPI_SUM, comms[e->comm].comm, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      const int bad = check_result(&comms[e->comm], kk, 0, b, n);
      LOCKED_CHECK(bad < 0, "MPI_Iallreduce %d waited at once, %d outstanding: element %d", kk, npool, bad);
      free(a);
      free(b);
    }
    if (rnd(40) == 0) complete_some();  // a few complete early, most stay outstanding
  }
  const long early = n_completed;
  long live = 0;
  for (int j = 0; j < npool; ++j) live += !pool[j].done && !pool[j].freed;
  if (rank == 0) printf("mix: %d requests, %ld completed while issuing, %ld outstanding at once\n", npool, early, live);
  for (;;) {
    long left_ = 0;
    for (int j = 0; j < npool; ++j) left_ += !pool[j].done && !pool[j].freed;
    if (!left_) break;
    complete_some();
  }
  long nfreed = 0;
  for (int j = 0; j < npool; ++j) nfreed += pool[j].freed;
  /* The wrapper's MPI_Comm_free waits for the communicator's offloaded
   * work: then the freed requests' results are there. The last ones, big,
   * are freed just before, so they are still in flight. */
  for (int c = 1; wrapped && c < 3; ++c)
    for (int q = 0; q < 4; ++q) {
      struct entry *e = &pool[npool++];
      e->kind = K_COLL, e->k = nops + 10 * c + q, e->comm = c, e->op = q % 3, e->count = 1 << 18;
      e->send = malloc(sizeof(int) * (size_t)e->count);
      e->buf = malloc(sizeof(int) * (size_t)e->count);
      for (int i = 0; i < e->count; ++i) e->send[i] = input(rank, e->k, i);
      MPI_Iallreduce(e->send, e->buf, e->count, MPI_INT, the_ops[e->op], comms[c].comm, &e->req);
      MPI_Request_free(&e->req);
      e->freed = true;
    }
  MPI_Comm_free(&comms[1].comm);
  MPI_Comm_free(&comms[2].comm);
  if (wrapped)
    for (int j = 0; j < npool; ++j)
      if (pool[j].freed && pool[j].kind == K_COLL) verify(&pool[j], "MPI_Request_free then MPI_Comm_free");
  MPI_Barrier(MPI_COMM_WORLD);  // every freed send has been received: its buffer may go
  int done_all = 1;
  for (int j = 0; j < npool; ++j) done_all &= pool[j].done || pool[j].freed;
  LOCKED_CHECK(done_all, "requests left incomplete");
  if (rank == 0) printf("mix: %ld freed, %ld blocking\n", nfreed, blocking);
  for (int j = 0; j < npool; ++j) {
    free(pool[j].send);
    free(pool[j].buf);
  }
  free(pool);
  return 0;
}

/* ---- threads ---- */
struct thread_arg {
  int t, nops;
  struct comm_info ci;
};

static void *thread_main(void *p) {
  struct thread_arg *a = p;
  const int n_small = 64, n_big = 20000;  // 80 KB: MPI_Allreduce offloaded
  int *send = malloc(sizeof(int) * n_big), *out = malloc(sizeof(int) * n_big);
  uint64_t st = mix((uint64_t)rank * 100 + (uint64_t)a->t);
  enum { BATCH = 16 };
  int *bufs[BATCH], *sends[BATCH];
  for (int q = 0; q < BATCH; ++q) bufs[q] = malloc(sizeof(int) * 4096), sends[q] = malloc(sizeof(int) * 4096);
  for (int k0 = 0; k0 < a->nops; k0 += BATCH) {
    MPI_Request reqs[BATCH];
    int ks[BATCH], counts[BATCH];
    for (int q = 0; q < BATCH; ++q) {
      const int k = (a->t << 20) + k0 + q;
      ks[q] = k;
      counts[q] = 1 + (int)(mix((uint64_t)k) % 4096);
      for (int i = 0; i < counts[q]; ++i) sends[q][i] = input(rank, k, i);
      MPI_Iallreduce(sends[q], bufs[q], counts[q], MPI_INT, MPI_SUM, a->ci.comm, &reqs[q]);
    }
    const int how = (int)(mix(st++) % 4);
    if (how == 0) {
      MPI_Waitall(BATCH, reqs, MPI_STATUSES_IGNORE);
    } else if (how == 1) {
      for (int q = BATCH - 1; q >= 0; --q) MPI_Wait(&reqs[q], MPI_STATUS_IGNORE);
    } else if (how == 2) {
      for (int left = BATCH; left > 0; --left) {
        int i;
        MPI_Waitany(BATCH, reqs, &i, MPI_STATUS_IGNORE);
      }
    } else {
      int flag = 0;
      while (!flag) MPI_Testall(BATCH, reqs, &flag, MPI_STATUSES_IGNORE);
    }
    for (int q = 0; q < BATCH; ++q) {
      LOCKED_CHECK(reqs[q] == MPI_REQUEST_NULL, "thread %d: request left", a->t);
      const int bad = check_result(&a->ci, ks[q], 0, bufs[q], counts[q]);
      LOCKED_CHECK(bad < 0, "thread %d: collective %d (count %d, completion %d): element %d wrong", a->t, ks[q],
                   counts[q], how, bad);
    }
    /* blocking, offloaded and not */
    const int n = (k0 / BATCH) % 2 ? n_big : n_small, k = -((a->t << 20) + k0);
    for (int i = 0; i < n; ++i) send[i] = input(rank, k, i);
    MPI_Allreduce(send, out, n, MPI_INT, MPI_MAX, a->ci.comm);
    const int bad = check_result(&a->ci, k, 1, out, n);
    LOCKED_CHECK(bad < 0, "thread %d: blocking MPI_Allreduce count %d: element %d wrong", a->t, n, bad);
  }
  MPI_Comm_free(&a->ci.comm);  // while the other threads still reduce
  for (int q = 0; q < BATCH; ++q) free(bufs[q]), free(sends[q]);
  free(send);
  free(out);
  return NULL;
}

static int run_threads(int nthreads) {
  struct thread_arg args[8];
  pthread_t th[8];
  for (int t = 0; t < nthreads; ++t) {
    args[t].t = t;
    args[t].nops = 160 + 32 * t;
    /* Every thread gets a communicator of its own, made here: the wrapper
     * makes its shadow inside MPI_Comm_dup/MPI_Comm_split. */
    if (t % 2) MPI_Comm_dup(MPI_COMM_WORLD, &args[t].ci.comm);
    else MPI_Comm_split(MPI_COMM_WORLD, 0, (rank * 7 + t) % nranks, &args[t].ci.comm);
    describe(&args[t].ci);
  }
  for (int t = 0; t < nthreads; ++t) pthread_create(&th[t], NULL, thread_main, &args[t]);
  /* The main thread reduces on MPI_COMM_WORLD meanwhile. */
  struct comm_info w = {MPI_COMM_WORLD, 0, {0}};
  describe(&w);
  int buf[512], send[512];
  for (int k = 0; k < 100; ++k) {
    for (int i = 0; i < 512; ++i) send[i] = input(rank, 7000000 + k, i);
    MPI_Request r;
    MPI_Iallreduce(send, buf, 512, MPI_INT, MPI_BXOR, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    LOCKED_CHECK(check_result(&w, 7000000 + k, 2, buf, 512) < 0, "main thread: collective %d wrong", k);
  }
  for (int t = 0; t < nthreads; ++t) pthread_join(th[t], NULL);
  return 0;
}

/* ---- first use of a communicator: correct MPI the wrapper must not block ---- */
/* Affine maps x -> m x + c as (m, c) pairs, composed: associative, not
 * commutative. inout = in o inout, `in` coming from the lower ranks. */
static void compose(const unsigned *a, const unsigned *b, unsigned *out) {
  const unsigned m = a[0] * b[0], c = a[0] * b[1] + a[1];
  out[0] = m, out[1] = c;
}
static void compose_op(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  for (int i = 0; i < *len; ++i) compose((unsigned *)in + 2 * i, (unsigned *)inout + 2 * i, (unsigned *)inout + 2 * i);
}

static int attr_copies, attr_deletes;

static int count_copy(MPI_Comm comm, int key, void *extra, void *in, void *out, int *flag) {
  (void)comm, (void)key, (void)extra;
  ++attr_copies;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  ++attr_deletes;
  return MPI_SUCCESS;
}

static int run_order(void) {
  const int n = 1000;
  int *s = malloc(sizeof(int) * 4 * n), *b = malloc(sizeof(int) * 4 * n);
  struct comm_info w = {MPI_COMM_WORLD, 0, {0}};
  describe(&w);
  /* 1. Nonblocking collectives on two fresh communicators, issued in
   * opposite orders by even and odd ranks (MPI orders collectives per
   * communicator only). */
  for (int round = 0; round < 3; ++round) {
    MPI_Comm c[2];
    MPI_Request r[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    for (int q = 0; q < 2; ++q) {
      const int j = rank % 2 ? 1 - q : q;
      for (int i = 0; i < n; ++i) s[j * n + i] = input(rank, 100 * round + j, i);
      MPI_Iallreduce(s + j * n, b + j * n, n, MPI_INT, MPI_SUM, c[j], &r[j]);
    }
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    for (int j = 0; j < 2; ++j)
      LOCKED_CHECK(check_result(&w, 100 * round + j, 0, b + j * n, n) < 0, "opposite orders, round %d, comm %d: wrong",
                   round, j);
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
  }
  /* 2. A chain: rank r receives from r-1 only after... nothing; it starts its
   * MPI_Iallreduce, and only then sends to r+1. MPI_Iallreduce may not wait
   * for the other ranks. */
  {
    MPI_Comm c;
    MPI_Request r;
    int token = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rank > 0) MPI_Recv(&token, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i) s[i] = input(rank, 500, i);
    MPI_Iallreduce(s, b, n, MPI_INT, MPI_MAX, c, &r);
    if (rank < nranks - 1) MPI_Send(&token, 1, MPI_INT, rank + 1, 7, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    LOCKED_CHECK(check_result(&w, 500, 1, b, n) < 0, "chain: wrong");
    MPI_Comm_free(&c);
  }
  /* 3. The first collectives on a communicator, with a user op and a derived
   * datatype freed as soon as MPI_Iallreduce returns (legal), while the other
   * ranks come late. */
  {
    MPI_Comm c;
    MPI_Datatype pair;
    MPI_Op op;
    MPI_Request r[3];
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rank != 0) {  // rank 0 is early: its collectives wait for the others
      const struct timespec late = {0, 200 * 1000 * 1000};
      nanosleep(&late, NULL);
    }
    for (int j = 0; j < 3; ++j) {
      MPI_Type_contiguous(2, MPI_INT, &pair);
      MPI_Type_commit(&pair);
      MPI_Op_create(compose_op, 0, &op);
      for (int i = 0; i < n; ++i) s[j * n + i] = input(rank, 600 + j, i);
      MPI_Iallreduce(s + j * n, b + j * n, n / 2, pair, op, c, &r[j]);
      MPI_Op_free(&op);
      MPI_Type_free(&pair);
      LOCKED_CHECK(op == MPI_OP_NULL && pair == MPI_DATATYPE_NULL, "MPI_Op_free/MPI_Type_free left the handle");
    }
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    /* Not before: MPI allows freeing a communicator with collectives pending,
     * but Open MPI 4.1's libnbc may then use the freed communicator (seen to
     * crash without the wrapper). */
    MPI_Comm_free(&c);
    for (int j = 0; j < 3; ++j) {
      int bad = -1;
      for (int e = 0; e < n / 2 && bad < 0; ++e) {  // x_0 o x_1 o ... in rank order
        unsigned acc[2] = {(unsigned)input(nranks - 1, 600 + j, 2 * e),
                           (unsigned)input(nranks - 1, 600 + j, 2 * e + 1)};
        for (int q = nranks - 2; q >= 0; --q) {
          const unsigned x[2] = {(unsigned)input(q, 600 + j, 2 * e), (unsigned)input(q, 600 + j, 2 * e + 1)};
          compose(x, acc, acc);
        }
        if ((unsigned)b[j * n + 2 * e] != acc[0] || (unsigned)b[j * n + 2 * e + 1] != acc[1]) bad = e;
      }
      LOCKED_CHECK(bad < 0, "first collectives with freed user op/type, %d: element %d wrong", j, bad);
    }
  }
  /* 4. The application's own collectives on a communicator right after an
   * offloaded one, before it completes: a split (blocking, making a new
   * communicator) and an MPI_Ibcast, then an offloaded reduction on the new
   * one. Nothing the wrapper does on the parent may interleave with them. */
  for (int round = 0; round < 3; ++round) {
    MPI_Comm c, half;
    MPI_Request r[3];
    int token = rank == 0 ? 1000 + round : -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (int i = 0; i < n; ++i) s[i] = input(rank, 700 + round, i);
    MPI_Iallreduce(s, b, n, MPI_INT, MPI_SUM, c, &r[0]);
    MPI_Comm_split(c, rank % 2, nranks - rank, &half);
    MPI_Ibcast(&token, 1, MPI_INT, 0, c, &r[1]);
    struct comm_info h = {half, 0, {0}};
    describe(&h);
    for (int i = 0; i < n; ++i) s[n + i] = input(rank, 710 + round, i);
    MPI_Iallreduce(s + n, b + n, n, MPI_INT, MPI_MAX, half, &r[2]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    LOCKED_CHECK(check_result(&w, 700 + round, 0, b, n) < 0, "reduction before a split, round %d: wrong", round);
    LOCKED_CHECK(token == 1000 + round, "Ibcast after an offloaded reduction, round %d: got %d", round, token);
    LOCKED_CHECK(check_result(&h, 710 + round, 1, b + n, n) < 0, "reduction on the split, round %d: wrong", round);
    MPI_Comm_free(&half);
    MPI_Comm_free(&c);
  }
  /* 5. The application's attribute callbacks see only its own communicators:
   * one MPI_Comm_dup copies the attribute once, and freeing the two
   * communicators deletes it twice. */
  {
    int key;
    MPI_Comm c, d;
    attr_copies = attr_deletes = 0;
    MPI_Comm_create_keyval(count_copy, count_delete, &key, NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_attr(c, key, &attr_copies);
    MPI_Comm_dup(c, &d);
    for (int i = 0; i < n; ++i) s[i] = input(rank, 800, i);
    MPI_Request r;
    MPI_Iallreduce(s, b, n, MPI_INT, MPI_SUM, d, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_free(&d);
    MPI_Comm_free(&c);
    MPI_Comm_free_keyval(&key);
    LOCKED_CHECK(attr_copies == 1 && attr_deletes == 2, "attribute callbacks: %d copies (want 1), %d deletes (want 2)",
                 attr_copies, attr_deletes);
    LOCKED_CHECK(check_result(&w, 800, 0, b, n) < 0, "reduction on a communicator with attributes: wrong");
  }
  /* 6. A communicator made by MPI_Comm_idup, which the wrapper does not see
   * being made: its reductions pass through, still correct. */
  {
    MPI_Comm c;
    MPI_Request r;
    MPI_Comm_idup(MPI_COMM_WORLD, &c, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i) s[i] = input(rank, 900, i);
    MPI_Iallreduce(s, b, n, MPI_INT, MPI_SUM, c, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    LOCKED_CHECK(check_result(&w, 900, 0, b, n) < 0, "reduction on an idup'd communicator: wrong");
    MPI_Comm_free(&c);
  }
  free(s);
  free(b);
  return 0;
}

/* ---- finalize with requests outstanding ---- */
static int run_finalize(void) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  for (int k = 0; k < 60; ++k) {
    const int n = (int[]){1, 100, 5000, 300000}[k % 4];
    int *s = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);  // kept past MPI_Finalize
    for (int i = 0; i < n; ++i) s[i] = input(rank, k, i);
    MPI_Request r;
    MPI_Iallreduce(s, b, n, MPI_INT, MPI_SUM, k % 2 ? dup : MPI_COMM_WORLD, &r);
    if (k % 5 == 0) MPI_Request_free(&r);
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const int want = !strcmp(mode, "threads") ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
  int provided = -1;
  MPI_Init_thread(&argc, &argv, want, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  LOCKED_CHECK(provided == want, "MPI_Init_thread provided %d, asked %d", provided, want);
  if (!strcmp(mode, "mix")) {
    run_mix(argc > 2 ? atoi(argv[2]) : 2000, argc > 3 ? atoi(argv[3]) : 0);
  } else if (!strcmp(mode, "threads")) {
    run_threads(argc > 2 ? atoi(argv[2]) : 3);
  } else if (!strcmp(mode, "order")) {
    run_order();
  } else if (!strcmp(mode, "finalize")) {
    run_finalize();
    printf("rank %d: finalizing with requests outstanding\n", rank);
    fflush(stdout);
    MPI_Finalize();
    printf("rank %d: finalized\n", rank);
    return failures ? 1 : 0;
  } else {
    if (rank == 0) fprintf(stderr, "usage: %s mix [OPS [SEED]] | threads [T] | order | finalize\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  char what[64];
  snprintf(what, sizeof what, "test_mpi_stress %s", mode);
  const long failed = mpi_check_summary(what, checks, failures);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
