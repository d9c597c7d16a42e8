// dnnl_primitive_create / _execute / _destroy: libdnnl makes every
// primitive; HCOps keeps a plan beside the ones it computes (side_table.h)
// and answers their executes, handing everything else on unchanged.
// libdnnl does not call these three itself, so each call here is the
// application's.
#include <oneapi/dnnl/dnnl.h>

#include "common/fp_env.h"
#include "common/log.h"
#include "shim/common/verbose.h"
#include "shim/dnnl/claim.h"
#include "shim/dnnl/decline.h"
#include "shim/dnnl/real.h"
#include "shim/dnnl/report.h"
#include "shim/dnnl/side_table.h"
#include "shim/dnnl/takeover.h"

namespace {

using namespace hcops::dnnl;

// The plan for a CPU matmul or inner product HCOps computes, else nullptr;
// `kind_name`: "matmul" or "inner_product" for those, else null (the kinds HCOps
// does not compute, which it does not report one by one).
std::unique_ptr<PrimitivePlan> plan_for(const_dnnl_primitive_desc_t pd, const char **kind_name) {
  *kind_name = nullptr;
  (void)take_decline();  // a reason left by an earlier call is not this one's
  dnnl_primitive_kind_t kind;
  if (dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind) != dnnl_success) return nullptr;
  if (kind != dnnl_matmul && kind != dnnl_inner_product) return nullptr;
  *kind_name = kind == dnnl_matmul ? "matmul" : "inner_product";
  dnnl_engine_t engine = nullptr;
  dnnl_engine_kind_t engine_kind;
  if (dnnl_primitive_desc_query(pd, dnnl_query_engine, 0, &engine) != dnnl_success || !engine ||
      dnnl_engine_get_kind(engine, &engine_kind) != dnnl_success || engine_kind != dnnl_cpu)
    return declined("engine");
  return kind == dnnl_matmul ? matmul_plan(pd) : inner_product_plan(pd);
}

}  // namespace

extern "C" {

dnnl_status_t dnnl_primitive_create(dnnl_primitive_t *primitive, const_dnnl_primitive_desc_t primitive_desc) {
  static const auto real = HCOPS_DNNL_REAL(dnnl_primitive_create);
  if (!real) return dnnl_runtime_error;  // the forwarder has said why
  const dnnl_status_t st = real(primitive, primitive_desc);
  if (st != dnnl_success || !primitive || !*primitive || !hcops_dnnl_takeover()) return st;
  // A fresh primitive may have an address a destroyed one had: its plan, if
  // any, is its own.
  const char *kind = nullptr;
  std::unique_ptr<PrimitivePlan> plan = plan_for(primitive_desc, &kind);
  if (plan) {
    side_table_insert(*primitive, std::move(plan));
  } else {
    side_table_erase(*primitive);
    if (kind) report_declined(kind, "create", take_decline());
  }
  return st;
}

dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs,
                                     const dnnl_exec_arg_t *args) {
  static const auto real = HCOPS_DNNL_REAL(dnnl_primitive_execute);
  const PrimitivePlan *plan = primitive && hcops_dnnl_takeover() ? side_table_find(primitive) : nullptr;
  // A CPU stream of an OpenMP libdnnl (Debian's) runs in order and
  // synchronously: computing here, now, is what its execute would do.
  if (plan && (args || nargs == 0) && nargs >= 0) {
    const bool timed = hcops::verbose_level() > 0;
    double t0 = 0;
    if (timed) {
      hcops::KeepFpEnv keep;
      t0 = hcops::now_seconds();
    }
    const char *family = "none";
    (void)take_decline();
    if (!run_plan(*plan, nargs, args, &family)) {
      report_declined(plan->verbose.kind.c_str(), "execute", take_decline());
    } else {
      if (timed) {
        hcops::KeepFpEnv keep;
        report_executed(*plan, family, hcops::now_seconds() - t0);
      }
      return dnnl_success;
    }
  } else if (plan) {
    report_declined(plan->verbose.kind.c_str(), "execute", "bad_arguments");  // libdnnl says what
  }
  if (!real) return dnnl_runtime_error;
  report_forwarded();
  return real(primitive, stream, nargs, args);
}

dnnl_status_t dnnl_primitive_destroy(dnnl_primitive_t primitive) {
  static const auto real = HCOPS_DNNL_REAL(dnnl_primitive_destroy);
  if (primitive) side_table_erase(primitive);
  if (!real) return dnnl_runtime_error;
  return real(primitive);
}

}  // extern "C"
