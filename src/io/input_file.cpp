// input_file.cpp — open(O_NONBLOCK) then fstat, then a bounded read loop.
#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kv {
namespace {

// What a file that is not a regular one is, for the message.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<InputFile> InputFile::open(const std::string& path, InputFileError& error) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    error.message = err == ENOENT ? "no such file" : std::string("cannot open: ") +
                                                         std::strerror(err);
    return std::nullopt;
  }
  InputFile file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error.message = std::string("cannot stat: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    error.message = std::string("is ") + kind_of(st.st_mode) + ", not a regular file";
    return std::nullopt;
  }
  // A regular file never blocks; clear the flag anyway so reads mean what they say.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

std::optional<std::string> read_input_file(const std::string& path, std::size_t max_bytes,
                                           InputFileError& error) {
  std::optional<InputFile> file = InputFile::open(path, error);
  if (!file) return std::nullopt;
  std::string text;
  char buf[65536];
  // At most max_bytes + 1 bytes, whatever the file is or claims to be: one more than the cap
  // is enough to know it is too large.
  while (text.size() <= max_bytes) {
    const std::size_t want = std::min(sizeof(buf), max_bytes + 1 - text.size());
    const ssize_t n = ::read(file->fd(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error.message = std::string("cannot read: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
  }
  error.message = "is larger than " + std::to_string(max_bytes) + " bytes";
  return std::nullopt;
}

}  // namespace kv
