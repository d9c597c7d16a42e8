/* Conformance of matmul and inner-product primitives through oneDNN's C API,
 * in the spirit of benchdnn: a fixed list of edge cases and a seeded random
 * set, each built (desc_init, attributes, dnnl_primitive_desc_create or the
 * iterator), executed and compared with an f64 reference within the bounds
 * of conf_problem.h. One line per problem:
 *   <name> ok|FAIL <max_err> <bound> claim|forward <digest>
 * Each problem is marked must-claim (HCOps runs it under the preload: an
 * hcops_verbose exec line per execution, except that an execution on an
 * empty dst, with nothing to compute, may be handed on) or must-forward (the real library
 * runs it: no exec line, but one "hcops_verbose,fallback,dnnl,<kind>,create,
 * <reason>" line, whose reason ends the problem's line as "declined:
 * <reason>"; test_dnnl_conformance.sh compares its digest with the stock
 * run's, bit for bit, and checks the reasons of some).
 *
 *   --seed=N     the random set's seed (default: DNNL_CONF_SEED, else the
 *                time; printed first)
 *   --random=N   how many random problems (default 40)
 *   --expect=claims  the run is under the preload with HCOPS_VERBOSE=1:
 *                check the marks; --expect=none: no hcops exec or fallback
 *                line at all (stock, HCOPS_DNNL=0); default: no verbose check
 *   --only=TEXT  the problems whose name contains TEXT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf_conv.h"
#include "conf_ip.h"
#include "conf_matmul.h"
#include "conformance_list.h"

typedef enum { EXPECT_NOTHING, EXPECT_CLAIMS, EXPECT_NONE } expectation;

static const char *kind_name(const problem *p) {
  return p->kind == P_MATMUL ? "matmul" : p->kind == P_IP ? "inner_product" : "convolution";
}

/* The prop kind field of the problem's verbose line, as ONEDNN_VERBOSE
 * prints it. */
static const char *prop_name(const problem *p) {
  static const char *const dirs[] = {"forward_training", "forward_inference", "backward_data", "backward_weights"};
  return p->kind == P_IP ? dirs[p->u.ip.dir] : p->kind == P_MATMUL ? "undef" : "forward_inference";
}

/* Runs one problem; prints its line; returns whether it passed. */
static int run_problem(const problem *p, uint64_t seed, expectation expect) {
  conf_result r;
  const char *name = problem_name(p);
  claim_mark mark = problem_mark(p);
  if (expect != EXPECT_NOTHING) capture_begin();
  switch (p->kind) {
    case P_MATMUL: run_matmul(&p->u.mm, seed, &r); break;
    case P_IP: run_ip(&p->u.ip, seed, &r); break;
    case P_CONV: run_conv(&p->u.conv, seed, &r); break;
  }
  char note[320] = "";
  if (expect != EXPECT_NOTHING) {
    char *text = capture_end();
    int ours = count_hcops_exec(text, kind_name(p), prop_name(p)), any = count_hcops_exec(text, NULL, NULL);
    /* Must-claim: a line per execution; one on an empty dst may have none. */
    int want = expect == EXPECT_CLAIMS && mark == MUST_CLAIM ? r.executions : 0;
    int least = expect == EXPECT_CLAIMS && mark == MUST_CLAIM ? r.executions - r.empty_executions : 0;
    if (ours < least || ours > want || any != ours) {
      snprintf(note, sizeof note, " verbose: %d hcops exec lines (%d of %s,%s), want %d", any, ours, kind_name(p),
               prop_name(p), want);
      r.ok = 0;
    }
    /* Fallback lines: one at create for a must-forward matmul or inner
     * product the library made (none for a convolution, which HCOps does not
     * compute), none for a must-claim one but at an execute it may hand on
     * (an empty dst), none at all without the preload. */
    char why[64];
    int created = count_hcops_fallback(text, kind_name(p), "create", why, sizeof why);
    int executed = count_hcops_fallback(text, kind_name(p), "execute", NULL, 0);
    int fallbacks = count_hcops_fallback(text, NULL, NULL, NULL, 0);
    int want_created = expect == EXPECT_CLAIMS && mark == MUST_FORWARD && p->kind != P_CONV && !r.skipped ? 1 : 0;
    int most_executed = expect == EXPECT_CLAIMS && mark == MUST_CLAIM ? r.empty_executions : 0;
    if (created != want_created || executed > most_executed || fallbacks != created + executed) {
      snprintf(note + strlen(note), sizeof note - strlen(note),
               " verbose: %d fallback lines (%d at create, %d at execute), want %d at create", fallbacks, created,
               executed, want_created);
      r.ok = 0;
    }
    if (created) snprintf(note + strlen(note), sizeof note - strlen(note), " declined: %s", why);
    free(text);
  }
  if (r.skipped) snprintf(note + strlen(note), sizeof note - strlen(note), " skipped: %s", r.skipped);
  if (!r.gaps_ok) snprintf(note + strlen(note), sizeof note - strlen(note), " wrote outside its elements");
  printf("%-60s %s %.3e %.3e %s %016llx%s\n", name, r.ok ? "ok" : "FAIL", r.max_err, r.bound,
         mark == MUST_CLAIM ? "claim" : "forward", (unsigned long long)r.digest, note);
  fflush(stdout);
  return r.ok;
}

int main(int argc, char **argv) {
  uint64_t seed = (uint64_t)time(NULL);
  const char *env_seed = getenv("DNNL_CONF_SEED");
  if (env_seed && *env_seed) seed = strtoull(env_seed, NULL, 0);
  int nrandom = 40;
  expectation expect = EXPECT_NOTHING;
  const char *only = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--seed=", 7)) seed = strtoull(argv[i] + 7, NULL, 0);
    else if (!strncmp(argv[i], "--random=", 9)) nrandom = atoi(argv[i] + 9);
    else if (!strcmp(argv[i], "--expect=claims")) expect = EXPECT_CLAIMS;
    else if (!strcmp(argv[i], "--expect=none")) expect = EXPECT_NONE;
    else if (!strncmp(argv[i], "--only=", 7)) only = argv[i] + 7;
    else {
      fprintf(stderr, "usage: %s [--seed=N] [--random=N] [--expect=claims|none] [--only=TEXT]\n", argv[0]);
      return 2;
    }
  }
  printf("seed %llu\n", (unsigned long long)seed);

  int count = 0;
  problem *list = conformance_list(seed, nrandom, &count);
  int failed = 0, ran = 0;
  for (int i = 0; i < count; ++i) {
    if (only && !strstr(problem_name(&list[i]), only)) continue;
    ++ran;
    /* Each problem's data from the seed and its place in the list. */
    if (!run_problem(&list[i], seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)), expect)) ++failed;
  }
  free(list);
  printf("conformance: %d problems, %d failed (seed %llu)\n", ran, failed, (unsigned long long)seed);
  return failed ? 1 : 0;
}
