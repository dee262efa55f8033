// plugin_decoder.h — a backend plugin's paged decode, as kvbench_backend_decode drives it: the
// shared library dlopen'ed and its kvcheck_backend_init called for a kDLCUDA device (the plugin is
// never linked), its caps checked against a shape, plan and workspace sized through its
// plan_bytes / workspace_bytes (at least what the built-in decode asks: the engine hands the
// larger), paged_decode_plan on the host and paged_decode on a stream. The ABI args come from
// kvcheck's own AbiBuilder (src/backend/abi_convert.h), q and out retyped to the plugin's io
// dtype, as BackendDevice::paged_decode passes them (src/plugin/backend_device.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/op_args.cuh"
#include "kvcheck/backend.h"
#include "tests/bench/bench_cuda.h"
#include "tests/bench/decode_bench.h"

namespace kv::bench {

class PluginDecoder {
 public:
  // Loads `path` for CUDA device `device`; throws std::runtime_error with the reason (not a
  // shared library, no entry point, init refused, no paged_decode, a table of another ABI).
  PluginDecoder(const std::string& path, int device, const std::string& options);
  ~PluginDecoder();
  PluginDecoder(const PluginDecoder&) = delete;
  PluginDecoder& operator=(const PluginDecoder&) = delete;

  std::string name() const { return t_->name; }
  std::string version() const { return t_->version; }
  DType io_dtype() const;  // q and out of paged_decode
  bool graphs_allowed() const { return t_->caps.graph_support >= KVCHECK_GRAPHS_DECODE; }
  std::string graphs_name() const;

  // Why the plugin's caps cannot take `s` ("" if they can), as kvcheck asks before a run.
  std::string refusal(const DecodeShape& s) const;

  // Plan and workspace for decodes of `s` with block tables of `table_stride` entries per row and
  // up to `max_splits` splits: sized (the larger of the plugin's answer and the built-in's) and
  // allocated here; they stay at one address until the next prepare(). buffer_bytes: their sum,
  // without allocating.
  void prepare(const DecodeShape& s, int table_stride, int max_splits);
  size_t buffer_bytes(const DecodeShape& s, int table_stride, int max_splits) const;
  size_t plan_bytes() const { return plan_.bytes(); }
  size_t workspace_bytes() const { return ws_.bytes(); }

  // paged_decode_plan for `s` (every row of length s.context) on `stream`: "" or the plugin's
  // message. Nothing to do (and "") when the plugin has no plan step.
  std::string plan(const DecodeShape& s, cudaStream_t stream);
  bool has_plan() const { return t_->paged_decode_plan != nullptr; }

  // paged_decode of `a` (its q / out pointing at io-dtype rows; split_meta and the partials are
  // ignored: this object's plan and workspace go instead) on `stream`: "" or the message.
  std::string decode(const PagedDecodeArgs& a, cudaStream_t stream);

 private:
  struct Sizes {
    size_t plan = 0, workspace = 0;
  };
  Sizes sizes(const DecodeShape& s, int table_stride, int max_splits) const;

  void* handle_ = nullptr;
  const kvcheck_backend* t_ = nullptr;
  int device_ = 0;
  int table_stride_ = 0, max_splits_ = 1;
  DevBuf plan_, ws_;
  std::vector<int32_t> lens_host_;
};

}  // namespace kv::bench
