// py_args.h — an ABI call's arguments as the Python namespace a backend's op receives: the
// fields of the header's args struct under their own names, tensors as arrays over kvcheck's
// memory (zero-copy), enum values as the ABI's names.
//
// On the host a tensor is a writable NumPy array made from a buffer-protocol view (NumPy imports
// unversioned DLPack capsules read-only); on CUDA a DLPack capsule handed to torch.from_dlpack.
// bf16 arrives as uint16 and fp8 e4m3 as uint8: the dtype stands beside them (a.cache.dtype,
// a.kv_dtype, the declared io_dtype). An absent optional tensor (NULL data, 0 dimensions) is None.
//
// The buffers the ABI keeps at one address for the run (the cache pages, the plan, the
// workspace, the linear-attention state) are wrapped once and the same array handed to every
// call that passes them with the same shape, strides and dtype (persistent views); the per-step
// ones (q, out, lse, tables) are wrapped per call.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "kvcheck/backend.h"
#include "py_runtime.h"

namespace kv::py {

// What turns kvcheck's tensors into the backend's arrays (from kvcheck._host.Loaded), and the
// persistent views made so far.
struct ArrayMaker {
  bool cuda = false;
  Ref convert;     // numpy.asarray or torch.from_dlpack
  Ref empty;       // Loaded.empty(shape, dtype): a tensor whose data is NULL
  Ref namespace_;  // types.SimpleNamespace
  // Persistent views by (data, dtype, shape, strides); at most kMaxPersistent, then cleared.
  std::map<std::vector<int64_t>, Ref> persistent;
  static constexpr size_t kMaxPersistent = 256;
};

// The namespace of one op call's args (`args` points at the op's kvcheck_<op>_args, whose
// struct_size says which fields it has). Null with a Python exception set on failure.
Ref op_args(ArrayMaker& m, kvcheck_op op, const void* args);

// paged_decode_plan's args, and a size query (plan_bytes, workspace_bytes).
Ref plan_args(ArrayMaker& m, const kvcheck_decode_plan_args* a);
Ref size_query(ArrayMaker& m, const kvcheck_size_query* q);

}  // namespace kv::py
