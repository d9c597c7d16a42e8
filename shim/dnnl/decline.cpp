#include "shim/dnnl/decline.h"

#include "shim/dnnl/plan.h"

namespace hcops::dnnl {

namespace {
thread_local const char *reason = nullptr;
}  // namespace

bool decline(const char *why) {
  if (!reason) reason = why;
  return false;
}

std::unique_ptr<PrimitivePlan> declined(const char *why) {
  decline(why);
  return nullptr;
}

const char *take_decline() {
  const char *why = reason ? reason : "unclaimed";
  reason = nullptr;
  return why;
}

}  // namespace hcops::dnnl
