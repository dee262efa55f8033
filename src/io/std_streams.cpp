// std_streams.cpp — descriptors 0-2 kept occupied; stdout flushed and checked.
#include "io/std_streams.h"

#include <fcntl.h>
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

std::optional<std::string> flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool cpp_failed = !std::cout;
  const int cpp_errno = errno;
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!cpp_failed && !c_failed) return std::nullopt;
  const int err = cpp_failed ? cpp_errno : errno;
  return std::string("cannot write to stdout") +
         (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) +
         "; the output is lost";
}

}  // namespace kv
