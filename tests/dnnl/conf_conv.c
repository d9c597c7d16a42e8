/* See conf_conv.h. dst[n][o][y][x] = bias[o] + sum_{c,ky,kx}
 * src[n][c][y + ky - 1][x + kx - 1] wei[o][c][ky][kx], out-of-range src 0. */
#include "conf_conv.h"

#include <math.h>

void run_conv(const conv_problem *p, uint64_t seed, conf_result *r) {
  result_init(r);
  uint64_t rng = seed;
  dnnl_dim_t OH = p->H + 2 - p->KH + 1, OW = p->W + 2 - p->KW + 1;
  dnnl_dims_t sd = {p->MB, p->IC, p->H, p->W}, wd = {p->OC, p->IC, p->KH, p->KW}, dd = {p->MB, p->OC, OH, OW};
  dnnl_memory_desc_t smd = md_tag(4, sd, dnnl_f32, dnnl_nchw), wmd = md_tag(4, wd, dnnl_f32, dnnl_oihw),
                     dmd = md_tag(4, dd, dnnl_f32, dnnl_nchw), bmd = md_tag(1, &p->OC, dnnl_f32, dnnl_a);
  dnnl_dims_t strides = {1, 1}, pad = {1, 1};
  dnnl_convolution_desc_t desc;
  CHECK_DNNL(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wmd,
                                           p->with_bias ? &bmd : NULL, &dmd, strides, pad, pad));
  dnnl_status_t status;
  dnnl_primitive_desc_t pd = make_pd(&desc, NULL, NULL, 0, &status);
  if (!pd) {
    r->skipped = "no implementation in the library";
    r->ok = 0;
    return;
  }
  dnnl_primitive_t prim;
  CHECK_DNNL(dnnl_primitive_create(&prim, pd));
  tensor src = tensor_new(&smd), wei = tensor_new(&wmd), dst = tensor_new(&dmd), bias = tensor_new(&bmd);
  tensor_fill(&src, &rng, -1, 1);
  tensor_fill(&wei, &rng, -1, 1);
  tensor_fill(&bias, &rng, -1, 1);
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, tensor_memory(&src)},
                             {DNNL_ARG_WEIGHTS, tensor_memory(&wei)},
                             {DNNL_ARG_DST, tensor_memory(&dst)},
                             {DNNL_ARG_BIAS, tensor_memory(&bias)}};
  int nargs = p->with_bias ? 4 : 3;
  CHECK_DNNL(dnnl_primitive_execute(prim, conf_stream(), nargs, args));
  CHECK_DNNL(dnnl_stream_wait(conf_stream()));
  r->executions = 1;

  dnnl_dims_t di = {0};
  do {
    double acc = 0, abs_acc = 0;
    dnnl_dim_t terms = p->IC * p->KH * p->KW;
    for (dnnl_dim_t c = 0; c < p->IC; ++c)
      for (dnnl_dim_t ky = 0; ky < p->KH; ++ky)
        for (dnnl_dim_t kx = 0; kx < p->KW; ++kx) {
          dnnl_dim_t y = di[2] + ky - 1, x = di[3] + kx - 1;
          if (y < 0 || y >= p->H || x < 0 || x >= p->W) continue;
          dnnl_dims_t si = {di[0], c, y, x}, wi = {di[1], c, ky, kx};
          double t = tensor_get(&src, si) * tensor_get(&wei, wi);
          acc += t, abs_acc += fabs(t);
        }
    refval v = {acc, (double)terms * CONF_U * abs_acc};
    if (p->with_bias) {
      dnnl_dims_t bi = {di[1]};
      v = ref_add(v, tensor_get(&bias, bi));
    }
    result_account(r, tensor_get(&dst, di), ref_store(v, dnnl_f32));
  } while (idx_next(4, dd, di));
  if (!tensor_gaps_intact(&dst)) r->gaps_ok = r->ok = 0;
  r->digest = tensor_digest(&dst);

  for (int i = 0; i < 4; ++i) dnnl_memory_destroy(args[i].memory);
  tensor_free(&src), tensor_free(&wei), tensor_free(&dst), tensor_free(&bias);
  CHECK_DNNL(dnnl_primitive_destroy(prim));
  CHECK_DNNL(dnnl_primitive_desc_destroy(pd));
}
