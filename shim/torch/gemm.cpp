// The GEMMs through the dispatcher: aten::mm, addmm, bmm and baddbmm, with
// their out= and in-place overloads, for f32 and bf16 on the HCOps engine.
// This is the route into a PyTorch that links its BLAS and oneDNN
// statically (every 2.x wheel), where a preloaded sgemm_ is never called;
// nn.Linear (addmm / mm), torch.matmul (mm, bmm) and their backward passes
// all end here.
//
// The operands go to the engine as PyTorch holds them: any strides with a
// unit stride in one of the two matrix dimensions (transposed and sliced
// views), broadcast batches (stride 0); an operand with no unit stride (a
// column of a permuted tensor, an expanded matrix) is copied contiguous
// first, as PyTorch's own kernel does. The addmm / baddbmm input that
// broadcasts along rows (nn.Linear's bias) is added by the engine's
// epilogue, scaled by beta, while each block of the result is in cache;
// any other input is copied into the result, which the engine then scales
// by beta. beta = 0 ignores the input, NaN and Inf included (PyTorch's
// documented semantics). Sums are in f32; a bf16 result is rounded once.
// f32 runs in the HCOPS_FP32_MATH mode in effect.
//
// PyTorch's own kernel runs (with a fallback line under HCOPS_VERBOSE) for
// other dtypes, mixed dtypes, shapes PyTorch must reject or resize, and
// out= tensors the engine cannot write as they are.
#include <ATen/core/Tensor.h>  // before an operator's header (1.13's do not include it)
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/grad_mode.h>
#include <torch/library.h>
#if HCOPS_TORCH_MAJOR >= 2
#include <torch/csrc/autograd/graph_task.h>
#endif

#include <string>

#include "gemm/batched.h"
#include "gemm/matmul_geometry.h"
#include "ops/output_ops.h"
#include "shim/common/gemm_call.h"
#include "shim/torch/fast_path.h"
#include "shim/torch/register.h"

namespace hcops::torch_ops {

namespace {

// A tensor's last two dimensions as a Matrix, the leading ones its batch.
Matrix matrix_of(const at::Tensor &t) {
  Matrix x;
  const int64_t nd = t.dim();
  x.rows = t.size(nd - 2);
  x.cols = t.size(nd - 1);
  x.rs = t.stride(nd - 2);
  x.cs = t.stride(nd - 1);
  x.nbatch = int(nd - 2);
  for (int64_t d = 0; d < nd - 2; ++d) {
    x.bdims[d] = t.size(d);
    x.bstrides[d] = t.stride(d);
  }
  return x;
}

// One product to run: C = alpha * A B + beta * C (+ bias_scale * bias[j]
// when `bias` is defined: a row of C's width, contiguous).
struct Product {
  Op op = Op::mm;
  const char *routine = "";  // "aten::mm", ...
  at::Tensor a, b, c, bias;
  float alpha = 1, beta = 0, bias_scale = 0;
};

Product product(Op op, const char *routine, const at::Tensor &a, const at::Tensor &b, const at::Tensor &c) {
  Product p;
  p.op = op;
  p.routine = routine;
  p.a = a;
  p.b = b;
  p.c = c;
  return p;
}

// Whether the engine's op(A) here is a weight whose packed panels are worth
// keeping for the next call (gemm/packed_a_cache.h): a product autograd does
// not record (a forward under torch.no_grad() or inference_mode: sampling,
// evaluation), not inside a backward (grad mode is off there too; the
// current graph task says so), of one matrix, whose op(A) is a tensor that
// requires grad, or a view of one: a model's parameter. Activations in a
// no-grad forward require no grad, and would never be used again.
//
// Where it is off: training (a weight changes every optimizer step and each
// orientation of it is used once per step: keeping it would cost memory and
// a hash, and save nothing); frozen weights (requires_grad False, which
// PyTorch cannot tell from activations); weights cast by autocast (a new
// tensor every region); PyTorch 1.13 (no way to tell a backward).
bool weight_cache_applies(Op op, const at::Tensor &w, const Geometry &g) {
#if HCOPS_TORCH_MAJOR >= 2
  if (at::GradMode::is_enabled() || (op != Op::mm && op != Op::addmm) || g.batches() != 1) return false;
  if (torch::autograd::get_current_graph_task_id() != -1) return false;
  if (w.is_view()) {
    const at::TensorBase &base = w._base();
    return base.requires_grad() && base.is_leaf();
  }
  return w.requires_grad() && w.is_leaf();
#else
  (void)op;
  (void)w;
  (void)g;
  return false;
#endif
}

template <typename Ty>
GemmReport run_typed(const Product &p, const Geometry &g) {
  using A = typename Ty::a_type;
  using C = typename Ty::c_type;
  const A *pa = data_as<A>(p.a), *pb = data_as<A>(p.b);
  const A *ea = (g.swapped ? pb : pa) + g.a_offset;
  const A *eb = (g.swapped ? pa : pb) + g.b_offset;
  C *ec = data_as<C>(p.c) + g.c_offset;
  GemmArgs<Ty> args{g.ta, g.tb, g.m, g.n, g.k, p.alpha, ea, g.lda, eb, g.ldb, p.beta, ec, g.ldc};
  // The weight's storage and version (PyTorch's version counter, which an
  // inference tensor does not keep: the engine's content check then is the
  // whole test).
  const at::Tensor &wa = g.swapped ? p.b : p.a;
  OperandTag tag{};
  if (weight_cache_applies(p.op, wa, g)) {
    tag.owner = wa.storage().unsafeGetStorageImpl();
    tag.version = wa.is_inference() ? 0 : wa._version();
    args.a_tag = &tag;
  }
  ops::OutputOps out_ops;
  std::unique_ptr<float[]> row_bias;  // a bf16 bias in f32, for the kernels that add it themselves
  if (p.bias.defined()) {
    out_ops.bias = p.bias.data_ptr();
    out_ops.bias_type = p.bias.scalar_type() == at::kBFloat16 ? Dtype::bf16 : Dtype::f32;
    out_ops.bias_scale = p.bias_scale;
    // A bias along C's columns (one per column): on the engine's C, which
    // is the transpose when swapped, that is one per row.
    out_ops.bias_along_rows = g.swapped;
    args.epilogue = ops::output_epilogue(out_ops, g.m, row_bias);
  }
  return gemm_batched(args, g);
}

// Whether the engine can write C as it is laid out: one unit stride, rows
// or columns that do not overlap.
bool c_fits(const at::Tensor &c) {
  const Matrix mc = matrix_of(c);
  Matrix dense = mc;  // A and B of any fitting layout
  dense.rs = 1;
  dense.cs = dense.rows;
  Geometry g;
  return make_geometry(dense, dense, mc, false, false, &g);
}

// Runs `p`; false (having done nothing) when C's layout does not suit the
// engine. A or B without a unit stride is copied contiguous.
bool run(Product p) {
  if (p.c.numel() == 0) {  // nothing to compute (k = 0 with an empty result too)
    report_taken(p.op, dtype_name(p.c.scalar_type()), shape_name(p.c.sizes()), 1, 0, "empty_result");
    return true;
  }
  Geometry g;
  const bool bias = p.bias.defined();
  if (!make_geometry(matrix_of(p.a), matrix_of(p.b), matrix_of(p.c), false, bias, &g)) {
    if (!c_fits(p.c)) return false;
    p.a = p.a.contiguous();
    p.b = p.b.contiguous();
    if (!make_geometry(matrix_of(p.a), matrix_of(p.b), matrix_of(p.c), false, bias, &g)) return false;
  }
  const bool timed = timing();
  const double t0 = timed ? now_seconds() : 0;
  GemmReport rep;
  if (p.c.scalar_type() == at::kFloat) rep = run_typed<Sgemm>(p, g);
  else rep = run_typed<Bf16Bf16Gemm>(p, g);
  count_taken(p.op);
  if (timed) {
    std::string details = "api=aten batches=" + std::to_string(g.batches());
    if (bias) details += " bias=epilogue";
    if (p.c.scalar_type() != at::kFloat) details += " dtype=bf16";
    // The engine's column-major call, as the BLAS lines give it (the trace
    // format of perf/workloads); the flops of every batch.
    report_gemm(p.routine, char(g.ta), char(g.tb), g.m, g.n, g.k, p.alpha, g.lda, g.ldb, p.beta, g.ldc, rep,
                now_seconds() - t0, details.c_str(), g.batches());
  }
  return true;
}

// Why the engine cannot take A (.. x M x K) times B (.. x K x N) of matrix
// rank `nd` (2: mm, 3: bmm): nullptr when it can. Mismatched shapes are
// PyTorch's to report.
const char *operands_reason(const at::Tensor &a, const at::Tensor &b, int64_t nd) {
  if (const char *r = switch_reason()) return r;
  if (!fast_dtype(a.scalar_type())) return "dtype";
  if (b.scalar_type() != a.scalar_type()) return "mixed_dtype";
  if (a.dim() != nd || b.dim() != nd) return "rank";
  if (a.size(nd - 1) != b.size(nd - 2) || (nd == 3 && a.size(0) != b.size(0))) return "shape";
  if (a.layout() != at::kStrided || b.layout() != at::kStrided) return "layout";
  if (a.is_conj() || b.is_conj() || a.is_neg() || b.is_neg()) return "lazy_view";
  return nullptr;
}

std::vector<int64_t> result_shape(const at::Tensor &a, const at::Tensor &b) {
  std::vector<int64_t> s(a.sizes().begin(), a.sizes().end());
  s.back() = b.size(-1);
  return s;
}

// Whether `out` may share memory with `x`: nullptr when it cannot. Tensors
// on different storages cannot; at::get_overlap_status alone answers
// "too hard" for any view that is not dense (a column slice, an expanded
// bias) before it looks at the storage, and such operands were declined.
const char *no_overlap(const at::Tensor &out, const at::Tensor &x) {
  if (out.has_storage() && x.has_storage() && !out.storage().is_alias_of(x.storage())) return nullptr;
  return at::get_overlap_status(out, x) == at::MemOverlapStatus::No ? nullptr : "out_overlap";
}

// An out= (or in-place) result the engine writes as it is.
const char *out_reason(const at::Tensor &out, const at::Tensor &a, const at::Tensor &b) {
  if (out.scalar_type() != a.scalar_type()) return "out_dtype";
  if (!out.sizes().equals(result_shape(a, b))) return "out_shape";  // PyTorch resizes it
  if (out.layout() != at::kStrided || out.is_conj() || out.is_neg()) return "out_layout";
  if (at::has_internal_overlap(out) != at::MemOverlap::No) return "out_overlap";
  if (const char *r = no_overlap(out, a)) return r;
  return no_overlap(out, b);
}

// The addmm / baddbmm input, expanded to the result's shape: how it enters.
enum class Input { ignored, bias, copy, in_place };

// `self` for a result of `shape`: nullptr when usable; `how` says how.
const char *input_reason(const at::Tensor &self, const at::Tensor &a, at::IntArrayRef shape, double beta,
                         const at::Tensor *out, Input *how) {
  if (self.scalar_type() != a.scalar_type()) return "mixed_dtype";
  if (self.layout() != at::kStrided || self.is_conj() || self.is_neg()) return "layout";
  if (!at::is_expandable_to(self.sizes(), shape)) return "shape";
  if (out && out->is_same(self)) {
    *how = Input::in_place;
    return nullptr;
  }
  if (out) {
    if (const char *r = no_overlap(*out, self)) return r;
  }
  if (beta == 0) {
    *how = Input::ignored;
    return nullptr;
  }
  // A row that every row of the result repeats: the epilogue's bias.
  const at::Tensor e = self.expand(shape);
  const int64_t nd = e.dim();
  bool row = e.size(nd - 1) <= 1 || e.stride(nd - 1) == 1;
  for (int64_t d = 0; d < nd - 1; ++d) row = row && (e.size(d) <= 1 || e.stride(d) == 0);
  *how = row ? Input::bias : Input::copy;
  return nullptr;
}

double scalar(const at::Scalar &s) { return s.toDouble(); }

// Why alpha keeps the engine out: nullptr when it does not. With alpha = 0
// the engine scales C by beta and never reads A and B, as BLAS does;
// PyTorch does that in some kernels (2.15's f32 addmm, MKL's sgemm) and
// computes 0 * A B in others (its f32 baddbmm, every bf16 one), where a NaN
// or Inf in A or B makes the result NaN. No model calls it: PyTorch's.
const char *alpha_reason(double alpha) { return alpha == 0 ? "alpha_zero" : nullptr; }

// C = beta * self + alpha * A B into `out` (allocated, or the caller's
// out= / self, checked already); `how` from input_reason. False, with `out`
// untouched, when the engine cannot write `out` as it is laid out.
bool run_with_input(Op op, const char *routine, const at::Tensor &self, const at::Tensor &a, const at::Tensor &b,
                    double beta, double alpha, const at::Tensor &out, Input how) {
  Product p = product(op, routine, a, b, out);
  p.alpha = float(alpha);
  if (out.numel() == 0) return run(p);  // no row to take a bias from
  switch (how) {
    case Input::ignored: p.beta = 0; break;
    case Input::in_place: p.beta = float(beta); break;
    case Input::bias: {
      at::Tensor row = self.expand(out.sizes());
      while (row.dim() > 1) row = row.select(0, 0);
      p.bias = row;
      p.bias_scale = float(beta);
      break;
    }
    case Input::copy:
      if (!c_fits(out)) return false;
      out.copy_(self.expand(out.sizes()));
      p.beta = float(beta);
      break;
  }
  return run(p);
}

// The six overloads of an op of matrix rank `nd` with an input (addmm,
// baddbmm) and the three without (mm, bmm).
template <int Nd>
struct Gemm {
  static constexpr Op plain = Nd == 2 ? Op::mm : Op::bmm;
  static constexpr Op added = Nd == 2 ? Op::addmm : Op::baddbmm;
  static constexpr const char *plain_name = Nd == 2 ? "aten::mm" : "aten::bmm";
  static constexpr const char *added_name = Nd == 2 ? "aten::addmm" : "aten::baddbmm";

  static at::Tensor stock(const at::Tensor &a, const at::Tensor &b) {
    return Nd == 2 ? at::cpu::mm(a, b) : at::cpu::bmm(a, b);
  }
  static at::Tensor &stock_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    return Nd == 2 ? at::cpu::mm_outf(a, b, out) : at::cpu::bmm_outf(a, b, out);
  }
  static at::Tensor stock_add(const at::Tensor &s, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                              const at::Scalar &alpha) {
    return Nd == 2 ? at::cpu::addmm(s, a, b, beta, alpha) : at::cpu::baddbmm(s, a, b, beta, alpha);
  }
  static at::Tensor &stock_add_out(const at::Tensor &s, const at::Tensor &a, const at::Tensor &b,
                                   const at::Scalar &beta, const at::Scalar &alpha, at::Tensor &out) {
    return Nd == 2 ? at::cpu::addmm_outf(s, a, b, beta, alpha, out) : at::cpu::baddbmm_outf(s, a, b, beta, alpha, out);
  }
  static at::Tensor &stock_add_(at::Tensor &s, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                                const at::Scalar &alpha) {
    return Nd == 2 ? at::cpu::addmm_(s, a, b, beta, alpha) : at::cpu::baddbmm_(s, a, b, beta, alpha);
  }

  static at::Tensor op(const at::Tensor &a, const at::Tensor &b) {
    const char *why = operands_reason(a, b, Nd);
    if (!why) {
      at::Tensor out = at::empty(result_shape(a, b), a.options());
      if (run(product(plain, plain_name, a, b, out))) return out;
      why = "layout";
    }
    fall_back(plain, a, why);
    return stock(a, b);
  }

  static at::Tensor &op_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) {
    const char *why = operands_reason(a, b, Nd);
    if (!why) why = out_reason(out, a, b);
    if (!why) {
      if (run(product(plain, plain_name, a, b, out))) return out;
      why = "out_layout";
    }
    fall_back(plain, a, why);
    return stock_out(a, b, out);
  }

  static at::Tensor add(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                        const at::Scalar &alpha) {
    const char *why = operands_reason(a, b, Nd);
    Input how = Input::copy;
    const std::vector<int64_t> shape = result_shape(a, b);
    if (!why) why = alpha_reason(scalar(alpha));
    if (!why) why = input_reason(self, a, shape, scalar(beta), nullptr, &how);
    if (!why) {
      at::Tensor out = at::empty(shape, a.options());
      if (run_with_input(added, added_name, self, a, b, scalar(beta), scalar(alpha), out, how))
        return out;
      why = "layout";
    }
    fall_back(added, a, why);
    return stock_add(self, a, b, beta, alpha);
  }

  static at::Tensor &add_out(const at::Tensor &self, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                             const at::Scalar &alpha, at::Tensor &out) {
    const char *why = operands_reason(a, b, Nd);
    Input how = Input::copy;
    if (!why) why = alpha_reason(scalar(alpha));
    if (!why) why = out_reason(out, a, b);
    if (!why) why = input_reason(self, a, out.sizes(), scalar(beta), &out, &how);
    if (!why) {
      if (run_with_input(added, added_name, self, a, b, scalar(beta), scalar(alpha), out, how))
        return out;
      why = "out_layout";
    }
    fall_back(added, a, why);
    return stock_add_out(self, a, b, beta, alpha, out);
  }

  static at::Tensor &add_(at::Tensor &self, const at::Tensor &a, const at::Tensor &b, const at::Scalar &beta,
                          const at::Scalar &alpha) {
    const char *why = operands_reason(a, b, Nd);
    Input how = Input::in_place;
    if (!why) why = alpha_reason(scalar(alpha));
    if (!why) why = out_reason(self, a, b);
    if (!why) {
      if (run_with_input(added, added_name, self, a, b, scalar(beta), scalar(alpha), self, how))
        return self;
      why = "out_layout";
    }
    fall_back(added, a, why);
    return stock_add_(self, a, b, beta, alpha);
  }
};

}  // namespace

void register_gemm(torch::Library &m) {
  if (!group_selected(OpGroup::gemm)) return;
  using M = Gemm<2>;
  override_kernel(m, "mm", TORCH_FN(M::op));
  override_kernel(m, "mm.out", TORCH_FN(M::op_out));
  override_kernel(m, "addmm", TORCH_FN(M::add));
  override_kernel(m, "addmm.out", TORCH_FN(M::add_out));
  override_kernel(m, "addmm_", TORCH_FN(M::add_));
  using B = Gemm<3>;
  override_kernel(m, "bmm", TORCH_FN(B::op));
  override_kernel(m, "bmm.out", TORCH_FN(B::op_out));
  override_kernel(m, "baddbmm", TORCH_FN(B::add));
  override_kernel(m, "baddbmm.out", TORCH_FN(B::add_out));
  override_kernel(m, "baddbmm_", TORCH_FN(B::add_));
}

}  // namespace hcops::torch_ops
