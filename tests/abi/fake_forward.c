/* The description of the fake foreign library, as shim/<lib>/ would write
 * one for a real library (compare shim/blas/underlying.c). Not const: a test
 * changes the defaults or the order before the first forwarded call. */
#define HCOPS_FORWARD_TABLE fake
#define HCOPS_FORWARD_DEF "tests/abi/fake_foreign.def"
#include "shim/common/forward_table.h"

HCOPS_FOREIGN_LIBRARY("fake foreign library", "HCOPS_TEST_FAKE", "fake_probe", "the fake library",
                      FAKE_DIR "/libfake_foreign_a.so");
