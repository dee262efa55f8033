// interrupt_test.cpp — SIGINT/SIGTERM/SIGHUP with the handlers installed: the registered
// temporary file is removed, a registered child is killed, "interrupted (SIG...)" is said and the
// status is 128 + signal; an interrupt ignored at start-up (nohup) stays ignored, in the process
// and after the reset a worker does. Each case runs in a forked child, so the test process keeps
// its own handlers.
#include "io/interrupt.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kv {
namespace {

namespace fs = std::filesystem;

// Forks; the child registers `temp` (created first, when `create`) and two sleeping
// grandchildren (as `run -j 2` has two workers), then signals itself. Returns the child's wait
// status; `grandchild` are the sleepers' pids; what the child wrote on stderr goes to `err` when
// given.
int interrupted_child(int sig, const fs::path& temp, bool create, pid_t (&grandchild)[2],
                      const fs::path& err = {}) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    if (!err.empty()) ::dup2(::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    install_interrupt_handlers();
    pid_t sleepers[2];
    for (pid_t& sleeper : sleepers) {
      sleeper = ::fork();
      if (sleeper == 0) {
        reset_interrupt_handlers();
        ::pause();
        ::_exit(0);
      }
      if (!add_running_child(sleeper)) ::_exit(98);
    }
    // One more registered and gone again: removing frees its slot, and kills nothing.
    if (!add_running_child(999999)) ::_exit(98);
    remove_running_child(999999);
    (void)!::write(pipefd[1], sleepers, sizeof sleepers);
    set_pending_temp_file(temp.c_str());
    if (create) ::close(::open(temp.c_str(), O_WRONLY | O_CREAT, 0644));
    ::raise(sig);
    ::_exit(99);  // not reached: the handler exits
  }
  ::close(pipefd[1]);
  grandchild[0] = grandchild[1] = 0;
  (void)!::read(pipefd[0], grandchild, sizeof grandchild);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

class InterruptTest : public ::testing::TestWithParam<int> {};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_P(InterruptTest, RemovesTheTempFileKillsTheChildAndExits128PlusSignal) {
  const int sig = GetParam();
  const fs::path temp = fs::temp_directory_path() /
                        (".kvcheck_interrupt_" + std::to_string(::getpid()) + ".json.tmp");
  const fs::path err = fs::temp_directory_path() /
                       (".kvcheck_interrupt_" + std::to_string(::getpid()) + ".stderr");
  pid_t grandchildren[2] = {0, 0};
  const int status = interrupted_child(sig, temp, /*create=*/true, grandchildren, err);
  ASSERT_TRUE(WIFEXITED(status)) << "the handler must exit, not let the signal kill";
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
  EXPECT_EQ(read_text(err), std::string("\nkvcheck: interrupted (") + name + ")\n");
  fs::remove(err);
  EXPECT_FALSE(fs::exists(temp)) << "the temporary file is left behind";
  for (const pid_t grandchild : grandchildren) {
    ASSERT_GT(grandchild, 0);
    // The killed grandchild is a zombie of init or gone: kill(0) fails or it is reaped soon.
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = ::kill(grandchild, 0) != 0;
      if (!gone) ::usleep(10000);
    }
    // A zombie still answers kill(0); /proc tells whether it is dead.
    if (!gone) {
      const std::string stat = "/proc/" + std::to_string(grandchild) + "/stat";
      FILE* f = std::fopen(stat.c_str(), "r");
      char state = '?';
      if (f) {
        (void)!std::fscanf(f, "%*d %*s %c", &state);
        std::fclose(f);
      }
      gone = !f || state == 'Z' || state == 'X';
    }
    EXPECT_TRUE(gone) << "the registered child " << grandchild << " was not killed";
  }
  fs::remove(temp);
}

TEST_P(InterruptTest, AFileNotYetCreatedIsNoError) {
  const fs::path temp = fs::temp_directory_path() / ".kvcheck_interrupt_never_created";
  pid_t grandchildren[2] = {0, 0};
  const int status = interrupted_child(GetParam(), temp, /*create=*/false, grandchildren);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + GetParam());
  for (const pid_t grandchild : grandchildren)
    if (grandchild > 0) ::kill(grandchild, SIGKILL);
}

// A child whose `sig` was ignored before the handlers were installed signals itself, then resets
// the handlers as a worker does and signals itself again; its wait status.
int child_started_ignoring(int sig) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(sig, SIG_IGN);
    install_interrupt_handlers();
    ::raise(sig);
    reset_interrupt_handlers();
    ::raise(sig);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_P(InterruptTest, AnInterruptIgnoredAtStartUpStaysIgnored) {
  const int status = child_started_ignoring(GetParam());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the handler ran although the signal was ignored";
}

TEST_P(InterruptTest, AfterTheResetTheSignalKillsAsByDefault) {
  const int sig = GetParam();
  const pid_t pid = ::fork();
  if (pid == 0) {
    install_interrupt_handlers();
    reset_interrupt_handlers();
    ::raise(sig);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), sig);
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGINT, SIGTERM, SIGHUP));

}  // namespace
}  // namespace kv
