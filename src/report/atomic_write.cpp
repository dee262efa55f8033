// atomic_write.cpp — temp file + fsync + rename + fsync of the folder, with POSIX calls so every
// step's error is seen. The temp file is registered with the interrupt handler (io/interrupt.h):
// SIGINT or SIGTERM mid-write removes it.
#include "report/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "io/interrupt.h"

namespace kv {

namespace fs = std::filesystem;

static std::string os_error(const std::string& what, const fs::path& p, int err) {
  return what + " " + p.string() + ": " + std::strerror(err);
}

// A name no concurrent writer of the same file will pick: pid plus random bits.
static fs::path temp_path_for(const fs::path& path) {
  std::random_device rd;
  std::string name = "." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(rd());
  return path.parent_path() / name;
}

static void write_all(int fd, std::string_view data, const fs::path& tmp) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw WriteError(os_error("cannot write", tmp, errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// The rename is durable once the folder's entry is on disk. A file system that cannot fsync a
// folder (EINVAL) has nothing more to flush.
static void sync_folder(const fs::path& path) {
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw WriteError(os_error("cannot open the folder of", path, errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) throw WriteError(os_error("cannot flush the folder of", path, err));
}

void atomic_write(const fs::path& path, std::string_view contents) {
  if (path.filename().empty())
    throw WriteError("cannot write " + path.string() + ": not a file name");
  const fs::path tmp = temp_path_for(path);
  // Registered before it exists: an interrupt between open() and here must not leave it behind.
  set_pending_temp_file(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    clear_pending_temp_file();
    throw WriteError(os_error("cannot create", tmp, err));
  }
  try {
    write_all(fd, contents, tmp);
    if (::fsync(fd) != 0) throw WriteError(os_error("cannot flush", tmp, errno));
    if (::close(fd) != 0) {
      fd = -1;
      throw WriteError(os_error("cannot close", tmp, errno));
    }
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw WriteError(os_error("cannot replace", path, errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    clear_pending_temp_file();
    throw;
  }
  clear_pending_temp_file();
  sync_folder(path);
}

}  // namespace kv
