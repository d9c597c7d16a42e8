// See backend.h (MpiWork).
#include "backend.h"

#include "hcops_mpi.h"

namespace hcops {
namespace dist {

MpiWork::MpiWork(int rank, c10d::OpType type, const char *name, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), name_(name), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool MpiWork::isCompleted() {
  std::lock_guard<std::mutex> g(mutex_);
  return completed_;
}

bool MpiWork::isSuccess() const {
  std::lock_guard<std::mutex> g(mutex_);
  return completed_ && !exception_;
}

bool MpiWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  if (timeout == kNoTimeout) {
    cv_.wait(lk, [&] { return completed_; });
  } else if (!cv_.wait_for(lk, timeout, [&] { return completed_; })) {
    TORCH_CHECK(false, "hcops: ", name_, " did not complete within ", timeout.count(), " ms");
  }
  lk.unlock();
  // And its future, as with gloo (wait(), then get_future().value()): its
  // callbacks run on the backend's runner, in launch order; on one of the
  // backend's own threads that could be this thread, so only the Work.
  if (!on_backend_thread()) future_->wait();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  hcops_mpi_exposed(waited);
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> MpiWork::getFuture() { return future_; }

std::vector<at::Tensor> MpiWork::result() { return outputs_; }

void MpiWork::complete(int error, const std::string &what) {
  if (error != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(error, msg, &len);
    error_ = std::make_exception_ptr(std::runtime_error("hcops: " + what + " failed: " + std::string(msg, len)));
  }
  finish(error_);
}

void MpiWork::complete_future() {
  if (error_) future_->setError(error_);
  else future_->markCompleted(c10::IValue(outputs_));
}

}  // namespace dist
}  // namespace hcops
