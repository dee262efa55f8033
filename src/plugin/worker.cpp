// worker.cpp — fork, a length-prefixed message over a pipe, and the parent's watch loop.
#include "plugin/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <stdexcept>

#include "io/interrupt.h"

namespace kv {
namespace {

constexpr int kPollMs = 50;           // how often the parent looks at the record
constexpr int kWorkThrewExitCode = 70;  // EX_SOFTWARE
constexpr int kOrphanExitCode = 71;     // the parent died before the worker began: nobody waits

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The worker: run the work, send its text, leave without running the parent's exit handlers.
[[noreturn]] void worker_main(int fd, const std::function<std::string()>& work) {
  std::string text;
  try {
    text = work();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvcheck worker: %s\n", e.what());
    ::_exit(kWorkThrewExitCode);
  } catch (...) {
    ::_exit(kWorkThrewExitCode);
  }
  const uint64_t size = text.size();
  const bool sent = write_all(fd, reinterpret_cast<const char*>(&size), sizeof(size)) &&
                    write_all(fd, text.data(), text.size());
  std::fflush(nullptr);
  ::_exit(sent ? 0 : kWorkThrewExitCode);
}

// Reads what is there; false at end of file (or an error).
bool read_some(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    into.append(buf, static_cast<size_t>(r));
    return true;
  }
}

// The message, if the bytes hold a whole one.
bool unframe(const std::string& bytes, std::string& message) {
  uint64_t size = 0;
  if (bytes.size() < sizeof(size)) return false;
  std::memcpy(&size, bytes.data(), sizeof(size));
  if (bytes.size() != sizeof(size) + size) return false;
  message = bytes.substr(sizeof(size));
  return true;
}

}  // namespace

SharedProgress::SharedProgress() {
  void* p = ::mmap(nullptr, sizeof(ProgressRecord), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("cannot map the worker's progress record: ") +
                             std::strerror(errno));
  record_ = new (p) ProgressRecord();
}

SharedProgress::~SharedProgress() {
  record_->~ProgressRecord();
  ::munmap(record_, sizeof(ProgressRecord));
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(signal);
  }
}

WorkerProcess::WorkerProcess(const std::function<std::string()>& work,
                             const ProgressRecord& record, std::chrono::seconds call_timeout,
                             std::optional<std::chrono::steady_clock::time_point> deadline)
    : record_(record), call_timeout_(call_timeout), deadline_(deadline) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(std::string("cannot start a worker (pipe): ") + std::strerror(errno));
  // What the parent buffered must not be written a second time by a worker's exit().
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("cannot start a worker (fork): ") + std::strerror(err));
  }
  if (pid == 0) {
    // Die with the parent: a parent killed by SIGKILL runs no handler to kill the worker, and a
    // worker stuck in a hanging backend call would run on under init forever. A parent that died
    // before prctl sends no death signal: then the worker's parent is no longer `parent`.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kOrphanExitCode);
    reset_interrupt_handlers();  // the worker dies by SIGINT/SIGTERM/SIGHUP; its parent cleans up
    ::close(fds[0]);
    worker_main(fds[1], work);
  }
  pid_ = pid;
  (void)add_running_child(pid);  // an interrupt of the parent kills it (-j is at most 64)
  // The parent keeps the read end only: the pipe ends when the worker does. (A worker forked
  // later inherits this read end, which does not keep the pipe open; no write end stays here.)
  ::close(fds[1]);
  fd_ = fds[0];
}

WorkerProcess::~WorkerProcess() {
  if (!done_) finish(true);
}

bool WorkerProcess::poll(std::chrono::milliseconds wait) {
  if (done_) return true;
  pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
  const int ready = ::poll(&p, open_ ? 1 : 0, static_cast<int>(wait.count()));
  if (ready > 0 && open_) open_ = read_some(fd_, bytes_);
  const pid_t ended = ::waitpid(pid_, &status_, WNOHANG);
  if (ended == pid_) {
    finish(false);
    return true;
  }
  hung_ = record_.call_seconds() > static_cast<double>(call_timeout_.count());
  stopped_ = deadline_ && std::chrono::steady_clock::now() >= *deadline_ + kStopGrace;
  if (hung_ || stopped_) {
    finish(true);
    return true;
  }
  return false;
}

void WorkerProcess::finish(bool killed) {
  if (killed) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
  }
  // The worker is gone: what it wrote is all in the pipe (unless a process it started keeps the
  // pipe open: then what has arrived is all there is).
  ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  while (open_ && read_some(fd_, bytes_)) {
  }
  ::close(fd_);
  open_ = false;
  remove_running_child(pid_);
  done_ = true;
}

WorkerOutcome WorkerProcess::outcome() const {
  WorkerOutcome out;
  if (hung_) {
    out.kind = WorkerOutcome::Kind::hung;
  } else if (stopped_) {
    out.kind = WorkerOutcome::Kind::stopped;
  } else if (WIFSIGNALED(status_)) {
    out.kind = WorkerOutcome::Kind::crashed;
    out.signal = WTERMSIG(status_);
  } else if (WIFEXITED(status_) && WEXITSTATUS(status_) == 0 && unframe(bytes_, out.message)) {
    out.kind = WorkerOutcome::Kind::finished;
  } else {
    out.kind = WorkerOutcome::Kind::exited;
    out.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  return out;
}

void wait_for_any(const std::vector<WorkerProcess*>& workers, std::chrono::milliseconds wait) {
  std::vector<pollfd> fds;
  for (const WorkerProcess* w : workers)
    if (w && w->pipe_fd() >= 0) fds.push_back({.fd = w->pipe_fd(), .events = POLLIN, .revents = 0});
  ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
}

WorkerOutcome run_in_worker(const std::function<std::string()>& work,
                            const ProgressRecord& record, std::chrono::seconds call_timeout,
                            std::optional<std::chrono::steady_clock::time_point> deadline) {
  WorkerProcess worker(work, record, call_timeout, deadline);
  while (!worker.poll(std::chrono::milliseconds(kPollMs))) {
  }
  return worker.outcome();
}

}  // namespace kv
