// HCOPS_VERBOSE output of the ABI layers, in the manner of ONEDNN_VERBOSE
// and MKL_VERBOSE: the engines return what they did, and each layer prints
// its own arguments with it. Level 1: one CSV line per call HCOps computed,
//   hcops_verbose,exec,<call fields>,<threads>,<ms>,<gflops>,<impl>,<details>
// where <call fields> are the layer's own (its legend line says which),
// <impl> is "hcops:<kernel family>" and <details> how it ran. Level 2 adds
// a summary line per distinct call at exit. The first line of a process is
// one hcops_verbose,info line on the engine (kernel family, domains, threads).
#pragma once

#include <string>

namespace hcops {

// One executed call. `legend` names the call fields (printed once per
// distinct legend, as "hcops_verbose,legend,<legend>,threads,ms,gflops,impl,details");
// `call` holds them. `key` is the part of `call` the level-2 summary groups
// by, `key_legend` names its fields (a legend must start with the key's).
void report_exec(const char *legend, const char *key_legend, const std::string &call, const std::string &key,
                 const std::string &impl, const std::string &details, int threads, double flops, double seconds);

// CLOCK_MONOTONIC in seconds.
double now_seconds();

}  // namespace hcops
