// usage_test.cpp — command-line usage: CLI11's own errors exit 2, --help and --version exit 0.
#include <sstream>

#include "cli_runner.h"

namespace kv::test {
namespace {

using Usage = CliTest;

TEST_F(Usage, NoSubcommandIsAUsageError) {
  CliRun r = kvcheck("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "subcommand")) << r.err;
}

TEST_F(Usage, HelpExitsZeroAndDocumentsTheExitCodes) {
  CliRun r = kvcheck("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"run", "validate", "list", "Exit codes", "125"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
  CliRun run_help = kvcheck("run --help");
  EXPECT_EQ(run_help.exit_code, 0);
  for (const char* s : {"--device", "--seed", "--epochs", "--regression", "--no-regressions",
                        "--expect", "--out", "--json", "--bisect"})
    EXPECT_TRUE(contains(run_help.out, s)) << s << " missing from:\n" << run_help.out;
}

TEST_F(Usage, VersionExitsZero) {
  CliRun r = kvcheck("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "0.")) << r.out;
}

TEST_F(Usage, UnknownOptionOrSubcommandExits2) {
  write("tiny.json", kTinyScenario);
  EXPECT_EQ(kvcheck("run tiny.json --frobnicate").exit_code, 2);
  EXPECT_EQ(kvcheck("frobnicate").exit_code, 2);
  EXPECT_EQ(kvcheck("run").exit_code, 2) << "a file is required";
}

TEST_F(Usage, BadOptionValuesExit2AndRunNothing) {
  write("tiny.json", kTinyScenario);
  for (const char* args : {"--expect maybe", "--device tpu", "--epochs 0", "--epochs 1001", "--epochs x",
                           "--seed -1", "--seed 18446744073709551616", "--regression new-blocks-not-zeroed --no-regressions",
                           "-q -v"}) {
    CliRun r = kvcheck(std::string("run tiny.json ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  EXPECT_TRUE(files_under("results").empty());
}

TEST_F(Usage, UnknownDeviceNamesTheOptionAndTheDevices) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --device tpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--device")) << r.err;
  EXPECT_TRUE(contains(r.err, R"(got "tpu", expected host, cuda, cuda:N (GPU N, from 0) or auto)"))
      << r.err;
  CliRun typo = kvcheck("run tiny.json --device cdua");
  EXPECT_TRUE(contains(typo.err, R"(did you mean "cuda"?)")) << typo.err;
  for (const char* bad : {"cuda:", "cuda:-1", "cuda:x", "cuda:1.5", "cuda:99999", "host:0"}) {
    CliRun b = kvcheck(std::string("run tiny.json --device ") + bad);
    EXPECT_EQ(b.exit_code, 2) << bad << ": " << b.err;
    EXPECT_TRUE(contains(b.err, "--device: got \"" + std::string(bad) + "\"")) << b.err;
  }
  // A GPU number the machine lacks (or no CUDA in this build): cannot run, exit 3, saying why.
  CliRun gpu9 = kvcheck("run tiny.json --device cuda:9 --out out");
  EXPECT_EQ(gpu9.exit_code, 3) << gpu9.err;
  EXPECT_TRUE(contains(gpu9.err, "--device cuda")) << gpu9.err;
  EXPECT_FALSE(fs::exists(dir_ / "out/tiny.json"));
}

TEST_F(Usage, UnknownRegressionSuggestsTheClosestAndWritesNothing) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --regression new-block-not-zeroed");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "new-block-not-zeroed")) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean \"new-blocks-not-zeroed\"")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(files_under("results").empty());
}

TEST_F(Usage, QuietAndVerboseWorkAfterTheSubcommand) {
  write("tiny.json", kTinyScenario);
  CliRun quiet = kvcheck("run tiny.json -q");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
  CliRun verbose = kvcheck("-v run tiny.json");
  EXPECT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_TRUE(contains(verbose.err, "debug")) << verbose.err;
}

// --help fits a 100-column terminal, for every command (cli/help_format.h).
TEST_F(Usage, HelpFitsOneHundredColumns) {
  for (const std::string cmd : {"", "run ", "validate ", "list ", "list scenarios ", "schema ",
                                "conform "}) {
    CliRun r = kvcheck(cmd + "--help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    std::istringstream lines(r.out);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
      ++count;
      EXPECT_LE(line.size(), 100u) << cmd << "--help: " << line;
    }
    EXPECT_GT(count, 5) << cmd;
  }
  // Wrapped, not cut: the regression names are all there.
  const std::string run = kvcheck("run --help").out;
  for (const char* name : {"merge-ignores-context-count", "gather-assumes-contiguous"})
    EXPECT_TRUE(contains(run, name)) << name;
}

TEST_F(Usage, AnUnknownOptionSuggestsTheClosestOfItsCommand) {
  write("tiny.json", kTinyScenario);
  CliRun r = kvcheck("run tiny.json --exit-first");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--exit-first: unknown option; did you mean --exitfirst?")) << r.err;
  CliRun top = kvcheck("--verbsoe run tiny.json");
  EXPECT_TRUE(contains(top.err, "did you mean --verbose?")) << top.err;
  CliRun far = kvcheck("run tiny.json --zzzzzz");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_FALSE(contains(far.err, "did you mean")) << far.err;
  EXPECT_TRUE(files_under("results").empty());
}

}  // namespace
}  // namespace kv::test
