// interrupt_test.cpp — SIGINT/SIGTERM with the handlers installed: the registered temporary file
// is removed, a registered child is killed, "interrupted" is said and the status is 128 + signal.
// Each case runs in a forked child, so the test process keeps its own handlers.
#include "io/interrupt.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kv {
namespace {

namespace fs = std::filesystem;

// Forks; the child registers `temp` (created first, when `create`) and a sleeping grandchild,
// then signals itself. Returns the child's wait status; `grandchild` is the sleeper's pid.
int interrupted_child(int sig, const fs::path& temp, bool create, pid_t& grandchild) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    install_interrupt_handlers();
    const pid_t sleeper = ::fork();
    if (sleeper == 0) {
      reset_interrupt_handlers();
      ::pause();
      ::_exit(0);
    }
    (void)!::write(pipefd[1], &sleeper, sizeof sleeper);
    set_running_child(sleeper);
    set_pending_temp_file(temp.c_str());
    if (create) ::close(::open(temp.c_str(), O_WRONLY | O_CREAT, 0644));
    ::raise(sig);
    ::_exit(99);  // not reached: the handler exits
  }
  ::close(pipefd[1]);
  grandchild = 0;
  (void)!::read(pipefd[0], &grandchild, sizeof grandchild);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

class InterruptTest : public ::testing::TestWithParam<int> {};

TEST_P(InterruptTest, RemovesTheTempFileKillsTheChildAndExits128PlusSignal) {
  const int sig = GetParam();
  const fs::path temp = fs::temp_directory_path() /
                        (".kvcheck_interrupt_" + std::to_string(::getpid()) + ".json.tmp");
  pid_t grandchild = 0;
  const int status = interrupted_child(sig, temp, /*create=*/true, grandchild);
  ASSERT_TRUE(WIFEXITED(status)) << "the handler must exit, not let the signal kill";
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  EXPECT_FALSE(fs::exists(temp)) << "the temporary file is left behind";
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
  EXPECT_TRUE(gone) << "the registered child was not killed";
  fs::remove(temp);
}

TEST_P(InterruptTest, AFileNotYetCreatedIsNoError) {
  const fs::path temp = fs::temp_directory_path() / ".kvcheck_interrupt_never_created";
  pid_t grandchild = 0;
  const int status = interrupted_child(GetParam(), temp, /*create=*/false, grandchild);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + GetParam());
  if (grandchild > 0) ::kill(grandchild, SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGINT, SIGTERM));

}  // namespace
}  // namespace kv
