// signals_test.cpp — what a signal to kvcheck leaves behind. SIGINT, SIGTERM and SIGHUP exit
// 130, 143 and 129 with "kvcheck: interrupted (SIG...)", kill a backend worker and leave no
// temporary result file, also when the signal lands during the result write; a SIGHUP ignored at
// start-up (nohup) stays ignored. A SIGKILLed kvcheck takes its hung worker with it. A stdout
// pipe closed by its reader is exit 3 with a message for `run`, `validate` and `conform`, and a
// quiet 0 for `list`, `schema`, `--help` and `--version`.
//
// Each test starts the binary itself (fork, exec), so that it can signal it, watch its worker
// and give it a pipe nobody reads.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include "backend_cli.h"
#include "cli_runner.h"

namespace kv::test {
namespace {

using namespace std::chrono_literals;

// A run long enough to be interrupted: many epochs of a small workload.
const char* kLongScenario = R"({
  "format": 1, "name": "long", "seed": 3, "model": {"layers": 2},
  "workload": {"requests": 16, "prompt_len": [32, 64], "new_tokens": [16, 32], "epochs": 1000}
})";

const char* signal_text(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "?";
}

class Signals : public CliTest {
 protected:
  // Starts `kvcheck ARGS` in the test's folder, stdout on `out_fd` (-1: /dev/null), stderr in
  // .stderr; `ignored`, when not 0, is a signal ignored before the exec, as nohup does.
  pid_t start(const std::string& args, int out_fd = -1, int ignored = 0) {
    const std::string cmd = "cd '" + dir_.string() + "' && NO_COLOR=1 exec '" KVCHECK_BINARY
                            "' " + args + (out_fd < 0 ? " >/dev/null" : "") + " 2>.stderr";
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (out_fd >= 0 && out_fd != STDOUT_FILENO) {
        ::dup2(out_fd, STDOUT_FILENO);
        ::close(out_fd);
      }
      if (ignored != 0) ::signal(ignored, SIG_IGN);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  // Waits for `pid`: its exit status (minus the signal when a signal ended it) and stderr.
  CliRun finish(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    r.err = read_file(dir_ / ".stderr");
    return r;
  }

  // `kvcheck ARGS` with stdout a pipe whose reading end is already closed.
  CliRun with_closed_pipe(const std::string& args) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    ::close(fds[0]);
    const pid_t pid = start(args, fds[1]);
    ::close(fds[1]);
    return finish(pid);
  }
};

// The processes whose parent is `pid` (from /proc/*/stat, which every kernel has).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> kids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(e.path() / "stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == pid)
      kids.push_back(std::stoi(name));
  }
  return kids;
}

// `pid`'s worker, once it has one (nullopt after `within`).
std::optional<pid_t> wait_for_worker(pid_t pid, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (const auto kids = children_of(pid); !kids.empty()) return kids.front();
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

// Whether `pid` is gone within `within`: no such process, or a zombie waiting for its reaper.
bool gone_within(pid_t pid, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat[paren + 2] == 'Z' || stat[paren + 2] == 'X')
      return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
}

class Interrupts : public Signals, public ::testing::WithParamInterface<int> {
 protected:
  // Sends `sig` to the running kvcheck `pid`: it must exit 128 + sig and say so on stderr.
  void interrupt(pid_t pid, int sig) {
    ::kill(pid, sig);
    const CliRun r = finish(pid);
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    EXPECT_TRUE(contains(r.err, std::string("kvcheck: interrupted (") + signal_text(sig) + ")"))
        << r.err;
  }
};

TEST_P(Interrupts, ExitWith128PlusTheSignalAndLeaveOnlyCompleteResults) {
  const int sig = GetParam();
  write("long.json", kLongScenario);
  write("tiny.json", kTinyScenario);
  // tiny first: its result is written, then long is interrupted mid-run.
  const pid_t pid = start("run tiny.json long.json --out out");
  std::this_thread::sleep_for(1500ms);
  interrupt(pid, sig);
  EXPECT_EQ(files_under("out"), std::vector<std::string>{"tiny.json"})
      << "only complete results are left";
}

// Each scenario's table reaches a redirected stdout as it ends: a CI log cut by a timeout keeps
// every scenario that finished before it.
TEST_P(Interrupts, KeepTheTablesOfTheScenariosThatFinished) {
  const int sig = GetParam();
  write("long.json", kLongScenario);
  write("tiny.json", kTinyScenario);
  const fs::path out = dir_ / "stdout.txt";
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const pid_t pid = start("run tiny.json long.json --out out", fd);
  ::close(fd);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!fs::exists(dir_ / "out/tiny.json") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(200ms);
  interrupt(pid, sig);
  const std::string text = read_file(out);
  EXPECT_TRUE(contains(text, "scenario: tiny")) << text;
  EXPECT_TRUE(contains(text, "verdict: clean (expected clean)")) << text;
}

TEST_P(Interrupts, KillTheBackendWorkerToo) {
  const int sig = GetParam();
  write("long.json", kLongScenario);
  const pid_t pid = start("run long.json --out out --backend '" + kHostPlugin + "'");
  const std::optional<pid_t> worker = wait_for_worker(pid, 30s);
  ASSERT_TRUE(worker) << "no worker started";
  std::this_thread::sleep_for(500ms);
  interrupt(pid, sig);
  EXPECT_TRUE(files_under("out").empty());
  const bool gone = gone_within(*worker, 2000ms);
  EXPECT_TRUE(gone) << "worker " << *worker << " outlived its parent";
  if (!gone) ::kill(*worker, SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(Each, Interrupts, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(signal_text(info.param)); });

// The temporary result file exists from open() to rename(): a few milliseconds of fsync. The
// test sees it appear (inotify), stops kvcheck (SIGSTOP) while it still exists, sends SIGHUP and
// lets kvcheck go on (SIGCONT) into the handler.
TEST_F(Signals, SighupDuringTheResultWriteLeavesNoTemporaryFile) {
  std::string files;
  for (int i = 0; i < 40; ++i) {
    std::string s = kTinyScenario;
    const std::string name = "t" + std::to_string(i);
    s.replace(s.find("\"tiny\""), 6, "\"" + name + "\"");
    write(name + ".json", s);
    files += " " + name + ".json";
  }
  fs::create_directories(dir_ / "out");
  const int watch = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, (dir_ / "out").c_str(), IN_CREATE), 0);
  const pid_t pid = start("run" + files + " --out out -q");
  std::string caught;
  alignas(inotify_event) char buf[4096];
  while (caught.empty()) {
    pollfd p{.fd = watch, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, 100) == 0) {
      if (::waitpid(pid, nullptr, WNOHANG) == pid) break;  // ran to the end uncaught
      continue;
    }
    const ssize_t n = ::read(watch, buf, sizeof buf);
    for (ssize_t at = 0; at < n && caught.empty();) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      const std::string name = ev->len ? ev->name : "";
      if (!contains(name, ".json.tmp.")) continue;  // the write probe, checked before the run
      ::kill(pid, SIGSTOP);
      if (fs::exists(dir_ / "out" / name)) {
        caught = name;
        ::kill(pid, SIGHUP);
      }
      ::kill(pid, SIGCONT);
    }
  }
  ::close(watch);
  ASSERT_FALSE(caught.empty()) << "no result write was caught in progress";
  CliRun r = finish(pid);
  EXPECT_EQ(r.exit_code, 129) << r.err;
  EXPECT_TRUE(contains(r.err, "kvcheck: interrupted (SIGHUP)")) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / caught)) << caught << " is left behind";
  for (const std::string& f : files_under("out"))
    EXPECT_EQ(f[0], 't') << f << " is left behind: only complete results may be";
}

TEST_F(Signals, ASighupIgnoredAtStartUpStaysIgnored) {
  write("long.json", kLongScenario);
  const pid_t pid = start("run long.json --out out --max-seconds 3", -1, SIGHUP);  // as nohup
  std::this_thread::sleep_for(1000ms);
  ::kill(pid, SIGHUP);
  CliRun r = finish(pid);
  EXPECT_EQ(r.exit_code, 3) << "the run goes on to --max-seconds: " << r.err;
  EXPECT_FALSE(contains(r.err, "interrupted")) << r.err;
}

// kvcheck SIGKILLed runs no handler: the worker, stuck in a backend op that never returns, dies
// by its own death signal.
TEST_F(Signals, AWorkerDiesWithASigkilledKvcheck) {
  write("tiny.json", kTinyScenario);
  const pid_t pid =
      start("run tiny.json --out out --backend-timeout 600 --backend " + test_plugin("hang"));
  const std::optional<pid_t> worker = wait_for_worker(pid, 30s);
  ASSERT_TRUE(worker) << "no worker started";
  std::this_thread::sleep_for(500ms);  // into the hanging write_kv
  ASSERT_FALSE(gone_within(*worker, 0ms)) << "the worker ended before kvcheck was killed";
  ::kill(pid, SIGKILL);
  EXPECT_EQ(finish(pid).exit_code, -SIGKILL);
  const bool gone = gone_within(*worker, 2000ms);
  EXPECT_TRUE(gone) << "worker " << *worker << " outlived kvcheck";
  if (!gone) ::kill(*worker, SIGKILL);  // leave no orphan behind
}

TEST_F(Signals, AClosedStdoutPipeIsExit3ForAVerdict) {
  const std::string smoke = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/smoke.json";
  for (const std::string& args :
       {"run " + smoke + " --out out", "run " + smoke + " --out out --json -q",
        "validate " + smoke, "conform --backend " + kHostPlugin}) {
    CliRun r = with_closed_pipe(args);
    EXPECT_EQ(r.exit_code, 3) << args << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "kvcheck: error: stdout is closed (broken pipe): ")) << r.err;
  }
  EXPECT_EQ(with_closed_pipe("run " + smoke + " --out out --bisect").exit_code, 125);
}

TEST_F(Signals, AClosedStdoutPipeIsAQuietExit0ForAListing) {
  for (const char* args : {"list", "list --json", "schema exit-codes", "schema scenario",
                           "schema exit-codes --markdown", "--help", "run --help", "--version"}) {
    CliRun r = with_closed_pipe(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_EQ(r.err, "") << args;
  }
}

}  // namespace
}  // namespace kv::test
