// plugin_decoder.cpp — loading a backend plugin and calling its decode (plugin_decoder.h). The
// load checks are the ones a benchmark needs (entry point, ABI version, name, paged_decode, a plan
// step with its plan_bytes); `kvcheck conform` and BackendLibrary check the rest of the table.
#include "tests/bench/plugin_decoder.h"

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>

#include "backend/abi_caps.h"
#include "backend/abi_convert.h"
#include "kernels/decode_splits.h"

namespace kv::bench {
namespace {

// The decode plan's shape as the engine describes it (DecodePlanArgs): sizes and plan step.
DecodePlanArgs plan_shape(const DecodeShape& s, int table_stride, int max_splits) {
  DecodePlanArgs p;
  p.num_rows = s.batch;
  p.block_size = s.block_size;
  p.cache_dtype = s.dtype;
  p.max_splits = max_splits;
  p.num_q_heads = s.q_heads;
  p.num_kv_heads = s.kv_heads;
  p.head_dim = s.head_dim;
  p.v_dim = s.v_dim;
  p.latent = s.latent;
  p.max_blocks_per_seq = table_stride;
  return p;
}

DLDevice cuda_device(int id) {
  DLDevice d;
  d.device_type = kDLCUDA;
  d.device_id = id;
  return d;
}

}  // namespace

PluginDecoder::PluginDecoder(const std::string& path, int device, const std::string& options)
    : device_(device) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("plugin " + path + ": " + why);
  };
  // A path with a slash: dlopen must not search the library path for a bare name.
  const std::string where = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    fail(std::string("cannot be loaded: ") + (why ? why : "unknown error"));
  }
  void* sym = dlsym(handle_, KVCHECK_BACKEND_INIT_SYMBOL);
  if (!sym) fail("it does not export " KVCHECK_BACKEND_INIT_SYMBOL);
  kvcheck_host host{};
  host.struct_size = sizeof(host);
  host.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  host.device = cuda_device(device);
  host.options = options.c_str();
  char err[512] = "";
  t_ = reinterpret_cast<kvcheck_backend_init_fn>(sym)(KVCHECK_BACKEND_ABI_VERSION, &host, err,
                                                      sizeof err);
  err[sizeof err - 1] = '\0';
  if (!t_) fail(std::string("init refused: ") + (*err ? err : "(no message)"));
  if (t_->struct_size < sizeof(kvcheck_backend))
    fail("its table is " + std::to_string(t_->struct_size) + " bytes, smaller than this "
         "backend.h's " + std::to_string(sizeof(kvcheck_backend)) + " (built against an older "
         "header? rebuild it)");
  if (t_->abi_version != KVCHECK_BACKEND_ABI_VERSION)
    fail("its table says ABI version " + std::to_string(t_->abi_version) + ", not " +
         std::to_string(KVCHECK_BACKEND_ABI_VERSION));
  if (!t_->name || !t_->version) fail("its table has no name or version");
  if (!backend::implements(*t_, KVCHECK_OP_PAGED_DECODE)) fail("it has no paged_decode");
  if (t_->paged_decode_plan && !t_->plan_bytes) fail("it has paged_decode_plan but no plan_bytes");
}

PluginDecoder::~PluginDecoder() {
  plan_ = DevBuf();
  ws_ = DevBuf();
  if (t_ && t_->destroy) t_->destroy(t_->self);
  // The library stays mapped, as kvcheck leaves it (threads or atexit handlers of the plugin).
}

DType PluginDecoder::io_dtype() const {
  switch (t_->caps.io_dtype) {
    case KVCHECK_BF16: return DType::bf16;
    case KVCHECK_F16: return DType::f16;
    default: return DType::f32;
  }
}

std::string PluginDecoder::graphs_name() const {
  switch (t_->caps.graph_support) {
    case KVCHECK_GRAPHS_NONE: return "none";
    case KVCHECK_GRAPHS_DECODE: return "decode";
    case KVCHECK_GRAPHS_FULL: return "full";
  }
  return "?";
}

std::string PluginDecoder::refusal(const DecodeShape& s) const {
  backend::CacheShape c;
  c.dtype = s.dtype;
  c.layout = s.latent ? KVCHECK_LAYOUT_MLA_LATENT : KVCHECK_LAYOUT_KV_SEPARATE;
  c.head_dim = s.head_dim;
  c.block_size = s.block_size;
  c.gqa_ratio = s.latent ? 0 : s.q_heads / s.kv_heads;
  c.mla_rope_dim = s.latent ? s.head_dim - s.v_dim : 0;
  return backend::caps_refusal(t_->caps, c);
}

PluginDecoder::Sizes PluginDecoder::sizes(const DecodeShape& s, int table_stride,
                                          int max_splits) const {
  const kvcheck_size_query q = backend::size_query(plan_shape(s, table_stride, max_splits));
  Sizes z;
  z.plan = kv::decode_plan_bytes(s.batch);
  z.workspace = kv::decode_workspace_bytes(s.batch, s.q_heads, s.v_dim, max_splits);
  if (t_->paged_decode_plan) z.plan = std::max(z.plan, t_->plan_bytes(t_->self, &q));
  if (t_->workspace_bytes) z.workspace = std::max(z.workspace, t_->workspace_bytes(t_->self, &q));
  return z;
}

size_t PluginDecoder::buffer_bytes(const DecodeShape& s, int table_stride, int max_splits) const {
  const Sizes z = sizes(s, table_stride, max_splits);
  return z.plan + z.workspace;
}

void PluginDecoder::prepare(const DecodeShape& s, int table_stride, int max_splits) {
  table_stride_ = table_stride;
  max_splits_ = max_splits;
  const Sizes z = sizes(s, table_stride, max_splits);
  plan_ = DevBuf();  // free first: the workspace of a large point can be large
  ws_ = DevBuf();
  plan_ = DevBuf(z.plan);
  ws_ = DevBuf(z.workspace);
  lens_host_.assign(s.batch, s.context);
}

std::string PluginDecoder::plan(const DecodeShape& s, cudaStream_t stream) {
  if (!t_->paged_decode_plan) return "";
  DecodePlanArgs p = plan_shape(s, table_stride_, max_splits_);
  p.seq_lens_host = lens_host_.data();
  p.plan = plan_.as<int32_t>();
  p.plan_bytes = plan_.bytes();
  backend::AbiBuilder b(cuda_device(device_));
  const kvcheck_decode_plan_args args = b.decode_plan(p);
  char err[512] = "";
  const int32_t st = t_->paged_decode_plan(t_->self, &args, stream, err, sizeof err);
  err[sizeof err - 1] = '\0';
  if (st == KVCHECK_OK) return "";
  return std::string("paged_decode_plan: ") + (*err ? err : "(no message)");
}

std::string PluginDecoder::decode(const PagedDecodeArgs& a, cudaStream_t stream) {
  backend::DecodeBuffers bufs;
  bufs.plan = plan_.as();
  bufs.plan_bytes = plan_.bytes();
  bufs.workspace = ws_.as();
  bufs.workspace_bytes = ws_.bytes();
  PagedDecodeArgs in = a;
  in.max_splits = max_splits_;
  backend::AbiBuilder b(cuda_device(device_));
  kvcheck_paged_decode_args args = b.paged_decode(in, bufs);
  const int32_t io = backend::to_abi(io_dtype());
  backend::retype(args.q, io);
  backend::retype(args.out, io);
  char err[512] = "";
  const int32_t st = t_->paged_decode(t_->self, &args, stream, err, sizeof err);
  err[sizeof err - 1] = '\0';
  if (st == KVCHECK_OK) return "";
  return std::string("paged_decode: ") + (*err ? err : "(no message)");
}

}  // namespace kv::bench
