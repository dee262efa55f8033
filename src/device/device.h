// device.h — what a backend device provides: memory, ops, graph capture/replay, what it runs on.
//
// The engine talks to a Device only through raw buffers and the op descriptors of
// kernels/op_args.cuh. Two implementations: HostDevice (CPU, runs everywhere, CI) and, when built
// with CUDA, CudaDevice. Both give the ops the same meaning.
//
// Memory behaves like GPU memory: alloc() returns bytes that still hold whatever the memory held
// before (fresh memory is zero; a released buffer's bytes survive into the next alloc of that
// size). Graphs capture op descriptors by value, that is, pointers and sizes: a replay reads
// whatever is at those addresses at replay time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "device/device_info.h"
#include "util/device_error.h"
#include "kernels/op_args.cuh"

namespace kv {

struct PadContract {
  int32_t seq_len = 0;   // of a padded decode row
  int32_t block_id = 0;  // of a padded row's block-table entries and of unused entries
};

using GraphId = int32_t;

// How a device's attention ops compute their outputs, the precision classes the oracle's
// tolerances are calibrated for: kvcheck's host ops (float32 throughout); kvcheck's CUDA ops
// (tensor cores with 16-bit operands on 16-bit caches); a backend plugin whose q / out are 16-bit
// (bf16 or f16 io, its own kernels).
enum class OpPrecision { host_f32, cuda_builtin, half_io };

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "host" or "cuda"
  // Bytes the device can still hand out, when it knows (a GPU); nullopt when it does not (host).
  virtual std::optional<size_t> free_bytes() const { return std::nullopt; }
  // Where the ops run (device_info.h): the machine and, on a GPU, the card and the CUDA stack.
  // For the result document; read when called.
  virtual DeviceInfo info() const = 0;

  // ---- memory ----
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;  // host -> device
  virtual void download(void* dst, const void* src, size_t bytes) = 0;  // device -> host
  // Fill `bytes` bytes with a pattern; nan/inf fill as float32 words (the buffers it is used on).
  virtual void fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) = 0;

  // ---- the decode plan step (on the host, never captured; before the step or its replay) ----
  // The built-in planner: plan_decode_splits_for (kernels/decode_splits.h) uploaded into a.plan.
  virtual void paged_decode_plan(const DecodePlanArgs& a);
  // The sizes below take the shape of the run's decode steps of one layer kind as a plan's args:
  // num_rows the most rows of a step, max_blocks_per_seq the block table's row length; no
  // seq_lens_host, no plan.
  // Bytes of the plan buffer for such steps.
  virtual size_t decode_plan_bytes(const DecodePlanArgs& shape) const;
  // Bytes of paged_decode's scratch for such steps: the built-in decode's partial outputs
  // [rows][max_splits][heads][v_dim] floats, then their lse [rows][max_splits][heads].
  virtual size_t decode_workspace_bytes(const DecodePlanArgs& shape) const;

  // ---- ops (recorded instead of run while capturing) ----
  virtual void write_kv(const WriteKvArgs& a) = 0;
  virtual void paged_decode(const PagedDecodeArgs& a) = 0;
  virtual void gather_kv(const GatherKvArgs& a) = 0;
  virtual void varlen_attention(const VarlenAttnArgs& a) = 0;
  virtual void merge_states(const MergeStatesArgs& a) = 0;
  virtual void linear_attention(const LinearAttnArgs& a) = 0;
  virtual void fill_blocks(const FillBlocksArgs& a) = 0;  // zero_blocks / poison_blocks
  virtual void quant_fp8(const QuantFp8Args& a) = 0;
  virtual void convert_rows(const ConvertRowsArgs& a) = 0;  // a backend's conventions
  // The fused paged prefill: only a backend has it (has_paged_prefill); the engine then calls it
  // instead of its gather -> varlen -> merge chain.
  virtual bool has_paged_prefill() const { return false; }
  virtual void paged_prefill(const PagedPrefillArgs&) {
    throw DeviceError("paged_prefill: the built-in devices run gather_kv -> varlen_attention -> "
                      "merge_states instead");
  }
  virtual void embed(const EmbedArgs& a) = 0;
  virtual void rms_norm(const RmsNormArgs& a) = 0;
  virtual void linear(const LinearArgs& a) = 0;
  virtual void argmax(const ArgmaxArgs& a) = 0;
  // A fill that is part of the op stream (captured into graphs): zero-initialised outputs.
  virtual void memset_async(void* dst, size_t bytes, FillPattern pattern) = 0;

  // ---- an op of code kvcheck does not own (a backend plugin), in this device's stream order ----
  // fn(stream) makes the call. The host device runs it now or, while capturing, records it to run
  // at each replay; the CUDA device runs it now with its stream (a capture records what it
  // launches) and checks the launch. `op` (a static string) names it in error messages.
  virtual void run_external(const char* op, const std::function<void(void* stream)>& fn) = 0;
  // Where this device's buffers live, in DLPack's terms: kDLCPU (1) or kDLCUDA (2), and the index.
  virtual int32_t dl_device_type() const = 0;
  virtual int32_t dl_device_id() const { return 0; }
  // The ops that follow belong to model layer `layer` of kind `kind` ("attention", "mla",
  // "linear"; a static string); layer -1 and kind nullptr: to no layer. A hint for accounting
  // (a backend's calls per layer kind, where a crash happened); the built-in devices ignore it.
  virtual void begin_layer(int32_t layer, const char* kind) {}
  // What graph-padded decode rows hold: seq_len and block-table entry (unused entries of every
  // block-table row too). The built-in ops take 0 / 0; a backend may declare 1 and -1.
  virtual PadContract padding() const { return {}; }
  // How the attention ops compute (the oracle's tolerances depend on it, check/tolerances.h).
  virtual OpPrecision op_precision() const { return OpPrecision::host_f32; }

  // ---- graphs ----
  // Between begin_capture and end_capture ops are recorded, not run, and alloc() draws from the
  // graph's private pool (kept for the graph's lifetime, never handed to later allocations).
  virtual void begin_capture() = 0;
  virtual GraphId end_capture() = 0;
  virtual void replay(GraphId g) = 0;
  virtual void synchronize() = 0;
};

}  // namespace kv

// The op methods a Device subclass overrides, declared once: the attention and cache ops (a
// backend's, or the built-in ones), and the synthetic model's dense ops with the op-stream fill.
#define KV_DEVICE_CACHE_OPS_OVERRIDE                           \
  void write_kv(const WriteKvArgs& a) override;                \
  void paged_decode(const PagedDecodeArgs& a) override;        \
  void gather_kv(const GatherKvArgs& a) override;              \
  void varlen_attention(const VarlenAttnArgs& a) override;     \
  void merge_states(const MergeStatesArgs& a) override;        \
  void linear_attention(const LinearAttnArgs& a) override;     \
  void fill_blocks(const FillBlocksArgs& a) override;          \
  void quant_fp8(const QuantFp8Args& a) override;
#define KV_DEVICE_DENSE_OPS_OVERRIDE                           \
  void convert_rows(const ConvertRowsArgs& a) override;        \
  void embed(const EmbedArgs& a) override;                     \
  void rms_norm(const RmsNormArgs& a) override;                \
  void linear(const LinearArgs& a) override;                   \
  void argmax(const ArgmaxArgs& a) override;                   \
  void memset_async(void* dst, size_t bytes, FillPattern pattern) override;
