#include "common/cpu_features.h"

#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <sys/prctl.h>

#include <cstdio>
#endif

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/env.h"
#include "common/log.h"

namespace hcops {

#if defined(__x86_64__)
static unsigned long long xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

#endif

bool request_tile_permission() {
#if !defined(__x86_64__)
  errno = ENOSYS;  // no AMX off x86-64
  return false;
#else
  // <asm/prctl.h>'s values, spelt out: older headers lack them.
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) == 0 && (permitted & (1ul << kXfeatureXtiledata)))
    return true;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#endif
}

bool amx_usable(bool cpu_has_amx, bool os_saves_tiles, bool (*request)()) {
  return cpu_has_amx && os_saves_tiles && request();
}

#if defined(__aarch64__)
// Linux's AArch64 hwcaps (<asm/hwcap.h>), spelt out: older headers lack the
// SME ones.
constexpr unsigned long kHwcapAsimd = 1ul << 1, kHwcapSve = 1ul << 22;
constexpr unsigned long kHwcap2Sve2 = 1ul << 1, kHwcap2SveBf16 = 1ul << 12, kHwcap2I8mm = 1ul << 13, kHwcap2Bf16 = 1ul << 14,
                        kHwcap2SmeB16F32 = 1ul << 28, kHwcap2SmeF32F32 = 1ul << 29, kHwcap2Sme = 1ul << 23,
                        kHwcap2SmeF64F64 = 1ul << 25;

static CpuFeatures detect() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = hw & kHwcapAsimd;
  f.sve = hw & kHwcapSve;
  f.sve2 = f.sve && (hw2 & kHwcap2Sve2);
  f.bf16 = hw2 & kHwcap2Bf16;
  f.sve_bf16 = f.sve && (hw2 & kHwcap2SveBf16);
  f.i8mm = hw2 & kHwcap2I8mm;
  f.sme = hw2 & kHwcap2Sme;
  f.sme_f32f32 = f.sme && (hw2 & kHwcap2SmeF32F32);
  f.sme_b16f32 = f.sme && (hw2 & kHwcap2SmeB16F32);
  f.sme_f64f64 = f.sme && (hw2 & kHwcap2SmeF64F64);
  // The implementer and part of the first CPU, for hcops-info (never for dispatch).
  if (FILE *cpuinfo = std::fopen("/proc/cpuinfo", "r")) {
    char line[256];
    unsigned implementer = 0, part = 0;
    while (std::fgets(line, sizeof line, cpuinfo))
      if (std::sscanf(line, "CPU implementer : %x", &implementer) == 1 ||
          std::sscanf(line, "CPU part : %x", &part) == 1)
        if (implementer && part) break;
    std::fclose(cpuinfo);
    char brand[64] = "AArch64";  // (an emulator shows its host's cpuinfo)
    if (implementer && part)
      std::snprintf(brand, sizeof brand, "AArch64 implementer 0x%02x part 0x%03x", implementer, part);
    f.brand = brand;
  }
  f.vendor = "arm64";
  return f;
}
#else
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
#endif

namespace {
// Each feature's bit, name and flag: one table, read by mask(), the names
// and HCOPS_CPU_DISABLE alike.
struct FeatureName {
  uint64_t bit;
  const char *name;
  bool CpuFeatures::*flag;
};
constexpr FeatureName kNames[] = {
    {kSse2, "sse2", &CpuFeatures::sse2},
    {kAvx, "avx", &CpuFeatures::avx},
    {kFma, "fma", &CpuFeatures::fma},
    {kAvx2, "avx2", &CpuFeatures::avx2},
    {kAvx512f, "avx512f", &CpuFeatures::avx512f},
    {kAvx512dq, "avx512dq", &CpuFeatures::avx512dq},
    {kAvx512bw, "avx512bw", &CpuFeatures::avx512bw},
    {kAvx512vl, "avx512vl", &CpuFeatures::avx512vl},
    {kAvx512Bf16, "avx512_bf16", &CpuFeatures::avx512_bf16},
    {kAmxTile, "amx_tile", &CpuFeatures::amx_tile},
    {kAmxBf16, "amx_bf16", &CpuFeatures::amx_bf16},
    {kNeon, "neon", &CpuFeatures::neon},
    {kSve, "sve", &CpuFeatures::sve},
    {kSve2, "sve2", &CpuFeatures::sve2},
    {kBf16, "bf16", &CpuFeatures::bf16},
    {kI8mm, "i8mm", &CpuFeatures::i8mm},
    {kSme, "sme", &CpuFeatures::sme},
    {kSmeF32F32, "sme_f32f32", &CpuFeatures::sme_f32f32},
    {kSmeB16F32, "sme_b16f32", &CpuFeatures::sme_b16f32},
    {kSveBf16, "sve_bf16", &CpuFeatures::sve_bf16},
    {kSmeF64F64, "sme_f64f64", &CpuFeatures::sme_f64f64},
};

// What each feature extends: turning one off turns off those that extend
// it. Architectural where the ISA says so (AVX-512's subsets of AVX-512F,
// SME's datatypes of SME, SVE's BF16 of both SVE and BF16; FEAT_SME
// requires FEAT_BF16, not SVE: a CPU may stream without SVE proper); AMX
// under AVX-512F by HCOps' choice (its family packs and converts with
// AVX-512, so AMX without AVX-512 is not a configuration it runs).
struct Extends {
  uint64_t bit, base;
};
constexpr Extends kExtends[] = {
    {kAvx, kSse2},         {kFma, kAvx},           {kAvx2, kAvx},           {kAvx512f, kAvx2},
    {kAvx512dq, kAvx512f}, {kAvx512bw, kAvx512f},  {kAvx512vl, kAvx512f},   {kAvx512Bf16, kAvx512f},
    {kAmxTile, kAvx512f},  {kAmxBf16, kAmxTile},   {kSve, kNeon},           {kSve2, kSve},
    {kBf16, kNeon},        {kSveBf16, kSve},       {kSveBf16, kBf16},       {kI8mm, kNeon},
    {kSme, kNeon},         {kSme, kBf16},          {kSmeF32F32, kSme},      {kSmeB16F32, kSme},
    {kSmeF64F64, kSme},
};

#if defined(__aarch64__)
constexpr uint64_t kBaseline = kNeon;
constexpr uint64_t kOtherArch = kSse2 | kAvx | kFma | kAvx2 | kAvx512f | kAvx512dq | kAvx512bw | kAvx512vl |
                                kAvx512Bf16 | kAmxTile | kAmxBf16;
#else
constexpr uint64_t kBaseline = kSse2;
constexpr uint64_t kOtherArch =
    kNeon | kSve | kSve2 | kBf16 | kI8mm | kSme | kSmeF32F32 | kSmeB16F32 | kSveBf16 | kSmeF64F64;
#endif

// `off` and every feature that extends one of them, transitively.
uint64_t with_extensions(uint64_t off) {
  for (bool grew = true; grew;) {
    grew = false;
    for (const Extends &e : kExtends)
      if ((off & e.base) && !(off & e.bit)) off |= e.bit, grew = true;
  }
  return off;
}
}  // namespace

void apply_cpu_disable(CpuFeatures &f, const char *value) {
  if (!value) return;
  uint64_t asked = 0;
  std::string unknown, baseline;
  const std::string v = value;
  for (size_t i = 0; i < v.size();) {
    const size_t j = std::min(v.find_first_of(", \t\n", i), v.size());
    const std::string name = v.substr(i, j - i);
    i = j + 1;
    if (name.empty()) continue;
    uint64_t bit = 0;
    for (const FeatureName &n : kNames)
      if (strcasecmp(name.c_str(), n.name) == 0) bit = n.bit;
    if (!bit) {
      if (unknown.size() < 200) unknown += (unknown.empty() ? "" : " ") + quoted(name.c_str());
    }
    else if (bit & kBaseline)
      baseline = name;
    else if (!(bit & kOtherArch))
      asked |= bit;
  }
  if (!unknown.empty())
    warn_once("HCOPS_CPU_DISABLE", "HCOPS_CPU_DISABLE: unknown feature %s (known here: %s); ignored",
              unknown.c_str(), feature_names(~(kOtherArch | kBaseline)).c_str());
  if (!baseline.empty())
    warn_once("HCOPS_CPU_DISABLE/baseline",
              "HCOPS_CPU_DISABLE: %s is the baseline every kernel family needs; not disabled", baseline.c_str());
  const uint64_t off = with_extensions(asked) & f.mask();
  for (const FeatureName &n : kNames)
    if (off & n.bit) f.*n.flag = false;
  f.disabled |= off;
}

uint64_t CpuFeatures::mask() const {
  uint64_t m = 0;
  for (const FeatureName &n : kNames)
    if (this->*n.flag) m |= n.bit;
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
  static const CpuFeatures f = [] {
    CpuFeatures d = detect();
    apply_cpu_disable(d, env_raw("HCOPS_CPU_DISABLE"));
    return d;
  }();
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

int sve_vector_bits() {
#if defined(__aarch64__)
  if (!cpu_features().sve) return 0;
  // PR_SVE_GET_VL (<linux/prctl.h>; spelt out for older headers): the
  // calling thread's length in bytes in the low 16 bits.
  constexpr int kPrSveGetVl = 51;
  const int r = prctl(kPrSveGetVl, 0, 0, 0, 0);
  return r < 0 ? 0 : 8 * (r & 0xffff);
#else
  return 0;
#endif
}

bool features_turned_off(uint64_t needs) {
  const CpuFeatures &f = cpu_features();
  return (needs & f.disabled) && !(needs & ~(f.mask() | f.disabled));
}

bool features_usable(uint64_t needs) {
  if ((cpu_features().mask() & needs) != needs) return false;
  return !(needs & (kAmxTile | kAmxBf16)) || tile_state_granted();
}

}  // namespace hcops
