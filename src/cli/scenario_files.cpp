// scenario_files.cpp — folders on the command line become their scenario files.
#include "cli/scenario_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace kv::cli {

namespace fs = std::filesystem;

namespace {

bool skipped(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.empty() || name.front() == '.' || name.ends_with(".schema.json") ||
         is_suite_file(name);
}

// Every regular file under `dir` that is not skipped, sorted; the first error, if any.
std::vector<std::string> files_under(const fs::path& dir, std::string& error) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (skipped(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) found.push_back(it->path().string());
  }
  if (ec) error = fmt::format("{}: cannot list the folder: {}", dir.string(), ec.message());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

bool is_suite_file(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  return name == "suite.json" || name.ends_with(".suite.json");
}

ScenarioFiles expand_scenario_paths(const std::vector<std::string>& args) {
  ScenarioFiles out;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      out.files.push_back(arg);  // a file, or a path the reader will say is missing
      continue;
    }
    std::string error;
    std::vector<std::string> found = files_under(arg, error);
    if (!error.empty()) {
      out.errors.push_back(error);
    } else if (found.empty()) {
      out.errors.push_back(fmt::format(
          "{}: the folder holds no scenario file (expected *.json scenarios; *.schema.json, "
          "suite files and hidden files are skipped)",
          arg));
    }
    out.files.insert(out.files.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace kv::cli
