// backend_library.cpp — loading and checking a backend plugin.
#include "plugin/backend_library.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "backend/abi_caps.h"
#include "backend/backend_spec.h"
#include "io/input_file.h"
#include "plugin/sha256.h"

namespace kv {
namespace {

namespace fs = std::filesystem;

// What the header requires of a table; the first contradiction, or "".
std::string table_problem(const kvcheck_backend& t) {
  if (t.struct_size < sizeof(kvcheck_backend))
    return fmt::format("its table is {} bytes, smaller than ABI version {}'s {}", t.struct_size,
                       KVCHECK_BACKEND_ABI_VERSION, sizeof(kvcheck_backend));
  if (t.abi_version != KVCHECK_BACKEND_ABI_VERSION)
    return fmt::format("its table says ABI version {}; this kvcheck speaks version {}",
                       t.abi_version, KVCHECK_BACKEND_ABI_VERSION);
  if (!t.name || !*t.name) return "its table has no name";
  if (!t.version) return "its table has no version string";
  const kvcheck_caps& c = t.caps;
  if (c.struct_size < sizeof(kvcheck_caps))
    return fmt::format("its caps are {} bytes, smaller than ABI version {}'s {}", c.struct_size,
                       KVCHECK_BACKEND_ABI_VERSION, sizeof(kvcheck_caps));
  if (c.io_dtype != KVCHECK_F32 && c.io_dtype != KVCHECK_BF16 && c.io_dtype != KVCHECK_F16)
    return fmt::format("caps.io_dtype {} is not f32 (0), f16 (1) or bf16 (2)", c.io_dtype);
  if (c.lse_base != KVCHECK_LSE_NATURAL && c.lse_base != KVCHECK_LSE_BASE2)
    return fmt::format("caps.lse_base {} is neither natural (0) nor base 2 (1)", c.lse_base);
  if (!(std::isinf(c.empty_row_lse)))
    return fmt::format("caps.empty_row_lse {} is neither -inf nor +inf", c.empty_row_lse);
  if (c.pad_seq_len != 0 && c.pad_seq_len != 1)
    return fmt::format("caps.pad_seq_len {} is neither 0 nor 1", c.pad_seq_len);
  if (c.pad_block_id != 0 && c.pad_block_id != -1)
    return fmt::format("caps.pad_block_id {} is neither 0 nor -1", c.pad_block_id);
  if (c.graph_support < KVCHECK_GRAPHS_NONE || c.graph_support > KVCHECK_GRAPHS_FULL)
    return fmt::format("caps.graph_support {} is not none (0), decode (1) or full (2)",
                       c.graph_support);
  if ((c.num_head_dims > 0 && !c.head_dims) || (c.num_block_sizes > 0 && !c.block_sizes))
    return "its caps count head dims or block sizes but give no list";
  if (t.paged_decode_plan && !t.plan_bytes)
    return "it has paged_decode_plan but no plan_bytes to size the plan buffer";
  if (backend::implemented_ops(t).empty()) return "it implements no op";
  return "";
}

}  // namespace

BackendLibrary::BackendLibrary(const std::string& spec, int32_t device_type, int32_t device_id,
                               const std::string& user_options, const std::string& sha256) {
  auto fail = [&](const std::string& what) {
    throw BackendLoadError(fmt::format("backend {}: {}", spec, what));
  };
  const BackendTarget target = backend_target(spec, user_options);
  if (!target.problem.empty()) fail(target.problem);
  const std::string& path = target.library;
  const std::string& options = target.options;
  std::error_code ec;
  // A regular file only, checked without blocking: dlopen of a FIFO would wait for a writer.
  InputFileError not_regular;
  if (!InputFile::open(path, not_regular)) fail(not_regular.message);
  path_ = fs::absolute(path, ec).lexically_normal().string();  // dlopen searches bare names
  try {
    // A Python host's digest is not the backend's: python_identity sets the module's below.
    if (target.python_module.empty()) sha256_ = sha256.empty() ? sha256_file(path_) : sha256;
  } catch (const std::exception& e) {
    fail(e.what());
  }
  const auto started = std::chrono::steady_clock::now();
  handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    fail(fmt::format("cannot be loaded as a shared library: {}", why ? why : "unknown error"));
  }
  dlerror();
  void* sym = dlsym(handle_, KVCHECK_BACKEND_INIT_SYMBOL);
  if (!sym) {
    dlclose(handle_);
    fail(fmt::format("it does not export {} (a backend defines it with "
                     "KVCHECK_BACKEND_EXPORT, include/kvcheck/backend.h)",
                     KVCHECK_BACKEND_INIT_SYMBOL));
  }
  const auto init = reinterpret_cast<kvcheck_backend_init_fn>(sym);
  kvcheck_host host{};
  host.struct_size = sizeof(host);
  host.abi_version = KVCHECK_BACKEND_ABI_VERSION;
  host.device.device_type = static_cast<DLDeviceType>(device_type);
  host.device.device_id = device_id;
  host.options = options.c_str();
  char err[512] = "";
  table_ = init(KVCHECK_BACKEND_ABI_VERSION, &host, err, sizeof(err));
  load_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  err[sizeof(err) - 1] = '\0';
  if (!table_) {
    dlclose(handle_);
    fail(fmt::format("{} refused to start: {}", KVCHECK_BACKEND_INIT_SYMBOL,
                     *err ? err : "(no message)"));
  }
  if (const std::string problem = table_problem(*table_); !problem.empty()) {
    if (table_->struct_size >= sizeof(kvcheck_backend) && table_->destroy)
      table_->destroy(table_->self);
    dlclose(handle_);
    fail(problem);
  }
  version_ = table_->version;
  if (!target.python_module.empty()) {
    const std::string why = python_identity(target.python_module);
    if (!why.empty()) {
      if (table_->destroy) table_->destroy(table_->self);
      fail(why);
    }
  }
}

// The module a Python host runs stands in for the host library: its file, digest and runtime.
std::string BackendLibrary::python_identity(const std::string& module) {
  using Identity = const char* (*)();
  auto get = reinterpret_cast<Identity>(dlsym(handle_, kPythonIdentitySymbol));
  const char* text = get ? get() : nullptr;
  const nlohmann::json id = nlohmann::json::parse(text ? text : "", nullptr, false);
  for (const char* key : {"path", "sha256", "runtime"})
    if (!id.is_object() || !id.contains(key) || !id[key].is_string())
      return fmt::format("the Python host gave no identity of module {}", module);
  path_ = id["path"].get<std::string>();
  sha256_ = id["sha256"].get<std::string>();
  version_ += "; " + id["runtime"].get<std::string>();
  return "";
}

BackendLibrary::~BackendLibrary() {
  if (table_ && table_->destroy) table_->destroy(table_->self);
  // The library stays mapped: a backend may have left threads or atexit handlers behind, and
  // unmapping their code under them would crash kvcheck at exit.
}

bool BackendLibrary::implements(kvcheck_op op) const { return backend::implements(*table_, op); }

std::vector<kvcheck_op> BackendLibrary::implemented_ops() const {
  return backend::implemented_ops(*table_);
}

}  // namespace kv
