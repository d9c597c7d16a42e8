// The tag of the engine interface (common/api.h): the release and the
// layout of every structure libhcops.so.0 and a framework layer pass each
// other. libhcops.so.0 reports its own (engine_interface_tag(), compiled
// there); a framework layer compares it with interface_tag() compiled into
// itself and registers nothing on a mismatch: a layer and an engine of
// different builds would read each other's structures wrong, and a
// development build keeps one version number through layout changes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/api.h"
#include "common/contention.h"
#include "gemm/gemm.h"
#include "gemm/matmul_geometry.h"
#include "ops/adam.h"
#include "ops/attention.h"
#include "ops/ops_table.h"
#include "ops/output_ops.h"

namespace hcops {

namespace interface_detail {
constexpr uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }  // FNV-1a step
constexpr uint64_t mix_text(uint64_t h, const char *s) { return *s ? mix_text(mix(h, uint8_t(*s)), s + 1) : h; }
template <typename T>
constexpr uint64_t mix_type(uint64_t h) {
  return mix(mix(h, sizeof(T)), alignof(T));
}
}  // namespace interface_detail

// `version`: the package version (config.h's PACKAGE_VERSION) of the side
// that computes it.
constexpr uint64_t interface_tag(const char *version) {
  using namespace interface_detail;
  uint64_t h = mix_text(0xcbf29ce484222325ull, version);
  h = mix_type<GemmArgs<Sgemm>>(h);
  h = mix_type<GemmArgs<Bf16Bf16Gemm>>(h);
  h = mix_type<GemmReport>(h);
  h = mix_type<RegionTimer>(h);  // share_dynamically, inline in the layers
  h = mix_type<Epilogue<float>>(h);
  h = mix_type<Matrix>(h);
  h = mix_type<Geometry>(h);
  h = mix_type<ops::OutputOps>(h);
  h = mix_type<ops::OpsTable>(h);
  h = mix_type<ops::AdamConfig>(h);
  h = mix_type<ops::AttentionSlice<float>>(h);
  h = mix_type<ops::AttentionGradSlice<bf16>>(h);
  return h;
}

// libhcops.so.0's own tag (shim/hcops_api.cpp).
HCOPS_API uint64_t engine_interface_tag();

}  // namespace hcops
