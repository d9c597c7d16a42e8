/* The description of the fake foreign library, as shim/<lib>/ would write
 * one for a real library (compare shim/blas/reference.c). Not const: a test
 * changes the defaults or the order before the first forwarded call. */
#define HCOPS_FORWARD_TABLE fake
#define HCOPS_FORWARD_DEF "tests/abi/fake_foreign.def"
#include "shim/common/forward_table.h"

static const char *const defaults[] = {FAKE_DIR "/libfake_foreign_a.so", NULL};

struct hcops_foreign HCOPS_FORWARD_LIB = {
    .what = "fake foreign library",
    .env = "HCOPS_TEST_FAKE",
    .probe = "fake_probe",
    .defaults = defaults,
    .hint = "the fake library",
    HCOPS_FORWARD_TABLE_FIELDS,
};
