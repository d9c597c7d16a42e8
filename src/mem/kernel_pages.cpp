#include "mem/kernel_pages.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace hcops {
namespace mem {

namespace {

// The first line of a small /sys file, "" when it cannot be read. read(2),
// not stdio: this runs inside a preloaded allocator.
std::string first_line(const std::string &path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return "";
  buf[n] = 0;
  buf[strcspn(buf, "\n")] = 0;
  return buf;
}

// The bracketed choice of a setting such as "always [madvise] never".
std::string chosen(const std::string &setting) {
  const auto open_bracket = setting.find('['), close_bracket = setting.find(']');
  if (open_bracket == std::string::npos || close_bracket == std::string::npos || close_bracket < open_bracket)
    return "unknown";
  return setting.substr(open_bracket + 1, close_bracket - open_bracket - 1);
}

// Whether a virtio balloon bound to its driver offers free page reporting:
// its features file lists the negotiated feature bits as '0'/'1' characters,
// bit 5 being VIRTIO_BALLOON_F_REPORTING (the virtio specification).
bool balloon_reports() {
  const char *dir = "/sys/bus/virtio/drivers/virtio_balloon";
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (const dirent *e = readdir(d)) {
    if (strncmp(e->d_name, "virtio", 6) != 0) continue;
    const std::string bits = first_line(std::string(dir) + "/" + e->d_name + "/features");
    if (bits.size() > 5 && bits[5] == '1') found = true;
  }
  closedir(d);
  return found;
}

}  // namespace

std::string describe_kernel_pages() {
  const std::string thp = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s = "kernel pages: transparent huge pages ";
  if (thp.empty()) {
    s += "not in this kernel";
  } else {
    s += chosen(thp) + " (defrag " + chosen(first_line("/sys/kernel/mm/transparent_hugepage/defrag")) + ")";
  }
  const std::string order = first_line("/sys/module/page_reporting/parameters/page_reporting_order");
  s += "; free page reporting to a hypervisor: ";
  if (order.empty()) {
    s += "not in this kernel";
  } else if (!balloon_reports()) {
    s += "no reporting device";
  } else {
    s += "on, free blocks of 2^" + order +
         " pages and larger (a huge page faulted on one waits while the host backs it again)";
  }
  return s;
}

}  // namespace mem
}  // namespace hcops
