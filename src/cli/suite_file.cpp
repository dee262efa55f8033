// suite_file.cpp — reading a suite file: the scenario format's JSON reader and error style (a
// field's JSON pointer, what was found, what was expected), paths expanded like the command
// line's (cli/scenario_files.h) plus globs.
#include "cli/suite_file.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cli/scenario_files.h"
#include "cli/seed_list.h"
#include "io/input_file.h"
#include "scenario/json_text.h"
#include "scenario/json_value.h"
#include "scenario/labels.h"

namespace kv::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxSuiteBytes = 4u << 20;
constexpr std::size_t kMaxEntries = 10'000;

void refuse_unknown_keys(const Json& v, const std::string& p,
                         const std::vector<std::string>& keys) {
  require_object(v, p);
  for (const auto& [key, value] : v.items())
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      fail(child_pointer(p, key), "unknown key \"" + key + "\"" + suggestion_tail(key, keys) +
                                      "; a suite entry has " + quoted_list(keys));
}

std::vector<std::string> read_labels(const Json& v, const std::string& p) {
  std::vector<std::string> labels;
  const auto& items = read_array(v, p, "labels", 0, SIZE_MAX);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = child_pointer(p, i);
    std::string label = read_string(items[i], item);
    if (auto why = label_problem(label)) fail(item, "got \"" + label + "\", " + *why);
    if (std::find(labels.begin(), labels.end(), label) != labels.end())
      fail(item, fmt::format("label \"{}\" is listed twice", label));
    labels.push_back(std::move(label));
  }
  return labels;
}

// One `paths` item: a file, a folder (its scenario files) or a glob, relative to `base`.
std::vector<std::string> expand_item(const std::string& item, const fs::path& base,
                                     const std::string& p) {
  if (item.empty()) fail(p, "got \"\", expected a scenario file, folder or glob");
  const fs::path full = (fs::path(item).is_absolute() ? fs::path(item) : base / item)
                           .lexically_normal();
  std::vector<std::string> found;
  if (item.find_first_of("*?[") != std::string::npos) {
    glob_t g{};
    const int rc = ::glob(full.c_str(), 0, nullptr, &g);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) {
      const std::string f = g.gl_pathv[i];
      if (!is_suite_file(f) && !f.ends_with(".schema.json") && fs::is_regular_file(f))
        found.push_back(f);
    }
    ::globfree(&g);
    if (found.empty()) fail(p, "got \"" + item + "\", a glob that matches no scenario file");
    return found;
  }
  std::error_code ec;
  if (!fs::exists(full, ec))
    fail(p, fmt::format("got \"{}\": no such file or folder ({})", item, full.string()));
  ScenarioFiles files = expand_scenario_paths({full.string()});
  if (!files.ok()) fail(p, files.errors.front());
  return files.files;
}

SuiteEntry read_entry(const Json& v, const std::string& p, const fs::path& base) {
  static const std::vector<std::string> keys = {"id",     "description", "paths",
                                                "labels", "expect",      "regressions",
                                                "fail_fast", "seeds",    "requires"};
  refuse_unknown_keys(v, p, keys);
  SuiteEntry e;
  if (!v.contains("id")) fail(child_pointer(p, "id"), "missing; every entry has an id (a label)");
  e.id = read_string(v["id"], child_pointer(p, "id"));
  if (auto why = label_problem(e.id)) fail(child_pointer(p, "id"), "got \"" + e.id + "\", " + *why);
  if (v.contains("description"))
    e.description = read_string(v["description"], child_pointer(p, "description"));
  if (!v.contains("paths"))
    fail(child_pointer(p, "paths"), "missing; an entry names its scenario files, folders or globs");
  const std::string pp = child_pointer(p, "paths");
  const auto& paths = read_array(v["paths"], pp, "paths", 1, SIZE_MAX);
  std::set<std::string> seen;
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string item = child_pointer(pp, i);
    for (const std::string& f : expand_item(read_string(paths[i], item), base, item)) {
      const std::string norm = fs::path(f).lexically_normal().string();
      if (!seen.insert(norm).second) continue;  // a file two items name runs once
      e.files.push_back(norm);
      e.relative.push_back(fs::path(norm).lexically_relative(base.lexically_normal()).string());
    }
  }
  if (v.contains("labels")) e.labels = read_labels(v["labels"], child_pointer(p, "labels"));
  if (v.contains("expect"))
    e.expect = read_enum(v["expect"], child_pointer(p, "expect"), kExpectationNames);
  if (v.contains("regressions")) {
    const std::string rp = child_pointer(p, "regressions");
    const std::string r = read_string(v["regressions"], rp);
    if (r != "off" && r != "as-written")
      fail(rp, "got \"" + r + "\", expected \"off\" (every regression off) or \"as-written\"");
    e.regressions_off = r == "off";
  }
  if (v.contains("fail_fast")) e.fail_fast = read_bool(v["fail_fast"], child_pointer(p, "fail_fast"));
  if (v.contains("seeds")) {
    const std::string sp = child_pointer(p, "seeds");
    auto parsed = parse_seed_list(read_string(v["seeds"], sp));
    if (auto* why = std::get_if<std::string>(&parsed)) fail(sp, *why);
    e.seeds = std::get<std::vector<uint64_t>>(parsed);
  }
  if (v.contains("requires")) {
    const std::string rp = child_pointer(p, "requires");
    const auto& items = read_array(v["requires"], rp, "requirements", 0, 1);
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string r = read_string(items[i], child_pointer(rp, i));
      if (r != "gpu") fail(child_pointer(rp, i), "got \"" + r + "\", expected \"gpu\"");
      e.requires_gpu = true;
    }
  }
  return e;
}

SuiteFile read_suite(const Json& doc, const std::string& path) {
  refuse_unknown_keys(doc, "", {"suite", "description", "entries"});
  if (!doc.contains("suite"))
    fail("/suite", fmt::format("missing; a suite file says its format (\"suite\": {})",
                               kSuiteFormat));
  read_int(doc["suite"], "/suite", kSuiteFormat, kSuiteFormat, "the format this build reads");
  SuiteFile suite{.path = path, .description = {}, .entries = {}};
  if (doc.contains("description"))
    suite.description = read_string(doc["description"], "/description");
  if (!doc.contains("entries")) fail("/entries", "missing; a suite lists its entries");
  const auto& entries = read_array(doc["entries"], "/entries", "entries", 1, kMaxEntries);
  fs::path base = fs::path(path).parent_path();
  if (base.empty()) base = ".";
  std::set<std::string> ids;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string p = child_pointer("/entries", i);
    SuiteEntry e = read_entry(entries[i], p, base);
    if (!ids.insert(e.id).second)
      fail(child_pointer(p, "id"), fmt::format("id \"{}\" is used by an earlier entry", e.id));
    suite.entries.push_back(std::move(e));
  }
  return suite;
}

}  // namespace

std::variant<SuiteFile, std::string> load_suite(const std::string& path) {
  InputFileError error;
  const std::optional<std::string> text = read_input_file(path, kMaxSuiteBytes, error);
  if (!text) return path + ": " + error.message;
  try {
    return read_suite(parse_json_text(*text), path);
  } catch (const ScenarioFailure& f) {
    return format_error(f.error, path);
  }
}

}  // namespace kv::cli
