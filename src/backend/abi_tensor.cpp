// abi_tensor.cpp — dtype codes, names and the ABI tensor reader (abi_tensor.h).
#include "backend/abi_tensor.h"

#include "backend/abi_fields.h"
#include "ops/op_table.h"

namespace kv::backend {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

bool same_dl(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string dl_name(DLDataType t) {
  return "{code " + str(t.code) + ", bits " + str(t.bits) + ", lanes " + str(t.lanes) + "}";
}

}  // namespace

const char* dtype_name(int32_t d) {
  switch (d) {
    case KVCHECK_F32: return "f32";
    case KVCHECK_F16: return "f16";
    case KVCHECK_BF16: return "bf16";
    case KVCHECK_FP8_E4M3: return "fp8_e4m3";
    case KVCHECK_I32: return "i32";
    case KVCHECK_I64: return "i64";
    case KVCHECK_U8: return "u8";
  }
  return "unknown dtype";
}

const char* layout_name(int32_t l) {
  switch (l) {
    case KVCHECK_LAYOUT_KV_SEPARATE: return "kv_separate";
    case KVCHECK_LAYOUT_KV_INTERLEAVED: return "kv_interleaved";
    case KVCHECK_LAYOUT_MLA_LATENT: return "mla_latent";
  }
  return "unknown layout";
}

const char* fill_pattern_name(int32_t p) {
  switch (p) {
    case KVCHECK_FILL_ZERO: return "zero";
    case KVCHECK_FILL_NAN: return "nan";
    case KVCHECK_FILL_INF: return "inf";
    case KVCHECK_FILL_RANDOM_BITS: return "random_bits";
  }
  return "unknown pattern";
}

const char* op_name(kvcheck_op op) {
  const DeviceOpInfo* row = find_abi_op(op);
  return row ? row->name.data() : "unknown";
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (int32_t op = 0; op < KVCHECK_NUM_OPS; ++op) names.emplace_back(find_abi_op(op)->name);
  return names;
}

kvcheck_kv_layout layout_of(const PagedKv& c) {
  if (c.v == c.k) return KVCHECK_LAYOUT_MLA_LATENT;
  const int64_t page = page_elems(c);
  const char* k = static_cast<const char*>(c.k);
  if (c.k_stride_block == 2 * page && k + page * dtype_size(c.dtype) == c.v)
    return KVCHECK_LAYOUT_KV_INTERLEAVED;
  return KVCHECK_LAYOUT_KV_SEPARATE;
}

// ---- AbiReader ------------------------------------------------------------------------------

void AbiReader::fail(const char* what, const std::string& why) {
  if (err_.empty()) err_ = std::string(op_) + ": " + what + ": " + why;
}

bool AbiReader::struct_size(const char* what, uint32_t got, size_t v1_size) {
  if (got < v1_size)
    fail(what, "struct_size " + str(got) + " is less than the v1 size " + str(v1_size));
  return ok();
}

int32_t AbiReader::count(const char* what, int32_t n) {
  if (n < 0) fail(what, "is negative (" + str(n) + ")");
  return n;
}

void* AbiReader::tensor(const kvcheck_tensor& t, const char* what, int32_t dtype,
                        std::initializer_list<int64_t> shape,
                        std::initializer_list<int64_t> strides) {
  if (!ok() || t.dl.data == nullptr) return nullptr;
  const int ndim = static_cast<int>(shape.size());
  if (dtype != KVCHECK_U8 && t.dtype != dtype)
    fail(what, std::string("dtype is ") + dtype_name(t.dtype) + ", expected " +
                   dtype_name(dtype));
  else if (!same_dl(t.dl.dtype, dl_dtype(dtype)))
    fail(what, "dl.dtype " + dl_name(t.dl.dtype) + " does not match " + dtype_name(dtype) + " " +
                   dl_name(dl_dtype(dtype)));
  else if (t.dl.ndim != ndim)
    fail(what, "ndim is " + str(t.dl.ndim) + ", expected " + str(ndim));
  else if (t.dl.shape == nullptr || t.dl.strides == nullptr)
    fail(what, "shape and strides must not be NULL");
  else if (t.dl.strides[ndim - 1] != 1)
    fail(what, "the innermost stride is " + str(t.dl.strides[ndim - 1]) + ", expected 1");
  int d = 0;
  for (int64_t want : shape) {
    const int64_t got = ok() ? t.dl.shape[d] : want;
    if (want >= 0 && (d == 0 ? got < want : got != want))
      fail(what, "shape[" + str(d) + "] is " + str(got) + ", expected " +
                     (d == 0 ? "at least " : "") + str(want));
    ++d;
  }
  d = 0;
  for (int64_t want : strides) {
    const int64_t got = ok() ? t.dl.strides[d] : want;
    if (want >= 0 && got != want)
      fail(what, "strides[" + str(d) + "] is " + str(got) + ", expected " + str(want) +
                     " (kvcheck's descriptor has no stride for this dimension)");
    ++d;
  }
  if (!ok()) return nullptr;
  return static_cast<char*>(t.dl.data) + t.dl.byte_offset;
}

size_t AbiReader::bytes(const kvcheck_tensor& t, const char* what) {
  return tensor(t, what, KVCHECK_U8, {-1}, {1}) ? static_cast<size_t>(t.dl.shape[0]) : 0;
}

DType AbiReader::cache_dtype(const char* what, int32_t d) {
  if (!is_cache_dtype(d)) fail(what, "dtype " + str(d) + " is not a cache dtype");
  return ok() ? static_cast<DType>(d) : DType::f32;
}

PagedKv AbiReader::cache(const kvcheck_paged_kv& c) {
  PagedKv p;
  struct_size("cache", c.struct_size, sizeof(kvcheck_paged_kv));
  p.dtype = cache_dtype("cache", c.dtype);
  if (c.layout < KVCHECK_LAYOUT_KV_SEPARATE || c.layout > KVCHECK_LAYOUT_MLA_LATENT)
    fail("cache", "layout " + str(c.layout) + " is not a kvcheck_kv_layout");
  if (c.block_size < 1) fail("cache", "block_size " + str(c.block_size) + " is not positive");
  count("cache.num_blocks", c.num_blocks);
  count("cache.num_kv_heads", c.num_kv_heads);
  count("cache.head_dim", c.head_dim);
  copy_cache_fields(p, c);
  const int64_t nb = c.num_blocks, bs = c.block_size, h = c.num_kv_heads, hd = c.head_dim;
  p.k = tensor(c.k, "cache.k", c.dtype, {nb, bs, h, hd}, {-1, -1, -1, 1});
  p.v = tensor(c.v, "cache.v", c.dtype, {nb, bs, h, hd}, {-1, -1, -1, 1});
  if (!ok()) return p;
  if (p.k) {
    p.k_stride_block = c.k.dl.strides[0];
    p.k_stride_token = c.k.dl.strides[1];
    p.k_stride_head = c.k.dl.strides[2];
  }
  if (p.v) {
    p.v_stride_block = c.v.dl.strides[0];
    p.v_stride_token = c.v.dl.strides[1];
    p.v_stride_head = c.v.dl.strides[2];
  }
  // The declared layout must be the one the pointers and strides describe.
  if (layout_of(p) != c.layout)
    fail("cache", std::string("layout is declared ") + layout_name(c.layout) +
                      " but k, v and their strides describe " + layout_name(layout_of(p)));
  return p;
}

}  // namespace kv::backend
