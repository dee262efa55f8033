// atomic_write.h — replace a file's contents so that readers see the old file or the new one,
// never a half-written one (a CI job killed mid-run must not leave a truncated result behind).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace kv {

// The file could not be written; the message names the path and the OS error.
struct WriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `contents` to a temporary file in the same folder as `path` (rename is only atomic within
// one file system), flushes it to disk, renames it over `path` and flushes the folder. The folder
// must exist. On any failure before the rename the temporary file is removed and WriteError is
// thrown; `path` is left untouched. SIGINT/SIGTERM meanwhile remove it too (io/interrupt.h).
void atomic_write(const std::filesystem::path& path, std::string_view contents);

}  // namespace kv
