// backend_device.cpp — routing each op to the plugin or the built-in device, and counting.
#include "plugin/backend_device.h"

#include <algorithm>
#include <array>
#include <string>

#include "backend/abi_tensor.h"

namespace kv {
namespace {

// The name a plugin call has in the built-in device's error messages: "backend <op>", built once
// from the ABI's op names and kept for the process (the device keeps the pointer).
const char* external_name(kvcheck_op op) {
  static const auto names = [] {
    std::array<std::string, KVCHECK_NUM_OPS> n;
    for (int i = 0; i < KVCHECK_NUM_OPS; ++i)
      n[static_cast<size_t>(i)] =
          std::string("backend ") + backend::op_name(static_cast<kvcheck_op>(i));
    return n;
  }();
  return names[static_cast<size_t>(op)].c_str();
}

using OpStatus = int32_t;

}  // namespace

BackendDevice::BackendDevice(Device& builtin, std::shared_ptr<BackendLibrary> backend,
                             OpPlacement placement, BackendWatch watch)
    : builtin_(&builtin), backend_(std::move(backend)), placement_(placement), watch_(watch) {
  dl_device_.device_type = static_cast<DLDeviceType>(builtin_->dl_device_type());
  dl_device_.device_id = builtin_->dl_device_id();
}

void BackendDevice::count(kvcheck_op op, bool on_backend) {
  if (capturing_) {
    recording_.emplace_back(op, on_backend);
    return;
  }
  OpCalls& c = calls_[static_cast<size_t>(op)];
  ++(on_backend ? c.backend : c.builtin);
}

void BackendDevice::sync_after(const char* name) {
  if (!watch_.sync_each_op || capturing_) return;  // a stream under capture cannot synchronise
  CallMark mark(watch_.record, name);
  try {
    builtin_->synchronize();
  } catch (const DeviceError& e) {
    throw BackendOpError(name, std::string("the device failed right after it: ") + e.what());
  }
}

template <class Builtin, class Call>
void BackendDevice::route(kvcheck_op op, Builtin&& builtin, Call&& call) {
  const bool on_backend = placement_[op];
  count(op, on_backend);
  if (!on_backend) {
    builtin();
    return;
  }
  // The closure owns what it needs: on the host a graph replays it long after this call.
  std::shared_ptr<BackendLibrary> lib = backend_;
  ProgressRecord* record = watch_.record;
  builtin_->run_external(external_name(op), [lib, op, call, record](void* stream) {
    char err[512] = "";
    OpStatus status;
    {
      CallMark mark(record, backend::op_name(op));
      status = call(lib->table(), stream, err, sizeof(err));
    }
    err[sizeof(err) - 1] = '\0';
    if (status != KVCHECK_OK)
      throw BackendOpError(backend::op_name(op), *err ? err : "(it gave no message)");
  });
  sync_after(backend::op_name(op));
}

// ---- the decode plan ----

void BackendDevice::paged_decode_plan(const DecodePlanArgs& a) {
  const kvcheck_backend& t = backend_->table();
  if (!placement_[KVCHECK_OP_PAGED_DECODE]) {
    builtin_->paged_decode_plan(a);
    return;
  }
  if (!t.paged_decode_plan) return;  // the backend plans inside its decode, or not at all
  const DLDevice dev = dl_device_;
  ProgressRecord* record = watch_.record;
  builtin_->run_external("backend paged_decode_plan", [&t, a, dev, record](void* stream) {
    backend::AbiBuilder b(dev);
    const kvcheck_decode_plan_args args = b.decode_plan(a);
    char err[512] = "";
    OpStatus status;
    {
      CallMark mark(record, "paged_decode_plan");
      status = t.paged_decode_plan(t.self, &args, stream, err, sizeof(err));
    }
    err[sizeof(err) - 1] = '\0';
    if (status != KVCHECK_OK)
      throw BackendOpError("paged_decode_plan", *err ? err : "(it gave no message)");
  });
  sync_after("paged_decode_plan");
}

size_t BackendDevice::decode_plan_bytes(int32_t max_rows, int32_t num_q_heads,
                                        int32_t max_splits) const {
  size_t bytes = builtin_->decode_plan_bytes(max_rows, num_q_heads, max_splits);
  const kvcheck_backend& t = backend_->table();
  if (placement_[KVCHECK_OP_PAGED_DECODE] && t.paged_decode_plan)
    bytes = std::max(bytes, t.plan_bytes(t.self, max_rows, num_q_heads, max_splits));
  plan_bytes_ = bytes;
  return bytes;
}

size_t BackendDevice::decode_workspace_bytes(int32_t max_rows, int32_t num_q_heads, int32_t v_dim,
                                             int32_t max_splits) const {
  size_t bytes = builtin_->decode_workspace_bytes(max_rows, num_q_heads, v_dim, max_splits);
  const kvcheck_backend& t = backend_->table();
  if (placement_[KVCHECK_OP_PAGED_DECODE] && t.workspace_bytes)
    bytes = std::max(bytes, t.workspace_bytes(t.self, KVCHECK_OP_PAGED_DECODE, max_rows,
                                              num_q_heads, v_dim, max_splits));
  workspace_bytes_ = bytes;
  return bytes;
}

// ---- ops ----

void BackendDevice::write_kv(const WriteKvArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_WRITE_KV, [&] { builtin_->write_kv(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_write_kv_args args = b.write_kv(a);
          return t.write_kv(t.self, &args, stream, err, n);
        });
}

void BackendDevice::paged_decode(const PagedDecodeArgs& a) {
  const DLDevice dev = dl_device_;
  // The plan buffer and the decode's scratch are the engine's: sized by decode_plan_bytes and
  // decode_workspace_bytes above, the scratch starting at partial_out.
  const backend::DecodeBuffers bufs{.plan = const_cast<int32_t*>(a.split_meta),
                                    .plan_bytes = plan_bytes_,
                                    .workspace = a.partial_out,
                                    .workspace_bytes = workspace_bytes_};
  route(KVCHECK_OP_PAGED_DECODE, [&] { builtin_->paged_decode(a); },
        [a, dev, bufs](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_paged_decode_args args = b.paged_decode(a, bufs);
          return t.paged_decode(t.self, &args, stream, err, n);
        });
}

void BackendDevice::gather_kv(const GatherKvArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_GATHER_KV, [&] { builtin_->gather_kv(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_gather_kv_args args = b.gather_kv(a, a.total_ctx);
          return t.gather_kv(t.self, &args, stream, err, n);
        });
}

void BackendDevice::varlen_attention(const VarlenAttnArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_VARLEN_ATTENTION, [&] { builtin_->varlen_attention(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_varlen_attention_args args = b.varlen_attention(a, a.num_rows, a.num_keys);
          return t.varlen_attention(t.self, &args, stream, err, n);
        });
}

void BackendDevice::merge_states(const MergeStatesArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_MERGE_STATES, [&] { builtin_->merge_states(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_merge_states_args args = b.merge_states(a);
          return t.merge_states(t.self, &args, stream, err, n);
        });
}

void BackendDevice::linear_attention(const LinearAttnArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_LINEAR_ATTENTION, [&] { builtin_->linear_attention(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_linear_attention_args args =
              b.linear_attention(a, a.num_rows, a.state_blocks_total);
          return t.linear_attention(t.self, &args, stream, err, n);
        });
}

void BackendDevice::fill_blocks(const FillBlocksArgs& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_FILL_BLOCKS, [&] { builtin_->fill_blocks(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_fill_blocks_args args = b.fill_blocks(a);
          return t.fill_blocks(t.self, &args, stream, err, n);
        });
}

void BackendDevice::quant_fp8(const QuantFp8Args& a) {
  const DLDevice dev = dl_device_;
  route(KVCHECK_OP_QUANT_FP8, [&] { builtin_->quant_fp8(a); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_quant_fp8_args args = b.quant_fp8(a);
          return t.quant_fp8(t.self, &args, stream, err, n);
        });
}

// ---- graphs ----

void BackendDevice::begin_capture() {
  builtin_->begin_capture();
  capturing_ = true;
  recording_.clear();
}

GraphId BackendDevice::end_capture() {
  capturing_ = false;
  const GraphId g = builtin_->end_capture();
  graph_ops_[g] = std::move(recording_);
  recording_.clear();
  return g;
}

void BackendDevice::replay(GraphId g) {
  builtin_->replay(g);
  const auto it = graph_ops_.find(g);
  if (it == graph_ops_.end()) return;
  for (const auto& [op, on_backend] : it->second) {
    OpCalls& c = calls_[static_cast<size_t>(op)];
    ++(on_backend ? c.backend : c.builtin);
  }
}

}  // namespace kv
