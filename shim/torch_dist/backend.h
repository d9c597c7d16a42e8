// The torch.distributed backend "hcops": a c10d backend whose
// operations run on MPI and progress on libhcops_mpi's dedicated cores
// (hcops_mpi.h). One communicator of its own per process group; operations
// start on the calling thread in the caller's order; a progress thread
// drives them; the backend's own threads complete each Work and run the
// futures' callbacks (DDP's, a comm hook's), so that no PyTorch code runs on
// the progress core (see State). Built for PyTorch 2.x (c10d::Backend) and
// for Debian's 1.13 (c10d::ProcessGroup, HCOPS_TORCH_MAJOR < 2).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

// PyTorch 2.x registers a c10d::Backend behind a ProcessGroup; 1.13
// (Debian's, HCOPS_TORCH_MAJOR < 2) takes a c10d::ProcessGroup itself, with the
// same operations.
#if HCOPS_TORCH_MAJOR < 2
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#else
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include <condition_variable>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace hcops {
namespace dist {

#if HCOPS_TORCH_MAJOR < 2
using BackendBase = c10d::ProcessGroup;
#else
using BackendBase = c10d::Backend;
#endif

// One operation's Work, completed in two stages: the Work itself (wait(),
// isCompleted(), the outputs written) as soon as MPI has finished the
// operation, then its future (which runs the callbacks: DDP's, a comm
// hook's) in the order the operations were launched.
class MpiWork : public c10d::Work {
 public:
  MpiWork(int rank, c10d::OpType type, const char *name, std::vector<at::Tensor> outputs);
  bool isCompleted() override;
  bool isSuccess() const override;
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  // error: MPI_SUCCESS or an MPI error code; `what` says what failed.
  void complete(int error, const std::string &what);
  void complete_future();
  const char *name() const { return name_; }

 private:
  const char *name_;
  std::vector<at::Tensor> outputs_;
  std::exception_ptr error_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// An operation in flight: how to start it on a communicator, what to do on
// the completion thread once MPI has finished it (averaging, copying out of
// a staging buffer), the tensors it keeps alive, its Work.
struct Pending {
  std::function<int(MPI_Comm, MPI_Request *)> start;
  std::function<void()> after;
  std::vector<at::Tensor> keep;
  c10::intrusive_ptr<MpiWork> work;
  int error = MPI_SUCCESS;
  const char *name = "";
  // A send or receive: waited for on the caller's thread, it could deadlock
  // an exchange (see launch()).
  bool point_to_point = false;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  // A collective launched by the application (not from a callback): its
  // future completes in launch order (seq), so that callbacks which start
  // collectives start them in the same order on every rank.
  bool ordered = false;
  uint64_t seq = 0;
};

// What the backend's threads share with it and with each operation in
// flight (held by shared_ptr, so that a backend destroyed from one of its own
// callbacks leaves its threads something to finish with).
//
// Finisher threads take what MPI has finished: they run its `after`,
// complete its Work, and hand the future to the runner; an operation
// launched from a callback (nested, as PowerSGD's hook waits for) or a
// point-to-point one has its future completed there and then. The runner
// completes the application's collectives' futures in launch order. One
// finisher is always left waiting, so a callback that waits for a nested
// operation does not wait for itself.
struct State {
  MPI_Comm comm = MPI_COMM_NULL;
  // MPI_THREAD_MULTIPLE: a declined operation can be polled by the
  // finishers; without it, it is waited for on the caller's thread.
  bool multiple = false;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Pending *> done;                             // finished by MPI
  std::vector<std::pair<MPI_Request, Pending *>> polled;  // declined, in flight
  bool polling = false;                                   // a finisher is testing `polled`
  // Futures for the runner, by launch sequence (a null Work: a launch that
  // failed, skipped).
  std::map<uint64_t, c10::intrusive_ptr<MpiWork>> ordered;
  uint64_t next_launch = 0, next_future = 0;
  int inflight = 0;          // launched, future not yet completed
  int threads = 0, idle = 0;  // threads alive; finishers waiting
  bool stop = false;
  bool leak_comm = false;  // left at interpreter exit with operations in flight
  ~State();
};

// True on a completion thread of any backend (work.cpp: such a thread waits
// for a Work, not for its future, which that thread may be the one to
// complete).
bool on_backend_thread();

class Backend : public BackendBase {
 public:
  // `comm`: the group's own communicator (made with MPI_Comm_dup /
  // MPI_Comm_create_group, so libhcops_mpi has its shadow).
  Backend(MPI_Comm comm, int rank, int size);
  ~Backend() override;

  const std::string getBackendName() const override { return "hcops"; }
#if HCOPS_TORCH_MAJOR >= 2
  // destroy_process_group: the operations in flight complete first (1.13
  // drops its reference: the destructor drains).
  void shutdown() override { (void)drain(); }
#endif

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                     const c10d::AllreduceCoalescedOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors, const c10d::ReduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                      const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &output_splits,
                                               std::vector<int64_t> &input_splits,
                                               const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

  // The communicator of a new group over `ranks` of MPI_COMM_WORLD (all of
  // it when empty); MPI initialized (MPI_THREAD_MULTIPLE) if it was not.
  static MPI_Comm make_comm(const std::vector<uint64_t> &ranks);
  // MPI initialized (MPI_THREAD_MULTIPLE asked for) unless it is already.
  static void init_mpi();

 private:
  c10::intrusive_ptr<c10d::Work> launch(std::unique_ptr<Pending> p);
  // launch() with p's Work: `type`, p's name, the tensors the caller gets.
  c10::intrusive_ptr<c10d::Work> launch_as(std::unique_ptr<Pending> p, c10d::OpType type,
                                           std::vector<at::Tensor> outputs);
  // Waits for every operation in flight and for the completion threads to
  // end; false when it could not (at interpreter exit, or called from one of
  // those threads: they then end by themselves once the rest is done).
  bool drain();

  std::shared_ptr<State> s_;
};

}  // namespace dist
}  // namespace hcops
