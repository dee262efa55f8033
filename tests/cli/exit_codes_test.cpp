// exit_codes_test.cpp — one case per row of the exit-code table (src/cli/exit_codes.h), with and
// without --bisect, and the table's two renderings: `--help` and the "Exit codes" section of
// docs/reliability.md.
#include <fstream>
#include <iterator>

#include "backend_cli.h"
#include "cli/exit_codes.h"
#include "cli/fault_injection.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using ExitCodes = CliTest;
using kv::cli::bisect_status;

// `kvcheck run ARGS` and `kvcheck run ARGS --bisect`: both statuses.
struct Both {
  int plain, bisect;
  std::string err;
};

using kv::cli::kFaultHookBuiltIn;

// Row 4 and a worker's death need KVCHECK_INJECT_FAULT, built in only with -DKVCHECK_TEST_HOOKS=ON
// (scripts/test.sh and scripts/sanitize.sh turn it on): a release build's ctest skips them.
constexpr const char* kNoFaultHook =
    "this build has no fault hook (KVCHECK_INJECT_FAULT): configure with -DKVCHECK_TEST_HOOKS=ON, "
    "as scripts/test.sh does, to run this test";

class ExitCodeRows : public CliTest {
 protected:
  // ARGS without --out get `--out out`.
  Both both(std::string args, const std::string& env = "") {
    if (!contains(args, "--out")) args += " --out out";
    CliRun a = kvcheck_env(env, "run " + args);
    CliRun b = kvcheck_env(env, "run " + args + " --bisect");
    return {a.exit_code, b.exit_code, a.err + b.err};
  }
};

TEST_F(ExitCodeRows, Row0EveryVerdictAsExpected) {
  write("tiny.json", kTinyScenario);
  const Both r = both("tiny.json -q");
  EXPECT_EQ(r.plain, 0) << r.err;
  EXPECT_EQ(r.bisect, 0) << r.err;
}

TEST_F(ExitCodeRows, Row1AVerdictNotAsExpected) {
  write("poison.json", kPoisonScenario);
  const Both r = both("poison.json -q --regression new-blocks-not-zeroed");
  EXPECT_EQ(r.plain, 1) << r.err;
  EXPECT_EQ(r.bisect, 1) << r.err;
}

TEST_F(ExitCodeRows, Row2BadInputIsASkipUnderBisect) {
  write("unknown.json", R"({"format": 1, "workload": {"requests": 2, "brand_new_field": 1}})");
  write("tiny.json", kTinyScenario);
  for (const std::string& args :
       {std::string("unknown.json"), std::string("tiny.json --regression brand-new-regression"),
        std::string("tiny.json --brand-new-option"), std::string("missing.json")}) {
    const Both r = both(args);
    EXPECT_EQ(r.plain, 2) << args << ": " << r.err;
    EXPECT_EQ(r.bisect, 125) << args << ": " << r.err;
  }
}

TEST_F(ExitCodeRows, Row3CannotRunIsASkipUnderBisect) {
  write("tiny.json", kTinyScenario);
  write("afile", "");
  for (const std::string& args : {std::string("tiny.json --out afile/x"),
                                  std::string("tiny.json --backend missing.so")}) {
    const Both r = both(args);
    EXPECT_EQ(r.plain, 3) << args << ": " << r.err;
    EXPECT_EQ(r.bisect, 125) << args << ": " << r.err;
  }
}

TEST_F(ExitCodeRows, Row4InternalErrorIsABugAndBadUnderBisect) {
  if (!kFaultHookBuiltIn) GTEST_SKIP() << kNoFaultHook;
  write("tiny.json", kTinyScenario);
  // In this process, and in a backend's worker process (the error crosses the pipe).
  for (const std::string& args :
       {std::string("tiny.json"), "tiny.json --backend '" + kHostPlugin + "'"}) {
    const Both r = both(args, "KVCHECK_INJECT_FAULT=internal-error");
    EXPECT_EQ(r.plain, 4) << args << ": " << r.err;
    EXPECT_EQ(r.bisect, 1) << args << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "internal error: BlockPool: invariant broken on purpose")) << r.err;
    EXPECT_TRUE(contains(r.err, "this is a kvcheck bug, please report it")) << r.err;
    EXPECT_FALSE(contains(r.err, "could not be carried out")) << r.err;
  }
}

TEST_F(ExitCodeRows, AVerdictErrorOfTheBackendStaysExit1) {
  if (!kFaultHookBuiltIn) GTEST_SKIP() << kNoFaultHook;
  write("tiny.json", kTinyScenario);
  // kvcheck's worker dies by SIGSEGV outside any backend call: verdict error, as before.
  const Both r = both("tiny.json -q --backend '" + kHostPlugin + "'", "KVCHECK_INJECT_FAULT=crash");
  EXPECT_EQ(r.plain, 1) << r.err;
  EXPECT_EQ(r.bisect, 1) << r.err;
}

// Without the hook the variable changes nothing, and kvcheck says so once (also under -q, and
// with a backend's worker).
TEST_F(ExitCodeRows, AFaultRequestWithoutTheHookIsIgnoredOutLoud) {
  if (kFaultHookBuiltIn) GTEST_SKIP() << "this build has the fault hook: the variable is obeyed";
  write("tiny.json", kTinyScenario);
  const std::string warning =
      "warning: KVCHECK_INJECT_FAULT is set but this kvcheck was built without "
      "-DKVCHECK_TEST_HOOKS=ON: ignored\n";
  for (const std::string& args :
       {std::string("tiny.json"), "tiny.json --backend '" + kHostPlugin + "'"}) {
    const CliRun r =
        kvcheck_env("KVCHECK_INJECT_FAULT=internal-error", "run " + args + " -q --out out");
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_EQ(r.err, warning) << args;
  }
}

TEST(ExitCodeTable, BisectMapping) {
  EXPECT_EQ(bisect_status(0), 0);
  EXPECT_EQ(bisect_status(1), 1);
  EXPECT_EQ(bisect_status(2), 125);
  EXPECT_EQ(bisect_status(3), 125);
  EXPECT_EQ(bisect_status(4), 1);
  EXPECT_EQ(bisect_status(130), 130);
  EXPECT_EQ(bisect_status(143), 143);
}

TEST(ExitCodeTable, EveryCodeOnceInOrder) {
  int last = -1;
  for (const auto& row : kv::cli::exit_code_table()) {
    EXPECT_GT(row.code, last);
    last = row.code;
  }
  EXPECT_EQ(kv::cli::exit_code_table().size(), 9u);
}

TEST_F(ExitCodes, HelpShowsTheTable) {
  CliRun r = kvcheck("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, kv::cli::exit_codes_help())) << r.out;
}

constexpr const char* kBegin = "<!-- exit-codes:begin -->\n";
constexpr const char* kEnd = "<!-- exit-codes:end -->";

constexpr const char* kExitCodesDoc = "docs/reliability.md";

TEST(ExitCodeTable, DocsTableIsTheGeneratedOne) {
  std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/" + kExitCodesDoc, std::ios::binary);
  ASSERT_TRUE(in.good()) << "cannot open " << kExitCodesDoc;
  const std::string doc{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::size_t begin = doc.find(kBegin), end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << kExitCodesDoc << " has no " << kBegin;
  ASSERT_NE(end, std::string::npos) << kExitCodesDoc << " has no " << kEnd;
  EXPECT_EQ(doc.find(kBegin, begin + 1), std::string::npos)
      << "two exit-code tables in " << kExitCodesDoc;
  const std::size_t from = begin + std::string(kBegin).size();
  EXPECT_EQ(doc.substr(from, end - from), kv::cli::exit_codes_markdown())
      << kExitCodesDoc << "'s exit-code table is not exit_codes.h's; regenerate it with\n"
         "  build/kvcheck schema exit-codes --markdown";
  // One copy only: README.md is the front door and points at the docs (a copy there goes stale).
  std::ifstream front(std::string(KVCHECK_SOURCE_DIR) + "/README.md", std::ios::binary);
  const std::string readme{std::istreambuf_iterator<char>(front), std::istreambuf_iterator<char>()};
  EXPECT_EQ(readme.find(kBegin), std::string::npos)
      << "README.md holds an exit-code table; it lives in " << kExitCodesDoc;
}

}  // namespace
}  // namespace kv::test
