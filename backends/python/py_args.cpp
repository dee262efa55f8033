// py_args.cpp — args structs to Python namespaces, by a table of fields per struct.
#include "py_args.h"

#include <cstddef>
#include <vector>

#include "backend/abi_tensor.h"

namespace kv::py {
namespace {

// tensor: wrapped per call; kept: a buffer the ABI keeps at one address (a persistent view).
enum class Kind { tensor, kept, paged_kv, i32, f32, u64, dtype, layout, op, fill, host_i32 };

// One field of an args struct. host_i32: an int32 array in host memory whose length is the i32
// field at `count` plus `extra`.
struct Field {
  const char* name;
  Kind kind;
  size_t offset;
  size_t count = 0;
  int32_t extra = 0;
};

template <typename T>
const T& at(const void* base, size_t offset) {
  return *reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

// How an ABI dtype is viewed: buffer-protocol format, bytes, DLPack type (bf16 and fp8 as
// unsigned integers of their width).
struct View {
  const char* format;
  int itemsize;
  DLDataType dl;
};

bool view_of(int32_t dtype, View& v) {
  switch (dtype) {
    case KVCHECK_F32: v = {"f", 4, {kDLFloat, 32, 1}}; return true;
    case KVCHECK_F16: v = {"e", 2, {kDLFloat, 16, 1}}; return true;
    case KVCHECK_BF16: v = {"H", 2, {kDLUInt, 16, 1}}; return true;
    case KVCHECK_FP8_E4M3: v = {"B", 1, {kDLUInt, 8, 1}}; return true;
    case KVCHECK_I32: v = {"i", 4, {kDLInt, 32, 1}}; return true;
    case KVCHECK_I64: v = {"q", 8, {kDLInt, 64, 1}}; return true;
    case KVCHECK_U8: v = {"B", 1, {kDLUInt, 8, 1}}; return true;
  }
  return false;
}

constexpr int kMaxDims = 8;

// A writable NumPy array over host memory.
Ref host_array(ArrayMaker& m, const kvcheck_tensor& t, const View& v) {
  Py_ssize_t shape[kMaxDims], strides[kMaxDims];
  Py_ssize_t elements = 1;
  for (int i = t.dl.ndim - 1; i >= 0; --i) {
    shape[i] = t.dl.shape[i];
    strides[i] = t.dl.strides ? t.dl.strides[i] * v.itemsize
                              : (i == t.dl.ndim - 1 ? v.itemsize : strides[i + 1] * shape[i + 1]);
    elements *= shape[i];
  }
  Py_buffer b{};
  b.buf = static_cast<char*>(t.dl.data) + t.dl.byte_offset;
  b.len = elements * v.itemsize;
  b.itemsize = v.itemsize;
  b.readonly = 0;
  b.ndim = t.dl.ndim;
  b.format = const_cast<char*>(v.format);
  b.shape = shape;
  b.strides = strides;
  Ref view(PyMemoryView_FromBuffer(&b));  // copies shape and strides
  if (!view) return view;
  return Ref(PyObject_CallOneArg(m.convert.get(), view.get()));
}

// A DLPack capsule over device memory, for torch.from_dlpack (legacy, unversioned).
struct Managed {
  DLManagedTensor m;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
};

void delete_managed(DLManagedTensor* m) { delete static_cast<Managed*>(m->manager_ctx); }

void capsule_gone(PyObject* capsule) {
  // Still named "dltensor": nobody consumed it, so it still owns the tensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

Ref device_array(ArrayMaker& m, const kvcheck_tensor& t, const View& v) {
  auto* w = new Managed{};
  w->m.dl_tensor = t.dl;
  w->m.dl_tensor.dtype = v.dl;
  for (int i = 0; i < t.dl.ndim; ++i) {
    w->shape[i] = t.dl.shape[i];
    w->strides[i] = t.dl.strides ? t.dl.strides[i] : 0;
  }
  for (int i = t.dl.ndim - 1; i >= 0 && !t.dl.strides; --i)
    w->strides[i] = i == t.dl.ndim - 1 ? 1 : w->strides[i + 1] * w->shape[i + 1];
  w->m.dl_tensor.shape = w->shape;
  w->m.dl_tensor.strides = w->strides;
  w->m.manager_ctx = w;
  w->m.deleter = delete_managed;
  Ref capsule(PyCapsule_New(&w->m, "dltensor", capsule_gone));
  if (!capsule) {
    delete w;
    return capsule;
  }
  return Ref(PyObject_CallOneArg(m.convert.get(), capsule.get()));
}

Ref tensor(ArrayMaker& m, const kvcheck_tensor& t) {
  if (t.dl.ndim == 0 && !t.dl.data) return Ref(Py_NewRef(Py_None));
  View v{};
  if (!view_of(t.dtype, v)) {
    PyErr_Format(PyExc_ValueError, "a tensor of unknown dtype %d", t.dtype);
    return Ref();
  }
  if (t.dl.ndim < 0 || t.dl.ndim > kMaxDims) {
    PyErr_Format(PyExc_ValueError, "a tensor of %d dimensions", t.dl.ndim);
    return Ref();
  }
  if (!t.dl.data) {  // no memory behind it: a zero-element array of its shape, or None
    Ref shape(PyTuple_New(t.dl.ndim));
    if (!shape) return shape;
    for (int i = 0; i < t.dl.ndim; ++i)
      PyTuple_SET_ITEM(shape.get(), i, PyLong_FromLongLong(t.dl.shape[i]));
    return Ref(
        PyObject_CallFunction(m.empty.get(), "Os", shape.get(), backend::dtype_name(t.dtype)));
  }
  return m.cuda ? device_array(m, t, v) : host_array(m, t, v);
}

Ref paged_kv(ArrayMaker& m, const kvcheck_paged_kv& c);

// A persistent buffer's view: the one made before for the same memory and layout, or a new one.
Ref kept(ArrayMaker& m, const kvcheck_tensor& t) {
  if (!t.dl.data || t.dl.ndim <= 0 || t.dl.ndim > kMaxDims) return tensor(m, t);
  std::vector<int64_t> key = {static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.dl.data)),
                              static_cast<int64_t>(t.dl.byte_offset), t.dtype, t.dl.ndim};
  for (int i = 0; i < t.dl.ndim; ++i) {
    key.push_back(t.dl.shape[i]);
    key.push_back(t.dl.strides ? t.dl.strides[i] : -1);
  }
  if (auto it = m.persistent.find(key); it != m.persistent.end())
    return Ref(Py_NewRef(it->second.get()));
  Ref view = tensor(m, t);
  if (!view) return view;
  if (m.persistent.size() >= ArrayMaker::kMaxPersistent) m.persistent.clear();
  m.persistent.emplace(std::move(key), Ref(Py_NewRef(view.get())));
  return view;
}

// One field's Python value.
Ref value(ArrayMaker& m, const void* args, const Field& f) {
  switch (f.kind) {
    case Kind::tensor: return tensor(m, at<kvcheck_tensor>(args, f.offset));
    case Kind::kept: return kept(m, at<kvcheck_tensor>(args, f.offset));
    case Kind::paged_kv: return paged_kv(m, at<kvcheck_paged_kv>(args, f.offset));
    case Kind::i32: return Ref(PyLong_FromLong(at<int32_t>(args, f.offset)));
    case Kind::f32: return Ref(PyFloat_FromDouble(at<float>(args, f.offset)));
    case Kind::u64: return Ref(PyLong_FromUnsignedLongLong(at<uint64_t>(args, f.offset)));
    case Kind::dtype:
      return Ref(PyUnicode_FromString(backend::dtype_name(at<int32_t>(args, f.offset))));
    case Kind::layout:
      return Ref(PyUnicode_FromString(backend::layout_name(at<int32_t>(args, f.offset))));
    case Kind::op:
      return Ref(PyUnicode_FromString(
          backend::op_name(static_cast<kvcheck_op>(at<int32_t>(args, f.offset)))));
    case Kind::fill:
      return Ref(PyUnicode_FromString(backend::fill_pattern_name(at<int32_t>(args, f.offset))));
    case Kind::host_i32: {
      const int32_t* p = at<const int32_t*>(args, f.offset);
      const int32_t n = at<int32_t>(args, f.count) + f.extra;
      if (!p || n < 0) return Ref(Py_NewRef(Py_None));
      Ref list(PyList_New(n));
      if (!list) return list;
      for (int32_t i = 0; i < n; ++i) PyList_SET_ITEM(list.get(), i, PyLong_FromLong(p[i]));
      return list;
    }
  }
  return Ref();
}

// The namespace of the fields of one struct that `struct_size` covers (later fields: None).
Ref fields_namespace(ArrayMaker& m, const void* args, uint32_t struct_size,
                     const std::vector<Field>& fields) {
  Ref kw(PyDict_New());
  if (!kw) return kw;
  for (const Field& f : fields) {
    Ref v = f.offset < struct_size ? value(m, args, f) : Ref(Py_NewRef(Py_None));
    if (!v || PyDict_SetItemString(kw.get(), f.name, v.get()) < 0) return Ref();
  }
  Ref none(PyTuple_New(0));
  if (!none) return none;
  return Ref(PyObject_Call(m.namespace_.get(), none.get(), kw.get()));
}

#define KV_F(S, name, kind) Field{#name, Kind::kind, offsetof(S, name)}
#define KV_HOST(S, name, count, extra) \
  Field{#name, Kind::host_i32, offsetof(S, name), offsetof(S, count), extra}

Ref paged_kv(ArrayMaker& m, const kvcheck_paged_kv& c) {
  using S = kvcheck_paged_kv;
  static const std::vector<Field> f = {
      KV_F(S, layout, layout),         KV_F(S, dtype, dtype),         KV_F(S, num_blocks, i32),
      KV_F(S, block_size, i32),        KV_F(S, num_kv_heads, i32),    KV_F(S, head_dim, i32),
      KV_F(S, null_block, i32),        KV_F(S, k, kept),              KV_F(S, v, kept),
      KV_F(S, k_scale, f32),           KV_F(S, v_scale, f32)};
  return fields_namespace(m, &c, c.struct_size, f);
}

const std::vector<Field>& op_fields(kvcheck_op op) {
  using W = kvcheck_write_kv_args;
  using D = kvcheck_paged_decode_args;
  using G = kvcheck_gather_kv_args;
  using V = kvcheck_varlen_attention_args;
  using M = kvcheck_merge_states_args;
  using L = kvcheck_linear_attention_args;
  using F = kvcheck_fill_blocks_args;
  using Q = kvcheck_quant_fp8_args;
  using P = kvcheck_paged_prefill_args;
  static const std::vector<Field> table[KVCHECK_NUM_OPS] = {
      {KV_F(W, cache, paged_kv), KV_F(W, k, tensor), KV_F(W, v, tensor),
       KV_F(W, slot_mapping, tensor), KV_F(W, num_tokens, i32), KV_F(W, workspace, tensor)},
      {KV_F(D, cache, paged_kv), KV_F(D, q, tensor), KV_F(D, out, tensor), KV_F(D, lse, tensor),
       KV_F(D, block_table, tensor), KV_F(D, seq_lens, tensor), KV_F(D, plan, kept),
       KV_F(D, workspace, kept), KV_F(D, num_rows, i32), KV_F(D, num_q_heads, i32),
       KV_F(D, v_dim, i32), KV_F(D, scale, f32), KV_F(D, max_splits, i32)},
      {KV_F(G, cache, paged_kv), KV_F(G, block_table, tensor), KV_F(G, ctx_lens, tensor),
       KV_F(G, ctx_starts, tensor), KV_F(G, k_out, tensor), KV_F(G, v_out, tensor),
       KV_F(G, num_seqs, i32)},
      {KV_F(V, q, tensor), KV_F(V, k, tensor), KV_F(V, v, tensor), KV_F(V, q_starts, tensor),
       KV_F(V, k_starts, tensor), KV_F(V, out, tensor), KV_F(V, lse, tensor),
       KV_F(V, num_seqs, i32), KV_F(V, num_q_heads, i32), KV_F(V, num_kv_heads, i32),
       KV_F(V, head_dim, i32), KV_F(V, v_dim, i32), KV_F(V, scale, f32), KV_F(V, causal, i32),
       KV_F(V, kv_dtype, dtype), KV_F(V, k_scale, f32), KV_F(V, v_scale, f32),
       KV_F(V, max_q_len, i32), KV_F(V, max_k_len, i32), KV_F(V, workspace, tensor),
       KV_HOST(V, q_starts_host, num_seqs, 1), KV_HOST(V, k_starts_host, num_seqs, 1)},
      {KV_F(M, out_a, tensor), KV_F(M, lse_a, tensor), KV_F(M, out_b, tensor),
       KV_F(M, lse_b, tensor), KV_F(M, out, tensor), KV_F(M, lse_out, tensor),
       KV_F(M, num_rows, i32), KV_F(M, num_merge, i32), KV_F(M, num_heads, i32),
       KV_F(M, head_dim, i32)},
      {KV_F(L, state, kept), KV_F(L, q, tensor), KV_F(L, k, tensor), KV_F(L, v, tensor),
       KV_F(L, gate, tensor), KV_F(L, out, tensor), KV_F(L, seq_starts, tensor),
       KV_F(L, state_blocks, tensor), KV_F(L, has_initial_state, tensor), KV_F(L, num_seqs, i32),
       KV_F(L, num_heads, i32), KV_F(L, head_dim, i32), KV_F(L, scale, f32)},
      {KV_F(F, cache, paged_kv), KV_F(F, block_ids, tensor), KV_F(F, num_ids, i32),
       KV_F(F, pattern, fill), KV_F(F, seed, u64)},
      {KV_F(Q, x, tensor), KV_F(Q, y, tensor), KV_F(Q, amax_rows, tensor),
       KV_F(Q, amax_rows_fixed, i32), KV_F(Q, num_rows, i32), KV_F(Q, cols, i32),
       KV_F(Q, scale_out, tensor)},
      {KV_F(P, cache, paged_kv), KV_F(P, q, tensor), KV_F(P, out, tensor), KV_F(P, lse, tensor),
       KV_F(P, q_starts, tensor), KV_F(P, ctx_lens, tensor), KV_F(P, block_table, tensor),
       KV_F(P, workspace, tensor), KV_F(P, num_seqs, i32), KV_F(P, num_q_heads, i32),
       KV_F(P, v_dim, i32), KV_F(P, scale, f32), KV_F(P, max_q_len, i32),
       KV_F(P, max_ctx_len, i32), KV_HOST(P, q_starts_host, num_seqs, 1),
       KV_HOST(P, ctx_lens_host, num_seqs, 0)},
  };
  return table[op];
}

}  // namespace

Ref op_args(ArrayMaker& m, kvcheck_op op, const void* args) {
  return fields_namespace(m, args, *static_cast<const uint32_t*>(args), op_fields(op));
}

Ref plan_args(ArrayMaker& m, const kvcheck_decode_plan_args* a) {
  using S = kvcheck_decode_plan_args;
  static const std::vector<Field> f = {
      KV_HOST(S, seq_lens_host, num_rows, 0), KV_F(S, num_rows, i32), KV_F(S, num_q_heads, i32),
      KV_F(S, num_kv_heads, i32), KV_F(S, head_dim, i32), KV_F(S, v_dim, i32),
      KV_F(S, block_size, i32), KV_F(S, cache_dtype, dtype), KV_F(S, max_splits, i32),
      KV_F(S, plan, kept), KV_F(S, layout, layout), KV_F(S, max_blocks_per_seq, i32)};
  return fields_namespace(m, a, a->struct_size, f);
}

Ref size_query(ArrayMaker& m, const kvcheck_size_query* q) {
  using S = kvcheck_size_query;
  static const std::vector<Field> f = {
      KV_F(S, op, op),           KV_F(S, max_rows, i32),     KV_F(S, max_seqs, i32),
      KV_F(S, num_q_heads, i32), KV_F(S, num_kv_heads, i32), KV_F(S, head_dim, i32),
      KV_F(S, v_dim, i32),       KV_F(S, block_size, i32),   KV_F(S, max_blocks_per_seq, i32),
      KV_F(S, cache_dtype, dtype), KV_F(S, layout, layout),  KV_F(S, max_splits, i32)};
  return fields_namespace(m, q, q->struct_size, f);
}

}  // namespace kv::py
