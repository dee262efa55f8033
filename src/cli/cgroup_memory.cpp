// cgroup_memory.cpp — find this process's memory cgroup and read its limit (see cgroup_memory.h).
#include "cli/cgroup_memory.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kv::cli {
namespace {

namespace fs = std::filesystem;

// cgroup v1 spells "no limit" as the largest page-aligned int64 (9223372036854771712).
constexpr int64_t kNoLimit = int64_t{1} << 62;

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's number; nullopt for "max", an unreadable file or anything else.
std::optional<int64_t> read_number(const fs::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoll(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool has_word(const std::string& list, const std::string& word) {  // "rw,memory" has "memory"
  std::istringstream in(list);
  std::string w;
  while (std::getline(in, w, ','))
    if (w == word) return true;
  return false;
}

// The process's cgroup path in the v2 hierarchy ("0::/a/b") and in v1's memory controller
// ("4:memory:/a/b"); empty when /proc/self/cgroup has no such line.
struct CgroupPaths {
  std::string v2, v1;
};

CgroupPaths paths_of(const std::string& proc_self_cgroup) {
  CgroupPaths p;
  std::istringstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) p.v2 = path;
    else if (has_word(controllers, "memory")) p.v1 = path;
  }
  return p;
}

// `path` of the hierarchy under a mount of its subtree `root` at `mount_point`. A container
// without a cgroup namespace sees its full path while the mount shows only its own subtree: then
// the mount point itself is the process's cgroup.
std::string dir_under(const std::string& mount_point, const std::string& root,
                      const std::string& path) {
  std::string rel;
  if (root == "/") rel = path;
  else if (path.compare(0, root.size(), root) == 0) rel = path.substr(root.size());
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return rel.empty() ? mount_point : (fs::path(mount_point) / rel).string();
}

}  // namespace

std::vector<CgroupDir> memory_cgroup_dirs(const std::string& proc_self_cgroup,
                                          const std::string& mountinfo) {
  const CgroupPaths paths = paths_of(proc_self_cgroup);
  std::optional<CgroupDir> v2, v1;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS"
    std::istringstream words(line);
    std::string id, parent, dev, root, mount_point, word;
    if (!(words >> id >> parent >> dev >> root >> mount_point)) continue;
    while (words >> word && word != "-") {
    }
    std::string fstype, source, super_options;
    words >> fstype >> source >> super_options;
    if (fstype == "cgroup2" && !paths.v2.empty() && !v2)
      v2 = CgroupDir{dir_under(mount_point, root, paths.v2), mount_point, true};
    else if (fstype == "cgroup" && has_word(super_options, "memory") && !paths.v1.empty() && !v1)
      v1 = CgroupDir{dir_under(mount_point, root, paths.v1), mount_point, false};
  }
  std::vector<CgroupDir> dirs;
  for (const auto& d : {v2, v1})
    if (d) dirs.push_back(*d);
  return dirs;
}

bool has_memory_files(const CgroupDir& d) {
  std::error_code ec;
  for (fs::path p = d.dir;; p = p.parent_path()) {
    if (fs::exists(p / (d.v2 ? "memory.current" : "memory.usage_in_bytes"), ec)) return true;
    if (p == fs::path(d.top) || p == p.parent_path()) return false;
  }
}

std::optional<MemoryCap> cgroup_cap(const CgroupDir& d) {
  const char* max_file = d.v2 ? "memory.max" : "memory.limit_in_bytes";
  const char* used_file = d.v2 ? "memory.current" : "memory.usage_in_bytes";
  std::optional<MemoryCap> tightest;
  // A parent's limit binds its children too: walk up to the mount point, keep the least left.
  for (fs::path p = d.dir;; p = p.parent_path()) {
    const auto limit = read_number(p / max_file);
    const auto used = read_number(p / used_file);
    if (limit && used && *limit < kNoLimit) {
      MemoryCap cap{.name = "the cgroup " + p.string() + " (" + max_file + ")",
                    .limit = *limit, .used = *used};
      if (!tightest || cap.left() < tightest->left()) tightest = cap;
    }
    if (p == fs::path(d.top) || p == p.parent_path() || p.empty()) break;
  }
  return tightest;
}

std::optional<MemoryCap> this_cgroup_cap() {
  for (const CgroupDir& d :
       memory_cgroup_dirs(read_text("/proc/self/cgroup"), read_text("/proc/self/mountinfo"))) {
    std::error_code ec;
    const bool found = fs::is_directory(d.dir, ec);
    // Not there (a mount that shows another subtree): the mount point is the best guess.
    const CgroupDir where = found ? d : CgroupDir{d.top, d.top, d.v2};
    if (has_memory_files(where)) return cgroup_cap(where);
  }
  return std::nullopt;
}

}  // namespace kv::cli
