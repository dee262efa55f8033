// input_file.h — the one way kvcheck reads a file it is given: only a regular file, and never
// more than a cap. A FIFO, a device, a directory or a socket is refused by name before a byte is
// read (a FIFO must not block waiting for a writer, /dev/zero must not fill memory); the cap
// bounds what is read, not what stat() says, so a symlink to a device cannot get round it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kv {

// What a failed open or read says, without the path (the caller prefixes it): "no such file",
// "is a FIFO (named pipe), not a regular file", "is larger than 4194304 bytes".
struct InputFileError {
  std::string message;
};

// An open, read-only descriptor of a regular file; closes it when it goes.
class InputFile {
 public:
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile(InputFile&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ~InputFile();
  int fd() const { return fd_; }

  // Opens `path` without blocking and checks, on the open descriptor (fstat: the file a symlink
  // names), that it is a regular file. Sets `error` and returns nothing otherwise.
  static std::optional<InputFile> open(const std::string& path, InputFileError& error);

 private:
  explicit InputFile(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The whole contents of the regular file `path`, at most `max_bytes` of them: more is an error
// (at most max_bytes + 1 bytes are read to find out).
std::optional<std::string> read_input_file(const std::string& path, std::size_t max_bytes,
                                           InputFileError& error);

}  // namespace kv
