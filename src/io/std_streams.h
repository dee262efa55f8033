// std_streams.h — stdout is output that must not be lost: a closed descriptor 0, 1 or 2 is
// taken up at start-up (so a file kvcheck opens never lands on it and receives the table), and
// at the end stdout is flushed and checked, so a full disk or a closed stdout is an error (exit
// 3), never a silent success.
#pragma once

#include <optional>
#include <string>

namespace kv {

// Opens /dev/null read-only on each of descriptors 0, 1 and 2 that is closed: nothing else takes
// their place, and a write to a closed stdout or stderr still fails (EBADF).
void occupy_closed_std_fds();

// Flushes std::cout (and C's stdout) and says why it failed, if it did: "cannot write to stdout:
// No space left on device".
std::optional<std::string> flush_stdout();

}  // namespace kv
