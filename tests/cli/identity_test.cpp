// identity_test.cpp — a result says how it was made: the build (version, git commit and whether
// the tree was modified, as `kvcheck --version` prints it), the command line, the scenario file's
// SHA-256 and when it ran.
#include <array>
#include <cstdio>
#include <ctime>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "plugin/sha256.h"

namespace kv::test {
namespace {

using nlohmann::json;
using RunIdentity = CliTest;

// What git says of the source tree: its HEAD commit ("" outside git) and whether tracked files
// differ from it.
struct GitView {
  std::string head;
  bool dirty = false;
};

std::string shell(const std::string& cmd, bool* ok) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  *ok = pclose(p) == 0;
  return out;
}

GitView git_view() {
  GitView v;
  bool ok = false;
  const std::string src = KVCHECK_SOURCE_DIR;
  std::string head = shell("git -C '" + src + "' rev-parse --verify HEAD 2>/dev/null", &ok);
  if (!ok) return v;
  v.head = head.substr(0, head.find('\n'));
  const std::string changes =
      shell("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null", &ok);
  v.dirty = !ok || !changes.empty();
  return v;
}

TEST_F(RunIdentity, TheResultNamesTheBuildTheCommandTheFileAndTheTime) {
  write("tiny.json", kTinyScenario);
  const std::time_t before = std::time(nullptr);
  CliRun r = kvcheck("run tiny.json --seed 5 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(read_file(dir_ / "results/runs/tiny.json"));

  const std::vector<std::string> line = doc.at("command_line");
  ASSERT_EQ(line.size(), 6u);
  EXPECT_NE(line[0].find("kvcheck"), std::string::npos) << line[0];
  EXPECT_EQ(std::vector<std::string>(line.begin() + 1, line.end()),
            (std::vector<std::string>{"run", "tiny.json", "--seed", "5", "-q"}))
      << doc["command_line"].dump();
  const std::string text = read_file(dir_ / "tiny.json");
  EXPECT_EQ(doc.at("scenario_sha256"),
            sha256_hex(reinterpret_cast<const uint8_t*>(text.data()), text.size()));

  const std::string at = doc.at("started_at");
  ASSERT_TRUE(std::regex_match(at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << at;
  std::tm utc{};
  ASSERT_NE(strptime(at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &utc), nullptr);
  const std::time_t when = timegm(&utc);
  EXPECT_GE(when, before - 1) << at;
  EXPECT_LE(when, std::time(nullptr) + 1) << at;

  const json& build = doc.at("build");
  EXPECT_EQ(build.at("version"), doc.at("kvcheck_version"));
  const GitView git = git_view();
  if (git.head.empty()) {
    EXPECT_EQ(build.at("commit"), "unknown");
  } else {
    // The build step records the tree's state at every build (scripts/build-identity.cmake).
    EXPECT_EQ(build.at("commit"), git.head);
    EXPECT_EQ(build.at("dirty"), git.dirty);
  }
  EXPECT_TRUE(build.at("cuda").is_null() || build.at("cuda").at("version") != "");

  // --version prints the same identity.
  CliRun v = kvcheck("--version");
  EXPECT_EQ(v.exit_code, 0);
  const std::string commit = build.at("commit");
  EXPECT_TRUE(contains(v.out, "kvcheck " + build.at("version").get<std::string>())) << v.out;
  EXPECT_TRUE(contains(v.out, "commit " + commit.substr(0, 12))) << v.out;
  EXPECT_EQ(contains(v.out, "modified"), build.at("dirty").get<bool>()) << v.out;
}

TEST_F(RunIdentity, EachScenarioOfARunHasItsOwnDigest) {
  write("tiny.json", kTinyScenario);
  write("poison.json", kPoisonScenario);
  CliRun r = kvcheck("run tiny.json poison.json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json a = json::parse(read_file(dir_ / "results/runs/tiny.json"));
  const json b = json::parse(read_file(dir_ / "results/runs/poison.json"));
  EXPECT_NE(a.at("scenario_sha256"), b.at("scenario_sha256"));
  EXPECT_EQ(a.at("command_line"), b.at("command_line"));
}

}  // namespace
}  // namespace kv::test
