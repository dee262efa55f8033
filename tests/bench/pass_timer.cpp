// pass_timer.cpp — time_pass (pass_timer.h). The stream is created per call and destroyed with
// its graph; an error inside a capture ends the capture before it is reported, so the stream is
// usable (and the next point runs) after a plugin refuses a call.
#include "tests/bench/pass_timer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/bench/bench_cuda.h"

namespace kv::bench {
namespace {

// A stream and, in graph mode, the captured pass; replay() runs one pass either way.
class PassRunner {
 public:
  PassRunner(const Pass& pass, TimingMode mode) : pass_(pass), mode_(mode) {
    BENCH_CUDA(cudaStreamCreateWithFlags(&st_, cudaStreamNonBlocking));
  }
  ~PassRunner() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    cudaStreamDestroy(st_);
  }
  PassRunner(const PassRunner&) = delete;
  PassRunner& operator=(const PassRunner&) = delete;

  cudaStream_t stream() const { return st_; }

  // Graph mode: captures the pass; "" or why not.
  std::string capture() {
    if (mode_ != TimingMode::graph) return "";
    BENCH_CUDA(cudaStreamBeginCapture(st_, cudaStreamCaptureModeRelaxed));
    std::string err;
    try {
      err = pass_(st_);
    } catch (const std::exception& e) {
      err = e.what();
    }
    const cudaError_t end = cudaStreamEndCapture(st_, &graph_);
    if (err.empty() && end != cudaSuccess)
      err = std::string("stream capture failed: ") + cudaGetErrorString(end);
    if (!err.empty()) {
      (void)cudaGetLastError();
      if (graph_) cudaGraphDestroy(graph_);
      graph_ = nullptr;
      return err;
    }
    BENCH_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
    return "";
  }

  // One pass: "" or why it failed.
  std::string replay() {
    if (mode_ == TimingMode::graph) {
      BENCH_CUDA(cudaGraphLaunch(exec_, st_));
      return "";
    }
    return pass_(st_);
  }

 private:
  const Pass& pass_;
  TimingMode mode_;
  cudaStream_t st_{};
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

PassTime time_pass(const Pass& pass, int decodes_per_pass, TimingMode mode,
                   const BackendRunOptions& opt) {
  PassTime r;
  PassRunner run(pass, mode);
  cudaStream_t st = run.stream();
  // One eager pass first: modules load and kernel attributes get set outside any capture.
  try {
    r.error = pass(st);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  BENCH_CUDA(cudaStreamSynchronize(st));
  if (r.error.empty()) r.error = run.capture();
  for (int w = 0; w < 2 && r.error.empty(); ++w) r.error = run.replay();  // warm-up
  if (!r.error.empty()) return r;
  EventTimer timer;
  timer.start(st);
  r.error = run.replay();
  const double one_ms = std::max(1e-3, double(timer.stop_ms(st)));
  if (!r.error.empty()) return r;
  const int reps = std::max(1, int(std::ceil(opt.min_sample_ms / one_ms)));
  std::vector<double> us;
  for (int i = 0; i < opt.samples; ++i) {
    timer.start(st);
    for (int k = 0; k < reps && r.error.empty(); ++k) r.error = run.replay();
    const double ms = timer.stop_ms(st);
    if (!r.error.empty()) return r;
    us.push_back(1e3 * ms / (double(reps) * decodes_per_pass));
  }
  BENCH_CUDA(cudaStreamSynchronize(st));
  r.us = median(us);
  return r;
}

}  // namespace kv::bench
