// The backend's operations (backend.h): each checks its tensors as gloo
// does, stages what MPI cannot take in place, and launches one MPI
// nonblocking call.
#include "backend.h"

#include <climits>

#include "datatypes.h"

namespace hcops {
namespace dist {

namespace {

// An operation on `count` elements of t's type, named for errors and
// HCOPS_MPI_VERBOSE.
std::unique_ptr<Pending> pending(const char *name, const at::Tensor &t, int64_t count) {
  auto p = std::make_unique<Pending>();
  p->name = name;
  p->type = mpi_type(t.scalar_type());
  p->count = static_cast<int>(count);
  return p;
}

// p->start of an operation: `call` with the element count, datatype and
// reduction resolved for it (captured now: the start runs on a progress
// thread after this frame has returned).
template <typename Call>
void start_with(Pending *p, Call call) {
  p->start = [call, count = p->count, type = p->type, op = p->op](MPI_Comm c, MPI_Request *r) {
    return call(count, type, op, c, r);
  };
}

// The one tensor of a call, checked as gloo checks its CPU tensors.
at::Tensor &single_cpu(std::vector<at::Tensor> &tensors, const char *what) {
  TORCH_CHECK(tensors.size() == 1, "hcops: ", what, " takes one tensor per process, got ", tensors.size());
  at::Tensor &t = tensors[0];
  TORCH_CHECK(t.device().is_cpu(), "hcops: ", what, " takes CPU tensors, got one on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "hcops: ", what, " takes dense tensors");
  TORCH_CHECK(t.numel() <= INT_MAX, "hcops: ", what, " of more than 2^31-1 elements is not supported yet");
  return t;
}

// A contiguous buffer for t: t itself, or a copy whose contents go back to t
// after the operation (set in p->after).
at::Tensor staged(at::Tensor &t, Pending *p, bool copy_in) {
  if (t.is_contiguous()) return t;
  at::Tensor s = copy_in ? t.contiguous() : at::empty_like(t, at::MemoryFormat::Contiguous);
  auto previous = std::move(p->after);
  p->after = [t, s, previous]() mutable {
    t.copy_(s);
    if (previous) previous();
  };
  p->keep.push_back(s);
  return s;
}

// The sum of ranks' contributions divided by the group's size, for AVG.
void then_average(Pending *p, at::Tensor buf, int n, const c10d::ReduceOp &op) {
  if (op != c10d::ReduceOp::AVG) return;
  auto copy_out = std::move(p->after);
  p->after = [buf, n, copy_out]() mutable {
    buf.div_(n);
    if (copy_out) copy_out();
  };
}

// A list of tensors of the type and size of `like` (gather's and scatter's
// root side, reduce_scatter's inputs), laid end to end in one buffer.
void check_list(const std::vector<at::Tensor> &list, const at::Tensor &like, int size, const char *what) {
  TORCH_CHECK(static_cast<int>(list.size()) == size, "hcops: ", what, " takes a list of ", size, " tensors, got ",
              list.size());
  for (const at::Tensor &t : list)
    TORCH_CHECK(t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == like.scalar_type() &&
                    t.numel() == like.numel(),
                "hcops: ", what, "'s list must hold dense CPU tensors of ", like.scalar_type(), " and ", like.numel(),
                " elements");
  TORCH_CHECK(like.numel() * size <= INT_MAX, "hcops: ", what, " of more than 2^31-1 elements is not supported yet");
}

// gather's outputs and scatter's inputs: one list on the root (checked as
// check_list does), none on the other ranks; returns is_root.
bool root_list(const std::vector<std::vector<at::Tensor>> &lists, const at::Tensor &like, bool is_root, int size,
               const char *what, const char *side) {
  if (!is_root) {
    TORCH_CHECK(lists.empty(), "hcops: ", what, " takes no ", side, " list on a rank that is not the root");
    return false;
  }
  TORCH_CHECK(lists.size() == 1, "hcops: ", what, " takes one ", side, " list on the root");
  check_list(lists[0], like, size, what);
  return true;
}

at::Tensor end_to_end(const std::vector<at::Tensor> &list) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor &t : list) flat.push_back(t.reshape(-1));
  return at::cat(flat);
}

// After the operation: buf's consecutive parts copied into `list`.
std::function<void()> copy_parts(at::Tensor buf, std::vector<at::Tensor> list) {
  return [buf, list]() mutable {
    int64_t at = 0;
    for (at::Tensor &t : list) {
      t.copy_(buf.narrow(0, at, t.numel()).view(t.sizes()));
      at += t.numel();
    }
  };
}

}  // namespace

// ---- the allreduce algorithm (Open MPI) ----

namespace {

// Open MPI's libnbc (which runs MPI_Iallreduce) picks, for a large
// allreduce on two ranks, an algorithm that sends the vector twice: DiT-S/2's
// 131 MB of gradients took 2.18 s on a 1 Gbit/s link, 1.10 s (the link's
// rate) with its ring, measured between two network namespaces. So an
// allreduce of 1 MiB or more asks for the ring through MPI_T for its start,
// unless the user chose an algorithm (coll_libnbc_iallreduce_algorithm not
// "ignore"). Starts are serialized meanwhile; another thread's own
// MPI_Iallreduce starting in that instant would get the ring too.
class LargeAllreduce {
 public:
  static constexpr std::size_t kMinBytes = 1u << 20;
  static constexpr int kRing = 1;

  static int start(const void *sendbuf, void *buf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
    int size = 0;
    MPI_Type_size(type, &size);
    LargeAllreduce &a = get();
    if (!a.usable_ || static_cast<std::size_t>(count) * static_cast<std::size_t>(size) < kMinBytes)
      return PMPI_Iallreduce(sendbuf, buf, count, type, op, comm, req);
    std::lock_guard<std::mutex> g(a.mu_);
    int ring = kRing;
    MPI_T_cvar_write(a.handle_, &ring);
    const int rc = PMPI_Iallreduce(sendbuf, buf, count, type, op, comm, req);
    MPI_T_cvar_write(a.handle_, &a.user_);
    return rc;
  }

 private:
  static LargeAllreduce &get() {
    static LargeAllreduce a;
    return a;
  }
  LargeAllreduce() {
#ifdef OPEN_MPI
    int provided = 0, index = -1, count = 0;
    if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return;
    if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) != MPI_SUCCESS) return;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count) != MPI_SUCCESS || count != 1) return;
    if (MPI_T_cvar_read(handle_, &user_) != MPI_SUCCESS) return;
    usable_ = user_ == 0;  // "ignore": libnbc's own choice, which the user left
#endif
  }
  std::mutex mu_;
  MPI_T_cvar_handle handle_ = MPI_T_CVAR_HANDLE_NULL;
  int user_ = 0;
  bool usable_ = false;
};

}  // namespace

c10::intrusive_ptr<c10d::Work> Backend::allreduce(std::vector<at::Tensor> &tensors,
                                                  const c10d::AllreduceOptions &opts) {
  at::Tensor &t = single_cpu(tensors, "allreduce");
  auto p = pending("allreduce", t, t.numel());
  p->op = mpi_op(opts.reduceOp, t.scalar_type());
  at::Tensor buf = staged(t, p.get(), true);
  then_average(p.get(), buf, size_, opts.reduceOp);
  void *data = buf.data_ptr();
  start_with(p.get(), [data](int count, MPI_Datatype type, MPI_Op op, MPI_Comm c, MPI_Request *r) {
    return LargeAllreduce::start(MPI_IN_PLACE, data, count, type, op, c, r);
  });
  p->keep.push_back(buf);
  return launch_as(std::move(p), c10d::OpType::ALLREDUCE, {t});
}

c10::intrusive_ptr<c10d::Work> Backend::broadcast(std::vector<at::Tensor> &tensors,
                                                  const c10d::BroadcastOptions &opts) {
  at::Tensor &t = single_cpu(tensors, "broadcast");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "hcops: broadcast from rank ", opts.rootRank, " of ",
              size_);
  auto p = pending("broadcast", t, t.numel());
  at::Tensor buf = staged(t, p.get(), rank_ == opts.rootRank);
  void *data = buf.data_ptr();
  const int root = static_cast<int>(opts.rootRank);
  start_with(p.get(), [data, root](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ibcast(data, count, type, root, c, r);
  });
  p->keep.push_back(buf);
  return launch_as(std::move(p), c10d::OpType::BROADCAST, {t});
}

c10::intrusive_ptr<c10d::Work> Backend::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                                  std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &) {
  at::Tensor &in = single_cpu(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "hcops: allgather takes one list of ",
              size_, " output tensors");
  for (const at::Tensor &o : outputs[0])
    TORCH_CHECK(o.device().is_cpu() && o.scalar_type() == in.scalar_type() && o.numel() == in.numel(),
                "hcops: allgather's outputs must be CPU tensors of the input's type and size");
  TORCH_CHECK(in.numel() * size_ <= INT_MAX, "hcops: allgather of more than 2^31-1 elements is not supported yet");
  auto p = pending("allgather", in, in.numel());
  at::Tensor src = in.contiguous();
  at::Tensor all = at::empty({static_cast<int64_t>(size_), in.numel()}, in.options().memory_format(at::MemoryFormat::Contiguous));
  std::vector<at::Tensor> outs = outputs[0];
  p->after = [all, outs]() mutable {
    for (size_t r = 0; r < outs.size(); ++r) outs[r].copy_(all[static_cast<int64_t>(r)].view(outs[r].sizes()));
  };
  const void *sdata = src.data_ptr();
  void *rdata = all.data_ptr();
  start_with(p.get(), [sdata, rdata](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Iallgather(sdata, count, type, rdata, count, type, c, r);
  });
  p->keep = {src, all};
  return launch_as(std::move(p), c10d::OpType::ALLGATHER, outs);
}

c10::intrusive_ptr<c10d::Work> Backend::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                            const c10d::AllreduceCoalescedOptions &opts) {
  TORCH_CHECK(!tensors.empty(), "hcops: allreduce_coalesced of no tensors");
  const at::ScalarType dt = tensors[0].scalar_type();
  for (const at::Tensor &t : tensors)
    TORCH_CHECK(t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == dt,
                "hcops: allreduce_coalesced takes dense CPU tensors of one datatype");
  // One reduction of the tensors laid end to end, copied back after.
  at::Tensor buf = end_to_end(tensors);
  TORCH_CHECK(buf.numel() <= INT_MAX, "hcops: allreduce_coalesced of more than 2^31-1 elements is not supported yet");
  auto p = std::make_unique<Pending>();
  p->name = "allreduce_coalesced";
  p->type = mpi_type(dt);
  p->op = mpi_op(opts.reduceOp, dt);
  p->count = static_cast<int>(buf.numel());
  std::vector<at::Tensor> outs = tensors;
  p->after = copy_parts(buf, outs);
  then_average(p.get(), buf, size_, opts.reduceOp);
  void *data = buf.data_ptr();
  start_with(p.get(), [data](int count, MPI_Datatype type, MPI_Op op, MPI_Comm c, MPI_Request *r) {
    return LargeAllreduce::start(MPI_IN_PLACE, data, count, type, op, c, r);
  });
  p->keep.push_back(buf);
  return launch_as(std::move(p), c10d::OpType::ALLREDUCE_COALESCED, outs);
}

c10::intrusive_ptr<c10d::Work> Backend::reduce(std::vector<at::Tensor> &tensors, const c10d::ReduceOptions &opts) {
  at::Tensor &t = single_cpu(tensors, "reduce");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "hcops: reduce to rank ", opts.rootRank, " of ", size_);
  auto p = pending("reduce", t, t.numel());
  p->op = mpi_op(opts.reduceOp, t.scalar_type());
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor buf = staged(t, p.get(), true);
  if (rank_ == root) then_average(p.get(), buf, size_, opts.reduceOp);
  void *data = buf.data_ptr();
  const bool is_root = rank_ == root;
  start_with(p.get(), [data, root, is_root](int count, MPI_Datatype type, MPI_Op op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ireduce(is_root ? MPI_IN_PLACE : data, is_root ? data : nullptr, count, type, op, root, c, r);
  });
  p->keep.push_back(buf);
  return launch_as(std::move(p), c10d::OpType::REDUCE, {t});
}

c10::intrusive_ptr<c10d::Work> Backend::_allgather_base(at::Tensor &output, at::Tensor &input,
                                                        const c10d::AllgatherOptions &) {
  TORCH_CHECK(input.device().is_cpu() && output.device().is_cpu(), "hcops: allgather_into_tensor takes CPU tensors");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * size_,
              "hcops: allgather_into_tensor's output must hold ", size_, " inputs of its type");
  TORCH_CHECK(output.numel() <= INT_MAX, "hcops: allgather of more than 2^31-1 elements is not supported yet");
  auto p = pending("allgather_into_tensor", input, input.numel());
  at::Tensor src = input.contiguous();
  at::Tensor dst = staged(output, p.get(), false);
  const void *sdata = src.data_ptr();
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Iallgather(sdata, count, type, rdata, count, type, c, r);
  });
  p->keep = {src, dst};
  return launch_as(std::move(p), c10d::OpType::_ALLGATHER_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> Backend::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                             const c10d::ReduceScatterOptions &opts) {
  TORCH_CHECK(input.device().is_cpu() && output.device().is_cpu(), "hcops: reduce_scatter_tensor takes CPU tensors");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && input.numel() == output.numel() * size_,
              "hcops: reduce_scatter_tensor's input must hold ", size_, " outputs of its type");
  TORCH_CHECK(input.numel() <= INT_MAX, "hcops: reduce_scatter of more than 2^31-1 elements is not supported yet");
  auto p = pending("reduce_scatter_tensor", input, output.numel());
  p->op = mpi_op(opts.reduceOp, input.scalar_type());
  at::Tensor src = input.contiguous();
  at::Tensor dst = staged(output, p.get(), false);
  then_average(p.get(), dst, size_, opts.reduceOp);
  const void *sdata = src.data_ptr();
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata](int count, MPI_Datatype type, MPI_Op op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ireduce_scatter_block(sdata, rdata, count, type, op, c, r);
  });
  p->keep = {src, dst};
  return launch_as(std::move(p), c10d::OpType::_REDUCE_SCATTER_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> Backend::alltoall_base(at::Tensor &output, at::Tensor &input,
                                                      std::vector<int64_t> &output_splits,
                                                      std::vector<int64_t> &input_splits,
                                                      const c10d::AllToAllOptions &) {
  TORCH_CHECK(input.device().is_cpu() && output.device().is_cpu() && output.scalar_type() == input.scalar_type(),
              "hcops: all_to_all_single takes CPU tensors of one datatype");
  TORCH_CHECK(input.numel() <= INT_MAX && output.numel() <= INT_MAX,
              "hcops: all_to_all_single of more than 2^31-1 elements is not supported yet");
  // Splits are in rows of dimension 0; none given: equal parts.
  const int64_t in_row = input.dim() ? input.numel() / std::max<int64_t>(1, input.size(0)) : 1;
  const int64_t out_row = output.dim() ? output.numel() / std::max<int64_t>(1, output.size(0)) : 1;
  auto counts = [&](const std::vector<int64_t> &splits, const at::Tensor &t, int64_t row) {
    std::vector<int> c(size_), d(size_);
    int64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      const int64_t n = splits.empty() ? t.numel() / size_ : splits[r] * row;
      c[r] = static_cast<int>(n);
      d[r] = static_cast<int>(at);
      at += n;
    }
    TORCH_CHECK(at == t.numel(), "hcops: all_to_all_single's splits do not cover the tensor");
    return std::make_pair(c, d);
  };
  TORCH_CHECK(input_splits.empty() || static_cast<int>(input_splits.size()) == size_, "hcops: ", size_,
              " input splits expected");
  TORCH_CHECK(output_splits.empty() || static_cast<int>(output_splits.size()) == size_, "hcops: ", size_,
              " output splits expected");
  auto in_c = counts(input_splits, input, in_row);
  auto out_c = counts(output_splits, output, out_row);
  auto p = pending("all_to_all_single", input, input.numel());
  at::Tensor src = input.contiguous();
  at::Tensor dst = staged(output, p.get(), false);
  const void *sdata = src.data_ptr();
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata, in_c, out_c](int, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ialltoallv(sdata, in_c.first.data(), in_c.second.data(), type, rdata, out_c.first.data(),
                           out_c.second.data(), type, c, r);
  });
  p->keep = {src, dst};
  return launch_as(std::move(p), c10d::OpType::ALLTOALL_BASE, {output});
}

c10::intrusive_ptr<c10d::Work> Backend::gather(std::vector<std::vector<at::Tensor>> &outputs,
                                               std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts) {
  at::Tensor &in = single_cpu(inputs, "gather");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "hcops: gather to rank ", opts.rootRank, " of ", size_);
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root_list(outputs, in, rank_ == root, size_, "gather", "output");
  auto p = pending("gather", in, in.numel());
  at::Tensor src = in.contiguous();
  at::Tensor all;
  std::vector<at::Tensor> outs;
  if (is_root) {
    all = at::empty({in.numel() * size_}, in.options().memory_format(at::MemoryFormat::Contiguous));
    outs = outputs[0];
    p->after = copy_parts(all, outs);
  }
  const void *sdata = src.data_ptr();
  void *rdata = is_root ? all.data_ptr() : nullptr;
  start_with(p.get(), [sdata, rdata, root](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Igather(sdata, count, type, rdata, count, type, root, c, r);
  });
  p->keep = {src};
  if (is_root) p->keep.push_back(all);
  return launch_as(std::move(p), c10d::OpType::GATHER, outs);
}

c10::intrusive_ptr<c10d::Work> Backend::scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ScatterOptions &opts) {
  at::Tensor &out = single_cpu(outputs, "scatter");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "hcops: scatter from rank ", opts.rootRank, " of ", size_);
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root_list(inputs, out, rank_ == root, size_, "scatter", "input");
  auto p = pending("scatter", out, out.numel());
  at::Tensor src = is_root ? end_to_end(inputs[0]) : at::Tensor();
  at::Tensor dst = staged(out, p.get(), false);
  const void *sdata = is_root ? src.data_ptr() : nullptr;
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata, root](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Iscatter(sdata, count, type, rdata, count, type, root, c, r);
  });
  p->keep = {dst};
  if (is_root) p->keep.push_back(src);
  return launch_as(std::move(p), c10d::OpType::SCATTER, {out});
}

c10::intrusive_ptr<c10d::Work> Backend::reduce_scatter(std::vector<at::Tensor> &outputs,
                                                       std::vector<std::vector<at::Tensor>> &inputs,
                                                       const c10d::ReduceScatterOptions &opts) {
  at::Tensor &out = single_cpu(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "hcops: reduce_scatter takes one input list per process, got ", inputs.size());
  check_list(inputs[0], out, size_, "reduce_scatter");
  auto p = pending("reduce_scatter", out, out.numel());
  p->op = mpi_op(opts.reduceOp, out.scalar_type());
  at::Tensor src = end_to_end(inputs[0]);
  at::Tensor dst = staged(out, p.get(), false);
  then_average(p.get(), dst, size_, opts.reduceOp);
  const void *sdata = src.data_ptr();
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata](int count, MPI_Datatype type, MPI_Op op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ireduce_scatter_block(sdata, rdata, count, type, op, c, r);
  });
  p->keep = {src, dst};
  return launch_as(std::move(p), c10d::OpType::REDUCE_SCATTER, {out});
}

c10::intrusive_ptr<c10d::Work> Backend::alltoall(std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
                                                 const c10d::AllToAllOptions &) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "hcops: all_to_all takes lists of ", size_, " tensors, got ", inputs.size(), " and ", outputs.size());
  TORCH_CHECK(!inputs.empty(), "hcops: all_to_all of no tensors");
  const at::ScalarType dt = inputs[0].scalar_type();
  // Tensor r of the input list goes to rank r, tensor r of the output list
  // comes from it; the sizes may differ from rank to rank.
  auto counts = [&](const std::vector<at::Tensor> &list) {
    std::vector<int> c(size_), d(size_);
    int64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      const at::Tensor &t = list[r];
      TORCH_CHECK(t.device().is_cpu() && t.layout() == at::kStrided && t.scalar_type() == dt,
                  "hcops: all_to_all takes dense CPU tensors of one datatype");
      TORCH_CHECK(at + t.numel() <= INT_MAX, "hcops: all_to_all of more than 2^31-1 elements is not supported yet");
      c[r] = static_cast<int>(t.numel());
      d[r] = static_cast<int>(at);
      at += t.numel();
    }
    return std::make_pair(c, d);
  };
  auto in_c = counts(inputs);
  auto out_c = counts(outputs);
  auto p = pending("all_to_all", inputs[0], in_c.second.back() + in_c.first.back());
  at::Tensor src = end_to_end(inputs);
  at::Tensor dst = at::empty({out_c.second.back() + out_c.first.back()}, src.options());
  std::vector<at::Tensor> outs = outputs;
  p->after = copy_parts(dst, outs);
  const void *sdata = src.data_ptr();
  void *rdata = dst.data_ptr();
  start_with(p.get(), [sdata, rdata, in_c, out_c](int, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Ialltoallv(sdata, in_c.first.data(), in_c.second.data(), type, rdata, out_c.first.data(),
                           out_c.second.data(), type, c, r);
  });
  p->keep = {src, dst};
  return launch_as(std::move(p), c10d::OpType::ALLTOALL, outs);
}

c10::intrusive_ptr<c10d::Work> Backend::send(std::vector<at::Tensor> &tensors, int dst, int tag) {
  at::Tensor &t = single_cpu(tensors, "send");
  TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_, "hcops: send to rank ", dst, " of ", size_);
  auto p = pending("send", t, t.numel());
  p->point_to_point = true;
  at::Tensor src = t.contiguous();
  const void *data = src.data_ptr();
  start_with(p.get(), [data, dst, tag](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Isend(data, count, type, dst, tag, c, r);
  });
  p->keep.push_back(src);
  return launch_as(std::move(p), c10d::OpType::SEND, {t});
}

c10::intrusive_ptr<c10d::Work> Backend::recv(std::vector<at::Tensor> &tensors, int src, int tag) {
  at::Tensor &t = single_cpu(tensors, "recv");
  TORCH_CHECK(src >= 0 && src < size_ && src != rank_, "hcops: recv from rank ", src, " of ", size_);
  auto p = pending("recv", t, t.numel());
  p->point_to_point = true;
  at::Tensor buf = staged(t, p.get(), false);
  void *data = buf.data_ptr();
  start_with(p.get(), [data, src, tag](int count, MPI_Datatype type, MPI_Op, MPI_Comm c, MPI_Request *r) {
    return PMPI_Irecv(data, count, type, src, tag, c, r);
  });
  p->keep.push_back(buf);
  return launch_as(std::move(p), c10d::OpType::RECV, {t});
}

c10::intrusive_ptr<c10d::Work> Backend::barrier(const c10d::BarrierOptions &) {
  auto p = std::make_unique<Pending>();
  p->name = "barrier";
  p->start = [](MPI_Comm c, MPI_Request *r) { return PMPI_Ibarrier(c, r); };
  return launch_as(std::move(p), c10d::OpType::BARRIER, {});
}

c10::intrusive_ptr<c10d::Work> Backend::launch_as(std::unique_ptr<Pending> p, c10d::OpType type,
                                                  std::vector<at::Tensor> outputs) {
  p->work = c10::make_intrusive<MpiWork>(rank_, type, p->name, std::move(outputs));
  return launch(std::move(p));
}

}  // namespace dist
}  // namespace hcops
