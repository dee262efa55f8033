// backend_device.cpp — routing each op to the plugin or the built-in device, and counting.
#include "plugin/backend_device.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <string>
#include <string_view>

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
  const int32_t io = backend_->table().caps.io_dtype;
  io_dtype_ = io == KVCHECK_BF16 ? DType::bf16 : io == KVCHECK_F16 ? DType::f16 : DType::f32;
}

BackendDevice::~BackendDevice() {
  for (void* p : scratch_all_) builtin_->release(p);
}

// ---- conventions ----

PadContract BackendDevice::padding() const {
  if (!placement_[KVCHECK_OP_PAGED_DECODE]) return builtin_->padding();
  const kvcheck_caps& c = backend_->table().caps;
  return {.seq_len = c.pad_seq_len, .block_id = c.pad_block_id};
}

OpPrecision BackendDevice::op_precision() const {
  for (kvcheck_op op : {KVCHECK_OP_PAGED_DECODE, KVCHECK_OP_VARLEN_ATTENTION,
                        KVCHECK_OP_MERGE_STATES, KVCHECK_OP_PAGED_PREFILL})
    if (placement_[op] && io_converts()) return OpPrecision::half_io;
  return builtin_->op_precision();
}

bool BackendDevice::lse_converts() const {
  const kvcheck_caps& c = backend_->table().caps;
  return c.lse_base != KVCHECK_LSE_NATURAL || c.empty_row_lse > 0;
}

void* BackendDevice::scratch(kvcheck_op op, int slot, size_t bytes) {
  auto& [ptr, size] = scratch_[{static_cast<int>(op), slot}];
  if (ptr == nullptr || size < bytes) {
    ptr = builtin_->alloc(std::max<size_t>(bytes, 1));
    size = bytes;
    scratch_all_.push_back(ptr);
  }
  return ptr;
}

template <class Args>
void BackendDevice::backend_scratch(kvcheck_op op, const kvcheck_size_query& q, Args* a) {
  const kvcheck_backend& t = backend_->table();
  a->workspace_bytes = t.workspace_bytes ? t.workspace_bytes(t.self, &q) : 0;
  a->workspace = a->workspace_bytes > 0 ? scratch(op, kWorkspaceSlot, a->workspace_bytes) : nullptr;
}

float* BackendDevice::to_io(kvcheck_op op, int slot, const float* src, int64_t stride,
                            int32_t rows, int32_t cols) {
  float* io = io_out(op, slot, stride, rows);
  builtin_->convert_rows({.src = src, .src_dtype = DType::f32, .src_row_stride = stride,
                          .dst = io, .dst_dtype = io_dtype_, .dst_row_stride = stride,
                          .rows = rows, .cols = cols});
  return io;
}

float* BackendDevice::io_out(kvcheck_op op, int slot, int64_t stride, int32_t rows) {
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(stride * rows, 0)) *
                       static_cast<size_t>(dtype_size(io_dtype_));
  return static_cast<float*>(scratch(op, slot, bytes));
}

void BackendDevice::from_io(const float* io, float* dst, int64_t stride, int32_t rows,
                            int32_t cols) {
  builtin_->convert_rows({.src = io, .src_dtype = io_dtype_, .src_row_stride = stride,
                          .dst = dst, .dst_dtype = DType::f32, .dst_row_stride = stride,
                          .rows = rows, .cols = cols});
}

void BackendDevice::convert_lse(float* lse, int32_t rows, int32_t heads, bool to_backend) {
  const kvcheck_caps& c = backend_->table().caps;
  const float base2 = to_backend ? std::numbers::log2e_v<float> : std::numbers::ln2_v<float>;
  builtin_->convert_rows({.src = lse, .src_row_stride = heads, .dst = lse,
                          .dst_row_stride = heads, .rows = rows, .cols = heads,
                          .scale = c.lse_base == KVCHECK_LSE_BASE2 ? base2 : 1.0f,
                          .map_value = c.empty_row_lse > 0,
                          .match = to_backend ? -INFINITY : INFINITY,
                          .replace = to_backend ? INFINITY : -INFINITY});
}

void BackendDevice::begin_layer(int32_t layer, const char* kind) {
  layer_ = layer;
  kind_ = kCallLayerKinds.size() - 1;
  for (size_t i = 0; kind != nullptr && i + 1 < kCallLayerKinds.size(); ++i)
    if (std::string_view(kind) == kCallLayerKinds[i]) kind_ = i;
  builtin_->begin_layer(layer, kind);
}

void BackendDevice::count(kvcheck_op op, bool on_backend) {
  const CallSite site{.op = op, .on_backend = on_backend, .kind = kind_, .layer = layer_};
  if (capturing_) {
    recording_.push_back(site);
    return;
  }
  OpCalls& c = calls_[site.kind][static_cast<size_t>(op)];
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
  const int32_t layer = layer_;
  const char* kind = kind_ + 1 < kCallLayerKinds.size() ? kCallLayerKinds[kind_] : nullptr;
  builtin_->run_external(external_name(op), [lib, op, call, record, layer, kind](void* stream) {
    char err[512] = "";
    OpStatus status;
    {
      if (record) record->set_layer(layer, kind);  // also when a host graph replays the call
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
      if (record) record->set_layer(-1, nullptr);  // a plan serves a layer kind, not one layer
      CallMark mark(record, "paged_decode_plan");
      status = t.paged_decode_plan(t.self, &args, stream, err, sizeof(err));
    }
    err[sizeof(err) - 1] = '\0';
    if (status != KVCHECK_OK)
      throw BackendOpError("paged_decode_plan", *err ? err : "(it gave no message)");
  });
  sync_after("paged_decode_plan");
}

// The engine asks once per paged layer kind and allocates the largest answer for each kind: the
// bytes handed to the backend are that largest.
size_t BackendDevice::decode_plan_bytes(const DecodePlanArgs& shape) const {
  size_t bytes = builtin_->decode_plan_bytes(shape);
  const kvcheck_backend& t = backend_->table();
  const kvcheck_size_query q = backend::size_query(shape);
  if (placement_[KVCHECK_OP_PAGED_DECODE] && t.paged_decode_plan)
    bytes = std::max(bytes, t.plan_bytes(t.self, &q));
  plan_bytes_ = std::max(plan_bytes_, bytes);
  return bytes;
}

size_t BackendDevice::decode_workspace_bytes(const DecodePlanArgs& shape) const {
  size_t bytes = builtin_->decode_workspace_bytes(shape);
  const kvcheck_backend& t = backend_->table();
  const kvcheck_size_query q = backend::size_query(shape);
  if (placement_[KVCHECK_OP_PAGED_DECODE] && t.workspace_bytes)
    bytes = std::max(bytes, t.workspace_bytes(t.self, &q));
  workspace_bytes_ = std::max(workspace_bytes_, bytes);
  return bytes;
}

// ---- ops ----

void BackendDevice::write_kv(const WriteKvArgs& in) {
  const DLDevice dev = dl_device_;
  WriteKvArgs a = in;
  if (placement_[KVCHECK_OP_WRITE_KV])
    backend_scratch(KVCHECK_OP_WRITE_KV, backend::size_query(in), &a);
  route(KVCHECK_OP_WRITE_KV, [&] { builtin_->write_kv(in); },
        [a, dev](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          const kvcheck_write_kv_args args = b.write_kv(a);
          return t.write_kv(t.self, &args, stream, err, n);
        });
}

void BackendDevice::paged_decode(const PagedDecodeArgs& in) {
  const DLDevice dev = dl_device_;
  // The plan buffer and the decode's scratch are the engine's: sized by decode_plan_bytes and
  // decode_workspace_bytes above, the scratch starting at partial_out.
  const backend::DecodeBuffers bufs{.plan = const_cast<int32_t*>(in.split_meta),
                                    .plan_bytes = plan_bytes_,
                                    .workspace = in.partial_out,
                                    .workspace_bytes = workspace_bytes_};
  constexpr kvcheck_op op = KVCHECK_OP_PAGED_DECODE;
  // q in, out back, through the backend's io dtype.
  const bool io = placement_[op] && io_converts();
  const int32_t rows = in.num_rows, vd = in.v_dim > 0 ? in.v_dim : in.cache.head_dim;
  PagedDecodeArgs a = in;
  if (io) {
    a.q = to_io(op, 0, in.q, in.q_row_stride, rows, in.num_q_heads * in.cache.head_dim);
    a.out = to_io(op, 1, in.out, in.out_row_stride, rows, in.num_q_heads * vd);  // poison too
  }
  const int32_t io_dtype = backend::to_abi(io_dtype_);
  route(op, [&] { builtin_->paged_decode(in); },
        [a, dev, bufs, io, io_dtype](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          kvcheck_paged_decode_args args = b.paged_decode(a, bufs);
          if (io) {
            backend::retype(args.q, io_dtype);
            backend::retype(args.out, io_dtype);
          }
          return t.paged_decode(t.self, &args, stream, err, n);
        });
  if (io) from_io(a.out, in.out, in.out_row_stride, rows, in.num_q_heads * vd);
}

void BackendDevice::paged_prefill(const PagedPrefillArgs& in) {
  const DLDevice dev = dl_device_;
  constexpr kvcheck_op op = KVCHECK_OP_PAGED_PREFILL;
  const bool io = io_converts();
  const int32_t rows = in.num_rows, vd = in.v_dim > 0 ? in.v_dim : in.cache.head_dim;
  PagedPrefillArgs a = in;
  if (io) {
    a.q = to_io(op, 0, in.q, in.q_row_stride, rows, in.num_q_heads * in.cache.head_dim);
    a.out = to_io(op, 1, in.out, in.out_row_stride, rows, in.num_q_heads * vd);  // poison too
  }
  backend_scratch(op, backend::size_query(in), &a);
  const int32_t io_dtype = backend::to_abi(io_dtype_);
  route(op, [&] { builtin_->paged_prefill(in); },
        [a, dev, io, io_dtype](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          kvcheck_paged_prefill_args args = b.paged_prefill(a);
          if (io) {
            backend::retype(args.q, io_dtype);
            backend::retype(args.out, io_dtype);
          }
          return t.paged_prefill(t.self, &args, stream, err, n);
        });
  if (io) from_io(a.out, in.out, in.out_row_stride, rows, in.num_q_heads * vd);
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

void BackendDevice::varlen_attention(const VarlenAttnArgs& in) {
  const DLDevice dev = dl_device_;
  constexpr kvcheck_op op = KVCHECK_OP_VARLEN_ATTENTION;
  const bool on_backend = placement_[op];
  const bool io = on_backend && io_converts();
  const int32_t rows = in.num_rows, vd = in.v_dim > 0 ? in.v_dim : in.head_dim;
  VarlenAttnArgs a = in;
  if (io) {
    a.q = to_io(op, 0, in.q, in.q_row_stride, rows, in.num_q_heads * in.head_dim);
    a.out = to_io(op, 1, in.out, in.out_row_stride, rows, in.num_q_heads * vd);  // poison too
  }
  if (on_backend) backend_scratch(op, backend::size_query(in), &a);
  const int32_t io_dtype = backend::to_abi(io_dtype_);
  route(op, [&] { builtin_->varlen_attention(in); },
        [a, dev, io, io_dtype](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          kvcheck_varlen_attention_args args = b.varlen_attention(a, a.num_rows, a.num_keys);
          if (io) {
            backend::retype(args.q, io_dtype);
            backend::retype(args.out, io_dtype);
          }
          return t.varlen_attention(t.self, &args, stream, err, n);
        });
  if (io) from_io(a.out, in.out, in.out_row_stride, rows, in.num_q_heads * vd);
  // Its lse feeds the merge: a built-in merge reads natural logs with -inf for empty rows.
  if (on_backend && !placement_[KVCHECK_OP_MERGE_STATES] && lse_converts() && in.lse)
    convert_lse(in.lse, rows, in.num_q_heads, false);
}

void BackendDevice::merge_states(const MergeStatesArgs& in) {
  const DLDevice dev = dl_device_;
  constexpr kvcheck_op op = KVCHECK_OP_MERGE_STATES;
  const bool on_backend = placement_[op];
  const bool io = on_backend && io_converts();
  const int32_t rows = in.num_rows, cols = in.num_heads * in.head_dim;
  // The states come from the built-in varlen_attention: its lse in the backend's convention.
  const bool lse_in = on_backend && !placement_[KVCHECK_OP_VARLEN_ATTENTION] && lse_converts();
  if (lse_in) {
    convert_lse(const_cast<float*>(in.lse_a), rows, in.num_heads, true);
    convert_lse(const_cast<float*>(in.lse_b), rows, in.num_heads, true);
  }
  MergeStatesArgs a = in;
  if (io) {
    a.out_a = to_io(op, 0, in.out_a, in.row_stride, rows, cols);
    a.out_b = to_io(op, 1, in.out_b, in.row_stride, rows, cols);
    a.out = to_io(op, 2, in.out, in.row_stride, rows, cols);  // its poison too
  }
  const int32_t io_dtype = backend::to_abi(io_dtype_);
  route(op, [&] { builtin_->merge_states(in); },
        [a, dev, io, io_dtype](const kvcheck_backend& t, void* stream, char* err, size_t n) {
          backend::AbiBuilder b(dev);
          kvcheck_merge_states_args args = b.merge_states(a);
          if (io) {
            backend::retype(args.out_a, io_dtype);
            backend::retype(args.out_b, io_dtype);
            backend::retype(args.out, io_dtype);
          }
          return t.merge_states(t.self, &args, stream, err, n);
        });
  if (io) from_io(a.out, in.out, in.row_stride, rows, cols);
  if (on_backend && lse_converts() && in.lse) convert_lse(in.lse, rows, in.num_heads, false);
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
  for (const CallSite& site : it->second) {
    OpCalls& c = calls_[site.kind][static_cast<size_t>(site.op)];
    ++(site.on_backend ? c.backend : c.builtin);
  }
}

}  // namespace kv
