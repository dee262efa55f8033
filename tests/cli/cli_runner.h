// cli_runner.h — run the built kvcheck binary (KVCHECK_BINARY) in a private temp folder and
// capture its exit status, stdout and stderr; plus the small scenarios the CLI tests share, and
// readers of `kvcheck run --json`'s stdout.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"

namespace kv::test {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A small valid scenario: one layer, two requests, two epochs — a second or less on the host.
inline const char* kTinyScenario = R"({
  "format": 1,
  "name": "tiny",
  "seed": 3,
  "model": {"layers": 1},
  "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4], "epochs": 2}
})";

// Freed blocks are poisoned with NaN in a small cache, so epoch 2 reuses them: clean as written,
// corrupt with --regression new-blocks-not-zeroed (the seed-000 mechanism).
inline const char* kPoisonScenario = R"({
  "format": 1,
  "name": "poison",
  "seed": 3,
  "model": {"layers": 1},
  "cache": {"num_blocks": 8, "block_size": 4},
  "faults": {"freed_blocks": "nan"},
  "workload": {"requests": 2, "prompt_len": [5, 7], "new_tokens": [2, 3], "epochs": 2}
})";

// One request whose 6,144-token prompt is prefilled in one step: that step's causal attention
// alone is 6144^2 / 2 x 8 heads x 128 = 1.9e10 multiply-adds, about a minute on one core of the
// CI machine, and much longer than the deadline on any.
inline const char* kLongOpScenario = R"({
  "format": 1, "name": "long-op",
  "model": {"layers": 1, "num_q_heads": 8, "num_kv_heads": 8, "head_dim": 64},
  "cache": {"num_blocks": 400, "block_size": 16},
  "engine": {"max_tokens_per_step": 6144},
  "workload": {"requests": 1, "prompt_len": 6144, "new_tokens": 2}
})";

// Each test's empty folder (dir_) is the binary's working directory.
class CliTest : public TempDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  // `args` is appended to the binary verbatim (shell syntax); cwd is the test's folder.
  CliRun kvcheck(const std::string& args) { return kvcheck_env("", args); }

  // The same with `env` (shell syntax, `NAME=value ...`) in the command's environment.
  CliRun kvcheck_env(const std::string& env, const std::string& args) {
    const fs::path out = dir_ / ".stdout", err = dir_ / ".stderr";
    const std::string cmd = "cd '" + dir_.string() + "' && NO_COLOR=1 " + env + " '" +
                            KVCHECK_BINARY "' " + args + " >'" + out.string() + "' 2>'" +
                            err.string() + "'";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // Every file under `sub` (recursively), relative names; empty when `sub` does not exist.
  std::vector<std::string> files_under(const std::string& sub) const {
    std::vector<std::string> names;
    if (!fs::exists(dir_ / sub)) return names;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / sub))
      if (e.is_regular_file()) names.push_back(fs::relative(e.path(), dir_ / sub).string());
    return names;
  }
};

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// `kvcheck run --json`'s stdout as the one kvcheck.run/1 document it must be: nothing else on
// stdout, results an array that the summary counts (each result passed, failed or error), and the
// summary's exit_code the process's (no --bisect, which maps the process's). A test fails where it
// is not, and gets null (whose members throw when read).
inline nlohmann::json run_document(const CliRun& r) {
  const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  const bool ok = doc.is_object() && doc.size() == 3 &&
                  doc.value("schema", "") == "kvcheck.run/1" && doc.contains("results") &&
                  doc["results"].is_array() && doc.contains("summary") &&
                  doc["summary"].is_object();
  if (!ok) {
    ADD_FAILURE() << "stdout is not one kvcheck.run/1 document:\n" << r.out;
    return nullptr;
  }
  const nlohmann::json& s = doc["summary"];
  EXPECT_EQ(s.value("exit_code", -1), r.exit_code) << s;
  EXPECT_EQ(s.value("passed", 0) + s.value("failed", 0) + s.value("errors", 0),
            static_cast<int64_t>(doc["results"].size()))
      << s;
  return doc;
}

// The result documents of `kvcheck run --json` (run_document's checks), in run order.
inline nlohmann::json run_results(const CliRun& r) {
  const nlohmann::json doc = run_document(r);
  return doc.is_null() ? nullptr : doc["results"];
}

// The one result document of a `kvcheck run --json` of one scenario run.
inline nlohmann::json only_result(const CliRun& r) {
  const nlohmann::json results = run_results(r);
  if (results.is_null()) return nullptr;
  if (results.size() != 1) {
    ADD_FAILURE() << "expected one result, got " << results.size() << ":\n" << r.out;
    return nullptr;
  }
  return results[0];
}

}  // namespace kv::test
