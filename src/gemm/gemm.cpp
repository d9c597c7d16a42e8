#include "gemm/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <numeric>
#include <type_traits>

#include "common/contention.h"
#include "common/fault.h"
#include "common/log.h"
#include "gemm/team.h"
#include "common/topology.h"
#include "common/wait.h"
#include "common/work_share.h"
#include "gemm/blocking.h"
#include "gemm/fp32_math.h"
#include "gemm/gemm_with.h"
#include "gemm/held_a.h"
#include "gemm/pack_policy.h"
#include "gemm/packed_a_cache.h"
#include "gemm/partition.h"
#include "gemm/workspace.h"
#include "kernels/registry.h"

namespace hcops {

namespace {

template <typename Ty>
using Acc = typename Ty::acc_type;

// Hands g.epilogue the final values of C's rows [i0, i0 + m) in each column
// of [j0, j0 + n), value(i, j) being C(i, j)'s before it, and stores what it
// leaves. A C of the accumulation type is worked on in place; a narrower one
// (bf16) goes through a small f32 buffer, a column chunk at a time, and is
// rounded once, when stored. For the paths that produce C an element at a
// time (scale_c, unpacked_gemm) and the narrow-C blocks of run_thread.
template <typename Ty, typename Value>
void finish_columns(const GemmArgs<Ty> &g, long i0, long m, long j0, long n, Value value) {
  using C = typename Ty::c_type;
  constexpr long kRows = 256;
  Acc<Ty> buf[kRows];
  for (long j = j0; j < j0 + n; ++j)
    for (long r0 = i0; r0 < i0 + m; r0 += kRows) {
      const long rows = std::min(kRows, i0 + m - r0);
      for (long i = 0; i < rows; ++i) buf[i] = value(r0 + i, j);
      if (g.epilogue) g.epilogue.apply(g.epilogue.ctx, buf, kRows, r0, rows, j, 1);
      for (long i = 0; i < rows; ++i) g.c[r0 + i + j * g.ldc] = C(buf[i]);
    }
}

// g.epilogue on a finished block of C: rows [i0, i0 + m), columns [j0, j0 + n).
template <typename Ty>
void apply_epilogue(const GemmArgs<Ty> &g, long i0, long m, long j0, long n) {
  if (m <= 0 || n <= 0) return;
  if constexpr (std::is_same_v<typename Ty::c_type, Acc<Ty>>) {
    g.epilogue.apply(g.epilogue.ctx, g.c + i0 + j0 * g.ldc, g.ldc, i0, m, j0, n);
  } else {
    // Only when gemm_through_wide_c had no memory for its f32 copy (or a
    // test's gemm_with): C was rounded by the kernel, and is rounded again.
    finish_columns(g, i0, m, j0, n, [&](long i, long j) { return Acc<Ty>(g.c[i + j * g.ldc]); });
  }
}

// C = beta C (alpha = 0 or k = 0), then the epilogue.
template <typename Ty>
void scale_c(const GemmArgs<Ty> &g) {
  using C = typename Ty::c_type;
  if (g.beta == Acc<Ty>(1) && !g.epilogue) return;
  if (g.epilogue) {
    finish_columns(g, 0, g.m, 0, g.n, [&](long i, long j) {
      return g.beta == Acc<Ty>(0) ? Acc<Ty>(0) : g.beta * Acc<Ty>(g.c[i + j * g.ldc]);
    });
    return;
  }
  for (long j = 0; j < g.n; ++j)
    for (long i = 0; i < g.m; ++i) {
      C &c = g.c[i + j * g.ldc];
      c = g.beta == Acc<Ty>(0) ? C(0) : C(g.beta * Acc<Ty>(c));
    }
}

// Last resort when packing memory cannot be had: right, slow, allocates nothing.
template <typename Ty>
void unpacked_gemm(const GemmArgs<Ty> &g) {
  finish_columns(g, 0, g.m, 0, g.n, [&](long i, long j) {
    Acc<Ty> sum = 0;
    for (long p = 0; p < g.k; ++p)
      sum += Acc<Ty>(g.ta == Trans::N ? g.a[i + p * g.lda] : g.a[p + i * g.lda]) *
             Acc<Ty>(g.tb == Trans::N ? g.b[p + j * g.ldb] : g.b[j + p * g.ldb]);
    return g.alpha * sum + (g.beta == Acc<Ty>(0) ? Acc<Ty>(0) : g.beta * Acc<Ty>(g.c[i + j * g.ldc]));
  });
}

// KC and NC of one domain part, evened out over its k and its columns. KC
// is a multiple of the family's k_align, so only the last k block is ever
// padded.
struct PartBlocks {
  long kc, nc;
};
template <typename Ty>
PartBlocks part_blocks(const GemmArgs<Ty> &g, const DomainPart &part, const Blocking &blk, const GemmKernel<Ty> &k) {
  return {balanced_block(g.k, blk.kc, std::lcm(8, k.k_align)), balanced_block(part.n1 - part.n0, blk.nc, k.nr)};
}

// The tasks of one domain part. Its columns go in blocks of NC and its k in
// blocks of KC: a phase per (column block, k block), in order. A phase has
// pack_tasks tasks that each pack a share of the phase's B panel into the
// part's buffer, then units() units that each compute a block of mu rows by
// a chunk of the panel's columns (A packed, the macro-kernel, the epilogue).
// Tasks are handed out in that order from PartProgress::next to whichever
// thread asks next, so a thread that runs late (descheduled on a shared
// CPU) holds up the one task it holds, not a fixed share of the product: the
// others do the rest. A unit waits until its phase's panel is packed (and,
// with B read in place, until the phase before is done: its C is summed
// into); a packing task waits until every unit of the phase before is done
// (one panel buffer per part). A task only ever waits on tasks handed out
// before it, so the team cannot deadlock, and a C element's sum is the same
// whichever thread computes which unit.
struct PartWork {
  PartBlocks pb;
  long nk = 1, phases = 0;
  int pack_tasks = 0;  // per phase; 0 when B is read in place
  long mu = 1;         // rows per unit: a multiple of MR, at most MC
  long row_blocks = 1, col_chunks = 1;
  long units() const { return row_blocks * col_chunks; }
  long per_phase() const { return pack_tasks + units(); }
  long tasks() const { return phases * per_phase(); }
};

// Units per thread of a part: enough that the last unit of a late thread is
// a small part of the product, few enough that their A blocks stay large
// (DiT-S/2's 1536 x 2048 x 384 on 2 threads: 4 row blocks of 384 rows by the
// planner's 2 column chunks). A family may ask for another number
// (GemmKernel::units_per_thread).
constexpr long kUnitsPerThread = 4;
// Below this many flops a thread, one unit each: a few microseconds of
// work, where each unit's claim and wait cost more than a late thread, and
// where units split by columns pack the same rows of A in both threads
// (2-core Zen 3 guest, sgemm on 2 threads against 4 units a thread, two
// runs of 7-11 alternated rounds: 96^3 NN 1.05-1.08x, TN 1.14-1.31x, NT
// 0.98x; 128^3 1.01-1.06x; 64 x 64 x 256 1.07-1.21x; 256 x 64 x 64
// 1.0-1.14x. 160^3 and 192^3 NN, 4 and 7 Mflop a thread, lost 4 % at one
// unit a thread: hence not above 2.5 Mflop.)
constexpr long kOneUnitFlopsPerThread = 2'500'000;

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

template <typename Ty>
PartWork part_work(const GemmArgs<Ty> &g, const DomainPart &part, const Blocking &blk, const GemmKernel<Ty> &kern,
                   bool direct_b) {
  PartWork w;
  w.pb = part_blocks(g, part, blk, kern);
  w.nk = ceil_div(g.k, w.pb.kc);
  w.phases = ceil_div(part.n1 - part.n0, w.pb.nc) * w.nk;
  const long rows = part.m1 - part.m0, cols = std::min(w.pb.nc, part.n1 - part.n0);
  const long row_tiles = ceil_div(rows, kern.mr), col_tiles = ceil_div(cols, kern.nr);
  const bool small = product_flops(rows, part.n1 - part.n0, g.k) < __int128(kOneUnitFlopsPerThread) * part.threads;
  const long per_thread = small ? 1 : kern.units_per_thread > 0 ? kern.units_per_thread : kUnitsPerThread;
  const long want = part.threads > 1 ? part.threads * per_thread : 1;
  // Rows first (a unit packs its own A block: splitting the columns packs
  // the same rows again), in the planner's column chunks; columns further
  // only when the rows run out (skinny products).
  w.col_chunks = std::clamp<long>(part.grid_n, 1, col_tiles);
  const long rb = std::clamp<long>(ceil_div(want, w.col_chunks), 1, row_tiles);
  w.mu = std::min(blk.mc, ceil_div(row_tiles, rb) * kern.mr);
  w.row_blocks = ceil_div(rows, w.mu);
  if (w.units() < want) w.col_chunks = std::min(col_tiles, ceil_div(want, w.row_blocks));
  w.pack_tasks = direct_b ? 0 : static_cast<int>(std::min<long>(col_tiles, 2L * part.threads));
  return w;
}

template <typename Ty>
struct Job {
  const GemmArgs<Ty> &g;
  const PartitionPlan &plan;
  const GemmKernel<Ty> &kern;
  Blocking blk;
  Workspace &ws;
  const std::vector<PartWork> &work;  // one per part
  bool direct_b;  // the microkernel reads op(B) in place; no B panel, no packing tasks
  RegionTimer *timer;  // the cores the team runs on (common/contention.h); null when serial
  // op(A) packed whole (packed_a_cache.h), null when each unit packs its
  // block: k block b's panels start at a_cached + a_offsets[b], row i's at
  // (i / mr) * mr * panel_elements past that.
  const typename Ty::packed_a_type *a_cached = nullptr;
  const long *a_offsets = nullptr;
};

std::atomic<testing::UnitHook> g_unit_hook{nullptr};

// Which A block a thread's buffer holds: a unit of the same rows and k
// block as the thread's previous one packs nothing.
struct PackedARows {
  size_t part = ~size_t(0);
  long phase = -1, row_block = -1;
};

// One block of C: rows [ic, ic + mc) by columns jc + [j0, j1), over k
// steps [pc, pc + kc), from op(A)'s packed panels `a` and op(B)'s packed
// panel `b_packed` (its columns from jc; null: op(B) read in place), summed
// into C (beta on the first k block, 1 on the others), and on the last k
// block the epilogue, fused by a family that fuses it, else applied after.
// run_part's units and single_block_gemm's one block, so that both compute
// the same sums.
template <typename Ty>
void compute_block(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const typename Ty::packed_a_type *a,
                   const typename Ty::packed_b_type *b_packed, long ic, long mc, long jc, long j0, long j1, long pc,
                   long kc) {
  // op(B)(p, j) in place is g.b[p * rsb + j * csb].
  const long rsb = g.tb == Trans::N ? 1 : g.ldb, csb = g.tb == Trans::N ? g.ldb : 1;
  const bool last_k = pc + kc >= g.k;
  MacroBlock<Ty> blk{};
  blk.kc = packed_depth(kern, kc);
  blk.mc = mc;
  blk.j0 = j0;
  blk.j1 = j1;
  blk.alpha = g.alpha;
  blk.beta = pc == 0 ? g.beta : Acc<Ty>(1);
  blk.a = a;
  blk.b_packed = b_packed;
  blk.b = g.b + pc * rsb + jc * csb;
  blk.rsb = rsb;
  blk.csb = csb;
  blk.ldc = g.ldc;
  blk.c = g.c + ic + jc * g.ldc;
  blk.i_origin = ic;
  blk.j_origin = jc;
  // A family that fuses the epilogue gets it with the last k block.
  const bool fused = last_k && g.epilogue && kern.fuses_epilogue;
  if (fused) blk.epilogue = g.epilogue;
  kern.macro(kern, blk);
  // The block's final values, still in cache: the epilogue's turn.
  if (last_k && g.epilogue && !fused) apply_epilogue(g, ic, mc, jc + j0, j1 - j0);
}

// Team thread `t` takes tasks of part `pi` until it has none left.
template <typename Ty>
void run_part(const Job<Ty> &job, size_t pi, int t, PackedARows &held) {
  using PackedA = typename Ty::packed_a_type;
  using PackedB = typename Ty::packed_b_type;
  const GemmArgs<Ty> &g = job.g;
  const DomainPart &part = job.plan.parts[pi];
  const PartWork &w = job.work[pi];
  PartProgress &prog = job.ws.progress[pi];
  PackedB *bp = static_cast<PackedB *>(job.ws.b_panels[pi]->data());
  PackedA *ap = static_cast<PackedA *>(job.ws.a_blocks[t]->data());
  const int nr = job.kern.nr;
  const long per_phase = w.per_phase(), units = w.units(), total = w.tasks();
  for (;;) {
    const long task = prog.next.fetch_add(1, std::memory_order_relaxed);
    if (task >= total) return;
    const long phase = task / per_phase, r = task % per_phase;
    const long jc = part.n0 + (phase / w.nk) * w.pb.nc, pc = (phase % w.nk) * w.pb.kc;
    const long nc = std::min(w.pb.nc, part.n1 - jc), kc = std::min(w.pb.kc, g.k - pc);
    // Packed panels are kcp deep (kernel.h: padded to k_align, splits).
    const long kcp = packed_depth(job.kern, kc);
    if (r < w.pack_tasks) {
      if (phase > 0) prog.done.wait_at_least(static_cast<int32_t>(units * phase));  // the panel is free
      long jb0, jb1;
      tile_range(nc, w.pack_tasks, static_cast<int>(r), nr, jb0, jb1);
      if (jb1 > jb0)
        job.kern.pack_b(bp + jb0 * kcp * job.kern.panel_scale, g.b, g.ldb, g.tb, pc, kc, jc + jb0, jb1 - jb0);
      prog.packed.add(1);
      continue;
    }
    if (w.pack_tasks) prog.packed.wait_at_least(static_cast<int32_t>(w.pack_tasks * (phase + 1)));
    else if (phase > 0) prog.done.wait_at_least(static_cast<int32_t>(units * phase));
    if (const testing::UnitHook hook = g_unit_hook.load(std::memory_order_relaxed)) hook(t, static_cast<int>(pi));
    const long u = r - w.pack_tasks, ib = u / w.col_chunks, jb = u % w.col_chunks;
    const long ic = part.m0 + ib * w.mu;
    const long mc = std::min(w.mu, part.m1 - ic);
    long j0, j1;
    tile_range(nc, static_cast<int>(w.col_chunks), static_cast<int>(jb), nr, j0, j1);
    if (mc > 0 && j1 > j0) {
      const PackedA *a = ap;
      if (job.a_cached) {
        a = job.a_cached + job.a_offsets[phase % w.nk] +
            (ic / job.kern.mr) * job.kern.mr * panel_elements(job.kern, kc);
      } else if (held.part != pi || held.phase != phase || held.row_block != ib) {
        job.kern.pack_a(ap, g.a, g.lda, g.ta, ic, mc, pc, kc);
        held = {pi, phase, ib};
      }
      compute_block(g, job.kern, a, job.direct_b ? nullptr : bp, ic, mc, jc, j0, j1, pc, kc);
    }
    prog.done.add(1);
  }
}

// The work of team thread `t`: its own domain part's tasks, then, once they
// are all handed out, those of the other parts in turn (a domain that is
// done helps the others, reading their panels remotely), then the wait for
// the rest of the team.
template <typename Ty>
void run_thread(const Job<Ty> &job, int t) {
  const auto &parts = job.plan.parts;
  size_t own = 0;
  while (own + 1 < parts.size() && t >= parts[own].first_thread + parts[own].threads) ++own;
  const Topology &topo = topology();
  bind_to_domain(topo, topo.domains[parts[own].domain]);
  PackedARows held;
  {
    ThreadTimer cpu(job.timer);
    for (size_t i = 0; i < parts.size(); ++i) run_part(job, (own + i) % parts.size(), t, held);
  }
  job.ws.finish.arrive_and_wait();
}

// Whether the microkernel reads op(B) in place rather than a packed copy;
// pack_policy.h says when that pays.
template <typename Ty>
bool read_b_in_place(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const Blocking &blk) {
  if (kern.b_in_place) return b_packing() != BPacking::always && kern.b_in_place(g.tb, g.n, g.k);
  if (!kern.full_direct || kern.k_align != 1) return false;  // in place, k cannot be padded
  switch (b_packing()) {
    case BPacking::always: return false;
    case BPacking::never: return true;
    case BPacking::automatic: break;
  }
  const size_t span = sizeof(typename Ty::b_type) * std::min(g.k, blk.kc) * g.ldb;
  return b_in_place_pays(g.tb, g.m, blk.mc, span, topology().l2);
}

enum class Outcome { done, unpacked, short_team };

// op(A) packed whole (the packed-A cache's entries, a caller's held
// panels): its k blocks are kc deep, and k block b's panels of all rows
// start at element offsets[b]; returns the elements of all of them.
template <typename Ty>
long whole_a_kc(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const Blocking &blk) {
  return balanced_block(g.k, blk.kc, std::lcm(8, kern.k_align));  // part_blocks' kc: the same in every part
}
template <typename Ty>
long whole_a_layout(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, long kc, std::vector<long> &offsets) {
  const long nk = ceil_div(g.k, kc), mp = ceil_div(g.m, kern.mr) * kern.mr;
  offsets.resize(static_cast<size_t>(nk));
  long total = 0;
  for (long b = 0; b < nk; ++b) {
    offsets[b] = total;
    total += mp * panel_elements(kern, std::min(kc, g.k - b * kc));
  }
  return total;
}
template <typename Ty>
PackedAKey whole_a_key(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, long kc, const void *owner) {
  return {g.a, g.lda, g.ta, g.m, g.k, reinterpret_cast<const void *>(kern.pack_a), kern.mr, kc,
          sizeof(typename Ty::a_type), owner};
}
// Packs op(A) whole into dst, in chunks of the units' height (dynamic over
// `threads`).
template <typename Ty>
void pack_whole_a(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const Blocking &blk, long kc,
                  const std::vector<long> &offsets, typename Ty::packed_a_type *dst, int threads) {
  const long nk = static_cast<long>(offsets.size());
  const long rows = std::max<long>(kern.mr, blk.mc / kern.mr * kern.mr), chunks = ceil_div(g.m, rows);
  const long tasks = nk * chunks;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic)
  for (long t = 0; t < tasks; ++t) {
    const long b = t / chunks, i0 = (t % chunks) * rows, pc = b * kc, kcb = std::min(kc, g.k - pc);
    kern.pack_a(dst + offsets[b] + i0 * panel_elements(kern, kcb), g.a, g.lda, g.ta, i0, std::min(rows, g.m - i0), pc,
                kcb);
  }
}
// Whether every unit's rows start on a panel of op(A) packed whole: each
// part's first row and its units' height (blk.mc, capped, need not be a
// multiple of an mr of 24).
template <typename Ty>
bool units_on_panels(const PartitionPlan &plan, const std::vector<PartWork> &work, const GemmKernel<Ty> &kern) {
  for (size_t i = 0; i < plan.parts.size(); ++i)
    if (plan.parts[i].m0 % kern.mr != 0 || work[i].mu % kern.mr != 0) return false;
  return true;
}

// op(A) through the packed-A cache (packed_a_cache.h), for a caller that
// tagged it: the entry to read, packed whole first unless it already holds
// op(A) as it is now (in each k block, row i's panel where a unit's block
// starting at row i would have it: the units read it in place of their
// own packing); null when the cache declines, *use says why. `offsets`
// gets each k block's first element.
template <typename Ty>
std::shared_ptr<PackedAEntry> cached_a(const GemmArgs<Ty> &g, const PartitionPlan &plan, const GemmKernel<Ty> &kern,
                                      const std::vector<PartWork> &work, const Blocking &blk,
                                      std::vector<long> &offsets, ACacheUse *use) {
  using PackedA = typename Ty::packed_a_type;
  if (!units_on_panels(plan, work, kern)) {
    *use = ACacheUse::unaligned;
    return nullptr;
  }
  const long kc = work.front().pb.kc;
  const long total = whole_a_layout(g, kern, kc, offsets);
  std::shared_ptr<PackedAEntry> e =
      acquire_packed_a(whole_a_key(g, kern, kc, g.a_tag->owner), g.a_tag->version, sizeof(PackedA) * size_t(total),
                       plan.parts.front().mem_node, plan.threads, use);
  if (!e || *use == ACacheUse::hit) return e;
  pack_whole_a(g, kern, blk, kc, offsets, static_cast<PackedA *>(e->panels.data()), plan.threads);
  publish_packed_a(e);
  return e;
}

// Whether the caller's held panels (gemm/held_a.h) are op(A) as this
// product would pack it.
template <typename Ty>
bool held_a_serves(const GemmArgs<Ty> &g, const PartitionPlan &plan, const GemmKernel<Ty> &kern,
                   const std::vector<PartWork> &work) {
  const HeldPackedA &h = *g.a_held;
  return h.valid && h.key == whole_a_key(g, kern, work.front().pb.kc, nullptr) && units_on_panels(plan, work, kern);
}

// One attempt at the product with `plan`. A short team (OpenMP gave fewer
// threads than the plan needs) computes nothing: the caller plans again,
// after this call has returned its workspace.
template <typename Ty>
Outcome execute(const GemmArgs<Ty> &g, const PartitionPlan &plan, const GemmKernel<Ty> &kern, bool &direct_b,
                const char *&a_cache) {
  WorkspaceLease ws;
  ws->shape(plan.parts.size(), plan.threads);
  const Blocking blk = blocking_for_product(topology(), kern, g.k);
  direct_b = read_b_in_place(g, kern, blk);
  std::vector<PartWork> work;
  work.reserve(plan.parts.size());
  // Every buffer is sized here, before the team starts: a buffer that grows
  // is remapped, which must never happen under a thread still reading it.
  for (size_t i = 0; i < plan.parts.size(); ++i) {
    const DomainPart &part = plan.parts[i];
    work.push_back(part_work(g, part, blk, kern, direct_b));
    const PartBlocks pb = work.back().pb;
    ws->progress[i].reset();
    const long kcp = packed_depth(kern, pb.kc);
    bool ok =
        direct_b || ws->b_panels[i]->ensure(
                        sizeof(typename Ty::packed_b_type) * kcp * kern.panel_scale * (pb.nc + kern.nr), part.mem_node);
    for (int t = part.first_thread; t < part.first_thread + part.threads; ++t)
      ok = ok && ws->a_blocks[t]->ensure(
                     sizeof(typename Ty::packed_a_type) * kcp * kern.panel_scale * (blk.mc + kern.mr), part.mem_node);
    if (!ok) {
      warn_once("oom", "no memory for GEMM packing buffers; computing without packing (slow)");
      unpacked_gemm(g);
      return Outcome::unpacked;
    }
  }
  a_cache = nullptr;  // this attempt's (a short team's retry may not read what the first would have)
  std::vector<long> a_offsets;
  std::shared_ptr<PackedAEntry> a_entry;  // held until the product is done
  const typename Ty::packed_a_type *a_cached = nullptr;
  const long *a_cached_offsets = nullptr;
  if (g.a_held && held_a_serves(g, plan, kern, work)) {
    a_cached = static_cast<const typename Ty::packed_a_type *>(g.a_held->panels.data());
    a_cached_offsets = g.a_held->offsets.data();
    a_cache = "held";
  } else if (g.a_tag) {
    ACacheUse use = ACacheUse::off;
    a_entry = cached_a(g, plan, kern, work, blk, a_offsets, &use);
    a_cache = a_cache_use_name(use);
    if (a_entry) a_cached = static_cast<const typename Ty::packed_a_type *>(a_entry->panels.data());
    a_cached_offsets = a_offsets.data();
  }
  ws->finish.reset(plan.threads);
  if (plan.threads == 1) {
    run_thread(Job<Ty>{g, plan, kern, blk, *ws, work, direct_b, nullptr, a_cached, a_cached_offsets}, 0);
    return Outcome::done;
  }
  RegionTimer timer(plan.threads, allowed_threads(),
                    product_flops(g.m, g.n, g.k) < __int128(kShortRegionFlopsPerThread) * plan.threads);
  const Job<Ty> job{g, plan, kern, blk, *ws, work, direct_b, &timer, a_cached, a_cached_offsets};
  bool short_team = false;
#pragma omp parallel num_threads(plan.threads)
  {
    // OMP_THREAD_LIMIT or a dynamic runtime may give fewer threads than asked.
    if (omp_get_num_threads() != plan.threads) {
#pragma omp single
      short_team = true;
    } else {
      run_thread(job, omp_get_thread_num());
    }
  }
  if (short_team) return Outcome::short_team;
  timer.finish();
  return Outcome::done;
}

// Packing memory of single_block_gemm, one per calling thread, kept
// between its calls (unmapped at the thread's exit): at most
// kSingleBlockMaxBytes. Memory that cannot be had leaves the product to
// the general path, which says so; so does a product while the thread's
// panels are in use (a GEMM from inside the unit hook or an epilogue) or
// once they are gone (a BLAS call from an atexit handler or a static
// destructor: glibc destroys thread_locals first). The two flags are plain
// thread_locals, which outlive the buffer.
thread_local bool t_single_block_busy = false;
thread_local bool t_single_block_gone = false;
struct SingleBlockPanels {
  NumaBuffer buffer;
  ~SingleBlockPanels() { t_single_block_gone = true; }
};
thread_local SingleBlockPanels t_single_block_panels;

// How one block holds a product: its blocking, whether op(B) is read in
// place, and the panels' bytes; bytes 0 when one block does not hold it
// (more than one thread's flops, more than one block in m, n or k, or more
// than kSingleBlockMaxBytes: blocking.h's single_block_bytes).
// single_block_gemm also leaves the packed-A cache's and held panels'
// products to execute(), and those made while the thread's panels are in
// use or gone to the general path: both pack op(A) as one block does.
struct SingleBlockFit {
  Blocking blk{};
  bool direct_b = false;
  size_t bytes = 0;
};
template <typename Ty>
SingleBlockFit single_block_fit(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern) {
  SingleBlockFit fit;
  if (!one_thread_product(kern, g.m, g.n, g.k)) return fit;  // before the blocking: every large product asks
  fit.blk = blocking_for_product(topology(), kern, g.k);
  fit.direct_b = read_b_in_place(g, kern, fit.blk);
  fit.bytes = single_block_bytes(kern, fit.blk, g.m, g.n, g.k, !fit.direct_b);
  return fit;
}

// Rows of C a piece of a skinny product starts on: a multiple of every
// skinny kernel's row block (3 vectors of 16, 8 or 4 with ta = N; 4 or 3
// rows with T).
constexpr long kSkinnyRowGrain = 96;
// Bytes of A per thread of a skinny product: smaller ones run on fewer
// threads (waking a thread costs more than streaming that much).
constexpr long kSkinnyBytesPerThread = 128 << 10;
// Rows a piece of a skinny product with op(A) = A is given at least, where
// there are rows enough (share_range's pieces per thread fewer).
constexpr long kSkinnyNPieceRows = 512;

// The family's skinny kernel (kernels/skinny.h) can take a product of at
// most kSkinnyMaxN columns (such a kernel, HCOPS_SKINNY not never:
// thin_decision checks those) with at least as many row blocks as the
// threads A's size asks for (those are what the kernels share: too few
// rows for the team, a long k such as 64 x 16 x 10^6, go to the packed
// path, which splits the columns too); the team in *threads.
//
// Decided on the caller's thread count (allowed_threads), not the team the
// contention measurements give now (max_threads), which can change between
// gemm_through_wide_c's question and skinny_gemm's: a bf16 C left without
// its f32 copy must then be summed whole by the skinny kernel, not rounded
// per k block on the packed path. The team actually started (`threads`) is
// at most the caller's count, so the rows still suffice for it. (The
// caller's count is read once: max_threads() is
// contended_team(allowed_threads()).)
template <typename Ty>
bool skinny_rows_suffice(const GemmArgs<Ty> &g, int *threads) {
  const long a_bytes = long(sizeof(typename Ty::a_type)) * g.m * g.k;
  const auto wanted = [&](int most) {
    return static_cast<int>(std::clamp<long>(a_bytes / kSkinnyBytesPerThread, 1, std::max(most, 1)));
  };
  const int allowed = allowed_threads();
  *threads = wanted(contended_team(allowed));
  return ceil_div(g.m, kSkinnyRowGrain) >= wanted(allowed);
}

// How a product is computed among the thin kernels and one block, decided
// once per call: the skinny kernel, then the shallow one, take what they
// apply to, except where one block also holds the product, HCOPS_SKINNY
// is auto and the family chooses by its measured costs
// (GemmKernel::thin_choice). `one_block` means neither thin kernel:
// single_block_gemm, or the general path where it does not take the
// product (more than one block; the packed-A cache's and held panels'
// products, which one block holds all the same: the family's choice is
// between packing op(A) and the thin kernels, and must not change with a
// cache or held panels).
struct ThinDecision {
  ThinPath path = ThinPath::one_block;
  bool shallow_takes = false;  // the shallow kernel would take it (skinny_gemm's fallback)
  int skinny_threads = 1;      // the skinny kernel's team
  bool fit_known = false;      // `fit` is single_block_fit's answer
  SingleBlockFit fit;
};
// The family's choice is asked first, from the shape alone (a few ns): only
// a path other than the thin kernels' own order needs to know whether one
// block holds the product (the blocking's divisions), and only the skinny
// kernel needs its team (the thread counts' OpenMP calls). Each was a
// tenth of a 0.2 us product's time (Zen 3).
template <typename Ty>
ThinDecision thin_decision(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern) {
  ThinDecision d;
  const bool shallow_k = g.k >= 1 && g.k <= kShallowMaxK;
  if ((!kern.skinny || g.n > kSkinnyMaxN) && (!kern.shallow || !shallow_k)) return d;  // before HCOPS_SKINNY's call
  const SkinnyMode mode = skinny_mode();
  if (mode == SkinnyMode::never) return d;
  const bool skinny_shape = kern.skinny && g.n <= kSkinnyMaxN;
  d.shallow_takes = kern.shallow && shallow_k;
  if (kern.thin_choice && mode == SkinnyMode::automatic) {
    const ThinPath choice = kern.thin_choice(g.ta, g.tb, g.m, g.n, g.k, skinny_shape, d.shallow_takes);
    const bool takes = choice == ThinPath::one_block || (choice == ThinPath::skinny ? skinny_shape : d.shallow_takes);
    if (takes && choice != (skinny_shape ? ThinPath::skinny : ThinPath::shallow)) {  // else the kernels' order
      d.fit = single_block_fit(g, kern);
      d.fit_known = true;
      if (d.fit.bytes) {
        d.path = choice;
        return d;
      }
    }
  }
  if (skinny_shape && skinny_rows_suffice(g, &d.skinny_threads)) d.path = ThinPath::skinny;
  else if (d.shallow_takes) d.path = ThinPath::shallow;
  return d;
}

// A product thin_decision gives the family's skinny kernel, on `wanted`
// threads at most: C's rows shared dynamically in pieces, each piece's
// epilogue as soon as its rows are final. op(B) strided in k is copied
// first (n x k elements); false when there is no memory for that copy.
template <typename Ty>
bool skinny_gemm(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, int wanted, GemmReport &rep) {
  using B = typename Ty::b_type;
  const B *b = g.b;
  long csb = g.ldb;
  std::unique_ptr<B[]> contiguous;
  if (g.tb == Trans::T) {  // op(B) = B^T: n x k elements, column j at j * k
    contiguous.reset(new (std::nothrow) B[g.n * g.k]);
    if (!contiguous) return false;
    for (long p = 0; p < g.k; ++p)
      for (long j = 0; j < g.n; ++j) contiguous[j * g.k + p] = g.b[j + p * g.ldb];
    b = contiguous.get();
    csb = g.k;
  }
  // With op(A) = A a piece reads its rows' part of every column of A, lda
  // apart: pieces of at least kSkinnyNPieceRows rows where there are rows
  // for them (DiT-XL/2's adaLN input gradient, 1152 rows: 2 pieces, not 8).
  const long per_thread = g.ta == Trans::N
                              ? std::clamp<long>(g.m / (kSkinnyNPieceRows * std::max(wanted, 1)), 1, kPiecesPerThread)
                              : kPiecesPerThread;
  rep.threads = share_range(
      g.m, kSkinnyRowGrain, wanted,
      [&](long i0, long i1) {
        if (i1 <= i0) return;
        const auto *a = g.a + (g.ta == Trans::N ? i0 : i0 * g.lda);
        kern.skinny(g.ta, i1 - i0, g.n, g.k, g.alpha, a, g.lda, b, csb, g.beta, g.c + i0, g.ldc);
        if (g.epilogue) apply_epilogue(g, i0, i1 - i0, 0, g.n);
      },
      per_thread);
  rep.b = "skinny";
  return true;
}

// Rows of C a piece of a shallow product starts on: the kernel's row block.
constexpr long kShallowRowGrain = 32;
// Bytes of C per thread of a shallow product: smaller ones run on fewer
// threads (a shallow product is bound by writing C).
constexpr long kShallowBytesPerThread = 64 << 10;

// Whether a shallow product writes C non-temporally (kernels/shallow.h):
// when C is only written (beta = 0, no epilogue to read it back) and is
// larger than the L2 caches of the threads writing it (one per thread: an
// L2 shared by cores counts once per thread), so that it could not stay
// near them for its reader anyway. Its lines are then not read before
// being written, half the memory traffic; the reader, if soon, finds C in
// memory rather than in L3. Only a C whose columns start on 64-byte lines
// (C and ldc aligned, as PyTorch's tensors are), so that every whole block
// the kernel writes starts on a line (or, bf16 on AVX2, a half line) and
// is streamed: a column starting mid-line would have none, and the verbose
// line's c=streamed would not be true.
inline bool shallow_streams_c(const void *c, long ldc_bytes, long c_bytes, int threads, bool beta_zero, bool epilogue) {
  const bool lines = reinterpret_cast<uintptr_t>(c) % 64 == 0 && ldc_bytes % 64 == 0;
  return beta_zero && !epilogue && lines && c_bytes > long(threads) * long(topology().l2);
}

// A product thin_decision gives the family's shallow kernel: C shared
// dynamically in pieces along its longer side (rows in multiples of 32, a
// multiple of every family's blocks; columns in multiples of 4), each
// piece's epilogue as soon as it is written.
template <typename Ty>
bool shallow_gemm(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, GemmReport &rep) {
  const long c_bytes = long(sizeof(typename Ty::c_type)) * g.m * g.n;
  const int wanted = static_cast<int>(std::clamp<long>(c_bytes / kShallowBytesPerThread, 1, max_threads()));
  const bool stream = shallow_streams_c(g.c, long(sizeof(typename Ty::c_type)) * g.ldc, c_bytes, wanted,
                                        g.beta == Acc<Ty>(0), bool(g.epilogue));
  const bool by_rows = g.m >= g.n;
  rep.threads = share_range(by_rows ? g.m : g.n, by_rows ? kShallowRowGrain : 4, wanted, [&](long x0, long x1) {
    if (x1 <= x0) return;
    const long i0 = by_rows ? x0 : 0, m = by_rows ? x1 - x0 : g.m;
    const long j0 = by_rows ? 0 : x0, n = by_rows ? g.n : x1 - x0;
    const auto *a = g.a + (g.ta == Trans::N ? i0 : i0 * g.lda);
    const auto *b = g.b + (g.tb == Trans::N ? j0 * g.ldb : j0);
    kern.shallow(g.ta, g.tb, m, n, g.k, g.alpha, a, g.lda, b, g.ldb, g.beta, g.c + i0 + j0 * g.ldc, g.ldc, stream);
    if (g.epilogue) apply_epilogue(g, i0, m, j0, n);
  });
  rep.b = "shallow";
  rep.c_streamed = stream;
  return true;
}

// An epilogue applied to a block of columns of C as if to the whole C: its
// column coordinates shifted by the block's first column.
template <typename Acc>
struct ShiftedEpilogue {
  Epilogue<Acc> inner;
  long j_shift;
  static void apply(const void *ctx, Acc *c, long ldc, long i0, long m, long j0, long n) {
    const auto *s = static_cast<const ShiftedEpilogue *>(ctx);
    s->inner.apply(s->inner.ctx, c, ldc, i0, m, j0 + s->j_shift, n);
  }
};

// The same datatypes with an f32 (accumulation-type) C.
template <typename Ty>
using WideC = GemmTypes<typename Ty::a_type, typename Ty::b_type, Acc<Ty>, Acc<Ty>, typename Ty::packed_a_type,
                        typename Ty::packed_b_type, Ty::splits>;

// A C narrower than the accumulation (bf16) is rounded once, from the f32 sum
// over the whole of k. The kernels round C when they store it, and each k
// block after the first reads it back (beta = 1): a product deeper than one
// k block would round every partial sum, several bf16 ulps off. Such a
// product is computed into an f32 copy of C with the f32-C kernels of the
// same datatypes, then rounded. With an epilogue too (alpha = 0 and k = 0
// as well): it must see the f32 sum, and C be rounded after it; except for
// one k block on a family that fuses the epilogue, which applies it to each
// tile's f32 values before rounding them. A skinny or shallow product needs
// the copy only for an epilogue: its kernel sums the whole of k before it
// rounds C.
// False (nothing done) when it needs no copy or there is no memory for one:
// the kernels then round per k block.
template <typename Ty>
bool gemm_through_wide_c(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, GemmReport &rep) {
  using C = typename Ty::c_type;
  if constexpr (std::is_same_v<C, Acc<Ty>>) {
    return false;
  } else {
    using Wide = WideC<Ty>;
    const ChosenKernel<Wide> &wide = chosen_kernel<Wide>();
    if (!wide.kernel || g.m == 0 || g.n == 0) return false;
    const bool unpacked = thin_decision(g, kern).path != ThinPath::one_block;
    const bool one_k_block =
        g.alpha == Acc<Ty>(0) || unpacked || g.k <= blocking_for_product(topology(), kern, g.k).kc;
    const bool fused = kern.fuses_epilogue && !unpacked && g.alpha != Acc<Ty>(0) && g.k != 0;
    if (one_k_block && (!g.epilogue || fused)) return false;
    // Column blocks of C at most kWideBytes of f32 each: the copy stays
    // bounded however large C is (overcommit would let a whole-C copy of a
    // huge C be allocated, then kill the process when touched).
    constexpr long kWideBytes = 64L << 20;
    const long nb = std::clamp<long>(kWideBytes / long(sizeof(Acc<Ty>) * g.m), 1, g.n);
    std::unique_ptr<Acc<Ty>[]> tmp(fault::allocation_fails() ? nullptr : new (std::nothrow) Acc<Ty>[g.m * nb]);
    if (!tmp) {  // C rounded after each k block instead (apply_epilogue): less exact, said
      note_once("wide c refused", "gemm: no memory for an f32 copy of a bf16 C (%ld x %ld): C rounded after "
                "each k block", g.m, nb);
      return false;
    }
    const bool read_c = g.beta != Acc<Ty>(0);  // beta = 0 never reads C
    const int threads = max_threads();
    for (long j0 = 0; j0 < g.n; j0 += nb) {
      const long n = std::min(nb, g.n - j0);
      C *c = g.c + j0 * g.ldc;
      if (read_c) {
#pragma omp parallel for num_threads(threads) if (threads > 1)
        for (long j = 0; j < n; ++j)
          for (long i = 0; i < g.m; ++i) tmp[i + j * g.m] = Acc<Ty>(c[i + j * g.ldc]);
      }
      // op(B)'s columns j0.. (B may be null when alpha = 0 or k = 0: never read).
      const auto *b = g.b ? g.b + (g.tb == Trans::N ? j0 * g.ldb : j0) : g.b;
      GemmArgs<Wide> w{g.ta, g.tb, g.m, n, g.k, g.alpha, g.a, g.lda, b, g.ldb, g.beta, tmp.get(), g.m};
      w.a_tag = g.a_tag;  // the same op(A): the same packed panels
      w.a_held = g.a_held;
      // The copy's column j is C's column j0 + j: the epilogue is told so.
      const ShiftedEpilogue<Acc<Ty>> shifted{g.epilogue, j0};
      if (g.epilogue) w.epilogue = {&ShiftedEpilogue<Acc<Ty>>::apply, &shifted};
      rep = gemm_with(w, *wide.kernel, wide.family->name);
#pragma omp parallel for num_threads(threads) if (threads > 1)
      for (long j = 0; j < n; ++j)
        for (long i = 0; i < g.m; ++i) c[i + j * g.ldc] = C(tmp[i + j * g.m]);
    }
    return true;
  }
}

}  // namespace

void testing::set_unit_hook(testing::UnitHook hook) { g_unit_hook.store(hook, std::memory_order_relaxed); }

namespace {

// gemm() on the datatypes as typed: the family chosen for Ty, else the
// unpacked loops.
template <typename Ty>
GemmReport gemm_as_typed(const GemmArgs<Ty> &g) {
  const ChosenKernel<Ty> &chosen = chosen_kernel<Ty>();
  GemmReport wide;
  if (chosen.kernel && gemm_through_wide_c(g, *chosen.kernel, wide)) return wide;
  if (chosen.kernel) return gemm_with(g, *chosen.kernel, chosen.family->name);
  // No family serves these datatypes (never f32/f64: generic serves them).
  GemmReport rep;
  if (g.m == 0 || g.n == 0) return rep;
  if (g.alpha == Acc<Ty>(0) || g.k == 0) {
    scale_c(g);
  } else {
    unpacked_gemm(g);
    rep.b = "unpacked";
  }
  return rep;
}

// The same f32 arguments for a reduced-precision mode's kernels (A and B
// rounded or split while packing; C, alpha, beta f32).
template <typename To>
GemmArgs<To> as_mode(const GemmArgs<Sgemm> &g) {
  return {g.ta, g.tb, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc, g.epilogue, F32Mode::engine, g.a_tag};
}

// One place decides f32's mode for every layer (gemm/fp32_math.h): strict
// where the caller's contract is (a oneDNN primitive), else the process's
// HCOPS_FP32_MATH as resolved once. Anything but strict runs on as_mode's
// kernels, not Sgemm's.
Fp32Math fp32_mode_of(const GemmArgs<Sgemm> &g) {
  return g.f32_mode == F32Mode::strict ? Fp32Math::strict : fp32_math().used;
}

GemmReport gemm_in_fp32_mode(const GemmArgs<Sgemm> &g) {
  GemmReport rep;
  switch (fp32_mode_of(g)) {
    case Fp32Math::strict: rep = gemm_as_typed(g); break;
    case Fp32Math::bf16: rep = gemm_as_typed(as_mode<SgemmBf16>(g)); break;
    case Fp32Math::bf16x3: rep = gemm_as_typed(as_mode<SgemmBf16x3>(g)); break;
  }
  if (g.f32_mode != F32Mode::strict) rep.math = fp32_math_detail().c_str();  // a caller's strict contract is not the mode
  return rep;
}

}  // namespace

template <typename Ty>
GemmReport gemm(const GemmArgs<Ty> &g) {
  if constexpr (std::is_same_v<Ty, Sgemm>) return gemm_in_fp32_mode(g);
  else return gemm_as_typed(g);
}

// A product the planner would give one thread (its flops worth no second
// one) that is one block in each of m, n and k (blocking.h's
// single_block_bytes): op(A) packed, op(B) read in place or packed, one
// macro-kernel call, the same operations as execute()'s one task, without
// its per-call work (the plan, the workspace's lease, the parts' work, the
// team's counters and barrier), which was a third of a 17^3 sgemm_ on a
// Zen 3.
template <typename Ty>
bool single_block_gemm(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const ThinDecision &thin, GemmReport &rep) {
  if (g.a_tag || g.a_held || t_single_block_busy || t_single_block_gone) return false;  // see single_block_fit
  const SingleBlockFit fit = thin.fit_known ? thin.fit : single_block_fit(g, kern);
  if (!fit.bytes) return false;
  const bool direct_b = fit.direct_b;
  auto *panels = static_cast<unsigned char *>(t_single_block_panels.buffer.ensure(fit.bytes, -1));
  if (!panels) return false;
  t_single_block_busy = true;
  struct Release {
    ~Release() { t_single_block_busy = false; }
  } release;
  using PackedA = typename Ty::packed_a_type;
  using PackedB = typename Ty::packed_b_type;
  auto *ap = reinterpret_cast<PackedA *>(panels);
  auto *bp = direct_b ? nullptr : reinterpret_cast<PackedB *>(panels + single_block_a_bytes(kern, g.m, g.k));
  if (bp) kern.pack_b(bp, g.b, g.ldb, g.tb, 0, g.k, 0, g.n);
  if (const testing::UnitHook hook = g_unit_hook.load(std::memory_order_relaxed)) hook(0, 0);
  kern.pack_a(ap, g.a, g.lda, g.ta, 0, g.m, 0, g.k);
  compute_block(g, kern, ap, bp, 0, g.m, 0, 0, g.n, 0, g.k);
  rep.b = direct_b ? "in-place" : "packed";
  rep.one_block = true;
  return true;
}

template <typename Ty>
GemmReport gemm_with(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, const char *family) {
  GemmReport rep;
  if (g.m == 0 || g.n == 0) return rep;
  if (g.alpha == Acc<Ty>(0) || g.k == 0) {
    scale_c(g);
    return rep;
  }
  rep.family = family;
  rep.mr = kern.mr;
  rep.nr = kern.nr;
  const ThinDecision thin = thin_decision(g, kern);
  // The skinny kernel declines when it has no memory for a copy of op(B):
  // the shallow one, where it applies, then one block or the general path.
  if (thin.path == ThinPath::skinny && skinny_gemm(g, kern, thin.skinny_threads, rep)) return rep;
  if (thin.path != ThinPath::one_block && thin.shallow_takes && shallow_gemm(g, kern, rep)) return rep;
  if (single_block_gemm(g, kern, thin, rep)) return rep;
  PartitionPlan plan =
      plan_gemm(topology(), g.m, g.n, g.k, max_threads(), PlanLimits{kern.mr, kern.nr, kern.min_flops_per_thread});
  bool direct_b = false;
  Outcome out = execute(g, plan, kern, direct_b, rep.a_cache);
  if (out == Outcome::short_team) {
    plan = plan_gemm(topology(), g.m, g.n, g.k, 1, PlanLimits{kern.mr, kern.nr});
    out = execute(g, plan, kern, direct_b, rep.a_cache);
  }
  rep.b = out == Outcome::unpacked ? "unpacked" : direct_b ? "in-place" : "packed";
  rep.threads = out == Outcome::unpacked ? 1 : plan.threads;
  rep.domains = static_cast<int>(plan.parts.size());
  rep.split = plan.split_n ? 'n' : 'm';
  rep.grid_m = plan.parts.empty() ? 1 : plan.parts.front().grid_m;
  rep.grid_n = plan.parts.empty() ? 1 : plan.parts.front().grid_n;
  return rep;
}

template <typename Ty>
ThinPath thin_path_with(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, bool *one_block_holds) {
  *one_block_holds = single_block_fit(g, kern).bytes > 0;
  return thin_decision(g, kern).path;
}

template <typename Ty>
bool hold_packed_a_with(const GemmArgs<Ty> &g, const GemmKernel<Ty> &kern, HeldPackedA &held) {
  held.valid = false;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.alpha == Acc<Ty>(0)) return false;
  if (thin_decision(g, kern).path != ThinPath::one_block) return false;  // the thin kernels pack no op(A)
  const Blocking blk = blocking_for_product(topology(), kern, g.k);
  const long kc = whole_a_kc(g, kern, blk);
  const long total = whole_a_layout(g, kern, kc, held.offsets);
  auto *dst = static_cast<typename Ty::packed_a_type *>(
      held.panels.ensure(sizeof(typename Ty::packed_a_type) * size_t(total), -1));
  if (!dst) return false;
  pack_whole_a(g, kern, blk, kc, held.offsets, dst, 1);
  held.key = whole_a_key(g, kern, kc, nullptr);
  held.valid = true;
  return true;
}

// On the kernel gemm() chooses for Ty. A bf16 C deeper than one k block
// runs on the f32-C kernel of the same datatypes (gemm_through_wide_c),
// which reads these panels where its pack_a is the same (the key says).
template <typename Ty>
bool hold_packed_a(const GemmArgs<Ty> &g, HeldPackedA &held) {
  held.valid = false;
  if constexpr (std::is_same_v<Ty, Sgemm>)
    if (fp32_mode_of(g) != Fp32Math::strict) return false;  // the product runs on as_mode's kernels
  const ChosenKernel<Ty> &chosen = chosen_kernel<Ty>();
  return chosen.kernel && hold_packed_a_with(g, *chosen.kernel, held);
}

#define HCOPS_INSTANTIATE_GEMM(Ty, name)                                                         \
  template GemmReport gemm_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, const char *); \
  template ThinPath thin_path_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, bool *);    \
  template GemmReport gemm<Ty>(const GemmArgs<Ty> &);                                            \
  template bool hold_packed_a<Ty>(const GemmArgs<Ty> &, HeldPackedA &);                          \
  template bool hold_packed_a_with<Ty>(const GemmArgs<Ty> &, const GemmKernel<Ty> &, HeldPackedA &);
HCOPS_GEMM_DATATYPES(HCOPS_INSTANTIATE_GEMM)
#undef HCOPS_INSTANTIATE_GEMM

}  // namespace hcops
