#include "common/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace hcops {

static unsigned long long xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool request_tile_permission() {
  // <asm/prctl.h>'s values, spelt out: older headers lack them.
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) == 0 && (permitted & (1ul << kXfeatureXtiledata)))
    return true;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

bool amx_usable(bool cpu_has_amx, bool os_saves_tiles, bool (*request)()) {
  return cpu_has_amx && os_saves_tiles && request();
}

static CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  char vendor[13];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  f.vendor = vendor;

  __get_cpuid(1, &a, &b, &c, &d);
  f.sse2 = d & (1u << 26);
  const bool osxsave = c & (1u << 27);
  const unsigned long long xcr = osxsave ? xcr0() : 0;
  const bool os_avx = (xcr & 0x6) == 0x6;                 // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr & 0x60000) == 0x60000;         // XTILECFG, XTILEDATA
  f.avx = os_avx && (c & (1u << 28));
  f.fma = f.avx && (c & (1u << 12));

  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = f.avx && (b & (1u << 5));
    f.avx512f = os_avx512 && (b & (1u << 16));
    f.avx512dq = f.avx512f && (b & (1u << 17));
    f.avx512bw = f.avx512f && (b & (1u << 30));
    f.avx512vl = f.avx512f && (b & (1u << 31));
    // What the CPU and the OS offer; Linux's permission for the tile data is
    // asked later, and only by a caller about to use it (tile_state_granted).
    f.amx_tile = os_amx && (d & (1u << 24));
    f.amx_bf16 = f.amx_tile && (d & (1u << 22));
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = f.avx512f && (a & (1u << 5));
  }

  __get_cpuid(0x80000000, &a, &b, &c, &d);
  if (a >= 0x80000004) {
    unsigned regs[12];
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49];
    std::memcpy(brand, regs, 48);
    brand[48] = 0;
    f.brand = brand;
    f.brand.erase(0, f.brand.find_first_not_of(' '));
  }
  return f;
}

namespace {
struct FeatureName {
  uint64_t bit;
  const char *name;
};
constexpr FeatureName kNames[] = {
    {kSse2, "sse2"},         {kAvx, "avx"},           {kFma, "fma"},
    {kAvx2, "avx2"},         {kAvx512f, "avx512f"},   {kAvx512dq, "avx512dq"},
    {kAvx512bw, "avx512bw"}, {kAvx512vl, "avx512vl"}, {kAvx512Bf16, "avx512_bf16"},
    {kAmxTile, "amx_tile"},  {kAmxBf16, "amx_bf16"},
};
}  // namespace

uint64_t CpuFeatures::mask() const {
  const bool on[] = {sse2, avx, fma, avx2, avx512f, avx512dq, avx512bw, avx512vl, avx512_bf16, amx_tile, amx_bf16};
  static_assert(sizeof on / sizeof *on == sizeof kNames / sizeof *kNames, "one flag per feature name");
  uint64_t m = 0;
  for (size_t i = 0; i < sizeof on / sizeof *on; ++i)
    if (on[i]) m |= kNames[i].bit;
  return m;
}

std::string feature_names(uint64_t mask) {
  std::string s;
  for (const FeatureName &f : kNames)
    if (mask & f.bit) s += (s.empty() ? "" : " ") + std::string(f.name);
  return s;
}

std::string CpuFeatures::describe() const { return feature_names(mask()); }

const CpuFeatures &cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

bool tile_state_granted() {
  static const bool granted = [] {
    const CpuFeatures &f = cpu_features();
    const bool ok = amx_usable(f.amx_tile, true, &request_tile_permission);
    const int err = errno;
    if (f.amx_tile && !ok && verbose_level() > 0)
      error(
          "Linux refused the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM): %s): the amx kernel family is off, "
          "the next family serves",
          std::strerror(err));
    return ok;
  }();
  return granted;
}

bool tile_state_refused() { return cpu_features().amx_tile && !tile_state_granted(); }

bool features_usable(uint64_t needs) {
  if ((cpu_features().mask() & needs) != needs) return false;
  return !(needs & (kAmxTile | kAmxBf16)) || tile_state_granted();
}

}  // namespace hcops
