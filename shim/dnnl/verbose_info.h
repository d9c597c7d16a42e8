// The fields of oneDNN 2.6's verbose line (src/common/verbose.cpp), rebuilt
// from a primitive descriptor so that HCOps's line for a primitive it ran
// reads like ONEDNN_VERBOSE's line for the same primitive: memory
// descriptors ("src_bf16::blocked:ab:f0"), attributes, problem.
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <string>

namespace hcops::dnnl {

// What HCOps prints for a primitive it runs: the line
// "hcops_verbose,exec,cpu,<kind>,hcops:<family>,<tail>,<ms>", and the key
// "<kind>,<problem>" the exit summary groups by (report.h).
struct VerboseFields {
  std::string kind, tail, summary_key;
};

// Those of a matmul (as oneDNN 2.6's init_info_matmul): its memory
// descriptors, bias among them when there is one (nullptr otherwise).
VerboseFields matmul_verbose(const_dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *src,
                             const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *bias,
                             const dnnl_memory_desc_t *dst);
// Those of an inner product of propagation `prop` (as init_info_inner_product):
// its src, weights and dst descriptors, or their diffs by propagation.
VerboseFields inner_product_verbose(const_dnnl_primitive_desc_t pd, dnnl_prop_kind_t prop,
                                    const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *wei,
                                    const dnnl_memory_desc_t *dst);

// "<dt>:<p|o|0 flags>:<format kind>:<tag>:f<extra flags>", as md2fmt_str.
std::string md_str(const dnnl_memory_desc_t *md);
// "d0xd1x...", runtime dims as "*" (md2dim_str).
std::string dims_str(const dnnl_memory_desc_t *md);
// "mb<N>ic<C>[id][ih]iw..." (md2desc_str, the inner product's problem).
std::string desc_str(const dnnl_memory_desc_t *md);
// The attribute field: each set attribute followed by a space, as oneDNN's
// operator<< of an attr (only those HCOps claims can be set).
std::string attr_str(const_dnnl_primitive_desc_t pd);

}  // namespace hcops::dnnl
