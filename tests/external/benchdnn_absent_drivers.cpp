// The benchdnn drivers that benchdnn.mk does not compile. benchdnn's main()
// dispatches to every driver's bench(); HCOps tests only matmul and ip (and
// compiles binary, whose post-op set-up they call), so the others are these
// stand-ins, which say so and stop. Nothing the matmul and ip drivers call
// is stubbed: the link fails if one of them ever needs another driver.
#include <cstdio>
#include <cstdlib>

#define HCOPS_ABSENT_DRIVER(name)                                                                          \
  namespace name {                                                                                         \
  int bench(int, char **) {                                                                                \
    std::fprintf(stderr, "hcops: this benchdnn is built with the matmul, ip and binary drivers only (not --" \
                         #name ")\n");                                                                     \
    std::exit(2);                                                                                          \
  }                                                                                                        \
  }

HCOPS_ABSENT_DRIVER(self)
HCOPS_ABSENT_DRIVER(conv)
HCOPS_ABSENT_DRIVER(deconv)
HCOPS_ABSENT_DRIVER(shuffle)
HCOPS_ABSENT_DRIVER(reorder)
HCOPS_ABSENT_DRIVER(bnorm)
HCOPS_ABSENT_DRIVER(lnorm)
HCOPS_ABSENT_DRIVER(rnn)
HCOPS_ABSENT_DRIVER(softmax)
HCOPS_ABSENT_DRIVER(pool)
HCOPS_ABSENT_DRIVER(prelu)
HCOPS_ABSENT_DRIVER(sum)
HCOPS_ABSENT_DRIVER(eltwise)
HCOPS_ABSENT_DRIVER(concat)
HCOPS_ABSENT_DRIVER(lrn)
HCOPS_ABSENT_DRIVER(resampling)
HCOPS_ABSENT_DRIVER(reduction)
HCOPS_ABSENT_DRIVER(zeropad)
