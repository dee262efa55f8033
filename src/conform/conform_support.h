// conform_support.h — what the per-op checks of `kvcheck conform` share: the shape grid the
// backend's caps allow, random inputs, a paged cache in host memory, the call into the plugin and
// the comparisons that decide a case.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/abi_convert.h"
#include "conform/conform.h"
#include "conform/conform_staging.h"
#include "device/device.h"
#include "kernels/paged_kv.cuh"
#include "kvcheck/backend.h"

namespace kv::conform {

// ---- the grid ----

// One cache shape of the grid: dtype, layout, block size, head dim (kv heads follow the layout).
struct CacheCase {
  DType dtype = DType::f32;
  kvcheck_kv_layout layout = KVCHECK_LAYOUT_KV_SEPARATE;
  int32_t block_size = 1;
  int32_t head_dim = 16;
  int32_t rope_dim = 0;  // MLA: the latent row's last rope_dim features (V is the rest)
  int32_t kv_heads() const { return layout == KVCHECK_LAYOUT_MLA_LATENT ? 1 : 2; }
  // MLA: V is the first v_dim latent features.
  int32_t v_dim() const {
    return layout == KVCHECK_LAYOUT_MLA_LATENT ? head_dim - rope_dim : head_dim;
  }
  std::string describe() const;
};

// dtypes caps ∩ {f32, bf16, fp8_e4m3}, layouts caps ∩ all three, block sizes {1, 3, 7, 16} ∩
// caps (or the caps' first two), head dims from caps (first two) or {16, 64}. `note` receives
// what the caps left out.
std::vector<CacheCase> cache_grid(const kvcheck_caps& caps, std::string* note);
inline constexpr int32_t kBatches[] = {1, 3, 5};
inline constexpr int32_t kGqa[] = {1, 4};

// Sequence lengths of a batch: single-token, odd, whole blocks, several blocks; with
// `last_padded` the last of 3 or more is padded (length -1 here: the caller marks it).
std::vector<int32_t> seq_lens(std::mt19937_64& rng, int32_t batch, int32_t block_size,
                              bool allow_empty, bool last_padded);

// ---- data ----

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float lo = -1.f, float hi = 1.f);
std::vector<float> nan_floats(size_t n);
std::string list(const std::vector<int32_t>& v);  // "[1,7,0]"

// One layer's paged cache in host memory, every element random (finite) in the cache dtype.
class HostCache {
 public:
  HostCache(const CacheCase& c, int32_t num_blocks, std::mt19937_64& rng);
  HostCache(const HostCache& o) : bytes_(o.bytes_), kv_(o.kv_), k_off_(o.k_off_), v_off_(o.v_off_) {
    rebase();
  }
  HostCache& operator=(const HostCache&) = delete;
  const PagedKv& kv() const { return kv_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }  // to stage as an output
  // Block ids 1 .. num_blocks-1 in random order (block 0 is the null block).
  static std::vector<int32_t> shuffled_blocks(int32_t num_blocks, std::mt19937_64& rng);

 private:
  void rebase();
  std::vector<uint8_t> bytes_;
  PagedKv kv_;
  size_t k_off_ = 0, v_off_ = 0;
};

// ---- calls and comparisons ----

// Bitwise equality of two byte buffers seen as elements of `dtype`: "" or where they first differ;
// *max_abs gets the largest absolute difference of the values (inf when one is NaN).
std::string compare_exact(const uint8_t* got, const uint8_t* want, size_t bytes, DType dtype,
                          double* max_abs);

// Relative L2 error of one row of n values; inf when `got` has a NaN/Inf where `want` is finite.
double rel_l2(const float* got, const float* want, int64_t n);

// Tracks one op's cases.
class Tally {
 public:
  explicit Tally(OpReport* r) : r_(r) {}
  // why == "": the case passed. error: its worst error (counts toward worst_error either way).
  void add(const std::string& case_desc, const std::string& why, double error);

 private:
  OpReport* r_;
};

std::string fmt_err(double e);  // "3.1e-07", "nan", "inf"

// ---- q / out of the attention ops in the backend's io dtype (f32, bf16, f16) ----

// The caps' io dtype as kvcheck's DType.
DType io_dtype(const kvcheck_caps& caps);
// Values rounded through `io`: what the plugin can be given, so both sides read the same inputs.
std::vector<float> round_to(std::vector<float> v, DType io);
// f32 values as `io` elements (exact for values round_to gave) and back.
std::vector<uint8_t> encode(const std::vector<float>& v, DType io);
std::vector<float> decode(const std::vector<uint8_t>& bytes, DType io);
// The rounding of an output to `io` (its unit roundoff: 0 for f32, 2^-8 bf16, 2^-11 f16): the
// relative L2 error of a row the plugin computed exactly and stored in `io` is at most this, so
// it is added to the out tolerance (never to the lse's, which is float32 in the ABI).
double io_rounding(DType io);
// After AbiBuilder (which writes f32): the tensor's elements are `io`, at the same strides.
void retype_io(kvcheck_tensor& t, DType io);

// One (row, head) of an attention op: out by relative L2 over vd values within tol_out, then the
// lse (read in the backend's declared base) within tol_lse when got_lse is given. "" or why;
// *worst keeps the largest error.
std::string compare_head(const kvcheck_caps& caps, double tol_out, double tol_lse,
                         const float* got, const float* want, int32_t vd, const float* got_lse,
                         const float* want_lse, double* worst);

// Per-op checks (conform_cache.cpp, conform_attention.cpp).
struct Target {
  const kvcheck_backend& b;
  const ConformOptions& opt;
  Device& device;  // where the plugin's buffers live (conform_staging.h)
  DLDevice dl;     // the plugin's device: kDLCPU, or kDLCUDA and the GPU's index
  DType io() const { return io_dtype(b.caps); }
  // The attention ops' tolerance of out: the option's plus the io dtype's rounding.
  double out_tol() const { return opt.attention_tolerance + io_rounding(io()); }
  // The scratch the backend asks for one call (workspace_bytes of q; empty for 0 or no answer).
  std::vector<uint8_t> workspace(const kvcheck_size_query& q) const {
    return std::vector<uint8_t>(b.workspace_bytes ? b.workspace_bytes(b.self, &q) : 0, 0);
  }
  // The scratch of the call `a` describes, handed to it (a.workspace nullptr when it asks none).
  template <class Args>
  std::vector<uint8_t> give_workspace(Args& a) const {
    std::vector<uint8_t> work = workspace(backend::size_query(a));
    a.workspace = work.empty() ? nullptr : work.data();
    a.workspace_bytes = work.size();
    return work;  // moved: the buffer a points at stays
  }
};

// The cases of an attention op over the paged cache (paged_decode, paged_prefill): every cache
// shape t's caps allow (what they leave out goes to r's note), query heads per kv head (kGqa)
// and batch size (kBatches); the backend is asked for the lse in every other case. The op's
// random inputs come from its own stream, seeded t.opt.seed + seed_offset.
// body(cache, batch, q_heads, want_lse, rng).
template <class Body>
void for_each_attention_case(const Target& t, OpReport* r, uint64_t seed_offset, Body body) {
  std::mt19937_64 rng(t.opt.seed + seed_offset);
  int case_no = 0;
  for (const CacheCase& c : cache_grid(t.b.caps, &r->note))
    for (int32_t gqa : kGqa)
      for (int32_t batch : kBatches)
        body(c, batch, c.kv_heads() * gqa, (case_no++ % 2) == 0, rng);
}

// compare_head over the heads of one row of out [rows][heads][vd] and lse [rows][heads] (got_lse
// nullptr: the lse was not asked): "" or "head H: why".
std::string compare_row(const Target& t, const float* got, const float* want,
                        const float* got_lse, const float* want_lse, int32_t row, int32_t heads,
                        int32_t vd, double* worst);
void check_write_kv(const Target& t, OpReport* r);
void check_paged_decode(const Target& t, OpReport* r);
void check_paged_prefill(const Target& t, OpReport* r);
void check_gather_kv(const Target& t, OpReport* r);
void check_fill_blocks(const Target& t, OpReport* r);
void check_varlen_attention(const Target& t, OpReport* r);
void check_merge_states(const Target& t, OpReport* r);
void check_quant_fp8(const Target& t, OpReport* r);
void check_linear_attention(const Target& t, OpReport* r);

}  // namespace kv::conform
