// The replaced operators called from inside an OpenMP parallel region (a
// data loader's or a user's own): each call runs inline on its calling
// thread (the verbose line says threads=1, where the same call outside a
// region uses PyTorch's 2 threads), so no thread oversubscribes the cores;
// and each result equals the same call's outside the region, bitwise, and
// PyTorch's own kernel's within f32 rounding. Linked with libhcops_torch
// (its registrations run at load time); HCOPS_VERBOSE=1 is set before the
// first operator call and stderr read back.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

void set_enabled(bool on) {
  static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("hcops::set_enabled", "").typed<void(bool)>();
  op.call(on);
}

constexpr int kThreads = 2;

std::vector<at::Tensor> run_ops(const at::Tensor &x) {
  return {at::gelu(x, "tanh"), at::softmax(x, -1), at::layer_norm(x, {x.size(-1)})};
}
const char *const kOps[] = {"gelu", "_softmax", "native_layer_norm"};

}  // namespace

int main() {
  setenv("HCOPS_VERBOSE", "1", 1);
  char log_path[] = "/tmp/hcops_torch_omp_XXXXXX";
  const int log_fd = mkstemp(log_path);
  const int saved_stderr = dup(2);
  if (log_fd < 0 || saved_stderr < 0) {
    std::perror("hcops test_torch_omp: stderr capture");
    return 99;
  }
  at::set_num_threads(kThreads);
  at::manual_seed(7);
  std::vector<at::Tensor> inputs;
  for (int t = 0; t < kThreads; ++t) inputs.push_back(at::randn({256, 1000}) * 3);

  set_enabled(false);
  std::vector<std::vector<at::Tensor>> stock;
  for (const auto &x : inputs) stock.push_back(run_ops(x));
  set_enabled(true);

  dup2(log_fd, 2);
  std::vector<std::vector<at::Tensor>> outside;  // PyTorch's pool: threads=2 in the verbose lines
  for (const auto &x : inputs) outside.push_back(run_ops(x));
  std::vector<std::vector<at::Tensor>> inside(kThreads);
  int team = 0;
  std::vector<int> in_region(kThreads, 0);
#pragma omp parallel num_threads(kThreads)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    in_region[t] = at::in_parallel_region();
    inside[t] = run_ops(inputs[t]);
  }
  std::fflush(stderr);
  dup2(saved_stderr, 2);

  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(log_path);
  std::vector<std::vector<std::string>> execs;
  std::string line;
  while (std::getline(text, line)) {
    if (line.rfind("hcops_verbose,exec,", 0) != 0) continue;
    std::vector<std::string> fields;
    std::stringstream ls(line);
    for (std::string f; std::getline(ls, f, ',');) fields.push_back(f);
    execs.push_back(fields);
  }

  check(team == kThreads, "the parallel region has " + std::to_string(kThreads) + " threads");
  for (int t = 0; t < kThreads; ++t)
    check(in_region[t] != 0, "at::in_parallel_region() in thread " + std::to_string(t));
  const size_t calls = 3 * kThreads;
  check(execs.size() == 2 * calls, "a verbose line for each of the " + std::to_string(2 * calls) + " calls (got " +
                                       std::to_string(execs.size()) + ")");
  if (execs.size() == 2 * calls) {
    for (size_t i = 0; i < calls; ++i)
      check(execs[i][2] == kOps[i % 3] && execs[i][5] == std::to_string(kThreads),
            std::string("outside the region: ") + execs[i][2] + " on threads=" + execs[i][5]);
    for (size_t i = calls; i < 2 * calls; ++i)
      check(execs[i][5] == "1", std::string("inside the region: ") + execs[i][2] + " inline, threads=" + execs[i][5]);
  }
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < 3; ++k) {
      const std::string what = std::string(kOps[k]) + " in thread " + std::to_string(t);
      check(at::equal(inside[t][k], outside[t][k]), what + ": bitwise the result outside the region");
      check(at::allclose(inside[t][k], stock[t][k], 1e-5, 1e-6), what + ": PyTorch's result within f32 rounding");
    }
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
