// cuda_device.cpp — CudaDevice: streams, memory methods, op dispatch with launch checks, and
// CUDA-graph capture/replay. The kernels are in kernels/cuda (launchers of cuda_ops.h).
#include "device/cuda/cuda_device.h"

#include <cstdio>
#include <string>
#include <utility>

#include "util/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch_error.h"

namespace kv {
namespace {

constexpr size_t kMaxPendingNames = 24;  // the last op names kept for an error message

using Op = DeviceOp;

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) cuda_detail::throw_cuda(e, what, "kernel launch");
}

}  // namespace

CudaDevice::CudaDevice(int ordinal) {
  // The driver starts here (cudaSetDevice creates the context): a failure for lack of memory is
  // a DeviceStartError, which the CLI explains (a `ulimit -v` too small for the driver).
  if (ordinal < 0) KV_CUDA_START(cudaGetDevice(&ordinal));
  ordinal_ = ordinal;
  KV_CUDA_START(cudaSetDevice(ordinal_));
  KV_CUDA_START(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  KV_CUDA_START(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
  raw_ = std::make_unique<CudaMemory>(stream_, side_);
  memory_ = std::make_unique<CachingAllocator>(*raw_, "cuda");
}

CudaDevice::~CudaDevice() {
  // Never throws: report, release what can be released, and go on.
  if (capturing_) {
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) (void)cudaGraphDestroy(g);
  }
  const cudaError_t e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess)
    std::fprintf(stderr, "kvcheck: cuda device teardown: %s\n",
                 cuda_detail::describe(e, "teardown", "cudaStreamSynchronize").c_str());
  for (cudaGraphExec_t x : execs_) (void)cudaGraphExecDestroy(x);
  for (cudaGraph_t g : graphs_) (void)cudaGraphDestroy(g);
  memory_.reset();
  raw_.reset();
  (void)cudaStreamDestroy(side_);
  (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

// ---- memory ----

void* CudaDevice::alloc(size_t bytes) { return memory_->alloc(bytes); }

void CudaDevice::release(void* p) { memory_->release(p); }

void CudaDevice::refuse_while_capturing(const char* what) const {
  if (capturing_)
    throw DeviceError(std::string("cuda ") + what +
                      " during graph capture: host<->device copies cannot be part of a CUDA "
                      "graph. Upload persistent inputs before begin_capture (and between "
                      "replays); a buffer a graph must read stale has to be filled before the "
                      "capture starts");
}

void CudaDevice::upload(void* dst, const void* src, size_t bytes) {
  refuse_while_capturing("upload");
  if (!bytes) return;
  // Stream order: the copy lands after every op already launched that may still read dst.
  KV_CUDA_CHECK("upload (after " + pending_ops() + ")",
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  synchronize();
}

void CudaDevice::download(void* dst, const void* src, size_t bytes) {
  refuse_while_capturing("download");
  if (!bytes) return;
  KV_CUDA_CHECK("download (after " + pending_ops() + ")",
                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  synchronize();
}

void CudaDevice::fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) {
  // The host fills immediately, even while capturing: never part of a graph. Outside a capture,
  // stream order is as good as immediate; inside one, run on the side stream and wait (the op
  // stream's earlier work finished at begin_capture).
  cudaStream_t s = capturing_ ? side_ : stream_;
  cuda::fill_pattern(dst, bytes, pattern, DType::f32, seed, 0, s);
  check_launch("fill");
  if (capturing_) KV_CUDA_CHECK("fill", cudaStreamSynchronize(side_));
  else note_op("fill");
}

// ---- ops ----

void CudaDevice::run_external(const char* op, const std::function<void(void* stream)>& fn) {
  note_op(op);
  fn(stream_);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    cuda_detail::throw_cuda(e, std::string("op ") + op + (capturing_ ? " (while capturing)" : ""),
                            "kernel launch");
}

void CudaDevice::note_op(const char* op) {
  if (capturing_) recording_.push_back(op);
  pending_.push_back(op);
  if (pending_.size() > kMaxPendingNames) {  // keep the latest: the fault is usually among them
    pending_.pop_front();
    ++pending_dropped_;
  }
}

std::string CudaDevice::pending_ops() const {
  if (pending_.empty()) return "no op since the last synchronize";
  std::string s = "ops since the last synchronize: ";
  if (pending_dropped_) s += std::to_string(pending_dropped_) + " earlier ones, then ";
  for (size_t i = 0; i < pending_.size(); ++i) s += (i ? ", " : "") + std::string(pending_[i]);
  return s;
}

template <class Args>
void CudaDevice::launch(DeviceOp op_id, void (*launcher)(const Args&, cudaStream_t),
                        const Args& a) {
  const char* op = op_name(op_id).data();  // a literal of the op table: NUL-terminated
  note_op(op);
  try {
    launcher(a, stream_);  // may throw std::invalid_argument for a descriptor the host rejects too
  } catch (const cuda::LaunchError& e) {  // the kernels' own error: a failure of the device
    throw DeviceError(e.what());
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    cuda_detail::throw_cuda(e, std::string("op ") + op + (capturing_ ? " (while capturing)" : ""),
                            "kernel launch");
}

void CudaDevice::write_kv(const WriteKvArgs& a) { launch(Op::write_kv, cuda::write_kv, a); }
void CudaDevice::paged_decode(const PagedDecodeArgs& a) {
  launch(Op::paged_decode, cuda::paged_decode, a);
}
void CudaDevice::gather_kv(const GatherKvArgs& a) { launch(Op::gather_kv, cuda::gather_kv, a); }
void CudaDevice::varlen_attention(const VarlenAttnArgs& a) {
  launch(Op::varlen_attention, cuda::varlen_attention, a);
}
void CudaDevice::merge_states(const MergeStatesArgs& a) {
  launch(Op::merge_states, cuda::merge_states, a);
}
void CudaDevice::linear_attention(const LinearAttnArgs& a) {
  launch(Op::linear_attention, cuda::linear_attention, a);
}
void CudaDevice::fill_blocks(const FillBlocksArgs& a) {
  launch(Op::fill_blocks, cuda::fill_blocks, a);
}
void CudaDevice::quant_fp8(const QuantFp8Args& a) { launch(Op::quant_fp8, cuda::quant_fp8, a); }
void CudaDevice::convert_rows(const ConvertRowsArgs& a) {
  launch(Op::convert_rows, cuda::convert_rows, a);
}
void CudaDevice::embed(const EmbedArgs& a) { launch(Op::embed, cuda::embed, a); }
void CudaDevice::rms_norm(const RmsNormArgs& a) { launch(Op::rms_norm, cuda::rms_norm, a); }
void CudaDevice::linear(const LinearArgs& a) { launch(Op::linear, cuda::linear, a); }
void CudaDevice::argmax(const ArgmaxArgs& a) { launch(Op::argmax, cuda::argmax, a); }

void CudaDevice::memset_async(void* dst, size_t bytes, FillPattern pattern) {
  note_op("memset_async");
  if (bytes == 0) return;
  // Part of the op stream, captured like an op. Same bytes as the host: f32 codes, seed 0.
  if (pattern == FillPattern::zero)
    KV_CUDA_CHECK("op memset_async", cudaMemsetAsync(dst, 0, bytes, stream_));
  else
    cuda::fill_pattern(dst, bytes, pattern, DType::f32, 0, 0, stream_);
  check_launch("op memset_async");
}

// ---- graphs ----

void CudaDevice::begin_capture() {
  if (capturing_) throw DeviceError("begin_capture: already capturing");
  synchronize();  // eager work done: fill() on the side stream during capture comes after it
  KV_CUDA_CHECK("begin_capture",
                cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  capturing_ = true;
  recording_.clear();
  memory_->begin_graph_pool();
}

GraphId CudaDevice::end_capture() {
  if (!capturing_) throw DeviceError("end_capture: not capturing");
  capturing_ = false;
  memory_->end_graph_pool();  // even if the capture failed: its buffers stay out of reach
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &graph);
  if (e != cudaSuccess) {
    if (graph) (void)cudaGraphDestroy(graph);
    cuda_detail::throw_cuda(e, "end_capture (a call during the capture was not capturable)",
                            "cudaStreamEndCapture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
  if (ie != cudaSuccess) {
    (void)cudaGraphDestroy(graph);
    cuda_detail::throw_cuda(ie, "end_capture", "cudaGraphInstantiate");
  }
  graphs_.push_back(graph);
  execs_.push_back(exec);
  graph_ops_.push_back(std::move(recording_));
  recording_.clear();
  pending_.clear();  // nothing ran during the capture
  pending_dropped_ = 0;
  return static_cast<GraphId>(graphs_.size() - 1);
}

void CudaDevice::replay(GraphId g) {
  if (capturing_) throw DeviceError("replay: called while capturing");
  if (g < 0 || static_cast<size_t>(g) >= execs_.size())
    throw DeviceError("replay: unknown graph " + std::to_string(g));
  for (const char* op : graph_ops_[g]) note_op(op);
  KV_CUDA_CHECK("replay of graph " + std::to_string(g), cudaGraphLaunch(execs_[g], stream_));
}

void CudaDevice::synchronize() {
  if (capturing_) return;  // nothing captured has run; syncing a capturing stream is illegal
  const cudaError_t e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess)
    cuda_detail::throw_cuda(e, "synchronize (" + pending_ops() + ")", "cudaStreamSynchronize");
  pending_.clear();
  pending_dropped_ = 0;
}

// ---- information ----

std::optional<size_t> CudaDevice::free_bytes() const {
  size_t free_b = 0, total_b = 0;
  KV_CUDA_CHECK("free_bytes", cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

size_t CudaDevice::total_bytes() const {
  size_t free_b = 0, total_b = 0;
  KV_CUDA_CHECK("total_bytes", cudaMemGetInfo(&free_b, &total_b));
  return total_b;
}

std::string CudaDevice::description() const {
  cudaDeviceProp p{};
  KV_CUDA_CHECK("description", cudaGetDeviceProperties(&p, ordinal_));
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB)", p.name, p.major, p.minor,
                p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1ull << 30));
  return buf;
}

DeviceInfo CudaDevice::info() const {
  cudaDeviceProp p{};
  KV_CUDA_CHECK("info", cudaGetDeviceProperties(&p, ordinal_));
  int runtime = 0, driver = 0;
  KV_CUDA_CHECK("info", cudaRuntimeGetVersion(&runtime));
  KV_CUDA_CHECK("info", cudaDriverGetVersion(&driver));
  DeviceInfo d = host_device_info();
  d.kind = name();
  d.gpu = GpuInfo{
      .ordinal = ordinal_,
      .name = p.name,
      .compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor),
      .total_memory_bytes = static_cast<uint64_t>(p.totalGlobalMem),
      .sm_count = p.multiProcessorCount,
      .cuda_runtime_version = cuda_version_text(runtime),
      .cuda_driver_version = cuda_version_text(driver),
      .nvidia_driver_version = nvidia_driver_version(),
  };
  return d;
}

}  // namespace kv
