// HCOPS_API marks what libhcops.so.0 exports to HCOps's own framework
// layers (libhcops_torch.so, libhcops_torch2.so): the GEMM engine, the
// operators and the few common services they call, so that a process has
// one engine (one workspace, one kernel choice, one thread policy, one
// warn-once state) whichever route reaches it. The engine is compiled with
// -fvisibility=hidden; these declarations are default, and
// shim/libhcops.map's extern "C++" list exports them (a pattern missing
// there fails the framework layers' link: --no-undefined). Not a public
// API: C++ between libraries of one HCOps build, which the framework layer
// checks at load (hcops_version()); include/hcops.h is the public one.
#pragma once

#define HCOPS_API __attribute__((visibility("default")))

// Around a header's namespace when everything it declares is interface (the
// operators' entry points, ops/*.h): includes stay outside.
#define HCOPS_API_BEGIN _Pragma("GCC visibility push(default)")
#define HCOPS_API_END _Pragma("GCC visibility pop")
