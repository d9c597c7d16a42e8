/* hcops-mpi-overlap: how much of an MPI_Iallreduce a rank's computation hides,
 * measured the way OSU's osu_iallreduce does, for plain MPI or with
 * libhcops_mpi.so preloaded (perf/mpi_overlap.py runs both).
 *
 *   mpirun -np 2 hcops-mpi-overlap [--compute busy|idle|both] [--min-size B]
 *       [--max-size B] [--factor 2|4] [--warmup N] [--iters N] [--budget S]
 *       [--fixed-us US,US,...] [--csv]
 *
 * For every message size (float, MPI_SUM, separate send and receive buffers):
 *   pure     MPI_Iallreduce + MPI_Wait, nothing in between, timed one
 *            iteration at a time; the median is the reference comm time (the
 *            minimum is reported too);
 *   compute  calibrated beforehand, with no communication in flight, to last
 *            the median pure comm time;
 *   overall  MPI_Iallreduce + compute + MPI_Wait, timed one iteration at a
 *            time, the compute part timed on its own as well;
 *   overlap  max(0, 100 * (1 - (overall - compute) / pure)), with overall -
 *            compute the per-iteration exposed comm time, median over the
 *            iterations;
 *   fixed    with --fixed-us (one value per size): the overall time again with
 *            that compute time, the same for every configuration compared
 *            (perf/mpi_overlap.py passes plain MPI's pure comm times), since
 *            the OSU overlap % of two configurations is taken at different
 *            compute times when their pure comm times differ.
 * Like OSU, nothing calls MPI_Test during the computation. Every timed
 * iteration starts after an MPI_Barrier, warm-up iterations are not timed, and
 * the iteration count shrinks with the message so that one phase takes about
 * --budget seconds. Each figure is the mean over the ranks of each rank's
 * median.
 *
 * Two kinds of computation:
 *   busy  a fixed amount of CPU-bound work (dependent floating-point chains in
 *         registers), calibrated as work units per second for every size
 *         right before its overlap phase, with nothing in flight; if anything else
 *         (a progress thread) takes the core meanwhile, the work takes longer,
 *         which the measured compute time shows ("infl": measured / target);
 *   idle  clock_nanosleep to an absolute deadline (timer slack set to 1 ns):
 *         the core is left idle. Short sleeps overshoot by the wake-up latency,
 *         which "infl" shows; the overlap uses the measured compute time.
 *
 * Output: a header (MPI library, thread level, whether libhcops_mpi.so is in
 * the process, each rank's CPUs), then one table per kind; --csv adds one line
 * per size starting with "csv,". */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include "bench_util.h"

#define MAX_ITERS 10000

static double minimum(const double *v, int n) {
  double m = v[0];
  for (int i = 1; i < n; ++i)
    if (v[i] < m) m = v[i];
  return m;
}

/* ---- computation ---- */

/* One unit of busy work: 4 independent multiply-add chains of 256 steps each,
 * kept in registers; the result escapes so the compiler keeps the work. */
static volatile double sink;
static void busy_units(long units) {
  double a = 1.0, b = 1.1, c = 1.2, d = 1.3;
  for (long u = 0; u < units; ++u) {
    for (int i = 0; i < 256; ++i) {
      a = a * 0.9999999 + 1e-7;
      b = b * 0.9999998 + 2e-7;
      c = c * 0.9999997 + 3e-7;
      d = d * 0.9999996 + 4e-7;
    }
    __asm__ volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d));
  }
  sink = a + b + c + d;
}

static double busy_unit_s; /* seconds per unit, calibrated at start */

/* Seconds per unit: the median of 5 batches of about 2 ms. Called by all ranks
 * at once (after a barrier), right before each size's overlap phase, so that
 * it sees the same sharing of the cores as the measurement that follows,
 * except for what the communication itself adds. */
static void calibrate_busy(void) {
  long units = busy_unit_s > 0 ? (long)(2e-3 / busy_unit_s) + 1 : 16;
  for (;;) { /* grow until a batch lasts >= 2 ms */
    const double t0 = bench_now_s();
    busy_units(units);
    if (bench_now_s() - t0 >= 2e-3) break;
    units *= 2;
  }
  double per[5];
  for (int r = 0; r < 5; ++r) {
    const double t0 = bench_now_s();
    busy_units(units);
    per[r] = (bench_now_s() - t0) / units;
  }
  busy_unit_s = bench_median(per, 5);
}

enum kind { BUSY, IDLE };
static const char *kind_name[] = {"busy", "idle"};

/* Work lasting `seconds` (measured with nothing in flight). */
static void compute(enum kind k, double seconds) {
  if (k == BUSY) {
    const long units = (long)(seconds / busy_unit_s + 0.5);
    busy_units(units > 0 ? units : 1);
  } else {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    const long long ns = (long long)t.tv_nsec + (long long)(seconds * 1e9);
    t.tv_sec += ns / 1000000000LL;
    t.tv_nsec = ns % 1000000000LL;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
    }
  }
}

/* ---- process facts ---- */

static int wrapper_loaded(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, "libhcops_mpi") != NULL;
  fclose(f);
  return found;
}

static void cpu_list(char *out, size_t len) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  out[0] = 0;
  size_t used = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    used += snprintf(out + used, used < len ? len - used : 0, used ? ",%d" : "%d", c);
    if (e > c) used += snprintf(out + used, used < len ? len - used : 0, "-%d", e);
    c = e;
  }
}

/* ---- measurement ---- */

struct opts {
  int kinds[2], nkinds;
  size_t min_size, max_size;
  int factor, warmup, iters, csv;
  double budget;
  double fixed_us[64]; /* --fixed-us: a compute time per size, in size order */
  int nfixed;
};

static void usage(int rank) {
  if (rank == 0)
    fprintf(stderr,
            "usage: hcops-mpi-overlap [--compute busy|idle|both] [--min-size BYTES] [--max-size BYTES]\n"
            "       [--factor 2|4] [--warmup N] [--iters N (0: from --budget)] [--budget SECONDS]\n"
            "       [--fixed-us US,US,... (one per size)] [--csv]\n");
}

static int parse(int argc, char **argv, struct opts *o, int rank) {
  o->kinds[0] = BUSY;
  o->kinds[1] = IDLE;
  o->nkinds = 2;
  o->min_size = 4 << 10;
  o->max_size = 64 << 20;
  o->factor = 4;
  o->warmup = 5;
  o->iters = 0;
  o->budget = 0.5;
  o->csv = 0;
  o->nfixed = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--csv")) {
      o->csv = 1;
      continue;
    }
    if (!v) {
      usage(rank);
      return 0;
    }
    ++i;
    if (!strcmp(a, "--compute")) {
      if (!strcmp(v, "busy")) o->kinds[0] = BUSY, o->nkinds = 1;
      else if (!strcmp(v, "idle")) o->kinds[0] = IDLE, o->nkinds = 1;
      else if (strcmp(v, "both")) return usage(rank), 0;
    } else if (!strcmp(a, "--min-size")) o->min_size = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--max-size")) o->max_size = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--factor")) o->factor = atoi(v);
    else if (!strcmp(a, "--warmup")) o->warmup = atoi(v);
    else if (!strcmp(a, "--iters")) o->iters = atoi(v);
    else if (!strcmp(a, "--budget")) o->budget = atof(v);
    else if (!strcmp(a, "--fixed-us")) {
      for (char *p = (char *)v; *p && o->nfixed < 64;) {
        char *end;
        o->fixed_us[o->nfixed++] = strtod(p, &end);
        if (end == p) return usage(rank), 0;
        p = *end == ',' ? end + 1 : end;
      }
    } else return usage(rank), 0;
  }
  if (o->min_size < sizeof(float) || o->max_size < o->min_size || o->factor < 2 || o->warmup < 0 || o->iters < 0 ||
      o->iters > MAX_ITERS || o->warmup > MAX_ITERS || o->budget <= 0)
    return usage(rank), 0;
  return 1;
}

/* Iallreduce + compute(target) + Wait, `iters` timed iterations after
 * `warmup` untimed ones: per-iteration overall and compute times. */
static void overlap_loop(enum kind k, double target, const float *send, float *recv, int count, int warmup, int iters,
                         double *overall, double *comp) {
  MPI_Request req;
  for (int i = 0; i < warmup; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    compute(k, target);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = bench_now_s();
    MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    const double c0 = bench_now_s();
    compute(k, target);
    const double c1 = bench_now_s();
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    overall[i] = bench_now_s() - t0;
    comp[i] = c1 - c0;
  }
}

static double mean_over_ranks(double x, int nranks) {
  double sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* tiny: never offloaded */
  return sum / nranks;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0, nranks = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  struct opts o;
  if (!parse(argc, argv, &o, rank)) {
    MPI_Finalize();
    return 2;
  }

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int vlen = 0;
  MPI_Get_library_version(version, &vlen);
  char *nl = strchr(version, '\n');
  if (nl) *nl = 0;
  char *comma = strchr(version, ',');
  if (comma) *comma = 0;
  char cpus[256];
  cpu_list(cpus, sizeof cpus);
  char *all_cpus = rank == 0 ? malloc((size_t)nranks * sizeof cpus) : NULL;
  MPI_Gather(cpus, sizeof cpus, MPI_CHAR, all_cpus, sizeof cpus, MPI_CHAR, 0, MPI_COMM_WORLD);
  const int wrapped = wrapper_loaded();
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* idle compute: sleeps end on time, not 50 us late */
  MPI_Barrier(MPI_COMM_WORLD);
  calibrate_busy();
  if (rank == 0) {
    printf("# hcops-mpi-overlap: %d ranks, %s, thread level %d, libhcops_mpi.so %s\n", nranks, version, provided,
           wrapped ? "loaded" : "not loaded");
    printf("# CPUs:");
    for (int r = 0; r < nranks; ++r) printf(" rank %d {%s}", r, all_cpus + (size_t)r * sizeof cpus);
    printf(
        "\n# busy work unit %.3f us at start (rank 0; recalibrated per size); float MPI_SUM; OSU method, medians per "
        "rank, mean over ranks\n",
        busy_unit_s * 1e6);
    fflush(stdout);
    free(all_cpus);
  }

  float *send = malloc(o.max_size), *recv = malloc(o.max_size);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < o.max_size / sizeof(float); ++i) send[i] = (float)(i % 1000) * 1e-3f, recv[i] = 0;
  double *pure = malloc(MAX_ITERS * sizeof(double)), *exposed = malloc(MAX_ITERS * sizeof(double));
  double *comp = malloc(MAX_ITERS * sizeof(double)), *overall = malloc(MAX_ITERS * sizeof(double));

  for (int ki = 0; ki < o.nkinds; ++ki) {
    const enum kind k = (enum kind)o.kinds[ki];
    if (rank == 0) {
      printf("\n# compute: %s\n", kind_name[k]);
      printf("%10s %6s %11s %11s %11s %11s %11s %6s %8s", "bytes", "iters", "pure_med_us", "pure_min_us", "target_us",
             "compute_us", "overall_us", "infl", "overlap%");
      if (o.nfixed) printf(" %11s %11s %11s", "fix_tgt_us", "fix_comp_us", "fix_all_us");
      printf("\n");
      fflush(stdout);
    }
    int si = 0;
    for (size_t bytes = o.min_size; bytes <= o.max_size; bytes *= o.factor, ++si) {
      const int count = (int)(bytes / sizeof(float));
      MPI_Request req;
      /* Warm-up, also the estimate of one iteration's time for the count. */
      const int nwarm = o.warmup < 3 ? 3 : o.warmup;
      for (int i = 0; i < nwarm; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = bench_now_s();
        MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        pure[i] = bench_now_s() - t0;
      }
      /* Every rank must use the same counts: all derive them from t_max. */
      const double t_est = bench_median(pure, nwarm);
      double t_max = 0;
      MPI_Allreduce(&t_est, &t_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      int iters = o.iters;
      if (iters == 0) {
        /* The overlap phase takes about twice the pure one. */
        iters = (int)(o.budget / (t_max + 20e-6));
        if (iters < 10) iters = 10;
        if (iters > 1000) iters = 1000;
      }

      /* Pure communication. */
      for (int i = 0; i < iters; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = bench_now_s();
        MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        pure[i] = bench_now_s() - t0;
      }
      const double pure_min = mean_over_ranks(minimum(pure, iters), nranks);
      const double pure_med = mean_over_ranks(bench_median(pure, iters), nranks);

      /* Overlap: the same comm with compute as long as the pure comm. */
      const double target = pure_med;
      if (k == BUSY) {
        MPI_Barrier(MPI_COMM_WORLD);
        calibrate_busy();
      }
      overlap_loop(k, target, send, recv, count, o.warmup, iters, overall, comp);
      for (int i = 0; i < iters; ++i) exposed[i] = overall[i] - comp[i];
      const double comp_med = mean_over_ranks(bench_median(comp, iters), nranks);
      const double overall_med = mean_over_ranks(bench_median(overall, iters), nranks);
      const double exposed_med = mean_over_ranks(bench_median(exposed, iters), nranks);
      double overlap = 100.0 * (1.0 - exposed_med / pure_med);
      if (overlap < 0) overlap = 0;

      /* The same with a compute time given from outside (--fixed-us), e.g. the
       * pure comm time of another configuration, so that configurations can be
       * compared at equal compute: what the application waits for in all. */
      double fix_target = -1e-6, fix_comp = -1e-6, fix_overall = -1e-6;
      if (si < o.nfixed) {
        fix_target = o.fixed_us[si] * 1e-6;
        int fiters = (int)(o.budget / (fix_target + t_max + 20e-6));
        if (fiters < 10) fiters = 10;
        if (fiters > iters) fiters = iters;
        overlap_loop(k, fix_target, send, recv, count, o.warmup, fiters, overall, comp);
        fix_comp = mean_over_ranks(bench_median(comp, fiters), nranks);
        fix_overall = mean_over_ranks(bench_median(overall, fiters), nranks);
      }
      if (rank == 0) {
        printf("%10zu %6d %11.1f %11.1f %11.1f %11.1f %11.1f %6.2f %8.1f", bytes, iters, pure_med * 1e6, pure_min * 1e6,
               target * 1e6, comp_med * 1e6, overall_med * 1e6, comp_med / target, overlap);
        if (si < o.nfixed) printf(" %11.1f %11.1f %11.1f", fix_target * 1e6, fix_comp * 1e6, fix_overall * 1e6);
        printf("\n");
        if (o.csv)
          printf("csv,%s,%zu,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%d,%.3f,%.3f,%.3f\n", kind_name[k], bytes, iters,
                 pure_med * 1e6, pure_min * 1e6, target * 1e6, comp_med * 1e6, overall_med * 1e6, exposed_med * 1e6,
                 overlap, wrapped, fix_target * 1e6, fix_comp * 1e6, fix_overall * 1e6);
        fflush(stdout);
      }
    }
  }
  if (rank == 0 && o.csv)
    printf(
        "# csv columns: csv,kind,bytes,iters,pure_med_us,pure_min_us,target_us,compute_us,overall_us,"
        "exposed_us,overlap_pct,wrapper,fixed_target_us,fixed_compute_us,fixed_overall_us (-1: no --fixed-us)\n");
  free(send);
  free(recv);
  free(pure);
  free(exposed);
  free(comp);
  free(overall);
  MPI_Finalize();
  return 0;
}
