// backend_device.h — the device of a run with a backend plugin: each attention/cache op goes to
// the plugin or to the built-in device (`--device`), as the placement says; memory, fills, the
// dense model ops and graphs stay the built-in device's. A plugin call goes through the built-in
// device's run_external, so it keeps that device's stream order and is captured into its graphs
// (recorded on the host, stream-captured on CUDA).
//
// It counts, per ABI op, the calls each side ran (a replay counts what its graph recorded), so a
// run can say how much of the scenario the backend really ran: a backend that ran nothing never
// reads as a backend that passed.
//
// Watched (BackendWatch), it marks each plugin call's start and return in a ProgressRecord that
// the parent process reads (plugin/worker.h), and under --backend-sync synchronises the device
// after each call, so that an asynchronous fault is attributed to the op that caused it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "plugin/backend_library.h"
#include "plugin/progress_record.h"
#include "device/device.h"

namespace kv {

// Which ops run on the backend (the rest on the built-in device).
struct OpPlacement {
  std::array<bool, KVCHECK_NUM_OPS> on_backend{};
  bool operator[](kvcheck_op op) const { return on_backend[static_cast<size_t>(op)]; }
};

struct OpCalls {
  int64_t backend = 0;
  int64_t builtin = 0;
};

// The layer kinds calls are counted under: the model's three, and "none" for a call outside any
// layer (none of the ABI's ops is, today).
inline constexpr std::array<const char*, 4> kCallLayerKinds{"attention", "mla", "linear", "none"};
using CallsByKind = std::array<std::array<OpCalls, KVCHECK_NUM_OPS>, kCallLayerKinds.size()>;

// A backend op returned an error status: a verdict about the backend, not a device failure.
struct BackendOpError : std::runtime_error {
  BackendOpError(std::string op, std::string message)
      : std::runtime_error("backend op " + op + " failed: " + message),
        op(std::move(op)),
        message(std::move(message)) {}
  std::string op;
  std::string message;  // the backend's own
};

// How a run in a worker process is watched; the defaults watch nothing.
struct BackendWatch {
  ProgressRecord* record = nullptr;  // shared with the parent; must outlive the device
  bool sync_each_op = false;         // --backend-sync: synchronise after every plugin call
};

class BackendDevice : public Device {
 public:
  // `builtin` must outlive this device (it serves several runs, one BackendDevice each).
  BackendDevice(Device& builtin, std::shared_ptr<BackendLibrary> backend, OpPlacement placement,
                BackendWatch watch = {});
  ~BackendDevice() override;
  BackendDevice(const BackendDevice&) = delete;
  BackendDevice& operator=(const BackendDevice&) = delete;

  std::string name() const override { return builtin_->name(); }
  std::optional<size_t> free_bytes() const override { return builtin_->free_bytes(); }
  DeviceInfo info() const override { return builtin_->info(); }
  const BackendLibrary& backend() const { return *backend_; }
  const OpPlacement& placement() const { return placement_; }
  // Calls per layer kind (kCallLayerKinds) and ABI op so far (paged_prefill: unused by this
  // engine yet).
  const CallsByKind& calls() const { return calls_; }

  void* alloc(size_t bytes) override { return builtin_->alloc(bytes); }
  void release(void* p) override { builtin_->release(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    builtin_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    builtin_->download(dst, src, bytes);
  }
  void fill(void* dst, size_t bytes, FillPattern pattern, uint64_t seed) override {
    builtin_->fill(dst, bytes, pattern, seed);
  }

  void paged_decode_plan(const DecodePlanArgs& a) override;
  size_t decode_plan_bytes(const DecodePlanArgs& shape) const override;
  size_t decode_workspace_bytes(const DecodePlanArgs& shape) const override;

  KV_DEVICE_CACHE_OPS_OVERRIDE
  void convert_rows(const ConvertRowsArgs& a) override { builtin_->convert_rows(a); }
  bool has_paged_prefill() const override { return placement_[KVCHECK_OP_PAGED_PREFILL]; }
  void paged_prefill(const PagedPrefillArgs& a) override;
  // Graph-padded decode rows as the backend's padding contract says, when its paged_decode runs.
  PadContract padding() const override;
  // half_io when the backend runs an attention op (decode, varlen, merge, fused prefill) with a
  // 16-bit io dtype; else the built-in device's.
  OpPrecision op_precision() const override;
  void embed(const EmbedArgs& a) override { builtin_->embed(a); }
  void rms_norm(const RmsNormArgs& a) override { builtin_->rms_norm(a); }
  void linear(const LinearArgs& a) override { builtin_->linear(a); }
  void argmax(const ArgmaxArgs& a) override { builtin_->argmax(a); }
  void memset_async(void* dst, size_t bytes, FillPattern pattern) override {
    builtin_->memset_async(dst, bytes, pattern);
  }
  void run_external(const char* op, const std::function<void(void* stream)>& fn) override {
    builtin_->run_external(op, fn);
  }
  int32_t dl_device_type() const override { return builtin_->dl_device_type(); }
  int32_t dl_device_id() const override { return builtin_->dl_device_id(); }
  void begin_layer(int32_t layer, const char* kind) override;

  void begin_capture() override;
  GraphId end_capture() override;
  void replay(GraphId g) override;
  void synchronize() override { builtin_->synchronize(); }

 private:
  // One op on the side the placement says: `builtin()` runs it there, `call(table, stream, err)`
  // calls the plugin with ABI args it builds when it runs (a graph replay rebuilds them).
  template <class Builtin, class Call>
  void route(kvcheck_op op, Builtin&& builtin, Call&& call);
  void count(kvcheck_op op, bool on_backend);
  // What a call counts under and what the progress record says while it runs.
  struct CallSite {
    kvcheck_op op;
    bool on_backend;
    size_t kind;     // index into kCallLayerKinds
    int32_t layer;   // -1: none
  };
  // --backend-sync: wait for the device after plugin op `name` (outside graph capture); a device
  // error there is the op's (BackendOpError).
  void sync_after(const char* name);

  // ---- the backend's declared conventions (caps), bridged around its calls ----
  // A scratch buffer for one (op, tensor) of at least `bytes`, at a fixed address until a larger
  // one is needed (a captured graph keeps the address; old ones live until the device goes).
  void* scratch(kvcheck_op op, int slot, size_t bytes);
  // The backend's workspace for one call of `op` (workspace_bytes of q) into a->workspace and
  // a->workspace_bytes: a scratch buffer in its own slot, none when it asks 0 bytes.
  static constexpr int kWorkspaceSlot = 3;  // slots 0-2: the io conversions
  template <class Args>
  void backend_scratch(kvcheck_op op, const kvcheck_size_query& q, Args* a);
  // Rows of float32 `src` (row stride in elements) converted into a scratch buffer in the io
  // dtype, at the same element strides; returns it (as a float* for the descriptor). Outputs go
  // in this way too, so that the poison of the elements an op leaves unwritten comes back out.
  float* to_io(kvcheck_op op, int slot, const float* src, int64_t stride, int32_t rows,
               int32_t cols);
  // A scratch buffer in the io dtype for rows of `stride` elements, and its way back to float32.
  float* io_out(kvcheck_op op, int slot, int64_t stride, int32_t rows);
  void from_io(const float* io, float* dst, int64_t stride, int32_t rows, int32_t cols);
  // lse rows [rows][heads] in place: kvcheck's (natural, -inf for an empty row) to the backend's
  // declared base and empty-row value (to_backend), or back.
  void convert_lse(float* lse, int32_t rows, int32_t heads, bool to_backend);
  bool io_converts() const { return io_dtype_ != DType::f32; }
  bool lse_converts() const;

  Device* builtin_;
  std::shared_ptr<BackendLibrary> backend_;
  OpPlacement placement_;
  BackendWatch watch_;
  DLDevice dl_device_;
  mutable size_t plan_bytes_ = 0, workspace_bytes_ = 0;  // what the engine allocated, for the ABI
  DType io_dtype_ = DType::f32;
  std::map<std::pair<int, int>, std::pair<void*, size_t>> scratch_;  // (op, slot): current
  std::vector<void*> scratch_all_;
  CallsByKind calls_{};
  int32_t layer_ = -1;
  size_t kind_ = kCallLayerKinds.size() - 1;  // "none"
  bool capturing_ = false;
  std::vector<CallSite> recording_;  // ops of the graph being captured
  std::map<GraphId, std::vector<CallSite>> graph_ops_;
};

}  // namespace kv
