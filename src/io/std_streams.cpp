// std_streams.cpp — descriptors 0-2 kept occupied; stdout flushed and checked.
#include "io/std_streams.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace kv {

void occupy_closed_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free descriptor: this one.
    const int got = ::open("/dev/null", O_RDONLY);
    if (got >= 0 && got != fd) ::close(got);
  }
}

void ignore_sigpipe() { ::signal(SIGPIPE, SIG_IGN); }

namespace {

// A pipe polls POLLERR on its writing end once no reader is left. Asked at the end because the
// errno of the first failed write is gone by then when the stream failed mid-output (std::cout
// stays bad and writes nothing more).
bool stdout_pipe_has_no_reader() {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  pollfd p{.fd = STDOUT_FILENO, .events = POLLOUT, .revents = 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

}  // namespace

std::optional<StdoutLoss> flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool cpp_failed = !std::cout;
  const int cpp_errno = errno;
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!cpp_failed && !c_failed) return std::nullopt;
  const int err = cpp_failed ? cpp_errno : errno;
  // A socket's reader going away is seen only as EPIPE.
  if (err == EPIPE || stdout_pipe_has_no_reader())
    return StdoutLoss{"stdout is closed (broken pipe): the program reading kvcheck's output "
                      "exited before it was all written; the output is lost",
                      true};
  return StdoutLoss{std::string("cannot write to stdout") +
                        (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) +
                        "; the output is lost",
                    false};
}

}  // namespace kv
