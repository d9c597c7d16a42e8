/* Definitions of the netlib CBLAS globals (see cblas_state.h); exported. */
#include "cblas_state.h"

int RowMajorStrg = 0;
int CBLAS_CallFromC = 0;
