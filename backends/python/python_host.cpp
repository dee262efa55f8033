// python_host.cpp — libkvcheck_backend_python.so: a backend written in Python, behind the C ABI.
//
// `kvcheck run S.json --backend python:MODULE` loads this plugin with the option text
// "module=MODULE", then a line with the user's --backend-option (src/backend/backend_spec.h). Its
// init starts the embedded interpreter, imports kvcheck._host (python/kvcheck) and through it the
// module, whose kvcheck_backend(host) declares the caps and the ops; the table below routes each
// declared op to the module's callable with the call's args as a namespace of arrays over
// kvcheck's memory.
//
// Everything the ABI promises holds as for a C plugin, because kvcheck runs this plugin like any
// other, in its worker process: a Python exception is KVCHECK_ERROR with the exception's type,
// text and last frame; an op that returns anything but None (a tensor instead of writing into
// a.out) is an error; a crash, an os._exit or a hang inside Python ends only the worker and is
// the verdict about the op it was in.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/abi_tensor.h"
#include "backend/backend_spec.h"
#include "kvcheck/backend.h"
#include "py_args.h"
#include "py_runtime.h"

namespace kv::py {
namespace {

struct Backend {
  kvcheck_backend table{};
  std::string name, version, identity;
  std::vector<int32_t> head_dims, block_sizes, gqa_ratios, mla_dims;
  // The module's ops in kvcheck_op order (None where it has none) and its optional callables.
  Ref loaded, describe, ops[KVCHECK_NUM_OPS], plan, plan_bytes, workspace_bytes, use_stream;
  ArrayMaker arrays;
  std::string deferred;  // an error raised where the ABI has no status (sizes): the next call's
};

Backend* g_backend = nullptr;  // one per process: the worker's

void set_error(char* err, size_t size, const std::string& text) {
  if (!err || size == 0) return;
  std::snprintf(err, size, "%s", text.c_str());
}

// obj.name as a new reference; null (exception set) if absent.
Ref attr(PyObject* obj, const char* name) { return Ref(PyObject_GetAttrString(obj, name)); }

// The module's answer to a call: None is success; an exception or any other value an error.
int32_t finish(Backend& b, const char* what, Ref result, char* err, size_t err_size) {
  if (!result) {
    set_error(err, err_size, std::string(what) + ": " + take_error(b.describe.get()));
    return KVCHECK_ERROR;
  }
  if (result.get() != Py_None) {
    Ref type(PyObject_Type(result.get()));
    Ref name(type ? attr(type.get(), "__name__") : Ref());
    PyErr_Clear();
    set_error(err, err_size,
              std::string(what) + " returned a " + text_of(name.get(), "value") +
                  " instead of None: an op writes its results into the arrays it is given "
                  "(a.out[...] = ..., copying a library's result is fine)");
    return KVCHECK_ERROR;
  }
  return KVCHECK_OK;
}

// Before a call on CUDA: kvcheck's stream as torch's current one (Loaded.use_stream).
bool stream_ready(Backend& b, void* stream, const char* what, char* err, size_t err_size) {
  if (!b.arrays.cuda) return true;
  const auto handle = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(stream));
  Ref r(PyObject_CallFunction(b.use_stream.get(), "K", handle));
  if (r) return true;
  set_error(err, err_size, std::string(what) + ": cannot use kvcheck's CUDA stream: " +
                               take_error(b.describe.get()));
  return false;
}

int32_t call_op(kvcheck_op op, const void* args, void* stream, char* err, size_t err_size) {
  Backend& b = *g_backend;
  Gil gil;
  const char* name = backend::op_name(op);
  if (!b.deferred.empty()) {
    set_error(err, err_size, b.deferred);
    return KVCHECK_ERROR;
  }
  if (!stream_ready(b, stream, name, err, err_size)) return KVCHECK_ERROR;
  Ref ns = op_args(b.arrays, op, args);
  if (!ns) {
    set_error(err, err_size, std::string(name) + ": its arguments could not be made into arrays: " +
                                 take_error(b.describe.get()));
    return KVCHECK_ERROR;
  }
  return finish(b, name, Ref(PyObject_CallOneArg(b.ops[op].get(), ns.get())), err, err_size);
}

template <kvcheck_op Op, typename Args>
int32_t op_entry(void*, const Args* a, void* stream, char* err, size_t err_size) {
  return call_op(Op, a, stream, err, err_size);
}

int32_t plan_entry(void*, const kvcheck_decode_plan_args* a, void* stream, char* err,
                   size_t err_size) {
  Backend& b = *g_backend;
  Gil gil;
  if (!stream_ready(b, stream, "paged_decode_plan", err, err_size)) return KVCHECK_ERROR;
  Ref ns = plan_args(b.arrays, a);
  if (!ns) {
    set_error(err, err_size, "paged_decode_plan: " + take_error(b.describe.get()));
    return KVCHECK_ERROR;
  }
  return finish(b, "paged_decode_plan", Ref(PyObject_CallOneArg(b.plan.get(), ns.get())), err,
                err_size);
}

// plan_bytes / workspace_bytes: a byte count; an error is kept for the next call to report.
size_t size_entry(PyObject* fn, const char* what, const kvcheck_size_query* q) {
  Backend& b = *g_backend;
  Gil gil;
  Ref ns = size_query(b.arrays, q);
  Ref r = ns ? Ref(PyObject_CallOneArg(fn, ns.get())) : Ref();
  if (r && PyLong_Check(r.get())) {
    const long long n = PyLong_AsLongLong(r.get());
    if (n >= 0 && !PyErr_Occurred()) return static_cast<size_t>(n);
  }
  if (b.deferred.empty()) {
    const std::string why = PyErr_Occurred() ? take_error(b.describe.get())
                                             : "expected a non-negative int";
    b.deferred = std::string(what) + " (" + backend::op_name(static_cast<kvcheck_op>(q->op)) +
                 "): " + why;
  }
  PyErr_Clear();
  return 0;
}

size_t plan_bytes_entry(void*, const kvcheck_size_query* q) {
  return size_entry(g_backend->plan_bytes.get(), "plan_bytes", q);
}
size_t workspace_bytes_entry(void*, const kvcheck_size_query* q) {
  return size_entry(g_backend->workspace_bytes.get(), "workspace_bytes", q);
}

void destroy_entry(void*) {
  Backend* b = g_backend;
  if (!b) return;
  {
    Gil gil;
    Ref r(PyObject_CallMethod(b->loaded.get(), "close", nullptr));
    if (!r) {
      const std::string why = take_error(b->describe.get());
      std::fprintf(stderr, "python backend: close() raised %s\n", why.c_str());
    }
    // The interpreter stays up (finalising one that imported torch can hang): only our
    // references go.
    delete b;
  }
  g_backend = nullptr;
}

// An int from the declaration dict (kvcheck._host made it, so the types are right).
int32_t int_of(PyObject* decl, const char* key) {
  return static_cast<int32_t>(PyLong_AsLong(PyDict_GetItemString(decl, key)));
}

// A list of ints from the declaration (None: any) into `out`; the caps' pointer and count.
void list_of(PyObject* decl, const char* key, std::vector<int32_t>& out, const int32_t** ptr,
             int32_t* count, int32_t per_item = 1) {
  PyObject* v = PyDict_GetItemString(decl, key);
  if (!v || v == Py_None) return;
  for (Py_ssize_t i = 0; i < PyList_Size(v); ++i)
    out.push_back(static_cast<int32_t>(PyLong_AsLong(PyList_GetItem(v, i))));
  *ptr = out.data();
  *count = static_cast<int32_t>(out.size()) / per_item;
}

// The C table of a loaded module's declaration.
void fill_table(Backend& b, PyObject* decl) {
  kvcheck_backend& t = b.table;
  t.struct_size = sizeof(t);
  t.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  b.name = text_of(PyDict_GetItemString(decl, "name"));
  b.version = text_of(PyDict_GetItemString(decl, "version"));
  t.name = b.name.c_str();
  t.version = b.version.c_str();
  kvcheck_caps& c = t.caps;
  c.struct_size = sizeof(c);
  c.cache_dtypes = static_cast<uint32_t>(int_of(decl, "cache_dtypes"));
  c.layouts = static_cast<uint32_t>(int_of(decl, "layouts"));
  c.io_dtype = int_of(decl, "io_dtype");
  list_of(decl, "head_dims", b.head_dims, &c.head_dims, &c.num_head_dims);
  list_of(decl, "block_sizes", b.block_sizes, &c.block_sizes, &c.num_block_sizes);
  list_of(decl, "gqa_ratios", b.gqa_ratios, &c.gqa_ratios, &c.num_gqa_ratios);
  list_of(decl, "mla_dims", b.mla_dims, &c.mla_dims, &c.num_mla_dims, 2);
  c.lse_base = int_of(decl, "lse_base");
  c.empty_row_lse =
      static_cast<float>(PyFloat_AsDouble(PyDict_GetItemString(decl, "empty_row_lse")));
  c.pad_seq_len = int_of(decl, "pad_seq_len");
  c.pad_block_id = int_of(decl, "pad_block_id");
  c.needs_zeroed_blocks = int_of(decl, "needs_zeroed_blocks");
  c.graph_support = int_of(decl, "graph_support");
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i) {
    if (b.ops[i].get() == Py_None) continue;
    switch (static_cast<kvcheck_op>(i)) {
      case KVCHECK_OP_WRITE_KV: t.write_kv = op_entry<KVCHECK_OP_WRITE_KV>; break;
      case KVCHECK_OP_PAGED_DECODE: t.paged_decode = op_entry<KVCHECK_OP_PAGED_DECODE>; break;
      case KVCHECK_OP_GATHER_KV: t.gather_kv = op_entry<KVCHECK_OP_GATHER_KV>; break;
      case KVCHECK_OP_VARLEN_ATTENTION:
        t.varlen_attention = op_entry<KVCHECK_OP_VARLEN_ATTENTION>;
        break;
      case KVCHECK_OP_MERGE_STATES: t.merge_states = op_entry<KVCHECK_OP_MERGE_STATES>; break;
      case KVCHECK_OP_LINEAR_ATTENTION:
        t.linear_attention = op_entry<KVCHECK_OP_LINEAR_ATTENTION>;
        break;
      case KVCHECK_OP_FILL_BLOCKS: t.fill_blocks = op_entry<KVCHECK_OP_FILL_BLOCKS>; break;
      case KVCHECK_OP_QUANT_FP8: t.quant_fp8 = op_entry<KVCHECK_OP_QUANT_FP8>; break;
      case KVCHECK_OP_PAGED_PREFILL: t.paged_prefill = op_entry<KVCHECK_OP_PAGED_PREFILL>; break;
      case KVCHECK_NUM_OPS: break;
    }
  }
  if (b.plan) t.paged_decode_plan = plan_entry;
  if (b.plan_bytes) t.plan_bytes = plan_bytes_entry;
  if (b.workspace_bytes) t.workspace_bytes = workspace_bytes_entry;
  t.destroy = destroy_entry;
}

// Where this plugin's Python files are: the source tree it was built from, or the install
// tree's share/kvcheck/ (the plugin in lib/kvcheck/); `sub` is "python" (the kvcheck package) or
// "backends/python" (the shipped adapters).
std::vector<std::string> shipped_dirs(const char* built, const char* sub) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_directory(built, ec)) out.push_back(built);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&kvcheck_backend_init), &info) && info.dli_fname) {
    const fs::path p =
        fs::path(info.dli_fname).parent_path() / ".." / ".." / "share" / "kvcheck" / sub;
    if (fs::is_directory(p, ec)) out.push_back(p.lexically_normal().string());
  }
  return out;
}

// Loads the module named by `options` into `b`; "" or why not.
std::string load(Backend& b, const kvcheck_host& host) {
  const PythonHostOptions o = python_host_options(host.options ? host.options : "");
  if (!o.problem.empty()) return o.problem;
  const char* program = std::getenv("KVCHECK_PYTHON");
  const std::string why =
      start_interpreter(program && *program ? program : KVCHECK_PYTHON_EXECUTABLE);
  if (!why.empty()) return why;
  Gil gil;
  // kvcheck's package first on sys.path; then the module, from the working folder, PYTHONPATH or
  // the shipped adapters.
  Ref sys_path(PySys_GetObject("path") ? Py_NewRef(PySys_GetObject("path")) : nullptr);
  for (const std::string& d : shipped_dirs(KVCHECK_PYTHON_PACKAGE_DIR, "python")) {
    Ref dir(PyUnicode_FromString(d.c_str()));
    if (sys_path && dir) PyList_Insert(sys_path.get(), 0, dir.get());
  }
  Ref glue(PyImport_ImportModule("kvcheck._host"));
  if (!glue)
    return "cannot import kvcheck._host (kvcheck's python/ package): " + take_error(nullptr);
  b.describe = attr(glue.get(), "describe");
  Ref unsupported = attr(glue.get(), "Unsupported");  // asked before a load error is pending
  std::vector<std::string> module_search;
  if (char cwd[4096]; getcwd(cwd, sizeof(cwd))) module_search.push_back(cwd);
  for (const std::string& d : shipped_dirs(KVCHECK_PYTHON_ADAPTERS_DIR, "backends/python"))
    module_search.push_back(d);
  Ref search(PyList_New(0));
  for (const std::string& d : module_search) {
    Ref s(PyUnicode_FromString(d.c_str()));
    PyList_Append(search.get(), s.get());
  }
  const bool cuda = host.device.device_type == kDLCUDA;
  b.loaded = Ref(PyObject_CallMethod(glue.get(), "load", "ssisO", o.module.c_str(),
                                     cuda ? "cuda" : "host", host.device.device_id,
                                     o.rest.c_str(), search.get()));
  if (!b.loaded) {
    // kvcheck.Unsupported carries its own sentence; anything else gets its frame too.
    if (unsupported && PyErr_ExceptionMatches(unsupported.get())) {
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      Ref owned_type(type), owned_value(value), owned_tb(tb);
      Ref text(value ? PyObject_Str(value) : nullptr);
      return text_of(text.get(), "refused");
    }
    return "python:" + o.module + ": " + take_error(b.describe.get());
  }
  Ref decl = attr(b.loaded.get(), "declaration");
  Ref ops = attr(b.loaded.get(), "ops");
  Ref backend = attr(b.loaded.get(), "backend");
  Ref ident = attr(b.loaded.get(), "identity_json");
  if (!decl || !ops || !backend || !ident) return "kvcheck._host: " + take_error(nullptr);
  for (int i = 0; i < KVCHECK_NUM_OPS; ++i)
    b.ops[i] = Ref(Py_NewRef(PyTuple_GetItem(ops.get(), i)));
  for (auto [field, ref] : {std::pair{"paged_decode_plan", &b.plan},
                            std::pair{"plan_bytes", &b.plan_bytes},
                            std::pair{"workspace_bytes", &b.workspace_bytes}}) {
    Ref fn = attr(backend.get(), field);
    if (fn && fn.get() != Py_None) *ref = std::move(fn);
  }
  b.identity = text_of(ident.get());
  b.arrays.cuda = cuda;
  b.arrays.convert = attr(b.loaded.get(), "tensor");
  b.arrays.empty = attr(b.loaded.get(), "empty");
  b.use_stream = attr(b.loaded.get(), "use_stream");
  b.arrays.namespace_ = attr(glue.get(), "Namespace");
  if (!b.arrays.convert || !b.arrays.empty || !b.use_stream || !b.arrays.namespace_)
    return "kvcheck._host: " + take_error(nullptr);
  fill_table(b, decl.get());
  return "";
}

}  // namespace
}  // namespace kv::py

extern "C" KVCHECK_BACKEND_EXPORT const kvcheck_backend* kvcheck_backend_init(
    uint32_t abi_version, const kvcheck_host* host, char* err, size_t err_size) {
  using namespace kv::py;
  if (abi_version != KVCHECK_BACKEND_ABI_VERSION) {
    set_error(err, err_size, "this Python host speaks ABI version 1");
    return nullptr;
  }
  if (g_backend) {
    set_error(err, err_size, "the Python host runs one backend per process");
    return nullptr;
  }
  auto* b = new Backend();
  const std::string why = load(*b, *host);
  if (!why.empty()) {
    set_error(err, err_size, why);
    if (Py_IsInitialized()) {
      Gil gil;
      delete b;
    } else {
      delete b;
    }
    return nullptr;
  }
  g_backend = b;
  return &b->table;
}

// The module's identity (kvcheck._host.identity as JSON: path, sha256, files, runtime), which
// kvcheck records in place of this plugin's own path and digest (src/backend/backend_spec.h).
extern "C" KVCHECK_BACKEND_EXPORT const char* kvcheck_python_identity() {
  return kv::py::g_backend ? kv::py::g_backend->identity.c_str() : "";
}
