// worker.h — run a piece of work in a forked worker process, so that code kvcheck does not own
// (a backend plugin) can crash, abort, call exit() or hang without taking kvcheck with it.
//
// The parent makes a shared ProgressRecord, forks, and watches: the worker runs the work and
// sends back the text it returns through a pipe (length-prefixed, so a torn message is never
// taken for a whole one), then leaves with _exit(0). Anything else is an outcome of its own: a
// signal (crash, abort, trap), an exit without a whole message (exit() inside a plugin, any
// code, 0 included), or a backend call that has not returned within the timeout (the parent
// kills the worker: a hang). The parent must not have initialised CUDA before the fork; the
// work makes its own device.
//
// A worker dies with its parent (PR_SET_PDEATHSIG, SIGKILL), also when the parent is SIGKILLed
// and no handler of kvcheck's runs. The kernel sends that signal when the *thread* that forked
// exits, not the process: call run_in_worker from the main thread, or from a thread that
// outlives the worker. SIGPIPE is ignored in kvcheck (io/std_streams.h) and so in the worker: a
// worker whose parent is gone anyway fails its write to the pipe (EPIPE) and ends.
//
// With a deadline (--max-seconds) the worker stops itself at it (the harness polls it between
// steps, reference positions and rows of its own host ops); a backend call does not poll, so a
// worker still running kStopGrace after the deadline is killed: stopped.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plugin/progress_record.h"

namespace kv {

// An anonymous MAP_SHARED mapping holding one ProgressRecord: made before fork, it is the same
// memory in the parent and the worker.
class SharedProgress {
 public:
  SharedProgress();
  ~SharedProgress();
  SharedProgress(const SharedProgress&) = delete;
  SharedProgress& operator=(const SharedProgress&) = delete;
  ProgressRecord& record() { return *record_; }

 private:
  ProgressRecord* record_;
};

struct WorkerOutcome {
  enum class Kind { finished, crashed, exited, hung, stopped };
  Kind kind = Kind::finished;
  std::string message;  // finished: what the work returned
  int signal = 0;       // crashed: the signal that ended the worker
  int exit_code = 0;    // exited: its exit status
};

// Time a worker past its deadline has to stop itself and report: it notices within milliseconds,
// then frees what the run allocated (a few tenths of a second for gigabytes).
inline constexpr std::chrono::milliseconds kStopGrace{1000};

// One worker process, watched without blocking: the constructor forks it, poll() looks at it
// (reads what it sent, reaps it, kills it at its call timeout or deadline), outcome() says how it
// ended. `kvcheck run -j N` keeps N of these running at once; run_in_worker keeps one. The
// destructor kills a worker still running (a run that stops early leaves none behind). Construct
// it on the main thread (see above). Not copyable: it owns the process and its pipe.
class WorkerProcess {
 public:
  // Forks; throws std::runtime_error when the worker cannot be started (fork, pipe). The record
  // must outlive the worker (a SharedProgress); `work` runs in the child only.
  WorkerProcess(const std::function<std::string()>& work, const ProgressRecord& record,
                std::chrono::seconds call_timeout,
                std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Waits up to `wait` for the worker's pipe, then looks once: true when the worker has ended
  // (by itself, or killed here as hung or stopped), after which outcome() holds.
  bool poll(std::chrono::milliseconds wait);
  bool done() const { return done_; }
  WorkerOutcome outcome() const;
  // The pipe the worker writes to, to wait on several workers at once; -1 once closed.
  int pipe_fd() const { return open_ ? fd_ : -1; }

 private:
  void finish(bool killed);  // reaps, drains the pipe, closes it

  const ProgressRecord& record_;
  std::chrono::seconds call_timeout_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int pid_ = -1;
  int fd_ = -1;
  bool open_ = true, hung_ = false, stopped_ = false, done_ = false;
  int status_ = 0;
  std::string bytes_;
};

// Waits up to `wait` until one of the workers' pipes has something to read (or is closed): a
// watcher of several workers sleeps here instead of polling each in turn.
void wait_for_any(const std::vector<WorkerProcess*>& workers, std::chrono::milliseconds wait);

// Runs `work` in a forked worker and waits for it. A backend call (record.in_call()) running
// longer than `call_timeout` is a hang: the worker is killed (SIGKILL). So is a worker still
// running kStopGrace past `deadline`: stopped. `work` runs in the child only; an exception
// escaping it ends the worker with exit code 70. Throws std::runtime_error when the worker cannot
// be started (fork, pipe). Call it from the main thread (see above): `kvcheck run` does.
WorkerOutcome run_in_worker(
    const std::function<std::string()>& work, const ProgressRecord& record,
    std::chrono::seconds call_timeout,
    std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

// "SIGSEGV", "SIGABRT", ... ("signal N" for one without a name here).
std::string signal_name(int signal);

}  // namespace kv
