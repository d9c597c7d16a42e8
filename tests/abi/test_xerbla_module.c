/* Opens the module named on the command line RTLD_LOCAL, as Python opens
 * extension modules, and runs its checks (xerbla_module.c). Defines no
 * xerbla_ and links no BLAS: the module's dependencies, or a preloaded
 * libhcops, provide the routines. Exit 0 passed, 1 failed, 99 cannot run. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE.so\n", argv[0]);
    return 99;
  }
  void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    printf("ERROR: cannot open %s: %s\n", argv[1], dlerror());
    return 99;
  }
  int (*check)(void) = (int (*)(void))dlsym(module, "xerbla_module_check");
  if (!check) {
    printf("ERROR: %s has no xerbla_module_check\n", argv[1]);
    return 99;
  }
  int failures = check();
  printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
