/* Definitions of the netlib CBLAS globals (see cblas_state.h); exported. */
#include "shim/common/cblas_state.h"

int RowMajorStrg = 0;
int CBLAS_CallFromC = 0;
