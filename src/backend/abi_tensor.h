// abi_tensor.h — kvcheck's element types, tensors and names in the backend plugin ABI
// (include/kvcheck/backend.h): dtype codes both ways, kvcheck_tensor views whose shape and strides
// live in fixed storage the caller owns (no allocation per call), and the reader that checks what
// a plugin call hands over, keeping the first mismatch as a message instead of throwing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/dtype.cuh"
#include "kernels/paged_kv.cuh"
#include "kvcheck/backend.h"

namespace kv::backend {

// The most dimensions of any tensor in the ABI (the paged cache's [block][entry][head][feature]).
inline constexpr int kMaxDims = 4;

// backend.h's dtype codes are kvcheck's own DType values for the cache types.
inline kvcheck_dtype to_abi(DType t) { return static_cast<kvcheck_dtype>(t); }
inline bool is_cache_dtype(int32_t d) { return d >= KVCHECK_F32 && d <= KVCHECK_FP8_E4M3; }

// The DLPack type of a kvcheck dtype (fp8 and u8: {kDLUInt, 8, 1}).
inline DLDataType dl_dtype(int32_t d) {
  switch (d) {
    case KVCHECK_F32: return {kDLFloat, 32, 1};
    case KVCHECK_F16: return {kDLFloat, 16, 1};
    case KVCHECK_BF16: return {kDLBfloat, 16, 1};
    case KVCHECK_FP8_E4M3: return {kDLUInt, 8, 1};
    case KVCHECK_I32: return {kDLInt, 32, 1};
    case KVCHECK_I64: return {kDLInt, 64, 1};
    case KVCHECK_U8: return {kDLUInt, 8, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}
// A float32 row tensor the engine converted into `dtype` (the backend's io dtype) at the same
// element strides: only its element type changes.
inline void retype(kvcheck_tensor& t, int32_t dtype) {
  t.dtype = dtype;
  t.dl.dtype = dl_dtype(dtype);
}
const char* dtype_name(int32_t d);
const char* layout_name(int32_t l);
// fill_blocks' pattern (kvcheck_fill_pattern): "zero", "nan", "inf", "random_bits".
const char* fill_pattern_name(int32_t p);

// The op table's name of an ABI op ("write_kv", "paged_decode", ...; ops/op_table.h), "unknown"
// for a value that is no kvcheck_op.
const char* op_name(kvcheck_op op);
// Every ABI op's name, in kvcheck_op order: what --backend-op and a scenario's builtin_ops take.
std::vector<std::string> op_names();

// The layout a PagedKv descriptor has: MLA latent when v == k, interleaved when the V page follows
// the K page of the same block (block stride 2 x page), separate otherwise.
kvcheck_kv_layout layout_of(const PagedKv& c);

// Shape and strides of one tensor view.
struct TensorDims {
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
};

// Views of up to N tensors over storage this object owns: a view's shape and strides stay valid
// until reset() (one op call).
template <int N>
class TensorPool {
 public:
  void reset() { used_ = 0; }

  // Makes t a view of `data` (NULL: the absent tensor, ndim 0); shape and strides have the same
  // length. Written in place: this runs several times per op call.
  void view(kvcheck_tensor& t, const void* data, int32_t dtype, DLDevice device,
            std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides) {
    t.dl.device = device;
    t.dl.dtype = dl_dtype(dtype);
    t.dl.byte_offset = 0;
    t.dtype = dtype;
    t.reserved[0] = t.reserved[1] = t.reserved[2] = 0;
    if (data == nullptr) {
      t.dl.data = nullptr;
      t.dl.ndim = 0;
      t.dl.shape = t.dl.strides = nullptr;
      return;
    }
    if (used_ == N) throw std::logic_error("TensorPool: more than N tensors in one call");
    TensorDims& d = dims_[used_++];
    std::copy(shape.begin(), shape.end(), d.shape);
    std::copy(strides.begin(), strides.end(), d.strides);
    t.dl.data = const_cast<void*>(data);
    t.dl.ndim = static_cast<int>(shape.size());
    t.dl.shape = d.shape;
    t.dl.strides = d.strides;
  }

 private:
  TensorDims dims_[N];
  int used_ = 0;
};

// Reads the tensors and sizes of one op's ABI args into kvcheck's descriptors, checking each
// against what the descriptor can express. The first mismatch is kept as "op: what: why"; once
// one is kept, tensor() returns nullptr.
class AbiReader {
 public:
  explicit AbiReader(const char* op) : op_(op) {}

  bool ok() const { return err_.empty(); }
  const std::string& error() const { return err_; }
  void fail(const char* what, const std::string& why);

  // struct_size of a struct whose v1 size is v1_size; false if smaller (read nothing more).
  bool struct_size(const char* what, uint32_t got, size_t v1_size);
  // A count that must not be negative.
  int32_t count(const char* what, int32_t n);
  // A kvcheck_dtype that kvcheck's ops take as a cache dtype.
  DType cache_dtype(const char* what, int32_t d);

  // The data (data + byte_offset) of a tensor, nullptr when it is absent (data NULL). Present, it
  // must have as many dimensions as `shape`, its dtype both as kvcheck dtype and as DLPack type
  // (KVCHECK_U8, a byte buffer: the DLPack type alone), non-NULL shape and strides, the innermost
  // stride 1, and the given shape and strides: -1 takes any value, and the first dimension may
  // be longer.
  void* tensor(const kvcheck_tensor& t, const char* what, int32_t dtype,
               std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides);
  // Bytes of a present u8 buffer [bytes], 0 when absent.
  size_t bytes(const kvcheck_tensor& t, const char* what);
  // A paged cache, its declared layout checked against its pointers and strides.
  PagedKv cache(const kvcheck_paged_kv& c);

 private:
  const char* op_;
  std::string err_;
};

// The outermost stride of a tensor (a row stride), 0 when absent.
inline int64_t outer_stride(const kvcheck_tensor& t) {
  return t.dl.data != nullptr && t.dl.strides != nullptr ? t.dl.strides[0] : 0;
}

}  // namespace kv::backend
