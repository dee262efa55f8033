// conform_support.cpp — the shape grid, random data, host caches and comparisons of `kvcheck
// conform` (conform_support.h).
#include "conform/conform_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "backend/abi_tensor.h"

namespace kv::conform {

namespace {

// Values of `wanted` the caps' list accepts (a NULL list accepts all), and the list's own first
// two (what the backend says it takes is tested even where kvcheck's picks miss it).
std::vector<int32_t> pick(const int32_t* caps, int32_t n, std::vector<int32_t> wanted) {
  if (caps == nullptr || n <= 0) return wanted;
  std::vector<int32_t> out;
  for (int32_t w : wanted)
    if (std::find(caps, caps + n, w) != caps + n) out.push_back(w);
  for (int32_t i = 0; i < std::min(n, 2); ++i)
    if (std::find(out.begin(), out.end(), caps[i]) == out.end()) out.push_back(caps[i]);
  return out;
}

}  // namespace

std::string CacheCase::describe() const {
  const std::string latent =
      layout == KVCHECK_LAYOUT_MLA_LATENT ? fmt::format(" ({}+{})", v_dim(), rope_dim) : "";
  return fmt::format("{} {} bs={} hd={}{}", backend::dtype_name(backend::to_abi(dtype)),
                     backend::layout_name(layout), block_size, head_dim, latent);
}

std::vector<CacheCase> cache_grid(const kvcheck_caps& caps, std::string* note) {
  std::vector<DType> dtypes;
  for (DType d : {DType::f32, DType::bf16, DType::fp8_e4m3})
    if (caps.cache_dtypes == 0 || (caps.cache_dtypes & KVCHECK_DTYPE_BIT(static_cast<int>(d))))
      dtypes.push_back(d);
  if (dtypes.empty() && note) *note = "no cache dtype of f32, bf16, fp8_e4m3 in its caps";
  std::vector<kvcheck_kv_layout> layouts;
  for (auto l : {KVCHECK_LAYOUT_KV_SEPARATE, KVCHECK_LAYOUT_KV_INTERLEAVED,
                 KVCHECK_LAYOUT_MLA_LATENT})
    if (caps.layouts == 0 || (caps.layouts & KVCHECK_LAYOUT_BIT(l))) layouts.push_back(l);
  const auto block_sizes = pick(caps.block_sizes, caps.num_block_sizes, {1, 3, 7, 16});
  const auto head_dims = pick(caps.head_dims, caps.num_head_dims, {16, 64});
  // MLA latent rows (kv_lora_rank + qk_rope_dim): the caps' pairs (first two), else 3/4 + 1/4 of
  // each head dim.
  std::vector<std::pair<int32_t, int32_t>> mla;
  if (caps.mla_dims != nullptr)
    for (int32_t i = 0; i < std::min(caps.num_mla_dims, 2); ++i)
      mla.emplace_back(caps.mla_dims[2 * i] + caps.mla_dims[2 * i + 1], caps.mla_dims[2 * i + 1]);
  else
    for (int32_t hd : head_dims) mla.emplace_back(hd, hd / 4);
  std::vector<CacheCase> grid;
  for (DType d : dtypes)
    for (auto l : layouts)
      for (int32_t bs : block_sizes) {
        if (l == KVCHECK_LAYOUT_MLA_LATENT) {
          for (auto [hd, rope] : mla) grid.push_back({d, l, bs, hd, rope});
        } else {
          for (int32_t hd : head_dims) grid.push_back({d, l, bs, hd, 0});
        }
      }
  return grid;
}

std::vector<int32_t> seq_lens(std::mt19937_64& rng, int32_t batch, int32_t block_size,
                              bool allow_empty, bool last_padded) {
  std::vector<int32_t> lens;
  const int32_t kinds = allow_empty ? 5 : 4;
  const int32_t salt = static_cast<int32_t>(rng() % kinds);
  for (int32_t i = 0; i < batch; ++i) {
    const int32_t r = static_cast<int32_t>(rng() % 8);
    switch ((i + salt) % kinds) {
      case 0: lens.push_back(1); break;
      case 1: lens.push_back(2 * r + 3); break;                               // odd
      case 2: lens.push_back(block_size * (1 + r % 3)); break;                // whole blocks
      case 3: lens.push_back(block_size * (2 + r % 2) + 1 + r % block_size); break;  // several
      default: lens.push_back(0); break;                                      // empty
    }
  }
  if (last_padded && batch >= 3) lens.back() = -1;
  return lens;
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> nan_floats(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

std::string list(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- HostCache ----

HostCache::HostCache(const CacheCase& c, int32_t num_blocks, std::mt19937_64& rng) {
  const int32_t heads = c.kv_heads();
  bytes_.resize(static_cast<size_t>(
      layer_cache_bytes(num_blocks, c.block_size, heads, c.head_dim, c.dtype)));
  const KvLayout layout =
      c.layout == KVCHECK_LAYOUT_KV_INTERLEAVED ? KvLayout::kv_interleaved : KvLayout::kv_separate;
  kv_ = make_paged_kv(bytes_.data(), layout, c.dtype, num_blocks, c.block_size, heads,
                      c.head_dim);
  if (c.layout == KVCHECK_LAYOUT_MLA_LATENT) {  // one latent row per token: V is K
    kv_.v = kv_.k;
    kv_.v_stride_block = kv_.k_stride_block;
  }
  if (c.dtype == DType::fp8_e4m3) {  // awkward but exact scales
    kv_.k_scale = 0.5f;
    kv_.v_scale = c.layout == KVCHECK_LAYOUT_MLA_LATENT ? 0.5f : 2.0f;
  }
  k_off_ = static_cast<uint8_t*>(kv_.k) - bytes_.data();
  v_off_ = static_cast<uint8_t*>(kv_.v) - bytes_.data();
  const int64_t elems = static_cast<int64_t>(bytes_.size()) / dtype_size(c.dtype);
  const auto vals = random_floats(rng, static_cast<size_t>(elems), -2.f, 2.f);
  for (int64_t i = 0; i < elems; ++i) store_from_f32(bytes_.data(), i, c.dtype, vals[i]);
}

void HostCache::rebase() {
  kv_.k = bytes_.data() + k_off_;
  kv_.v = bytes_.data() + v_off_;
}

std::vector<int32_t> HostCache::shuffled_blocks(int32_t num_blocks, std::mt19937_64& rng) {
  std::vector<int32_t> ids;
  for (int32_t b = 1; b < num_blocks; ++b) ids.push_back(b);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

// ---- comparisons ----

std::string compare_exact(const uint8_t* got, const uint8_t* want, size_t bytes, DType dtype,
                          double* max_abs) {
  const size_t es = static_cast<size_t>(dtype_size(dtype));
  std::string first;
  *max_abs = 0.0;
  for (size_t i = 0; i + es <= bytes; i += es) {
    if (memcmp(got + i, want + i, es) == 0) continue;
    const int64_t idx = static_cast<int64_t>(i / es);
    const double g = load_as_f32(got, idx, dtype), w = load_as_f32(want, idx, dtype);
    const double inf = std::numeric_limits<double>::infinity();
    const double d = std::isfinite(g) && std::isfinite(w) ? std::fabs(g - w) : inf;
    *max_abs = std::max(*max_abs, d);
    if (first.empty()) first = fmt::format("element {}: got {} want {}", idx, g, w);
  }
  return first;
}

double rel_l2(const float* got, const float* want, int64_t n) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]) && std::isfinite(want[i]))
      return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  if (num != num) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-6);
}

void Tally::add(const std::string& case_desc, const std::string& why, double error) {
  ++r_->cases;
  if (!(error <= r_->worst_error)) r_->worst_error = error;  // NaN sticks
  if (why.empty()) {
    ++r_->passed;
    return;
  }
  if (r_->first_failure.empty()) r_->first_failure = case_desc + ": " + why;
}

std::string fmt_err(double e) {
  if (e != e) return "nan";
  if (std::isinf(e)) return "inf";
  return fmt::format("{:.2e}", e);
}

DType io_dtype(const kvcheck_caps& caps) {
  return caps.io_dtype == KVCHECK_BF16  ? DType::bf16
         : caps.io_dtype == KVCHECK_F16 ? DType::f16
                                        : DType::f32;
}

std::vector<float> round_to(std::vector<float> v, DType io) {
  if (io == DType::f32) return v;
  std::vector<uint8_t> b(static_cast<size_t>(dtype_size(io)));
  for (float& x : v) {
    store_from_f32(b.data(), 0, io, x);
    x = load_as_f32(b.data(), 0, io);
  }
  return v;
}

std::vector<uint8_t> encode(const std::vector<float>& v, DType io) {
  std::vector<uint8_t> b(v.size() * static_cast<size_t>(dtype_size(io)));
  for (size_t i = 0; i < v.size(); ++i)
    store_from_f32(b.data(), static_cast<int64_t>(i), io, v[i]);
  return b;
}

std::vector<float> decode(const std::vector<uint8_t>& bytes, DType io) {
  std::vector<float> v(bytes.size() / static_cast<size_t>(dtype_size(io)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = load_as_f32(bytes.data(), static_cast<int64_t>(i), io);
  return v;
}

double io_rounding(DType io) {
  return io == DType::bf16 ? std::ldexp(1.0, -8) : io == DType::f16 ? std::ldexp(1.0, -11) : 0.0;
}

void retype_io(kvcheck_tensor& t, DType io) {
  if (t.dl.data != nullptr) backend::retype(t, backend::to_abi(io));
}

std::string compare_head(const kvcheck_caps& caps, double tol_out, double tol_lse,
                         const float* got, const float* want, int32_t vd, const float* got_lse,
                         const float* want_lse, double* worst) {
  const double e = rel_l2(got, want, vd);
  if (!(e <= *worst)) *worst = e;
  if (!(e <= tol_out)) return "out rel err " + fmt_err(e);
  if (got_lse == nullptr) return "";
  double gl = *got_lse;
  if (caps.lse_base == KVCHECK_LSE_BASE2) gl *= std::log(2.0);
  const double wl = *want_lse;
  const double le = std::fabs(gl - wl) / std::max(1.0, std::fabs(wl));
  if (!(le <= *worst)) *worst = le;
  if (!(le <= tol_lse)) return fmt::format("lse {} want {}", gl, wl);
  return "";
}

std::string compare_row(const Target& t, const float* got, const float* want,
                        const float* got_lse, const float* want_lse, int32_t row, int32_t heads,
                        int32_t vd, double* worst) {
  for (int32_t h = 0; h < heads; ++h) {
    const size_t o = (static_cast<size_t>(row) * heads + h) * vd;
    const size_t l = static_cast<size_t>(row) * heads + h;
    const std::string why =
        compare_head(t.b.caps, t.out_tol(), t.opt.attention_tolerance, got + o, want + o, vd,
                     got_lse ? got_lse + l : nullptr, want_lse + l, worst);
    if (!why.empty()) return fmt::format("head {}: {}", h, why);
  }
  return "";
}

}  // namespace kv::conform
