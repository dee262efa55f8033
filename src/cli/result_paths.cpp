// result_paths.cpp — result file names, and the checks made on them before a run.
#include "cli/result_paths.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "backend/backend_spec.h"
#include "io/interrupt.h"
#include "report/atomic_write.h"

namespace kv::cli {

namespace fs = std::filesystem;

namespace {

// What atomic_write adds to a file name for its temporary: "." + name + ".tmp.<pid>.<uint32>".
constexpr std::size_t kTempNameExtra = 1 + 5 + 10 + 1 + 10;

// The longest file name the folder takes (NAME_MAX where pathconf cannot say).
std::size_t name_max_of(const fs::path& dir) {
  errno = 0;
  const long n = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  return n > 0 ? static_cast<std::size_t>(n) : NAME_MAX;
}

// Creates and removes a file in `dir`: the one test of writability that holds for read-only
// mounts, ACLs and root alike.
void probe_writable(const fs::path& dir) {
  const fs::path probe = dir / (".kvcheck-write-probe." + std::to_string(::getpid()));
  set_pending_temp_file(probe.c_str());  // an interrupt meanwhile removes it
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    clear_pending_temp_file();
    throw WriteError(fmt::format("cannot write result files in {}: {}", dir.string(),
                                 std::strerror(err)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  clear_pending_temp_file();
}

// Characters other than [A-Za-z0-9._-] become '_', a leading '.' too; "", "." and ".." become
// `fallback`.
std::string file_safe(std::string s, const char* fallback) {
  for (char& c : s) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  if (s.empty() || s == "." || s == "..") return fallback;
  if (s.front() == '.') s.front() = '_';  // no hidden result files
  return s;
}

// The folder every path lies under (absolute, normalised): their longest common parent.
fs::path common_folder(const std::vector<fs::path>& files) {
  if (files.empty()) return {};
  fs::path common = files.front().parent_path();
  for (const fs::path& f : files) {
    const fs::path dir = f.parent_path();
    fs::path shared;
    auto a = common.begin(), b = dir.begin();
    for (; a != common.end() && b != dir.end() && *a == *b; ++a, ++b) shared /= *a;
    common = shared;
  }
  return common;
}

}  // namespace

std::string backend_short_name(const std::string& library_path) {
  std::string name = backend_short_stem(library_path);
  const size_t so = name.find(".so");
  if (so != std::string::npos && so > 0) name.erase(so);
  for (const std::string_view prefix : {"lib", "kvcheck_backend_"})
    if (name.starts_with(prefix) && name.size() > prefix.size()) name.erase(0, prefix.size());
  return file_safe(name, "backend");
}

std::vector<fs::path> result_relative_paths(const std::vector<ResultKey>& keys) {
  std::vector<fs::path> files;
  files.reserve(keys.size());
  for (const ResultKey& k : keys)
    files.push_back(fs::absolute(k.scenario_path).lexically_normal());
  const fs::path root = common_folder(files);
  std::vector<fs::path> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const fs::path rel = keys[i].suite_relative.empty()
                             ? files[i].lexically_relative(root)
                             : fs::path(keys[i].suite_relative).lexically_normal();
    fs::path result;
    if (!keys[i].entry.empty()) result /= file_safe(keys[i].entry, "_");
    for (const fs::path& part : rel.parent_path())
      if (part != ".." && part != "/") result /= file_safe(part.string(), "_");
    std::string stem = rel.filename().string();
    if (stem.ends_with(".json") && stem.size() > 5) stem.resize(stem.size() - 5);
    std::string name = file_safe(stem, "scenario");
    if (!keys[i].backend_path.empty()) name += "." + backend_short_name(keys[i].backend_path);
    name += keys[i].variant;  // made here: ".seed3", ".repeat2", ".clean"
    out.push_back(result / (name + ".json"));
  }
  return out;
}

std::optional<std::string> result_collision(const std::vector<ResultKey>& keys,
                                            const std::vector<fs::path>& relative) {
  std::map<fs::path, size_t> seen;
  for (size_t i = 0; i < relative.size(); ++i) {
    auto [at, fresh] = seen.emplace(relative[i], i);
    if (fresh) continue;
    const ResultKey& a = keys[at->second];
    if (!a.entry.empty() && a.entry == keys[i].entry && a.scenario_path == keys[i].scenario_path)
      return fmt::format("suite entry {} names {} twice: it would write result file {} twice",
                         a.entry, a.scenario_path, relative[i].string());
    return fmt::format("{}{} and {}{} would both write result file {}", a.scenario_path,
                       a.variant.empty() ? "" : " (" + a.variant.substr(1) + ")",
                       keys[i].scenario_path,
                       keys[i].variant.empty() ? "" : " (" + keys[i].variant.substr(1) + ")",
                       relative[i].string());
  }
  return std::nullopt;
}

std::vector<fs::path> prepare_result_files(const fs::path& out_dir,
                                           const std::vector<fs::path>& relative) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw WriteError("cannot create result folder " + out_dir.string() + ": " + ec.message());
  if (!fs::is_directory(out_dir, ec))
    throw WriteError("cannot write result files in " + out_dir.string() + ": not a folder");
  const std::size_t name_max = name_max_of(out_dir);
  const std::size_t absolute_dir = fs::absolute(out_dir, ec).string().size();
  std::vector<fs::path> files;
  files.reserve(relative.size());
  for (const fs::path& rel : relative) {
    for (const fs::path& part : rel) {
      const std::size_t extra = part == rel.filename() ? kTempNameExtra : 0;
      if (part.string().size() + extra > name_max)
        throw WriteError(fmt::format("cannot write result file {}: its part {} has {} bytes, "
                                     "and with a temporary suffix more than the {} a file name "
                                     "may have here (shorten the scenario's file name)",
                                     rel.string(), part.string(), part.string().size(),
                                     name_max));
    }
    if (absolute_dir + 1 + rel.string().size() + kTempNameExtra >= PATH_MAX)
      throw WriteError(fmt::format("cannot write result file {} in {}: the path would be longer "
                                   "than PATH_MAX ({} bytes); choose a shorter --out",
                                   rel.string(), out_dir.string(), PATH_MAX));
    files.push_back(out_dir / rel);
  }
  probe_writable(out_dir);
  return files;
}

}  // namespace kv::cli
