// std_streams.h — stdout is output that must not be lost: a closed descriptor 0, 1 or 2 is
// taken up at start-up (so a file kvcheck opens never lands on it and receives the table), and
// at the end stdout is flushed and checked, so a full disk or a closed stdout is an error (exit
// 3), never a silent success. SIGPIPE is ignored, so a stdout whose reader went away is a write
// error (EPIPE) kvcheck can report, not a death by signal (141, outside the exit-code table);
// whether that loss is an error is the command's to say (`kvcheck list | head` is no error).
#pragma once

#include <optional>
#include <string>

namespace kv {

// Opens /dev/null read-only on each of descriptors 0, 1 and 2 that is closed: nothing else takes
// their place, and a write to a closed stdout or stderr still fails (EBADF).
void occupy_closed_std_fds();

// Ignores SIGPIPE process-wide (once, at start-up). Workers forked later inherit it: a worker
// whose parent is gone fails its write to the pipe (EPIPE) and ends.
void ignore_sigpipe();

struct StdoutLoss {
  std::string message;  // for people: "cannot write to stdout: No space left on device; ..."
  bool reader_gone;     // stdout is a pipe whose reading end was closed (EPIPE)
};

// Flushes std::cout (and C's stdout) and says why it failed, if it did.
std::optional<StdoutLoss> flush_stdout();

}  // namespace kv
