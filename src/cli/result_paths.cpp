// result_paths.cpp — result file names, and the checks made on them before a run.
#include "cli/result_paths.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

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

}  // namespace

std::string result_file_name(const std::string& scenario_name) {
  std::string s = scenario_name.empty() ? "scenario" : scenario_name;
  for (char& c : s) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (!keep) c = '_';
  }
  if (s == "." || s == "..") s = "scenario";
  return s + ".json";
}

std::vector<fs::path> prepare_result_files(const fs::path& out_dir,
                                           const std::vector<std::string>& names) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw WriteError("cannot create result folder " + out_dir.string() + ": " + ec.message());
  if (!fs::is_directory(out_dir, ec))
    throw WriteError("cannot write result files in " + out_dir.string() + ": not a folder");
  const std::size_t name_max = name_max_of(out_dir);
  const std::size_t absolute_dir = fs::absolute(out_dir, ec).string().size();
  std::vector<fs::path> files;
  for (const std::string& name : names) {
    const std::string file = result_file_name(name);
    if (file.size() + kTempNameExtra > name_max)
      throw WriteError(fmt::format("cannot write result file {}: its name has {} bytes, and "
                                   "with its temporary suffix more than the {} a file name may "
                                   "have here (shorten the scenario's \"name\")",
                                   file, file.size(), name_max));
    if (absolute_dir + 1 + file.size() + kTempNameExtra >= PATH_MAX)
      throw WriteError(fmt::format("cannot write result file {} in {}: the path would be longer "
                                   "than PATH_MAX ({} bytes); choose a shorter --out",
                                   file, out_dir.string(), PATH_MAX));
    files.push_back(out_dir / file);
  }
  probe_writable(out_dir);
  return files;
}

}  // namespace kv::cli
