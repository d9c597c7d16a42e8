#include "shim/dnnl/diff_bias.h"

#include <algorithm>

#include "common/dtype.h"

namespace hcops::dnnl {

namespace {

float value(const float *p, long i) { return p[i]; }
float value(const bf16 *p, long i) { return static_cast<float>(p[i]); }

template <typename In, typename Out>
void reduce(const Matrix &m, const In *dd, Out *db) {
  // Columns in chunks with their sums on the stack: no allocation, and a
  // row-major diff_dst is read along its rows.
  constexpr long chunk = 256;
  float acc[chunk];
  for (long j0 = 0; j0 < m.cols; j0 += chunk) {
    const long nj = std::min(chunk, m.cols - j0);
    std::fill(acc, acc + nj, 0.0f);
    for (long i = 0; i < m.rows; ++i)
      for (long j = 0; j < nj; ++j) acc[j] += value(dd, m.offset + i * m.rs + (j0 + j) * m.cs);
    for (long j = 0; j < nj; ++j) db[j0 + j] = Out(acc[j]);
  }
}

template <typename In>
void reduce_to(const Matrix &m, const In *dd, dnnl_data_type_t db_type, void *db) {
  if (db_type == dnnl_bf16) reduce(m, dd, static_cast<bf16 *>(db));
  else reduce(m, dd, static_cast<float *>(db));
}

}  // namespace

void reduce_diff_bias(const Matrix &diff_dst, dnnl_data_type_t dd_type, const void *dd, dnnl_data_type_t db_type,
                      void *db) {
  if (dd_type == dnnl_bf16) reduce_to(diff_dst, static_cast<const bf16 *>(dd), db_type, db);
  else reduce_to(diff_dst, static_cast<const float *>(dd), db_type, db);
}

}  // namespace hcops::dnnl
