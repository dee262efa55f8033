// fi_common.h — what the files of the FlashInfer plugin share: the plugin's state (the GPU
// kvcheck named, its SM count, a pinned staging buffer for the plans' host-to-device copies), the
// op wrapper that turns exceptions and CUDA errors into KVCHECK_ERROR with a message, and readers
// of the ABI's tensors. The plugin is written against include/kvcheck/backend.h alone, as a backend
// author's adapter would be: no kvcheck internals.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvcheck/backend.h"

namespace kvfi {

// A failure the op reports as its error message.
struct OpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw OpError(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                  ")");
}

struct State {
  int device = 0;
  int num_sms = 0;  // of `device`, read at the first op
  // Pinned host memory the plans stage their device copies in, and the event after the last copy
  // out of it: a plan waits for it before writing the buffer again.
  void* pinned = nullptr;
  size_t pinned_bytes = 0;
  cudaEvent_t pinned_free = nullptr;
  std::mutex mu;
};
State& state();

// Makes kvcheck's GPU current on this thread (kvcheck and this plugin each link their own static
// CUDA runtime over one driver context: see backends/builtin/cuda_backend.cu) and reads its SM
// count once.
void use_device();

// Pinned staging of at least `bytes`, after the previous plan's copies out of it have run.
void* staging(size_t bytes);
// Marks the copies just queued on `stream` as the last readers of the staging buffer.
void staging_used(cudaStream_t stream);

// Runs one op: its body throws OpError (or anything) to fail; then the launch check.
template <class F>
int32_t run_op(const char* op, char* err, size_t err_size, F&& body) {
  try {
    use_device();
    body();
    check_cuda(cudaGetLastError(), "kernel launch");
    return KVCHECK_OK;
  } catch (const std::exception& e) {
    if (err && err_size) snprintf(err, err_size, "%s: %s", op, e.what());
    return KVCHECK_ERROR;
  }
}

// ---- element types and the fp8 cache's scales (fi_fp8.cu) ----

using bf16 = __nv_bfloat16;
using fp8 = __nv_fp8_e4m3;

inline void check_cache_dtype(int32_t dtype) {
  if (dtype != KVCHECK_BF16 && dtype != KVCHECK_FP8_E4M3)
    throw OpError("cache dtype must be bf16 or fp8_e4m3");
}

// An fp8 cache holds value / scale. FlashInfer's kernels read the e4m3 codes as values: the
// adapter folds k_scale into the softmax scale and multiplies the output rows by v_scale after
// (MLA: the latent row is K and V, both k_scale); 1 for a bf16 cache.
inline float k_scale_of(const kvcheck_paged_kv& c) {
  return c.dtype == KVCHECK_FP8_E4M3 ? c.k_scale : 1.0f;
}
inline float v_scale_of(const kvcheck_paged_kv& c) {
  return c.dtype == KVCHECK_FP8_E4M3 ? c.v_scale : 1.0f;
}
// out [rows][heads][dim] (bf16, any row stride) *= s, on the stream; nothing when s == 1.
void scale_rows(const kvcheck_tensor& out, int32_t rows, float s, cudaStream_t stream);

// ---- the ABI's tensors ----

inline void* data(const kvcheck_tensor& t) {
  return t.dl.data ? static_cast<char*>(t.dl.data) + t.dl.byte_offset : nullptr;
}
template <class T>
T* data_as(const kvcheck_tensor& t) {
  return static_cast<T*>(data(t));
}
inline int64_t stride(const kvcheck_tensor& t, int dim) {
  return t.dl.strides && dim < t.dl.ndim ? t.dl.strides[dim] : 0;
}
inline int64_t extent(const kvcheck_tensor& t, int dim) {
  return t.dl.shape && dim < t.dl.ndim ? t.dl.shape[dim] : 0;
}

// The supported shapes: FlashInfer's FA2 kernels as compiled into this plugin.
inline constexpr int32_t kHeadDims[] = {64, 128};  // attention layers
inline constexpr int32_t kMlaDims[] = {512, 64};   // MLA: ckv 512 + kpe 64
inline constexpr int32_t kGqaRatios[] = {1, 2, 3, 4, 6, 8, 16};  // its decode's group sizes

inline constexpr size_t kAlign = 256;
inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// PrefillPlan's int workspace without split-KV: its work items are (sequence, tile of CTA_TILE_Q
// >= 16 packed rows), at most rows * group / 16 + seqs; five int arrays of them, 16-byte aligned.
inline size_t prefill_int_ws_bytes(int64_t rows, int64_t seqs, int64_t group) {
  return align_up(static_cast<size_t>(32 * (rows * std::max<int64_t>(group, 1) / 16 + seqs + 8)) +
                  4096);
}

// Where FlashInfer's int workspace and a call's page lists in CSR form sit in one buffer, for
// `seqs` sequences of at most `blocks_per_seq` pages: [0, int_ws) the int workspace, then
// indptr [seqs + 1], last_page_len [seqs], indices [seqs * blocks_per_seq].
struct CsrRegions {
  size_t indptr, last_page_len, indices, end;
};
inline CsrRegions csr_regions(size_t int_ws, int64_t seqs, int64_t blocks_per_seq) {
  CsrRegions r;
  r.indptr = int_ws;
  r.last_page_len = r.indptr + align_up(4 * static_cast<size_t>(seqs + 1));
  r.indices = r.last_page_len + align_up(4 * static_cast<size_t>(seqs));
  r.end = r.indices + 4 * static_cast<size_t>(seqs) * std::max<int64_t>(blocks_per_seq, 1);
  return r;
}

// A decode plan step's regions in its plan buffer: the step's rows and block size checked, the
// regions `regions_of(rows, blocks_per_row)` lays out, and the buffer checked to hold them (else
// OpError naming plan_bytes).
template <class RegionsOf>
CsrRegions checked_plan_regions(const kvcheck_decode_plan_args& a, RegionsOf regions_of) {
  if (a.num_rows < 0 || a.block_size <= 0) throw OpError("bad num_rows / block_size");
  const CsrRegions reg = regions_of(a.num_rows, a.max_blocks_per_seq);
  const size_t plan_bytes = static_cast<size_t>(extent(a.plan, 0));
  if (data(a.plan) == nullptr || plan_bytes < reg.end)
    throw OpError("plan: " + std::to_string(plan_bytes) + " bytes, this step needs " +
                  std::to_string(reg.end) + " (plan_bytes)");
  return reg;
}

// A batch's page lists on the host, as FlashInfer's planners take them: sequence s of lens[s]
// tokens (<= 0: none) has ceil(lens[s] / block_size) pages, at most max_pages (its block table's
// row; more throws OpError naming it); indptr [n + 1], last_page_len [n] (0 without pages).
struct HostPages {
  std::vector<int32_t> indptr, last_page_len;
};
HostPages host_pages(const std::vector<int32_t>& lens, int32_t block_size, int32_t max_pages);

// The host lengths of a step's decode rows (seq_lens_host, negatives as 0) and of a prefill call's
// sequences (cached context + new tokens).
std::vector<int32_t> decode_lens(const kvcheck_decode_plan_args& a);
std::vector<int32_t> prefill_lens(const kvcheck_paged_prefill_args& a);

// What a plan step left for the decode that reads its plan buffer (one per paged layer kind): the
// planner's info and the step's shape, by plan buffer address. put() under state().mu; get()
// takes it, and checks the decode's step against the plan's (throws OpError).
template <class Info>
struct Planned {
  Info info;
  int32_t rows = 0, block_size = 0, blocks_per_row = 0;
};
template <class Info>
class PlanStore {
 public:
  void put(const void* plan, const Planned<Info>& p) { plans_[plan] = p; }
  Planned<Info> get(const kvcheck_paged_decode_args& a) const {
    Planned<Info> p;
    {
      std::lock_guard<std::mutex> lock(state().mu);
      auto it = plans_.find(data(a.plan));
      if (it == plans_.end()) throw OpError("no plan in this plan buffer: paged_decode_plan first");
      p = it->second;
    }
    if (a.num_rows != p.rows || a.cache.block_size != p.block_size)
      throw OpError("the step's rows / block size differ from its plan's");
    if (extent(a.block_table, 1) != p.blocks_per_row)
      throw OpError("block table row length differs from the plan's max_blocks_per_seq");
    return p;
  }

 private:
  std::map<const void*, Planned<Info>> plans_;
};

// Page lists in CSR form from kvcheck's block table (fi_pages.cu): row r's first
// indptr[r+1] - indptr[r] entries of table[r * stride ...] into indices[indptr[r] ...], on the
// stream (indptr in device memory).
void pack_pages(const int32_t* table, int64_t stride, const int32_t* indptr, int32_t* indices,
                int32_t rows, cudaStream_t stream);

// ---- ops (fi_decode.cu, fi_prefill.cu) ----

size_t decode_plan_bytes(const kvcheck_size_query& q);
size_t decode_workspace_bytes(const kvcheck_size_query& q);
void decode_plan(const kvcheck_decode_plan_args& a, cudaStream_t stream);
void decode_run(const kvcheck_paged_decode_args& a, cudaStream_t stream);
size_t prefill_workspace_bytes(const kvcheck_size_query& q);
// MLA (fi_mla.cu): decode and the fused prefill over the latent cache.
size_t mla_plan_bytes(const kvcheck_size_query& q);
size_t mla_workspace_bytes(const kvcheck_size_query& q);
void mla_plan(const kvcheck_decode_plan_args& a, cudaStream_t stream);
void mla_run(const kvcheck_paged_decode_args& a, cudaStream_t stream);
size_t mla_prefill_workspace_bytes(const kvcheck_size_query& q);
void mla_prefill_run(const kvcheck_paged_prefill_args& a, cudaStream_t stream);
void prefill_run(const kvcheck_paged_prefill_args& a, cudaStream_t stream);
// write_kv through its append kernels (fi_write.cu).
size_t write_workspace_bytes(const kvcheck_size_query& q);
void write_run(const kvcheck_write_kv_args& a, cudaStream_t stream);
// The ragged-prefill mode (fi_ragged.cu): varlen_attention through its ragged batch prefill,
// merge_states through its MergeState.
size_t varlen_workspace_bytes(const kvcheck_size_query& q);
void varlen_run(const kvcheck_varlen_attention_args& a, cudaStream_t stream);
void merge_run(const kvcheck_merge_states_args& a, cudaStream_t stream);

}  // namespace kvfi
