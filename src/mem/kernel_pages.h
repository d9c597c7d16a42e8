// What the kernel does with the anonymous pages libhcops_mem maps, as /sys
// says: the transparent huge page mode its "thp" rules depend on, and whether
// the machine is a guest that hands free memory back to its hypervisor
// (virtio-balloon free page reporting). On such a guest a huge page, which
// needs a whole free 2 MiB block, is nearly always faulted on a block the host
// has discarded and must back again: 0.46-0.65 GB/s on the guest measured in
// doc/perf/step_limit.md, against 10 GB/s for a block the host still backs.
#pragma once

#include <string>

namespace hcops {
namespace mem {

// One line for hcops-info and the info report, without a newline.
std::string describe_kernel_pages();

}  // namespace mem
}  // namespace hcops
