// output_loss_test.cpp — no output is lost silently: a stdout that cannot be written (a full
// disk, /dev/full; a closed descriptor) is exit 3 with a message, for every command that prints;
// the result path is checked before the run (a name too long for a file is exit 2 at /name, a
// folder that cannot be written exit 3, both before anything runs); SIGINT and SIGTERM leave no
// temporary file, say "interrupted" and exit 130 and 143.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

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
  EXPECT_TRUE(fs::exists(dir_ / "out" / (name + ".json")));
  EXPECT_TRUE(fs::exists(dir_ / "out" / (name + ".clean.json")));
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

// A run long enough to be interrupted: many epochs of a small workload.
const char* kLongScenario = R"({
  "format": 1, "name": "long", "seed": 3, "model": {"layers": 2},
  "workload": {"requests": 16, "prompt_len": [32, 64], "new_tokens": [16, 32], "epochs": 1000}
})";

// Starts kvcheck ARGS, waits `after`, sends `sig`; the exit status and stderr.
CliRun interrupted(const fs::path& dir, const std::string& args, int sig,
                   std::chrono::milliseconds after) {
  const fs::path err = dir / ".stderr";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd = "cd '" + dir.string() + "' && exec '" KVCHECK_BINARY "' " + args +
                            " >/dev/null 2>'" + err.string() + "'";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(after);
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err);
  return r;
}

TEST_F(OutputLoss, SigintAndSigtermExit130And143AndLeaveNoTempFile) {
  write("long.json", kLongScenario);
  write("tiny.json", kTinyScenario);
  for (const int sig : {SIGINT, SIGTERM}) {
    // tiny first: its result is written, then long is interrupted mid-run.
    CliRun r = interrupted(dir_, "run tiny.json long.json --out out", sig,
                           std::chrono::milliseconds(1500));
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    EXPECT_TRUE(contains(r.err, "kvcheck: interrupted")) << r.err;
    for (const std::string& f : files_under("out"))
      EXPECT_EQ(f, "tiny.json") << "only complete results are left";
  }
}

TEST_F(OutputLoss, SigtermKillsTheBackendWorkerToo) {
  write("long.json", kLongScenario);
  CliRun r = interrupted(dir_, "run long.json --out out --backend '" KVCHECK_HOST_BACKEND "'",
                         SIGTERM, std::chrono::milliseconds(1500));
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_TRUE(contains(r.err, "kvcheck: interrupted (SIGTERM)")) << r.err;
  EXPECT_TRUE(files_under("out").empty());
  // The worker held the stderr file open while it lived; none is left running this scenario.
  const int left = std::system("pgrep -f 'run long[.]json --out out --backend' >/dev/null");
  EXPECT_NE(WEXITSTATUS(left), 0) << "a worker outlived its parent";
}

}  // namespace
}  // namespace kv::test
