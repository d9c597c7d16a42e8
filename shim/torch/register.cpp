// Registration at load time. The aten overrides go through one
// torch::Library built by a function run when the library is loaded (not
// TORCH_LIBRARY_IMPL's static object) so that it can run under a silent
// warning handler: PyTorch warns "Overriding a previously registered
// kernel" once per operator, which a library loaded into someone else's
// process must not print. The hcops:: operators are the Python-visible
// switch and counters.
#include "shim/torch/register.h"

#include <c10/util/Exception.h>
#include <torch/library.h>


#include "common/fault.h"
#include "config.h"
#include "hcops.h"
#include "ops/family.h"
#include "ops/interface.h"
#include "common/log.h"
#include "shim/torch/report.h"
#include "shim/torch/selection.h"

namespace hcops::torch_ops {

std::vector<std::string> &registered_names() {
  static auto *names = new std::vector<std::string>;  // never destroyed: read until exit
  return *names;
}

namespace {

// Swallows the warnings of our own registration: the guard holds the
// handler (process-wide in 1.13, per thread in 2.x) only while the overrides register, at
// load time, which Python runs under the GIL.
class Silent : public c10::WarningHandler {
 public:
#if HCOPS_TORCH_MAJOR >= 2
  void process(const c10::Warning &) override {}
#else
  void process(const c10::SourceLocation &, const std::string &, const bool) override {}
#endif
};

#if HCOPS_TORCH_MAJOR >= 2
using WarningGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningGuard = c10::Warning::WarningHandlerGuard;
#endif

void set_enabled(bool on) { enabled.store(on, std::memory_order_relaxed); }
// The state this thread's calls see: its override, else the process-wide switch.
bool is_enabled() { return switched_on(); }
// This thread's override: -1 none (the process-wide switch decides), 0 off, 1 on.
int64_t thread_override() { return thread_enabled; }
void set_thread_override(int64_t state) {
  TORCH_CHECK(state >= -1 && state <= 1, "hcops::set_thread_enabled: ", state, " is not -1 (none), 0 or 1");
  thread_enabled = int8_t(state);
}
std::vector<std::string> loaded_ops() { return registered_names(); }

// [calls HCOps computed, calls left to PyTorch's kernel] of an aten
// operator by its name ("gelu", "_softmax_backward_data", ...).
std::vector<int64_t> call_counts(const std::string &op) {
  const Op o = op_named(op);
  TORCH_CHECK(o != Op::count, "hcops::call_counts: ", op, " is not an operator HCOps replaces");
  return {taken_calls(o), fallback_calls(o)};
}

// The family the operators run on ("avx2", ...: HCOPS_ISA's names), for
// hcops.torch.inductor's choice of what compiled graphs call.
std::string ops_family() { return ops::ops_family(); }
void info(const std::string &what) { report_info(what); }

// For tests of what HCOps does without memory (common/fault.h): the
// allocation of HCOps' own buffers after the next n fails; n < 0: none.
void fail_allocation_after(int64_t n) { fault::fail_allocation_after(long(n)); }
int64_t allocations_failed() { return fault::allocations_failed(); }

void register_switches(torch::Library &m) {
  m.def("set_enabled(bool enabled) -> ()", &set_enabled);
  m.def("is_enabled() -> bool", &is_enabled);
  m.def("thread_enabled() -> int", &thread_override);
  m.def("set_thread_enabled(int state) -> ()", &set_thread_override);
  m.def("loaded_ops() -> str[]", &loaded_ops);
  m.def("call_counts(str op) -> int[]", &call_counts);
  m.def("ops_family() -> str", &ops_family);
  m.def("info(str what) -> ()", &info);
  m.def("fail_allocation_after(int n) -> ()", &fail_allocation_after);
  m.def("allocations_failed() -> int", &allocations_failed);
}

// The first line of a c10::Error's message (the rest is a C++ backtrace).
std::string first_line(const char *what) {
  const std::string s(what);
  return s.substr(0, s.find('\n'));
}

void register_overrides() {
  // The engine and the operators are libhcops.so.0's (src/common/api.h), a
  // C++ interface between libraries of one build: another build's
  // libhcops.so.0 (preloaded from another install, first on
  // LD_LIBRARY_PATH) may lay out what they share differently
  // (ops/interface.h). hcops.torch then raises ImportError.
  if (engine_interface_tag() != interface_tag(PACKAGE_VERSION)) {
    error("libhcops_torch (HCOps %s) and the libhcops.so.0 in this process (HCOps %s) are from different builds; "
          "its operators are not registered, PyTorch's own kernels stay in use",
          PACKAGE_VERSION, hcops_version());
    return;
  }
  Silent silent;
  WarningGuard guard(&silent);
  // A registration PyTorch refuses (a second copy of this library loaded
  // from another path, a PyTorch whose schemas differ) throws, here in a
  // static initialiser, where an exception would abort the host process:
  // say so and leave PyTorch's kernels (or those registered so far) in use.
  try {
    // Kept for the life of the process: destroying them would deregister the
    // kernels during exit, while other libraries' destructors may still run ops.
    auto *h = new torch::Library(torch::Library::FRAGMENT, "hcops", c10::nullopt, __FILE__, __LINE__);
    register_switches(*h);
    register_adam(*h);
    auto *m = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    register_eltwise(*m);
    register_softmax(*m);
    register_layer_norm(*m);
    register_gemm(*m);
    register_attention(*m);
    register_binary(*m);
    register_reduce(*m);
  } catch (const std::exception &e) {
    error("libhcops_torch.so could not register its operators, PyTorch's own kernels stay in use: %s",
          first_line(e.what()).c_str());
  }
}

const int registered = (register_overrides(), 0);

}  // namespace

// The torch this library was built against, as a marker in its bytes:
// hcops.torch reads it from the file before loading, to load only the
// build made for the torch running (a library built against another torch
// would bring that torch's libtorch_cpu in beside it, or fail to resolve).
extern "C" __attribute__((used, visibility("hidden"))) const char hcops_torch_built_for[] =
    "hcops-torch-built-for:" HCOPS_TORCH_VERSION;

}  // namespace hcops::torch_ops
