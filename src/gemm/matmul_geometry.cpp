#include "gemm/matmul_geometry.h"

#include <algorithm>

namespace hcops {

namespace {

// rows x cols with strides rs, cs as a column-major matrix: unit row
// stride and columns that do not overlap; its leading dimension. A
// dimension of size 1 has no stride to check, an empty matrix none at all.
bool column_major(long rows, long cols, long rs, long cs, long *ld) {
  if (rows == 0 || cols == 0) {
    *ld = std::max(1L, rows);
    return true;
  }
  if (rows > 1 && rs != 1) return false;
  if (cols > 1 && cs < std::max(1L, rows)) return false;
  *ld = cols > 1 ? cs : std::max(1L, rows);
  return true;
}

Matrix transposed(const Matrix &x) {
  Matrix t = x;
  std::swap(t.rows, t.cols);
  std::swap(t.rs, t.cs);
  return t;
}

// An operand of the engine: itself (N) or the transpose of a column-major
// matrix (T).
bool engine_operand(const Matrix &x, Trans *t, long *ld) {
  if (column_major(x.rows, x.cols, x.rs, x.cs, ld)) {
    *t = Trans::N;
    return true;
  }
  if (column_major(x.cols, x.rows, x.cs, x.rs, ld)) {
    *t = Trans::T;
    return true;
  }
  return false;
}

bool broadcast(const Matrix &x) {
  for (int d = 0; d < x.nbatch; ++d)
    if (x.bdims[d] != 1) return false;
  return true;
}

// Folds x's batches into its rows (rows = true) or columns when they follow
// each other at that dimension's stride; x unchanged when not.
bool fold(Matrix *x, bool rows) {
  const long size = rows ? x->rows : x->cols, stride = rows ? x->rs : x->cs;
  long expected = size * stride, total = 1;
  for (int d = x->nbatch - 1; d >= 0; --d) {
    if (x->bdims[d] == 1) continue;
    if (x->bstrides[d] != expected) return false;
    expected *= x->bdims[d];
    total *= x->bdims[d];
  }
  if (total == 0) return false;  // nothing to compute: the loop does nothing
  (rows ? x->rows : x->cols) = size * total;
  for (int d = 0; d < x->nbatch; ++d) x->bdims[d] = 1;
  return true;
}

// Folds the batches of c and x into their `rows` / columns, when y is
// broadcast over them.
bool fold_pair(Matrix *c, bool c_rows, Matrix *x, bool x_rows, const Matrix &y) {
  if (!broadcast(y)) return false;
  Matrix c2 = *c, x2 = *x;
  long ld;
  Trans t;
  if (!fold(&c2, c_rows) || !fold(&x2, x_rows)) return false;
  if (!column_major(c2.rows, c2.cols, c2.rs, c2.cs, &ld) || !engine_operand(x2, &t, &ld)) return false;
  *c = c2;
  *x = x2;
  return true;
}

}  // namespace

long Geometry::batches() const {
  long b = 1;
  for (int d = 0; d < nbatch; ++d) b *= bdims[d];
  return b;
}

bool make_geometry(const Matrix &a, const Matrix &b, const Matrix &c, bool bias_rows, bool bias_cols, Geometry *g) {
  Matrix ea = a, eb = b, ec = c;
  long ld;
  bool swapped = false;
  if (!column_major(c.rows, c.cols, c.rs, c.cs, &ld)) {
    // A row-major C (M x N) is the column-major C^T (N x M) = B^T A^T.
    ea = transposed(b);
    eb = transposed(a);
    ec = transposed(c);
    swapped = true;
    std::swap(bias_rows, bias_cols);
    if (!column_major(ec.rows, ec.cols, ec.rs, ec.cs, &ld)) return false;
  }
  // One GEMM for all batches when they fold into the engine's N (A
  // broadcast) or M (B broadcast), unless a bias runs along that dimension.
  if (!(!bias_cols && fold_pair(&ec, false, &eb, false, ea)) && !bias_rows) fold_pair(&ec, true, &ea, true, eb);

  Geometry r;
  r.swapped = swapped;
  r.bias_rows = swapped ? bias_cols : bias_rows;
  r.m = ec.rows;
  r.n = ec.cols;
  r.k = ea.cols;
  if (!engine_operand(ea, &r.ta, &r.lda) || !engine_operand(eb, &r.tb, &r.ldb) ||
      !column_major(ec.rows, ec.cols, ec.rs, ec.cs, &r.ldc))
    return false;
  r.a_offset = ea.offset;
  r.b_offset = eb.offset;
  r.c_offset = ec.offset;
  // The batches left: C's batch dimensions other than 1; an operand of size
  // 1 there is broadcast (stride 0).
  for (int d = 0; d < ec.nbatch; ++d) {
    if (ec.bdims[d] == 1) continue;
    const int i = r.nbatch++;
    r.bdims[i] = ec.bdims[d];
    r.a_bstride[i] = ea.bdims[d] == 1 ? 0 : ea.bstrides[d];
    r.b_bstride[i] = eb.bdims[d] == 1 ? 0 : eb.bstrides[d];
    r.c_bstride[i] = ec.bstrides[d];
  }
  *g = r;
  return true;
}


}  // namespace hcops
