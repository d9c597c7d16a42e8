// A program that uses one of libdnnl's exported C++ internals, as oneDNN's
// own benchdnn does, declared by hand (no public header has it): linked
// -ldnnl, it must still load and run with lib/hcops/libdnnl.so.2 first in
// LD_LIBRARY_PATH (test_dnnl_installed.sh), where the symbol is not HCOps's
// and must come from the real library the copy brings in.
#include <cstdio>

#include <oneapi/dnnl/dnnl.h>

namespace dnnl {
namespace impl {
dnnl_status_t get_primitive_cache_size(int *size);
}  // namespace impl
}  // namespace dnnl

int main() {
  int size = -1;
  const dnnl_status_t st = dnnl::impl::get_primitive_cache_size(&size);
  int capacity = -1;
  const dnnl_status_t st2 = dnnl_get_primitive_cache_capacity(&capacity);
  std::printf("get_primitive_cache_size: status %d size %d; capacity: status %d, %d\n", int(st), size, int(st2),
              capacity);
  return st == dnnl_success && size == 0 && st2 == dnnl_success && capacity > 0 ? 0 : 1;
}
