/* The trampolines of the fake foreign library's symbols (fake_foreign.def). */
#define HCOPS_FORWARD_TABLE fake
#define HCOPS_FORWARD_DEF "tests/abi/fake_foreign.def"
#include "shim/common/forward_trampolines.inc"
