// output_loss_test.cpp — no output is lost silently: a stdout that cannot be written (a full
// disk, /dev/full; a closed descriptor) is exit 3 with a message, for every command that prints,
// unless the run found a mismatch (1 outranks 3); the result path is checked before the run (a
// name too long for a file is exit 2 at /name, a folder that cannot be written exit 3, both
// before anything runs). Signals, a closed stdout pipe among them: signals_test.cpp.
#include <sys/wait.h>

#include "cli_runner.h"

namespace kv::test {
namespace {

using OutputLoss = CliTest;

// Runs `kvcheck ARGS REDIRECT` in the test's folder: the exit status and stderr.
CliRun with_stdout(const fs::path& dir, const std::string& args, const std::string& redirect) {
  const fs::path err = dir / ".stderr";
  const std::string cmd = "cd '" + dir.string() + "' && NO_COLOR=1 '" KVCHECK_BINARY "' " + args +
                          " " + redirect + " 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err);
  fs::remove(err);
  return r;
}

TEST_F(OutputLoss, FullOrClosedStdoutIsExit3ForEveryCommandThatPrints) {
  write("tiny.json", kTinyScenario);
  for (const char* redirect : {">/dev/full", ">&-"}) {
    for (const char* args : {"run tiny.json --json -q --out out", "run tiny.json -q --out out",
                             "validate tiny.json", "list", "list --json", "schema scenario",
                             "schema exit-codes --markdown", "--help", "run --help"}) {
      CliRun r = with_stdout(dir_, args, redirect);
      EXPECT_EQ(r.exit_code, 3) << args << " " << redirect << ": " << r.err;
      EXPECT_TRUE(contains(r.err, "cannot write to stdout")) << args << " " << redirect;
    }
  }
}

// A lost stdout is "cannot run" (3) in the run's stated order (exit_codes.h, worse_status): a
// mismatch the run found (1) outranks it, so the bad commit is not skipped under --bisect. The
// loss is still said on stderr.
TEST_F(OutputLoss, AMismatchStaysExit1WhenStdoutIsLostToo) {
  write("tiny.json", kTinyScenario);
  for (const char* bisect : {"", " --bisect"}) {
    const std::string args = std::string("run tiny.json -q --out out --expect corrupt") + bisect;
    CliRun r = with_stdout(dir_, args, ">/dev/full");
    EXPECT_EQ(r.exit_code, 1) << bisect << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "cannot write to stdout")) << r.err;
  }
}

TEST_F(OutputLoss, StdoutLossUnderBisectIsASkip) {
  write("tiny.json", kTinyScenario);
  CliRun r = with_stdout(dir_, "run tiny.json --json -q --bisect --out out", ">/dev/full");
  EXPECT_EQ(r.exit_code, 125) << r.err;
}

TEST_F(OutputLoss, ANameTooLongForAFileFailsUpFrontAtSlashName) {
  std::string s = kTinyScenario;
  s.replace(s.find("\"tiny\""), 6, "\"" + std::string(300, 'n') + "\"");
  write("long.json", s);
  for (const char* cmd : {"validate long.json", "run long.json --out out"}) {
    CliRun r = kvcheck(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "long.json: /name: got a name of 300 bytes, expected at most "
                                "200")) << r.err;
    EXPECT_FALSE(contains(r.err, "running")) << "nothing may run: " << r.err;
  }
  EXPECT_TRUE(files_under("out").empty());
}

TEST_F(OutputLoss, TheLongestNameRunsAndWritesItsResultAndTwin) {
  std::string s = kTinyScenario;
  const std::string name(200, 'n');
  s.replace(s.find("\"tiny\""), 6, "\"" + name + "\"");
  write("long.json", s);
  CliRun r = kvcheck("run long.json -q --out out --clean-twins --regression "
                     "new-blocks-not-zeroed --expect corrupt");
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_NE(r.exit_code, 3) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "out/long.json"));  // results are named after the file
  EXPECT_TRUE(fs::exists(dir_ / "out/long.clean.json"));
}

TEST_F(OutputLoss, AnUnwritableResultFolderFailsBeforeTheRun) {
  write("tiny.json", kTinyScenario);
  write("afile", "not a folder");
  for (const char* out : {"afile/sub", "afile"}) {
    CliRun r = kvcheck(std::string("run tiny.json --out ") + out);
    EXPECT_EQ(r.exit_code, 3) << out << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "afile")) << r.err;
    EXPECT_FALSE(contains(r.err, "running tiny")) << "checked before the run: " << r.err;
    EXPECT_EQ(kvcheck(std::string("run tiny.json --bisect --out ") + out).exit_code, 125);
  }
}

TEST_F(OutputLoss, AnOutPathBeyondPathMaxFailsBeforeTheRun) {
  write("tiny.json", kTinyScenario);
  // Nested folders whose path passes PATH_MAX (4096) once the result name is added.
  std::string out = "o";
  while (out.size() < 4000) out += "/" + std::string(200, 'd');
  CliRun r = kvcheck("run tiny.json --out " + out);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(contains(r.err, "running tiny")) << r.err;
}

}  // namespace
}  // namespace kv::test
