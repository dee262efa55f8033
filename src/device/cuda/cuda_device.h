// cuda_device.h — the CUDA device: the ops of kernels/cuda on one GPU, with the memory and graph
// semantics of the host device (src/device/device.h), so a scenario means the same on both.
//
// Execution: one non-blocking stream; every op is an asynchronous launch on it, followed by a
// cudaGetLastError check that names the op. synchronize() waits for the stream; an error that
// happens inside a kernel surfaces there, naming the ops launched since the previous synchronize.
//
// Memory: CachingAllocator over CudaMemory (cudaMalloc/cudaFree), the host device's allocator:
// 256-byte size classes, released bytes survive into the next alloc of the class, fresh memory
// zeroed, graph-private pools while capturing; out of memory frees the cache once, then throws.
// upload / download are a copy on the stream plus a wait; they are refused (DeviceError) while a
// graph is being captured: a copy from pageable host memory cannot be captured, and a captured
// copy would replay stale host data. fill() is immediate like the host's (a kernel on the stream;
// while capturing, on the side stream and waited for, so it is never recorded). memset_async is
// captured like an op.
//
// Graphs: real CUDA graphs. begin_capture = cudaStreamBeginCapture (relaxed mode: cudaMalloc is
// legal inside it), end_capture = cudaStreamEndCapture + cudaGraphInstantiate, replay =
// cudaGraphLaunch. A graph holds the descriptors' pointers by value, as the host emulation does.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "device/caching_allocator.h"
#include "device/cuda/cuda_memory.h"
#include "device/device.h"
#include "ops/op_table.h"

namespace kv {

class CudaDevice : public Device {
 public:
  // `ordinal` -1: the current CUDA device (0 unless the thread chose another).
  explicit CudaDevice(int ordinal = -1);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return "cuda"; }
  OpPrecision op_precision() const override { return OpPrecision::cuda_builtin; }

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;
  void fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) override;

  KV_DEVICE_CACHE_OPS_OVERRIDE
  KV_DEVICE_DENSE_OPS_OVERRIDE
  void run_external(const char* op, const std::function<void(void* stream)>& fn) override;
  int32_t dl_device_type() const override { return 2; }  // kDLCUDA
  int32_t dl_device_id() const override { return ordinal_; }

  void begin_capture() override;
  GraphId end_capture() override;
  void replay(GraphId g) override;
  void synchronize() override;

  // Free GPU memory now (cudaMemGetInfo), not counting kvcheck's released buffers: what an engine
  // can still allocate fresh before it must fit into what it already holds.
  std::optional<size_t> free_bytes() const override;
  size_t total_bytes() const;
  // "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)", for logs and result files.
  std::string description() const;
  // The host's fields plus this GPU's properties and the CUDA runtime, driver API and NVIDIA
  // driver versions.
  DeviceInfo info() const override;

  bool capturing() const { return capturing_; }
  size_t live_buffers() const { return memory_->live_buffers(); }
  AllocatorStats memory_stats() const { return memory_->stats(); }
  cudaStream_t stream() const { return stream_; }

 private:
  // Launch one op: remember its name (the op table's), run the launcher, check the launch.
  template <class Args>
  void launch(DeviceOp op, void (*launcher)(const Args&, cudaStream_t), const Args& a);
  void note_op(const char* op);
  std::string pending_ops() const;  // ops launched since the last synchronize, for messages
  void refuse_while_capturing(const char* what) const;

  int ordinal_ = 0;
  cudaStream_t stream_ = nullptr;  // every op
  cudaStream_t side_ = nullptr;    // never captured: zeroing fresh memory, fill() while capturing
  std::unique_ptr<CudaMemory> raw_;  // outlives memory_, which gives its buffers back to it
  std::unique_ptr<CachingAllocator> memory_;
  std::vector<cudaGraph_t> graphs_;
  std::vector<cudaGraphExec_t> execs_;
  std::vector<std::vector<const char*>> graph_ops_;  // per graph: the ops it recorded
  std::vector<const char*> recording_;               // ops of the graph being captured
  std::deque<const char*> pending_;                  // the last ops launched since synchronize
  size_t pending_dropped_ = 0;
  bool capturing_ = false;
};

// Whether the CUDA runtime sees a GPU: cudaGetDeviceCount > 0. Never throws; false when the driver
// is missing or too old. (Also declared by src/cli/device_factory.cpp.)
bool cuda_gpu_present();
// Why this build's kernels cannot run on the current GPU (built for other architectures: "this
// kvcheck has no kernels for the GPU NAME (sm_XY ...); rebuild with ..."); empty when they can.
std::string cuda_kernel_image_missing();
// How many GPUs the CUDA runtime sees (0 when none, or no driver). Never throws.
int cuda_gpu_count();
// Why the driver could not start when cudaGetDeviceCount failed with a start failure
// (cuda_check.h: out of memory or address space, as under a small `ulimit -v`); empty otherwise.
std::string cuda_start_failure();
// Throws DeviceStartError when the driver cannot create the context, DeviceError otherwise.
// `ordinal`: the GPU (cudaSetDevice); -1: the current one (0 unless set).
std::unique_ptr<Device> make_cuda_device(int ordinal = -1);

}  // namespace kv
