// worker_test.cpp — a worker does not outlive its parent: SIGKILL the parent (no handler of
// kvcheck's runs) and the worker dies by its death signal; a worker whose death signal is off
// (as if lost) fails its write to the closed pipe (EPIPE, SIGPIPE ignored as kvcheck does) and
// ends on its own.
//
// Each case runs in a forked "reaper" that makes itself a child subreaper: the orphaned worker is
// re-parented to it, not to init, so it can wait for the worker and read how it ended. The test
// process keeps its own children and signal dispositions.
#include "plugin/worker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kv {
namespace {

// How the orphaned worker ended, as the reaper reports it in its exit status.
enum Ended : int { kKilled = 10, kExitedNonZero = 11, kExitedZero = 12, kByOtherSignal = 13,
                   kStillRunning = 14, kSetupFailed = 15 };

// Waits up to `within` for `pid` (a child of the caller) to end; its status, or nullopt.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// Forks the reaper, which forks a parent that runs `work` in a worker; once the worker has said
// its pid, the reaper SIGKILLs the parent and waits 2 s for the worker. Returns the reaper's
// verdict (Ended).
int orphan_a_worker(bool death_signal_off) {
  const pid_t reaper = ::fork();
  if (reaper == 0) {
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) ::_exit(kSetupFailed);
    int said[2];
    if (::pipe(said) != 0) ::_exit(kSetupFailed);
    const pid_t parent = ::fork();
    if (parent == 0) {
      ::signal(SIGPIPE, SIG_IGN);  // as kvcheck's main does
      const pid_t parent_pid = ::getpid();
      SharedProgress shared;
      run_in_worker(
          [&]() -> std::string {
            if (death_signal_off) ::prctl(PR_SET_PDEATHSIG, 0);
            const pid_t me = ::getpid();
            (void)!::write(said[1], &me, sizeof me);
            // Hang (a backend call that never returns) until the parent is gone, then answer.
            while (::getppid() == parent_pid) ::usleep(1000);
            return std::string(100, 'x');
          },
          shared.record(), std::chrono::seconds(600));
      ::_exit(0);  // not reached: the reaper kills this process first
    }
    pid_t worker = 0;
    if (::read(said[0], &worker, sizeof worker) != sizeof worker) ::_exit(kSetupFailed);
    ::kill(parent, SIGKILL);
    ::waitpid(parent, nullptr, 0);
    const std::optional<int> status = wait_for(worker, std::chrono::milliseconds(2000));
    if (!status) {
      ::kill(worker, SIGKILL);
      ::_exit(kStillRunning);
    }
    if (WIFSIGNALED(*status)) ::_exit(WTERMSIG(*status) == SIGKILL ? kKilled : kByOtherSignal);
    ::_exit(WEXITSTATUS(*status) != 0 ? kExitedNonZero : kExitedZero);
  }
  int status = 0;
  ::waitpid(reaper, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Worker, DiesWithItsParentWhenTheParentIsSigkilled) {
  EXPECT_EQ(orphan_a_worker(/*death_signal_off=*/false), kKilled)
      << "10 killed, 11/12 ended on its own, 13 by another signal, 14 still running after 2 s";
}

TEST(Worker, WithoutItsDeathSignalAnOrphanSeesEpipeAndEnds) {
  // Its message goes to a pipe nobody reads any more: the write fails (SIGPIPE is ignored, so
  // no death by signal), and the worker leaves with a non-zero status.
  EXPECT_EQ(orphan_a_worker(/*death_signal_off=*/true), kExitedNonZero)
      << "10 killed, 11/12 ended on its own, 13 by another signal, 14 still running after 2 s";
}

TEST(Worker, AFinishedWorkersMessageArrives) {
  SharedProgress shared;
  const WorkerOutcome out = run_in_worker([] { return std::string("done"); }, shared.record(),
                                          std::chrono::seconds(60));
  EXPECT_EQ(out.kind, WorkerOutcome::Kind::finished);
  EXPECT_EQ(out.message, "done");
}

// Several workers watched at once (`run -j N`): each one's message arrives whole, also one far
// larger than a pipe's buffer, whichever ends first; a crash is that worker's outcome only.
TEST(Worker, SeveralAtOnceEachEndsWithItsOwnOutcome) {
  SharedProgress a, b, c;
  const std::string big(1 << 20, 'x');  // 16 pipe buffers: read while the others run
  WorkerProcess slow([] { ::usleep(300000); return std::string("slow"); }, a.record(),
                     std::chrono::seconds(60));
  WorkerProcess large([&] { return big; }, b.record(), std::chrono::seconds(60));
  WorkerProcess crash([]() -> std::string { ::raise(SIGSEGV); return ""; }, c.record(),
                      std::chrono::seconds(60));
  std::vector<WorkerProcess*> all{&slow, &large, &crash};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until &&
         !(slow.done() && large.done() && crash.done())) {
    wait_for_any(all, std::chrono::milliseconds(50));
    for (WorkerProcess* w : all) w->poll(std::chrono::milliseconds(0));
  }
  ASSERT_TRUE(slow.done() && large.done() && crash.done());
  EXPECT_EQ(slow.outcome().message, "slow");
  EXPECT_EQ(large.outcome().kind, WorkerOutcome::Kind::finished);
  EXPECT_EQ(large.outcome().message.size(), big.size());
  EXPECT_EQ(crash.outcome().kind, WorkerOutcome::Kind::crashed);
  EXPECT_EQ(crash.outcome().signal, SIGSEGV);
}

// A worker still running when its watcher lets go of it (a run stopped early) is killed, not
// left behind.
TEST(Worker, OneLetGoOfWhileRunningIsKilled) {
  SharedProgress shared;
  pid_t pid = 0;
  int said[2];
  ASSERT_EQ(::pipe(said), 0);
  {
    WorkerProcess w(
        [&]() -> std::string {
          const pid_t me = ::getpid();
          (void)!::write(said[1], &me, sizeof me);
          ::pause();
          return "";
        },
        shared.record(), std::chrono::seconds(60));
    ASSERT_EQ(::read(said[0], &pid, sizeof pid), static_cast<ssize_t>(sizeof pid));
    EXPECT_FALSE(w.poll(std::chrono::milliseconds(0)));
  }
  ::close(said[0]);
  ::close(said[1]);
  // Reaped by the destructor: no such process any more.
  EXPECT_NE(::kill(pid, 0), 0) << "worker " << pid << " outlived its WorkerProcess";
}

}  // namespace
}  // namespace kv
