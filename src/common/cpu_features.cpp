#include "common/cpu_features.h"

#include <cpuid.h>

#include <cstring>

#include "common/env.h"
#include "common/log.h"

namespace hcops {

static unsigned long long xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
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
  const bool os_avx = (xcr & 0x6) == 0x6;             // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr & 0x60000) == 0x60000;      // XTILECFG, XTILEDATA
  f.avx = os_avx && (c & (1u << 28));
  f.fma = f.avx && (c & (1u << 12));

  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = f.avx && (b & (1u << 5));
    f.avx512f = os_avx512 && (b & (1u << 16));
    f.avx512dq = f.avx512f && (b & (1u << 17));
    f.avx512bw = f.avx512f && (b & (1u << 30));
    f.avx512vl = f.avx512f && (b & (1u << 31));
    f.amx_bf16 = os_amx && (d & (1u << 22));
    f.amx_tile = os_amx && (d & (1u << 24));
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

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char *name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(sse2, "sse2");
  add(avx, "avx");
  add(fma, "fma");
  add(avx2, "avx2");
  add(avx512f, "avx512f");
  add(avx512dq, "avx512dq");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_bf16, "avx512_bf16");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  return s;
}

const CpuFeatures &cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

const char *isa_name(Isa isa) {
  static const char *const names[] = {"generic", "avx2", "avx512"};
  return names[static_cast<int>(isa)];
}

Isa best_isa(const CpuFeatures &f) {
  if (f.avx512f && f.avx512vl && f.avx512bw && f.avx512dq) return Isa::avx512;
  if (f.avx2 && f.fma) return Isa::avx2;
  return Isa::generic;
}

Isa selected_isa() {
  static const Isa isa = [] {
    static const char *const choices[] = {"generic", "avx2", "avx512", nullptr};
    const Isa best = best_isa(cpu_features());
    const Isa asked = static_cast<Isa>(env_choice("HCOPS_ISA", choices, static_cast<int>(best)));
    if (asked > best) {
      warn_once("HCOPS_ISA", "HCOPS_ISA=%s is not supported by this CPU; using %s",
                isa_name(asked), isa_name(best));
      return best;
    }
    return asked;
  }();
  return isa;
}

}  // namespace hcops
