// fi_plugin.cu — libkvcheck_backend_flashinfer.so: FlashInfer's FA2 CUDA kernels (header-only,
// pinned to 0.7.2 from its PyPI wheel: scripts/fetch-flashinfer.sh) behind kvcheck's backend ABI.
//
// What runs on FlashInfer: write_kv (its append kernels; fi_write.cu), paged_decode (its plan +
// batch decode, GQA, head dims 64 and 128; fi_decode.cu) and the prefill, in one of two
// modes chosen by `--backend-option prefill=paged|ragged`:
//   paged (default): the fused paged_prefill, its batch prefill over the paged cache with a causal
//     mask (fi_prefill.cu);
//   ragged: kvcheck's gather -> varlen -> merge chain with its ragged batch prefill as
//     varlen_attention and its MergeState as merge_states (fi_ragged.cu); attention layers only
//     (its ragged kernel has no 576 / 512 MLA shape), so the MLA layout is not declared.
// Decode and the paged prefill also run over the MLA latent cache (its FA2 MLA kernel, ckv 512 +
// kpe 64; fi_mla.cu). Caches of bf16 or fp8 e4m3 (its scales folded in around FlashInfer's
// kernels: fi_common.h). Every other op runs on kvcheck's built-in device, and the result's per-op
// counts say so. Declared conventions are FlashInfer's own: q / out in bf16, LSE base 2 with -inf
// for a row that attended nothing, graph-padded rows as rows of no pages (seq_len 0), decode steps
// captured into CUDA graphs (its plan is re-run on the host before each replay).
// `declare_lse=natural` makes a dishonest adapter on purpose: it declares natural-log LSE while
// FlashInfer writes base 2 (the contract check that must catch it: tests/gpu/conform_gpu.sh).
// Refuses to load on a GPU other than sm_90 (the kernels are compiled for it alone), on the host,
// and with an option it does not know. The version string carries FlashInfer's version and the
// wheel's sha256.
#include "backends/flashinfer/fi_fastdiv.cuh"  // first: see there

#include <cmath>
#include <cstring>
#include <string>

#include "backends/flashinfer/fi_common.h"

#ifndef KVFI_FLASHINFER_VERSION
#error "KVFI_FLASHINFER_VERSION must name the FlashInfer headers (backends/flashinfer/CMakeLists)"
#endif

namespace kvfi {

State& state() {
  static State s;
  return s;
}

void use_device() {
  State& st = state();
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess || dev != st.device) {
    (void)cudaGetLastError();
    check_cuda(cudaSetDevice(st.device), "cudaSetDevice");
  }
  if (st.num_sms == 0)
    check_cuda(cudaDeviceGetAttribute(&st.num_sms, cudaDevAttrMultiProcessorCount, st.device),
               "cudaDeviceGetAttribute");
}

void* staging(size_t bytes) {
  State& st = state();
  if (st.pinned_free) check_cuda(cudaEventSynchronize(st.pinned_free), "staging: event wait");
  if (bytes > st.pinned_bytes) {
    if (st.pinned) check_cuda(cudaFreeHost(st.pinned), "cudaFreeHost");
    st.pinned = nullptr;
    st.pinned_bytes = 0;
    check_cuda(cudaMallocHost(&st.pinned, bytes), "cudaMallocHost");
    st.pinned_bytes = bytes;
  }
  return st.pinned;
}

void staging_used(cudaStream_t stream) {
  State& st = state();
  if (!st.pinned_free)
    check_cuda(cudaEventCreateWithFlags(&st.pinned_free, cudaEventDisableTiming), "event");
  check_cuda(cudaEventRecord(st.pinned_free, stream), "cudaEventRecord");
}

}  // namespace kvfi

namespace {

using namespace kvfi;

constexpr const char* kVersion = "flashinfer " KVFI_FLASHINFER_VERSION;

// The ABI's entry point `op` over the plugin's `run(args, stream)`, through run_op.
#define KVFI_ENTRY(op, Args, run)                                                    \
  int32_t op(void*, const Args* a, void* stream, char* err, size_t n) {              \
    return run_op(#op, err, n, [&] { run(*a, static_cast<cudaStream_t>(stream)); }); \
  }
KVFI_ENTRY(paged_decode_plan, kvcheck_decode_plan_args, decode_plan)
KVFI_ENTRY(paged_decode, kvcheck_paged_decode_args, decode_run)
KVFI_ENTRY(paged_prefill, kvcheck_paged_prefill_args, prefill_run)
KVFI_ENTRY(write_kv, kvcheck_write_kv_args, write_run)
KVFI_ENTRY(varlen_attention, kvcheck_varlen_attention_args, varlen_run)
KVFI_ENTRY(merge_states, kvcheck_merge_states_args, merge_run)
#undef KVFI_ENTRY

size_t plan_bytes(void*, const kvcheck_size_query* q) {
  try {
    return q->op == KVCHECK_OP_PAGED_DECODE ? decode_plan_bytes(*q) : 0;
  } catch (const std::exception&) {
    return 0;  // the plan step then names what is wrong
  }
}

size_t workspace_bytes(void*, const kvcheck_size_query* q) {
  try {
    switch (q->op) {
      case KVCHECK_OP_PAGED_DECODE: return decode_workspace_bytes(*q);
      case KVCHECK_OP_PAGED_PREFILL: return prefill_workspace_bytes(*q);
      case KVCHECK_OP_WRITE_KV: return write_workspace_bytes(*q);
      case KVCHECK_OP_VARLEN_ATTENTION: return varlen_workspace_bytes(*q);
    }
    return 0;
  } catch (const std::exception&) {
    return 0;
  }
}

void destroy(void*) {
  State& st = state();
  if (st.pinned_free) cudaEventDestroy(st.pinned_free);
  if (st.pinned) cudaFreeHost(st.pinned);
  st.pinned_free = nullptr;
  st.pinned = nullptr;
  st.pinned_bytes = 0;
}

// --backend-option: comma-separated key=value.
struct Options {
  bool ragged = false;       // prefill=ragged
  bool lie_natural = false;  // declare_lse=natural
};

// Parses `text` into *o; "" or why not.
std::string parse_options(const char* text, Options* o) {
  std::string s = text ? text : "";
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    if (item == "prefill=paged") o->ragged = false;
    else if (item == "prefill=ragged") o->ragged = true;
    else if (item == "declare_lse=base2") o->lie_natural = false;
    else if (item == "declare_lse=natural") o->lie_natural = true;
    else
      return "unknown option \"" + item + "\" (known: prefill=paged|ragged, " +
             "declare_lse=base2|natural)";
  }
  return "";
}

kvcheck_backend make_table(const Options& o) {
  kvcheck_backend b{};
  b.struct_size = sizeof(b);
  b.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  b.name = "flashinfer";
  b.version = kVersion;
  kvcheck_caps& c = b.caps;
  c.struct_size = sizeof(c);
  c.cache_dtypes = KVCHECK_DTYPE_BIT(KVCHECK_BF16) | KVCHECK_DTYPE_BIT(KVCHECK_FP8_E4M3);
  c.layouts = KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_SEPARATE) |
              KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_KV_INTERLEAVED);
  if (!o.ragged) c.layouts |= KVCHECK_LAYOUT_BIT(KVCHECK_LAYOUT_MLA_LATENT);
  c.mla_dims = kMlaDims;
  c.num_mla_dims = 1;
  c.io_dtype = KVCHECK_BF16;
  c.head_dims = kHeadDims;
  c.num_head_dims = static_cast<int32_t>(sizeof(kHeadDims) / sizeof(kHeadDims[0]));
  c.block_sizes = nullptr;  // any page size
  c.lse_base = o.lie_natural ? KVCHECK_LSE_NATURAL : KVCHECK_LSE_BASE2;
  c.empty_row_lse = -INFINITY;
  c.pad_seq_len = 0;   // a padded row is a request of no pages
  c.pad_block_id = 0;  // never read: only a row's own pages are packed
  c.needs_zeroed_blocks = 0;
  c.graph_support = KVCHECK_GRAPHS_DECODE;
  c.gqa_ratios = kGqaRatios;
  c.num_gqa_ratios = static_cast<int32_t>(sizeof(kGqaRatios) / sizeof(kGqaRatios[0]));
  b.write_kv = write_kv;
  b.paged_decode = paged_decode;
  if (o.ragged) {
    b.varlen_attention = varlen_attention;
    b.merge_states = merge_states;
  } else {
    b.paged_prefill = paged_prefill;
  }
  b.paged_decode_plan = paged_decode_plan;
  b.plan_bytes = plan_bytes;
  b.workspace_bytes = workspace_bytes;
  b.destroy = destroy;
  return b;
}

void put(char* err, size_t n, const std::string& s) {
  if (err && n) snprintf(err, n, "%s", s.c_str());
}

}  // namespace

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  static kvcheck_backend table;
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION) {
    put(err, err_size, "flashinfer: speaks ABI version " +
                           std::to_string(KVCHECK_BACKEND_ABI_VERSION) + ", not " +
                           std::to_string(abi_version));
    return nullptr;
  }
  if (host == nullptr || host->device.device_type != kDLCUDA) {
    put(err, err_size, "flashinfer: runs on CUDA GPUs only (use --device cuda)");
    return nullptr;
  }
  Options options;
  const std::string bad = parse_options(host->options, &options);
  if (!bad.empty()) {
    put(err, err_size, "flashinfer: " + bad);
    return nullptr;
  }
  state().device = host->device.device_id;
  int major = 0, minor = 0;
  cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                         state().device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, state().device);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    put(err, err_size, std::string("flashinfer: cannot read GPU ") +
                           std::to_string(state().device) + ": " + cudaGetErrorString(e));
    return nullptr;
  }
  if (major != 9 || minor != 0) {
    put(err, err_size, "flashinfer: built for sm_90 only; GPU " +
                           std::to_string(state().device) + " is sm_" + std::to_string(major) +
                           std::to_string(minor));
    return nullptr;
  }
  table = make_table(options);
  return &table;
}
